//! `solve` on the calling thread: answers, models, the C semantics of the operators, preferred
//! constraints, limits, malformed input.
mod common;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use common::*;
use cudarace_solver::{solve, Answer, BitOp, Limits, Sort, Term};

fn sat_values(a: Answer) -> BTreeMap<String, i64> {
    match a {
        Answer::Sat(m) => m,
        other => panic!("expected sat, got {other:?}"),
    }
}

#[test]
fn sat_reports_model_values() {
    let q = query(
        &["x", "y"],
        vec![
            Term::eq(add(vec![v("x"), v("y")]), int(10)),
            Term::eq(Term::sub(v("x"), v("y")), int(4)),
        ],
        &["x", "y"],
    );
    let m = sat_values(solve(&q, &Limits::default()));
    assert_eq!(m.get("x"), Some(&7));
    assert_eq!(m.get("y"), Some(&3));
}

#[test]
fn unconstrained_report_variable_gets_a_value_by_model_completion() {
    let q = query(
        &["x", "unused"],
        vec![Term::eq(v("x"), int(1))],
        &["unused"],
    );
    let m = sat_values(solve(&q, &Limits::default()));
    assert!(m.contains_key("unused"), "{m:?}");
}

#[test]
fn bool_variables_are_reported_as_0_or_1() {
    let mut q = query(&[], vec![Term::not(v("p")), v("q")], &["p", "q"]);
    q.vars.insert("p".into(), Sort::Bool);
    q.vars.insert("q".into(), Sort::Bool);
    let m = sat_values(solve(&q, &Limits::default()));
    assert_eq!(m.get("p"), Some(&0));
    assert_eq!(m.get("q"), Some(&1));
}

#[test]
fn contradiction_is_unsat() {
    let q = query(
        &["x", "y"],
        vec![Term::lt(v("x"), v("y")), Term::lt(v("y"), v("x"))],
        &[],
    );
    assert_eq!(solve(&q, &Limits::default()), Answer::Unsat);
}

fn eval_int(t: Term) -> i64 {
    let q = query(&["r"], vec![Term::eq(v("r"), t)], &["r"]);
    *sat_values(solve(&q, &Limits::default()))
        .get("r")
        .expect("r reported")
}

/// Operands go through variables so that Z3 cannot fold the whole question into a constant
/// before the encoding is exercised.
fn eval_binary(f: fn(std::sync::Arc<Term>, std::sync::Arc<Term>) -> Term, a: i64, b: i64) -> i64 {
    let q = query(
        &["a", "b", "r"],
        vec![
            Term::eq(v("a"), int(a)),
            Term::eq(v("b"), int(b)),
            Term::eq(
                v("r"),
                f(std::sync::Arc::new(v("a")), std::sync::Arc::new(v("b"))),
            ),
        ],
        &["r"],
    );
    *sat_values(solve(&q, &Limits::default()))
        .get("r")
        .expect("r reported")
}

#[test]
fn division_and_remainder_follow_c_truncation() {
    for (a, b) in [
        (7, 2),
        (-7, 2),
        (7, -2),
        (-7, -2),
        (6, 3),
        (-6, 3),
        (0, -5),
        (1, 7),
        (-1, 7),
    ] {
        assert_eq!(eval_binary(Term::Div, a, b), a / b, "{a} / {b}");
        assert_eq!(eval_binary(Term::Rem, a, b), a % b, "{a} % {b}");
    }
}

#[test]
fn mod_is_the_non_negative_smt_modulo() {
    assert_eq!(eval_binary(Term::Mod, -7, 2), 1);
    assert_eq!(eval_binary(Term::Mod, -7, -2), 1);
    assert_eq!(eval_binary(Term::Mod, 7, 3), 1);
}

/// The residue of a grid-stride loop of a bound launch, `(i - gid) mod 4096 == 0`: the fast
/// engine (the `smt` tactic) finds no answer within its rlimit share in the whole time budget,
/// the full engine decides it at once. The fast engine's checks are cut at a share of the
/// time, so the full one gets its turn (before: `unknown`, timeout).
#[test]
fn residue_by_a_constant_stride_is_left_to_the_full_engine_in_time() {
    assert_eq!(
        solve(
            &grid_stride_residue_of_a_constant_launch(),
            &Limits::default()
        ),
        Answer::Unsat
    );
}

