//! Helpers shared by the end-to-end tests in `tests/`: where the fixtures live, how a fixture
//! records the verdicts and findings it must get, and the comparison of a fixture's expectations
//! with what the checker reported.
//!
//! # The fixture convention
//! A fixture is a small `.cu` file under `tests/fixtures/<category>/<behaviour>.cu`.
//! - A line `// expect: racy` gives the verdict of every kernel in the file; a line
//!   `// expect: k1=race-free k2=divergent` gives it per kernel. A verdict may list accepted
//!   alternatives with `|` (`// expect: racy|unknown`) where the semantics allow either answer.
//!   Verdicts: `race-free`, `racy`, `divergent`, `unknown`, `unsupported`.
//! - A line `// expect-findings: 1` (or `k1=1 k2=0`) gives how many findings a kernel gets,
//!   where the count is the behaviour (one finding for barriers on one path, a cap).
//! - Every line holding a flagged access ends with `// RACE` (both accesses of a racy pair are
//!   marked; one line may hold both); every line holding a divergent barrier ends with `// DIVERGENT`.
//!
//! [`compare`] then demands: every kernel gets an accepted verdict; every finding lands on a line
//! marked with its kind (races: the access and the other access of the pair; divergence: the
//! barrier — its related span is the condition, which is not marked); every marked line is
//! covered by some finding (unless a kernel was accepted as `unknown`/`unsupported`); a kernel
//! reported `race-free` has no findings, one reported `racy`/`divergent` has a finding of that kind.
//!
//! The helpers here do not depend on the checker's crates (the library of the root package is built
//! without its dev-dependencies); the tests convert reports into [`ObservedKernel`]s.

use std::fmt;
use std::path::{Path, PathBuf};

/// The verdict names a fixture may use, as the checker spells them.
pub const VERDICTS: [&str; 5] = ["race-free", "racy", "divergent", "unknown", "unsupported"];

/// The folder holding the CUDA fixtures.
pub fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join("fixtures")
}

/// The folder holding the bundled examples (`cudarace check examples/`).
pub fn examples_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples")
}

/// The bundled examples that follow the fixture convention: every `.cu` file under `examples/`
/// except those of the CMake project in `examples/project`, which mean something only with their
/// compilation database (server/crates/cudarace/tests/project.rs checks them).
pub fn example_files() -> Vec<PathBuf> {
    let project = examples_dir().join("project");
    cuda_files(&examples_dir())
        .into_iter()
        .filter(|path| !path.starts_with(&project))
        .collect()
}

/// All `.cu` files under `dir`, recursively, sorted by path (so test order is stable).
pub fn cuda_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for entry in entries.flatten() {
            let p = entry.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|e| e == "cu") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// The test name of a fixture: its path below `root` without the extension (`intervals/shift`).
pub fn fixture_name(root: &Path, path: &Path) -> String {
    let rel = path.strip_prefix(root).unwrap_or(path);
    let s = rel.with_extension("").to_string_lossy().replace('\\', "/");
    s.trim_start_matches('/').to_string()
}

/// The expectation a fixture states about itself in `// expect:` comment lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expectation {
    /// kernel name → verdict text as written (may hold `|` alternatives).
    /// A bare `// expect: V` applies to every kernel of the file (key `*`).
    pub verdicts: Vec<(String, String)>,
    /// `// expect-confidence: conditional` or `kernel=definite|possible`: the confidences its
    /// findings may have (any when absent).
    pub confidences: Vec<(String, String)>,
    /// `// expect-findings: 1` or `kernel=2`: how many findings the kernel gets (any when
    /// absent).
    pub counts: Vec<(String, String)>,
}

impl Expectation {
    /// The accepted verdicts for `kernel`: its own entry if there is one, else the `*` entry.
    pub fn accepted(&self, kernel: &str) -> Option<Vec<&str>> {
        let own = self.verdicts.iter().find(|(k, _)| k == kernel);
        let any = self.verdicts.iter().find(|(k, _)| k == "*");
        own.or(any).map(|(_, v)| v.split('|').collect())
    }

    /// The accepted confidences of `kernel`'s findings (`None`: any).
    pub fn accepted_confidence(&self, kernel: &str) -> Option<Vec<&str>> {
        let own = self.confidences.iter().find(|(k, _)| k == kernel);
        let any = self.confidences.iter().find(|(k, _)| k == "*");
        own.or(any).map(|(_, v)| v.split('|').collect())
    }

