//! A quick proof of unsat in linear arithmetic: the query with its products, quotients by
//! non-constants and bitwise operations abstracted (see [`Encoder::linear`]).

use std::time::Instant;

use z3::SatResult;

use crate::encode::Encoder;
use crate::progress::LinearProgress;
use crate::solve::{dump_if_slow, set_rlimit, Engine, FAST_RLIMIT_CAP};
use crate::term::{Limits, Query, Sort, Term};

/// Share of `rlimit` for the check of the linear abstraction (fast engine, capped like the
/// probes).
const LINEAR_SHARE: u64 = 50;

/// Whether the linear abstraction of a nonlinear query's assertions (see
/// [`Encoder::linear`]) is unsatisfiable: then so is the query, decided in linear arithmetic.
/// Most pairs of accesses cannot meet for a reason that needs no product (`k*N + n` against
/// `j*N + n'` with both digits below `N`, however `n` is built); Z3 takes tens of
/// milliseconds to see it in the nonlinear query, one or two in the abstraction. Anything
/// else (sat, undecided, malformed) leaves the query to the normal checks.
pub(crate) fn linear_unsat(
    query: &Query,
    limits: &Limits,
    progress: &mut LinearProgress,
    complete: &dyn Fn() -> bool,
) -> bool {
    if !crate::term::nonlinear(&query.assertions) {
        return false;
    }
    // A variable the query fixes (a launch size of a bound launch, `blockDim.x == 256`) is
    // that constant in the abstraction: `bid * blockDim.x` is then a linear term, not a fresh
    // constant with facts (an exact abstraction decides more pairs, and faster).
    let fixed = fixed_values(query);
    if !progress.base_failed {
        if abstraction_unsat(query, limits, &fixed) {
            return true;
        }
        if !complete() {
            return false;
        }
        progress.base_failed = true;
    }
    // A factor with a few values (a loop over the planes `q·N + n` of a structure-of-arrays):
    // with each value substituted the product is linear, and when every case is unsat, so is
    // the query. The first case the abstraction cannot refute ends the attempt.
    // The same with the constants each launch site passes (`ipt == 4` with a grid of
    // `(n + 127) / 128` blocks and `n % 128 == 0`): `bid * 32 * ipt` is linear in each case,
    // and so is the grid's cover of `n`.
    [
        crate::cases::small_ranges(query),
        crate::cases::finite_cases(query),
    ]
    .into_iter()
    .enumerate()
    .any(|(list, cases)| {
        cases.is_some_and(|cases| {
            cases_unsat(query, limits, &fixed, &cases, list, progress, complete)
        })
    })
}

/// Whether the linear abstraction is unsatisfiable in every case (with the query's fixed
/// values). The first case it cannot refute ends the attempt. `list`: which list of cases
/// this is, for `progress` (the cases refuted before are not checked again).
fn cases_unsat(
    query: &Query,
    limits: &Limits,
    fixed: &[(String, i64)],
    cases: &[crate::cases::Case],
    list: usize,
    progress: &mut LinearProgress,
    complete: &dyn Fn() -> bool,
) -> bool {
    let is_fixed = |n: &String| fixed.iter().any(|(m, _)| m == n);
    // Every case names the same variables: when the query fixes them all already, the cases
    // are the check just made.
    if progress.failed[list] || cases.iter().flatten().all(|(n, _)| is_fixed(n)) {
        return false;
    }
    // Each case on a quarter of the check's share: a case the abstraction refutes is refuted
    // at once (50-90 ms on cuda-convnet2's `kCrop`), and one it cannot refute would spend the
    // time that `by_cases` (the full query per case) decides it in.
    let limits = Limits {
        rlimit: limits.rlimit / CASE_SHARE_DIVISOR,
        ..*limits
    };
    for case in cases.iter().skip(progress.refuted[list]) {
        let mut values = fixed.to_vec();
        values.extend(case.iter().filter(|(n, _)| !is_fixed(n)).cloned());
        // (An unsat answer stands even when the clock stopped a later step.)
        if abstraction_unsat(query, &limits, &values) {
            progress.refuted[list] += 1;
            continue;
        }
        if complete() {
            progress.failed[list] = true;
        }
        return false;
    }
    true
}

