//! What the driver produces for one file, and counts over many files.

use cudarace_ir::{KernelReport, SourceFile, SyntaxError, Verdict};
use std::path::PathBuf;

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
    pub findings: usize,
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
            for kernel in &report.kernels {
                s.kernels += 1;
                s.findings += kernel.findings.len();
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
    /// A kernel with findings is never clean, whatever its verdict says.
    pub fn all_clean(&self) -> bool {
        self.file_errors == 0 && self.race_free == self.kernels && self.findings == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::testdata;

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
            (3, 3, 1, 1, 1)
        );
        assert_eq!((s.findings, s.syntax_errors), (2, 1));
    }
}
