//! Reliability under load (issue 14, item 5): many queries with very short deadlines (1–5 ms)
//! on hard nonlinear formulas, from several threads at once, while other threads burn CPU, with
//! cancellations, receivers dropped early, workers abandoned by the watchdog (a short grace
//! period), pools dropped while their workers are inside Z3, and processes that exit while
//! solver threads are still inside Z3. A crash (SIGABRT, SIGSEGV) of Z3 takes the test binary
//! down, which fails the test.
//!
//! Short by default (about 4 s of load plus a few child processes); `CUDARACE_STRESS_SECS=60`
//! runs the load that long and `CUDARACE_STRESS_EXITS=50` starts that many child processes.
mod common;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::*;
use cudarace_solver::{solve, Answer, BitOp, CancelToken, Limits, Query, SolverPool, Term};

fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

/// A small xorshift generator (no dependency), seeded per thread.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// What a query's answer may be.
#[derive(Clone, Copy, Debug)]
enum Expect {
    Unsat,
    /// Sat, any model.
    Sat,
    /// Sat, with `x * y == n` in the model.
    Product(i64),
    /// Sat, with `x == i`.
    Pinned(i64),
}

fn bit(op: BitOp, args: Vec<Term>) -> Term {
    Term::Bit {
        op,
        width: 32,
        signed: false,
        args: args.into(),
    }
}

/// Hard and easy queries: nonlinear (grid-stride with a free iteration count, factoring),
/// bit-vectors (`t ^ j == t`), residue encodings, trivial ones, and one with preferred
/// constraints, assumptions and preconditions so that every path of `solve` runs.
fn queries() -> Vec<(Query, Expect)> {
    let mut qs = vec![
        (grid_stride_naive(), Expect::Unsat),
        (grid_stride_residue(), Expect::Unsat),
    ];
    // 1000003 * 999983: both prime.
    let n = 1_000_003_i64 * 999_983;
    let mut a = range(v("x"), 2, 1 << 40);
    a.extend(range(v("y"), 2, 1 << 40));
    a.push(Term::eq(mul(vec![v("x"), v("y")]), int(n)));
    qs.push((query(&["x", "y"], a, &["x", "y"]), Expect::Product(n)));
    // x*x*x + y*y*y == z*z*z with positive values: unsat (Fermat), hopeless for Z3.
    let mut a = range(v("x"), 1, 1 << 20);
    a.extend(range(v("y"), 1, 1 << 20));
    a.extend(range(v("z"), 1, 1 << 20));
    let cube = |n: &str| mul(vec![v(n), v(n), v(n)]);
    a.push(Term::eq(add(vec![cube("x"), cube("y")]), cube("z")));
    qs.push((query(&["x", "y", "z"], a, &["x"]), Expect::Unsat));
    // Bitonic partner: t ^ j == t with j >= 1 is unsat.
    let mut a = range(v("t"), 0, 1024);
    a.extend(range(v("j"), 1, 1024));
    a.push(Term::eq(bit(BitOp::Xor, vec![v("t"), v("j")]), v("t")));
    qs.push((query(&["t", "j"], a, &["t"]), Expect::Unsat));
    for i in 0..3 {
        let a = vec![Term::eq(add(vec![v("x"), int(1)]), int(i + 1))];
        qs.push((query(&["x"], a, &["x"]), Expect::Pinned(i)));
    }
    // The grid-stride question with a witness wanted: drop `i1 == i2`'s partner constraint so
    // it is sat, and ask for small values, plausible sizes and a precondition.
    let mut q = grid_stride_naive();
    q.assertions.pop();
    q.assertions
        .push(Term::eq(v("i1"), add(vec![v("i2"), int(1)])));
    q.preferred = vec![Term::le(v("B"), int(64)), Term::le(v("G"), int(4))];
    q.assumptions = vec![Term::le(int(32), v("B"))];
    q.preconditions = vec![Term::le(v("n"), int(1)), Term::eq(v("k1"), int(0))];
    qs.push((q, Expect::Sat));
    qs
}

/// Checks an answer against what the query allows; returns a complaint if it is wrong.
fn check_answer(expect: Expect, answer: &Answer, unknowns: &Mutex<Vec<String>>) -> Option<String> {
    match (expect, answer) {
        (_, Answer::Unknown(reason)) => {
            let known = ["timeout", "cancelled", "interrupted", "resource limit"];
            if !known.iter().any(|k| reason == k) {
                unknowns.lock().unwrap().push(reason.clone());
            }
            None
        }
        (Expect::Unsat, Answer::Unsat) => None,
        (Expect::Sat, Answer::Sat(_)) => None,
        (Expect::Product(n), Answer::Sat(m)) => match (m.get("x"), m.get("y")) {
            (Some(x), Some(y)) if x.checked_mul(*y) == Some(n) => None,
            _ => Some(format!("bad model for x*y == {n}: {m:?}")),
        },
        (Expect::Pinned(i), Answer::Sat(m)) if m.get("x") == Some(&i) => None,
        (e, a) => Some(format!("expected {e:?}, got {a:?}")),
    }
}

