//! Enough races on one array: once [`MAX_RACES_PER_ARRAY`] pairs of accesses to an array are
//! racy, the kernel's later pairs of that array are not asked.
//!
//! Why: a lattice-Boltzmann kernel stores 19 distributions `dist[k*Np + n]` and reads 19 more,
//! 551 pairs of one array; when their ranges may overlap every pair is a race with the same
//! condition, and each racy pair costs a dozen solver checks (its witness, whether a plausible
//! one exists, the condition it needs). LBPM's `Color.cu` spent 100 s on 3,836 findings, 558 of
//! them in one kernel, and under the file's time budget ended with 8 of its 27 kernels
//! `unknown`. Nobody reads the 33rd finding on one array of one kernel, and the kernel is racy
//! after the first.
//!
//! Sound: a pair left unasked is never called race-free. The kernel's verdict is racy from the
//! races found; should none of them become a finding, the pairs left unasked make it `unknown`
//! (see `finish_kernel`), and its reason says how many pairs were not checked.
//!
//! Deterministic: which pairs are left out depends only on the answers, never on timing. Pair
//! `i` of array `X` is left out exactly when at least [`MAX_RACES_PER_ARRAY`] of `X`'s pairs
//! before it (in plan order) are racy ([`KernelPlan::capped`]), whether or not the dispatcher
//! asked it: a dispatcher that asks every pair (the language server) reports what one that
//! uses [`RaceGate`] (the command line) reports.

use crate::{Item, KernelPlan};
use cudarace_solver::Answer;
use std::collections::{BTreeMap, VecDeque};

/// Racy pairs of accesses to one array reported per kernel before its other pairs are left out.
pub const MAX_RACES_PER_ARRAY: usize = 32;

/// The answer recorded for a pair the cap left out.
pub const NOT_ASKED: &str = "not asked: enough races on the array were found first";

impl KernelPlan {
    /// The array of a race query (`None` for a divergence query).
    pub fn race_array(&self, i: usize) -> Option<&str> {
        self.race_sides(i).map(|(array, _, _)| array)
    }

    /// The array and the two accesses' spans of a race query (`None` for a divergence query).
    pub fn race_sides(&self, i: usize) -> Option<(&str, cudarace_ir::Span, cudarace_ir::Span)> {
        match self.meta.items.get(i) {
            Some(Item::Race { array, a, b, .. }) => Some((array, a.span, b.span)),
            _ => None,
        }
    }

    /// Per query, whether the cap leaves it out given the answers (see the module comment).
    pub fn capped(&self, answers: &[Answer]) -> Vec<bool> {
        let mut racy: BTreeMap<&str, usize> = BTreeMap::new();
        (0..self.queries.len())
            .map(|i| {
                let Some(array) = self.race_array(i) else {
                    return false;
                };
                let n = racy.entry(array).or_default();
                if *n >= MAX_RACES_PER_ARRAY {
                    return true;
                }
                *n += usize::from(matches!(answers.get(i), Some(Answer::Sat(_))));
                false
            })
            .collect()
    }
}

/// What a dispatcher does next with a query (see [`RaceGate::next_step`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// Ask it: whatever the answers still pending, the cap keeps it.
    Ask(usize),
    /// Do not ask it: the cap leaves it out (answer it [`NOT_ASKED`]).
    Skip(usize),
}

/// Hands out the queries of one kernel so that a pair the cap would leave out is not asked,
/// while keeping many queries in flight: a pair of array `X` is handed out when the racy
/// answers of `X`'s earlier pairs plus those still pending stay below the cap, left out when
/// the racy ones alone reach it, and held back otherwise until more answers come.
pub struct RaceGate {
    /// Per array, its queries in plan order: `Some(racy)` for one answered before this
    /// dispatch (a second pass asks only some again), `None` for one to hand out.
    queues: BTreeMap<String, VecDeque<(usize, Option<bool>)>>,
    /// Queries of no array (divergence), handed out at once.
    others: VecDeque<usize>,
    /// Per array: racy answers and queries in flight.
    racy: BTreeMap<String, usize>,
    in_flight: BTreeMap<String, usize>,
    /// The array of each query handed out, for [`RaceGate::answered`].
    array_of: BTreeMap<usize, String>,
    /// Each query's place in the order given.
    position: BTreeMap<usize, usize>,
}

