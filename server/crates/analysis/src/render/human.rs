//! Compiler-style text output (`--format human`), rendered with codespan-reporting: each finding
//! with the source lines of both accesses (or of the barrier and its condition), the witness as
//! readable lines, then one verdict line per kernel and a summary line.

use super::{file_name, report_name, witness_lines, Positions};
use crate::config::{ConfigError, Level, CONFIG_FILE_NAME};
use crate::report::{FileReport, Summary};
use codespan_reporting::diagnostic::{Diagnostic, Label, Severity};
use codespan_reporting::files::SimpleFiles;
use codespan_reporting::term::termcolor::{Buffer, Color, ColorSpec, WriteColor};
use codespan_reporting::term::{self, Config};
use cudarace_ir::{FindingKind, Span, Verdict};
use std::io::Write;
use std::ops::Range;
use std::sync::Arc;

/// How to render text.
#[derive(Debug, Clone, Copy, Default)]
pub struct HumanOptions {
    /// ANSI colors (the CLI sets this only when stdout is a terminal).
    pub color: bool,
}

/// At most this many syntax errors are shown per file; the rest are counted.
const MAX_SYNTAX_ERRORS_SHOWN: usize = 5;

struct FileDb {
    files: SimpleFiles<String, Arc<str>>,
    /// codespan file id per `FileReport::files` index.
    ids: Vec<usize>,
}

impl FileDb {
    fn new(report: &FileReport) -> Self {
        let mut files = SimpleFiles::new();
        let ids = (0..report.files.len())
            .map(|i| {
                let name = file_name(report, cudarace_ir::FileId(i as u32));
                files.add(name, report.files[i].text.clone())
            })
            .collect();
        FileDb { files, ids }
    }

    /// The codespan file id and a byte range clamped to the text and to character boundaries,
    /// or `None` when the span points at no known file.
    fn locate(&self, report: &FileReport, span: Span) -> Option<(usize, Range<usize>)> {
        let i = span.file.0 as usize;
        let text: &str = &report.files.get(i)?.text;
        let snap = |mut o: usize| {
            o = o.min(text.len());
            while !text.is_char_boundary(o) {
                o -= 1;
            }
            o
        };
        let start = snap(span.start as usize);
        let end = snap(span.end as usize).max(start);
        Some((*self.ids.get(i)?, start..end))
    }
}

fn label(
    db: &FileDb,
    report: &FileReport,
    primary: bool,
    span: Span,
    message: String,
) -> Option<Label<usize>> {
    let (id, range) = db.locate(report, span)?;
    let l = if primary {
        Label::primary(id, range)
    } else {
        Label::secondary(id, range)
    };
    Some(l.with_message(message))
}

fn emit(out: &mut Buffer, db: &FileDb, diagnostic: &Diagnostic<usize>) {
    let config = Config::default();
    if term::emit_to_write_style(out, &config, &db.files, diagnostic).is_err() {
        // Only reachable with spans outside the file (a bug upstream): still say something.
        let _ = writeln!(out, "{}", diagnostic.message);
    }
}

fn colored(out: &mut Buffer, color: Option<Color>, bold: bool, text: &str) {
    let mut spec = ColorSpec::new();
    spec.set_fg(color).set_bold(bold);
    let _ = out.set_color(&spec);
    let _ = write!(out, "{text}");
    let _ = out.reset();
}

fn verdict_color(v: Verdict) -> Color {
    match v {
        Verdict::RaceFree => Color::Green,
        Verdict::Racy | Verdict::Divergent => Color::Red,
        Verdict::Unknown | Verdict::Unsupported => Color::Yellow,
    }
}

/// Ends the output so far with one empty line (diagnostics already end with one).
fn blank_line(out: &mut Buffer) {
    if !out.as_slice().ends_with(b"\n\n") {
        let _ = writeln!(out);
    }
}

