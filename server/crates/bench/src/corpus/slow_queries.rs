//! The slowest query of each of the slowest kernels, as SMT-LIB (`--slow-queries DIR`): each
//! kernel is checked again alone (`cudarace check --kernel NAME FILE`) with the solver's dump of
//! slow checks switched on (`CUDARACE_SLOW_QUERIES`, see the solver's `solve.rs`), and the
//! slowest check it wrote is kept as `DIR/NN-KERNEL.smt2`, so that it can be studied on its own
//! (`z3 DIR/NN-KERNEL.smt2`).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::tables::{cell, KernelTime};

/// A check written by the solver's dump: its time, engine and answer (from the file's first
/// line, `; cudarace slow check: 2003 ms, engine Fast, answer Unknown`) and its text.
#[derive(Debug, Clone, PartialEq)]
pub struct DumpedQuery {
    pub ms: u64,
    pub engine: String,
    pub answer: String,
    pub text: String,
}

/// The header of a dumped check, `None` when the text is not one.
pub fn parse_dump(text: &str) -> Option<DumpedQuery> {
    let head = text
        .lines()
        .next()?
        .strip_prefix("; cudarace slow check: ")?;
    let mut parts = head.split(", ");
    let ms = parts.next()?.strip_suffix(" ms")?.parse().ok()?;
    let engine = parts.next()?.strip_prefix("engine ")?.to_string();
    let answer = parts.next()?.strip_prefix("answer ")?.to_string();
    Some(DumpedQuery {
        ms,
        engine,
        answer,
        text: text.to_string(),
    })
}

/// The slowest check dumped into `dir` (ties: the first by file name).
pub fn slowest_dump(dir: &Path) -> Option<DumpedQuery> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .ok()?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "smt2"))
        .collect();
    paths.sort();
    paths
        .iter()
        .filter_map(|p| parse_dump(&std::fs::read_to_string(p).ok()?))
        .fold(None, |best: Option<DumpedQuery>, q| match best {
            Some(b) if b.ms >= q.ms => Some(b),
            _ => Some(q),
        })
}

/// What was found for one slow kernel.
pub struct SlowKernel {
    pub kernel: KernelTime,
    /// The query and where it was saved, when the rerun dumped one.
    pub query: Option<(DumpedQuery, PathBuf)>,
}

/// Checks each of `kernels` again alone (in `corpus`, with `bin`) and saves its slowest check
/// below `out`. A check counts as slow from a twentieth of the kernel's time (at least 50 ms),
/// so that the dump holds the few checks that made the kernel slow.
pub fn find(bin: &Path, corpus: &Path, kernels: &[KernelTime], out: &Path) -> Vec<SlowKernel> {
    let _ = std::fs::create_dir_all(out);
    kernels
        .iter()
        .enumerate()
        .map(|(i, k)| {
            let dump = out.join(format!("dump-{:02}", i + 1));
            let _ = std::fs::remove_dir_all(&dump);
            let _ = std::fs::create_dir_all(&dump);
            let threshold = ((k.ms / 20.0) as u64).max(50);
            let status = Command::new(bin)
                .args(["check", "--format", "json", "--kernel", &k.kernel])
                .arg(&k.file)
                .current_dir(corpus)
                .env("CUDARACE_SLOW_QUERIES", &dump)
                .env("CUDARACE_SLOW_QUERY_MS", threshold.to_string())
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
            let query = status.ok().and_then(|_| slowest_dump(&dump)).and_then(|q| {
                let name: String = k
                    .kernel
                    .chars()
                    .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
                    .take(60)
                    .collect();
                let path = out.join(format!("{:02}-{name}.smt2", i + 1));
                std::fs::write(&path, &q.text).ok()?;
                Some((q, path))
            });
            let _ = std::fs::remove_dir_all(&dump);
            SlowKernel {
                kernel: k.clone(),
                query,
            }
        })
        .collect()
}

/// The table of the slowest kernels with their slowest query, then the slowest of those
/// queries in full (up to `max_lines` lines).
pub fn render(found: &[SlowKernel], max_lines: usize, out: &mut String) {
    let _ = writeln!(
        out,
        "### The slowest query of each of the slowest kernels\n\n\
         Each kernel checked again alone (`check --kernel`, without the file's time budget, so \
         a query may run longer than in the corpus run) with `CUDARACE_SLOW_QUERIES`; a \
         query's time is that of its slowest solver check.\n\n\
         | file | kernel | kernel ms | query ms | engine | answer | SMT-LIB |\n\
         |---|---|---:|---:|---|---|---|"
    );
    for s in found {
        let (ms, engine, answer, path) = match &s.query {
            Some((q, p)) => (
                q.ms.to_string(),
                q.engine.clone(),
                q.answer.clone(),
                format!("`{}`", p.display()),
            ),
            None => (
                "·".into(),
                "·".into(),
                "·".into(),
                "none slower than the threshold".into(),
            ),
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {ms} | {engine} | {answer} | {} |",
            cell(&s.kernel.file),
            cell(&s.kernel.kernel),
            crate::fmt_ms(s.kernel.ms),
            cell(&path)
        );
    }
    let slowest = found
        .iter()
        .filter_map(|s| s.query.as_ref().map(|(q, _)| (q, &s.kernel)))
        .max_by_key(|(q, _)| q.ms);
    if let Some((q, k)) = slowest {
        let lines: Vec<&str> = q.text.lines().collect();
        let _ = writeln!(
            out,
            "\nThe slowest, of `{}` in `{}` ({} of {} lines):\n\n```smt2",
            k.kernel,
            k.file,
            lines.len().min(max_lines),
            lines.len()
        );
        for l in lines.iter().take(max_lines) {
            let _ = writeln!(out, "{l}");
        }
        let _ = writeln!(out, "```");
    }
    out.push('\n');
}
