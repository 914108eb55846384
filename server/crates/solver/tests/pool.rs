//! `SolverPool`: order, cancellation, the deadline guard.
mod common;

use std::time::{Duration, Instant};

use common::*;
use cudarace_solver::{Answer, CancelToken, Limits, SolverPool, Term, GRACE};

fn pinned(i: i64) -> cudarace_solver::Query {
    query(
        &["x"],
        vec![Term::eq(add(vec![v("x"), int(1)]), int(i + 1))],
        &["x"],
    )
}

fn value_of_x(a: &Answer) -> Option<i64> {
    match a {
        Answer::Sat(m) => m.get("x").copied(),
        _ => None,
    }
}

#[test]
fn solve_all_keeps_the_order_of_the_queries() {
    let pool = SolverPool::new(3);
    let answers = pool.solve_all((0..40).map(pinned).collect(), Limits::default());
    let xs: Vec<_> = answers.iter().map(value_of_x).collect();
    assert_eq!(xs, (0..40).map(Some).collect::<Vec<_>>());
}

#[test]
fn blocking_solve_answers() {
    let pool = SolverPool::new(1);
    assert_eq!(
        value_of_x(&pool.solve(pinned(5), Limits::default())),
        Some(5)
    );
    let unsat = query(&["x"], vec![Term::lt(v("x"), v("x"))], &[]);
    assert_eq!(pool.solve(unsat, Limits::default()), Answer::Unsat);
}

/// About a second of Z3 work on the naive grid-stride query (bounded by the interrupt timer).
fn slow_limits() -> Limits {
    Limits {
        timeout_ms: 1000,
        rlimit: 6_000_000,
    }
}

#[test]
fn cancelled_queued_jobs_are_skipped() {
    let pool = SolverPool::new(1);
    let busy = pool.submit(grid_stride_naive(), slow_limits(), CancelToken::new());
    let token = CancelToken::new();
    let queued: Vec<_> = (0..5)
        .map(|i| pool.submit(pinned(i), Limits::default(), token.clone()))
        .collect();
    token.cancel();
    for rx in queued {
        assert_eq!(rx.recv().unwrap(), Answer::Unknown("cancelled".into()));
    }
    // The job of another token is not affected.
    assert!(matches!(
        busy.recv().unwrap(),
        Answer::Unknown(_) | Answer::Unsat
    ));
    // Submitting with an already cancelled token answers at once.
    let rx = pool.submit(pinned(1), Limits::default(), token);
    assert_eq!(rx.recv().unwrap(), Answer::Unknown("cancelled".into()));
}

#[test]
fn cancelling_a_running_job_interrupts_it_and_the_worker_stays_usable() {
    let pool = SolverPool::new(1);
    let token = CancelToken::new();
    // Unbounded in practice: 4.8.12 would run this for minutes.
    let long = Limits {
        timeout_ms: 600_000,
        rlimit: 4_000_000_000,
    };
    let rx = pool.submit(grid_stride_naive(), long, token.clone());
    std::thread::sleep(Duration::from_millis(300));
    token.cancel();
    let answer = rx
        .recv_timeout(Duration::from_secs(5))
        .expect("interrupted within 5 s");
    assert_eq!(answer, Answer::Unknown("cancelled".into()));
    // The interrupt does not stick to the worker's context.
    assert_eq!(
        value_of_x(&pool.solve(pinned(3), Limits::default())),
        Some(3)
    );
    assert_eq!(
        pool.solve(grid_stride_residue(), Limits::default()),
        Answer::Unsat
    );
}

#[test]
fn a_stuck_query_does_not_block_the_others() {
    let pool = SolverPool::new(2);
    // rlimit is huge: only the interrupt timer (or, failing it, the deadline guard after
    // timeout + GRACE) ends this job.
    let stuck_limits = Limits {
        timeout_ms: 200,
        rlimit: 4_000_000_000,
    };
    let start = Instant::now();
    let stuck = pool.submit(grid_stride_naive(), stuck_limits, CancelToken::new());
    std::thread::sleep(Duration::from_millis(100));
    // Meanwhile the other worker serves quick queries.
    let answers = pool.solve_all((0..10).map(pinned).collect(), Limits::default());
    assert_eq!(
        answers.iter().map(value_of_x).collect::<Vec<_>>(),
        (0..10).map(Some).collect::<Vec<_>>()
    );
    assert!(
        start.elapsed() < Duration::from_millis(1000),
        "{:?}",
        start.elapsed()
    );

    let a = stuck
        .recv_timeout(Duration::from_secs(10))
        .expect("deadline guard answers");
    let took = start.elapsed();
    assert_eq!(a, Answer::Unknown("timeout".into()));
    assert!(took >= Duration::from_millis(200), "{took:?}");
    assert!(
        took < Duration::from_millis(200) + GRACE + Duration::from_secs(2),
        "{took:?}"
    );
    // Capacity is kept: two workers are serving again.
    let deadline = Instant::now() + Duration::from_secs(2);
    while pool.workers() < 2 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(pool.workers(), 2);
    let answers = pool.solve_all((0..6).map(pinned).collect(), Limits::default());
    assert_eq!(
        answers.iter().map(value_of_x).collect::<Vec<_>>(),
        (0..6).map(Some).collect::<Vec<_>>()
    );
}

#[test]
fn pool_is_send_and_sync() {
    fn check<T: Send + Sync>() {}
    check::<SolverPool>();
    check::<CancelToken>();
}

#[test]
fn dropping_the_pool_answers_queued_jobs() {
    let pool = SolverPool::new(1);
    let busy = pool.submit(grid_stride_naive(), slow_limits(), CancelToken::new());
    let queued = pool.submit(pinned(1), Limits::default(), CancelToken::new());
    drop(pool);
    assert_eq!(
        queued.recv_timeout(Duration::from_secs(5)).unwrap(),
        Answer::Unknown("cancelled".into())
    );
    assert!(busy.recv_timeout(Duration::from_secs(30)).is_ok());
}
