//! One bounded Z3 call on the calling thread.
//!
//! Calibration of `Limits::default()` (rlimit 10M for the 2 s timeout), measured on this 2-core
//! machine with Debian's Z3 4.8.12 on the naive grid-stride query of tests/common (nonlinear,
//! no answer): rlimit 1M → 0.36 s, 4M → 0.58 s, 10M → 2.0 s, 20M → 5.6 s (`cargo test --release
//! -p cudarace-solver --test calibrate -- --ignored --nocapture`). So 10M ≈ 2 s there; rlimit
//! units per second vary per query, which is why the timer below bounds wall-clock time too.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use z3::ast::Bool;
use z3::{Params, SatResult, Solver};

use crate::bits::constant_value;
use crate::encode::{Encoder, Expr};
use crate::pool::RawContext;
use crate::probes::{probe, probe_implausible};
use crate::progress::Progress;
use crate::term::{Answer, Limits, Query, Term};

/// Share of `rlimit` for the full engine's attempt with the `preferred` constraints. They only
/// make the witness prettier, so the attempt gets a quarter; the unconstrained check that
/// follows when it fails gets the full `rlimit`. The time budget (`timeout_ms`) covers all
/// attempts together.
const PREFERRED_SHARE: u64 = 4;

/// Solves `query` on the calling thread, in the thread's own Z3 context, bounded by both
/// `limits.rlimit` and `limits.timeout_ms` (the whole call, including a failed attempt with the
/// preferred constraints, stays within the timeout). Never panics: every failure is an
/// `Answer::Unknown` whose reason says what happened.
pub fn solve(query: &Query, limits: &Limits) -> Answer {
    solve_cancellable(query, limits, &|| false)
}

/// [`solve`] that stops when `cancelled()` becomes true: it is polled between the steps, and the
/// pool additionally interrupts the running check (`Z3_interrupt`) when a job is cancelled.
pub(crate) fn solve_cancellable(
    query: &Query,
    limits: &Limits,
    cancelled: &(dyn Fn() -> bool + Sync),
) -> Answer {
    // Z3 4.8.12 does not honour its own `timeout` in nonlinear arithmetic (NOTES.md: blocked for
    // 100 s with timeout=3000), but `Z3_interrupt` does stop such a check (tested in
    // tests/pool.rs). So a timer thread interrupts this thread's context when the time budget is
    // spent; `rlimit` remains the deterministic bound, the timer the wall-clock one.
    let budget = Duration::from_millis(limits.timeout_ms.max(1));
    let ctx = RawContext::of_current_thread();
    let timer_state = Mutex::new(TimerState {
        armed: true,
        fired: false,
        fast_until: None,
    });
    let (done_tx, done_rx) = mpsc::channel::<()>();
    let state = &timer_state;
    std::thread::scope(|scope| {
        let timer = std::thread::Builder::new()
            .name("cudarace-solver-timer".into())
            .spawn_scoped(scope, move || {
                let deadline = Instant::now() + budget;
                // Z3 4.8.12 forgets an interrupt that arrives between two checks or while a
                // check starts (the check resets the context's cancel flag), and that check
                // then runs to its rlimit (minutes on nonlinear queries; seen in
                // tests/pool_under_load.rs). So once the budget is spent or the call is
                // cancelled, the timer interrupts again every `REINTERRUPT` until it is over.
                loop {
                    let out_of_time = Instant::now() >= deadline;
                    {
                        // The fast engine's check has had its share: stop it (an interrupt
                        // Z3 forgets only leaves it running, as without the share).
                        let mut st = state.lock().unwrap_or_else(|e| e.into_inner());
                        if st.fast_until.is_some_and(|t| Instant::now() >= t) {
                            st.fast_until = None;
                            ctx.interrupt();
                        }
                    }
                    let wait = if out_of_time || cancelled() {
                        let mut st = state.lock().unwrap_or_else(|e| e.into_inner());
                        if !st.armed {
                            return;
                        }
                        st.fired |= out_of_time;
                        // The context outlives the scope (it belongs to this thread), and an
                        // interrupt that arrives after the check has finished is ignored by Z3.
                        ctx.interrupt();
                        REINTERRUPT
                    } else {
                        deadline
                            .saturating_duration_since(Instant::now())
                            .min(REINTERRUPT)
                    };
                    if let Err(RecvTimeoutError::Disconnected) | Ok(()) = done_rx.recv_timeout(wait)
                    {
                        return;
                    }
                }
            });
        if let Err(e) = timer {
            tracing::warn!("no solver timer thread ({e}); only rlimit bounds this call");
        }
        let timer = Timer(&timer_state);
        // z3 0.22 unwraps null results of the C API (its error handler is disabled), so a Z3
        // error surfaces as a panic; it is caught here and reported as an unknown answer.
        let answer = catch_unwind(AssertUnwindSafe(|| {
            solve_inner(query, limits, cancelled, &timer)
        }));
        drop(done_tx);
        match answer {
            Ok(answer) => answer,
            Err(payload) => {
                let msg = payload
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_else(|| "unknown panic".to_string());
                Answer::Unknown(format!("solver error: {msg}"))
            }
        }
    })
}

/// How often the timer interrupts a call again once its time budget is spent or it is
/// cancelled, and how often it looks whether it is cancelled.
const REINTERRUPT: Duration = Duration::from_millis(10);

