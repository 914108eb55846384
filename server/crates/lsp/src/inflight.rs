//! Solver queries in flight, shared between checks.
//!
//! A query being solved is a [`Slot`] that any check needing the same query (same [`Query`], same
//! limits) joins instead of submitting it again. Each slot has its own cancel token and counts
//! the checks interested in it; the query is cancelled (dropped from the pool's queue, or its
//! running Z3 call interrupted) when no check wants it any more.
//!
//! A superseded check does not drop its interest at once but after [`GRACE`]: long enough for the
//! check of the next version to plan its kernels and join the queries it still needs. So typing
//! in one kernel cancels that kernel's outdated queries but does not restart the slow queries of
//! another kernel that is still being solved.

use crate::cache::AnswerCache;
use crate::pipeline::{Answer, CancelToken, Limits, Query, SolverPool};
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// How long a superseded check keeps its queries alive for its successor.
pub const GRACE: Duration = Duration::from_millis(500);

/// How often a waiting check looks at its cancel token.
const POLL: Duration = Duration::from_millis(20);

type Key = (Query, Limits);

/// The check waiting for an answer was cancelled.
#[derive(Debug)]
pub struct Cancelled;

pub struct Slot {
    key: Key,
    token: CancelToken,
    rx: Mutex<Option<Receiver<Answer>>>,
    answer: Mutex<Option<Answer>>,
    ready: Condvar,
    interest: AtomicUsize,
}

struct Shared {
    slots: Mutex<HashMap<Key, Arc<Slot>>>,
}

impl Shared {
    fn release(&self, slot: &Arc<Slot>) {
        let mut slots = self.slots.lock().unwrap_or_else(|p| p.into_inner());
        if slot.interest.fetch_sub(1, Ordering::SeqCst) == 1 {
            if slot
                .answer
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .is_none()
            {
                slot.token.cancel();
            }
            if slots.get(&slot.key).is_some_and(|s| Arc::ptr_eq(s, slot)) {
                slots.remove(&slot.key);
            }
        }
    }
}

pub struct Inflight {
    shared: Arc<Shared>,
    submitted: AtomicUsize,
    later: Mutex<Sender<(Instant, Vec<Arc<Slot>>)>>,
}

impl Default for Inflight {
    fn default() -> Self {
        Self::new()
    }
}

impl Inflight {
    pub fn new() -> Self {
        let shared = Arc::new(Shared {
            slots: Mutex::new(HashMap::new()),
        });
        let (later, rx) = mpsc::channel::<(Instant, Vec<Arc<Slot>>)>();
        let reaper = shared.clone();
        // Releases handed over by superseded checks, in order (all have the same grace).
        let _ = std::thread::Builder::new()
            .name("cudarace-release".into())
            .spawn(move || {
                while let Ok((at, slots)) = rx.recv() {
                    if let Some(wait) = at.checked_duration_since(Instant::now()) {
                        std::thread::sleep(wait);
                    }
                    for slot in &slots {
                        reaper.release(slot);
                    }
                }
            });
        Inflight {
            shared,
            submitted: AtomicUsize::new(0),
            later: Mutex::new(later),
        }
    }

    /// Joins the query if it is being solved, else submits it. True when submitted.
    pub fn acquire(&self, pool: &SolverPool, query: &Query, limits: Limits) -> (Arc<Slot>, bool) {
        let key = (query.clone(), limits);
        let mut slots = self.shared.slots.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(slot) = slots.get(&key) {
            if !slot.token.is_cancelled() {
                slot.interest.fetch_add(1, Ordering::SeqCst);
                return (slot.clone(), false);
            }
        }
        let token = CancelToken::new();
        let rx = pool.submit(query.clone(), limits, token.clone());
        self.submitted.fetch_add(1, Ordering::SeqCst);
        let slot = Arc::new(Slot {
            key: key.clone(),
            token,
            rx: Mutex::new(Some(rx)),
            answer: Mutex::new(None),
            ready: Condvar::new(),
            interest: AtomicUsize::new(1),
        });
        slots.insert(key, slot.clone());
        (slot, true)
    }

