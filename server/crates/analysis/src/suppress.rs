//! Inline suppressions: `// cudarace: allow(KIND) [array=NAME] [kernel] [reason=TEXT]`.
//!
//! - `KIND` is `data-race` or `barrier-divergence` (several: `allow(data-race, barrier-divergence)`).
//! - Line form: a comment at the end of the line of the flagged access or barrier covers that line;
//!   a comment alone on its line covers the next line that is not a comment (so several
//!   suppressions can be stacked above one line). A race is covered by a comment on the line of
//!   either of its two accesses.
//! - Kernel form: with the word `kernel`, in the comment lines directly above a kernel, it covers
//!   every finding of that kernel (of the given kinds).
//! - `array=NAME` narrows it to races on that array; `reason=` takes the rest of the comment.
//! - One directive per comment; it may share its comment with a launch annotation
//!   (`// cudarace: blockDim=(32,8) allow(data-race) kernel`).
//!
//! A directive that covers nothing is reported as a file-level `unused-suppression` notice (so
//! stale ones get cleaned up), but only where the analysis was complete enough to know: the
//! kernel it sits in (or above) was checked and decided, and for directives outside any kernel,
//! every kernel of the file was. A malformed directive is an `invalid-suppression` notice.
//!
//! [`assess`] is the one place this logic lives: the driver (CLI) and the language server call it.

use crate::config::Config;
use cudarace_ir::{
    FileId, Finding, FindingKind, KernelReport, LineIndex, SourceFile, Span, Verdict,
};

/// The notice codes.
pub const UNUSED_SUPPRESSION: &str = "unused-suppression";
pub const INVALID_SUPPRESSION: &str = "invalid-suppression";

/// A parsed `// cudarace: allow(…)` comment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Directive {
    /// The comment.
    pub span: Span,
    pub kinds: Vec<FindingKind>,
    pub array: Option<String>,
    pub reason: Option<String>,
    pub kernel_level: bool,
    /// Line form: the 0-based line it covers.
    pub target_line: u32,
}

/// Why a finding is not counted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Suppression {
    /// By a `// cudarace: allow(…)` comment.
    Comment { span: Span, reason: Option<String> },
    /// By `allow-same-value-writes = true` in the configuration.
    SameValueWrite,
}

impl Suppression {
    pub fn reason(&self) -> Option<&str> {
        match self {
            Suppression::Comment { reason, .. } => reason.as_deref(),
            Suppression::SameValueWrite => {
                Some("both threads store the same value (allow-same-value-writes)")
            }
        }
    }
}

/// A file-level problem with the suppression comments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notice {
    /// [`UNUSED_SUPPRESSION`] or [`INVALID_SUPPRESSION`].
    pub code: &'static str,
    pub span: Span,
    pub message: String,
}

/// The outcome for one file: per kernel report, per finding, whether it is suppressed (parallel
/// to `kernels[k].findings[f]`), and the notices.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Assessment {
    pub suppressed: Vec<Vec<Option<Suppression>>>,
    pub notices: Vec<Notice>,
}

/// Line comments (`// …`) of a C/C++ text, as byte ranges (`//` to the end of the line), skipping
/// string and character literals and block comments.
fn line_comments(text: &str) -> Vec<(usize, usize)> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'/' if bytes.get(i + 1) == Some(&b'/') => {
                let end = text[i..].find('\n').map_or(text.len(), |n| i + n);
                out.push((i, end));
                i = end;
            }
            b'/' if bytes.get(i + 1) == Some(&b'*') => {
                i = text[i + 2..]
                    .find("*/")
                    .map_or(text.len(), |n| i + 2 + n + 2);
            }
            quote @ (b'"' | b'\'') => {
                i += 1;
                while i < bytes.len() && bytes[i] != quote && bytes[i] != b'\n' {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
            }
            _ => i += 1,
        }
    }
    out
}

/// Whether a line holds only a comment (or only whitespace when `blank_ok`).
fn comment_only(line: &str, blank_ok: bool) -> bool {
    let t = line.trim();
    (blank_ok && t.is_empty()) || t.starts_with("//")
}