/// codespan's severity for a configured level (`off`: not shown).
fn severity_of(level: Level) -> Option<Severity> {
    match level {
        Level::Error => Some(Severity::Error),
        Level::Warning => Some(Severity::Warning),
        Level::Info => Some(Severity::Note),
        Level::Off => None,
    }
}

fn plural(n: usize, word: &str) -> String {
    if n == 1 {
        format!("{n} {word}")
    } else {
        format!("{n} {word}s")
    }
}

pub fn human(reports: &[FileReport], opts: &HumanOptions) -> String {
    let mut out = if opts.color {
        Buffer::ansi()
    } else {
        Buffer::no_color()
    };
    for (i, report) in reports.iter().enumerate() {
        if i > 0 {
            blank_line(&mut out);
        }
        render_file(&mut out, report);
    }
    let s = Summary::of(reports);
    let mut line = format!(
        "{} in {}: {} race-free, {} racy, {} divergent, {} unknown, {} unsupported; {}",
        plural(s.kernels, "kernel"),
        plural(s.files, "file"),
        s.race_free,
        s.racy,
        s.divergent,
        s.unknown,
        s.unsupported,
        plural(s.findings, "finding"),
    );
    if s.suppressed > 0 {
        line.push_str(&format!(" ({} suppressed)", s.suppressed));
    }
    if s.notices > 0 {
        line.push_str(&format!("; {}", plural(s.notices, "suppression notice")));
    }
    if s.file_errors > 0 {
        line.push_str(&format!("; {} not analysed", plural(s.file_errors, "file")));
    }
    if !reports.is_empty() {
        blank_line(&mut out);
    }
    let color = if s.all_clean() {
        Color::Green
    } else {
        Color::Red
    };
    colored(&mut out, Some(color), true, "summary");
    let _ = writeln!(out, ": {line}");
    String::from_utf8_lossy(out.as_slice()).into_owned()
}

