//! What the driver produces for one file, and counts over many files.

use crate::config::{Config, Level};
use crate::suppress::{Notice, Suppression};
use cudarace_ir::{FileId, Finding, KernelReport, SourceFile, Span, SyntaxError, Verdict};
use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::Arc;

/// The analysis of one file: its kernels' reports, or why it could not be analysed.
#[derive(Debug, Clone, Default)]
pub struct FileReport {
    /// The path the file was read from (`None` for text given directly, e.g. an editor buffer).
    pub path: Option<PathBuf>,
    /// The checked file (index 0) and the files it includes: spans index into these.
    pub files: Vec<SourceFile>,
    pub kernels: Vec<KernelReport>,
    pub syntax_errors: Vec<SyntaxError>,
    /// Set when the file could not be analysed at all (unreadable, too big, binary, internal error);
    /// `kernels` is then empty.
    pub error: Option<String>,
    /// Per kernel, per finding (parallel to `kernels[k].findings`): why it is suppressed, if it
    /// is. Missing entries mean "not suppressed".
    pub suppressed: Vec<Vec<Option<Suppression>>>,
    /// Unused and malformed suppression comments.
    pub notices: Vec<Notice>,
    /// The configuration the file was checked with (severities, `fail-on`); the empty one when
    /// no `cudarace.toml` applied.
    pub config: Arc<Config>,
}

impl FileReport {
    /// Why finding `f` of kernel `k` is suppressed, if it is.
    pub fn suppression(&self, k: usize, f: usize) -> Option<&Suppression> {
        self.suppressed.get(k)?.get(f)?.as_ref()
    }

    /// The level a finding is reported at (configuration, else: definite → error, possible →
    /// warning).
    pub fn level(&self, finding: &Finding) -> Level {
        self.config.severity.level(finding.kind, finding.confidence)
    }

    /// The level of an `unknown` / `unsupported` kernel verdict.
    pub fn unverified_level(&self) -> Level {
        self.config.severity.unverified_level()
    }

    /// The level of unused and malformed suppression comments.
    pub fn notice_level(&self) -> Level {
        self.config.severity.unused_suppression_level()
    }

    /// The lowest level that fails a check of this file: `cli` if given, else the
    /// configuration's `fail-on`, else warning.
    pub fn fail_on(&self, cli: Option<Level>) -> Level {
        cli.or(self.config.fail_on).unwrap_or(Level::Warning)
    }

    /// Whether this file fails the check: it could not be analysed, or something not suppressed
    /// is reported at `fail_on` or above (levels `off` never fail).
    pub fn fails(&self, fail_on: Level) -> bool {
        let counts = |level: Level| level != Level::Off && level >= fail_on;
        if self.error.is_some() {
            return true;
        }
        for (k, kernel) in self.kernels.iter().enumerate() {
            match kernel.verdict {
                Verdict::Unknown | Verdict::Unsupported if counts(self.unverified_level()) => {
                    return true
                }
                // A racy or divergent verdict without a finding to show (an inconsistency
                // upstream) is not let through.
                Verdict::Racy | Verdict::Divergent if kernel.findings.is_empty() => return true,
                _ => {}
            }
            for (f, finding) in kernel.findings.iter().enumerate() {
                if self.suppression(k, f).is_none() && counts(self.level(finding)) {
                    return true;
                }
            }
        }
        !self.notices.is_empty() && counts(self.notice_level())
    }
}

/// Drops the second and later reports of a kernel defined in a header that several checked
/// files include, when the report says the same in each (same verdict, reason and launch, and
/// findings of the same kinds and confidences at the same places; the witnesses may name other
/// threads): a project check then shows the header's race once, not once per including file.
/// Reports that differ (other flags, other launch sites) are all kept.
pub fn drop_repeated_header_kernels(reports: &mut [FileReport]) {
    let mut shown: HashSet<String> = HashSet::new();
    for report in reports.iter_mut() {
        let mut k = 0;
        while k < report.kernels.len() {
            let in_header = report.kernels[k].name_span.file != FileId(0);
            if in_header && !shown.insert(kernel_identity(report, k)) {
                report.kernels.remove(k);
                if k < report.suppressed.len() {
                    report.suppressed.remove(k);
                }
            } else {
                k += 1;
            }
        }
    }
}