    /// The number of findings `kernel` must get (`None`: any).
    pub fn expected_count(&self, kernel: &str) -> Option<usize> {
        let own = self.counts.iter().find(|(k, _)| k == kernel);
        let any = self.counts.iter().find(|(k, _)| k == "*");
        own.or(any).and_then(|(_, v)| v.parse().ok())
    }

    /// The kernels named explicitly (not `*`).
    pub fn named_kernels(&self) -> impl Iterator<Item = &str> {
        self.verdicts
            .iter()
            .map(|(k, _)| k.as_str())
            .filter(|k| *k != "*")
    }
}

/// Parses `// expect: racy`, `// expect: racy|unknown` or `// expect: kernel_name=racy` lines.
pub fn read_expectation(text: &str) -> Expectation {
    let mut verdicts = Vec::new();
    let mut confidences = Vec::new();
    let mut counts = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        let (rest, into) = if let Some(rest) = line.strip_prefix("// expect:") {
            (rest, &mut verdicts)
        } else if let Some(rest) = line.strip_prefix("// expect-confidence:") {
            (rest, &mut confidences)
        } else if let Some(rest) = line.strip_prefix("// expect-findings:") {
            (rest, &mut counts)
        } else {
            continue;
        };
        for item in rest.split_whitespace() {
            match item.split_once('=') {
                Some((k, v)) => into.push((k.to_string(), v.to_string())),
                None => into.push(("*".to_string(), item.to_string())),
            }
        }
    }
    Expectation {
        verdicts,
        confidences,
        counts,
    }
}

/// What a marker comment says about its line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum MarkKind {
    /// `// RACE`: the line holds an access of a racy pair.
    Race,
    /// `// DIVERGENT`: the line holds a divergent barrier.
    Divergent,
}

impl fmt::Display for MarkKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            MarkKind::Race => "RACE",
            MarkKind::Divergent => "DIVERGENT",
        })
    }
}

/// A marked line (0-based line number, as the IR's `LineIndex` counts).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Marker {
    pub line: u32,
    pub kind: MarkKind,
}

/// The lines ending with `// RACE` or `// DIVERGENT`.
pub fn read_markers(text: &str) -> Vec<Marker> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim_end();
        let kind = if line.ends_with("// RACE") {
            Some(MarkKind::Race)
        } else if line.ends_with("// DIVERGENT") {
            Some(MarkKind::Divergent)
        } else {
            None
        };
        if let Some(kind) = kind {
            out.push(Marker {
                line: i as u32,
                kind,
            });
        }
    }
    out
}

/// Checks that a fixture follows the convention (before any checker runs): it has an
/// expectation, every verdict name is known, and the markers fit the verdicts (a fixture that
/// only expects `race-free` has no markers; one that may be `racy` has `// RACE` lines, …).
pub fn lint_fixture(text: &str) -> Vec<String> {
    let mut problems = Vec::new();
    let exp = read_expectation(text);
    if exp.verdicts.is_empty() {
        problems.push("no `// expect:` line".to_string());
    }
    let mut any_racy = false;
    let mut any_divergent = false;
    let mut all_race_free = true;
    for (k, v) in &exp.verdicts {
        for alt in v.split('|') {
            if !VERDICTS.contains(&alt) {
                problems.push(format!(
                    "unknown verdict `{alt}` for `{k}` (known: {VERDICTS:?})"
                ));
            }
            any_racy |= alt == "racy";
            any_divergent |= alt == "divergent";
            all_race_free &= alt == "race-free";
        }
    }
    for (k, n) in &exp.counts {
        if n.parse::<usize>().is_err() {
            problems.push(format!("`{n}` findings for `{k}` is not a count"));
        }
    }
    let markers = read_markers(text);
    let has = |kind| markers.iter().any(|m| m.kind == kind);
    if any_racy && !has(MarkKind::Race) {
        problems.push("a `racy` expectation needs `// RACE` markers".to_string());
    }
    if any_divergent && !has(MarkKind::Divergent) {
        problems.push("a `divergent` expectation needs `// DIVERGENT` markers".to_string());
    }
    if has(MarkKind::Race) && !any_racy {
        problems.push("`// RACE` markers but no kernel may be `racy`".to_string());
    }
    if has(MarkKind::Divergent) && !any_divergent {
        problems.push("`// DIVERGENT` markers but no kernel may be `divergent`".to_string());
    }
    if !exp.verdicts.is_empty() && all_race_free && !markers.is_empty() {
        problems.push("a race-free fixture has markers".to_string());
    }
    problems
}