impl RaceGate {
    /// A gate over the queries `ask` (indices of `plan`'s queries); the plan's other queries
    /// have their answers in `answers` already, and those before a query in its array count
    /// towards the cap.
    pub fn new(plan: &KernelPlan, ask: &[usize], answers: &[Answer]) -> Self {
        RaceGate::by_array(plan.queries.len(), &|i| plan.race_array(i), ask, answers)
    }

    /// [`RaceGate::new`] for `n` queries whose arrays `array_of` names (`None`: not a race).
    pub fn by_array<'a>(
        n: usize,
        array_of: &dyn Fn(usize) -> Option<&'a str>,
        ask: &[usize],
        answers: &[Answer],
    ) -> Self {
        let mut gate = RaceGate {
            queues: BTreeMap::new(),
            others: VecDeque::new(),
            racy: BTreeMap::new(),
            in_flight: BTreeMap::new(),
            array_of: BTreeMap::new(),
            position: ask.iter().enumerate().map(|(p, &i)| (i, p)).collect(),
        };
        let mut asked = ask.to_vec();
        asked.sort_unstable();
        for &i in ask {
            if array_of(i).is_none() {
                gate.others.push_back(i);
            }
        }
        for i in 0..n {
            let Some(array) = array_of(i) else {
                continue;
            };
            let known = asked
                .binary_search(&i)
                .is_err()
                .then(|| matches!(answers.get(i), Some(Answer::Sat(_))));
            gate.queues
                .entry(array.to_string())
                .or_default()
                .push_back((i, known));
        }
        gate
    }

    /// The next step, or `None` when every query left is held back by answers in flight (or
    /// none is left). Queries are handed out in the order given (the pool works in order, and
    /// so the witnesses stay those of an ungated dispatch).
    pub fn next_step(&mut self) -> Option<Step> {
        let mut best: Option<(usize, Option<&String>)> = None;
        if let Some(&i) = self.others.front() {
            best = Some((i, None));
        }
        for (array, queue) in self.queues.iter_mut() {
            let racy = self.racy.entry(array.clone()).or_default();
            let pending = self.in_flight.get(array).copied().unwrap_or(0);
            // Answered before: it counts if the cap keeps it, and if the cap leaves it out,
            // every later pair is left out too whatever it adds.
            while let Some(&(_, Some(was_racy))) = queue.front() {
                queue.pop_front();
                *racy += usize::from(was_racy);
            }
            let Some(&(i, None)) = queue.front() else {
                continue;
            };
            if *racy >= MAX_RACES_PER_ARRAY {
                queue.pop_front();
                return Some(Step::Skip(i));
            }
            let earlier = |j: usize| self.position.get(&i) < self.position.get(&j);
            if *racy + pending < MAX_RACES_PER_ARRAY && best.is_none_or(|(j, _)| earlier(j)) {
                best = Some((i, Some(array)));
            }
        }
        let (i, array) = best?;
        match array {
            None => {
                self.others.pop_front();
            }
            Some(array) => {
                let array = array.clone();
                if let Some(q) = self.queues.get_mut(&array) {
                    q.pop_front();
                }
                *self.in_flight.entry(array.clone()).or_default() += 1;
                self.array_of.insert(i, array);
            }
        }
        Some(Step::Ask(i))
    }

    /// Records the answer of a query handed out by [`RaceGate::next_step`].
    pub fn answered(&mut self, i: usize, answer: &Answer) {
        let Some(array) = self.array_of.remove(&i) else {
            return;
        };
        if let Some(n) = self.in_flight.get_mut(&array) {
            *n = n.saturating_sub(1);
        }
        if matches!(answer, Answer::Sat(_)) {
            *self.racy.entry(array).or_default() += 1;
        }
    }
}
