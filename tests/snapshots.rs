//! Snapshot tests of the whole pipeline's output (JSON and human) for three fixtures: a racy one
//! (all threads store the same constant), a divergent one, and a race-free one. The timing field
//! (`time_ms`) is zeroed before rendering, and the block size is fixed to 64 threads as
//! `cudarace check --block-dim 64` would (the strongest launch source), so that every query is
//! linear and answered well inside its limits: the snapshots hold only what must be stable.
//! Review changes with `cargo insta review` (or `INSTA_UPDATE=always cargo test --test snapshots`).

use cudarace_analysis::ir::LaunchConfig;
use cudarace_analysis::render::{self, HumanOptions};
use cudarace_analysis::{analyze_source, FileReport, Options, SolverPool};
use cudarace_tests::fixtures_dir;
use std::path::Path;

/// Analyses a fixture, naming it by its path relative to the package root (stable in snapshots).
fn analyze_fixture(rel: &str) -> FileReport {
    let path = fixtures_dir().join(rel);
    let text = std::fs::read_to_string(&path).expect("fixture is readable");
    let shown = Path::new("tests/fixtures").join(rel);
    let pool = SolverPool::new(1);
    let mut opts = Options::default();
    opts.check.launch_override = LaunchConfig {
        block_dim: [Some(64), None, None],
        grid_dim: [None, None, None],
    };
    let mut report = analyze_source(Some(&shown), &text, &opts, &pool);
    for kernel in &mut report.kernels {
        kernel.time_ms = 0.0;
    }
    report
}

fn check_both(name: &str, rel: &str) {
    let report = analyze_fixture(rel);
    let reports = std::slice::from_ref(&report);
    insta::assert_json_snapshot!(format!("{name}_json"), render::json(reports));
    insta::assert_snapshot!(
        format!("{name}_human"),
        render::human(reports, &HumanOptions { color: false })
    );
}

#[test]
fn same_value_write() {
    check_both("same_value_write", "intervals/same_value_write.cu");
}

#[test]
fn barrier_after_thread_return() {
    check_both(
        "barrier_after_thread_return",
        "divergence/barrier_after_thread_return.cu",
    );
}

#[test]
fn vector_add() {
    check_both("vector_add", "global/vector_add.cu");
}
