//! Real-world corpus mode: `bench --corpus DIR` runs `cudarace check --format json FILE` on
//! every `.cu`/`.cuh` file below DIR, each in its own process (N side by side, each killed after
//! the file timeout), and prints what came out: verdicts, findings by kind and confidence, the
//! reasons of undecided kernels grouped into classes, solver timeouts, crashes and times.
//!
//! `--out RUN.jsonl` records one line per file (the file relative to DIR, wall ms, status, the
//! kernels and the findings without their witnesses) so that `--compare OLD.jsonl` can show what
//! a change of the checker moved, and `--from RUN.jsonl` prints the tables of a recorded run
//! without running anything. `--sample-definite N --seed S` picks N definite findings at random
//! (reproducibly) for triage by hand.
//!
//! The report is read tolerantly: verdict and confidence strings that a later version adds are
//! counted as they come, and finding fields other than the witness and the related locations
//! (a `condition`, a `precondition`, …) are kept in the record as they are.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::io::{BufRead, Read, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use serde_json::{json, Map, Value};

use crate::stats::Samples;

mod compare;
mod process;
mod reasons;
mod record;
mod sample;
mod slow_queries;
mod tables;
#[cfg(test)]
mod tests;

pub use compare::*;
pub use process::*;
pub use reasons::*;
pub use record::*;
pub use sample::*;
pub use tables::*;

/// The verdicts in the order the tables show them; others a later version adds follow.
const VERDICTS: [&str; 5] = ["race-free", "racy", "divergent", "unknown", "unsupported"];
/// The confidences in the order the tables show them; others follow.
const CONFIDENCES: [&str; 2] = ["definite", "possible"];
/// How many lines of the slowest query the report prints (the whole query is in its file).
const SLOWEST_QUERY_LINES: usize = 150;
/// How many characters of a crashed or timed-out process's stderr a record keeps.
const STDERR_TAIL: usize = 2000;
/// Finding fields left out of the record (large, and not needed to compare runs).
const DROPPED_FINDING_FIELDS: [&str; 2] = ["witness", "related"];

#[derive(Debug, Clone, Default)]
pub struct Options {
    pub dir: Option<PathBuf>,
    pub from: Option<PathBuf>,
    pub jobs: usize,
    pub file_timeout_s: f64,
    pub bin: Option<PathBuf>,
    pub out: Option<PathBuf>,
    pub compare: Option<PathBuf>,
    pub sample_definite: Option<usize>,
    pub seed: u64,
    pub no_tables: bool,
    /// Sample at most one definite finding per kernel.
    pub sample_by_kernel: bool,
    /// Where the slowest query of each of the slowest kernels is saved (see [`slow_queries`]).
    pub slow_queries: Option<PathBuf>,
}

impl Options {
    pub fn new() -> Options {
        Options {
            jobs: 2,
            file_timeout_s: 60.0,
            ..Options::default()
        }
    }

    pub fn wanted(&self) -> bool {
        self.dir.is_some() || self.from.is_some()
    }
}

/// Runs every file of `dir` with `jobs` processes side by side; records are appended to `out`
/// as they finish (so an interrupted run keeps what it did) and rewritten in file order at the
/// end.
fn run_corpus(
    bin: &Path,
    dir: &Path,
    files: Vec<String>,
    opts: &Options,
) -> Result<Vec<FileRecord>, String> {
    let mut sink = match &opts.out {
        Some(p) => Some(std::fs::File::create(p).map_err(|e| format!("{}: {e}", p.display()))?),
        None => None,
    };
    let files = Arc::new(files);
    let next = Arc::new(AtomicUsize::new(0));
    let timeout = Duration::from_secs_f64(opts.file_timeout_s.max(0.001));
    let (tx, rx) = mpsc::channel();
    let mut workers = Vec::new();
    for _ in 0..opts.jobs.max(1) {
        let (files, next, tx) = (files.clone(), next.clone(), tx.clone());
        let (bin, dir) = (bin.to_path_buf(), dir.to_path_buf());
        workers.push(std::thread::spawn(move || loop {
            let i = next.fetch_add(1, Ordering::SeqCst);
            let Some(file) = files.get(i) else { break };
            if tx.send(run_file(&bin, &dir, file, timeout)).is_err() {
                break;
            }
        }));
    }
    drop(tx);
    let started = Instant::now();
    let total = files.len();
    let mut records = Vec::with_capacity(total);
    for r in rx {
        if let Some(w) = sink.as_mut() {
            let _ = writeln!(w, "{}", r.to_json());
        }
        let done = records.len() + 1;
        if r.status != Status::Ok || r.wall_ms > 10_000.0 {
            eprintln!(
                "bench: [{done}/{total}] {} {:.1} s {}{}",
                r.status.as_str(),
                r.wall_ms / 1000.0,
                r.file,
                r.detail
                    .as_deref()
                    .map_or(String::new(), |d| format!(" ({d})"))
            );
        }
        if done % 50 == 0 || done == total {
            let elapsed = started.elapsed().as_secs_f64();
            eprintln!(
                "bench: {done}/{total} files, {:.1} min, about {:.1} min left",
                elapsed / 60.0,
                elapsed / done as f64 * (total - done) as f64 / 60.0
            );
        }
        records.push(r);
    }
    for w in workers {
        let _ = w.join();
    }
    records.sort_by(|a, b| a.file.cmp(&b.file));
    if let Some(p) = &opts.out {
        write_jsonl(p, &records).map_err(|e| format!("{}: {e}", p.display()))?;
    }
    Ok(records)
}

