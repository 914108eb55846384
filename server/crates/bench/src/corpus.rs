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

/// The verdicts in the order the tables show them; others a later version adds follow.
const VERDICTS: [&str; 5] = ["race-free", "racy", "divergent", "unknown", "unsupported"];
/// The confidences in the order the tables show them; others follow.
const CONFIDENCES: [&str; 2] = ["definite", "possible"];
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

/// What happened to one file's process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// Exit status 0 or 1 and a parsable report.
    Ok,
    /// Killed by a signal, another exit status, or output that is not a report.
    Crash,
    /// Still running at the file timeout (killed).
    FileTimeout,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Crash => "crash",
            Status::FileTimeout => "file-timeout",
        }
    }

    fn parse(s: &str) -> Status {
        match s {
            "ok" => Status::Ok,
            "file-timeout" => Status::FileTimeout,
            _ => Status::Crash,
        }
    }
}

/// How a process ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Exited(i32),
    Signal(i32),
    TimedOut,
    /// It could not be started or waited for.
    Failed(String),
}

/// Everything recorded about one file (one line of the JSONL file).
#[derive(Debug, Clone)]
pub struct FileRecord {
    /// Relative to the corpus folder, `/`-separated.
    pub file: String,
    pub wall_ms: f64,
    pub status: Status,
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    /// Why a crash is one ("killed by signal 6 (SIGABRT)", "exit status 101", "unparsable
    /// JSON: …").
    pub detail: Option<String>,
    pub stderr_tail: Option<String>,
    /// `files[].error` of the report (a file the checker could not analyse).
    pub file_errors: Vec<String>,
    pub syntax_errors: usize,
    pub notices: usize,
    /// The report's kernel objects, as they are.
    pub kernels: Vec<Value>,
    /// The report's finding objects without [`DROPPED_FINDING_FIELDS`].
    pub findings: Vec<Value>,
}

fn signal_name(signal: i32) -> &'static str {
    match signal {
        4 => "SIGILL",
        6 => "SIGABRT",
        7 => "SIGBUS",
        8 => "SIGFPE",
        9 => "SIGKILL",
        11 => "SIGSEGV",
        13 => "SIGPIPE",
        15 => "SIGTERM",
        _ => "signal",
    }
}

fn tail(s: &str, chars: usize) -> String {
    let count = s.chars().count();
    s.chars().skip(count.saturating_sub(chars)).collect()
}

/// The record of one file from how its process ended and what it printed (the pure part of the
/// runner).
pub fn record_from_output(
    file: &str,
    wall_ms: f64,
    outcome: &Outcome,
    stdout: &str,
    stderr: &str,
) -> FileRecord {
    let mut r = FileRecord {
        file: file.to_string(),
        wall_ms,
        status: Status::Crash,
        exit_code: None,
        signal: None,
        detail: None,
        stderr_tail: None,
        file_errors: Vec::new(),
        syntax_errors: 0,
        notices: 0,
        kernels: Vec::new(),
        findings: Vec::new(),
    };
    let stderr = stderr.trim_end();
    if !stderr.is_empty() {
        r.stderr_tail = Some(tail(stderr, STDERR_TAIL));
    }
    match outcome {
        Outcome::TimedOut => {
            r.status = Status::FileTimeout;
            return r;
        }
        Outcome::Failed(e) => {
            r.detail = Some(e.clone());
            return r;
        }
        Outcome::Signal(s) => {
            r.signal = Some(*s);
            r.detail = Some(format!("killed by signal {s} ({})", signal_name(*s)));
            return r;
        }
        Outcome::Exited(code) => {
            r.exit_code = Some(*code);
            if *code != 0 && *code != 1 {
                r.detail = Some(format!("exit status {code}"));
                return r;
            }
        }
    }
    let report: Value = match serde_json::from_str(stdout) {
        Ok(v @ Value::Object(_)) => v,
        Ok(_) => {
            r.detail = Some("unparsable JSON: not an object".into());
            return r;
        }
        Err(e) => {
            r.detail = Some(format!("unparsable JSON: {e}"));
            return r;
        }
    };
    r.status = Status::Ok;
    for f in report["files"].as_array().into_iter().flatten() {
        if let Some(e) = f.get("error") {
            r.file_errors
                .push(e.as_str().map_or_else(|| e.to_string(), str::to_string));
        }
        r.syntax_errors += f["syntax_errors"].as_array().map_or(0, Vec::len);
        r.notices += f["notices"].as_array().map_or(0, Vec::len);
    }
    r.kernels = report["kernels"].as_array().cloned().unwrap_or_default();
    r.findings = report["findings"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|f| match f {
            Value::Object(m) => Value::Object(
                m.iter()
                    .filter(|(k, _)| !DROPPED_FINDING_FIELDS.contains(&k.as_str()))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect(),
            ),
            other => other.clone(),
        })
        .collect();
    r
}

impl FileRecord {
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("file".into(), json!(self.file));
        m.insert(
            "wall_ms".into(),
            json!((self.wall_ms * 1000.0).round() / 1000.0),
        );
        m.insert("status".into(), json!(self.status.as_str()));
        if let Some(c) = self.exit_code {
            m.insert("exit_code".into(), json!(c));
        }
        if let Some(s) = self.signal {
            m.insert("signal".into(), json!(s));
        }
        if let Some(d) = &self.detail {
            m.insert("detail".into(), json!(d));
        }
        if let Some(t) = &self.stderr_tail {
            m.insert("stderr_tail".into(), json!(t));
        }
        m.insert("file_errors".into(), json!(self.file_errors));
        m.insert("syntax_errors".into(), json!(self.syntax_errors));
        m.insert("notices".into(), json!(self.notices));
        m.insert("kernels".into(), Value::Array(self.kernels.clone()));
        m.insert("findings".into(), Value::Array(self.findings.clone()));
        Value::Object(m)
    }

    pub fn from_json(v: &Value) -> Option<FileRecord> {
        let count = |key: &str| v[key].as_u64().unwrap_or(0) as usize;
        Some(FileRecord {
            file: v["file"].as_str()?.to_string(),
            wall_ms: v["wall_ms"].as_f64().unwrap_or(0.0),
            status: Status::parse(v["status"].as_str().unwrap_or("")),
            exit_code: v["exit_code"].as_i64().map(|c| c as i32),
            signal: v["signal"].as_i64().map(|s| s as i32),
            detail: v["detail"].as_str().map(str::to_string),
            stderr_tail: v["stderr_tail"].as_str().map(str::to_string),
            file_errors: v["file_errors"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|e| e.as_str().map_or_else(|| e.to_string(), str::to_string))
                .collect(),
            syntax_errors: count("syntax_errors"),
            notices: count("notices"),
            kernels: v["kernels"].as_array().cloned().unwrap_or_default(),
            findings: v["findings"].as_array().cloned().unwrap_or_default(),
        })
    }
}