struct TimerState {
    /// False once the answer is known to be sat: an interrupt then would only make the model
    /// extraction fail (`Z3_solver_get_model` returns null when interrupted).
    armed: bool,
    fired: bool,
    /// While a check of the fast engine runs: when it is to be interrupted, so that the full
    /// engine gets the rest of the time budget (see [`FAST_TIME_SHARE`]).
    fast_until: Option<Instant>,
}

pub(crate) struct Timer<'a>(&'a Mutex<TimerState>);

impl Timer<'_> {
    pub(crate) fn disarm(&self) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).armed = false;
    }

    pub(crate) fn fired(&self) -> bool {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).fired
    }

    /// Interrupt the check about to start at `until` (`None`: only at the end of the budget).
    /// Cleared right after the check, under the lock the timer interrupts with, so that the
    /// interrupt never reaches the model extraction or a later check.
    fn cut_at(&self, until: Option<Instant>) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).fast_until = until;
    }
}

fn solve_inner(
    query: &Query,
    limits: &Limits,
    cancelled: &dyn Fn() -> bool,
    timer: &Timer<'_>,
) -> Answer {
    let start = Instant::now();
    let budget = Duration::from_millis(limits.timeout_ms.max(1));
    // (The resource limit is part of the question: a step that ran out of it may find more
    // under a larger one.)
    let key = query
        .key()
        .wrapping_add(limits.rlimit.wrapping_mul(0x9E37_79B9_7F4A_7C15));
    let done = Progress::of(key, query);
    // What a step found is kept only when the clock did not stop it.
    let complete = || !timer.fired() && !cancelled();
    // Before the query itself is encoded: most pairs it decides need nothing else.
    if !done.linear_sat {
        let mut linear = done.linear;
        if crate::linear::linear_unsat(query, limits, &mut linear, &complete) {
            timer.disarm();
            return Answer::Unsat;
        }
        let finished = complete();
        Progress::record(key, query, |p| {
            p.linear = linear;
            p.linear_sat |= finished;
        });
    }
    let enc = Encoder::new(&query.vars);
    let mut assertions: Vec<Bool> = match query.assertions.iter().map(|t| enc.bool(t)).collect() {
        Ok(a) => a,
        Err(e) => return Answer::Unknown(format!("malformed query: {e}")),
    };
    // Preferred constraints never change sat vs unsat, so a malformed one is dropped (and
    // logged) rather than turning the answer into unknown.
    let preferred: Vec<Bool> = query
        .preferred
        .iter()
        .filter_map(|t| match enc.bool(t) {
            Ok(b) => Some(b),
            Err(e) => {
                tracing::warn!("dropping malformed preferred constraint: {e}");
                None
            }
        })
        .collect();
    // Definitions of the names given to bitwise operands (by the assertions and the preferred
    // constraints alike); they constrain only fresh names, so both checks get all of them. They
    // go first: with `t ^ j == t` (0 <= t < 1024, 1 <= j < 1024) Z3 4.8.12 answers unsat in
    // ~0.1 s with the definitions before the assertion that uses them, and times out (3 s) with
    // them after it.
    let mut definitions = enc.take_definitions();
    definitions.append(&mut assertions);
    let assertions = definitions;

    // Plausibility assumptions: a malformed one is dropped like a preferred constraint (the
    // answer then merely does not prefer it).
    let assumptions: Vec<Bool> = query
        .assumptions
        .iter()
        .filter_map(|t| match enc.bool(t) {
            Ok(b) => Some(b),
            Err(e) => {
                tracing::warn!("dropping malformed assumption: {e}");
                None
            }
        })
        .collect();
    // The definitions of names the preferred constraints and assumptions introduced.
    // (first, like the others).
    let mut late = enc.take_definitions();
    late.extend(assertions);
    let assertions = late;

    // Per engine, the checks in order: the assumptions and the preferred constraints together
    // (the plausible, small witness); then nothing extra (decides sat vs unsat); then, only when
    // that model breaks an assumption and the first check failed because of the preferred
    // constraints, the assumptions alone. An unsat query costs two checks, as without
    // assumptions. Every check uses a fresh solver object, never push/pop, so that no state
    // leaks between checks or queries.
    // The first probe (every probed size 2) finds most plausible witnesses. When it does not,
    // whether any plausible witness exists is asked in linear arithmetic: when none does, the
    // other probes, which look for one, are skipped, and so are the checks for one (see
    // `solve_levels`); the search is for a witness that breaks an assumption instead.
    // A query without probes asks it only when its first check for a plausible witness is
    // undecided (see `solve_levels`): most find one at once.
    // A query asked again (the second pass over a file, after the first pass's short limit
    // stopped it) skips the steps that found nothing the first time.
    let mut implausible = done.implausible;
    let cases = if done.cases_failed {
        None
    } else {
        let refuted = |n: usize| Progress::record(key, query, |p| p.cases_refuted = n);
        let decided = by_cases(
            query,
            limits,
            cancelled,
            timer,
            &enc,
            (done.cases_refuted, &refuted),
        );
        if decided.is_none() && complete() {
            Progress::record(key, query, |p| p.cases_failed = true);
        }
        decided
    };
    let answer = match cases {
        Some(decided) => {
            timer.disarm();
            Ok(decided)
        }
        None if query.probes.is_empty() || done.probes_failed => Err(None),
        None => {
            // The leading probes that found nothing the first time are not run again.
            let from = done.probes_done;
            let first = if from == 0 {
                probe(query, limits, cancelled, timer, &enc, (key, 0..1), None)
            } else {
                Err(None)
            };
            let probed = match first {
                Ok(found) => Ok(found),
                Err(fallback) => {
                    let none_plausible = match implausible {
                        Some(known) => known,
                        None => crate::linear::linear_unsat_assuming(query, limits),
                    };
                    implausible = Some(none_plausible);
                    if complete() {
                        Progress::record(key, query, |p| p.implausible = Some(none_plausible));
                    }
                    if none_plausible {
                        Err(fallback
                            .or_else(|| probe_implausible(query, limits, cancelled, timer, &enc)))
                    } else {
                        let rest = from.max(1)..query.probes.len();
                        probe(query, limits, cancelled, timer, &enc, (key, rest), fallback)
                    }
                }
            };
            if matches!(probed, Err(None)) && complete() {
                Progress::record(key, query, |p| p.probes_failed = true);
            }
            probed
        }
    };
    let answer = match answer {
        Ok(found) => found,
        Err(fallback) => {
            match solve_levels(
                start,
                query,
                limits,
                cancelled,
                timer,
                &enc,
                &assertions,
                &assumptions,
                &preferred,
                fallback.as_ref().map(|(s, _)| s),
                implausible,
            ) {
                Answer::Unknown(reason) => {
                    timer.disarm();
                    fallback.map_or(Answer::Unknown(reason), |(_, a)| a)
                }
                other => other,
            }
        }
    };
    let mut answer = match answer {
        Answer::Sat(mut model) if !query.preconditions.is_empty() => {
            let out_of_time = || start.elapsed() >= budget;
            if let Some(i) = first_precondition(
                query,
                &model,
                limits,
                &|| cancelled() || out_of_time(),
                &enc,
                &assertions,
            ) {
                model.insert(crate::term::PRECONDITION_KEY.to_string(), i as i64);
            }
            Answer::Sat(model)
        }
        other => other,
    };
    // A check stopped by the clock may have left a witness that breaks an assumption (or no
    // precondition) where more time would have found a plausible one: say so.
    let out_of_time = timer.fired() || start.elapsed() >= budget;
    if let Answer::Sat(model) = &mut answer {
        if out_of_time {
            model.insert(crate::term::INCOMPLETE_KEY.to_string(), 1);
        }
    }
    // The timer's interrupts (repeated every `REINTERRUPT` once the budget is spent) can stop
    // the reading of a model after a sat check: that is the clock, not a solver error, and
    // a caller with more time asks again (a corpus kernel's pair at the first pass's 250 ms).
    if let Answer::Unknown(reason) = &answer {
        if out_of_time && (reason == SAT_WITHOUT_MODEL || reason == INTERRUPTED) {
            return Answer::Unknown("timeout".to_string());
        }
    }
    answer
}