/// What a kernel's report says, with file numbers replaced by paths (each including file
/// numbers its headers in its own order).
fn kernel_identity(report: &FileReport, k: usize) -> String {
    let kernel = &report.kernels[k];
    let at = |span: Span| {
        let path = report
            .files
            .get(span.file.0 as usize)
            .and_then(|f| f.path.as_ref())
            .map(|p| std::fs::canonicalize(p).unwrap_or_else(|_| p.clone()));
        format!("{path:?}:{}-{}", span.start, span.end)
    };
    let mut findings: Vec<String> = kernel
        .findings
        .iter()
        .enumerate()
        .map(|(f, finding)| {
            let mut places = at(finding.span);
            for r in &finding.related {
                places.push(' ');
                places.push_str(&at(r.span));
            }
            format!(
                "{:?} {:?} {:?} {:?} {places} {}",
                finding.kind,
                finding.confidence,
                finding.array,
                finding.condition,
                report.suppression(k, f).is_some()
            )
        })
        .collect();
    findings.sort();
    format!(
        "{}@{}|{:?}|{:?}|{}|{}",
        kernel.name,
        at(kernel.name_span),
        kernel.verdict,
        kernel.reason,
        kernel.assumed_launch,
        findings.join("|")
    )
}

/// Counts over a set of file reports (the CLI's summary line and exit code).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Summary {
    pub files: usize,
    pub file_errors: usize,
    pub kernels: usize,
    pub race_free: usize,
    pub racy: usize,
    pub divergent: usize,
    pub unknown: usize,
    pub unsupported: usize,
    /// Findings not suppressed.
    pub findings: usize,
    /// Findings suppressed by a comment or the configuration.
    pub suppressed: usize,
    /// Unused or malformed suppression comments.
    pub notices: usize,
    pub syntax_errors: usize,
}

impl Summary {
    pub fn of(reports: &[FileReport]) -> Summary {
        let mut s = Summary {
            files: reports.len(),
            ..Summary::default()
        };
        for report in reports {
            if report.error.is_some() {
                s.file_errors += 1;
            }
            s.syntax_errors += report.syntax_errors.len();
            s.notices += report.notices.len();
            for (k, kernel) in report.kernels.iter().enumerate() {
                s.kernels += 1;
                for f in 0..kernel.findings.len() {
                    match report.suppression(k, f) {
                        Some(_) => s.suppressed += 1,
                        None => s.findings += 1,
                    }
                }
                match kernel.verdict {
                    Verdict::RaceFree => s.race_free += 1,
                    Verdict::Racy => s.racy += 1,
                    Verdict::Divergent => s.divergent += 1,
                    Verdict::Unknown => s.unknown += 1,
                    Verdict::Unsupported => s.unsupported += 1,
                }
            }
        }
        s
    }