fn render_file(out: &mut Buffer, report: &FileReport) {
    let db = FileDb::new(report);
    let pos = Positions::new(report);
    if let Some(error) = &report.error {
        let d = Diagnostic::error().with_message(format!("{}: {}", report_name(report), error));
        emit(out, &db, &d);
    }
    for (i, e) in report.syntax_errors.iter().enumerate() {
        if i == MAX_SYNTAX_ERRORS_SHOWN {
            let more = report.syntax_errors.len() - MAX_SYNTAX_ERRORS_SHOWN;
            let d = Diagnostic::warning()
                .with_code("syntax-error")
                .with_message(format!(
                    "{}: {} more syntax errors not shown",
                    report_name(report),
                    more
                ));
            emit(out, &db, &d);
            break;
        }
        let mut d = Diagnostic::warning()
            .with_code("syntax-error")
            .with_message(&e.message);
        if let Some(l) = label(&db, report, true, e.span, String::new()) {
            d = d.with_label(l);
        }
        d = d.with_note("the code around a syntax error is treated as unknown");
        emit(out, &db, &d);
    }
    for notice in &report.notices {
        let Some(severity) = severity_of(report.notice_level()) else {
            break;
        };
        let mut d = Diagnostic::new(severity)
            .with_code(notice.code)
            .with_message(&notice.message);
        if let Some(l) = label(&db, report, true, notice.span, String::new()) {
            d = d.with_label(l);
        }
        emit(out, &db, &d);
    }
    for (k, kernel) in report.kernels.iter().enumerate() {
        for (f, finding) in kernel.findings.iter().enumerate() {
            // Suppressed findings are counted on the verdict line, not shown.
            if report.suppression(k, f).is_some() {
                continue;
            }
            let Some(severity) = severity_of(report.level(finding)) else {
                continue;
            };
            let is_race = finding.kind == FindingKind::DataRace;
            let mut labels = Vec::new();
            let primary = if is_race {
                "thread A's access"
            } else {
                "this barrier"
            };
            labels.extend(label(&db, report, true, finding.span, primary.to_string()));
            for (i, rel) in finding.related.iter().enumerate() {
                let message = if is_race && i == 0 {
                    format!("{} (thread B)", rel.message)
                } else {
                    rel.message.clone()
                };
                labels.extend(label(&db, report, false, rel.span, message));
            }
            let confidence = finding.confidence.as_str();
            let mut notes = vec![
                format!("{confidence}: {}", finding.confidence_reason),
                format!(
                    "witness:\n{}",
                    witness_lines(&finding.witness, finding.array.as_deref(), is_race).join("\n")
                ),
            ];
            if finding.same_value_write {
                notes.push(
                    "both threads write the same constant: still a data race in the CUDA memory model"
                        .to_string(),
                );
            }
            let d = Diagnostic::new(severity)
                .with_code(finding.kind.code())
                .with_message(format!("{} (kernel `{}`)", finding.message, finding.kernel))
                .with_labels(labels)
                .with_notes(notes);
            emit(out, &db, &d);
        }
    }
    for (k, kernel) in report.kernels.iter().enumerate() {
        let r = pos.range(kernel.name_span);
        let _ = write!(
            out,
            "{}:{}:{}: kernel `{}`: ",
            file_name(report, kernel.name_span.file),
            r.line,
            r.column,
            kernel.name
        );
        colored(
            out,
            Some(verdict_color(kernel.verdict)),
            true,
            kernel.verdict.as_str(),
        );
        let mut details = Vec::new();
        if !kernel.findings.is_empty() {
            let suppressed = (0..kernel.findings.len())
                .filter(|&f| report.suppression(k, f).is_some())
                .count();
            let mut findings = plural(kernel.findings.len(), "finding");
            if suppressed > 0 {
                findings.push_str(&format!(", {suppressed} suppressed"));
            }
            details.push(findings);
        }
        if !kernel.assumed_launch.is_empty() {
            details.push(format!("assuming {}", kernel.assumed_launch));
        }
        details.push(format!(
            "{:.1} ms, {}",
            kernel.time_ms,
            plural(kernel.queries, "query").replace("querys", "queries")
        ));
        let _ = write!(out, " ({})", details.join("; "));
        if let Some(reason) = &kernel.reason {
            let _ = write!(out, ": {reason}");
        }
        let _ = writeln!(out);
        // Where the check stopped modelling the code, one line each.
        for u in &kernel.unmodelled {
            let ur = pos.range(u.span);
            let _ = writeln!(
                out,
                "  {}:{}:{}: unmodelled: {}",
                file_name(report, u.span.file),
                ur.line,
                ur.column,
                u.what
            );
        }
    }
    if report.error.is_none() && report.kernels.is_empty() {
        let _ = writeln!(out, "{}: no kernels", report_name(report));
    }
}