/// Share of `rlimit` for each of the [`crate::cases`] (fast engine, capped like the probes).
const CASE_SHARE: u64 = 50;

/// The query decided case by case (see [`crate::cases`]), each case checked with its values
/// substituted while the formulas are built: `Unsat` when every case is unsatisfiable; the
/// witness of the first satisfiable case when, with the plausibility assumptions and the
/// preferred constraints, it is still satisfiable (a plausible witness, as a probe's); `None`
/// otherwise (no cases, one undecided, a witness only without the assumptions, or a formula
/// that does not encode): the normal checks then decide.
///
/// `(from, refuted)`: the first cases, shown unsatisfiable when the query was asked before,
/// are not checked again; `refuted(n)` is told when the first `n` are.
fn by_cases(
    query: &Query,
    limits: &Limits,
    cancelled: &dyn Fn() -> bool,
    timer: &Timer<'_>,
    enc: &Encoder,
    (from, refuted): (usize, &dyn Fn(usize)),
) -> Option<Answer> {
    let cases = crate::cases::finite_cases(query)?;
    let rlimit = (limits.rlimit / CASE_SHARE).min(FAST_RLIMIT_CAP);
    for (i, values) in cases.iter().enumerate().skip(from) {
        if cancelled() || timer.fired() {
            return None;
        }
        let fixed = Encoder::with_values(&query.vars, values);
        let encode =
            |ts: &[Term]| -> Option<Vec<Bool>> { ts.iter().map(|t| fixed.bool(t).ok()).collect() };
        let formulas = encode(&query.assertions)?;
        let defs = fixed.take_definitions();
        let solver = Engine::Fast.solver();
        set_rlimit(&solver, rlimit);
        for a in defs.iter().chain(&formulas) {
            solver.assert(a);
        }
        let started = Instant::now();
        let result = solver.check();
        dump_if_slow(&solver, started.elapsed(), Engine::Fast, &result, "case");
        match result {
            SatResult::Unsat => {
                refuted(i + 1);
                continue;
            }
            SatResult::Unknown => return None,
            SatResult::Sat => {}
        }
        // A race in this case: look for a plausible witness in it, as a probe does.
        let mut extra = encode(&query.assumptions)?;
        extra.extend(encode(&query.preferred)?);
        let equalities: Vec<Bool> = values
            .iter()
            .map(|(n, k)| {
                enc.bool(&Term::eq(Term::var(n.as_str()), Term::Int(*k)))
                    .ok()
            })
            .collect::<Option<_>>()?;
        // On a small budget: when it fails, the normal checks look for a plausible witness
        // anyway (and usually find it fast when this does not).
        let plausible = Engine::Fast.solver();
        set_rlimit(&plausible, rlimit / 4);
        for a in defs
            .iter()
            .chain(&fixed.take_definitions())
            .chain(&formulas)
            .chain(&extra)
            .chain(&equalities)
        {
            plausible.assert(a);
        }
        let started = Instant::now();
        let result = plausible.check();
        dump_if_slow(
            &plausible,
            started.elapsed(),
            Engine::Fast,
            &result,
            "case-plausible",
        );
        return (result == SatResult::Sat).then(|| sat_answer(&plausible, enc, query));
    }
    Some(Answer::Unsat)
}