/// A directive's kinds, array, reason, and whether it is the kernel form.
type Parsed = (Vec<FindingKind>, Option<String>, Option<String>, bool);

/// Parses the directive of one comment body (the text after `//`); `Ok(None)` when the comment
/// is not a suppression (including launch annotations).
fn parse_directive(body: &str) -> Result<Option<Parsed>, String> {
    let Some(rest) = body.trim_start().strip_prefix("cudarace:") else {
        return Ok(None);
    };
    // `allow` as a word, followed by `(`; launch words may come before it.
    let mut at = None;
    for (i, _) in rest.match_indices("allow") {
        let word_start = i == 0 || !rest.as_bytes()[i - 1].is_ascii_alphanumeric();
        if word_start && rest[i + 5..].trim_start().starts_with('(') {
            at = Some(i);
            break;
        }
    }
    let Some(at) = at else {
        if rest.split_whitespace().any(|w| w.starts_with("allow")) {
            return Err("expected `allow(KIND)` after `cudarace:`".to_string());
        }
        return Ok(None);
    };
    let after = rest[at + 5..].trim_start();
    let inner_end = after
        .find(')')
        .ok_or_else(|| "missing `)` after `allow(`".to_string())?;
    let mut kinds = Vec::new();
    for k in after[1..inner_end].split(',').map(str::trim) {
        match k {
            "data-race" => kinds.push(FindingKind::DataRace),
            "barrier-divergence" => kinds.push(FindingKind::BarrierDivergence),
            "" => {
                return Err(
                    "`allow()` needs a finding kind (`data-race`, `barrier-divergence`)".into(),
                )
            }
            other => {
                return Err(format!(
                    "unknown finding kind `{other}` (allowed: `data-race`, `barrier-divergence`)"
                ))
            }
        }
    }
    let mut array = None;
    let mut reason = None;
    let mut kernel = false;
    let mut words = after[inner_end + 1..].trim_start();
    while !words.is_empty() {
        if let Some(r) = words.strip_prefix("reason=") {
            let r = r.trim();
            reason = (!r.is_empty()).then(|| r.to_string());
            break;
        }
        let (word, rest) = words.split_once(char::is_whitespace).unwrap_or((words, ""));
        if let Some(name) = word.strip_prefix("array=") {
            if name.is_empty() {
                return Err("`array=` needs an array name".into());
            }
            array = Some(name.to_string());
        } else if word == "kernel" {
            kernel = true;
        } else {
            return Err(format!(
                "unknown option `{word}` (allowed: `array=NAME`, `kernel`, `reason=TEXT`)"
            ));
        }
        words = rest.trim_start();
    }
    if array.is_some() && !kinds.contains(&FindingKind::DataRace) {
        return Err("`array=` applies to `data-race` only".into());
    }
    Ok(Some((kinds, array, reason, kernel)))
}

/// The directives of one file, and notices for malformed ones.
pub fn scan(file: FileId, text: &str) -> (Vec<Directive>, Vec<Notice>) {
    let index = LineIndex::new(text);
    let lines: Vec<&str> = text.split('\n').collect();
    let mut directives = Vec::new();
    let mut notices = Vec::new();
    for (start, end) in line_comments(text) {
        let body = &text[start + 2..end];
        let span = Span::new(file, start, end);
        match parse_directive(body) {
            Ok(None) => {}
            Err(message) => notices.push(Notice {
                code: INVALID_SUPPRESSION,
                span,
                message: format!("invalid suppression: {message}"),
            }),
            Ok(Some((kinds, array, reason, kernel_level))) => {
                let line = index.line_col(start as u32).line;
                let line_text = lines.get(line as usize).copied().unwrap_or("");
                let own_line = comment_only(line_text, false);
                let target_line = if own_line {
                    // The next line that is not a comment.
                    (line + 1..lines.len() as u32)
                        .find(|l| !comment_only(lines[*l as usize], false))
                        .unwrap_or(line + 1)
                } else {
                    line
                };
                directives.push(Directive {
                    span,
                    kinds,
                    array,
                    reason,
                    kernel_level,
                    target_line,
                });
            }
        }
    }
    (directives, notices)
}

