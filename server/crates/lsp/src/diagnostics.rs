//! Kernel reports → LSP diagnostics.
//!
//! One diagnostic per finding on the racy access (thread A's) or the divergent barrier, with the
//! other access / the condition as related information; for races also one on the other access
//! pointing back. `unknown`/`unsupported` kernels get a Hint on the kernel name with the reason.

use crate::document::{Document, LineIndex16};
use crate::pipeline::{Config, Level, Notice, Suppression};
use crate::settings::Settings;
use cudarace_analysis::suppress::UNUSED_SUPPRESSION;
use cudarace_ir::{Confidence, Finding, FindingKind, KernelReport, SourceFile, Span, Verdict};
use serde_json::json;
use tower_lsp_server::ls_types::{
    Diagnostic, DiagnosticRelatedInformation, DiagnosticSeverity, DiagnosticTag, Location,
    NumberOrString, Range, Uri,
};

pub const SOURCE: &str = "cudarace";

/// Resolves spans of a report to LSP locations: file 0 is the open document (its current text),
/// other files are the includes the front end read.
pub struct SpanResolver<'a> {
    pub uri: &'a Uri,
    pub doc: &'a Document,
    pub files: &'a [SourceFile],
}

impl SpanResolver<'_> {
    pub fn location(&self, span: Span) -> Option<Location> {
        if span.file.0 == 0 {
            return Some(Location {
                uri: self.uri.clone(),
                range: self.doc.range(span),
            });
        }
        let file = self.files.get(span.file.0 as usize)?;
        let uri = Uri::from_file_path(file.path.as_ref()?)?;
        let index = LineIndex16::new(&file.text);
        Some(Location {
            uri,
            range: index.range(&file.text, span.start as usize, span.end as usize),
        })
    }

    /// The range in the open document where a span's diagnostic goes: the span itself, or the
    /// kernel name when the span is in an included file.
    fn range_in_doc(&self, span: Span, fallback: Span) -> Range {
        if span.file.0 == 0 {
            self.doc.range(span)
        } else {
            self.doc.range(fallback)
        }
    }
}

/// The editor's severity of a configured level (`off`: no diagnostic).
pub fn lsp_severity(level: Level) -> Option<DiagnosticSeverity> {
    match level {
        Level::Error => Some(DiagnosticSeverity::ERROR),
        Level::Warning => Some(DiagnosticSeverity::WARNING),
        Level::Info => Some(DiagnosticSeverity::INFORMATION),
        Level::Off => None,
    }
}

/// A finding's severity: cudarace.toml's `[severity]` where it sets one, else the editor's
/// defaults (definite: Warning; possible: the `possibleSeverity` setting; conditional: Hint).
/// `None`: not shown.
pub fn severity(
    finding: &Finding,
    settings: &Settings,
    config: &Config,
) -> Option<DiagnosticSeverity> {
    match config.severity.configured(finding.kind, finding.confidence) {
        Some(level) => lsp_severity(level),
        None => Some(match finding.confidence {
            Confidence::Definite => DiagnosticSeverity::WARNING,
            Confidence::Possible => settings.possible_severity.lsp(),
            // Races that need implausible values: a hint (dotted underline), with the
            // condition in the message.
            Confidence::Conditional => DiagnosticSeverity::HINT,
        }),
    }
}

/// Unused and malformed suppression comments: Warning unless cudarace.toml says otherwise;
/// unused ones are marked unnecessary (editors fade them).
pub fn notice_diagnostics(notices: &[Notice], doc: &Document, config: &Config) -> Vec<Diagnostic> {
    let Some(severity) = lsp_severity(config.severity.unused_suppression_level()) else {
        return vec![];
    };
    notices
        .iter()
        .filter(|n| n.span.file.0 == 0)
        .map(|n| Diagnostic {
            range: doc.range(n.span),
            severity: Some(severity),
            code: Some(NumberOrString::String(n.code.to_string())),
            source: Some(SOURCE.to_string()),
            message: n.message.clone(),
            tags: (n.code == UNUSED_SUPPRESSION).then(|| vec![DiagnosticTag::UNNECESSARY]),
            ..Default::default()
        })
        .collect()
}

