//! `CUDARACE_SLOW_QUERIES=DIR`: solver checks slower than `CUDARACE_SLOW_QUERY_MS` are written
//! to DIR as SMT-LIB, so a query that times out on real code can be studied on its own. Its
//! own test binary: the variables are read once per process.
mod common;

use common::*;
use cudarace_solver::{solve, Answer, Limits, Term};

#[test]
fn slow_checks_are_written_as_smtlib() {
    let dir = std::env::temp_dir().join(format!("cudarace-slow-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::env::set_var("CUDARACE_SLOW_QUERIES", &dir);
    std::env::set_var("CUDARACE_SLOW_QUERY_MS", "0");
    let q = query(
        &["x", "y"],
        vec![Term::eq(add(vec![v("x"), v("y")]), int(10))],
        &["x"],
    );
    assert!(matches!(solve(&q, &Limits::default()), Answer::Sat(_)));
    let files: Vec<_> = std::fs::read_dir(&dir)
        .expect("the dump folder was made")
        .map(|e| e.expect("entry").path())
        .collect();
    assert!(!files.is_empty());
    let text = std::fs::read_to_string(&files[0]).expect("readable");
    assert!(text.starts_with("; cudarace slow check:"), "{text}");
    assert!(text.contains("(declare-fun x () Int)"), "{text}");
    assert!(text.contains("(check-sat)"), "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}
