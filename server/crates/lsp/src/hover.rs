//! Hover: the witness of a finding as Markdown, a kernel's verdict on its name, or what the
//! check established about a barrier without a finding.

use cudarace_ir::{
    Barrier, BarrierKind, Block, Confidence, Expr, Finding, FindingKind, Kernel, KernelReport,
    Span, Stmt, ThreadWitness, Verdict,
};
use std::collections::BTreeSet;
use std::fmt::Write;

fn dims(d: [i64; 3]) -> String {
    format!("({}, {}, {})", d[0], d[1], d[2])
}

fn cell(array: Option<&str>, cell: &[i64]) -> String {
    let name = array.unwrap_or("?");
    if cell.is_empty() {
        format!("`{name}`")
    } else {
        let idx: Vec<String> = cell.iter().map(|c| format!("[{c}]")).collect();
        format!("`{name}{}`", idx.join(""))
    }
}

fn loop_value(t: &ThreadWitness, var: &str) -> String {
    t.loop_vars
        .get(var)
        .map_or_else(|| "—".to_string(), |v| v.to_string())
}

/// Markdown for a finding: what, the two threads, the values the solver chose, and the confidence.
pub fn finding_markdown(report: &KernelReport, finding: &Finding) -> String {
    let w = &finding.witness;
    let mut md = String::new();
    let what = match finding.kind {
        FindingKind::DataRace => format!(
            "**data race** on `{}`",
            finding.array.as_deref().unwrap_or("?")
        ),
        FindingKind::BarrierDivergence => "**barrier divergence**".to_string(),
    };
    let confidence = finding.confidence.as_str();
    let _ = writeln!(md, "{what} in kernel `{}` ({confidence})\n", report.name);
    let _ = writeln!(md, "{}\n", finding.message);
    let _ = writeln!(md, "| | thread A | thread B |\n|---|---|---|");
    let _ = writeln!(
        md,
        "| threadIdx | {} | {} |",
        dims(w.thread_a.thread_idx),
        dims(w.thread_b.thread_idx)
    );
    let _ = writeln!(
        md,
        "| blockIdx | {} | {} |",
        dims(w.thread_a.block_idx),
        dims(w.thread_b.block_idx)
    );
    let vars: BTreeSet<&String> = w
        .thread_a
        .loop_vars
        .keys()
        .chain(w.thread_b.loop_vars.keys())
        .collect();
    for var in vars {
        let _ = writeln!(
            md,
            "| `{var}` | {} | {} |",
            loop_value(&w.thread_a, var),
            loop_value(&w.thread_b, var)
        );
    }
    if finding.kind == FindingKind::DataRace {
        let c = cell(finding.array.as_deref(), &w.cell);
        let _ = writeln!(md, "| cell | {c} | {c} |");
    }
    md.push('\n');
    if !w.params.is_empty() {
        let params: Vec<String> = w
            .params
            .iter()
            .map(|(k, v)| format!("`{k} = {v}`"))
            .collect();
        let _ = writeln!(md, "Parameters: {}  ", params.join(", "));
    }
    let _ = writeln!(
        md,
        "Launch: blockDim = {}, gridDim = {}  ",
        dims(w.block_dim),
        dims(w.grid_dim)
    );
    if !report.assumed_launch.is_empty() {
        let _ = writeln!(md, "Assumed launch: {}  ", report.assumed_launch);
    }
    if finding.same_value_write {
        let _ = writeln!(md, "Both threads store the same constant; this is still a race in the CUDA memory model.  ");
    }
    let _ = writeln!(md, "{}", confidence_sentence(finding));
    md
}

/// "Definite: …" or "Possible: …" with the checker's reason. The checker's reasons usually
/// already say what the witness depends on ("the witness depends on no unknown value"); the
/// generic clause is added only when the reason does not say it.
fn confidence_sentence(finding: &Finding) -> String {
    let (label, generic) = match finding.confidence {
        Confidence::Definite => ("Definite", "the witness depends on no unknown value"),
        Confidence::Possible => ("Possible", "the witness depends on an unknown value"),
        Confidence::Conditional => (
            "Conditional",
            "the race needs values a caller would not pass",
        ),
    };
    let reason = finding.confidence_reason.trim().trim_end_matches('.');
    if reason.is_empty() {
        format!("{label}: {generic}.")
    } else if reason.starts_with("the witness ") || reason.starts_with(generic) {
        format!("{label}: {reason}.")
    } else {
        format!("{label}: {generic}: {reason}.")
    }
}