/// How much smaller a case's check of the abstraction is than the whole query's.
const CASE_SHARE_DIVISOR: u64 = 2;

/// Whether the linear abstraction of a nonlinear query's assertions *with its plausibility
/// assumptions* is unsatisfiable: then no witness satisfies every assumption (sizes of at least
/// 1, indices in bounds), and a race, if any, is conditional. The checks then look for any
/// witness at once instead of first spending their budget on a plausible one, which nonlinear
/// search rarely proves absent in time (`x / w` and `x % w` of a mixed-radix index whose digits
/// are in range only when `w >= 1`).
pub(crate) fn linear_unsat_assuming(query: &Query, limits: &Limits) -> bool {
    if query.assumptions.is_empty() || !crate::term::nonlinear(&query.assertions) {
        return false;
    }
    abstraction_unsat_with(query, limits, &fixed_values(query), &query.assumptions)
}

/// Whether the linear abstraction of the query with `values` substituted is unsatisfiable.
fn abstraction_unsat(query: &Query, limits: &Limits, values: &[(String, i64)]) -> bool {
    abstraction_unsat_with(query, limits, values, &[])
}

/// [`abstraction_unsat`] with `extra` formulas asserted too.
fn abstraction_unsat_with(
    query: &Query,
    limits: &Limits,
    values: &[(String, i64)],
    extra: &[Term],
) -> bool {
    let enc = Encoder::linear_with_values(&query.vars, values);
    let Ok(formulas) = query
        .assertions
        .iter()
        .chain(extra)
        .map(|t| enc.bool(t))
        .collect::<Result<Vec<_>, _>>()
    else {
        return false;
    };
    let solver = Engine::Fast.solver();
    set_rlimit(&solver, (limits.rlimit / LINEAR_SHARE).min(FAST_RLIMIT_CAP));
    for a in enc.take_definitions().iter().chain(&formulas) {
        solver.assert(a);
    }
    let started = Instant::now();
    let result = solver.check();
    dump_if_slow(&solver, started.elapsed(), Engine::Fast, &result, "linear");
    result == SatResult::Unsat
}

