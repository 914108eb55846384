//! A pool of solver threads, each owning its Z3 context, with cancellation and a deadline guard.
//!
//! Every call is bounded by `rlimit` and by an interrupt timer (see `solve.rs`), but with Z3
//! 4.8.12 a cancelled check is known to block forever in some states (NOTES.md). So a watchdog
//! thread answers `Unknown("timeout")` for any job that runs longer than its timeout plus
//! [`GRACE`], interrupts that worker's context once more, and replaces the worker with a fresh
//! thread so that the pool keeps its capacity. The abandoned thread exits if Z3 ever lets go.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::solve::solve_cancellable;
#[cfg(test)]
use crate::term::Term;
use crate::term::{Answer, Limits, Query};

/// How long past its timeout a job may run before the watchdog gives up on its worker.
pub const GRACE: Duration = Duration::from_millis(1000);

/// How often the watchdog looks at the running jobs.
const WATCH_PERIOD: Duration = Duration::from_millis(50);

/// Stack size of worker threads: term translation and Z3 itself recurse over the formula.
const WORKER_STACK: usize = 64 * 1024 * 1024;

/// A Z3 context pointer that another thread may pass to `Z3_interrupt`, which is the one Z3 API
/// call meant to be made concurrently with a running check.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct RawContext(z3_sys::Z3_context);

// SAFETY: the pointer is only used for `Z3_interrupt`, which Z3 documents as callable from another
// thread. The context lives as long as its thread. Copies held by cancel tokens and the watchdog
// are guarded by mutexes that the owning worker takes (to remove them) before it can exit; the
// timer of `solve` is a scoped thread joined before the owning thread leaves `solve`.
unsafe impl Send for RawContext {}

impl RawContext {
    pub(crate) fn of_current_thread() -> RawContext {
        RawContext(z3::Context::thread_local().get_z3_context())
    }

    pub(crate) fn interrupt(self) {
        // SAFETY: see the `Send` impl: the context is alive while a copy is registered.
        unsafe { z3_sys::Z3_interrupt(self.0) }
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding one of these locks cannot leave the data inconsistent (each critical
    // section is a single push/pop/assignment), so a poisoned lock is used as is.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Cancels queued and running solver jobs. Clones share the state: cancelling one cancels every
/// job submitted with any clone.
#[derive(Clone, Default)]
pub struct CancelToken(Arc<CancelInner>);

#[derive(Default)]
struct CancelInner {
    cancelled: AtomicBool,
    /// Contexts of the workers currently solving a job of this token.
    running: Mutex<Vec<RawContext>>,
}

impl CancelToken {
    pub fn new() -> CancelToken {
        CancelToken::default()
    }

    /// Queued jobs of this token are skipped (answer `Unknown("cancelled")`); running ones are
    /// interrupted through `Z3_interrupt` and answer `Unknown("cancelled")` as well.
    pub fn cancel(&self) {
        self.0.cancelled.store(true, Ordering::SeqCst);
        for ctx in lock(&self.0.running).iter() {
            ctx.interrupt();
        }
    }

    pub fn is_cancelled(&self) -> bool {
        self.0.cancelled.load(Ordering::SeqCst)
    }

    /// Registers a worker about to solve a job of this token; false if already cancelled.
    fn enter(&self, ctx: RawContext) -> bool {
        let mut running = lock(&self.0.running);
        // Checked under the lock, so a concurrent `cancel` either sees the context or is seen.
        if self.is_cancelled() {
            return false;
        }
        running.push(ctx);
        true
    }

    fn leave(&self, ctx: RawContext) {
        let mut running = lock(&self.0.running);
        if let Some(i) = running.iter().position(|c| *c == ctx) {
            running.swap_remove(i);
        }
    }
}

impl std::fmt::Debug for CancelToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CancelToken")
            .field("cancelled", &self.is_cancelled())
            .finish()
    }
}

/// The reply channel of one job; the worker and the watchdog race to answer, the first wins.
struct Reply(Mutex<Option<Sender<Answer>>>);

impl Reply {
    fn send(&self, answer: Answer) -> bool {
        match lock(&self.0).take() {
            // The receiver may be gone (caller lost interest); nothing to do then.
            Some(tx) => {
                let _ = tx.send(answer);
                true
            }
            None => false,
        }
    }
}

struct Job {
    query: Query,
    limits: Limits,
    /// Unit tests only: the worker sleeps this long instead of solving, ignoring interrupts, to
    /// stand in for a Z3 call that does not return.
    #[cfg(test)]
    stall: Option<Duration>,
    cancel: CancelToken,
    reply: Arc<Reply>,
}

/// What a worker is doing right now, for the watchdog.
struct Running {
    deadline: Instant,
    reply: Arc<Reply>,
    ctx: RawContext,
}

struct Worker {
    running: Mutex<Option<Running>>,
    abandoned: AtomicBool,
}

struct Shared {
    queue: Mutex<VecDeque<Job>>,
    available: Condvar,
    /// Set under the queue's lock.
    shutdown: AtomicBool,
    /// Workers waiting for a job; changed under the queue's lock.
    parked: AtomicUsize,
    workers: Mutex<Vec<Arc<Worker>>>,
    /// Workers that are alive and not abandoned.
    live: AtomicUsize,
    /// Total number of workers given up on by the watchdog (for diagnostics).
    abandoned: AtomicUsize,
    watchdog_wake: Condvar,
    watchdog_lock: Mutex<()>,
    /// How long past its timeout a job may run before its worker is given up on.
    grace: Duration,
}

/// N solver threads, each with its own Z3 context, fed from one FIFO job queue.
pub struct SolverPool {
    shared: Arc<Shared>,
}

impl SolverPool {
    /// Starts `workers` solver threads (at least one) and the watchdog.
    pub fn new(workers: usize) -> SolverPool {
        SolverPool::with_grace(workers, GRACE)
    }