pub(crate) fn closed_bool(t: &Term, values: &[(String, i64)], depth: u32) -> Option<bool> {
    if depth > 32 {
        return None;
    }
    let int = |x: &Term| constant_value(x, values);
    let go = |x: &Term| closed_bool(x, values, depth + 1);
    match t {
        Term::Bool(b) => Some(*b),
        Term::Eq(a, b) => Some(int(a)? == int(b)?),
        Term::Lt(a, b) => Some(int(a)? < int(b)?),
        Term::Le(a, b) => Some(int(a)? <= int(b)?),
        Term::Not(a) => Some(!go(a)?),
        Term::And(ts) => ts.iter().try_fold(true, |a, x| Some(a && go(x)?)),
        Term::Or(ts) => ts.iter().try_fold(false, |a, x| Some(a || go(x)?)),
        _ => None,
    }
}

/// Share of `rlimit` for each precondition check (fast engine; an undecided one is skipped).
/// The search tries every candidate of a race that no simple relation removes, so each check
/// is small: up to 12 of them cost at most a seventh of the query's budget.
const PRECONDITION_SHARE: u64 = 80;

/// Candidate preconditions a race's search may leave undecided (each one spends its whole
/// `rlimit` share) before it gives up: a query the fast engine cannot decide with one relation
/// added rarely gets decided with the next. A racy lattice kernel (15 races, each a nonlinear
/// query, every candidate undecided) spent 4.4 of its 7.8 s on the search, leaving most of its
/// other pairs undecided when the file's budget ran out. Counted in checks, not time, so that
/// the precondition found does not depend on the machine's load.
const MAX_UNDECIDED_PRECONDITIONS: usize = 2;

/// The first candidate precondition under which the query is unsat. Stops (with none) when
/// `stop()` says so: the search shares the query's time budget.
fn first_precondition(
    query: &Query,
    witness: &std::collections::BTreeMap<String, i64>,
    limits: &Limits,
    stop: &dyn Fn() -> bool,
    enc: &Encoder,
    assertions: &[Bool],
) -> Option<usize> {
    let divides = crate::term::divides_by_variable(&query.assertions);
    let values: Vec<(String, i64)> = witness.iter().map(|(k, v)| (k.clone(), *v)).collect();
    // The plausibility assumptions the witness keeps hold under each candidate too: a
    // precondition removes the race among the values a caller would pass (`n_sections ==
    // blockDim.x` still leaves a race when `n_samples == 0` makes every block's row one
    // cell, which `n_samples >= 1` rules out already). Not those about the launch: with one,
    // a candidate could remove the race only by leaving one thread (`n == blockDim.x` and
    // `blockDim.x * blockDim.x <= n`).
    let kept: Vec<Bool> = query
        .assumptions
        .iter()
        .filter(|a| !names_the_launch(a))
        .filter(|a| closed_bool(a, &values, 0) == Some(true))
        .filter_map(|a| enc.bool(a).ok())
        .collect();
    let kept_defs = enc.take_definitions();
    let mut undecided = 0;
    for (i, t) in query.preconditions.iter().enumerate() {
        if stop() || undecided >= MAX_UNDECIDED_PRECONDITIONS {
            return None;
        }
        // The witness keeps this candidate, so the race stays under it: no check needed.
        if closed_bool(t, &values, 0) == Some(true) {
            continue;
        }
        let Ok(c) = enc.bool(t) else { continue };
        let defs = enc.take_definitions();
        let solver = Engine::Fast.solver();
        // A query that divides by a variable: Z3 rarely decides it with a precondition in the
        // fast engine's small budget, and each attempt would take a quarter second. But for
        // the first candidate, the likeliest (a loop's step parameter as the thread count,
        // whose residues divide: about 20k units with the global ids' bounds). Whether it
        // removes a side is checked in the small budget: that check is satisfiable for a
        // precondition worth giving, and Z3 rarely finds the model fast here.
        let reach_share = if divides {
            PRECONDITION_SHARE * 10
        } else {
            PRECONDITION_SHARE
        };
        let share = if i == 0 {
            PRECONDITION_SHARE
        } else {
            reach_share
        };
        set_rlimit(&solver, (limits.rlimit / share).min(FAST_RLIMIT_CAP));
        for a in kept_defs.iter().chain(&defs).chain(assertions).chain(&kept) {
            solver.assert(a);
        }
        solver.assert(&c);
        let started = Instant::now();
        let result = solver.check();
        dump_if_slow(
            &solver,
            started.elapsed(),
            Engine::Fast,
            &result,
            "precondition",
        );
        if result == SatResult::Unknown {
            undecided += 1;
        }
        if result == SatResult::Unsat && !removes_a_side(query, t, limits, reach_share, enc) {
            return Some(i);
        }
    }
    None
}

