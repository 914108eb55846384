//! The two caches that make re-checking after an edit cheap.
//!
//! - [`ReportCache`]: a kernel's report keyed by a *position-independent* fingerprint of the kernel
//!   (its IR with spans made relative to the kernel's start, its text, the launch information the
//!   file gives it, and the options). Inserting lines above a kernel or editing another kernel,
//!   host code or a comment outside it leaves the fingerprint unchanged: the kernel is not even
//!   re-planned, and its cached report is shifted to the kernel's current position.
//! - [`AnswerCache`]: solver answers keyed by the whole [`Query`] (its variable names carry no
//!   positions, see `Query::key`) and the limits. When a kernel did change, only the queries that
//!   changed (the edited barrier interval's) reach the solver.

use crate::pipeline::{Answer, CheckOptions, Limits, Query};
use cudarace_ir::{FileIr, Kernel, KernelReport, Span};
use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::Mutex;

/// Applies `f` to every span of a report.
pub fn map_report_spans(report: &mut KernelReport, f: impl Fn(Span) -> Span) {
    report.span = f(report.span);
    report.name_span = f(report.name_span);
    for finding in &mut report.findings {
        finding.span = f(finding.span);
        for related in &mut finding.related {
            related.span = f(related.span);
        }
    }
}

/// Moves the file-0 spans of a report by `new_base - old_base`.
pub fn shift_report(report: &mut KernelReport, old_base: u32, new_base: u32) {
    let shift = |o: u32| (o as i64 - old_base as i64 + new_base as i64).max(0) as usize;
    map_report_spans(report, |s| {
        if s.file.0 == 0 {
            Span::new(s.file, shift(s.start), shift(s.end))
        } else {
            s
        }
    });
}

