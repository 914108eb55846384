//! The fixture runner: every `tests/fixtures/<category>/<behaviour>.cu` is one named test
//! (`category/behaviour`) that runs the whole pipeline (`analyze_source`) on the file and compares
//! the verdicts and finding positions with the expectations written in the file (see
//! `cudarace_tests` for the convention). The bundled `examples/` follow the same convention and
//! run here too (`examples/<name>`). Run some with `cargo test --test fixtures -- loops/`.

use cudarace_analysis::ir::{BarrierScope, FileId, Finding, FindingKind, LineIndex, Span};
use cudarace_analysis::{analyze_source, render, FileReport, Options, SolverPool};
use cudarace_tests::{
    compare, cuda_files, example_files, examples_dir, fixture_name, fixtures_dir, MarkKind,
    ObservedFinding, ObservedKernel,
};
use libtest_mimic::{Arguments, Failed, Trial};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Fixtures that are broken on purpose say so with this line; every other fixture must parse
/// without a syntax error (a spurious syntax error on valid CUDA is a front-end bug users see).
const SYNTAX_ERRORS_EXPECTED: &str = "// expect-syntax-errors";

fn main() {
    let args = Arguments::from_args();
    let root = fixtures_dir();
    let known = known_failures();
    let pool = Arc::new(SolverPool::new(2));
    let trial = |name: String, path: PathBuf| {
        let pool = Arc::clone(&pool);
        let ignored = known.contains(&name);
        Trial::test(name, move || run_fixture(&path, &pool)).with_ignored_flag(ignored)
    };
    let mut trials: Vec<Trial> = cuda_files(&root)
        .into_iter()
        .map(|path| trial(fixture_name(&root, &path), path))
        .collect();
    let count = trials.len();
    // The bundled examples (the README's first command) follow the same convention (but for the
    // CMake project in examples/project).
    let examples = examples_dir();
    trials.extend(
        example_files()
            .into_iter()
            .map(|path| trial(format!("examples/{}", fixture_name(&examples, &path)), path)),
    );
    // A test that fails when the fixture folder is missing or nearly empty, so that a broken
    // path cannot make the whole suite pass vacuously.
    trials.push(Trial::test("fixture_count", move || {
        if count >= 70 {
            Ok(())
        } else {
            Err(format!(
                "only {count} fixtures found under {}",
                fixtures_dir().display()
            )
            .into())
        }
    }));
    libtest_mimic::run(&args, trials).exit();
}

/// Fixtures listed in `tests/fixtures/known_failures.txt` (one name per line, `#` comments) are
/// known checker bugs: they run only with `--include-ignored` (or `--ignored`). The list is for
/// tracking, never for changing what a fixture expects; remove a line when its bug is fixed.
fn known_failures() -> Vec<String> {
    let path = fixtures_dir().join("known_failures.txt");
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines()
        .map(|l| l.split('#').next().unwrap_or("").trim())
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect()
}

fn run_fixture(path: &Path, pool: &SolverPool) -> Result<(), Failed> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let shown = display_path(path);
    let report = analyze_source(Some(&shown), &text, &Options::default(), pool);
    let mut problems = Vec::new();
    if let Some(error) = &report.error {
        problems.push(format!("the file was not analysed: {error}"));
    }
    let syntax_errors_expected = text.lines().any(|l| l.trim() == SYNTAX_ERRORS_EXPECTED);
    if !syntax_errors_expected && !report.syntax_errors.is_empty() {
        for e in &report.syntax_errors {
            let line = LineIndex::new(&text).line_col(e.span.start).line + 1;
            problems.push(format!(
                "unexpected syntax error at line {line}: {}",
                e.message
            ));
        }
    }
    if syntax_errors_expected && report.syntax_errors.is_empty() {
        problems.push("the fixture is broken on purpose but no syntax error was reported".into());
    }
    problems.extend(compare(&text, &observe(&text, &report)));
    for kernel in &report.kernels {
        for finding in &kernel.findings {
            problems.extend(witness_problems(finding).into_iter().map(|p| {
                format!(
                    "kernel `{}`: {}: witness {p}",
                    kernel.name,
                    summary(finding)
                )
            }));
        }
    }
    if problems.is_empty() {
        return Ok(());
    }
    Err(format!(
        "{}\n\n{}\n--- report (JSON) ---\n{}",
        shown.display(),
        problems
            .iter()
            .map(|p| format!("  - {p}"))
            .collect::<Vec<_>>()
            .join("\n"),
        serde_json::to_string_pretty(&render::json(std::slice::from_ref(&report)))
            .unwrap_or_else(|e| format!("(JSON rendering failed: {e})\n{report:#?}"))
    )
    .into())
}

