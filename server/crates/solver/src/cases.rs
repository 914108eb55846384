//! Finite cases: a query that holds a disjunction of constant assignments (the launch sites of a
//! kernel template passing different constants, `tile_w == 64 ∧ tile_h == 16 ∨ tile_w == 32 ∧ …`)
//! is the disjunction of the query with each assignment substituted. Divisions and products by
//! those values are then by constants, which Z3 decides by linear reasoning where the symbolic
//! query needs nonlinear search (stylegan's `upfirdn2d` tiles: seconds, no answer).
//!
//! When every case is unsatisfiable, so is the query (every model of the query satisfies the
//! disjunction, so one of the cases). A satisfiable case gives the witness only when it is
//! still satisfiable with the plausibility assumptions (see `by_cases` in `solve.rs`); an
//! undecided case, or a witness only without them, ends the attempt, and the normal checks
//! decide.

use crate::term::{Query, Term};
use std::collections::BTreeSet;

/// At most this many cases are tried (each is one check).
pub(crate) const MAX_CASES: usize = 12;

/// One case: variables and the constants they take.
pub(crate) type Case = Vec<(String, i64)>;

/// The cases of `query`: the constant assignments of its top-level disjunctions whose every
/// disjunct fixes a variable the query uses in a nonlinear position (a divisor, or a factor of a
/// product of variables), combined (one case per choice of a disjunct in each) as long as there
/// are at most [`MAX_CASES`]; the disjunctions fixing more such variables first. `None` when
/// there is no such disjunction.
///
/// Every model of the query satisfies one disjunct of each, so one combination: the cases
/// cover the query. (A combination whose values disagree on a variable has no model; checking
/// it with either value is checking more than nothing, which is still sound.)
pub(crate) fn finite_cases(query: &Query) -> Option<Vec<Case>> {
    let nonlinear = query_nonlinear_vars(query)?;
    let mut found: Vec<(usize, Vec<Case>)> = Vec::new();
    for a in &query.assertions {
        if let Some(cases) = disjunction_cases(a, &nonlinear) {
            let mut fixed = BTreeSet::new();
            for c in &cases {
                for (n, _) in c {
                    if nonlinear.contains(n.as_str()) {
                        fixed.insert(n.clone());
                    }
                }
            }
            found.push((fixed.len(), cases));
        }
    }
    found.sort_by_key(|f| std::cmp::Reverse(f.0));
    let mut out: Vec<Case> = vec![vec![]];
    for (_, cases) in found {
        if out.len() * cases.len() > MAX_CASES {
            continue;
        }
        let mut next = Vec::new();
        for prefix in &out {
            for c in &cases {
                let mut both = prefix.clone();
                both.extend(c.iter().cloned());
                both.sort();
                both.dedup();
                if !next.contains(&both) {
                    next.push(both);
                }
            }
        }
        out = next;
    }
    (out.len() > 1 || out.first().is_some_and(|c| !c.is_empty())).then_some(out)
}

/// The cases of the variables in nonlinear positions that the query bounds to a few values
/// at its top level (`0 <= q ∧ q < 9`, the counter of a loop over the planes of a
/// structure-of-arrays, in `q·N + n`): one case per combination of their values, the
/// narrowest ranges first, as long as there are at most [`MAX_CASES`]. `None` when there is
/// no such variable. Every model gives each of them a value in its range, so the cases cover
/// the query.
pub(crate) fn small_ranges(query: &Query) -> Option<Vec<Case>> {
    let nonlinear = query_nonlinear_vars(query)?;
    let mut bounds: std::collections::BTreeMap<String, (i64, i64)> = Default::default();
    let mut stack: Vec<&Term> = query.assertions.iter().collect();
    while let Some(t) = stack.pop() {
        // `(name, lower, upper)` of a constant bound on one side.
        let bound = match t {
            Term::And(ts) => {
                stack.extend(ts.iter());
                continue;
            }
            Term::Le(a, b) => match (&**a, &**b) {
                (Term::Int(k), Term::Var(n)) => Some((n, *k, i64::MAX)),
                (Term::Var(n), Term::Int(k)) => Some((n, i64::MIN, *k)),
                _ => None,
            },
            Term::Lt(a, b) => match (&**a, &**b) {
                (Term::Int(k), Term::Var(n)) => k.checked_add(1).map(|k| (n, k, i64::MAX)),
                (Term::Var(n), Term::Int(k)) => k.checked_sub(1).map(|k| (n, i64::MIN, k)),
                _ => None,
            },
            _ => None,
        };
        if let Some((n, lo, hi)) = bound {
            if nonlinear.contains(&**n) {
                let b = bounds.entry(n.to_string()).or_insert((i64::MIN, i64::MAX));
                b.0 = b.0.max(lo);
                b.1 = b.1.min(hi);
            }
        }
    }
    let mut ranges: Vec<(String, i64, i64)> = bounds
        .into_iter()
        .filter(|(_, (lo, hi))| {
            lo <= hi && hi.checked_sub(*lo).is_some_and(|d| d < MAX_CASES as i64)
        })
        .map(|(n, (lo, hi))| (n, lo, hi))
        .collect();
    ranges.sort_by_key(|(_, lo, hi)| hi - lo);
    let mut out: Vec<Case> = vec![vec![]];
    for (n, lo, hi) in ranges {
        let width = usize::try_from(hi - lo + 1).unwrap_or(usize::MAX);
        if out.len().saturating_mul(width) > MAX_CASES {
            continue;
        }
        out = out
            .iter()
            .flat_map(|prefix| {
                (lo..=hi).map(|k| {
                    let mut c = prefix.clone();
                    c.push((n.clone(), k));
                    c
                })
            })
            .collect();
    }
    out.first().is_some_and(|c| !c.is_empty()).then_some(out)
}