fn text<'a>(v: &'a Value, key: &str) -> &'a str {
    v[key].as_str().unwrap_or("")
}

fn verdict(k: &Value) -> &str {
    match text(k, "verdict") {
        "" => "(none)",
        v => v,
    }
}

fn confidence(f: &Value) -> &str {
    match text(f, "confidence") {
        "" => "(none)",
        c => c,
    }
}

// ---------------------------------------------------------------------------------------------
// Reasons

/// Splits a compound reason at the `; ` that separate its parts (not inside parentheses or
/// backquotes, and not before a clause that continues the previous one: `…; it was treated as
/// no barrier`, `…; so …`).
fn split_reason(reason: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut quoted, mut start) = (0i32, false, 0);
    let bytes = reason.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        match b {
            b'`' => quoted = !quoted,
            b'(' if !quoted => depth += 1,
            b')' if !quoted => depth -= 1,
            b';' if !quoted
                && depth <= 0
                && bytes.get(i + 1) == Some(&b' ')
                && !CONTINUATIONS.iter().any(|c| reason[i + 2..].starts_with(c)) =>
            {
                parts.push(reason[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(reason[start..].trim());
    parts.retain(|p| !p.is_empty());
    parts
}

/// One reason part with its names and numbers taken out: quoted text (`` `…` ``, `'…'`, `"…"`)
/// becomes `…`, a number (`64`, `0x1f`, `2.5f`) becomes `N`, runs of white space one space.
pub fn normalise_reason_part(part: &str) -> String {
    let chars: Vec<char> = part.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    let word = |c: char| c.is_alphanumeric() || c == '_';
    while i < chars.len() {
        let c = chars[i];
        let prev_word = i > 0 && word(chars[i - 1]);
        let closing = |q: char| chars[i + 1..].iter().position(|&d| d == q);
        match c {
            '`' | '"' | '\'' if !(c == '\'' && prev_word) => {
                if let Some(len) = closing(c) {
                    out.push(c);
                    out.push('…');
                    out.push(c);
                    i += len + 2;
                    continue;
                }
                out.push(c);
            }
            d if d.is_ascii_digit() && !prev_word => {
                while i < chars.len() && (word(chars[i]) || chars[i] == '.') {
                    // A sentence-ending dot is not part of the number.
                    if chars[i] == '.' && !chars.get(i + 1).is_some_and(|n| n.is_ascii_digit()) {
                        break;
                    }
                    i += 1;
                }
                out.push('N');
                continue;
            }
            w if w.is_whitespace() => {
                if !out.ends_with(' ') {
                    out.push(' ');
                }
            }
            other => out.push(other),
        }
        i += 1;
    }
    out.trim().to_string()
}

/// Words that start a clause continuing the one before a `; `.
const CONTINUATIONS: [&str; 4] = ["it ", "so ", "which ", "that "];

/// The distinct classes of a (compound) reason, each with the first part of the reason that has
/// it.
pub fn reason_classes(reason: &str) -> BTreeMap<String, String> {
    let mut classes = BTreeMap::new();
    for part in split_reason(reason) {
        let class = normalise_reason_part(part);
        if !class.is_empty() {
            classes.entry(class).or_insert_with(|| part.to_string());
        }
    }
    classes
}

// ---------------------------------------------------------------------------------------------
// Aggregation

#[derive(Debug, Default)]
pub struct ReasonClass {
    /// Kernels with this class among their reason's parts, by verdict.
    pub by_verdict: BTreeMap<String, usize>,
    pub example: String,
}

impl ReasonClass {
    /// Kernels that are `unknown` or `unsupported` with this class.
    pub fn undecided(&self) -> usize {
        ["unknown", "unsupported"]
            .iter()
            .map(|v| self.by_verdict.get(*v).copied().unwrap_or(0))
            .sum()
    }
}

/// One kernel with its file (for the slowest list).
#[derive(Debug, Clone)]
pub struct KernelTime {
    pub file: String,
    pub kernel: String,
    pub ms: f64,
    pub verdict: String,
}

#[derive(Debug, Default)]
pub struct Stats {
    pub files: usize,
    pub files_ok: usize,
    pub files_with_kernels: usize,
    pub files_with_error: usize,
    pub files_with_syntax_errors: usize,
    pub kernels: usize,
    pub verdicts: BTreeMap<String, usize>,
    /// kind → confidence → count.
    pub findings: BTreeMap<String, BTreeMap<String, usize>>,
    pub confidences: BTreeSet<String>,
    pub reasons: BTreeMap<String, ReasonClass>,
    /// Kernels whose reason mentions a timeout, by verdict.
    pub timeouts: BTreeMap<String, usize>,
    /// … of which a query timeout (`(timeout)`), the kernel's time budget, a resource limit.
    pub query_timeouts: usize,
    pub budget_timeouts: usize,
    pub resource_limits: usize,
    pub file_error_classes: BTreeMap<String, usize>,
    pub crashes: Vec<(String, f64, String, String)>,
    pub file_timeouts: Vec<(String, f64)>,
    pub kernel_ms: Samples,
    pub file_ms: Samples,
    pub files_over_10s: usize,
    pub files_over_60s: usize,
    pub slowest: Vec<KernelTime>,
    /// (checked file, kernel) → definite findings.
    pub definite_by_kernel: BTreeMap<(String, String), usize>,
    pub total_wall_ms: f64,
}

fn last_lines(s: &str, lines: usize, chars: usize) -> String {
    let all: Vec<&str> = s.lines().filter(|l| !l.trim().is_empty()).collect();
    let joined = all[all.len().saturating_sub(lines)..].join(" ⏎ ");
    tail(&joined, chars)
}

impl Stats {
    pub fn of(records: &[FileRecord]) -> Stats {
        let mut s = Stats {
            files: records.len(),
            ..Stats::default()
        };
        let mut times: Vec<KernelTime> = Vec::new();
        for r in records {
            s.file_ms.push(r.wall_ms);
            s.total_wall_ms += r.wall_ms;
            if r.wall_ms > 10_000.0 {
                s.files_over_10s += 1;
            }
            if r.wall_ms > 60_000.0 {
                s.files_over_60s += 1;
            }
            match r.status {
                Status::Ok => s.files_ok += 1,
                Status::FileTimeout => s.file_timeouts.push((r.file.clone(), r.wall_ms)),
                Status::Crash => s.crashes.push((
                    r.file.clone(),
                    r.wall_ms,
                    r.detail.clone().unwrap_or_default(),
                    r.stderr_tail
                        .as_deref()
                        .map_or(String::new(), |t| last_lines(t, 3, 300)),
                )),
            }
            if !r.kernels.is_empty() {
                s.files_with_kernels += 1;
            }
            if !r.file_errors.is_empty() {
                s.files_with_error += 1;
            }
            for e in &r.file_errors {
                let class = reason_classes(e).into_keys().collect::<Vec<_>>().join("; ");
                *s.file_error_classes.entry(class).or_default() += 1;
            }
            if r.syntax_errors > 0 {
                s.files_with_syntax_errors += 1;
            }
            for k in &r.kernels {
                s.kernels += 1;
                let v = verdict(k).to_string();
                *s.verdicts.entry(v.clone()).or_default() += 1;
                let ms = k["time_ms"].as_f64().unwrap_or(0.0);
                s.kernel_ms.push(ms);
                times.push(KernelTime {
                    file: r.file.clone(),
                    kernel: text(k, "name").to_string(),
                    ms,
                    verdict: v.clone(),
                });
                let reason = text(k, "reason");
                if reason.is_empty() {
                    continue;
                }
                for (class, part) in reason_classes(reason) {
                    let entry = s.reasons.entry(class).or_default();
                    *entry.by_verdict.entry(v.clone()).or_default() += 1;
                    if entry.example.is_empty() {
                        entry.example = part;
                    }
                }
                let lower = reason.to_lowercase();
                if lower.contains("timeout") || lower.contains("timed out") {
                    *s.timeouts.entry(v.clone()).or_default() += 1;
                    if lower.contains("(timeout)") {
                        s.query_timeouts += 1;
                    }
                    if lower.contains("time budget") {
                        s.budget_timeouts += 1;
                    }
                }
                if lower.contains("resource limit") || lower.contains("rlimit") {
                    s.resource_limits += 1;
                }
            }
            for f in &r.findings {
                let c = confidence(f).to_string();
                let kind = match text(f, "kind") {
                    "" => "(none)",
                    k => k,
                };
                *s.findings
                    .entry(kind.to_string())
                    .or_default()
                    .entry(c.clone())
                    .or_default() += 1;
                if c == "definite" {
                    *s.definite_by_kernel
                        .entry((r.file.clone(), text(f, "kernel").to_string()))
                        .or_default() += 1;
                }
                s.confidences.insert(c);
            }
        }
        times.sort_by(|a, b| b.ms.total_cmp(&a.ms).then_with(|| a.file.cmp(&b.file)));
        times.truncate(10);
        s.slowest = times;
        s
    }

    /// The confidence columns: definite, possible, then any others in name order.
    fn confidence_columns(&self) -> Vec<String> {
        let mut cols: Vec<String> = CONFIDENCES.iter().map(|c| c.to_string()).collect();
        cols.extend(
            self.confidences
                .iter()
                .filter(|c| !CONFIDENCES.contains(&c.as_str()))
                .cloned(),
        );
        cols
    }

    pub fn render(&self, out: &mut String) {
        let pct = |n: usize, of: usize| {
            if of == 0 {
                "-".to_string()
            } else {
                format!("{:.1} %", 100.0 * n as f64 / of as f64)
            }
        };
        let _ = writeln!(out, "### Files and kernels\n");
        let _ = writeln!(out, "| | count | share |\n|---|---:|---:|");
        let rows = [
            ("files", self.files),
            ("checked (exit 0/1, report read)", self.files_ok),
            ("with at least one kernel", self.files_with_kernels),
            ("with a file error (not analysed)", self.files_with_error),
            ("with syntax errors", self.files_with_syntax_errors),
            ("crashed", self.crashes.len()),
            ("file timeout", self.file_timeouts.len()),
        ];
        for (name, n) in rows {
            let _ = writeln!(out, "| {name} | {n} | {} |", pct(n, self.files));
        }
        let _ = writeln!(out, "| kernels | {} | |", self.kernels);
        let _ = writeln!(
            out,
            "| findings | {} | |",
            self.findings
                .values()
                .flat_map(|m| m.values())
                .sum::<usize>()
        );

        let _ = writeln!(
            out,
            "\n### Verdicts\n\n| verdict | kernels | share |\n|---|---:|---:|"
        );
        let mut verdicts: Vec<&str> = VERDICTS.to_vec();
        verdicts.extend(
            self.verdicts
                .keys()
                .map(String::as_str)
                .filter(|v| !VERDICTS.contains(v)),
        );
        for v in verdicts {
            let n = self.verdicts.get(v).copied().unwrap_or(0);
            let _ = writeln!(out, "| {v} | {n} | {} |", pct(n, self.kernels));
        }

        let cols = self.confidence_columns();
        let _ = writeln!(
            out,
            "\n### Findings by kind and confidence\n\n| kind | {} | total |\n|---|{}---:|",
            cols.join(" | "),
            "---:|".repeat(cols.len())
        );
        let mut totals = vec![0usize; cols.len()];
        for (kind, by) in &self.findings {
            let mut row = format!("| {kind} |");
            for (i, c) in cols.iter().enumerate() {
                let n = by.get(c).copied().unwrap_or(0);
                totals[i] += n;
                let _ = write!(row, " {n} |");
            }
            let _ = writeln!(out, "{row} {} |", by.values().sum::<usize>());
        }
        let _ = writeln!(
            out,
            "| all | {} | {} |",
            totals
                .iter()
                .map(usize::to_string)
                .collect::<Vec<_>>()
                .join(" | "),
            totals.iter().sum::<usize>()
        );
        if !self.definite_by_kernel.is_empty() {
            let mut most: Vec<(&(String, String), &usize)> =
                self.definite_by_kernel.iter().collect();
            most.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
            let files: BTreeSet<&String> = self.definite_by_kernel.keys().map(|k| &k.0).collect();
            let top: Vec<String> = most
                .iter()
                .take(5)
                .map(|((file, kernel), n)| format!("{n} in `{kernel}` ({})", cell(file)))
                .collect();
            let _ = writeln!(
                out,
                "
Definite findings come from {} kernels in {} files; most: {}.",
                self.definite_by_kernel.len(),
                files.len(),
                top.join(", ")
            );
        }

        let mut classes: Vec<(&String, &ReasonClass)> = self
            .reasons
            .iter()
            .filter(|(_, c)| c.undecided() > 0)
            .collect();
        classes.sort_by(|a, b| b.1.undecided().cmp(&a.1.undecided()).then(a.0.cmp(b.0)));
        let undecided = self.verdicts.get("unknown").copied().unwrap_or(0)
            + self.verdicts.get("unsupported").copied().unwrap_or(0);
        let _ = writeln!(
            out,
            "\n### Why kernels are unknown or unsupported\n\n{undecided} kernels are unknown or \
             unsupported; their reasons fall into {} classes (a reason is split at `; ` and \
             names, quoted text and numbers are replaced by `…` and N; a kernel counts once in \
             each class its reason has). Top 25 by kernels; \"other verdicts\" counts racy or \
             divergent kernels whose partial reason has the class.\n",
            classes.len()
        );
        let _ = writeln!(
            out,
            "| # | class | unknown | unsupported | other verdicts | example |\n|---:|---|---:|---:|---:|---|"
        );
        for (i, (class, c)) in classes.iter().take(25).enumerate() {
            let get = |v: &str| c.by_verdict.get(v).copied().unwrap_or(0);
            let other: usize = c.by_verdict.values().sum::<usize>() - c.undecided();
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} |",
                i + 1,
                cell(&shorten(class, 160)),
                get("unknown"),
                get("unsupported"),
                other,
                cell(&shorten(&c.example, 120))
            );
        }

        let mut by_verdict: Vec<String> = self
            .timeouts
            .iter()
            .map(|(v, n)| format!("{n} {v}"))
            .collect();
        if by_verdict.is_empty() {
            by_verdict.push("-".into());
        }
        let _ = writeln!(
            out,
            "\n### Solver timeouts\n\n| | kernels |\n|---|---:|\n\
             | reason mentions a timeout | {} ({}) |\n\
             | … a query timeout (`(timeout)`) | {} |\n\
             | … the kernel's time budget ran out | {} |\n\
             | reason mentions a resource limit | {} |",
            self.timeouts.values().sum::<usize>(),
            by_verdict.join(", "),
            self.query_timeouts,
            self.budget_timeouts,
            self.resource_limits
        );

        if !self.file_error_classes.is_empty() {
            let mut errors: Vec<(&String, &usize)> = self.file_error_classes.iter().collect();
            errors.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
            let _ = writeln!(
                out,
                "\n### File errors (top 10 classes)\n\n| class | files |\n|---|---:|"
            );
            for (class, n) in errors.iter().take(10) {
                let _ = writeln!(out, "| {} | {n} |", cell(&shorten(class, 160)));
            }
        }

        let _ = writeln!(out, "\n### Crashes ({})\n", self.crashes.len());
        if self.crashes.is_empty() {
            let _ = writeln!(out, "none");
        } else {
            let _ = writeln!(
                out,
                "| file | wall ms | what | stderr (last lines) |\n|---|---:|---|---|"
            );
            for (file, ms, detail, err) in &self.crashes {
                let _ = writeln!(
                    out,
                    "| {} | {} | {} | {} |",
                    cell(file),
                    crate::fmt_ms(*ms),
                    cell(detail),
                    cell(err)
                );
            }
        }
        let _ = writeln!(out, "\n### File timeouts ({})\n", self.file_timeouts.len());
        if self.file_timeouts.is_empty() {
            let _ = writeln!(out, "none");
        } else {
            let _ = writeln!(out, "| file | wall s |\n|---|---:|");
            for (file, ms) in &self.file_timeouts {
                let _ = writeln!(out, "| {} | {:.1} |", cell(file), ms / 1000.0);
            }
        }

        let k = &self.kernel_ms;
        let f = &self.file_ms;
        let _ = writeln!(
            out,
            "\n### Times\n\nKernel = the report's `time_ms` (plan + solve + finish); file = wall \
             clock of the whole `cudarace check` process (start, parse, all kernels; a timed-out \
             file counts with its time until the kill). Sum of file times: {:.1} min.\n",
            self.total_wall_ms / 60_000.0
        );
        let _ = writeln!(
            out,
            "| | count | median ms | p95 ms | p99 ms | max ms | > 10 s | > 60 s |\n|---|---:|---:|---:|---:|---:|---:|---:|"
        );
        let over = |s: &Samples, limit: f64| s.values().iter().filter(|&&v| v > limit).count();
        let _ = writeln!(
            out,
            "| per kernel | {} | {} | {} | {} | {} | {} | {} |",
            k.len(),
            crate::fmt_ms(k.median()),
            crate::fmt_ms(k.percentile(95.0)),
            crate::fmt_ms(k.percentile(99.0)),
            crate::fmt_ms(k.max()),
            over(k, 10_000.0),
            over(k, 60_000.0)
        );
        let _ = writeln!(
            out,
            "| per file | {} | {} | {} | {} | {} | {} | {} |",
            f.len(),
            crate::fmt_ms(f.median()),
            crate::fmt_ms(f.percentile(95.0)),
            crate::fmt_ms(f.percentile(99.0)),
            crate::fmt_ms(f.max()),
            self.files_over_10s,
            self.files_over_60s
        );
        let _ = writeln!(
            out,
            "\nSlowest 10 kernels:\n\n| file | kernel | ms | verdict |\n|---|---|---:|---|"
        );
        for t in &self.slowest {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} |",
                cell(&t.file),
                cell(&t.kernel),
                crate::fmt_ms(t.ms),
                t.verdict
            );
        }
        out.push('\n');
    }
}

