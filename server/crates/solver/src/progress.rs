//! What a query's first steps found when they decided nothing, kept by its key (see
//! [`Progress`]).

use std::collections::HashMap;

use crate::term::{Query, Term};

/// What the steps of `solve_inner` found for a query when they found nothing decisive, kept
/// by [`Query::key`](crate::term::Query::key) so that the same query asked again (a file's second pass, after the first
/// pass's short limit stopped it) does not repeat them: on the corpus a query that times out
/// spent its first 250 ms again on the same linear checks, cases and probes. Each step is
/// deterministic under its resource limit (`rlimit`), so a step the clock did not stop finds
/// the same the second time.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Progress {
    /// The linear abstraction is not unsatisfiable.
    pub(crate) linear_sat: bool,
    /// The cases decided nothing.
    pub(crate) cases_failed: bool,
    /// The probes (and, with no plausible witness, the implausible probes) found no witness.
    pub(crate) probes_failed: bool,
    /// Whether linear arithmetic shows that no plausible witness exists.
    pub(crate) implausible: Option<bool>,
    /// How many of the first probes found nothing (and broke no assumption by their values).
    pub(crate) probes_done: usize,
    /// How far the checks of the linear abstraction got when the clock stopped them.
    pub(crate) linear: LinearProgress,
    /// How many of the first cases `by_cases` showed unsatisfiable when the clock stopped it.
    pub(crate) cases_refuted: usize,
}

/// How far [`linear_unsat`](crate::linear::linear_unsat) got before the clock stopped it, so
/// that a query asked again resumes there: on the corpus, cuda-convnet2's `kCrop` spent its
/// first 250 ms on the abstraction (sat, 120 ms) and three of its four cases (unsat), then
/// the second pass did all of them again before the fourth case decided the query. Only
/// checks the clock did not stop are counted (each is deterministic under its `rlimit`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct LinearProgress {
    /// The abstraction with only the query's fixed values is not unsatisfiable.
    pub(crate) base_failed: bool,
    /// Per list of cases (small ranges, then finite cases): how many leading cases the
    /// abstraction refuted.
    pub(crate) refuted: [usize; 2],
    /// Per list of cases: a case the abstraction did not refute ended the list's attempt.
    pub(crate) failed: [bool; 2],
}

/// At most this many queries' [`Progress`] are kept (then the table starts over).
const MAX_PROGRESS: usize = 4096;

/// Each entry keeps its query: the key hashes only the top of each term (see `Term`'s `Hash`),
/// so two queries that differ deep in an assertion (a fixture and its racy twin, whose launch
/// sites differ in one grid size) share a key, and one's progress must not skip the other's
/// steps (the race-free twin's linear cases were skipped, and it timed out).
type Table = HashMap<u64, (Query, Progress)>;

static PROGRESS: std::sync::Mutex<Option<Table>> = std::sync::Mutex::new(None);

impl Progress {
    pub(crate) fn of(key: u64, query: &Query) -> Progress {
        let table = PROGRESS.lock().unwrap_or_else(|e| e.into_inner());
        table
            .as_ref()
            .and_then(|t| t.get(&key))
            .filter(|(q, _)| same_query(q, query))
            .map(|(_, p)| *p)
            .unwrap_or_default()
    }

    pub(crate) fn record(key: u64, query: &Query, update: impl FnOnce(&mut Progress)) {
        let mut table = PROGRESS.lock().unwrap_or_else(|e| e.into_inner());
        let t = table.get_or_insert_with(HashMap::new);
        if t.len() >= MAX_PROGRESS && !t.contains_key(&key) {
            t.clear();
        }
        let entry = t
            .entry(key)
            .or_insert_with(|| (query.clone(), Progress::default()));
        if !same_query(&entry.0, query) {
            *entry = (query.clone(), Progress::default());
        }
        update(&mut entry.1);
    }
}

