//! Aggregation and the markdown tables of one run: verdicts, findings by kind and confidence,
//! reason classes, solver timeouts, crashes and times.

use super::*;

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
    /// … of which a query timeout (`(timeout)`, also `(timeout: race-free for the values …)`),
    /// the kernel's time budget, a first-pass timeout not asked again (both accesses racy
    /// already), a resource limit.
    pub query_timeouts: usize,
    pub budget_timeouts: usize,
    pub not_asked_again: usize,
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

pub(super) fn last_lines(s: &str, lines: usize, chars: usize) -> String {
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
                    let plausibly_race_free =
                        format!("({})", cudarace_solver::TIMEOUT_PLAUSIBLY_RACE_FREE);
                    if lower.contains("(timeout)") || lower.contains(&plausibly_race_free) {
                        s.query_timeouts += 1;
                    }
                    if lower.contains("time budget") {
                        s.budget_timeouts += 1;
                    }
                    if lower.contains("not asked again") {
                        s.not_asked_again += 1;
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
    pub(super) fn confidence_columns(&self) -> Vec<String> {
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
             | … a first-pass timeout not asked again (both accesses racy already) | {} |\n\
             | reason mentions a resource limit | {} |",
            self.timeouts.values().sum::<usize>(),
            by_verdict.join(", "),
            self.query_timeouts,
            self.budget_timeouts,
            self.not_asked_again,
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
pub(super) fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace(['\n', '\r'], " ")
}

pub(super) fn shorten(s: &str, chars: usize) -> String {
    if s.chars().count() <= chars {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(chars).collect();
        t.push('…');
        t
    }
}
