//! Not tests: measurements on this machine (run with `--ignored --nocapture`, in release).
mod common;
use cudarace_solver::{solve, Answer, BitOp, Limits, Term};
use std::time::Instant;

fn timed(name: &str, q: &cudarace_solver::Query, l: Limits) {
    let t = Instant::now();
    let a = solve(q, &l);
    eprintln!("{name}: {:?} in {:?}", a, t.elapsed());
}

#[test]
#[ignore]
fn calibrate_rlimit() {
    for rl in [1_000_000u64, 4_000_000, 10_000_000, 20_000_000] {
        timed(
            &format!("naive rlimit={rl}"),
            &common::grid_stride_naive(),
            Limits {
                timeout_ms: 60_000,
                rlimit: rl,
            },
        );
    }
}

#[test]
#[ignore]
fn typical_queries() {
    use common::*;
    timed("residue", &grid_stride_residue(), Limits::default());
    timed("naive", &grid_stride_naive(), Limits::default());
    let xor = query(
        &["t", "j"],
        vec![
            Term::le(int(0), v("t")),
            Term::lt(v("t"), int(1024)),
            Term::le(int(1), v("j")),
            Term::lt(v("j"), int(1024)),
            Term::eq(
                Term::Bit {
                    op: BitOp::Xor,
                    width: 32,
                    signed: false,
                    args: vec![v("t"), v("j")].into(),
                },
                v("t"),
            ),
        ],
        &[],
    );
    timed("xor", &xor, Limits::default());
    // Tree reduction: tid % (2*s) == 0 writes sdata[tid], reads sdata[tid + s]; s a power of two.
    let red = query(
        &["t1", "t2", "s", "B", "e"],
        vec![
            Term::le(int(1), v("B")),
            Term::le(v("B"), int(1024)),
            Term::le(int(0), v("t1")),
            Term::lt(v("t1"), v("B")),
            Term::le(int(0), v("t2")),
            Term::lt(v("t2"), v("B")),
            Term::ne(v("t1"), v("t2")),
            Term::le(int(0), v("e")),
            Term::lt(v("e"), int(11)),
            Term::eq(
                v("s"),
                Term::Bit {
                    op: BitOp::Shl,
                    width: 32,
                    signed: false,
                    args: vec![int(1), v("e")].into(),
                },
            ),
            Term::lt(v("s"), v("B")),
            Term::eq(
                Term::Mod(
                    std::sync::Arc::new(v("t1")),
                    std::sync::Arc::new(mul(vec![int(2), v("s")])),
                ),
                int(0),
            ),
            Term::eq(
                Term::Mod(
                    std::sync::Arc::new(v("t2")),
                    std::sync::Arc::new(mul(vec![int(2), v("s")])),
                ),
                int(0),
            ),
            Term::eq(v("t1"), add(vec![v("t2"), v("s")])),
        ],
        &[],
    );
    timed("reduction", &red, Limits::default());
    let trivial = query(&["x"], vec![Term::eq(v("x"), int(3))], &["x"]);
    let t = Instant::now();
    let mut last = Answer::Unsat;
    for _ in 0..100 {
        last = solve(&trivial, &Limits::default());
    }
    eprintln!("trivial: {:?} {:?} per query", last, t.elapsed() / 100);
}
