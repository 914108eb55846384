//! What a query's first steps found when they decided nothing, kept by its key (see
//! [`Progress`]).

use std::collections::HashMap;

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
}

/// At most this many queries' [`Progress`] are kept (then the table starts over).
const MAX_PROGRESS: usize = 4096;

static PROGRESS: std::sync::Mutex<Option<HashMap<u64, Progress>>> = std::sync::Mutex::new(None);

impl Progress {
    pub(crate) fn of(key: u64) -> Progress {
        let table = PROGRESS.lock().unwrap_or_else(|e| e.into_inner());
        table
            .as_ref()
            .and_then(|t| t.get(&key).copied())
            .unwrap_or_default()
    }

    pub(crate) fn record(key: u64, update: impl FnOnce(&mut Progress)) {
        let mut table = PROGRESS.lock().unwrap_or_else(|e| e.into_inner());
        let t = table.get_or_insert_with(HashMap::new);
        if t.len() >= MAX_PROGRESS && !t.contains_key(&key) {
            t.clear();
        }
        update(t.entry(key).or_default());
    }
}