/// Text fit for a markdown table cell.
fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace(['\n', '\r'], " ")
}

fn shorten(s: &str, chars: usize) -> String {
    if s.chars().count() <= chars {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(chars).collect();
        t.push('…');
        t
    }
}

// ---------------------------------------------------------------------------------------------
// Comparison

/// A kernel across runs: the checked file, the file it is defined in (a header, perhaps), its
/// name and line, and which of several such it is.
type KernelKey = (String, String, String, u64, usize);
/// A finding across runs: checked file, finding file, kernel, line, kind, array.
type FindingKey = (String, String, String, u64, String, String);

fn kernel_map(records: &[FileRecord]) -> BTreeMap<KernelKey, String> {
    let mut map = BTreeMap::new();
    for r in records {
        for k in &r.kernels {
            let base = (
                r.file.clone(),
                text(k, "file").to_string(),
                text(k, "name").to_string(),
                k["line"].as_u64().unwrap_or(0),
            );
            let mut n = 0;
            while map.contains_key(&(base.0.clone(), base.1.clone(), base.2.clone(), base.3, n)) {
                n += 1;
            }
            map.insert((base.0, base.1, base.2, base.3, n), verdict(k).to_string());
        }
    }
    map
}

fn definite_findings(records: &[FileRecord]) -> BTreeMap<FindingKey, Vec<&Value>> {
    let mut map: BTreeMap<FindingKey, Vec<&Value>> = BTreeMap::new();
    for r in records {
        for f in r.findings.iter().filter(|f| confidence(f) == "definite") {
            let key = (
                r.file.clone(),
                text(f, "file").to_string(),
                text(f, "kernel").to_string(),
                f["line"].as_u64().unwrap_or(0),
                text(f, "kind").to_string(),
                text(f, "array").to_string(),
            );
            map.entry(key).or_default().push(f);
        }
    }
    map
}