/// Whether `t` names a launch size (`blockDim.x`, `gridDim.y`); also for a term too large to
/// walk.
fn names_the_launch(t: &Term) -> bool {
    let mut stack = vec![t];
    let mut nodes = 0;
    while let Some(x) = stack.pop() {
        nodes += 1;
        if nodes > 10_000 {
            return true;
        }
        if let Term::Var(v) = x {
            if v.starts_with("blockDim.") || v.starts_with("gridDim.") {
                return true;
            }
        }
        x.for_each_child(&mut |c| stack.push(c));
    }
    false
}

/// Whether under the precondition `t` one side of the pair can never execute (its
/// [`Query::reach`] is unsat with `t` and the query's first [`Query::reach_base`] assertions),
/// or the two sides can never execute together (both `reach` terms at once: the base holds
/// the two threads' ranges and that they differ, so `n == gridDim.x` with a grid of
/// `(n + 255) / 256` blocks, which leaves one thread in `i < n`, is caught): the precondition
/// then removes the race by removing the code or the second thread, which is no advice. An
/// undecided check counts as "no" (the precondition is kept, as before this check existed).
fn removes_a_side(query: &Query, t: &Term, limits: &Limits, share: u64, enc: &Encoder) -> bool {
    let base = query.assertions.get(..query.reach_base).unwrap_or(&[]);
    let both: Vec<&Term> = query.reach.iter().chain(&query.together).collect();
    let checks = query
        .reach
        .iter()
        .map(|side| vec![side])
        .chain((query.reach.len() > 1).then_some(both));
    for sides in checks {
        let encoded: Result<Vec<Bool>, _> = base
            .iter()
            .chain(std::iter::once(t))
            .chain(sides)
            .map(|x| enc.bool(x))
            .collect();
        let Ok(encoded) = encoded else { return false };
        let defs = enc.take_definitions();
        let solver = Engine::Fast.solver();
        set_rlimit(&solver, (limits.rlimit / share).min(FAST_RLIMIT_CAP));
        for a in defs.iter().chain(&encoded) {
            solver.assert(a);
        }
        let started = Instant::now();
        let result = solver.check();
        dump_if_slow(&solver, started.elapsed(), Engine::Fast, &result, "reach");
        if result == SatResult::Unsat {
            return true;
        }
    }
    false
}