/// The diagnostic of a document too large to analyse, at its start. The command line refuses
/// such files too (`cudarace_analysis::read_source`).
pub fn too_large_diagnostic(size: u64, limit: u64) -> Diagnostic {
    Diagnostic {
        range: Range::default(),
        severity: Some(DiagnosticSeverity::WARNING),
        code: Some(NumberOrString::String("file-too-large".into())),
        source: Some(SOURCE.to_string()),
        message: format!(
            "file too large to analyse ({size} bytes, limit {}); cudarace checks it again when it is smaller",
            human_size(limit)
        ),
        ..Default::default()
    }
}

/// `4 MiB`, `64 KiB` or `1000 bytes`, as the command line writes sizes.
fn human_size(bytes: u64) -> String {
    const KIB: u64 = 1024;
    const MIB: u64 = 1024 * 1024;
    if bytes > 0 && bytes.is_multiple_of(MIB) {
        format!("{} MiB", bytes / MIB)
    } else if bytes > 0 && bytes.is_multiple_of(KIB) {
        format!("{} KiB", bytes / KIB)
    } else {
        format!("{bytes} bytes")
    }
}

fn finding_message(finding: &Finding) -> String {
    let mut message = finding.message.clone();
    if finding.confidence == Confidence::Possible && !finding.confidence_reason.is_empty() {
        message.push_str(&format!(" (possible: {})", finding.confidence_reason));
    }
    message
}

/// The diagnostics of one kernel. `suppressed` is parallel to `report.findings` (see
/// [`crate::pipeline::assess`]); suppressed findings get no diagnostic.
pub fn kernel_diagnostics(
    report: &KernelReport,
    suppressed: &[Option<Suppression>],
    resolver: &SpanResolver<'_>,
    settings: &Settings,
    config: &Config,
) -> Vec<Diagnostic> {
    let mut out: Vec<Diagnostic> = Vec::new();
    for (i, finding) in report.findings.iter().enumerate() {
        if suppressed.get(i).is_some_and(Option::is_some) {
            continue;
        }
        let Some(severity) = severity(finding, settings, config) else {
            continue;
        };
        let code = Some(NumberOrString::String(finding.kind.code().to_string()));
        let data = Some(json!({ "kernel": report.name, "finding": i }));
        let related: Vec<DiagnosticRelatedInformation> = finding
            .related
            .iter()
            .filter_map(|r| {
                Some(DiagnosticRelatedInformation {
                    location: resolver.location(r.span)?,
                    message: r.message.clone(),
                })
            })
            .collect();
        let message = match finding.span.file.0 {
            0 => finding_message(finding),
            _ => format!("{} (in an included file)", finding_message(finding)),
        };
        out.push(Diagnostic {
            range: resolver.range_in_doc(finding.span, report.name_span),
            severity: Some(severity),
            code: code.clone(),
            source: Some(SOURCE.to_string()),
            message,
            related_information: (!related.is_empty()).then(|| related.clone()),
            data: data.clone(),
            ..Default::default()
        });
        // The other access of a race gets its own squiggle, pointing back at the first one.
        if finding.kind == FindingKind::DataRace {
            if let Some(other) = finding.related.first() {
                if other.span.file.0 == 0 && other.span != finding.span {
                    let back = resolver.location(finding.span).map(|location| {
                        DiagnosticRelatedInformation {
                            location,
                            message: "the other access of this race".to_string(),
                        }
                    });
                    out.push(Diagnostic {
                        range: resolver.doc.range(other.span),
                        severity: Some(severity),
                        code,
                        source: Some(SOURCE.to_string()),
                        message: format!(
                            "{} (other access of this race)",
                            finding_message(finding)
                        ),
                        related_information: back.map(|b| vec![b]),
                        data,
                        ..Default::default()
                    });
                }
            }
        }
    }
    let unverified = match config.severity.unverified {
        Some(level) => lsp_severity(level),
        None => Some(DiagnosticSeverity::HINT),
    };
    if let (Some(unverified), Verdict::Unknown | Verdict::Unsupported) =
        (unverified, report.verdict)
    {
        let reason = report.reason.as_deref().unwrap_or("no reason given");
        // Where the check stopped modelling the code: one click away.
        let unmodelled: Vec<DiagnosticRelatedInformation> = report
            .unmodelled
            .iter()
            .filter_map(|u| {
                Some(DiagnosticRelatedInformation {
                    location: resolver.location(u.span)?,
                    message: format!("unmodelled: {}", u.what),
                })
            })
            .collect();
        out.push(Diagnostic {
            range: resolver.doc.range(report.name_span),
            severity: Some(unverified),
            code: Some(NumberOrString::String(report.verdict.as_str().to_string())),
            source: Some(SOURCE.to_string()),
            message: format!(
                "cudarace could not fully check kernel `{}` ({}): {}",
                report.name,
                report.verdict.as_str(),
                reason
            ),
            related_information: (!unmodelled.is_empty()).then_some(unmodelled),
            data: Some(json!({ "kernel": report.name })),
            ..Default::default()
        });
    }
    dedup(out)
}