/// What moved between an old and a new run.
#[derive(Debug, Default)]
pub struct Comparison {
    /// (old status, new status) → files.
    pub files: BTreeMap<(String, String), usize>,
    /// (old verdict, new verdict) → kernels; `(absent)` for a kernel only one run has.
    pub verdicts: BTreeMap<(String, String), usize>,
    pub changed_examples: Vec<(KernelKey, String, String)>,
    pub changed: usize,
    pub gained: Vec<Value>,
    pub lost: Vec<Value>,
    pub gained_count: usize,
    pub lost_count: usize,
}

const ABSENT: &str = "(absent)";

pub fn compare(old: &[FileRecord], new: &[FileRecord]) -> Comparison {
    let mut c = Comparison::default();
    let old_files: BTreeMap<&str, Status> =
        old.iter().map(|r| (r.file.as_str(), r.status)).collect();
    let new_files: BTreeMap<&str, Status> =
        new.iter().map(|r| (r.file.as_str(), r.status)).collect();
    let all_files: BTreeSet<&str> = old_files.keys().chain(new_files.keys()).copied().collect();
    for f in all_files {
        let a = old_files.get(f).map_or(ABSENT, |s| s.as_str());
        let b = new_files.get(f).map_or(ABSENT, |s| s.as_str());
        *c.files.entry((a.into(), b.into())).or_default() += 1;
    }
    let (ok, nk) = (kernel_map(old), kernel_map(new));
    let keys: BTreeSet<&KernelKey> = ok.keys().chain(nk.keys()).collect();
    for key in keys {
        let a = ok.get(key).map_or(ABSENT, String::as_str);
        let b = nk.get(key).map_or(ABSENT, String::as_str);
        *c.verdicts.entry((a.into(), b.into())).or_default() += 1;
        if a != b {
            c.changed += 1;
            if c.changed_examples.len() < 20 {
                c.changed_examples
                    .push((key.clone(), a.to_string(), b.to_string()));
            }
        }
    }
    let (of, nf) = (definite_findings(old), definite_findings(new));
    let keys: BTreeSet<&FindingKey> = of.keys().chain(nf.keys()).collect();
    for key in keys {
        let a = of.get(key).map_or(&[][..], Vec::as_slice);
        let b = nf.get(key).map_or(&[][..], Vec::as_slice);
        if b.len() > a.len() {
            c.gained_count += b.len() - a.len();
            for f in &b[a.len()..] {
                if c.gained.len() < 20 {
                    c.gained.push((*f).clone());
                }
            }
        } else if a.len() > b.len() {
            c.lost_count += a.len() - b.len();
            for f in &a[b.len()..] {
                if c.lost.len() < 20 {
                    c.lost.push((*f).clone());
                }
            }
        }
    }
    c
}