    /// [`SolverPool::new`] with another grace period than [`GRACE`] (stress tests use a short
    /// one so that workers get abandoned often).
    pub fn with_grace(workers: usize, grace: Duration) -> SolverPool {
        let shared = Arc::new(Shared {
            queue: Mutex::new(VecDeque::new()),
            available: Condvar::new(),
            shutdown: AtomicBool::new(false),
            parked: AtomicUsize::new(0),
            workers: Mutex::new(Vec::new()),
            live: AtomicUsize::new(0),
            abandoned: AtomicUsize::new(0),
            watchdog_wake: Condvar::new(),
            watchdog_lock: Mutex::new(()),
            grace,
        });
        for _ in 0..workers.max(1) {
            spawn_worker(&shared);
        }
        let watched = Arc::clone(&shared);
        if let Err(e) = std::thread::Builder::new()
            .name("cudarace-solver-watchdog".into())
            .spawn(move || watchdog(watched))
        {
            // Without the watchdog, rlimit alone still bounds every call.
            tracing::error!("could not start the solver watchdog: {e}");
        }
        SolverPool { shared }
    }

    /// Number of worker threads currently serving the queue.
    pub fn workers(&self) -> usize {
        self.shared.live.load(Ordering::SeqCst)
    }

    /// How many workers the watchdog has given up on since the pool started.
    pub fn abandoned_workers(&self) -> usize {
        self.shared.abandoned.load(Ordering::SeqCst)
    }

    /// Solves one query and waits for the answer (deadline-guarded by the watchdog).
    pub fn solve(&self, query: Query, limits: Limits) -> Answer {
        receive(self.submit(query, limits, CancelToken::new()))
    }

    /// Solves all queries in parallel; the answers come back in the order of the queries.
    pub fn solve_all(&self, queries: Vec<Query>, limits: Limits) -> Vec<Answer> {
        let token = CancelToken::new();
        let receivers: Vec<_> = queries
            .into_iter()
            .map(|q| self.submit(q, limits, token.clone()))
            .collect();
        receivers.into_iter().map(receive).collect()
    }