/// The checks of [`solve_inner`] over the two engines (see the comment inside).
#[allow(clippy::too_many_arguments)]
fn solve_levels(
    start: Instant,
    query: &Query,
    limits: &Limits,
    cancelled: &dyn Fn() -> bool,
    timer: &Timer<'_>,
    enc: &Encoder,
    assertions: &[Bool],
    assumptions: &[Bool],
    preferred: &[Bool],
    known: Option<&Solver>,
    implausible: Option<bool>,
) -> Answer {
    let budget = Duration::from_millis(limits.timeout_ms.max(1));
    let mut implausible = implausible;
    let known_implausible = implausible == Some(true);
    let mut both_inconsistent =
        known_implausible || (preferred.is_empty() && assumptions.is_empty());
    let mut assumptions_inconsistent = known_implausible || assumptions.is_empty();
    let mut last_reason = String::new();
    // Only the fast checks of a linear query, or of one with bit-vectors, are cut (see
    // `FAST_TIME_SHARE`).
    let cut_fast = !crate::term::nonlinear(&query.assertions) || enc.uses_bit_vectors();
    for engine in [Engine::Fast, Engine::Full] {
        // A probe has found a witness (breaking an assumption): the query is nonlinear, and
        // only whether a plausible witness exists is left, for the full engine.
        // (Unless no plausible witness exists: the fast engine then only names the condition.)
        if known.is_some() && matches!(engine, Engine::Fast) && !known_implausible {
            continue;
        }
        let extra_share = match engine {
            Engine::Fast => FAST_SHARE,
            Engine::Full => PREFERRED_SHARE,
        };
        let plain_share = match engine {
            Engine::Fast => FAST_SHARE,
            Engine::Full => 1,
        };
        // `until`: when to interrupt the check, before the end of the budget (see
        // `CONDITION_TIME_SHARE`).
        let check = |with: &[&[Bool]],
                     share: u64,
                     phase: &str,
                     until: Option<Instant>|
         -> Result<CheckResult, Answer> {
            if cancelled() {
                return Err(Answer::Unknown("cancelled".to_string()));
            }
            if timer.fired() || start.elapsed() >= budget {
                return Err(Answer::Unknown("timeout".to_string()));
            }
            let solver = engine.solver();
            let rlimit = match engine {
                Engine::Fast => (limits.rlimit / share).min(FAST_RLIMIT_CAP),
                // A race a probe has shown already: the plausible witness is worth less
                // of the budget (the probe's is reported when none is found in time).
                Engine::Full if known.is_some() && share > 1 => {
                    limits.rlimit / share / KNOWN_SAT_SHARE
                }
                Engine::Full => limits.rlimit / share,
            };
            set_rlimit(&solver, rlimit);
            for a in assertions {
                solver.assert(a);
            }
            for set in with {
                for c in set.iter() {
                    solver.assert(c);
                }
            }
            let started = Instant::now();
            let fast_cut = (matches!(engine, Engine::Fast) && cut_fast)
                .then(|| start + budget / FAST_TIME_SHARE);
            let cut = match (fast_cut, until) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            if cut.is_some() {
                timer.cut_at(cut);
            }
            let result = solver.check();
            timer.cut_at(None);
            dump_if_slow(&solver, started.elapsed(), engine, &result, phase);
            Ok(match result {
                SatResult::Sat => CheckResult::Sat(solver),
                SatResult::Unsat => CheckResult::Unsat,
                SatResult::Unknown => {
                    CheckResult::Unknown(solver.get_reason_unknown().unwrap_or_default())
                }
            })
        };
        if !both_inconsistent {
            match check(
                &[assumptions, preferred],
                extra_share,
                "plausible-small",
                None,
            ) {
                Err(a) => return a,
                Ok(CheckResult::Sat(solver)) => {
                    timer.disarm();
                    return sat_answer(&solver, enc, query);
                }
                Ok(CheckResult::Unsat) => {
                    both_inconsistent = true;
                    if preferred.is_empty() {
                        assumptions_inconsistent = true;
                    }
                }
                Ok(CheckResult::Unknown(r)) => {
                    last_reason = r;
                    // Undecided: when linear arithmetic shows that no plausible witness
                    // exists, only any witness is left to look for.
                    if implausible.is_none() {
                        implausible = Some(crate::linear::linear_unsat_assuming(query, limits));
                    }
                    if implausible == Some(true) {
                        both_inconsistent = true;
                        assumptions_inconsistent = true;
                    } else if matches!(engine, Engine::Fast) {
                        // The fast engine gave up: dropping constraints will not help it, so
                        // the budget goes to the full engine.
                        continue;
                    }
                }
            }
        }
        let owned;
        let plain: &Solver = match known {
            Some(solver) => solver,
            None => {
                owned = match check(&[], plain_share, "plain", None) {
                    Err(a) => return plausibly_race_free(a, assumptions_inconsistent, assumptions),
                    Ok(CheckResult::Sat(solver)) => solver,
                    Ok(CheckResult::Unsat) => return Answer::Unsat,
                    Ok(CheckResult::Unknown(r)) => {
                        last_reason = r;
                        continue;
                    }
                };
                &owned
            }
        };
        if satisfies_all(plain, assumptions) {
            timer.disarm();
            return sat_answer(plain, enc, query);
        }
        let plain_answer = sat_answer(plain, enc, query);
        let (mut kept, broken) = split_by_model(plain, assumptions);
        if !assumptions_inconsistent {
            match check(&[assumptions], extra_share, "plausible", None) {
                Ok(CheckResult::Sat(solver)) => {
                    timer.disarm();
                    return sat_answer(&solver, enc, query);
                }
                Ok(CheckResult::Unsat) => {}
                // Not decided whether a plausible witness exists: the model found is still a
                // witness (the caller reports the assumptions it breaks), its condition made
                // as short as the time left allows.
                Ok(CheckResult::Unknown(_)) => {}
                Err(_) => return plain_answer,
            }
        }
        // No plausible witness: the caller reports the assumptions the witness breaks as the
        // race's condition. Keep as many as the solver can, one more at a time (few are
        // broken), so that the condition names only what the race needs ("only if ldc < n",
        // not also an unrelated "n < 1" the first model happened to pick).
        // This only makes the condition's words shorter: it gets a share of the budget.
        let refine_until = Instant::now() + budget / CONDITION_TIME_SHARE;
        let mut best = plain_answer;
        // With one assumption broken, keeping it too is the query with every assumption,
        // already known unsatisfiable.
        let single = broken.len() == 1 && assumptions_inconsistent;
        for a in broken.into_iter().filter(|_| !single) {
            if Instant::now() >= refine_until {
                break;
            }
            let mut with = kept.clone();
            with.push(a);
            match check(&[&with], extra_share, "condition", Some(refine_until)) {
                Ok(CheckResult::Sat(solver)) => {
                    best = sat_answer(&solver, enc, query);
                    kept = with;
                }
                Ok(_) => {}
                Err(_) => break,
            }
        }
        timer.disarm();
        return best;
    }
    if cancelled() {
        return Answer::Unknown("cancelled".to_string());
    }
    let reason = classify_unknown(&last_reason, timer.fired() || start.elapsed() >= budget);
    plausibly_race_free(
        Answer::Unknown(reason),
        assumptions_inconsistent,
        assumptions,
    )
}

/// A timeout after the solver proved that no witness keeps the assumptions is
/// [`crate::term::TIMEOUT_PLAUSIBLY_RACE_FREE`]: shown to the user, the pair is undecided, but
/// not for want of looking at the values that matter (a transpose whose digits meet only with
/// negative sizes).
fn plausibly_race_free(answer: Answer, proved: bool, assumptions: &[Bool]) -> Answer {
    match answer {
        Answer::Unknown(r) if r == "timeout" && proved && !assumptions.is_empty() => {
            Answer::Unknown(crate::term::TIMEOUT_PLAUSIBLY_RACE_FREE.to_string())
        }
        other => other,
    }
}

/// Where slow checks are written as SMT-LIB (`CUDARACE_SLOW_QUERIES=DIR`), and from how many
/// milliseconds a check counts as slow (`CUDARACE_SLOW_QUERY_MS`, default 500): a query that
/// times out on real code can then be studied on its own (`z3 FILE.smt2`).
fn slow_query_dump() -> Option<&'static (std::path::PathBuf, u64)> {
    static DUMP: std::sync::OnceLock<Option<(std::path::PathBuf, u64)>> =
        std::sync::OnceLock::new();
    DUMP.get_or_init(|| {
        let dir = std::env::var_os("CUDARACE_SLOW_QUERIES")?;
        let ms = std::env::var("CUDARACE_SLOW_QUERY_MS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(500);
        Some((dir.into(), ms))
    })
    .as_ref()
}