/// The path relative to the package root, so messages are short and stable.
fn display_path(path: &Path) -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    path.strip_prefix(root)
        .map(Path::to_path_buf)
        .unwrap_or_else(|_| path.to_path_buf())
}

/// The kernel reports, reduced to what the comparison needs (lines of the checked file).
fn observe(text: &str, report: &FileReport) -> Vec<ObservedKernel> {
    let index = LineIndex::new(text);
    let line_of = |span: Span| (span.file == FileId(0)).then(|| index.line_col(span.start).line);
    report
        .kernels
        .iter()
        .map(|k| ObservedKernel {
            name: k.name.clone(),
            verdict: k.verdict.as_str().to_string(),
            reason: k.reason.clone(),
            findings: k
                .findings
                .iter()
                .map(|f| ObservedFinding {
                    kind: match f.kind {
                        FindingKind::DataRace => MarkKind::Race,
                        FindingKind::BarrierDivergence => MarkKind::Divergent,
                    },
                    line: line_of(f.span),
                    related_lines: f.related.iter().map(|r| line_of(r.span)).collect(),
                    summary: summary(f),
                    confidence: f.confidence.as_str().to_string(),
                })
                .collect(),
        })
        .collect()
}

fn summary(f: &Finding) -> String {
    format!("[{}] {}", f.kind.code(), f.message)
}

/// What every witness must satisfy whatever the kernel (NOTES.md, "Witnesses"): two different
/// threads, each inside the launch it names, and a launch inside CUDA's limits; for divergence,
/// two threads of one block.
fn witness_problems(f: &Finding) -> Vec<String> {
    let w = &f.witness;
    let mut problems = Vec::new();
    let (a, b) = (&w.thread_a, &w.thread_b);
    if a.thread_idx == b.thread_idx && a.block_idx == b.block_idx {
        problems.push(format!(
            "names one thread twice (threadIdx={:?} blockIdx={:?})",
            a.thread_idx, a.block_idx
        ));
    }
    // Only a grid-wide sync may be divergent between blocks.
    let grid_sync = f.barrier == Some(BarrierScope::Grid);
    if f.kind == FindingKind::BarrierDivergence && a.block_idx != b.block_idx && !grid_sync {
        problems.push(format!(
            "of divergence names threads of two blocks ({:?} and {:?})",
            a.block_idx, b.block_idx
        ));
    }
    let threads: i64 = w.block_dim.iter().product();
    if w.block_dim.iter().any(|&d| d < 1) || threads > 1024 || w.block_dim[2] > 64 {
        problems.push(format!("has an impossible blockDim {:?}", w.block_dim));
    }
    if w.grid_dim.iter().any(|&d| d < 1) {
        problems.push(format!("has an impossible gridDim {:?}", w.grid_dim));
    }
    for (who, t) in [("A", a), ("B", b)] {
        for d in 0..3 {
            if t.thread_idx[d] < 0 || t.thread_idx[d] >= w.block_dim[d] {
                problems.push(format!(
                    "thread {who} has threadIdx {:?} outside blockDim {:?}",
                    t.thread_idx, w.block_dim
                ));
                break;
            }
        }
        for d in 0..3 {
            if t.block_idx[d] < 0 || t.block_idx[d] >= w.grid_dim[d] {
                problems.push(format!(
                    "thread {who} has blockIdx {:?} outside gridDim {:?}",
                    t.block_idx, w.grid_dim
                ));
                break;
            }
        }
    }
    problems
}