/// The constant assignments of a disjunction `a` (one per distinct disjunct), when each
/// disjunct fixes a variable of `nonlinear`. When there are more than [`MAX_CASES`] of them
/// (eighteen launch sites of a template over colours, images per thread and a bounds check),
/// their values of the `nonlinear` variables alone, when those are few (`ipt` in 1, 2, 4): each
/// model still satisfies a disjunct, so it has one of those values.
fn disjunction_cases(a: &Term, nonlinear: &BTreeSet<String>) -> Option<Vec<Case>> {
    let Term::Or(ds) = a else { return None };
    if ds.len() < 2 || ds.len() > MAX_DISJUNCTS {
        return None;
    }
    let mut cases: Vec<Case> = Vec::new();
    for d in ds.iter() {
        let mut fixed = Vec::new();
        fixed_values(d, &mut fixed);
        fixed.sort();
        fixed.dedup();
        if !fixed.iter().any(|(n, _)| nonlinear.contains(n.as_str())) {
            return None;
        }
        if !cases.contains(&fixed) {
            cases.push(fixed);
        }
    }
    if cases.len() <= MAX_CASES {
        return Some(cases);
    }
    let mut projected: Vec<Case> = Vec::new();
    for c in cases {
        let p: Case = c
            .into_iter()
            .filter(|(n, _)| nonlinear.contains(n.as_str()))
            .collect();
        if !projected.contains(&p) {
            projected.push(p);
        }
    }
    (projected.len() <= MAX_CASES).then_some(projected)
}

/// A disjunction of more disjuncts is not split (its cases are looked for among this many).
const MAX_DISJUNCTS: usize = 64;

/// The `var == constant` conjuncts of `t` (a disjunct).
fn fixed_values(t: &Term, out: &mut Vec<(String, i64)>) {
    match t {
        Term::And(ts) => ts.iter().for_each(|x| fixed_values(x, out)),
        Term::Eq(a, b) => match (&**a, &**b) {
            (Term::Var(n), Term::Int(k)) | (Term::Int(k), Term::Var(n)) => {
                out.push((n.to_string(), *k));
            }
            _ => {}
        },
        _ => {}
    }
}

/// The variables of the query's assertions in nonlinear positions (see [`nonlinear_vars`]);
/// `None` when there are none.
fn query_nonlinear_vars(query: &Query) -> Option<BTreeSet<String>> {
    let mut nonlinear = BTreeSet::new();
    for a in &query.assertions {
        nonlinear_vars(a, &mut nonlinear);
    }
    (!nonlinear.is_empty()).then_some(nonlinear)
}

/// The variables of `t` in nonlinear positions (divisors, factors of a product of at least two
/// non-constant factors).
fn nonlinear_vars(t: &Term, out: &mut BTreeSet<String>) {
    let mut stack = vec![t];
    let mut seen = std::collections::HashSet::new();
    while let Some(t) = stack.pop() {
        if let Some(k) = t.share_key() {
            if !seen.insert(k) {
                continue;
            }
        }
        let parts: Vec<&Term> = match t {
            Term::Div(_, d) | Term::Rem(_, d) | Term::Mod(_, d) if !matches!(**d, Term::Int(_)) => {
                vec![&**d]
            }
            Term::Mul(ts) if ts.iter().filter(|x| !matches!(x, Term::Int(_))).count() >= 2 => {
                ts.iter().collect()
            }
            _ => vec![],
        };
        for p in parts {
            vars_of(p, out);
        }
        stack.extend(t.children());
    }
}