/// Markdown for a kernel name: verdict, reason, where the check stopped modelling the code
/// (`line_of` gives a place's 1-based line in this document, `None` for another file), assumed
/// launch, and the cost of the check.
pub fn kernel_markdown(report: &KernelReport, line_of: &dyn Fn(Span) -> Option<u32>) -> String {
    let mut md = format!(
        "kernel `{}`: **{}**\n\n",
        report.name,
        report.verdict.as_str()
    );
    if let Some(reason) = &report.reason {
        let _ = writeln!(md, "{reason}\n");
    }
    if !report.unmodelled.is_empty() {
        let _ = writeln!(md, "Unmodelled code:");
        for u in &report.unmodelled {
            match line_of(u.span) {
                Some(line) => {
                    let _ = writeln!(md, "- line {line}: {}", u.what);
                }
                None => {
                    let _ = writeln!(md, "- in an included file: {}", u.what);
                }
            }
        }
        let _ = writeln!(md);
    }
    if !report.assumed_launch.is_empty() {
        let _ = writeln!(md, "Assumed launch: {}  ", report.assumed_launch);
    }
    let _ = writeln!(
        md,
        "{} finding(s), {} solver queries, {:.1} ms",
        report.findings.len(),
        report.queries,
        report.time_ms
    );
    md
}

/// The barriers of a kernel as the front end lowered them (inlined device functions included),
/// once per source position.
pub fn kernel_barriers(kernel: &Kernel) -> Vec<Barrier> {
    fn walk(block: &Block, out: &mut Vec<Barrier>) {
        for stmt in block {
            match stmt {
                Stmt::Barrier(b) => {
                    if !out.iter().any(|seen| seen.span == b.span) {
                        out.push(b.clone());
                    }
                }
                Stmt::If {
                    then_branch,
                    else_branch,
                    ..
                } => {
                    walk(then_branch, out);
                    walk(else_branch, out);
                }
                Stmt::Loop(l) => {
                    for part in [&l.init, &l.cond_effects, &l.body, &l.step] {
                        walk(part, out);
                    }
                }
                Stmt::Assign { .. }
                | Stmt::Access(_)
                | Stmt::Return { .. }
                | Stmt::Break { .. }
                | Stmt::Continue { .. }
                | Stmt::Opaque(_)
                | Stmt::Assume { .. } => {}
            }
        }
    }
    let mut out = Vec::new();
    walk(&kernel.body, &mut out);
    out
}

