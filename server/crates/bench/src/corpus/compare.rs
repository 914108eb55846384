//! What moved between two recorded runs: verdicts, definite findings, reason classes and times.

use super::*;

/// A kernel across runs: the checked file, the file it is defined in (a header, perhaps), its
/// name and line, and which of several such it is.
pub(super) type KernelKey = (String, String, String, u64, usize);
/// A finding across runs: checked file, finding file, kernel, line, kind, array.
pub(super) type FindingKey = (String, String, String, u64, String, String);

pub(super) fn kernel_map(records: &[FileRecord]) -> BTreeMap<KernelKey, String> {
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

pub(super) fn definite_findings(records: &[FileRecord]) -> BTreeMap<FindingKey, Vec<&Value>> {
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

pub(super) const ABSENT: &str = "(absent)";

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

pub(super) fn finding_line(f: &Value) -> String {
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