    /// Waits for a slot's answer (storing it in `cache`); `None` as soon as `cancel` is set.
    pub fn wait(
        &self,
        slot: &Arc<Slot>,
        cancel: &CancelToken,
        cache: &AnswerCache,
    ) -> Option<Answer> {
        loop {
            match self.wait_for(slot, cancel, cache, POLL) {
                Ok(Some(answer)) => return Some(answer),
                Ok(None) => {}
                Err(Cancelled) => return None,
            }
        }
    }

    /// [`Inflight::wait`] for at most about `timeout`: `Ok(None)` when the answer is not there
    /// by then, `Err` as soon as `cancel` is set.
    pub fn wait_for(
        &self,
        slot: &Arc<Slot>,
        cancel: &CancelToken,
        cache: &AnswerCache,
        timeout: Duration,
    ) -> Result<Option<Answer>, Cancelled> {
        let until = Instant::now() + timeout;
        loop {
            if let Some(answer) = slot
                .answer
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .clone()
            {
                return Ok(Some(answer));
            }
            if cancel.is_cancelled() {
                return Err(Cancelled);
            }
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(None);
            }
            let poll = left.min(POLL);
            // One waiter receives; the others wait for it to publish the answer.
            let received = match slot.rx.try_lock() {
                Ok(mut rx) => {
                    let received = match rx.as_ref().map(|rx| rx.recv_timeout(poll)) {
                        Some(Ok(answer)) => Some(answer),
                        Some(Err(RecvTimeoutError::Timeout)) | None => None,
                        Some(Err(RecvTimeoutError::Disconnected)) => Some(Answer::Unknown(
                            "solver error: the worker lost the query".into(),
                        )),
                    };
                    if let Some(answer) = &received {
                        // Published before the receiver is let go: the next waiter to take it
                        // would find it disconnected (its one answer taken) and call the query
                        // lost.
                        *slot.answer.lock().unwrap_or_else(|p| p.into_inner()) =
                            Some(answer.clone());
                        *rx = None;
                    }
                    received
                }
                Err(_) => {
                    let guard = slot.answer.lock().unwrap_or_else(|p| p.into_inner());
                    let _ = slot.ready.wait_timeout(guard, poll);
                    None
                }
            };
            if let Some(answer) = received {
                cache.insert(slot.key.0.clone(), slot.key.1, answer.clone());
                slot.ready.notify_all();
                let mut slots = self.shared.slots.lock().unwrap_or_else(|p| p.into_inner());
                if slots.get(&slot.key).is_some_and(|s| Arc::ptr_eq(s, slot)) {
                    slots.remove(&slot.key);
                }
                return Ok(Some(answer));
            }
        }
    }

    /// A slot's answer if it is there now (storing it in `cache`), without waiting.
    pub fn try_answer(&self, slot: &Arc<Slot>, cache: &AnswerCache) -> Option<Answer> {
        if let Some(answer) = slot
            .answer
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
        {
            return Some(answer);
        }
        // Another waiter holds the receiver: it publishes the answer when it comes.
        let mut rx = slot.rx.try_lock().ok()?;
        let answer = match rx.as_ref()?.try_recv() {
            Ok(answer) => answer,
            Err(mpsc::TryRecvError::Empty) => return None,
            Err(mpsc::TryRecvError::Disconnected) => {
                Answer::Unknown("solver error: the worker lost the query".into())
            }
        };
        *slot.answer.lock().unwrap_or_else(|p| p.into_inner()) = Some(answer.clone());
        *rx = None;
        drop(rx);
        cache.insert(slot.key.0.clone(), slot.key.1, answer.clone());
        slot.ready.notify_all();
        let mut slots = self.shared.slots.lock().unwrap_or_else(|p| p.into_inner());
        if slots.get(&slot.key).is_some_and(|s| Arc::ptr_eq(s, slot)) {
            slots.remove(&slot.key);
        }
        Some(answer)
    }

    /// Drops a check's interest in its slots now (the check finished or its document closed).
    pub fn release(&self, slots: Vec<Arc<Slot>>) {
        for slot in &slots {
            self.shared.release(slot);
        }
    }

    /// Drops a superseded check's interest after [`GRACE`].
    pub fn release_later(&self, slots: Vec<Arc<Slot>>) {
        if slots.is_empty() {
            return;
        }
        let sent = self
            .later
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .send((Instant::now() + GRACE, slots));
        if let Err(mpsc::SendError((_, slots))) = sent {
            self.release(slots);
        }
    }

    /// Queries submitted to the solver since the server started.
    pub fn submitted(&self) -> usize {
        self.submitted.load(Ordering::SeqCst)
    }

    /// Queries currently being solved (for tests and logs).
    pub fn len(&self) -> usize {
        self.shared
            .slots
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cudarace_solver::{Sort, Term};

    fn query(n: i64) -> Query {
        let mut q = Query::default();
        q.vars.insert("x".into(), Sort::Int);
        q.assertions.push(Term::eq(Term::var("x"), Term::Int(n)));
        q.report.push("x".into());
        q
    }

    #[test]
    fn checks_share_a_query_and_cancel_it_when_nobody_wants_it() {
        let pool = SolverPool::new(1);
        let inflight = Inflight::new();
        let cache = AnswerCache::new(10);
        let limits = Limits::default();
        let (a, fresh_a) = inflight.acquire(&pool, &query(1), limits);
        let (b, fresh_b) = inflight.acquire(&pool, &query(1), limits);
        assert!(fresh_a && !fresh_b, "the second check joins");
        assert!(Arc::ptr_eq(&a, &b));
        let answer = inflight
            .wait(&b, &CancelToken::new(), &cache)
            .expect("an answer");
        assert!(matches!(answer, Answer::Sat(_)), "{answer:?}");
        assert_eq!(
            inflight.wait(&a, &CancelToken::new(), &cache),
            Some(answer.clone())
        );
        assert_eq!(cache.get(&query(1), limits), Some(answer));
        inflight.release(vec![a, b]);
        assert!(inflight.is_empty());

        // Nobody interested any more: the token is cancelled and a new acquire submits again.
        let (c, _) = inflight.acquire(&pool, &query(2), limits);
        let token = c.token.clone();
        inflight.release(vec![c]);
        assert!(token.is_cancelled());
        let (_, fresh) = inflight.acquire(&pool, &query(2), limits);
        assert!(fresh);
    }

    #[test]
    fn a_cancelled_waiter_stops_waiting() {
        let pool = SolverPool::new(1);
        let inflight = Inflight::new();
        let cache = AnswerCache::new(10);
        let (slot, _) = inflight.acquire(&pool, &query(3), Limits::default());
        let cancel = CancelToken::new();
        cancel.cancel();
        assert_eq!(inflight.wait(&slot, &cancel, &cache), None);
    }

    /// Every waiter of a shared slot gets the solver's answer, however the waits interleave.
    #[test]
    fn all_waiters_of_a_slot_get_the_answer() {
        let pool = SolverPool::new(2);
        let inflight = Inflight::new();
        let cache = AnswerCache::new(1000);
        for n in 0..100 {
            let (slot, _) = inflight.acquire(&pool, &query(100 + n), Limits::default());
            let answers: Vec<Option<Answer>> = std::thread::scope(|s| {
                let waiters: Vec<_> = (0..4)
                    .map(|_| s.spawn(|| inflight.wait(&slot, &CancelToken::new(), &cache)))
                    .collect();
                waiters.into_iter().map(|w| w.join().unwrap()).collect()
            });
            for answer in answers {
                assert!(matches!(answer, Some(Answer::Sat(_))), "{answer:?}");
            }
        }
    }
}