fn decided(report: &KernelReport) -> bool {
    matches!(
        report.verdict,
        Verdict::RaceFree | Verdict::Racy | Verdict::Divergent
    )
}

/// Whether the text between a kernel-level directive and a kernel start holds only comments,
/// whitespace and a `template <…>` head.
fn directly_above(text: &str, directive_end: usize, kernel_start: usize) -> bool {
    let Some(between) = text.get(directive_end..kernel_start) else {
        return false;
    };
    let code: String = between
        .split('\n')
        .filter(|l| !comment_only(l, true))
        .collect::<Vec<_>>()
        .join("\n");
    let code = code.trim();
    code.is_empty() || (code.starts_with("template") && !code.contains([';', '{', '}']))
}

fn covers(d: &Directive, f: &Finding, line_of: &dyn Fn(Span) -> Option<u32>) -> bool {
    if !d.kinds.contains(&f.kind) {
        return false;
    }
    if d.array.is_some() && d.array != f.array {
        return false;
    }
    if d.kernel_level {
        return true;
    }
    let mut places = vec![f.span];
    if f.kind == FindingKind::DataRace {
        places.extend(f.related.first().map(|r| r.span));
    }
    places
        .into_iter()
        .any(|s| s.file == d.span.file && line_of(s) == Some(d.target_line))
}