/// A finding as the comparison needs it: its kind and the 0-based lines of its spans.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObservedFinding {
    pub kind: MarkKind,
    /// Line of the primary span (the access of thread A, or the divergent barrier); `None` when
    /// the span is not in the checked file.
    pub line: Option<u32>,
    /// Lines of the related spans (the other access; for divergence, the condition).
    pub related_lines: Vec<Option<u32>>,
    /// One-line description for failure messages.
    pub summary: String,
    /// `definite`, `possible` or `conditional`.
    pub confidence: String,
}

/// A kernel report as the comparison needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObservedKernel {
    pub name: String,
    /// The verdict as spelled by the checker (`race-free`, …).
    pub verdict: String,
    pub reason: Option<String>,
    pub findings: Vec<ObservedFinding>,
}

/// Compares what the checker reported for a fixture with what the fixture expects.
/// Returns every mismatch (empty: the fixture passes).
pub fn compare(text: &str, kernels: &[ObservedKernel]) -> Vec<String> {
    let mut problems = lint_fixture(text);
    if !problems.is_empty() {
        return problems
            .into_iter()
            .map(|p| format!("bad fixture: {p}"))
            .collect();
    }
    let exp = read_expectation(text);
    let markers = read_markers(text);
    let marked = |line: Option<u32>, kind: MarkKind| {
        line.is_some_and(|l| markers.iter().any(|m| m.line == l && m.kind == kind))
    };
    let show = |line: Option<u32>| match line {
        Some(l) => format!("line {}", l + 1),
        None => "a span outside the file".to_string(),
    };

    if kernels.is_empty() {
        problems.push("the checker reported no kernel".to_string());
    }
    for name in exp.named_kernels() {
        if !kernels.iter().any(|k| k.name == name) {
            problems.push(format!(
                "expected a kernel `{name}`, the checker reported none"
            ));
        }
    }

    let mut coverage_required = true;
    for k in kernels {
        let Some(accepted) = exp.accepted(&k.name) else {
            problems.push(format!(
                "kernel `{}` has no expectation (verdict {})",
                k.name, k.verdict
            ));
            continue;
        };
        if !accepted.contains(&k.verdict.as_str()) {
            let reason = k
                .reason
                .as_deref()
                .map(|r| format!(" ({r})"))
                .unwrap_or_default();
            problems.push(format!(
                "kernel `{}`: verdict {}{reason}, expected {}",
                k.name,
                k.verdict,
                accepted.join(" or ")
            ));
        }
        if matches!(k.verdict.as_str(), "unknown" | "unsupported") {
            coverage_required = false;
        }
        // The verdict and the findings must agree with each other.
        let count = |kind| k.findings.iter().filter(|f| f.kind == kind).count();
        match k.verdict.as_str() {
            "race-free" if !k.findings.is_empty() => problems.push(format!(
                "kernel `{}` is race-free but has {} finding(s)",
                k.name,
                k.findings.len()
            )),
            "racy" if count(MarkKind::Race) == 0 => problems.push(format!(
                "kernel `{}` is racy but has no race finding",
                k.name
            )),
            "divergent" if count(MarkKind::Divergent) == 0 => problems.push(format!(
                "kernel `{}` is divergent but has no divergence finding",
                k.name
            )),
            _ => {}
        }
        if let Some(n) = exp.expected_count(&k.name) {
            if k.findings.len() != n {
                problems.push(format!(
                    "kernel `{}`: {} finding(s), expected {n}",
                    k.name,
                    k.findings.len()
                ));
            }
        }
        for f in &k.findings {
            if let Some(ok) = exp.accepted_confidence(&k.name) {
                if !ok.contains(&f.confidence.as_str()) {
                    problems.push(format!(
                        "kernel `{}`: a {} finding where the fixture expects {}: {}",
                        k.name,
                        f.confidence,
                        ok.join(" or "),
                        f.summary
                    ));
                }
            }
            if !marked(f.line, f.kind) {
                problems.push(format!(
                    "kernel `{}`: {} finding at {} which is not marked `// {}`: {}",
                    k.name,
                    f.kind,
                    show(f.line),
                    f.kind,
                    f.summary
                ));
            }
            if f.kind == MarkKind::Race {
                for &r in &f.related_lines {
                    if !marked(r, MarkKind::Race) {
                        problems.push(format!(
                            "kernel `{}`: the other access of a race is at {} which is not marked `// RACE`: {}",
                            k.name,
                            show(r),
                            f.summary
                        ));
                    }
                }
            }
        }
    }

    if coverage_required {
        for m in &markers {
            let covered = kernels.iter().flat_map(|k| &k.findings).any(|f| {
                // The other access of a race, or a barrier on the same path as the divergent
                // one (reached by the same threads: one finding names them all).
                f.kind == m.kind
                    && (f.line == Some(m.line) || f.related_lines.contains(&Some(m.line)))
            });
            if !covered {
                problems.push(format!(
                    "line {} is marked `// {}` but no finding covers it",
                    m.line + 1,
                    m.kind
                ));
            }
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_expectations() {
        let e = read_expectation("// expect: racy\n// expect: k2=race-free\n__global__ void k(){}");
        assert_eq!(
            e.verdicts,
            vec![
                ("*".into(), "racy".into()),
                ("k2".into(), "race-free".into())
            ]
        );
    }

    #[test]
    fn accepted_prefers_the_kernel_entry_and_splits_alternatives() {
        let e = read_expectation("// expect: racy|unknown k2=race-free\n");
        assert_eq!(e.accepted("k1"), Some(vec!["racy", "unknown"]));
        assert_eq!(e.accepted("k2"), Some(vec!["race-free"]));
        let only_named = read_expectation("// expect: a=racy\n");
        assert_eq!(only_named.accepted("b"), None);
        assert_eq!(only_named.named_kernels().collect::<Vec<_>>(), vec!["a"]);
    }

    #[test]
    fn markers_are_read_from_line_ends_only() {
        let text = "// RACE in a comment does not count\n  s[0] = 1; // RACE\n\
                    __syncthreads(); // DIVERGENT  \nx = 1; // RACE here\n";
        assert_eq!(
            read_markers(text),
            vec![
                Marker {
                    line: 1,
                    kind: MarkKind::Race
                },
                Marker {
                    line: 2,
                    kind: MarkKind::Divergent
                }
            ]
        );
    }

    #[test]
    fn lint_rejects_bad_fixtures() {
        assert!(lint_fixture("__global__ void k(){}")
            .iter()
            .any(|p| p.contains("no `// expect:`")));
        assert!(lint_fixture("// expect: racey\n")
            .iter()
            .any(|p| p.contains("unknown verdict")));
        assert!(
            !lint_fixture("// expect: racy\n").is_empty(),
            "racy without markers"
        );
        assert!(!lint_fixture("// expect: race-free\nx; // RACE\n").is_empty());
        assert!(!lint_fixture("// expect: racy\nx; // DIVERGENT\n").is_empty());
        assert!(lint_fixture("// expect: racy\nx; // RACE\n").is_empty());
        assert!(lint_fixture("// expect: unknown\nx;\n").is_empty());
        assert!(
            lint_fixture("// expect: unknown\n// expect-findings: k=two\n")
                .iter()
                .any(|p| p.contains("is not a count"))
        );
    }

    #[test]
    fn a_count_of_findings_is_checked() {
        let text = format!("// expect-findings: 1\n{RACY}");
        assert!(compare(&text, &[kernel("k", "racy", vec![race(3, 4)])]).is_empty());
        let p = compare(&text, &[kernel("k", "racy", vec![race(3, 4), race(4, 3)])]);
        assert!(
            p.iter().any(|p| p.contains("2 finding(s), expected 1")),
            "{p:?}"
        );
    }

    fn race(line: u32, other: u32) -> ObservedFinding {
        ObservedFinding {
            kind: MarkKind::Race,
            line: Some(line),
            related_lines: vec![Some(other)],
            summary: String::new(),
            confidence: "definite".into(),
        }
    }

    fn kernel(name: &str, verdict: &str, findings: Vec<ObservedFinding>) -> ObservedKernel {
        ObservedKernel {
            name: name.into(),
            verdict: verdict.into(),
            reason: None,
            findings,
        }
    }

    const RACY: &str =
        "// expect: racy\n__global__ void k() {\n s[t] = 1; // RACE\n x = s[t+1]; // RACE\n}\n";

    #[test]
    fn a_matching_report_passes() {
        assert!(compare(RACY, &[kernel("k", "racy", vec![race(2, 3)])]).is_empty());
    }

    #[test]
    fn wrong_verdict_fails() {
        let p = compare(RACY, &[kernel("k", "race-free", vec![])]);
        assert!(
            p.iter()
                .any(|p| p.contains("verdict race-free, expected racy")),
            "{p:?}"
        );
    }

    #[test]
    fn finding_on_unmarked_line_fails() {
        let p = compare(RACY, &[kernel("k", "racy", vec![race(2, 3), race(1, 3)])]);
        assert!(
            p.iter().any(|p| p.contains("line 2 which is not marked")),
            "{p:?}"
        );
    }

    #[test]
    fn related_access_on_unmarked_line_fails() {
        let p = compare(RACY, &[kernel("k", "racy", vec![race(2, 3), race(3, 4)])]);
        assert!(p.iter().any(|p| p.contains("other access")), "{p:?}");
    }

    #[test]
    fn uncovered_marker_fails() {
        let p = compare(RACY, &[kernel("k", "racy", vec![race(2, 2)])]);
        assert!(p.iter().any(|p| p.contains("line 4 is marked")), "{p:?}");
    }

    #[test]
    fn divergence_related_span_may_be_unmarked() {
        let text = "// expect: divergent\nif (t < 2)\n  __syncthreads(); // DIVERGENT\n";
        let f = ObservedFinding {
            kind: MarkKind::Divergent,
            line: Some(2),
            related_lines: vec![Some(1)],
            summary: String::new(),
            confidence: "definite".into(),
        };
        assert!(compare(text, &[kernel("k", "divergent", vec![f])]).is_empty());
    }

    #[test]
    fn kind_must_match_marker() {
        let text = "// expect: divergent\n  __syncthreads(); // DIVERGENT\n";
        let p = compare(text, &[kernel("k", "divergent", vec![race(1, 1)])]);
        assert!(
            p.iter().any(|p| p.contains("no divergence finding")),
            "{p:?}"
        );
        assert!(
            p.iter().any(|p| p.contains("not marked `// RACE`")),
            "{p:?}"
        );
    }

    #[test]
    fn race_free_kernel_with_findings_fails() {
        let text = "// expect: race-free|unknown\nx;\n";
        let p = compare(text, &[kernel("k", "race-free", vec![race(1, 1)])]);
        assert!(
            p.iter().any(|p| p.contains("race-free but has 1 finding")),
            "{p:?}"
        );
    }

    #[test]
    fn accepted_unknown_lifts_coverage() {
        let text = "// expect: racy|unknown\ns[p[t]] = 1; // RACE\n";
        assert!(compare(text, &[kernel("k", "unknown", vec![])]).is_empty());
        let p = compare(text, &[kernel("k", "racy", vec![])]);
        assert!(p.iter().any(|p| p.contains("no race finding")), "{p:?}");
    }

    #[test]
    fn per_kernel_expectations_and_missing_kernels() {
        let text = "// expect: a=racy b=race-free\nx; // RACE\n";
        let ok = [
            kernel("a", "racy", vec![race(1, 1)]),
            kernel("b", "race-free", vec![]),
        ];
        assert!(compare(text, &ok).is_empty());
        let p = compare(text, &[kernel("a", "racy", vec![race(1, 1)])]);
        assert!(
            p.iter().any(|p| p.contains("expected a kernel `b`")),
            "{p:?}"
        );
        let extra = [ok[0].clone(), ok[1].clone(), kernel("c", "racy", vec![])];
        assert!(compare(text, &extra)
            .iter()
            .any(|p| p.contains("`c` has no expectation")));
    }

    #[test]
    fn fixture_names_are_relative_paths_without_extension() {
        let root = Path::new("/a/fixtures");
        assert_eq!(
            fixture_name(root, Path::new("/a/fixtures/loops/grid.cu")),
            "loops/grid"
        );
    }

    #[test]
    fn every_fixture_and_example_follows_the_convention() {
        let files = cuda_files(&fixtures_dir());
        assert!(files.len() >= 70, "only {} fixtures", files.len());
        let examples = example_files();
        assert!(examples.len() >= 6, "only {} examples", examples.len());
        for f in files.into_iter().chain(examples) {
            let text = std::fs::read_to_string(&f).expect("fixture readable");
            let problems = lint_fixture(&text);
            assert!(problems.is_empty(), "{}: {problems:?}", f.display());
        }
    }
}