fn tool_version(bin: &Path) -> String {
    Command::new(bin)
        .arg("--version")
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "unknown version".into())
}

/// The corpus mode: run (or load) the records, print the tables, the comparison and the sample.
pub fn run(opts: &Options, bin: impl FnOnce() -> Option<PathBuf>) -> Result<(), String> {
    let mut out = String::new();
    // The binary the corpus was run with (for `--slow-queries`).
    let mut ran_with: Option<PathBuf> = None;
    let records = if let Some(dir) = &opts.dir {
        let bin = opts
            .bin
            .clone()
            .or_else(bin)
            .ok_or("no `cudarace` binary (build it with `cargo build --release -p cudarace` or pass --bin)")?;
        let bin = bin
            .canonicalize()
            .map_err(|e| format!("{}: {e}", bin.display()))?;
        let files = find_files(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        eprintln!(
            "bench: {} files below {}, {} jobs, {} s each at most",
            files.len(),
            dir.display(),
            opts.jobs,
            opts.file_timeout_s
        );
        let started = Instant::now();
        let n = files.len();
        let records = run_corpus(&bin, dir, files, opts)?;
        let wall = started.elapsed().as_secs_f64();
        let _ = writeln!(
            out,
            "## Real-world corpus: `{}`\n\n`{}` ({}) `check --format json FILE` on {n} files, {} \
             side by side, each killed after {} s. Run wall time: {:.1} min ({:.0} s).\n",
            dir.display(),
            bin.display(),
            tool_version(&bin),
            opts.jobs,
            opts.file_timeout_s,
            wall / 60.0,
            wall
        );
        ran_with = Some(bin);
        records
    } else if let Some(from) = &opts.from {
        let records = read_jsonl(from)?;
        let _ = writeln!(
            out,
            "## Real-world corpus: recorded run `{}` ({} files)\n",
            from.display(),
            records.len()
        );
        records
    } else {
        return Err("--corpus DIR or --from RUN.jsonl".into());
    };
    let stats = Stats::of(&records);
    if !opts.no_tables {
        stats.render(&mut out);
    }
    if let (Some(save), Some(bin), Some(dir)) = (&opts.slow_queries, &ran_with, &opts.dir) {
        eprintln!(
            "bench: checking the {} slowest kernels again",
            stats.slowest.len()
        );
        let found = slow_queries::find(bin, dir, &stats.slowest, save);
        slow_queries::render(&found, SLOWEST_QUERY_LINES, &mut out);
    }
    if let Some(old_path) = &opts.compare {
        let old = read_jsonl(old_path)?;
        let _ = writeln!(out, "## Compared with `{}`\n", old_path.display());
        compare(&old, &records).render(&Stats::of(&old), &stats, &mut out);
    }
    if let Some(n) = opts.sample_definite {
        let sample = sample_definite(&records, n, opts.seed, opts.sample_by_kernel);
        let total = stats
            .findings
            .values()
            .map(|m| m.get("definite").copied().unwrap_or(0))
            .sum::<usize>();
        let _ = writeln!(
            out,
            "## Sample of definite findings ({} of {total}{}, seed {})\n\n| # | at | kernel | kind | message |\n|---:|---|---|---|---|",
            sample.len(),
            if opts.sample_by_kernel {
                format!(", at most one per kernel of {}", stats.definite_by_kernel.len())
            } else {
                String::new()
            },
            opts.seed
        );
        for (i, f) in sample.iter().enumerate() {
            let _ = writeln!(out, "| {} {}", i + 1, finding_line(f));
        }
        out.push('\n');
    }
    print!("{out}");
    Ok(())
}