    /// Queues a query; the receiver gets exactly one answer.
    pub fn submit(&self, query: Query, limits: Limits, cancel: CancelToken) -> Receiver<Answer> {
        let (tx, rx) = mpsc::channel();
        let reply = Arc::new(Reply(Mutex::new(Some(tx))));
        if cancel.is_cancelled() {
            reply.send(Answer::Unknown("cancelled".to_string()));
            return rx;
        }
        if self.shared.live.load(Ordering::SeqCst) == 0 {
            reply.send(Answer::Unknown(
                "solver error: no solver thread could be started".into(),
            ));
            return rx;
        }
        lock(&self.shared.queue).push_back(Job {
            query,
            limits,
            #[cfg(test)]
            stall: None,
            cancel,
            reply,
        });
        self.shared.available.notify_one();
        rx
    }
}

impl Drop for SolverPool {
    fn drop(&mut self) {
        let pending: Vec<Job> = {
            let mut queue = lock(&self.shared.queue);
            self.shared.shutdown.store(true, Ordering::SeqCst);
            // Parked workers wake up to exit, which deletes their Z3 context: busy again, counted
            // here under the queue's lock so that `wait_for_solver_threads` cannot miss them.
            busy(self.shared.parked.load(Ordering::SeqCst) as isize);
            // Jobs still queued get an answer so that no receiver waits forever.
            queue.drain(..).collect()
        };
        for job in pending {
            job.reply.send(Answer::Unknown("cancelled".to_string()));
        }
        // Running jobs are interrupted: nobody waits for them any more, and the sooner their
        // workers leave Z3 the sooner the process may exit (see `wait_for_solver_threads`).
        for w in lock(&self.shared.workers).iter() {
            if let Some(r) = lock(&w.running).as_ref() {
                r.ctx.interrupt();
            }
        }
        self.shared.available.notify_all();
        self.shared.watchdog_wake.notify_all();
        // Threads are not joined: a worker may be inside a long Z3 call; it exits on its own.
    }
}

/// Solver threads (of every pool, abandoned ones included) that may be inside Z3: all but
/// those waiting for a job. A thread counts from its start until its Z3 context has been
/// deleted, except while it waits.
static BUSY: Mutex<usize> = Mutex::new(0);
static BUSY_DONE: Condvar = Condvar::new();

fn busy(change: isize) {
    let mut busy = lock(&BUSY);
    *busy = busy.saturating_add_signed(change);
    if *busy == 0 {
        BUSY_DONE.notify_all();
    }
}

/// Counts the current thread in [`BUSY`] until its thread-local storage is destroyed.
struct Counted;

impl Drop for Counted {
    fn drop(&mut self) {
        busy(-1);
    }
}

thread_local! {
    /// Counted busy by `spawn_worker` (before the thread exists, so that no waiter misses it).
    static COUNTED: Counted = const { Counted };
}

/// Waits, at most `timeout`, until no solver thread of any pool may be inside Z3: the threads
/// of dropped pools have finished (their running jobs were interrupted), the others wait for
/// jobs. False if some thread is still busy then (a Z3 call that ignores its interrupt, which
/// Z3 4.8.12 can do).
///
/// A process must not exit while a solver thread is inside Z3: `exit` runs the static
/// destructors of libz3 and of the C++ runtime, which free state that the running thread still
/// uses (Z3's timer thread pool, for one), and the process then dies by SIGABRT or SIGSEGV.
/// [`exit_process`] waits with this and falls back to `_exit`.
pub fn wait_for_solver_threads(timeout: Duration) -> bool {
    let deadline = Instant::now() + timeout;
    let mut busy = lock(&BUSY);
    while *busy > 0 {
        let now = Instant::now();
        if now >= deadline {
            return false;
        }
        busy = BUSY_DONE
            .wait_timeout(busy, deadline - now)
            .unwrap_or_else(|e| e.into_inner())
            .0;
    }
    true
}

/// Ends the process with `code` once the solver threads are done ([`wait_for_solver_threads`],
/// at most `wait`). If some are still inside Z3 then, it flushes stdout and stderr and leaves
/// with `_exit`, which runs no destructors, rather than `exit`, which would destroy libz3's
/// static state under them.
pub fn exit_process(code: i32, wait: Duration) -> ! {
    use std::io::Write;
    if wait_for_solver_threads(wait) {
        std::process::exit(code);
    }
    tracing::warn!("a solver thread is still inside Z3; exiting without running destructors");
    let _ = std::io::stdout().flush();
    let _ = std::io::stderr().flush();
    // SAFETY: `_exit` only ends the process; everything written has been flushed.
    unsafe { libc::_exit(code) }
}

fn receive(rx: Receiver<Answer>) -> Answer {
    rx.recv()
        .unwrap_or_else(|_| Answer::Unknown("solver error: worker lost the job".to_string()))
}

fn spawn_worker(shared: &Arc<Shared>) {
    let worker = Arc::new(Worker {
        running: Mutex::new(None),
        abandoned: AtomicBool::new(false),
    });
    let (s, w) = (Arc::clone(shared), Arc::clone(&worker));
    shared.live.fetch_add(1, Ordering::SeqCst);
    busy(1);
    match std::thread::Builder::new()
        .name("cudarace-solver".into())
        .stack_size(WORKER_STACK)
        .spawn(move || worker_loop(s, w))
    {
        Ok(_) => lock(&shared.workers).push(worker),
        Err(e) => {
            shared.live.fetch_sub(1, Ordering::SeqCst);
            busy(-1);
            tracing::error!("could not start a solver thread: {e}");
        }
    }
}

fn worker_loop(shared: Arc<Shared>, me: Arc<Worker>) {
    // The guard that counts this thread busy is initialized before the thread's Z3 context:
    // thread-local destructors run in the reverse order of initialization, so the count drops
    // only after the context has been deleted.
    COUNTED.with(|_| ());
    let ctx = RawContext::of_current_thread();
    loop {
        let job = {
            let mut queue = lock(&shared.queue);
            loop {
                if shared.shutdown.load(Ordering::SeqCst) {
                    shared.live.fetch_sub(1, Ordering::SeqCst);
                    return;
                }
                if let Some(job) = queue.pop_front() {
                    break job;
                }
                // Parked: not inside Z3 (see `wait_for_solver_threads`).
                shared.parked.fetch_add(1, Ordering::SeqCst);
                busy(-1);
                queue = shared
                    .available
                    .wait(queue)
                    .unwrap_or_else(|e| e.into_inner());
                shared.parked.fetch_sub(1, Ordering::SeqCst);
                // Woken to exit, this thread was counted busy again by the pool's `drop`.
                if !shared.shutdown.load(Ordering::SeqCst) {
                    busy(1);
                }
            }
        };
        if !job.cancel.enter(ctx) {
            job.reply.send(Answer::Unknown("cancelled".to_string()));
            continue;
        }
        let deadline = Instant::now() + Duration::from_millis(job.limits.timeout_ms) + shared.grace;
        *lock(&me.running) = Some(Running {
            deadline,
            reply: Arc::clone(&job.reply),
            ctx,
        });

        let cancel = &job.cancel;
        #[cfg(test)]
        if let Some(stall) = job.stall {
            std::thread::sleep(stall);
        }
        // A dropped pool cancels its running jobs too: their answers are no longer wanted, and
        // the process may be waiting for this thread to leave Z3 (`wait_for_solver_threads`).
        let stop = || cancel.is_cancelled() || shared.shutdown.load(Ordering::SeqCst);
        let mut answer = solve_cancellable(&job.query, &job.limits, &stop);
        if stop() && matches!(answer, Answer::Unknown(_)) {
            answer = Answer::Unknown("cancelled".to_string());
        }

        // Unregister before anything else: once these two locks are released nobody holds a
        // copy of this thread's context pointer, so the thread may exit.
        *lock(&me.running) = None;
        cancel.leave(ctx);
        job.reply.send(answer);
        if me.abandoned.load(Ordering::SeqCst) {
            // The watchdog answered for us and started a replacement.
            return;
        }
    }
}

fn watchdog(shared: Arc<Shared>) {
    loop {
        {
            let guard = lock(&shared.watchdog_lock);
            let _ = shared.watchdog_wake.wait_timeout(guard, WATCH_PERIOD);
        }
        if shared.shutdown.load(Ordering::SeqCst) {
            return;
        }
        let now = Instant::now();
        let mut overdue = Vec::new();
        lock(&shared.workers).retain(|w| {
            let running = lock(&w.running);
            match running.as_ref() {
                Some(r) if now >= r.deadline => {
                    w.abandoned.store(true, Ordering::SeqCst);
                    // Normally the timer of `solve` has interrupted it already; try again while
                    // the lock guarantees the context is alive.
                    r.ctx.interrupt();
                    overdue.push(Arc::clone(&r.reply));
                    false
                }
                _ => true,
            }
        });
        for reply in overdue {
            shared.live.fetch_sub(1, Ordering::SeqCst);
            shared.abandoned.fetch_add(1, Ordering::SeqCst);
            tracing::warn!("a solver thread overran its deadline; starting a replacement");
            spawn_worker(&shared);
            reply.send(Answer::Unknown("timeout".to_string()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stalled_job(pool: &SolverPool, stall: Duration, limits: Limits) -> Receiver<Answer> {
        let (tx, rx) = mpsc::channel();
        let job = Job {
            query: Query::default(),
            limits,
            stall: Some(stall),
            cancel: CancelToken::new(),
            reply: Arc::new(Reply(Mutex::new(Some(tx)))),
        };
        lock(&pool.shared.queue).push_back(job);
        pool.shared.available.notify_one();
        rx
    }

    #[test]
    fn a_worker_that_does_not_return_is_abandoned_and_replaced() {
        let pool = SolverPool::new(1);
        let limits = Limits {
            timeout_ms: 100,
            rlimit: 1000,
        };
        let start = Instant::now();
        let rx = stalled_job(&pool, Duration::from_secs(5), limits);
        let answer = rx
            .recv_timeout(Duration::from_secs(4))
            .expect("the watchdog answers");
        let took = start.elapsed();
        assert_eq!(answer, Answer::Unknown("timeout".to_string()));
        assert!(took >= Duration::from_millis(100) + GRACE, "{took:?}");
        // (No upper bound beyond `recv_timeout` above: the machine may be busy.)
        assert_eq!(pool.abandoned_workers(), 1);
        // The replacement serves the queue while the abandoned thread still sleeps.
        let q = Query {
            vars: [("x".to_string(), crate::Sort::Int)].into_iter().collect(),
            assertions: vec![Term::eq(Term::var("x"), Term::Int(4))],
            preferred: vec![],
            assumptions: vec![],
            fallback_assumptions: vec![],
            preconditions: vec![],
            reach: vec![],
            reach_base: 0,
            together: vec![],
            probes: vec![],
            report: vec!["x".to_string()],
        };
        let answer = pool.solve(q, Limits::default());
        assert_eq!(
            answer,
            Answer::Sat([("x".to_string(), 4)].into_iter().collect())
        );
        assert_eq!(pool.workers(), 1);
    }
}
