//! Probes: the query with its nonlinear sizes fixed to small values, where Z3 finds witnesses
//! by linear reasoning ([`probe`]), and, for a query without a plausible witness, values that
//! break an assumption ([`probe_implausible`]).

use std::time::Instant;

use z3::{SatResult, Solver};

use crate::encode::Encoder;
use crate::progress::Progress;
use crate::solve::{
    closed_bool, dump_if_slow, sat_answer, set_rlimit, Engine, Timer, FAST_RLIMIT_CAP,
};
use crate::term::{Answer, Limits, Query, Term};

/// Share of `rlimit` for each probe (fast engine, also capped by [`FAST_RLIMIT_CAP`]).
const PROBE_SHARE: u64 = 50;

/// The query's [`Query::probes`] (those of `sets`; `key`: the query's, for [`Progress`]), each
/// with the assumptions and the preferred constraints (a small witness), on a small budget: the
/// first model found, if any (it satisfies the query and every assumption). The probed values
/// are substituted while the formulas are built, so that a division by a probed variable is one
/// by a constant, which the solver handles linearly; the equalities themselves are asserted
/// too, for the model's values.
///
/// Probed values that break an assumption by themselves (`s3 + l3 <= d3` with every size 2)
/// cannot give a plausible witness: those are probed with the assumptions they leave standing,
/// then without any, and the first such model is returned as the fallback witness (`Err`), for
/// when the checks do not
/// decide in time whether a plausible one exists (the layout of a mixed-radix index with
/// symbolic radices is hard to prove injective); the caller then reports the assumptions it
/// breaks. The timer stays armed for it. `fallback`: one an earlier call found.
pub(crate) fn probe(
    query: &Query,
    limits: &Limits,
    cancelled: &dyn Fn() -> bool,
    timer: &Timer<'_>,
    enc: &Encoder,
    (key, sets): (u64, std::ops::Range<usize>),
    mut fallback: Option<(Solver, Answer)>,
) -> Result<Answer, Option<(Solver, Answer)>> {
    for i in sets {
        let Some(set) = query.probes.get(i) else {
            break;
        };
        if cancelled() || timer.fired() {
            return Err(fallback);
        }
        let values = probe_values(set);
        let breaks = query.fallback_assumptions.iter().any(|i| {
            query
                .assumptions
                .get(*i)
                .is_some_and(|a| closed_bool(a, &values, 0) == Some(false))
        });
        if breaks && fallback.is_some() {
            continue;
        }
        // Values that break an assumption: first with the assumptions they do not break (a
        // witness that breaks no more than it must, whose condition names only that), then
        // with none.
        let kept: Vec<Term> = if breaks {
            unbroken(query, &values, None)
        } else {
            query.assumptions.clone()
        };
        let mut found = probe_once(query, limits, enc, set, &values, &kept);
        if breaks && !kept.is_empty() && matches!(found, Ok(None)) {
            found = probe_once(query, limits, enc, set, &values, &[]);
        }
        match found {
            Err(()) => return Err(fallback),
            Ok(None) => {
                // Found nothing, and no fallback to find again: not worth asking again.
                if !breaks && !timer.fired() && !cancelled() {
                    Progress::record(key, query, |p| {
                        if p.probes_done == i {
                            p.probes_done = i + 1;
                        }
                    });
                }
            }
            Ok(Some(solver)) => {
                let answer = sat_answer(&solver, enc, query);
                if breaks {
                    fallback = Some((solver, answer));
                } else {
                    timer.disarm();
                    return Ok(answer);
                }
            }
        }
    }
    Err(fallback)
}

/// The query's assumptions that `values` do not break by themselves, but the one at `skip`.
fn unbroken(query: &Query, values: &[(String, i64)], skip: Option<usize>) -> Vec<Term> {
    query
        .assumptions
        .iter()
        .enumerate()
        .filter(|(i, a)| Some(*i) != skip && closed_bool(a, values, 0) != Some(false))
        .map(|(_, a)| a.clone())
        .collect()
}

/// The `name == value` equalities of a probe set as pairs.
fn probe_values(set: &[Term]) -> Vec<(String, i64)> {
    set.iter()
        .filter_map(|t| match t {
            Term::Eq(x, c) => match (&**x, &**c) {
                (Term::Var(n), Term::Int(k)) => Some((n.to_string(), *k)),
                _ => None,
            },
            _ => None,
        })
        .collect()
}

/// One probe: the query with `values` substituted (and `set`'s equalities asserted, for the
/// model), `assumptions` and the preferred constraints, on a small budget. `Ok(Some)`: the
/// solver holding a model; `Ok(None)`: unsat or undecided; `Err`: a formula that does not
/// encode (probing is pointless, the normal checks say why).
fn probe_once(
    query: &Query,
    limits: &Limits,
    enc: &Encoder,
    set: &[Term],
    values: &[(String, i64)],
    assumptions: &[Term],
) -> Result<Option<Solver>, ()> {
    let fixed = Encoder::with_values(&query.vars, values);
    let mut formulas = Vec::new();
    for t in query
        .assertions
        .iter()
        .chain(assumptions)
        .chain(&query.preferred)
    {
        formulas.push(fixed.bool(t).map_err(|_| ())?);
    }
    let mut equalities = Vec::new();
    for t in set {
        equalities.push(enc.bool(t).map_err(|_| ())?);
    }
    let solver = Engine::Fast.solver();
    set_rlimit(&solver, (limits.rlimit / PROBE_SHARE).min(FAST_RLIMIT_CAP));
    for a in fixed
        .take_definitions()
        .iter()
        .chain(&formulas)
        .chain(&equalities)
    {
        solver.assert(a);
    }
    let started = Instant::now();
    let result = solver.check();
    dump_if_slow(&solver, started.elapsed(), Engine::Fast, &result, "probe");
    Ok((result == SatResult::Sat).then_some(solver))
}