pub(crate) fn dump_if_slow(
    solver: &Solver,
    took: Duration,
    engine: Engine,
    result: &SatResult,
    phase: &str,
) {
    let Some((dir, ms)) = slow_query_dump() else {
        return;
    };
    if took.as_millis() < u128::from(*ms) {
        return;
    }
    use std::hash::{Hash, Hasher};
    let text = solver.to_string();
    let mut h = std::collections::hash_map::DefaultHasher::new();
    text.hash(&mut h);
    // The order of the checks (a process-wide count) tells which phase of which query came
    // first; the phase says which step of `solve` made the check.
    static SEQUENCE: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let seq = SEQUENCE.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let name = format!(
        "{:06}ms-{seq:05}-{phase}-{:016x}.smt2",
        took.as_millis(),
        h.finish()
    );
    let body = format!(
        "; cudarace slow check: {} ms, engine {engine:?}, answer {result:?}, check {seq} ({phase})\n{text}\n(check-sat)\n",
        took.as_millis()
    );
    // A debugging aid: a folder that cannot be written is not an error of the check.
    let _ = std::fs::create_dir_all(dir);
    let _ = std::fs::write(dir.join(name), body);
}

enum CheckResult {
    Sat(Solver),
    Unsat,
    Unknown(String),
}

/// The assumptions the solver's model makes true, and the others (model completion on).
fn split_by_model(solver: &Solver, assumptions: &[Bool]) -> (Vec<Bool>, Vec<Bool>) {
    let Some(model) = solver.get_model() else {
        return (vec![], assumptions.to_vec());
    };
    assumptions
        .iter()
        .cloned()
        .partition(|a| model.eval(a, true).and_then(|v| v.as_bool()) == Some(true))
}

/// Whether the solver's model makes every assumption true (model completion on).
fn satisfies_all(solver: &Solver, assumptions: &[Bool]) -> bool {
    let Some(model) = solver.get_model() else {
        return false;
    };
    assumptions
        .iter()
        .all(|a| model.eval(a, true).and_then(|v| v.as_bool()) == Some(true))
}

/// Share of `rlimit` for each attempt with the fast engine, and a cap on it. The `smt`
/// tactic's rlimit units can take far longer on nonlinear queries than the default solver's
/// (naive grid-stride query: rlimit 100k → 0.3 s, 400k → 21 s here), so on such a query the
/// fast attempt may use up the time budget (the timer then answers `timeout`), and after one
/// unknown from it the other fast attempt is skipped. Smaller caps were worse on real kernels:
/// section (a) of the bench with cap 20k or 100k → 5 of 191 kernels unknown (the bitonic sorts
/// among them, 4.2 s each), with 1M → 2 unknown, p95 kernel time 51 ms instead of 316 ms.
const FAST_SHARE: u64 = 10;
/// Share of the time budget after which the fast engine's checks of a linear query are
/// interrupted and the full engine gets the rest: within its rlimit share the `smt` tactic can
/// spend the whole budget on a linear query that the full engine (a decision procedure for
/// linear integer arithmetic) decides at once: a grid-stride residue `(i - gid) mod 4096 == 0`
/// of a bound launch, 2 s without an answer against 5 ms. Nonlinear queries are not cut: on
/// the corpus, cutting them too lost witnesses the fast engine finds late (12 kernels went from
/// divergent to racy, 9 definite races were lost) for 4.5 % less time in all. Queries that
/// bridge integers and bit-vectors are cut too: the full engine's preprocessing decides them
/// where the `smt` tactic spends the whole budget (`t ^ j == t`, see [`Engine`]).
const FAST_TIME_SHARE: u32 = 4;
/// Further share of `rlimit` for the full engine's checks with extra constraints when a probe
/// has found a witness without the assumptions (see `solve_inner`).
const KNOWN_SAT_SHARE: u64 = 8;
pub(crate) const FAST_RLIMIT_CAP: u64 = 1_000_000;
/// Share of the time budget for keeping more of the assumptions a witness breaks, once it is
/// known that no witness keeps them all: the checks only shorten the race's condition ("only
/// if ld < n", not also "and blockDim.x is not a multiple of 32"), and one of them on a
/// nonlinear assumption (a row length `size * size * c / 32 + 1`) took the rest of the 2 s
/// budget for a racy kernel whose witness was known after 0.2 s.
const CONDITION_TIME_SHARE: u32 = 8;

/// The two Z3 solver objects used.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Engine {
    /// The `smt` tactic as a solver: no preprocessing portfolio, but about 1 ms to build. Most
    /// of the checker's queries are small and linear and are answered by it.
    Fast,
    /// Z3's default (combined) solver: picks preprocessing tactics by logic (e.g. for
    /// nonlinear integer arithmetic), which the hard queries need, but costs 10-25 ms to build
    /// per query with 4.8.12. Measured here: 100 trivial queries, 9-15 ms each with this one,
    /// 0.8 ms with `Fast`; `t ^ j == t` (bit-vectors) unsat in 0.1 s with this one, no answer
    /// in 2 s with `Fast`.
    Full,
}