#[test]
fn c_division_is_not_floor_division_symbolically() {
    // With floor semantics, a = -1, b = 2 would give -1; C gives 0 and -1 % 2 == -1.
    let q = query(
        &["a"],
        vec![
            Term::lt(v("a"), int(0)),
            Term::eq(
                Term::Div(std::sync::Arc::new(v("a")), std::sync::Arc::new(int(2))),
                int(0),
            ),
            Term::eq(
                Term::Rem(std::sync::Arc::new(v("a")), std::sync::Arc::new(int(2))),
                int(-1),
            ),
        ],
        &["a"],
    );
    assert_eq!(
        sat_values(solve(&q, &Limits::default())).get("a"),
        Some(&-1)
    );
}

fn bit(op: BitOp, width: u8, signed: bool, args: Vec<Term>) -> Term {
    Term::Bit {
        op,
        width,
        signed,
        args: args.into(),
    }
}

#[test]
fn bitwise_operators_on_constants() {
    assert_eq!(
        eval_int(bit(BitOp::Xor, 32, false, vec![int(5), int(3)])),
        6
    );
    assert_eq!(
        eval_int(bit(BitOp::And, 32, false, vec![int(12), int(10)])),
        8
    );
    assert_eq!(
        eval_int(bit(BitOp::Or, 32, false, vec![int(12), int(3)])),
        15
    );
    assert_eq!(
        eval_int(bit(BitOp::Shl, 32, false, vec![int(1), int(4)])),
        16
    );
    assert_eq!(
        eval_int(bit(BitOp::Shr, 32, true, vec![int(-8), int(1)])),
        -4
    );
    assert_eq!(
        eval_int(bit(BitOp::Shr, 32, false, vec![int(-8), int(1)])),
        2_147_483_644
    );
    assert_eq!(eval_int(bit(BitOp::Not, 8, false, vec![int(0)])), 255);
    assert_eq!(eval_int(bit(BitOp::Not, 8, true, vec![int(0)])), -1);
    // Wrap-around of the shifted-out bits in the given width.
    assert_eq!(
        eval_int(bit(BitOp::Shl, 8, false, vec![int(0x81), int(1)])),
        2
    );
    assert_eq!(
        eval_int(bit(BitOp::Xor, 32, true, vec![int(-1), int(1)])),
        -2
    );
}

#[test]
fn xor_with_a_nonzero_mask_never_maps_a_thread_to_itself() {
    // Bitonic sort partner `tid ^ j`, 1 <= j < 1024: never `tid` itself.
    let a = vec![
        Term::le(int(0), v("t")),
        Term::lt(v("t"), int(1024)),
        Term::le(int(1), v("j")),
        Term::lt(v("j"), int(1024)),
        Term::eq(bit(BitOp::Xor, 32, false, vec![v("t"), v("j")]), v("t")),
    ];
    assert_eq!(
        solve(&query(&["t", "j"], a, &[]), &Limits::default()),
        Answer::Unsat
    );
    // …but two threads can share a partner index pattern: t1 ^ 1 == t2 with t1 != t2.
    let a = vec![
        Term::le(int(0), v("t1")),
        Term::lt(v("t1"), int(64)),
        Term::eq(bit(BitOp::Xor, 32, false, vec![v("t1"), int(1)]), v("t2")),
        Term::eq(v("t1"), int(6)),
    ];
    let m = sat_values(solve(&query(&["t1", "t2"], a, &["t2"]), &Limits::default()));
    assert_eq!(m.get("t2"), Some(&7));
}

#[test]
fn ite_and_connectives() {
    let t = Term::ite(
        Term::lt(v("x"), int(0)),
        Term::Neg(std::sync::Arc::new(v("x"))),
        v("x"),
    );
    let q = query(
        &["x", "r"],
        vec![
            Term::eq(v("x"), int(-9)),
            Term::eq(v("r"), t),
            Term::implies(
                Term::Bool(true),
                Term::or(vec![Term::Bool(false), Term::lt(v("r"), int(10))]),
            ),
            Term::and(vec![]),
        ],
        &["r"],
    );
    assert_eq!(sat_values(solve(&q, &Limits::default())).get("r"), Some(&9));
    let q = query(&["x"], vec![Term::or(vec![])], &[]);
    assert_eq!(solve(&q, &Limits::default()), Answer::Unsat);
}

#[test]
fn preferred_constraints_give_the_small_model() {
    let mut q = query(&["x"], vec![ge(v("x"), int(0))], &["x"]);
    q.preferred = vec![Term::le(v("x"), int(3)), ge(v("x"), int(2))];
    let m = sat_values(solve(&q, &Limits::default()));
    let x = m["x"];
    assert!((2..=3).contains(&x), "x = {x}");
}