/// Threads that keep both cores busy until `stop`.
fn burn_cpu(threads: usize, stop: &Arc<AtomicBool>) -> Vec<std::thread::JoinHandle<()>> {
    (0..threads)
        .map(|_| {
            let stop = Arc::clone(stop);
            std::thread::spawn(move || {
                let mut x = 1u64;
                while !stop.load(Ordering::Relaxed) {
                    for _ in 0..10_000 {
                        x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
                    }
                    std::hint::black_box(x);
                }
            })
        })
        .collect()
}

fn short_limits(rng: &mut Rng) -> Limits {
    Limits {
        timeout_ms: 1 + rng.below(5),
        // Large: the interrupt timer (or the watchdog) is what ends the hard queries.
        rlimit: 4_000_000_000,
    }
}

#[derive(Default)]
struct Tally {
    answered: AtomicUsize,
    dropped: AtomicUsize,
    cancelled: AtomicUsize,
    pools: AtomicUsize,
    abandoned: AtomicUsize,
    wrong: Mutex<Vec<String>>,
    odd_unknowns: Mutex<Vec<String>>,
}

/// One pool's life: submitters with short deadlines, cancels and dropped receivers, then the
/// pool is dropped while some of its workers may still be inside Z3.
fn one_pool(seed: u64, until: Instant, qs: &Arc<Vec<(Query, Expect)>>, tally: &Arc<Tally>) {
    let pool = Arc::new(SolverPool::with_grace(3, Duration::from_millis(2)));
    let submitters: Vec<_> = (0..3)
        .map(|t| {
            let (pool, qs, tally) = (Arc::clone(&pool), Arc::clone(qs), Arc::clone(tally));
            std::thread::spawn(move || {
                let mut rng = Rng::new(seed * 31 + t);
                while Instant::now() < until {
                    let (q, expect) = &qs[rng.below(qs.len() as u64) as usize];
                    let token = CancelToken::new();
                    let rx = pool.submit(q.clone(), short_limits(&mut rng), token.clone());
                    match rng.below(4) {
                        0 => {
                            // The caller loses interest at once.
                            drop(rx);
                            tally.dropped.fetch_add(1, Ordering::Relaxed);
                            continue;
                        }
                        1 => {
                            std::thread::sleep(Duration::from_micros(rng.below(3000)));
                            token.cancel();
                            tally.cancelled.fetch_add(1, Ordering::Relaxed);
                        }
                        _ => {}
                    }
                    let answer = rx
                        .recv_timeout(Duration::from_secs(20))
                        .expect("every job is answered (the watchdog answers overdue ones)");
                    if let Some(w) = check_answer(*expect, &answer, &tally.odd_unknowns) {
                        tally.wrong.lock().unwrap().push(w);
                    }
                    tally.answered.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    for s in submitters {
        s.join().expect("a submitter panicked");
    }
    tally
        .abandoned
        .fetch_add(pool.abandoned_workers(), Ordering::Relaxed);
    tally.pools.fetch_add(1, Ordering::Relaxed);
    // Dropped with jobs possibly still inside Z3 (dropped receivers, abandoned workers).
}

#[test]
fn many_short_deadlines_under_load() {
    let secs = env_number("CUDARACE_STRESS_SECS", 4);
    let end = Instant::now() + Duration::from_secs(secs);
    let qs = Arc::new(queries());
    let tally = Arc::new(Tally::default());
    let stop = Arc::new(AtomicBool::new(false));
    let burners = burn_cpu(2, &stop);

    // Direct `solve` calls on their own threads (the timer path without the pool).
    let direct: Vec<_> = (0..2)
        .map(|t| {
            let (qs, tally) = (Arc::clone(&qs), Arc::clone(&tally));
            std::thread::Builder::new()
                .stack_size(64 << 20)
                .spawn(move || {
                    let mut rng = Rng::new(1000 + t);
                    while Instant::now() < end {
                        let (q, expect) = &qs[rng.below(qs.len() as u64) as usize];
                        let answer = solve(q, &short_limits(&mut rng));
                        if let Some(w) = check_answer(*expect, &answer, &tally.odd_unknowns) {
                            tally.wrong.lock().unwrap().push(w);
                        }
                        tally.answered.fetch_add(1, Ordering::Relaxed);
                    }
                })
                .unwrap()
        })
        .collect();

    // Pools that live 100–600 ms each, two at a time.
    let mut seed = 1;
    let mut rng = Rng::new(7);
    while Instant::now() < end {
        let until = (Instant::now() + Duration::from_millis(100 + rng.below(500))).min(end);
        let a = {
            let (qs, tally) = (Arc::clone(&qs), Arc::clone(&tally));
            std::thread::spawn(move || one_pool(seed, until, &qs, &tally))
        };
        one_pool(seed + 1, until, &qs, &tally);
        a.join().expect("a pool's driver panicked");
        seed += 2;
    }
    for d in direct {
        d.join().expect("a direct solve thread panicked");
    }
    stop.store(true, Ordering::Relaxed);
    for b in burners {
        b.join().unwrap();
    }

    eprintln!(
        "stress: {} answers, {} dropped, {} cancelled, {} pools, {} workers abandoned",
        tally.answered.load(Ordering::Relaxed),
        tally.dropped.load(Ordering::Relaxed),
        tally.cancelled.load(Ordering::Relaxed),
        tally.pools.load(Ordering::Relaxed),
        tally.abandoned.load(Ordering::Relaxed),
    );
    let odd = tally.odd_unknowns.lock().unwrap();
    if !odd.is_empty() {
        eprintln!(
            "stress: other unknown reasons: {:?}",
            &odd[..odd.len().min(10)]
        );
    }
    let wrong = tally.wrong.lock().unwrap();
    assert!(wrong.is_empty(), "wrong answers: {wrong:?}");
    assert!(tally.answered.load(Ordering::Relaxed) > 0);
}

/// The child's part of [`exiting_while_solving_does_not_crash`]: starts hard queries on a pool
/// and exits the process while they are inside Z3, as `cudarace check` does when the last
/// kernel's time budget ran out or a worker was abandoned: it drops the pool and ends with
/// `exit_process`. With `CUDARACE_STRESS_RAW_EXIT=1` it also runs `solve` on plain threads and
/// ends with `std::process::exit` at once (what the checker did before; it can crash).
#[test]
fn child_exits_while_solving() {
    let Ok(delay) = std::env::var("CUDARACE_STRESS_CHILD") else {
        return; // Only meaningful in a child process.
    };
    let delay: u64 = delay.parse().unwrap_or(50);
    let raw = std::env::var_os("CUDARACE_STRESS_RAW_EXIT").is_some();
    if delay == 0 {
        // A file without kernels: the process ends while the workers may still be creating
        // their Z3 contexts (the SIGABRT of issue 14: `exit` ran libz3's static destructors
        // under two threads inside Z3_mk_context_rc; gdb on the core).
        let pool = SolverPool::new(2);
        // Somewhere within the time the contexts take to create (a few ms under load).
        let micros = u64::from(std::process::id()).wrapping_mul(7919) % 4000;
        std::thread::sleep(Duration::from_micros(micros));
        drop(pool);
        if raw {
            std::process::exit(0);
        }
        cudarace_solver::exit_process(0, Duration::from_secs(2));
    }
    let stop = Arc::new(AtomicBool::new(false));
    let _burners = burn_cpu(2, &stop);
    let pool = SolverPool::with_grace(3, Duration::from_millis(2));
    let qs = queries();
    let long = Limits {
        timeout_ms: 10_000,
        rlimit: 4_000_000_000,
    };
    let mut receivers = Vec::new();
    for (i, (q, _)) in qs.iter().enumerate().take(5) {
        let timeout_ms = if i % 2 == 0 { 10_000 } else { 3 };
        receivers.push(pool.submit(q.clone(), Limits { timeout_ms, ..long }, CancelToken::new()));
    }
    if raw {
        for (q, _) in qs.iter().take(5) {
            let q = q.clone();
            std::thread::Builder::new()
                .stack_size(64 << 20)
                .spawn(move || {
                    let _ = solve(&q, &long);
                })
                .unwrap();
        }
    }
    std::thread::sleep(Duration::from_millis(delay));
    drop(pool);
    if raw {
        std::process::exit(0);
    }
    cudarace_solver::exit_process(0, Duration::from_secs(2));
}

#[test]
fn exiting_while_solving_does_not_crash() {
    if std::env::var_os("CUDARACE_STRESS_CHILD").is_some() {
        return;
    }
    let runs = env_number("CUDARACE_STRESS_EXITS", 12);
    let exe = std::env::current_exe().unwrap();
    let mut failures = Vec::new();
    for i in 0..runs {
        // Every other run exits right after starting the pool.
        let delay = if i % 2 == 0 { 0 } else { 5 + (i * 37) % 200 };
        let out = std::process::Command::new(&exe)
            .args(["--exact", "child_exits_while_solving", "--nocapture"])
            .env("CUDARACE_STRESS_CHILD", delay.to_string())
            .output()
            .unwrap();
        if !out.status.success() {
            failures.push(format!(
                "run {i} (exit after {delay} ms): {:?}; stderr: {}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            ));
        }
    }
    eprintln!("exits: {} of {runs} runs failed", failures.len());
    assert!(failures.is_empty(), "{failures:#?}");
}