fn finding_line(f: &Value) -> String {
    format!(
        "| {}:{} | {} | {} | {} |",
        cell(text(f, "file")),
        f["line"].as_u64().unwrap_or(0),
        cell(text(f, "kernel")),
        text(f, "kind"),
        cell(&shorten(text(f, "message"), 200))
    )
}

impl Comparison {
    pub fn render(&self, old: &Stats, new: &Stats, out: &mut String) {
        let statuses = ["ok", "crash", "file-timeout", ABSENT];
        let _ = writeln!(
            out,
            "### Files: status before → after\n\n| before \\ after | {} |\n|---|{}",
            statuses.join(" | "),
            "---:|".repeat(statuses.len())
        );
        for a in statuses {
            let mut row = format!("| {a} |");
            for b in statuses {
                let n = self
                    .files
                    .get(&(a.to_string(), b.to_string()))
                    .copied()
                    .unwrap_or(0);
                let _ = write!(row, " {n} |");
            }
            let _ = writeln!(out, "{row}");
        }

        let mut vs: Vec<String> = VERDICTS.iter().map(|v| v.to_string()).collect();
        for (a, b) in self.verdicts.keys() {
            for v in [a, b] {
                if !vs.contains(v) && v != ABSENT {
                    vs.push(v.clone());
                }
            }
        }
        vs.push(ABSENT.to_string());
        let _ = writeln!(
            out,
            "\n### Kernels: verdict before → after ({} changed)\n\nA kernel is its file, name \
             and line; {ABSENT} = not in that run (its file crashed, timed out or was not there).\n\n\
             | before \\ after | {} |\n|---|{}",
            self.changed,
            vs.join(" | "),
            "---:|".repeat(vs.len())
        );
        for a in &vs {
            let mut row = format!("| {a} |");
            for b in &vs {
                let n = self
                    .verdicts
                    .get(&(a.clone(), b.clone()))
                    .copied()
                    .unwrap_or(0);
                let _ = write!(
                    row,
                    " {} |",
                    if n == 0 { "·".into() } else { n.to_string() }
                );
            }
            let _ = writeln!(out, "{row}");
        }
        if !self.changed_examples.is_empty() {
            let _ = writeln!(
                out,
                "\nFirst {} changed kernels:\n\n| file | kernel | line | before | after |\n|---|---|---:|---|---|",
                self.changed_examples.len()
            );
            for ((file, _, name, line, _), a, b) in &self.changed_examples {
                let _ = writeln!(
                    out,
                    "| {} | {} | {line} | {a} | {b} |",
                    cell(file),
                    cell(name)
                );
            }
        }

        let cols = {
            let mut all = old.confidence_columns();
            for c in new.confidence_columns() {
                if !all.contains(&c) {
                    all.push(c);
                }
            }
            all
        };
        let kinds: BTreeSet<&String> = old.findings.keys().chain(new.findings.keys()).collect();
        let _ = writeln!(
            out,
            "\n### Findings by kind and confidence, before → after\n\n| kind | confidence | before | after | change |\n|---|---|---:|---:|---:|"
        );
        for kind in kinds {
            for c in &cols {
                let get = |s: &Stats| {
                    s.findings
                        .get(kind)
                        .and_then(|m| m.get(c))
                        .copied()
                        .unwrap_or(0)
                };
                let (a, b) = (get(old), get(new));
                if a + b > 0 {
                    let _ = writeln!(
                        out,
                        "| {kind} | {c} | {a} | {b} | {:+} |",
                        b as i64 - a as i64
                    );
                }
            }
        }

        let _ = writeln!(
            out,
            "\n### Definite findings gained: {}, lost: {}\n\nA finding is its checked file, \
             file, kernel, line, kind and array (the message's thread numbers may differ).\n",
            self.gained_count, self.lost_count
        );
        for (title, list) in [("Gained", &self.gained), ("Lost", &self.lost)] {
            if list.is_empty() {
                continue;
            }
            let _ = writeln!(
                out,
                "{title} (first {}):\n\n| at | kernel | kind | message |\n|---|---|---|---|",
                list.len()
            );
            for f in list {
                let _ = writeln!(out, "{}", finding_line(f));
            }
            out.push('\n');
        }

        let _ = writeln!(
            out,
            "### Times before → after\n\n| | before | after |\n|---|---:|---:|\n\
             | kernel median ms | {} | {} |\n| kernel p95 ms | {} | {} |\n\
             | kernel max ms | {} | {} |\n| file p95 ms | {} | {} |\n\
             | files > 10 s | {} | {} |\n| sum of file times, min | {:.1} | {:.1} |\n",
            crate::fmt_ms(old.kernel_ms.median()),
            crate::fmt_ms(new.kernel_ms.median()),
            crate::fmt_ms(old.kernel_ms.percentile(95.0)),
            crate::fmt_ms(new.kernel_ms.percentile(95.0)),
            crate::fmt_ms(old.kernel_ms.max()),
            crate::fmt_ms(new.kernel_ms.max()),
            crate::fmt_ms(old.file_ms.percentile(95.0)),
            crate::fmt_ms(new.file_ms.percentile(95.0)),
            old.files_over_10s,
            new.files_over_10s,
            old.total_wall_ms / 60_000.0,
            new.total_wall_ms / 60_000.0
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Sampling

/// SplitMix64: a small deterministic generator (the same sample for the same seed everywhere).
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// `n` definite findings picked at random with `seed` (records in file order, findings in
/// report order, then a partial Fisher–Yates shuffle). With `by_kernel`, kernels (checked file
/// and name) are picked instead and one of each picked kernel's definite findings, so that a
/// kernel with hundreds of findings does not fill the sample.
pub fn sample_definite(
    records: &[FileRecord],
    n: usize,
    seed: u64,
    by_kernel: bool,
) -> Vec<&Value> {
    let mut groups: Vec<Vec<&Value>> = Vec::new();
    for r in records {
        let mut of_file: BTreeMap<&str, usize> = BTreeMap::new();
        for f in r.findings.iter().filter(|f| confidence(f) == "definite") {
            if !by_kernel {
                groups.push(vec![f]);
                continue;
            }
            let at = *of_file.entry(text(f, "kernel")).or_insert_with(|| {
                groups.push(Vec::new());
                groups.len() - 1
            });
            groups[at].push(f);
        }
    }
    let mut rng = SplitMix64(seed);
    let take = n.min(groups.len());
    for i in 0..take {
        let j = i + rng.below(groups.len() - i);
        groups.swap(i, j);
    }
    groups
        .iter()
        .take(take)
        .map(|g| g[if g.len() > 1 { rng.below(g.len()) } else { 0 }])
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Running

/// Every `.cu`/`.cuh` file below `dir`, relative to it, sorted (symbolic links to folders are
/// not followed).
pub fn find_files(dir: &Path) -> std::io::Result<Vec<String>> {
    fn walk(dir: &Path, rel: &str, out: &mut Vec<String>) -> std::io::Result<()> {
        for entry in std::fs::read_dir(dir)? {
            let entry = entry?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let rel = if rel.is_empty() {
                name.clone()
            } else {
                format!("{rel}/{name}")
            };
            let kind = entry.file_type()?;
            if kind.is_dir() {
                walk(&entry.path(), &rel, out)?;
            } else if (name.ends_with(".cu") || name.ends_with(".cuh")) && entry.path().is_file() {
                out.push(rel);
            }
        }
        Ok(())
    }
    let mut out = Vec::new();
    walk(dir, "", &mut out)?;
    out.sort();
    Ok(out)
}

fn outcome_of(status: ExitStatus) -> Outcome {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(c), _) => Outcome::Exited(c),
        (None, Some(s)) => Outcome::Signal(s),
        (None, None) => Outcome::Failed(format!("ended with {status}")),
    }
}

/// Kills a child started in its own process group, with everything it started.
fn kill_group(child: &mut std::process::Child) {
    let _ = Command::new("kill")
        .args(["-KILL", "--", &format!("-{}", child.id())])
        .stderr(Stdio::null())
        .status();
    let _ = child.kill();
    let _ = child.wait();
}

/// Runs `bin check --format json FILE` in `dir` (in its own process group), killed after
/// `timeout`.
fn run_file(bin: &Path, dir: &Path, file: &str, timeout: Duration) -> FileRecord {
    use std::os::unix::process::CommandExt;
    let started = Instant::now();
    let child = Command::new(bin)
        .process_group(0)
        .args(["check", "--format", "json"])
        .arg(file)
        .current_dir(dir)
        // glibc writes its fatal errors (heap corruption found by malloc, then SIGABRT) to the
        // terminal, not to stderr, unless this is set: the crash list would show no message.
        .env("LIBC_FATAL_STDERR_", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) => {
            let outcome = Outcome::Failed(format!("could not start {}: {e}", bin.display()));
            return record_from_output(file, 0.0, &outcome, "", "");
        }
    };
    // Read on threads (a full pipe would stall the child); a reader that a left-over
    // grandchild keeps waiting is given up on after a while.
    let reader = |pipe: Option<Box<dyn Read + Send>>| {
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            if let Some(mut p) = pipe {
                let _ = p.read_to_end(&mut buf);
            }
            let _ = tx.send(String::from_utf8_lossy(&buf).into_owned());
        });
        rx
    };
    let stdout = reader(child.stdout.take().map(|p| Box::new(p) as _));
    let stderr = reader(child.stderr.take().map(|p| Box::new(p) as _));
    let outcome = loop {
        match child.try_wait() {
            Ok(Some(status)) => break outcome_of(status),
            Ok(None) if started.elapsed() >= timeout => {
                kill_group(&mut child);
                break Outcome::TimedOut;
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(5)),
            Err(e) => {
                kill_group(&mut child);
                break Outcome::Failed(format!("wait: {e}"));
            }
        }
    };
    let wall_ms = started.elapsed().as_secs_f64() * 1000.0;
    let grace = Duration::from_secs(5);
    let out = stdout.recv_timeout(grace).unwrap_or_default();
    let err = stderr.recv_timeout(grace).unwrap_or_default();
    record_from_output(file, wall_ms, &outcome, &out, &err)
}