#[test]
fn inconsistent_preferred_constraints_are_dropped() {
    let mut q = query(&["x"], vec![ge(v("x"), int(1000))], &["x"]);
    q.preferred = vec![Term::le(v("x"), int(64))];
    let m = sat_values(solve(&q, &Limits::default()));
    assert!(m["x"] >= 1000, "{m:?}");
    // They never turn unsat into sat either.
    let mut q = query(&["x"], vec![Term::lt(v("x"), v("x"))], &[]);
    q.preferred = vec![Term::eq(v("x"), int(1))];
    assert_eq!(solve(&q, &Limits::default()), Answer::Unsat);
}

#[test]
fn naive_grid_stride_is_bounded_by_rlimit() {
    // Z3 4.8.12 neither answers this nor honours `timeout` on it (NOTES.md); rlimit must stop it.
    let start = Instant::now();
    let a = solve(
        &grid_stride_naive(),
        &Limits {
            timeout_ms: 2000,
            rlimit: 500_000,
        },
    );
    let took = start.elapsed();
    assert!(matches!(a, Answer::Unknown(_) | Answer::Unsat), "{a:?}");
    assert!(took < Duration::from_secs(10), "took {took:?}");
    if let Answer::Unknown(reason) = a {
        assert_eq!(reason, "resource limit");
    }
}

/// A pair stopped by the clock after the solver proved that no witness keeps the assumptions
/// says so: race-free for the values a caller would pass, undecided for the others. Without
/// that proof it is a plain timeout.
#[test]
fn timeout_after_no_plausible_witness_says_so() {
    let limits = Limits {
        timeout_ms: 300,
        ..Limits::default()
    };
    let plain = solve(&grid_stride_naive(), &limits);
    assert_eq!(plain, Answer::Unknown("timeout".to_string()));
    let mut q = grid_stride_naive();
    // A thread index below zero: linear arithmetic alone shows that no witness keeps it.
    q.assumptions = vec![Term::lt(v("t1"), int(0))];
    assert_eq!(
        solve(&q, &limits),
        Answer::Unknown(cudarace_solver::TIMEOUT_PLAUSIBLY_RACE_FREE.to_string())
    );
}

#[test]
fn residue_grid_stride_is_unsat_within_the_default_rlimit() {
    // Decided by the full engine in about 0.5 s alone; the wall clock is generous so that the
    // answer does not depend on how loaded the machine is (tests run side by side), while the
    // default rlimit still has to suffice (speed is measured by the benchmark).
    let limits = Limits {
        timeout_ms: 30_000,
        ..Limits::default()
    };
    assert_eq!(solve(&grid_stride_residue(), &limits), Answer::Unsat);
}

#[test]
fn malformed_queries_are_unknown_not_panics() {
    let undeclared = query(&[], vec![Term::eq(v("nope"), int(1))], &[]);
    match solve(&undeclared, &Limits::default()) {
        Answer::Unknown(r) => assert!(r.contains("nope"), "{r}"),
        other => panic!("{other:?}"),
    }
    let sorts = query(
        &["x"],
        vec![Term::Add(vec![v("x"), Term::Bool(true)].into())],
        &[],
    );
    assert!(matches!(
        solve(&sorts, &Limits::default()),
        Answer::Unknown(_)
    ));
    let not_bool = query(&["x"], vec![v("x")], &[]);
    assert!(matches!(
        solve(&not_bool, &Limits::default()),
        Answer::Unknown(_)
    ));
    let arity = query(
        &[],
        vec![Term::eq(
            bit(BitOp::Not, 8, false, vec![int(1), int(2)]),
            int(0),
        )],
        &[],
    );
    assert!(matches!(
        solve(&arity, &Limits::default()),
        Answer::Unknown(_)
    ));
    let width = query(
        &[],
        vec![Term::eq(bit(BitOp::And, 0, false, vec![int(1)]), int(0))],
        &[],
    );
    assert!(matches!(
        solve(&width, &Limits::default()),
        Answer::Unknown(_)
    ));
}

fn nots(n: usize) -> Term {
    let mut t = Term::Bool(true);
    for _ in 0..n {
        t = Term::not(t);
    }
    t
}