/// Markdown for a barrier that has no finding: what the check of `kernel` established about it.
/// `source` is the barrier as written; `report` is the kernel's report for the current text, or
/// `None` while the kernel is being checked. A claim is made only when every question of the
/// check was answered (the divergence question of this barrier among them).
pub fn barrier_markdown(
    source: &str,
    barrier: &Barrier,
    kernel: &str,
    report: Option<&KernelReport>,
) -> String {
    let head = format!("`{source}` in kernel `{kernel}`");
    let Some(report) = report else {
        return format!("{head}: the kernel is being checked.\n");
    };
    // A divergence names the barriers after the first on the same path among its related spans.
    let diverges = report.findings.iter().any(|f| {
        f.kind == FindingKind::BarrierDivergence
            && (f.span == barrier.span || f.related.iter().any(|r| r.span == barrier.span))
    });
    // Racy and divergent verdicts also come with unanswered questions (then with a reason).
    let complete = matches!(
        report.verdict,
        Verdict::RaceFree | Verdict::Racy | Verdict::Divergent
    ) && report.reason.is_none();
    let together = match &barrier.kind {
        BarrierKind::Block => Some("every thread of the block reaches it, or none does"),
        BarrierKind::Warp { mask: None } => {
            Some("every lane of the warp that has not exited reaches it, or none does")
        }
        BarrierKind::Warp {
            mask: Some(Expr::Int(m)),
        } if *m as u32 == u32::MAX => {
            Some("every lane of the warp that has not exited reaches it, or none does")
        }
        // The checker treats a partial mask as no synchronization and asks no question about it.
        BarrierKind::Warp { .. } => None,
        BarrierKind::Grid => Some("every thread of the grid reaches it, or none does"),
    };
    let mut md = match (together, complete && !diverges) {
        (None, _) => format!(
            "{head}: its mask is not the full mask; cudarace does not check which lanes reach it.\n"
        ),
        (Some(together), true) => format!("{head}: **no divergence found** — {together}.\n"),
        (Some(_), false) => {
            let mut md = format!(
                "{head}: divergence **not ruled out** — kernel verdict `{}`",
                report.verdict.as_str()
            );
            match &report.reason {
                Some(reason) => {
                    let _ = writeln!(md, ": {}.", reason.trim_end_matches('.'));
                }
                None => md.push_str(".\n"),
            }
            md
        }
    };
    if !report.assumed_launch.is_empty() {
        let _ = writeln!(md, "\nAssumed launch: {}", report.assumed_launch);
    }
    md
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnostics::tests::{race_report, TEXT};

    #[test]
    fn witness_table() {
        let report = race_report(TEXT);
        let md = finding_markdown(&report, &report.findings[0]);
        assert!(
            md.starts_with("**data race** on `a` in kernel `shift` (definite)"),
            "{md}"
        );
        assert!(md.contains("| threadIdx | (1, 0, 0) | (0, 0, 0) |"), "{md}");
        assert!(md.contains("| `i` | 1 | — |"), "{md}");
        assert!(md.contains("| cell | `a[1]` | `a[1]` |"), "{md}");
        assert!(md.contains("`n = 8`"), "{md}");
        assert!(
            md.contains("blockDim = (2, 1, 1), gridDim = (1, 1, 1)"),
            "{md}"
        );
        assert!(md.contains("Definite: the witness depends on no unknown value: the indices depend only on thread ids."));
    }

    /// The checker's own reasons start with "the witness depends on …": said once, not twice.
    #[test]
    fn confidence_is_said_once() {
        let mut report = race_report(TEXT);
        report.findings[0].confidence_reason = "the witness depends on no unknown value".into();
        let md = finding_markdown(&report, &report.findings[0]);
        assert_eq!(md.matches("depends on no unknown value").count(), 1, "{md}");
        assert!(
            md.contains("Definite: the witness depends on no unknown value.\n"),
            "{md}"
        );
        report.findings[0].confidence = Confidence::Possible;
        report.findings[0].confidence_reason =
            "the witness depends on data read from `perm`".into();
        let md = finding_markdown(&report, &report.findings[0]);
        assert_eq!(md.matches("the witness depends").count(), 1, "{md}");
        assert!(
            md.contains("Possible: the witness depends on data read from `perm`.\n"),
            "{md}"
        );
        report.findings[0].confidence_reason = String::new();
        let md = finding_markdown(&report, &report.findings[0]);
        assert!(
            md.contains("Possible: the witness depends on an unknown value.\n"),
            "{md}"
        );
    }

    #[test]
    fn divergence_has_no_cell_row() {
        let mut report = race_report(TEXT);
        report.findings[0].kind = FindingKind::BarrierDivergence;
        report.findings[0].confidence = Confidence::Possible;
        let md = finding_markdown(&report, &report.findings[0]);
        assert!(md.contains("**barrier divergence**"));
        assert!(!md.contains("| cell |"));
        assert!(md.contains("Possible:"));
    }

    #[test]
    fn kernel_summary() {
        let md = kernel_markdown(&race_report(TEXT), &|_| None);
        assert!(md.contains("kernel `shift`: **racy**"));
        assert!(md.contains("4 solver queries"));
    }

    #[test]
    fn unknown_kernel_lists_its_unmodelled_code_by_line() {
        let mut report = race_report(TEXT);
        report.verdict = Verdict::Unknown;
        report.unmodelled = vec![cudarace_ir::Unmodelled {
            span: report.findings[0].span,
            what: "call to `touch` whose body is not available".into(),
        }];
        let md = kernel_markdown(&report, &|_| Some(3));
        assert!(
            md.contains(
                "Unmodelled code:\n- line 3: call to `touch` whose body is not available\n"
            ),
            "{md}"
        );
    }
}