impl Engine {
    pub(crate) fn solver(self) -> Solver {
        match self {
            Engine::Fast => z3::Tactic::new("smt").solver(),
            Engine::Full => Solver::new(),
        }
    }
}

/// Sets Z3's deterministic resource limit. Z3's own `timeout` parameter is deliberately NOT set:
/// with Debian's Z3 4.8.12 it makes the default solver block forever (no CPU use) when it
/// expires during nonlinear search. Measured here on the naive grid-stride query
/// (tests/common): rlimit 10M alone → `unknown` (resource limit) in 2.3 s; rlimit 10M + our
/// interrupt timer at 2 s → `unknown` (timeout) in 2.03 s; with `timeout=2000` set, with or
/// without our timer → no answer after 30 s (process killed). The wall-clock bound is
/// therefore our own timer (`Z3_interrupt`, see [`solve_cancellable`]), plus the pool's watchdog.
pub(crate) fn set_rlimit(solver: &Solver, rlimit: u64) {
    let mut p = Params::new();
    // An `unsigned` parameter in Z3; larger values saturate. rlimit 0 would mean "unlimited" to
    // Z3, so it is raised to 1.
    p.set_u32("rlimit", rlimit.clamp(1, u64::from(u32::MAX)) as u32);
    solver.set_params(&p);
}

/// Normalizes Z3's reason for `unknown`. Z3 4.8.12 reports both a timeout and an interrupt as
/// "canceled", so whether the time budget ran out decides between the two.
fn classify_unknown(reason: &str, out_of_time: bool) -> String {
    let r = reason.to_ascii_lowercase();
    if r.contains("timeout") {
        "timeout".to_string()
    } else if r.contains("resource") || r.contains("rlimit") {
        "resource limit".to_string()
    } else if r.contains("cancel") || r.contains("interrupt") {
        if out_of_time {
            "timeout"
        } else {
            "interrupted"
        }
        .to_string()
    } else if reason.is_empty() {
        "unknown".to_string()
    } else {
        reason.to_string()
    }
}

/// Why a sat check gave no witness: its model, or a value in it, could not be read.
const SAT_WITHOUT_MODEL: &str = "solver error: sat without a model";
const INTERRUPTED: &str = "interrupted";

/// Reads the `report` variables out of the model, with model completion so that a variable the
/// solver did not need still gets a value. Values that do not fit an `i64` are left out; the
/// answer stays `Sat`.
pub(crate) fn sat_answer(solver: &Solver, enc: &Encoder, query: &Query) -> Answer {
    // An interrupt (timer or cancellation) racing with the end of the check can make the first
    // attempt fail; Z3 does not keep the interrupted state, so one retry tells the two apart.
    let Some(model) = solver.get_model().or_else(|| solver.get_model()) else {
        return Answer::Unknown(SAT_WITHOUT_MODEL.to_string());
    };
    let mut values = std::collections::BTreeMap::new();
    for name in &query.report {
        // `eval` fails (None) only when the context was interrupted meanwhile: by a cancel,
        // which does not go through the disarmed timer. A witness without its values would be
        // wrong (tests/pool_under_load.rs saw `Sat({})` for `x + 1 == 1`), so it is no answer.
        let interrupted = || Answer::Unknown(INTERRUPTED.to_string());
        let value = match enc.var(name) {
            Some(Expr::Int(i)) => match model.eval(i, true) {
                Some(v) => v.as_i64(),
                None => return interrupted(),
            },
            Some(Expr::Bool(b)) => match model.eval(b, true) {
                Some(v) => v.as_bool().map(i64::from),
                None => return interrupted(),
            },
            None => {
                tracing::warn!("report variable `{name}` is not declared in the query");
                None
            }
        };
        if let Some(v) = value {
            values.insert(name.clone(), v);
        }
    }
    Answer::Sat(values)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_probe_evaluates_quotients_and_remainders_as_c_does() {
        // The leading-dimension assumption `32 * (size * size * c / 32 + 1) <= lda`, with
        // every value 2: 32 * (8 / 32 + 1) = 32 > 2, so the probe breaks it.
        let v = |n: &str| Term::var(n);
        let words = Term::Add(
            vec![
                Term::Div(
                    Term::Mul(vec![v("size"), v("size"), v("c")].into()).into(),
                    Term::Int(32).into(),
                ),
                Term::Int(1),
            ]
            .into(),
        );
        let assumption = Term::le(Term::Mul(vec![Term::Int(32), words].into()), v("lda"));
        let values: Vec<(String, i64)> = ["size", "c", "lda"]
            .iter()
            .map(|n| (n.to_string(), 2))
            .collect();
        assert_eq!(closed_bool(&assumption, &values, 0), Some(false));
        // Truncation toward zero, the remainder's sign from the dividend, `mod` non-negative,
        // and no value when dividing by zero.
        let at = |t: Term| constant_value(&t, &[("x".to_string(), -7)]);
        assert_eq!(at(Term::Div(v("x").into(), Term::Int(2).into())), Some(-3));
        assert_eq!(at(Term::Rem(v("x").into(), Term::Int(2).into())), Some(-1));
        assert_eq!(at(Term::Mod(v("x").into(), Term::Int(2).into())), Some(1));
        assert_eq!(at(Term::Div(v("x").into(), Term::Int(0).into())), None);
    }
}