/// Rewrites every `Span { file: FileId(0), start: S, end: E }` of a `Debug` rendering to offsets
/// relative to `base`. Spans of other files keep their absolute offsets (includes are not edited).
/// If the rendering ever stops matching this shape, spans stay absolute: the fingerprint then
/// only matches at the same position, which is still correct, only less cached.
pub fn relative_spans(debug: &str, base: u32) -> String {
    const HEAD: &str = "Span { file: FileId(";
    let mut out = String::with_capacity(debug.len());
    let mut rest = debug;
    while let Some(at) = rest.find(HEAD) {
        out.push_str(&rest[..at]);
        let after = &rest[at + HEAD.len()..];
        match parse_span_tail(after) {
            Some((0, start, end, used)) => {
                out.push_str(&format!(
                    "Span(rel {} {})",
                    start as i64 - base as i64,
                    end as i64 - base as i64
                ));
                rest = &after[used..];
            }
            _ => {
                out.push_str(HEAD);
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// Parses `F), start: S, end: E }` and returns (F, S, E, bytes used).
fn parse_span_tail(s: &str) -> Option<(u32, u32, u32, usize)> {
    fn number(s: &str) -> Option<(u32, &str)> {
        let digits = s.bytes().take_while(u8::is_ascii_digit).count();
        Some((s[..digits].parse().ok()?, &s[digits..]))
    }
    let (file, r) = number(s)?;
    let r = r.strip_prefix("), start: ")?;
    let (start, r) = number(r)?;
    let r = r.strip_prefix(", end: ")?;
    let (end, r) = number(r)?;
    let r = r.strip_prefix(" }")?;
    Some((file, start, end, s.len() - r.len()))
}

/// A 128-bit position-independent fingerprint of what a kernel's report depends on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Fingerprint(u64, u64);

pub fn kernel_fingerprint(file: &FileIr, kernel: &Kernel, opts: &CheckOptions) -> Fingerprint {
    let base = kernel.span.start;
    let ir = relative_spans(&format!("{kernel:?}"), base);
    let text = file
        .files
        .first()
        .and_then(|f| {
            f.text
                .get(kernel.span.start as usize..kernel.span.end as usize)
        })
        .unwrap_or("");
    let sites: Vec<_> = file
        .launch_sites
        .iter()
        .filter(|s| s.kernel == kernel.base_name())
        .map(|s| (s.grid_dim, s.block_dim, &s.args))
        .collect();
    let context = format!("{sites:?}|{:?}|{opts:?}", file.header_launch);
    let hash = |seed: u64| {
        let mut h = DefaultHasher::new();
        seed.hash(&mut h);
        ir.hash(&mut h);
        text.hash(&mut h);
        context.hash(&mut h);
        h.finish()
    };
    Fingerprint(hash(0x5eed_0001), hash(0x5eed_0002))
}

struct CachedReport {
    report: KernelReport,
}

/// Kernel reports by fingerprint; bounded (cleared when full: the answer cache still holds the
/// solver's work).
pub struct ReportCache {
    map: Mutex<HashMap<Fingerprint, CachedReport>>,
    capacity: usize,
}

impl ReportCache {
    pub fn new(capacity: usize) -> Self {
        ReportCache {
            map: Mutex::new(HashMap::new()),
            capacity,
        }
    }

    /// The cached report moved to a kernel now starting at `base`.
    pub fn get(&self, key: Fingerprint, base: u32) -> Option<KernelReport> {
        let map = self.map.lock().unwrap_or_else(|p| p.into_inner());
        let cached = map.get(&key)?;
        let mut report = cached.report.clone();
        shift_report(&mut report, cached.report.span.start, base);
        Some(report)
    }

    pub fn insert(&self, key: Fingerprint, report: KernelReport) {
        let mut map = self.map.lock().unwrap_or_else(|p| p.into_inner());
        if map.len() >= self.capacity {
            map.clear();
        }
        map.insert(key, CachedReport { report });
    }
}

/// Solver answers by query and limits; bounded like [`ReportCache`].
pub struct AnswerCache {
    map: Mutex<HashMap<(Query, Limits), Answer>>,
    capacity: usize,
}

impl AnswerCache {
    pub fn new(capacity: usize) -> Self {
        AnswerCache {
            map: Mutex::new(HashMap::new()),
            capacity,
        }
    }

    pub fn get(&self, query: &Query, limits: Limits) -> Option<Answer> {
        let map = self.map.lock().unwrap_or_else(|p| p.into_inner());
        map.get(&(query.clone(), limits)).cloned()
    }

    /// Stores an answer unless it only says the call was cut short by us (a cancelled or
    /// interrupted call must be asked again). Timeouts are kept: the same query under the same
    /// limits would time out again, and re-solving it on every keystroke would stall the pool.
    pub fn insert(&self, query: Query, limits: Limits, answer: Answer) {
        if let Answer::Unknown(reason) = &answer {
            let reason = reason.to_ascii_lowercase();
            if reason.contains("cancel") || reason.contains("interrupt") {
                return;
            }
        }
        let mut map = self.map.lock().unwrap_or_else(|p| p.into_inner());
        if map.len() >= self.capacity {
            map.clear();
        }
        map.insert((query, limits), answer);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnostics::tests::{race_report, TEXT};
    use cudarace_ir::FileId;
    use cudarace_solver::Term;

    #[test]
    fn relative_spans_ignore_position() {
        let a = format!(
            "{:?}",
            vec![Span::new(FileId(0), 10, 14), Span::new(FileId(1), 3, 4)]
        );
        let b = format!(
            "{:?}",
            vec![Span::new(FileId(0), 110, 114), Span::new(FileId(1), 3, 4)]
        );
        assert_ne!(a, b);
        assert_eq!(relative_spans(&a, 5), relative_spans(&b, 105));
        assert_ne!(relative_spans(&a, 5), relative_spans(&b, 104));
        assert!(
            relative_spans(&a, 5).contains("FileId(1), start: 3"),
            "other files stay absolute"
        );
    }

    #[test]
    fn fingerprint_is_stable_under_moves_and_sensitive_to_content() {
        let text = "__global__ void k(int *a) { a[0] = 1; }";
        let moved = format!("// header\n\n{text}");
        let kernel = |start: usize, body_end: u32| Kernel {
            name: "k".into(),
            span: Span::new(FileId(0), start, start + text.len()),
            name_span: Span::new(FileId(0), start + 16, start + 17),
            params: vec![],
            arrays: vec![],
            locals: vec![],
            unknowns: vec![],
            body: vec![cudarace_ir::Stmt::Return {
                span: Span::new(FileId(0), start + 20, start + body_end as usize),
            }],
            launch_bounds: None,
            launch_bounds_param: None,
            annotated_launch: Default::default(),
            unsupported: None,
            volatile_arrays: vec![],
            library_notes: vec![],
        };
        let file = |t: &str| FileIr {
            files: vec![cudarace_ir::SourceFile {
                path: None,
                text: t.into(),
            }],
            ..Default::default()
        };
        let opts = CheckOptions::default();
        let f1 = kernel_fingerprint(&file(text), &kernel(0, 25), &opts);
        let f2 = kernel_fingerprint(&file(&moved), &kernel(11, 25), &opts);
        assert_eq!(f1, f2);
        assert_ne!(f1, kernel_fingerprint(&file(text), &kernel(0, 26), &opts));
        let mut other = opts.clone();
        other.grid_checks = !other.grid_checks;
        assert_ne!(f1, kernel_fingerprint(&file(text), &kernel(0, 25), &other));
    }

    #[test]
    fn report_cache_moves_reports() {
        let cache = ReportCache::new(4);
        let report = race_report(TEXT);
        let key = Fingerprint(1, 2);
        cache.insert(key, report.clone());
        let start = report.span.start;
        let moved = cache.get(key, start + 7).unwrap();
        assert_eq!(
            moved.findings[0].span.start,
            report.findings[0].span.start + 7
        );
        assert_eq!(
            moved.findings[0].related[0].span.end,
            report.findings[0].related[0].span.end + 7
        );
        assert_eq!(moved.name_span.start, report.name_span.start + 7);
        assert!(cache.get(Fingerprint(1, 3), 0).is_none());
    }

    #[test]
    fn answer_cache_keeps_real_answers_only() {
        let cache = AnswerCache::new(10);
        let q = Query {
            assertions: vec![Term::Bool(true)],
            ..Default::default()
        };
        let limits = Limits::default();
        cache.insert(q.clone(), limits, Answer::Unknown("cancelled".into()));
        assert!(cache.get(&q, limits).is_none());
        cache.insert(q.clone(), limits, Answer::Unsat);
        assert_eq!(cache.get(&q, limits), Some(Answer::Unsat));
        let other = Limits {
            timeout_ms: 1,
            ..limits
        };
        assert!(cache.get(&q, other).is_none(), "limits are part of the key");
    }
}