fn write_jsonl(path: &Path, records: &[FileRecord]) -> std::io::Result<()> {
    let mut w = std::io::BufWriter::new(std::fs::File::create(path)?);
    for r in records {
        writeln!(w, "{}", r.to_json())?;
    }
    w.flush()
}

pub fn read_jsonl(path: &Path) -> Result<Vec<FileRecord>, String> {
    let file = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut records = Vec::new();
    for (i, line) in std::io::BufReader::new(file).lines().enumerate() {
        let line = line.map_err(|e| format!("{}: {e}", path.display()))?;
        if line.trim().is_empty() {
            continue;
        }
        let v: Value = serde_json::from_str(&line)
            .map_err(|e| format!("{}:{}: {e}", path.display(), i + 1))?;
        if let Some(r) = FileRecord::from_json(&v) {
            records.push(r);
        }
    }
    records.sort_by(|a, b| a.file.cmp(&b.file));
    Ok(records)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasons_lose_names_and_numbers() {
        let a = "call to `foo` whose body is not available";
        let b = "call to `bar_2` whose body is not available";
        assert_eq!(normalise_reason_part(a), normalise_reason_part(b));
        assert_eq!(
            normalise_reason_part(a),
            "call to `…` whose body is not available"
        );
        assert_eq!(
            normalise_reason_part("loop with   64 iterations at 0x1f, 2.5f steps."),
            "loop with N iterations at N, N steps."
        );
        // Digits inside a word and an apostrophe are left alone.
        assert_eq!(
            normalise_reason_part("the kernel's float4 budget (\"x\")"),
            "the kernel's float4 budget (\"…\")"
        );
        let compound = "`data0` may be accessed by unmodelled code (call to `smem_tuple` whose \
                        body is not available); `data1` may be accessed by unmodelled code (call \
                        to `g` whose body is not available); unmodelled code may synchronize; it \
                        was treated as no barrier";
        let classes = reason_classes(compound);
        assert_eq!(
            classes.keys().collect::<Vec<_>>(),
            vec![
                "`…` may be accessed by unmodelled code (call to `…` whose body is not available)",
                "unmodelled code may synchronize; it was treated as no barrier",
            ]
        );
        // The example of a class is the part of the reason that has it.
        assert!(classes.values().next().unwrap().starts_with("`data0`"));
    }

    fn report_a() -> &'static str {
        r#"{"version": 1,
            "kernels": [
              {"file": "a.cu", "name": "k1", "line": 3, "verdict": "racy", "time_ms": 12.5, "queries": 4,
               "reason": "the solver could not decide a pair of accesses to `s` (timeout)"},
              {"file": "a.cu", "name": "k2", "line": 9, "verdict": "unknown", "time_ms": 60000.0,
               "reason": "timeout: the kernel's time budget (60000 ms) ran out"},
              {"file": "a.cu", "name": "k3", "line": 20, "verdict": "unsupported", "time_ms": 0.5,
               "reason": "call to `foo` whose body is not available"}],
            "findings": [
              {"kind": "data-race", "array": "s", "confidence": "definite", "file": "a.cu",
               "kernel": "k1", "line": 5, "message": "data race on `s`", "witness": {"x": 1},
               "related": []},
              {"kind": "data-race", "array": "t", "confidence": "conditional", "file": "a.cu",
               "kernel": "k1", "line": 6, "message": "data race on `t`",
               "precondition": "n > 32"}],
            "files": [{"file": "a.cu", "syntax_errors": [{"line": 1}], "notices": []}]}"#
    }

    fn report_b() -> &'static str {
        r#"{"version": 1,
            "kernels": [
              {"file": "b.cu", "name": "k", "line": 1, "verdict": "race-free", "time_ms": 2.0},
              {"file": "b.cu", "name": "m", "line": 8, "verdict": "unknown", "time_ms": 1.0,
               "reason": "call to `bar` whose body is not available; `p` may be accessed by unmodelled code (unsupported statement)"}],
            "findings": [
              {"kind": "barrier-divergence", "confidence": "possible", "file": "b.cu",
               "kernel": "m", "line": 10, "message": "barrier divergence"}],
            "files": [{"file": "b.cu", "syntax_errors": [], "notices": []}]}"#
    }

    fn records() -> Vec<FileRecord> {
        vec![
            record_from_output("a.cu", 61000.0, &Outcome::Exited(1), report_a(), ""),
            record_from_output("b.cu", 20.0, &Outcome::Exited(0), report_b(), "warn\n"),
            record_from_output(
                "c.cu",
                5.0,
                &Outcome::Signal(6),
                "",
                "thread 'main' panicked\nabort\n",
            ),
            record_from_output("d.cu", 60000.0, &Outcome::TimedOut, "", ""),
            record_from_output("e.cu", 3.0, &Outcome::Exited(0), "{\"kernels\": [", ""),
            record_from_output("f.cu", 3.0, &Outcome::Exited(101), "{}", "panic"),
        ]
    }

    #[test]
    fn records_classify_processes() {
        let r = records();
        assert_eq!(r[0].status, Status::Ok);
        assert_eq!(r[0].syntax_errors, 1);
        assert!(r[0].findings[0].get("witness").is_none());
        assert_eq!(r[0].findings[1]["precondition"], "n > 32");
        assert_eq!(r[2].status, Status::Crash);
        assert_eq!(r[2].detail.as_deref(), Some("killed by signal 6 (SIGABRT)"));
        assert_eq!(r[3].status, Status::FileTimeout);
        assert!(r[4]
            .detail
            .as_deref()
            .unwrap()
            .starts_with("unparsable JSON"));
        assert_eq!(r[5].detail.as_deref(), Some("exit status 101"));
        // A record survives its JSONL line.
        let back = FileRecord::from_json(&r[0].to_json()).unwrap();
        assert_eq!(back.to_json(), r[0].to_json());
    }

    #[test]
    fn stats_aggregate_reports() {
        let s = Stats::of(&records());
        assert_eq!((s.files, s.files_ok, s.kernels), (6, 2, 5));
        assert_eq!(s.crashes.len(), 3);
        assert_eq!(s.file_timeouts.len(), 1);
        assert_eq!(s.verdicts["unknown"], 2);
        assert_eq!(s.verdicts["unsupported"], 1);
        assert_eq!(s.findings["data-race"]["definite"], 1);
        assert_eq!(s.findings["data-race"]["conditional"], 1);
        assert_eq!(s.findings["barrier-divergence"]["possible"], 1);
        assert_eq!(
            s.confidence_columns(),
            vec!["definite", "possible", "conditional"]
        );
        let body = &s.reasons["call to `…` whose body is not available"];
        assert_eq!(body.undecided(), 2);
        assert_eq!(body.by_verdict["unsupported"], 1);
        assert_eq!(body.example, "call to `foo` whose body is not available");
        assert_eq!(
            s.reasons["`…` may be accessed by unmodelled code (unsupported statement)"].example,
            "`p` may be accessed by unmodelled code (unsupported statement)"
        );
        assert_eq!(s.timeouts.values().sum::<usize>(), 2);
        assert_eq!((s.query_timeouts, s.budget_timeouts), (1, 1));
        assert_eq!((s.files_over_10s, s.files_over_60s), (2, 1));
        assert_eq!(s.slowest[0].kernel, "k2");
        assert_eq!(s.kernel_ms.max(), 60000.0);
        let mut out = String::new();
        s.render(&mut out);
        assert!(out.contains("| racy | 1 | 20.0 % |"), "{out}");
        assert!(out.contains("| data-race | 1 | 0 | 1 | 2 |"), "{out}");
    }

    #[test]
    fn comparison_and_sample() {
        let old = records();
        let mut new = records();
        // k1 turns race-free and loses its definite finding; d.cu now finishes.
        new[0].kernels[0]["verdict"] = json!("race-free");
        new[0].findings.remove(0);
        new[3] = record_from_output("d.cu", 10.0, &Outcome::Exited(1), report_b(), "");
        let c = compare(&old, &new);
        assert_eq!(c.verdicts[&("racy".into(), "race-free".into())], 1);
        assert_eq!(c.verdicts[&(ABSENT.into(), "unknown".into())], 1);
        assert_eq!(c.files[&("file-timeout".into(), "ok".into())], 1);
        assert_eq!((c.gained_count, c.lost_count), (0, 1));
        assert_eq!(c.lost[0]["line"], 5);
        let mut out = String::new();
        c.render(&Stats::of(&old), &Stats::of(&new), &mut out);
        assert!(out.contains("gained: 0, lost: 1"), "{out}");

        let many: Vec<FileRecord> = (0..10)
            .map(|i| {
                let mut r = records().remove(0);
                r.file = format!("{i}.cu");
                r
            })
            .collect();
        let a = sample_definite(&many, 4, 1, false);
        let b = sample_definite(&many, 4, 1, false);
        assert_eq!(a, b);
        assert_eq!(a.len(), 4);
        assert_eq!(sample_definite(&many, 40, 1, false).len(), 10);
        // Two definite findings in one kernel: one of them per kernel.
        let mut two = many.clone();
        for r in &mut two {
            let mut f = r.findings[0].clone();
            f["line"] = json!(7);
            r.findings.push(f);
        }
        assert_eq!(sample_definite(&two, 40, 1, false).len(), 20);
        let per_kernel = sample_definite(&two, 40, 3, true);
        assert_eq!(per_kernel.len(), 10);
        assert_eq!(per_kernel, sample_definite(&two, 40, 3, true));
        assert_eq!(Stats::of(&two).definite_by_kernel.len(), 10);
    }
}