/// A configuration error, rendered like the findings: the file, the line with the offending
/// part underlined, and what is allowed there.
pub fn config_error(error: &ConfigError, opts: &HumanOptions) -> String {
    let mut out = if opts.color {
        Buffer::ansi()
    } else {
        Buffer::no_color()
    };
    let mut files = SimpleFiles::new();
    let id = files.add(error.path.display().to_string(), error.text.clone());
    let mut d = Diagnostic::error()
        .with_code("config")
        .with_message(format!(
            "invalid {}: {}",
            error
                .path
                .file_name()
                .map(|f| f.to_string_lossy().into_owned())
                .unwrap_or_else(|| CONFIG_FILE_NAME.to_string()),
            error.message
        ));
    match &error.span {
        Some(span) => {
            let len = error.text.len();
            let mut start = span.start.min(len);
            while !error.text.is_char_boundary(start) {
                start -= 1;
            }
            let mut end = span.end.clamp(start, len);
            while !error.text.is_char_boundary(end) {
                end -= 1;
            }
            d = d.with_label(Label::primary(id, start..end));
        }
        None => d.message = format!("{}: {}", error.path.display(), error.message),
    }
    if let Some(help) = &error.help {
        d = d.with_notes(vec![format!("help: {help}")]);
    }
    if term::emit_to_write_style(&mut out, &Config::default(), &files, &d).is_err() {
        let _ = writeln!(out, "error: {error}");
    }
    String::from_utf8_lossy(out.as_slice()).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::testdata;

    #[test]
    fn human_of_hand_made_reports() {
        insta::assert_snapshot!(human(&testdata::all(), &HumanOptions { color: false }));
    }

    #[test]
    fn colors_only_when_asked() {
        let plain = human(&testdata::all(), &HumanOptions { color: false });
        let colored = human(&testdata::all(), &HumanOptions { color: true });
        assert!(!plain.contains('\u{1b}'));
        assert!(colored.contains('\u{1b}'));
    }

    #[test]
    fn same_value_writes_are_called_out() {
        let mut r = testdata::racy_file();
        assert!(!human(&[r.clone()], &HumanOptions::default()).contains("same constant"));
        r.kernels[0].findings[0].same_value_write = true;
        let text = human(&[r], &HumanOptions::default());
        assert!(
            text.contains("both threads write the same constant"),
            "{text}"
        );
    }

    #[test]
    fn suppressed_findings_are_counted_not_shown_and_notices_are() {
        let mut r = testdata::racy_file();
        r.suppressed = vec![vec![
            Some(crate::suppress::Suppression::SameValueWrite),
            None,
        ]];
        r.notices = vec![crate::suppress::Notice {
            code: crate::suppress::UNUSED_SUPPRESSION,
            span: testdata::span_of(testdata::KERNEL_TEXT, "// é", 0),
            message: "unused suppression: `allow(data-race)` matches no finding on line 6".into(),
        }];
        let text = human(&[r], &HumanOptions::default());
        assert!(!text.contains("[data-race]"), "{text}");
        assert!(text.contains("warning[barrier-divergence]"), "{text}");
        assert!(
            text.contains("warning[unused-suppression]: unused suppression"),
            "{text}"
        );
        assert!(text.contains("racy (2 findings, 1 suppressed;"), "{text}");
        assert!(
            text.contains("; 1 finding (1 suppressed); 1 suppression notice\n"),
            "{text}"
        );
    }

    #[test]
    fn many_syntax_errors_are_capped() {
        let mut r = testdata::unknown_file();
        let e = r.syntax_errors[0].clone();
        r.syntax_errors = vec![e; MAX_SYNTAX_ERRORS_SHOWN + 3];
        let text = human(&[r], &HumanOptions::default());
        assert_eq!(
            text.matches("warning[syntax-error]: syntax error").count(),
            MAX_SYNTAX_ERRORS_SHOWN
        );
        assert!(text.contains("3 more syntax errors not shown"), "{text}");
    }

    #[test]
    fn verdict_lines_and_summary() {
        let text = human(&[testdata::racy_file()], &HumanOptions::default());
        assert!(text.contains("kernels/reduce.cu:2:17: kernel `reduce`: racy (2 findings;"));
        assert!(text.ends_with(
            "summary: 2 kernels in 1 file: 1 race-free, 1 racy, 0 divergent, 0 unknown, 0 unsupported; 2 findings\n"
        ));
        let empty = FileReport {
            path: Some("e.cu".into()),
            ..FileReport::default()
        };
        assert!(human(&[empty], &HumanOptions::default()).starts_with("e.cu: no kernels\n"));
    }

    #[test]
    fn bad_spans_do_not_panic() {
        let mut r = testdata::racy_file();
        r.kernels[0].findings[0].span = Span::new(cudarace_ir::FileId(0), 5000, 6000);
        r.kernels[0].findings[1].span = Span::new(cudarace_ir::FileId(3), 0, 1);
        // Inside the two-byte `é`.
        let e = testdata::KERNEL_TEXT.find('é').unwrap();
        r.kernels[0].findings[0].related[0].span = Span::new(cudarace_ir::FileId(0), e + 1, e + 1);
        let text = human(&[r], &HumanOptions::default());
        assert!(text.contains("data race on `s`"));
    }
}