/// A probe of [`probe_implausible`]: how many assumptions its values break by themselves, the
/// values, and the assumptions they do not break.
type ImplausibleProbe = (usize, Vec<(String, i64)>, Vec<Term>);

/// How many of the probe sets [`probe_implausible`] varies.
const IMPLAUSIBLE_PROBE_SETS: usize = 2;
/// At most this many checks of [`probe_implausible`] per query.
const MAX_IMPLAUSIBLE_PROBES: usize = 16;

/// For a query that no witness satisfying the assumptions has (see
/// [`crate::linear::linear_unsat_assuming`]): a witness, if any, breaks one. The probe sets
/// whose values break an assumption by themselves (every size 2 against a padded layout's
/// `w + pad <= outw`), then the first sets with one probed parameter negated at a time (`w ==
/// -2`, every other size 2: `x / w` and `x % w` with `w < 0` take the dividend's sign and the
/// digits leave their range), each first with the assumptions those values do not break (for
/// a witness that breaks no more than it must), then with none. With every divisor a constant
/// the query is linear, where Z3 finds in milliseconds the model that nonlinear search with a
/// negative divisor misses for seconds. The first model found is returned like a probe's
/// fallback witness; the caller names the assumptions it breaks.
pub(crate) fn probe_implausible(
    query: &Query,
    limits: &Limits,
    cancelled: &dyn Fn() -> bool,
    timer: &Timer<'_>,
    enc: &Encoder,
) -> Option<(Solver, Answer)> {
    let regular: Vec<Vec<(String, i64)>> = query.probes.iter().map(|s| probe_values(s)).collect();
    // A value every probe set gives alike is one the query fixes (a launch site's constant, see
    // the encoder's probe sets): negated, it contradicts the query.
    let fixed = |i: usize| {
        regular.len() > 1
            && regular
                .iter()
                .all(|v| v.get(i).map(|x| x.1) == regular[0].get(i).map(|x| x.1))
    };
    let mut negated_sets = Vec::new();
    for values in regular.iter().take(IMPLAUSIBLE_PROBE_SETS) {
        for i in 0..values.len() {
            if values[i].1 > 0 && !fixed(i) {
                let mut negated = values.clone();
                negated[i].1 = -negated[i].1;
                negated_sets.push(negated);
            }
        }
    }
    // Each set with the assumptions its values do not break by themselves (a set that breaks
    // none leaves every assumption, known unsatisfiable), then with none; the sets that break
    // the fewest first, the probe values before the negated ones: the witness then breaks
    // no more assumptions than it must, and its condition names only those.
    // Then each first set with one layout assumption left out that its values do not decide
    // (`batchOffset >= (n - 1) * stride + …` with `n` free): a witness that breaks only
    // that, where the probed sizes stay plausible.
    let mut without_layout = Vec::new();
    for values in regular.iter().take(IMPLAUSIBLE_PROBE_SETS) {
        for &f in &query.fallback_assumptions {
            let Some(a) = query.assumptions.get(f) else {
                continue;
            };
            if closed_bool(a, values, 0).is_some() {
                continue;
            }
            let kept = unbroken(query, values, Some(f));
            if kept.len() + 1 == query.assumptions.len() {
                without_layout.push((1, values.clone(), kept));
            }
        }
    }
    let mut candidates: Vec<ImplausibleProbe> = regular
        .into_iter()
        .chain(negated_sets)
        .filter_map(|values| {
            let kept = unbroken(query, &values, None);
            let broken = query.assumptions.len() - kept.len();
            (broken > 0).then_some((broken, values, kept))
        })
        .collect();
    let negated_from = candidates
        .iter()
        .position(|(_, v, _)| v.iter().any(|(_, k)| *k < 0));
    let at = negated_from.unwrap_or(candidates.len());
    candidates.splice(at..at, without_layout);
    candidates.sort_by_key(|(broken, _, _)| *broken);
    let mut checks = 0;
    for with_kept in [true, false] {
        for (_, values, kept) in &candidates {
            if !with_kept && kept.is_empty() {
                continue;
            }
            if checks >= MAX_IMPLAUSIBLE_PROBES || cancelled() || timer.fired() {
                return None;
            }
            checks += 1;
            let set: Vec<Term> = values
                .iter()
                .map(|(n, k)| Term::eq(Term::var(n.as_str()), Term::Int(*k)))
                .collect();
            let assumptions: &[Term] = if with_kept { kept } else { &[] };
            match probe_once(query, limits, enc, &set, values, assumptions) {
                Err(()) => return None,
                Ok(None) => {}
                Ok(Some(solver)) => {
                    let answer = sat_answer(&solver, enc, query);
                    return Some((solver, answer));
                }
            }
        }
    }
    None
}