#[test]
fn deep_terms_are_translated_without_recursion_and_absurd_depth_is_refused() {
    // 3000 levels on the default 2 MiB test-thread stack: a recursive translation would overflow
    // in a debug build (about 6.5 KiB per level was measured for one).
    assert!(matches!(
        solve(&query(&[], vec![nots(3000)], &[]), &Limits::default()),
        Answer::Sat(_)
    ));
    assert_eq!(
        solve(&query(&[], vec![nots(3001)], &[]), &Limits::default()),
        Answer::Unsat
    );
    match solve(&query(&[], vec![nots(20_000)], &[]), &Limits::default()) {
        Answer::Unknown(r) => assert!(r.contains("deeper"), "{r}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn division_by_zero_is_not_an_error() {
    // C leaves it undefined; the checker must guard divisors itself. The solver must not fail.
    let q = query(
        &["x", "r"],
        vec![Term::eq(
            v("r"),
            Term::Div(std::sync::Arc::new(v("x")), std::sync::Arc::new(int(0))),
        )],
        &[],
    );
    assert!(matches!(solve(&q, &Limits::default()), Answer::Sat(_)));
}

#[test]
fn timeout_stops_nonlinear_search_that_z3_4_8_12_would_not_stop_itself() {
    // NOTES.md: with Z3's own `timeout` this query blocked for 100 s; our interrupt timer stops
    // it although rlimit would allow minutes of search.
    let start = Instant::now();
    let a = solve(
        &grid_stride_naive(),
        &Limits {
            timeout_ms: 700,
            rlimit: u64::from(u32::MAX),
        },
    );
    let took = start.elapsed();
    assert!(took < Duration::from_secs(3), "took {took:?}");
    assert!(
        matches!(&a, Answer::Unknown(r) if r == "timeout") || a == Answer::Unsat,
        "{a:?}"
    );
}

/// A witness that must break an assumption breaks as few as the solver can find: the condition
/// of a conditional race names what the race needs, not also what the first model picked.
#[test]
fn witness_breaking_assumptions_keeps_all_it_can() {
    let mut q = query(
        &["x", "y", "z"],
        vec![
            Term::eq(add(vec![v("x"), v("y")]), int(10)),
            Term::le(int(0), v("x")),
            Term::le(int(0), v("y")),
        ],
        &["x", "y", "z"],
    );
    // x <= 2 and y <= 2 cannot both hold; z == 5 always can.
    q.assumptions = vec![
        Term::le(v("x"), int(2)),
        Term::le(v("y"), int(2)),
        Term::eq(v("z"), int(5)),
    ];
    let m = sat_values(solve(&q, &Limits::default()));
    assert_eq!(m.get("z"), Some(&5), "{m:?}");
    assert!(m["x"] <= 2 || m["y"] <= 2, "{m:?}");
}

/// A race's precondition search gives up after two candidates the fast engine leaves
/// undecided (each spends its whole share of `rlimit`), so that a racy kernel with many
/// nonlinear races does not spend its time on advice: a third candidate that would remove
/// the race is not tried. With one undecided candidate before it, it is found.
#[test]
fn precondition_search_stops_after_two_undecided_candidates() {
    // Pigeons: 14 distinct values in 0..=12 do not exist, which takes more than a
    // precondition check's share of `rlimit` to see.
    let pigeons: Vec<String> = (0..14).map(|i| format!("p{i}")).collect();
    let holes = |extra: i64| {
        let mut ts = vec![Term::le(int(extra), v("x"))];
        for (i, a) in pigeons.iter().enumerate() {
            ts.push(Term::le(int(0), v(a)));
            ts.push(Term::le(v(a), int(12)));
            for b in &pigeons[i + 1..] {
                ts.push(Term::ne(v(a), v(b)));
            }
        }
        Term::and(ts)
    };
    let removes = Term::le(int(5000), v("x"));
    let race = |preconditions: Vec<Term>| {
        let mut names: Vec<&str> = pigeons.iter().map(String::as_str).collect();
        names.push("x");
        let mut q = query(
            &names,
            vec![Term::le(int(1), v("x")), Term::le(v("x"), int(1000))],
            &["x"],
        );
        q.preconditions = preconditions;
        sat_values(solve(&q, &Limits::default()))
    };
    let found = race(vec![holes(1), removes.clone()]);
    assert_eq!(
        found.get(cudarace_solver::PRECONDITION_KEY),
        Some(&1),
        "{found:?}"
    );
    let given_up = race(vec![holes(1), holes(2), removes]);
    assert_eq!(
        given_up.get(cudarace_solver::PRECONDITION_KEY),
        None,
        "{given_up:?}"
    );
}