/// Several findings can land on the same pair of lines (e.g. a race found in two barrier
/// intervals); one squiggle per place and message is enough.
fn dedup(diags: Vec<Diagnostic>) -> Vec<Diagnostic> {
    let mut out: Vec<Diagnostic> = Vec::with_capacity(diags.len());
    for d in diags {
        if !out
            .iter()
            .any(|o| o.range == d.range && o.code == d.code && o.message == d.message)
        {
            out.push(d);
        }
    }
    out
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use cudarace_ir::{FileId, Related, ThreadWitness, Witness};
    use std::collections::BTreeMap;

    pub(crate) const TEXT: &str = "// ünïcødé 😀\n__global__ void shift(int *a) {\n  int t = threadIdx.x;\n  a[t] = a[t + 1];\n}\n";

    pub(crate) fn span_of(text: &str, needle: &str) -> Span {
        let start = text.find(needle).expect("needle in text");
        Span::new(FileId(0), start, start + needle.len())
    }

    pub(crate) fn race_report(text: &str) -> KernelReport {
        let mut params = BTreeMap::new();
        params.insert("n".to_string(), 8);
        let mut loop_a = BTreeMap::new();
        loop_a.insert("i".to_string(), 1);
        KernelReport {
            name: "shift".into(),
            span: span_of(
                text,
                "__global__ void shift(int *a) {\n  int t = threadIdx.x;\n  a[t] = a[t + 1];\n}",
            ),
            name_span: span_of(text, "shift"),
            verdict: Verdict::Racy,
            reason: None,
            findings: vec![Finding {
                kind: FindingKind::DataRace,
                array: Some("a".into()),
                confidence: Confidence::Definite,
                confidence_reason: "the indices depend only on thread ids".into(),
                kernel: "shift".into(),
                span: span_of(text, "a[t]"),
                message: "data race on `a`: thread A writes a[t], thread B reads a[t + 1]".into(),
                related: vec![Related {
                    span: span_of(text, "a[t + 1]"),
                    message: "thread B reads a[t + 1] here".into(),
                }],
                witness: Witness {
                    thread_a: ThreadWitness {
                        thread_idx: [1, 0, 0],
                        block_idx: [0, 0, 0],
                        loop_vars: loop_a,
                    },
                    thread_b: ThreadWitness {
                        thread_idx: [0, 0, 0],
                        block_idx: [0, 0, 0],
                        loop_vars: BTreeMap::new(),
                    },
                    cell: vec![1],
                    params,
                    block_dim: [2, 1, 1],
                    grid_dim: [1, 1, 1],
                },
                same_value_write: false,
                barrier: None,
                condition: None,
                precondition: None,
            }],
            assumed_launch: "blockDim=(1..1024, 1, 1) gridDim=(symbolic, 1, 1)".into(),
            time_ms: 3.0,
            queries: 4,
            unmodelled: vec![],
        }
    }

    #[test]
    fn race_gives_two_squiggles_with_utf16_ranges() {
        let uri: Uri = "file:///t/shift.cu".parse().unwrap();
        let doc = Document::new("cuda-cpp".into(), 1, TEXT.into());
        let resolver = SpanResolver {
            uri: &uri,
            doc: &doc,
            files: &[],
        };
        let diags = kernel_diagnostics(
            &race_report(TEXT),
            &[],
            &resolver,
            &Settings::default(),
            &Config::default(),
        );
        assert_eq!(diags.len(), 2);
        let d = &diags[0];
        assert_eq!(d.range.start.line, 3);
        assert_eq!(d.range.start.character, 2);
        assert_eq!(d.range.end.character, 6);
        assert_eq!(d.code, Some(NumberOrString::String("data-race".into())));
        assert_eq!(d.severity, Some(DiagnosticSeverity::WARNING));
        assert_eq!(d.source.as_deref(), Some("cudarace"));
        let rel = d.related_information.as_ref().unwrap();
        assert_eq!(rel[0].location.range.start.character, 9);
        assert_eq!(rel[0].location.range.end.character, 17);
        assert_eq!(diags[1].range, rel[0].location.range);
        assert_eq!(
            diags[1].related_information.as_ref().unwrap()[0]
                .location
                .range,
            d.range
        );
    }

    #[test]
    fn possible_findings_use_the_setting_and_say_why() {
        let uri: Uri = "file:///t/shift.cu".parse().unwrap();
        let doc = Document::new("cuda-cpp".into(), 1, TEXT.into());
        let resolver = SpanResolver {
            uri: &uri,
            doc: &doc,
            files: &[],
        };
        let mut report = race_report(TEXT);
        report.findings[0].confidence = Confidence::Possible;
        report.findings[0].confidence_reason = "the index depends on data read from `perm`".into();
        let diags = kernel_diagnostics(
            &report,
            &[],
            &resolver,
            &Settings::default(),
            &Config::default(),
        );
        assert_eq!(diags[0].severity, Some(DiagnosticSeverity::INFORMATION));
        assert!(diags[0]
            .message
            .contains("possible: the index depends on data read from `perm`"));
        let hint = Settings {
            possible_severity: crate::settings::SeverityName::Hint,
            ..Settings::default()
        };
        assert_eq!(
            kernel_diagnostics(&report, &[], &resolver, &hint, &Config::default())[0].severity,
            Some(DiagnosticSeverity::HINT)
        );
    }

    #[test]
    fn unknown_kernel_is_a_hint_on_its_name() {
        let uri: Uri = "file:///t/shift.cu".parse().unwrap();
        let doc = Document::new("cuda-cpp".into(), 1, TEXT.into());
        let resolver = SpanResolver {
            uri: &uri,
            doc: &doc,
            files: &[],
        };
        let mut report = race_report(TEXT);
        report.findings.clear();
        report.verdict = Verdict::Unknown;
        report.reason = Some("solver timeout".into());
        let diags = kernel_diagnostics(
            &report,
            &[],
            &resolver,
            &Settings::default(),
            &Config::default(),
        );
        assert_eq!(diags.len(), 1);
        assert_eq!(diags[0].severity, Some(DiagnosticSeverity::HINT));
        assert_eq!(diags[0].range, doc.range(report.name_span));
        assert!(diags[0].message.contains("solver timeout"));
    }

    #[test]
    fn self_race_and_duplicates_give_one_squiggle() {
        let uri: Uri = "file:///t/shift.cu".parse().unwrap();
        let doc = Document::new("cuda-cpp".into(), 1, TEXT.into());
        let resolver = SpanResolver {
            uri: &uri,
            doc: &doc,
            files: &[],
        };
        let mut report = race_report(TEXT);
        report.findings[0].related[0].span = report.findings[0].span;
        report.findings.push(report.findings[0].clone());
        assert_eq!(
            kernel_diagnostics(
                &report,
                &[],
                &resolver,
                &Settings::default(),
                &Config::default()
            )
            .len(),
            1
        );
    }

    #[test]
    fn sizes_are_written_as_the_command_line_does() {
        assert_eq!(human_size(4 * 1024 * 1024), "4 MiB");
        assert_eq!(human_size(64 * 1024), "64 KiB");
        assert_eq!(human_size(1000), "1000 bytes");
        assert_eq!(human_size(0), "0 bytes");
    }
}