/// Decides which findings of `kernels` are suppressed (by comments in `files`, then by the
/// configuration's `allow-same-value-writes`) and which directives are unused or malformed.
/// `whole_file` says that `kernels` holds every kernel of the file (no kernel filter, no check
/// still running): only then can a directive outside every kernel be called unused.
pub fn assess(
    files: &[SourceFile],
    kernels: &[KernelReport],
    config: &Config,
    whole_file: bool,
) -> Assessment {
    let indexes: Vec<LineIndex> = files.iter().map(|f| LineIndex::new(&f.text)).collect();
    let line_of = |s: Span| -> Option<u32> {
        let index = indexes.get(s.file.0 as usize)?;
        Some(index.line_col(s.start).line)
    };
    let mut directives: Vec<Directive> = Vec::new();
    let mut notices = Vec::new();
    for (i, file) in files.iter().enumerate() {
        let (d, n) = scan(FileId(i as u32), &file.text);
        directives.extend(d);
        // Malformed directives of included files are reported when those files are checked.
        if i == 0 {
            notices.extend(n);
        }
    }
    // The kernel each kernel-level directive is attached to.
    let targets: Vec<Option<usize>> = directives
        .iter()
        .map(|d| {
            if !d.kernel_level {
                return None;
            }
            let text = &files.get(d.span.file.0 as usize)?.text;
            kernels
                .iter()
                .enumerate()
                .filter(|(_, k)| k.span.file == d.span.file && k.span.start >= d.span.end)
                .min_by_key(|(_, k)| k.span.start)
                .filter(|(_, k)| directly_above(text, d.span.end as usize, k.span.start as usize))
                .map(|(i, _)| i)
        })
        .collect();
    let mut used = vec![false; directives.len()];
    let suppressed = kernels
        .iter()
        .enumerate()
        .map(|(k, report)| {
            report
                .findings
                .iter()
                .map(|f| {
                    let hit = directives.iter().enumerate().position(|(i, d)| {
                        (!d.kernel_level || targets[i] == Some(k)) && covers(d, f, &line_of)
                    });
                    // Every directive covering the finding counts as used.
                    for (i, d) in directives.iter().enumerate() {
                        if (!d.kernel_level || targets[i] == Some(k)) && covers(d, f, &line_of) {
                            used[i] = true;
                        }
                    }
                    match hit {
                        Some(i) => Some(Suppression::Comment {
                            span: directives[i].span,
                            reason: directives[i].reason.clone(),
                        }),
                        None if config.allow_same_value_writes
                            && f.kind == FindingKind::DataRace
                            && f.same_value_write =>
                        {
                            Some(Suppression::SameValueWrite)
                        }
                        None => None,
                    }
                })
                .collect()
        })
        .collect();
    let all_decided = whole_file && !kernels.is_empty() && kernels.iter().all(decided);
    for (i, d) in directives.iter().enumerate() {
        if used[i] || d.span.file.0 != 0 {
            continue;
        }
        let kinds: Vec<&str> = d.kinds.iter().map(|k| k.code()).collect();
        let what = format!("allow({})", kinds.join(", "));
        let message = if d.kernel_level {
            match targets[i] {
                Some(k) if decided(&kernels[k]) => Some(format!(
                    "unused suppression: `{what}` matches no finding of kernel `{}`",
                    kernels[k].name
                )),
                Some(_) => None,
                None if whole_file => Some(format!(
                    "unused suppression: `{what} kernel` is not directly above a kernel"
                )),
                None => None,
            }
        } else {
            let inside = kernels.iter().find(|k| {
                k.span.file == d.span.file
                    && k.span.start <= d.span.start
                    && d.span.end <= k.span.end
            });
            let judged = match inside {
                Some(k) => decided(k),
                None => all_decided,
            };
            judged.then(|| {
                format!(
                    "unused suppression: `{what}` matches no finding on line {}",
                    d.target_line + 1
                )
            })
        };
        if let Some(message) = message {
            notices.push(Notice {
                code: UNUSED_SUPPRESSION,
                span: d.span,
                message,
            });
        }
    }
    notices.sort_by_key(|n| (n.span.start, n.code));
    Assessment {
        suppressed,
        notices,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn directives(text: &str) -> (Vec<Directive>, Vec<Notice>) {
        scan(FileId(0), text)
    }

    #[test]
    fn directive_forms() {
        let text = "x = 1; // cudarace: allow(data-race) array=s reason=benign: same value\n\
                    // cudarace: allow(barrier-divergence, data-race) kernel\n\
                    // cudarace: blockDim=(32,8) gridDim=(64)\n\
                    // cudarace: blockDim=(32, 8) allow(data-race) kernel reason=x\n\
                    \"// cudarace: allow(data-race)\" /* // cudarace: allow(data-race) */\n";
        let (d, n) = directives(text);
        assert!(n.is_empty(), "{n:?}");
        assert_eq!(d.len(), 3, "{d:#?}");
        assert_eq!(d[0].kinds, vec![FindingKind::DataRace]);
        assert_eq!(d[0].array.as_deref(), Some("s"));
        assert_eq!(d[0].reason.as_deref(), Some("benign: same value"));
        assert_eq!(
            d[0].target_line, 0,
            "a trailing comment covers its own line"
        );
        assert!(!d[0].kernel_level);
        assert_eq!(d[1].kinds.len(), 2);
        assert!(d[1].kernel_level);
        assert!(d[2].kernel_level);
        assert_eq!(d[2].reason.as_deref(), Some("x"));
    }

    #[test]
    fn own_line_comments_cover_the_next_code_line() {
        let text = "// cudarace: allow(data-race) array=a\n// cudarace: allow(data-race) array=b\n  a[t] = b[t];\n";
        let (d, _) = directives(text);
        assert_eq!(d[0].target_line, 2);
        assert_eq!(d[1].target_line, 2);
    }

    #[test]
    fn malformed_directives_are_notices() {
        for (text, expected) in [
            (
                "// cudarace: allow(data-rase)",
                "unknown finding kind `data-rase`",
            ),
            ("// cudarace: allow(data-race", "missing `)`"),
            ("// cudarace: allow()", "needs a finding kind"),
            (
                "// cudarace: allow(data-race) arrays=s",
                "unknown option `arrays=s`",
            ),
            (
                "// cudarace: allow(barrier-divergence) array=s",
                "applies to `data-race` only",
            ),
            ("// cudarace: allow data-race", "expected `allow(KIND)`"),
        ] {
            let (d, n) = directives(text);
            assert!(d.is_empty(), "{text}");
            assert_eq!(n.len(), 1, "{text}");
            assert_eq!(n[0].code, INVALID_SUPPRESSION);
            assert!(n[0].message.contains(expected), "{text}: {}", n[0].message);
        }
    }
}