    /// True when every file was analysed and every kernel was proven race-free and convergent.
    /// A kernel with (unsuppressed) findings is never clean, whatever its verdict says.
    pub fn all_clean(&self) -> bool {
        self.file_errors == 0 && self.race_free == self.kernels && self.findings == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::testdata;
    use crate::suppress::Suppression;

    fn with_config(mut r: FileReport, toml: &str) -> FileReport {
        r.config = Arc::new(Config::parse(std::path::Path::new("cudarace.toml"), toml).unwrap());
        r
    }

    #[test]
    fn failing_follows_levels_and_suppressions() {
        // `reduce` has a definite race (error) and a possible divergence (warning).
        let racy = testdata::racy_file();
        assert!(racy.fails(Level::Error) && racy.fails(Level::Warning));
        let r = with_config(racy.clone(), "[severity]\ndata-race = \"warning\"\n");
        assert!(!r.fails(Level::Error) && r.fails(Level::Warning));
        assert_eq!(r.fail_on(None), Level::Warning);
        let r = with_config(r, "fail-on = \"error\"\n[severity]\ndata-race = \"info\"\n");
        assert_eq!(r.fail_on(None), Level::Error);
        assert_eq!(r.fail_on(Some(Level::Info)), Level::Info);
        assert!(r.fails(Level::Info));
        // Suppressing the race leaves the divergence (a warning).
        let mut r = racy.clone();
        r.suppressed = vec![vec![Some(Suppression::SameValueWrite), None]];
        assert!(!r.fails(Level::Error) && r.fails(Level::Warning));
        r.suppressed = vec![vec![Some(Suppression::SameValueWrite); 2]];
        assert!(!r.fails(Level::Info));
        let s = Summary::of(std::slice::from_ref(&r));
        assert_eq!((s.findings, s.suppressed), (0, 2));
        // Levels `off` never fail; unknown kernels follow `unverified`.
        let unknown = testdata::unknown_file();
        assert!(unknown.fails(Level::Warning) && !unknown.fails(Level::Error));
        let off = with_config(unknown, "[severity]\nunverified = \"off\"\n");
        assert!(!off.fails(Level::Info));
        // Unreadable files always fail.
        assert!(testdata::error_file().fails(Level::Error));
    }

    #[test]
    fn only_all_race_free_and_readable_is_clean() {
        let mut clean = testdata::racy_file();
        clean.kernels.remove(0);
        assert!(Summary::of(std::slice::from_ref(&clean)).all_clean());
        assert!(Summary::of(&[]).all_clean());
        assert!(!Summary::of(&[testdata::racy_file()]).all_clean());
        // Unknown kernels and unreadable files are not clean.
        assert!(!Summary::of(&[clean.clone(), testdata::unknown_file()]).all_clean());
        assert!(!Summary::of(&[clean.clone(), testdata::error_file()]).all_clean());
        // A finding on a kernel marked race-free (an inconsistency upstream) is not clean either.
        let mut odd = testdata::racy_file();
        odd.kernels[0].verdict = Verdict::RaceFree;
        assert!(!Summary::of(&[odd]).all_clean());
        let s = Summary::of(&testdata::all());
        assert_eq!(
            (s.files, s.kernels, s.racy, s.unknown, s.file_errors),
            (4, 4, 2, 1, 1)
        );
        assert_eq!((s.findings, s.syntax_errors), (4, 1));
    }

    /// `r`'s kernels as the kernels of a header `h.cuh` that the file `unit` includes.
    fn included_from(unit: &str) -> FileReport {
        let mut r = testdata::racy_file();
        let header = cudarace_ir::SourceFile {
            path: Some(PathBuf::from("h.cuh")),
            text: r.files[0].text.clone(),
        };
        let own = cudarace_ir::SourceFile {
            path: Some(PathBuf::from(unit)),
            text: Arc::from("#include \"h.cuh\"\n"),
        };
        r.files = vec![own, header];
        r.path = Some(PathBuf::from(unit));
        let to_header = |s: &mut Span| s.file = FileId(1);
        for k in &mut r.kernels {
            to_header(&mut k.span);
            to_header(&mut k.name_span);
            for f in &mut k.findings {
                to_header(&mut f.span);
                f.related.iter_mut().for_each(|x| to_header(&mut x.span));
            }
        }
        r
    }

    #[test]
    fn a_header_kernel_that_reads_the_same_in_two_files_is_reported_once() {
        let mut reports = vec![included_from("a.cu"), included_from("b.cu")];
        // Another witness for the same race: still the same report.
        reports[1].kernels[0].findings[0]
            .witness
            .thread_a
            .thread_idx = [7, 0, 0];
        reports[1].kernels[0].findings[0].message = "other threads".into();
        drop_repeated_header_kernels(&mut reports);
        assert_eq!(reports[0].kernels.len(), 2);
        assert!(reports[1].kernels.is_empty());
    }

    #[test]
    fn header_kernels_that_differ_between_files_are_all_kept() {
        let mut reports = vec![included_from("a.cu"), included_from("b.cu")];
        // b.cu's flags make `copy` unknown and put the race elsewhere.
        reports[1].kernels[1].verdict = Verdict::Unknown;
        reports[1].kernels[0].findings[0].span.start += 1;
        drop_repeated_header_kernels(&mut reports);
        assert_eq!((reports[0].kernels.len(), reports[1].kernels.len()), (2, 2));
        // A file's own kernels are never dropped, even when two files read the same.
        let mut own = vec![testdata::racy_file(), testdata::racy_file()];
        drop_repeated_header_kernels(&mut own);
        assert_eq!((own[0].kernels.len(), own[1].kernels.len()), (2, 2));
    }
}