/// Whether two queries are the same question. Not `==`: the derived equality of terms
/// recurses, and two formulas thousands of levels deep that share a key (the same top) would
/// overflow the stack comparing their bottoms. This walks both with an explicit stack, skips
/// parts they share (the same allocation: a query asked again is a clone), and gives up (not
/// the same, so nothing is reused) past a bound on the nodes compared.
fn same_query(a: &Query, b: &Query) -> bool {
    fn lists(q: &Query) -> [&[Term]; 6] {
        [
            q.assertions.as_slice(),
            &q.preferred,
            &q.assumptions,
            &q.preconditions,
            &q.reach,
            &q.together,
        ]
    }
    if a.vars != b.vars
        || a.fallback_assumptions != b.fallback_assumptions
        || a.reach_base != b.reach_base
        || a.probes != b.probes
        || a.report != b.report
    {
        return false;
    }
    let (la, lb) = (lists(a), lists(b));
    let mut stack: Vec<(&Term, &Term)> = Vec::new();
    for (x, y) in la.iter().zip(&lb) {
        if x.len() != y.len() {
            return false;
        }
        stack.extend(x.iter().zip(y.iter()));
    }
    let mut budget = MAX_COMPARED_NODES;
    while let Some((x, y)) = stack.pop() {
        if std::ptr::eq(x, y) {
            continue;
        }
        budget = match budget.checked_sub(1) {
            Some(b) => b,
            None => return false,
        };
        let same_node = match (x, y) {
            (Term::Int(p), Term::Int(q)) => p == q,
            (Term::Bool(p), Term::Bool(q)) => p == q,
            (Term::Var(p), Term::Var(q)) => p == q,
            (
                Term::Bit {
                    op, width, signed, ..
                },
                Term::Bit {
                    op: op2,
                    width: width2,
                    signed: signed2,
                    ..
                },
            ) => op == op2 && width == width2 && signed == signed2,
            _ => std::mem::discriminant(x) == std::mem::discriminant(y),
        };
        let (cx, cy) = (x.children(), y.children());
        if !same_node || cx.len() != cy.len() {
            return false;
        }
        stack.extend(cx.into_iter().zip(cy));
    }
    true
}

/// How many nodes [`same_query`] compares at most.
const MAX_COMPARED_NODES: usize = 200_000;

#[cfg(test)]
mod tests {
    use super::*;

    /// `x299 + (x298 + (… + leaf)) == 0`: two of these differ below the nodes the key hashes.
    fn deep(leaf: i64) -> Term {
        let mut t = Term::Int(leaf);
        for i in 0..300 {
            t = Term::Add(vec![Term::var(format!("x{i}")), t].into());
        }
        Term::eq(t, Term::Int(0))
    }

    #[test]
    fn progress_is_kept_per_query_not_per_key() {
        let a = Query {
            assertions: vec![deep(1)],
            ..Default::default()
        };
        let b = Query {
            assertions: vec![deep(2)],
            ..Default::default()
        };
        assert_eq!(a.key(), b.key(), "the key hashes the top of the terms only");
        Progress::record(a.key(), &a, |p| p.linear_sat = true);
        assert!(Progress::of(a.key(), &a).linear_sat);
        assert!(!Progress::of(b.key(), &b).linear_sat);
        Progress::record(b.key(), &b, |p| p.cases_failed = true);
        assert!(!Progress::of(b.key(), &b).linear_sat);
        assert!(Progress::of(b.key(), &b).cases_failed);
        // An equal query built again (no shared parts) finds its progress.
        let b2 = Query {
            assertions: vec![deep(2)],
            ..Default::default()
        };
        assert!(Progress::of(b2.key(), &b2).cases_failed);
    }

    /// Formulas far deeper than the stack allows recursion for are compared without it.
    #[test]
    fn deep_queries_are_compared_without_recursion() {
        let chain = |leaf: i64| {
            let mut t = Term::Int(leaf);
            for _ in 0..200_000 {
                t = Term::Neg(std::sync::Arc::new(t));
            }
            Query {
                assertions: vec![Term::eq(t, Term::Int(0))],
                ..Default::default()
            }
        };
        let (a, b) = (chain(1), chain(2));
        assert!(!same_query(&a, &b));
        assert!(same_query(&a, &a.clone()));
        std::mem::forget((a, b)); // dropping a chain this deep recurses too
    }
}