/// The variables the query's assertions fix to a constant at their top level (`x == k` or
/// `k == x`, also inside a top-level conjunction). Substituting them keeps the query
/// equisatisfiable: every model gives them those values.
pub(crate) fn fixed_values(query: &Query) -> Vec<(String, i64)> {
    let mut out: Vec<(String, i64)> = Vec::new();
    let mut stack: Vec<&Term> = query.assertions.iter().collect();
    while let Some(t) = stack.pop() {
        match t {
            Term::And(ts) => stack.extend(ts.iter()),
            Term::Eq(a, b) => {
                let fixed = match (&**a, &**b) {
                    (Term::Var(n), Term::Int(k)) | (Term::Int(k), Term::Var(n)) => Some((n, *k)),
                    _ => None,
                };
                if let Some((n, k)) = fixed {
                    if query.vars.get(&**n) == Some(&Sort::Int)
                        && !out.iter().any(|(m, _)| **m == **n)
                    {
                        out.push((n.to_string(), k));
                    }
                }
            }
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// [`super::linear_unsat`] from the start, with no clock.
    fn linear_unsat(query: &Query, limits: &Limits) -> bool {
        super::linear_unsat(query, limits, &mut LinearProgress::default(), &|| true)
    }

    fn v(name: &str) -> Term {
        Term::var(name)
    }
    fn int(i: i64) -> Term {
        Term::Int(i)
    }
    fn add(ts: Vec<Term>) -> Term {
        Term::Add(ts.into())
    }
    fn mul(ts: Vec<Term>) -> Term {
        Term::Mul(ts.into())
    }
    fn range(x: Term, lo: i64, hi: i64) -> Vec<Term> {
        vec![Term::le(int(lo), x.clone()), Term::lt(x, int(hi))]
    }
    fn query(assertions: Vec<Term>) -> Query {
        let mut vars = std::collections::BTreeSet::new();
        let mut stack: Vec<&Term> = assertions.iter().collect();
        while let Some(t) = stack.pop() {
            if let Term::Var(n) = t {
                vars.insert(n.to_string());
            }
            stack.extend(t.children());
        }
        Query::new(
            vars.into_iter().map(|n| (n, Sort::Int)).collect(),
            assertions,
        )
    }

    /// Two threads' cells `q*N + n` of a lattice kernel, `n = ((S + 1)*b + s)*B + t` (a
    /// block-stride loop `s` over `S + 1` strips, `S` a quotient of `N`), guarded by `n < N`,
    /// next to what the kernel computes from the data it reads (products and quotients of
    /// loaded values, irrelevant to where it writes).
    fn lattice(q1: i64, q2: i64) -> Query {
        let mut a = vec![];
        a.extend(range(v("B"), 1, 1025));
        a.extend(range(v("G"), 1, 1 << 31));
        a.extend(range(v("N"), -(1 << 31), 1 << 31));
        let strips = add(vec![
            Term::Div(v("N").into(), mul(vec![v("B"), v("G")]).into()),
            int(1),
        ]);
        let mut cells = vec![];
        for (b, t, s, x, y, q) in [
            ("b1", "t1", "s1", "x1", "y1", q1),
            ("b2", "t2", "s2", "x2", "y2", q2),
        ] {
            a.push(Term::le(int(0), v(b)));
            a.push(Term::lt(v(b), v("G")));
            a.extend(range(v(t), 0, 1024));
            a.push(Term::lt(v(t), v("B")));
            a.push(Term::le(int(0), v(s)));
            a.push(Term::lt(v(s), strips.clone()));
            let n = add(vec![
                mul(vec![
                    add(vec![mul(vec![strips.clone(), v(b)]), v(s)]),
                    v("B"),
                ]),
                v(t),
            ]);
            a.push(Term::lt(n.clone(), v("N")));
            cells.push(add(vec![mul(vec![int(q), v("N")]), n]));
            let rho = add(vec![v(x), v(y)]);
            a.push(Term::not(Term::eq(rho.clone(), int(0))));
            let u = Term::Div(mul(vec![v(x), v(y)]).into(), rho.into());
            a.push(Term::lt(mul(vec![u.clone(), u]), v(x)));
        }
        a.push(Term::or(vec![
            Term::ne(v("b1"), v("b2")),
            Term::ne(v("t1"), v("t2")),
        ]));
        a.push(Term::eq(cells[0].clone(), cells[1].clone()));
        query(a)
    }

    #[test]
    fn digits_below_a_symbolic_radix_are_decided_linearly() {
        assert!(linear_unsat(&lattice(2, 5), &Limits::default()));
    }

    #[test]
    fn rows_of_a_symbolic_width_are_one_to_one() {
        // `r1 * w + c1 == r2 * w + c2` with both columns in `[0, w)`: only one cell per
        // (row, column), which the products' common factor `w` shows linearly.
        let mut a = vec![Term::le(int(1), v("w"))];
        for (r, c) in [("r1", "c1"), ("r2", "c2")] {
            a.push(Term::le(int(0), v(r)));
            a.push(Term::le(int(0), v(c)));
            a.push(Term::lt(v(c), v("w")));
        }
        a.push(Term::eq(
            add(vec![mul(vec![v("r1"), v("w")]), v("c1")]),
            add(vec![mul(vec![v("r2"), v("w")]), v("c2")]),
        ));
        a.push(Term::or(vec![
            Term::ne(v("r1"), v("r2")),
            Term::ne(v("c1"), v("c2")),
        ]));
        assert!(linear_unsat(&query(a), &Limits::default()));
    }

    #[test]
    fn a_race_is_not_decided() {
        // Two threads of one block on the block's cell `b * w`: they meet.
        let mut a = vec![Term::le(int(1), v("w"))];
        for (b, t) in [("b1", "t1"), ("b2", "t2")] {
            a.push(Term::le(int(0), v(b)));
            a.extend(range(v(t), 0, 1024));
        }
        a.push(Term::eq(v("b1"), v("b2")));
        a.push(Term::ne(v("t1"), v("t2")));
        a.push(Term::eq(
            mul(vec![v("b1"), v("w")]),
            mul(vec![v("b2"), v("w")]),
        ));
        assert!(!linear_unsat(&query(a), &Limits::default()));
        let sat = query(vec![Term::eq(mul(vec![v("x"), v("y")]), int(6))]);
        assert!(!linear_unsat(&sat, &Limits::default()));
    }

    #[test]
    fn one_thread_per_cell_of_a_lattice_distribution() {
        // Both threads on distribution 3: the digits `(b, s, t)` of one cell are one thread's.
        assert!(linear_unsat(&lattice(3, 3), &Limits::default()));
    }

    #[test]
    fn what_needs_a_product_is_left_to_the_solver() {
        // `x*x == 2` has no integer solution, but only arithmetic on the product shows it.
        let q = query(vec![Term::eq(mul(vec![v("x"), v("x")]), int(2))]);
        assert!(!linear_unsat(&q, &Limits::default()));
    }

    #[test]
    fn a_size_the_query_fixes_is_a_constant_factor() {
        // `x * B == 6` with `B == 4` (a bound launch's `blockDim.x`): `4x == 6` has no integer
        // solution, which linear arithmetic sees only with `B` replaced by 4; as a fresh
        // product constant, `x * B` could be 6.
        let q = query(vec![
            Term::eq(mul(vec![v("x"), v("B")]), int(6)),
            Term::and(vec![Term::le(int(0), v("x")), Term::eq(v("B"), int(4))]),
        ]);
        assert_eq!(fixed_values(&q), vec![("B".to_string(), 4)]);
        assert!(linear_unsat(&q, &Limits::default()));
    }

    #[test]
    fn a_witness_that_needs_a_size_below_one_is_seen_implausible() {
        // Two threads of one block, each on its own cell `t * w`: they meet only with `w == 0`
        // (or, out of range, negative), which the assumption `w >= 1` rules out.
        let mut a = Vec::new();
        a.extend(range(v("t1"), 0, 1024));
        a.extend(range(v("t2"), 0, 1024));
        a.push(Term::ne(v("t1"), v("t2")));
        a.push(Term::eq(
            mul(vec![v("t1"), v("w")]),
            mul(vec![v("t2"), v("w")]),
        ));
        let mut q = query(a);
        assert!(!linear_unsat(&q, &Limits::default()));
        assert!(
            !linear_unsat_assuming(&q, &Limits::default()),
            "no assumptions yet"
        );
        q.assumptions.push(Term::le(int(1), v("w")));
        assert!(linear_unsat_assuming(&q, &Limits::default()));
    }

    /// `x * y == 7` with `x` in `2..=4`: the abstraction (a fresh product) is sat, each case
    /// (`2y == 7`, `3y == 7`, `4y == 7`) is refuted.
    fn product_of_a_small_range() -> Query {
        let mut a = range(v("x"), 2, 5);
        a.push(Term::le(int(0), v("y")));
        a.push(Term::eq(mul(vec![v("x"), v("y")]), int(7)));
        query(a)
    }

    #[test]
    fn the_checks_that_finished_are_kept_and_resumed() {
        let q = product_of_a_small_range();
        let limits = Limits::default();
        // Stopped by the clock after the first check: nothing is kept.
        let mut p = LinearProgress::default();
        assert!(!super::linear_unsat(&q, &limits, &mut p, &|| false));
        assert_eq!(p, LinearProgress::default());
        // Run to the end: refuted by the cases; what was done is counted.
        let mut p = LinearProgress::default();
        assert!(super::linear_unsat(&q, &limits, &mut p, &|| true));
        assert!(p.base_failed);
        assert_eq!(p.refuted[0], 3);
        // Asked again after two cases were refuted: only the third is checked.
        let mut p = LinearProgress {
            base_failed: true,
            refuted: [2, 0],
            failed: [false, false],
        };
        assert!(super::linear_unsat(&q, &limits, &mut p, &|| true));
        assert_eq!(p.refuted[0], 3);
        // A list whose attempt failed before is not tried again (here wrongly recorded, to
        // show that nothing is checked).
        let mut p = LinearProgress {
            base_failed: true,
            refuted: [0, 0],
            failed: [true, true],
        };
        assert!(!super::linear_unsat(&q, &limits, &mut p, &|| true));
    }

    #[test]
    fn linear_queries_are_not_asked_twice() {
        let q = query(vec![Term::lt(v("x"), int(0)), Term::lt(int(0), v("x"))]);
        assert!(!linear_unsat(&q, &Limits::default()));
    }
}