fn vars_of(t: &Term, out: &mut BTreeSet<String>) {
    let mut stack = vec![t];
    while let Some(t) = stack.pop() {
        if let Term::Var(n) = t {
            out.insert(n.to_string());
        }
        stack.extend(t.children());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::term::Sort;

    fn v(n: &str) -> Term {
        Term::var(n)
    }

    fn query(assertions: Vec<Term>) -> Query {
        let mut vars = std::collections::BTreeMap::new();
        for n in ["w", "h", "x", "y", "n"] {
            vars.insert(n.to_string(), Sort::Int);
        }
        Query {
            vars,
            assertions,
            ..Default::default()
        }
    }

    fn case(w: i64, h: i64) -> Term {
        Term::And(
            vec![
                Term::eq(v("w"), Term::Int(w)),
                Term::eq(v("h"), Term::Int(h)),
                Term::lt(v("n"), Term::Int(9)),
            ]
            .into(),
        )
    }

    #[test]
    fn launch_site_constants_of_a_divisor_are_cases() {
        let q = query(vec![
            Term::Or(vec![case(64, 16), case(32, 8), case(64, 16)].into()),
            Term::eq(Term::Div(v("x").into(), v("w").into()), v("y")),
        ]);
        let cases = finite_cases(&q).expect("cases");
        assert_eq!(
            cases,
            vec![
                vec![("h".to_string(), 16), ("w".to_string(), 64)],
                vec![("h".to_string(), 8), ("w".to_string(), 32)],
            ]
        );
    }

    #[test]
    fn many_sites_are_cases_of_their_nonlinear_values() {
        // Eighteen sites: `w` (a divisor) takes 64 or 32, `h` (linear) eighteen values. The
        // cases are the two values of `w` alone.
        let sites: Vec<Term> = (0..18)
            .map(|i| case(if i % 2 == 0 { 64 } else { 32 }, i))
            .collect();
        let q = query(vec![
            Term::Or(sites.into()),
            Term::eq(Term::Div(v("x").into(), v("w").into()), v("y")),
        ]);
        let w = |k| vec![("w".to_string(), k)];
        assert_eq!(finite_cases(&q), Some(vec![w(64), w(32)]));
    }

    #[test]
    fn a_counter_of_few_values_in_a_product_is_cases() {
        // `0 <= x < 3` and `x·w`: three cases; `n <= 100` (wide) and `y` (linear) are none.
        let q = query(vec![
            Term::And(
                vec![
                    Term::le(Term::Int(0), v("x")),
                    Term::lt(v("n"), Term::Int(100)),
                ]
                .into(),
            ),
            Term::lt(v("x"), Term::Int(3)),
            Term::le(Term::Int(0), v("n")),
            Term::le(v("y"), Term::Int(1)),
            Term::le(Term::Int(0), v("y")),
            Term::eq(
                Term::Mul(vec![v("x"), v("w")].into()),
                Term::Add(vec![Term::Mul(vec![v("n"), v("h")].into()), v("y")].into()),
            ),
        ]);
        let x = |k| vec![("x".to_string(), k)];
        assert_eq!(small_ranges(&q), Some(vec![x(0), x(1), x(2)]));
        let linear = query(vec![
            Term::le(Term::Int(0), v("x")),
            Term::lt(v("x"), Term::Int(3)),
            Term::eq(Term::Add(vec![v("x"), v("w")].into()), v("y")),
        ]);
        assert_eq!(small_ranges(&linear), None);
    }

    #[test]
    fn no_cases_without_a_nonlinear_use_or_with_an_open_disjunct() {
        // The fixed variables are not in nonlinear positions.
        let linear = query(vec![
            Term::Or(vec![case(64, 16), case(32, 8)].into()),
            Term::eq(Term::Div(v("x").into(), v("n").into()), v("y")),
        ]);
        assert_eq!(finite_cases(&linear), None);
        // One disjunct fixes nothing: it is not a finite case.
        let open = query(vec![
            Term::Or(vec![case(64, 16), Term::lt(v("w"), Term::Int(3))].into()),
            Term::eq(Term::Div(v("x").into(), v("w").into()), v("y")),
        ]);
        assert_eq!(finite_cases(&open), None);
    }
}
