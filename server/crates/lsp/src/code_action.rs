//! The barrier-insertion quickfix for races: where a barrier could go (from the syntax tree),
//! and whether the re-analysed edited kernel proves the fix (no analysis logic here: the
//! verdict comes from re-running the core on the edited text, see `server.rs`).
//!
//! Candidates, in order of preference:
//! 1. between the two accesses, after the statement holding the first one, in the innermost
//!    block holding both (the accesses of one iteration);
//! 2. at the end of the innermost loop body holding both (races across iterations);
//! 3. both at once.
//!
//! Each is tried with `__syncwarp()` first when the witness threads share a warp, and only
//! verified candidates are offered: the race must be gone and no barrier divergence added, so a
//! barrier that would sit in a thread-dependent branch is never offered.
//!
//! For a divergent barrier that is the first or last statement of an `if` branch, the candidate
//! moves it just before or after the `if`; offered only if the divergence is gone and no race
//! appeared.

use crate::document::Document;
use crate::pipeline::tree_sitter::{Node, Tree};
use crate::pipeline::{parse, CancelToken, Options};
use crate::scheduler::{run_check, CheckEvent, CheckInput, Engine};
use crate::server::Msg;
use cudarace_ir::{Finding, FindingKind, KernelReport, Span, Verdict, Witness};
use futures::future::{BoxFuture, FutureExt, Shared};
use std::path::PathBuf;
use std::sync::Arc;
use tokio::sync::mpsc;
use tower_lsp_server::ls_types::{
    AnnotatedTextEdit, CodeAction, CodeActionKind, Diagnostic, DocumentChanges, OneOf,
    OptionalVersionedTextDocumentIdentifier, Range, TextDocumentEdit, TextEdit, Uri, WorkspaceEdit,
};

/// A text replacement: bytes `start..end` of the current text become `text`.
pub type Edit = (usize, usize, String);

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FixCandidate {
    pub title: String,
    /// Non-overlapping replacements in the current text, ascending.
    pub edits: Vec<Edit>,
}

fn is_loop(kind: &str) -> bool {
    matches!(
        kind,
        "for_statement" | "while_statement" | "do_statement" | "for_range_loop"
    )
}

fn contains(node: Node<'_>, span: Span) -> bool {
    node.start_byte() <= span.start as usize && span.end as usize <= node.end_byte()
}

/// Leading whitespace of the line holding `offset`.
fn indent_at(text: &str, offset: usize) -> &str {
    let line_start = text[..offset].rfind('\n').map_or(0, |i| i + 1);
    let line = &text[line_start..];
    &line[..line.len() - line.trim_start_matches([' ', '\t']).len()]
}

/// An insertion of `barrier` right after `node` (a statement): on its own line below when the
/// statement ends its line, else on the same line.
fn insert_after(text: &str, node: Node<'_>, barrier: &str) -> Edit {
    let end = node.end_byte();
    let line_end = text[end..].find('\n').map_or(text.len(), |i| end + i);
    let rest = text[end..line_end].trim();
    if (rest.is_empty() || rest.starts_with("//")) && line_end < text.len() {
        let indent = indent_at(text, node.start_byte());
        (line_end + 1, line_end + 1, format!("{indent}{barrier}\n"))
    } else {
        (end, end, format!(" {barrier}"))
    }
}

/// An insertion of `barrier` right before `node` (a statement), on its own line when the
/// statement starts its line.
fn insert_before(text: &str, node: Node<'_>, barrier: &str) -> Edit {
    let start = node.start_byte();
    let line_start = text[..start].rfind('\n').map_or(0, |i| i + 1);
    if text[line_start..start].trim().is_empty() {
        (
            line_start,
            line_start,
            format!("{}{barrier}\n", &text[line_start..start]),
        )
    } else {
        (start, start, format!("{barrier} "))
    }
}

/// The deletion of a statement: its whole line when it is alone on it.
fn delete_statement(text: &str, node: Node<'_>) -> Edit {
    let (start, end) = (node.start_byte(), node.end_byte());
    let line_start = text[..start].rfind('\n').map_or(0, |i| i + 1);
    let line_end = text[end..].find('\n').map_or(text.len(), |i| end + i);
    if text[line_start..start].trim().is_empty()
        && text[end..line_end].trim().is_empty()
        && line_end < text.len()
    {
        (line_start, line_end + 1, String::new())
    } else {
        (start, end, String::new())
    }
}

/// The indentation of the last statement (or comment) of a `{ … }` block, when it starts its
/// line.
fn last_statement_indent(text: &str, block: Node<'_>) -> Option<String> {
    let mut cursor = block.walk();
    let last = block
        .named_children(&mut cursor)
        .filter(|n| n.start_byte() > block.start_byte())
        .last()?;
    let start = last.start_byte();
    let line_start = text[..start].rfind('\n').map_or(0, |i| i + 1);
    let before = &text[line_start..start];
    (line_start > block.start_byte() && before.trim().is_empty()).then(|| before.to_string())
}

/// One level of indentation in `text`: a tab when `outer` uses tabs, else the smallest positive
/// number of leading spaces of a line (2 if no line is indented).
fn indent_unit(text: &str, outer: &str) -> String {
    if outer.contains('\t') {
        return "\t".to_string();
    }
    let width = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.len() - l.trim_start_matches(' ').len())
        .filter(|&n| n > 0)
        .min()
        .unwrap_or(2);
    " ".repeat(width)
}

/// An insertion of `barrier` as the last statement of a `{ … }` block.
fn insert_at_block_end(text: &str, block: Node<'_>, barrier: &str) -> Option<Edit> {
    if block.kind() != "compound_statement" || block.end_byte() == 0 {
        return None;
    }
    let close = block.end_byte() - 1;
    if text.as_bytes().get(close) != Some(&b'}') {
        return None;
    }
    let line_start = text[..close].rfind('\n').map_or(0, |i| i + 1);
    if text[line_start..close].trim().is_empty() && line_start > block.start_byte() {
        // `}` alone on its line: a new line before it, indented like the block's last statement
        // when that starts its own line, else one level more than the `}`.
        let indent = last_statement_indent(text, block).unwrap_or_else(|| {
            let outer = indent_at(text, close);
            format!("{outer}{}", indent_unit(text, outer))
        });
        Some((line_start, line_start, format!("{indent}{barrier}\n")))
    } else {
        Some((close, close, format!(" {barrier} ")))
    }
}

/// `__requires(precondition);` as the first statement of the kernel that holds `at`: the
/// precondition under which the checker found the race gone (`m >= gridDim.x`), stated where
/// readers and the checker see it. Offered, like the barrier fixes, only once verified.
pub fn precondition_candidate(
    text: &str,
    tree: &Tree,
    at: Span,
    precondition: &str,
) -> Option<FixCandidate> {
    if at.file.0 != 0 || at.end as usize > text.len() {
        return None;
    }
    let mut node = tree
        .root_node()
        .descendant_for_byte_range(at.start as usize, at.end as usize)?;
    while node.kind() != "function_definition" {
        node = node.parent()?;
    }
    let body = node.child_by_field_name("body")?;
    if body.kind() != "compound_statement" {
        return None;
    }
    let open = body.start_byte();
    if text.as_bytes().get(open) != Some(&b'{') {
        return None;
    }
    let mut cursor = body.walk();
    let first = body
        .named_children(&mut cursor)
        .find(|n| n.start_byte() > open)?;
    let start = first.start_byte();
    let line_start = text[..start].rfind('\n').map_or(0, |i| i + 1);
    let statement = format!("__requires({precondition});");
    let edit = if line_start > open && text[line_start..start].trim().is_empty() {
        // The first statement starts its own line: a line before it, indented like it.
        let indent = &text[line_start..start];
        (line_start, line_start, format!("{indent}{statement}\n"))
    } else {
        (open + 1, open + 1, format!(" {statement}"))
    };
    Some(FixCandidate {
        title: format!("Require `{precondition}` at the top of the kernel (verified)"),
        edits: vec![edit],
    })
}

/// Where barriers could order the two accesses of a race (spans in the current text).
pub fn race_fix_candidates(
    text: &str,
    tree: &Tree,
    a: Span,
    b: Span,
    same_warp: bool,
) -> Vec<FixCandidate> {
    if a.file.0 != 0 || b.file.0 != 0 || a.end as usize > text.len() || b.end as usize > text.len()
    {
        return vec![];
    }
    let (first, second) = if (a.start, a.end) <= (b.start, b.end) {
        (a, b)
    } else {
        (b, a)
    };
    let root = tree.root_node();
    let Some(first_node) = root.descendant_for_byte_range(first.start as usize, first.end as usize)
    else {
        return vec![];
    };
    let barriers: &[&str] = if same_warp {
        &["__syncwarp();", "__syncthreads();"]
    } else {
        &["__syncthreads();"]
    };

    // The statement after which a barrier separates the accesses: the innermost ancestor of the
    // first access that is a statement of a block which also holds the second one, later.
    let mut between = None;
    let mut node = first_node;
    while let Some(parent) = node.parent() {
        if parent.kind() == "compound_statement"
            && contains(parent, second)
            && second.start as usize >= node.end_byte()
        {
            between = Some(node);
            break;
        }
        if parent.kind() == "function_definition" {
            break;
        }
        node = parent;
    }
    // The innermost loop holding both accesses, for races across iterations.
    let mut loop_body = None;
    let mut node = first_node;
    while let Some(parent) = node.parent() {
        if is_loop(parent.kind()) && contains(parent, second) {
            loop_body = parent.child_by_field_name("body");
            break;
        }
        if parent.kind() == "function_definition" {
            break;
        }
        node = parent;
    }

    let mut out = Vec::new();
    for barrier in barriers {
        let name = barrier.trim_end_matches("();");
        if between.is_none() {
            // Both accesses in one assignment (`s[t] = s[t + 1];`): read into a temporary first.
            if let Some(edit) = split_assignment(text, first_node, first, second, barrier) {
                out.push(FixCandidate {
                    title: format!(
                        "Read into a temporary, then `{name}()` before the write (verified)"
                    ),
                    edits: vec![edit],
                });
            }
        }
        let b_ins = between.map(|s| insert_after(text, s, barrier));
        let l_ins = loop_body.and_then(|body| insert_at_block_end(text, body, barrier));
        if let Some(ins) = &b_ins {
            out.push(FixCandidate {
                title: format!("Insert `{name}()` between the racing accesses (verified)"),
                edits: vec![ins.clone()],
            });
        }
        if let Some(ins) = &l_ins {
            out.push(FixCandidate {
                title: format!("Insert `{name}()` at the end of the loop body (verified)"),
                edits: vec![ins.clone()],
            });
        }
        if let (Some(x), Some(y)) = (&b_ins, &l_ins) {
            if x.0 != y.0 {
                let mut edits = vec![x.clone(), y.clone()];
                edits.sort();
                out.push(FixCandidate {
                    title: format!("Insert `{name}()` between the accesses and at the end of the loop body (verified)"),
                    edits,
                });
            }
        }
    }
    out
}

/// Rewrites `lhs op rhs;` (one access on each side) into `auto tmp = rhs; barrier; lhs op tmp;`.
fn split_assignment(text: &str, node: Node<'_>, a: Span, b: Span, barrier: &str) -> Option<Edit> {
    let mut stmt = node;
    while stmt.kind() != "expression_statement" {
        stmt = stmt.parent()?;
        if stmt.kind() == "function_definition" {
            return None;
        }
    }
    if stmt.parent()?.kind() != "compound_statement" {
        return None;
    }
    let assign = stmt.named_child(0)?;
    if assign.kind() != "assignment_expression" {
        return None;
    }
    let left = assign.child_by_field_name("left")?;
    let right = assign.child_by_field_name("right")?;
    let op = assign.child_by_field_name("operator")?;
    let one_each = |x: Span, y: Span| contains(left, x) && contains(right, y);
    if !(one_each(a, b) || one_each(b, a)) {
        return None;
    }
    let mut tmp = "cudarace_tmp".to_string();
    let mut n = 1;
    while text.contains(&tmp) {
        n += 1;
        tmp = format!("cudarace_tmp{n}");
    }
    let indent = indent_at(text, stmt.start_byte());
    let slice = |n: Node<'_>| &text[n.start_byte()..n.end_byte()];
    let new = format!(
        "auto {tmp} = {};\n{indent}{barrier}\n{indent}{} {} {tmp};",
        slice(right),
        slice(left),
        slice(op)
    );
    Some((stmt.start_byte(), stmt.end_byte(), new))
}

/// Whether the witness threads are in the same block and the same warp (linear id / 32).
pub fn same_warp(w: &Witness) -> bool {
    let linear =
        |t: [i64; 3]| t[0] + t[1] * w.block_dim[0] + t[2] * w.block_dim[0] * w.block_dim[1];
    w.thread_a.block_idx == w.thread_b.block_idx
        && linear(w.thread_a.thread_idx).div_euclid(32)
            == linear(w.thread_b.thread_idx).div_euclid(32)
}

/// A move of a divergent barrier out of the `if` branch it starts or ends.
pub fn divergence_fix_candidates(text: &str, tree: &Tree, barrier: Span) -> Vec<FixCandidate> {
    if barrier.file.0 != 0 || barrier.end as usize > text.len() {
        return vec![];
    }
    let root = tree.root_node();
    let Some(mut stmt) =
        root.descendant_for_byte_range(barrier.start as usize, barrier.end as usize)
    else {
        return vec![];
    };
    // The statement holding the barrier call, directly in a `{ … }` block.
    while stmt.kind() != "expression_statement" {
        match stmt.parent() {
            Some(p) if p.kind() != "function_definition" => stmt = p,
            _ => return vec![],
        }
    }
    let Some(block) = stmt.parent().filter(|b| b.kind() == "compound_statement") else {
        return vec![];
    };
    let Some(if_stmt) = block.parent().filter(|p| p.kind() == "if_statement") else {
        return vec![];
    };
    let mut cursor = block.walk();
    let statements: Vec<Node<'_>> = block
        .named_children(&mut cursor)
        .filter(|n| n.kind() != "comment")
        .collect();
    let barrier_text = &text[stmt.start_byte()..stmt.end_byte()];
    let name = barrier_text.split('(').next().unwrap_or("barrier").trim();
    let delete = delete_statement(text, stmt);
    let (insert, where_) = if statements.last().map(|n| n.id()) == Some(stmt.id()) {
        (insert_after(text, if_stmt, barrier_text), "after")
    } else if statements.first().map(|n| n.id()) == Some(stmt.id()) {
        (insert_before(text, if_stmt, barrier_text), "before")
    } else {
        return vec![];
    };
    let mut edits = vec![delete, insert];
    edits.sort();
    vec![FixCandidate {
        title: format!("Move `{name}()` {where_} the thread-dependent `if` (verified)"),
        edits,
    }]
}

/// "Allow this data race here" (or barrier divergence): a `// cudarace: allow(…)` comment on a
/// new line above the line of `at` (one of the finding's places), indented like that line, with
/// the array for races and a `reason=` for the user to fill in.
pub fn allow_candidate(text: &str, at: Span, finding: &Finding) -> Option<FixCandidate> {
    if at.file.0 != 0 || at.start as usize > text.len() {
        return None;
    }
    let start = at.start as usize;
    let line_start = text[..start].rfind('\n').map_or(0, |i| i + 1);
    let indent = indent_at(text, start);
    let (what, title) = match finding.kind {
        FindingKind::DataRace => ("data-race", "Allow this data race here"),
        FindingKind::BarrierDivergence => {
            ("barrier-divergence", "Allow this barrier divergence here")
        }
    };
    let array = match (&finding.kind, &finding.array) {
        (FindingKind::DataRace, Some(a)) => format!(" array={a}"),
        _ => String::new(),
    };
    let comment =
        format!("{indent}// cudarace: allow({what}){array} reason=<why this is intended>\n");
    Some(FixCandidate {
        title: title.to_string(),
        edits: vec![(line_start, line_start, comment)],
    })
}

pub fn apply_edits(text: &str, edits: &[Edit]) -> String {
    let mut out = text.to_string();
    let mut sorted: Vec<&Edit> = edits.iter().collect();
    sorted.sort_by_key(|e| std::cmp::Reverse((e.0, e.1)));
    for (start, end, s) in sorted {
        out.replace_range(*start..*end, s);
    }
    out
}

/// Where an offset of the text before the edits is after them. A span start at an insertion
/// point moves past the inserted text, a span end stays before it; offsets inside a replaced
/// range go to its start.
fn map_offset(offset: usize, edits: &[Edit], is_start: bool) -> usize {
    let mut shift: i64 = 0;
    for (start, end, text) in edits {
        let delta = text.len() as i64 - (end - start) as i64;
        if *end < offset || (*end == offset && (is_start || start < end)) {
            shift += delta;
        } else if *start < offset && offset < *end {
            return (*start as i64 + shift).max(0) as usize;
        }
    }
    (offset as i64 + shift).max(0) as usize
}

/// Maps a span of the text before the edits to the text after them.
pub fn map_through_edits(span: Span, edits: &[Edit]) -> Span {
    if span.file.0 != 0 {
        return span;
    }
    let start = map_offset(span.start as usize, edits, true);
    let end = map_offset(span.end as usize, edits, false).max(start);
    Span::new(span.file, start, end)
}

fn pair(f: &Finding) -> (Span, Option<Span>) {
    (f.span, f.related.first().map(|r| r.span))
}

/// Whether the report of the edited kernel proves the fix: the kernel was fully decided (an
/// `unknown` verdict proves nothing), and every finding it has was already there before, other
/// than the one being fixed (same kind, same array, same places after mapping through the
/// edits). So the target is gone and nothing new appeared — no divergence from an added barrier,
/// no race from a moved one. Accesses inside replaced text cannot be matched and so count as
/// new: a rewrite is only offered when the rewritten statement is race-free.
pub fn fix_verified(
    old: &KernelReport,
    target: &Finding,
    edits: &[Edit],
    new: &KernelReport,
) -> bool {
    if new.verdict == Verdict::Unsupported
        || (new.verdict == Verdict::Unknown && old.verdict != Verdict::Unknown)
    {
        return false;
    }
    let map = |s: Span| map_through_edits(s, edits);
    let before: Vec<(FindingKind, Option<&String>, Span, Option<Span>)> = old
        .findings
        .iter()
        .filter(|f| !std::ptr::eq(*f, target) && *f != target)
        .map(|f| {
            (
                f.kind,
                f.array.as_ref(),
                map(f.span),
                f.related.first().map(|r| map(r.span)),
            )
        })
        .collect();
    new.findings.iter().all(|f| {
        let (x, y) = pair(f);
        before.iter().any(|(kind, array, p, q)| {
            *kind == f.kind
                && *array == f.array.as_ref()
                && ((*p == x && *q == y)
                    || (f.kind == FindingKind::DataRace && Some(*p) == y && *q == Some(x)))
        })
    })
}

// ---------------------------------------------------------------------------------------------
// LSP side: the code action for a candidate, and its verification in the background.

/// Resolves to true when the re-analysed edited kernel proves the fix.
pub(crate) type Verification = Shared<BoxFuture<'static, bool>>;

pub(crate) fn fix_action(
    uri: &Uri,
    doc: &Document,
    candidate: &FixCandidate,
    diagnostics: Vec<Diagnostic>,
) -> CodeAction {
    let edits: Vec<OneOf<TextEdit, AnnotatedTextEdit>> = candidate
        .edits
        .iter()
        .map(|(start, end, text)| {
            OneOf::Left(TextEdit {
                range: Range {
                    start: doc.position(*start),
                    end: doc.position(*end),
                },
                new_text: text.clone(),
            })
        })
        .collect();
    CodeAction {
        title: candidate.title.clone(),
        kind: Some(CodeActionKind::QUICKFIX),
        diagnostics: (!diagnostics.is_empty()).then_some(diagnostics),
        edit: Some(WorkspaceEdit {
            // Versioned: an editor drops the edit if the document changed since.
            document_changes: Some(DocumentChanges::Edits(vec![TextDocumentEdit {
                text_document: OptionalVersionedTextDocumentIdentifier {
                    uri: uri.clone(),
                    version: Some(doc.version),
                },
                edits,
            }])),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// A re-check of one kernel on the text with a fix applied.
pub(crate) struct VerifyJob {
    pub(crate) uri: Uri,
    pub(crate) engine: Arc<Engine>,
    pub(crate) tx: mpsc::UnboundedSender<Msg>,
    pub(crate) path: Option<PathBuf>,
    pub(crate) options: Options,
    pub(crate) key: String,
    pub(crate) old: KernelReport,
    pub(crate) finding: cudarace_ir::Finding,
    pub(crate) edits: Vec<Edit>,
    pub(crate) cancel: CancelToken,
}

impl VerifyJob {
    /// Runs in the background (answers and reports come from the shared caches where the edit
    /// did not change anything); resolves to true when the fix is proven.
    pub(crate) fn spawn(self, text: &str) -> Verification {
        let text = apply_edits(text, &self.edits);
        let handle = tokio::task::spawn_blocking(move || {
            let tree = parse(&text, None);
            let input = CheckInput {
                path: self.path,
                text: Arc::from(text.as_str()),
                tree,
                options: self.options,
            };
            let mut report = None;
            let totals = run_check(
                &self.engine,
                &input,
                Some(&self.key),
                &self.cancel,
                &mut |event| match event {
                    CheckEvent::Lowered { kernels, .. } => {
                        if let Some(r) = kernels.into_iter().find_map(|k| k.cached) {
                            report = Some(r);
                        }
                    }
                    CheckEvent::Kernel { report: r, .. } => report = Some(r),
                },
            );
            if let Some(t) = totals {
                let _ = self.tx.send(Msg::FixSolved {
                    uri: self.uri,
                    queries: t.queries_solved,
                });
            }
            match (totals, report) {
                (Some(_), Some(new)) => fix_verified(&self.old, &self.finding, &self.edits, &new),
                _ => false,
            }
        });
        async move { handle.await.unwrap_or(false) }
            .boxed()
            .shared()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnostics::tests::{race_report, span_of, TEXT};
    use crate::pipeline::parse;
    use cudarace_ir::Related;

    const LOOP: &str = "__global__ void k(int *out) {\n  __shared__ int s[64];\n  int t = threadIdx.x;\n  for (int i = 0; i < 4; i++) {\n    s[t] = i;\n    out[t] = s[63 - t];\n  }\n}\n";

    #[test]
    fn between_and_loop_end_candidates() {
        let tree = parse(LOOP, None);
        let a = span_of(LOOP, "s[t]");
        let b = span_of(LOOP, "s[63 - t]");
        let c = race_fix_candidates(LOOP, &tree, b, a, false);
        assert_eq!(c.len(), 3, "{c:#?}");
        let fixed = apply_edits(LOOP, &c[0].edits);
        assert!(
            fixed.contains("    s[t] = i;\n    __syncthreads();\n    out[t] = s[63 - t];\n"),
            "{fixed}"
        );
        let fixed = apply_edits(LOOP, &c[1].edits);
        assert!(
            fixed.contains("    out[t] = s[63 - t];\n    __syncthreads();\n  }\n"),
            "{fixed}"
        );
        let both = apply_edits(LOOP, &c[2].edits);
        assert_eq!(both.matches("__syncthreads();").count(), 2);
        assert!(c.iter().all(|c| c.title.contains("verified")));
    }

    /// The first node of `kind` in the tree, depth first.
    fn find_kind<'t>(node: Node<'t>, kind: &str) -> Option<Node<'t>> {
        if node.kind() == kind {
            return Some(node);
        }
        let mut cursor = node.walk();
        let children: Vec<Node<'t>> = node.children(&mut cursor).collect();
        children.into_iter().find_map(|c| find_kind(c, kind))
    }

    /// A barrier at the end of a loop body is indented like the body's statements (the real
    /// client showed 6 spaces in a body indented by 8).
    #[test]
    fn precondition_goes_first_in_the_kernel_body() {
        let text = "__global__ void k(float *y, int m) {\n    unsigned b = blockIdx.x;\n    y[(m + b) * 128] = 1.0f;\n}\n";
        let tree = parse(text, None);
        let c = precondition_candidate(
            text,
            &tree,
            span_of(text, "y[(m + b) * 128]"),
            "m >= gridDim.x",
        )
        .unwrap();
        let fixed = apply_edits(text, &c.edits);
        assert!(
            fixed.starts_with("__global__ void k(float *y, int m) {\n    __requires(m >= gridDim.x);\n    unsigned b"),
            "{fixed}"
        );
        assert!(c.title.contains("m >= gridDim.x"));
    }

    #[test]
    fn loop_end_barrier_is_indented_like_the_body() {
        const REDUCE: &str = "__global__ void reduce(float *g) {\n    __shared__ float sdata[256];\n    unsigned int tid = threadIdx.x;\n    for (unsigned int s = blockDim.x / 2; s > 0; s >>= 1) {\n        if (tid < s) {\n            sdata[tid] += sdata[tid + s];\n        }\n    }\n}\n";
        let tree = parse(REDUCE, None);
        let body = find_kind(tree.root_node(), "for_statement")
            .and_then(|f| f.child_by_field_name("body"))
            .unwrap();
        let edit = insert_at_block_end(REDUCE, body, "__syncthreads();").unwrap();
        let fixed = apply_edits(REDUCE, &[edit]);
        assert!(
            fixed.contains("        }\n        __syncthreads();\n    }\n}\n"),
            "{fixed}"
        );
        // Tabs, and an empty body: one level (of the file's unit) more than the `}`.
        let tabs =
            "__global__ void k() {\n\tfor (int i = 0; i < 2; i++) {\n\t\tint x = i;\n\t}\n}\n";
        let tree = parse(tabs, None);
        let body = find_kind(tree.root_node(), "for_statement")
            .and_then(|f| f.child_by_field_name("body"))
            .unwrap();
        let fixed = apply_edits(tabs, &[insert_at_block_end(tabs, body, "B;").unwrap()]);
        assert!(fixed.contains("\t\tint x = i;\n\t\tB;\n\t}\n"), "{fixed}");
        let empty = "__global__ void k() {\n    for (int i = 0; i < 2; i++) {\n    }\n}\n";
        let tree = parse(empty, None);
        let body = find_kind(tree.root_node(), "for_statement")
            .and_then(|f| f.child_by_field_name("body"))
            .unwrap();
        let fixed = apply_edits(empty, &[insert_at_block_end(empty, body, "B;").unwrap()]);
        assert!(fixed.contains("{\n        B;\n    }\n"), "{fixed}");
    }

    #[test]
    fn same_statement_reads_into_a_temporary() {
        let tree = parse(TEXT, None);
        let c = race_fix_candidates(
            TEXT,
            &tree,
            span_of(TEXT, "a[t]"),
            span_of(TEXT, "a[t + 1]"),
            false,
        );
        assert_eq!(c.len(), 1, "{c:#?}");
        let fixed = apply_edits(TEXT, &c[0].edits);
        assert!(
            fixed.contains(
                "  auto cudarace_tmp = a[t + 1];\n  __syncthreads();\n  a[t] = cudarace_tmp;\n"
            ),
            "{fixed}"
        );
        // Not when both accesses are on one side.
        let both_left = "__global__ void k(int *a) {\n  a[a[0]] = 1;\n}\n";
        let tree = parse(both_left, None);
        let c = race_fix_candidates(
            both_left,
            &tree,
            span_of(both_left, "a[a[0]]"),
            span_of(both_left, "a[0]"),
            false,
        );
        assert!(c.is_empty(), "{c:#?}");
    }

    #[test]
    fn warp_candidates_come_first_when_threads_share_a_warp() {
        let tree = parse(LOOP, None);
        let c = race_fix_candidates(
            LOOP,
            &tree,
            span_of(LOOP, "s[t]"),
            span_of(LOOP, "s[63 - t]"),
            true,
        );
        assert!(c[0].title.contains("__syncwarp()"));
        assert!(c.iter().any(|c| c.title.contains("__syncthreads()")));
        let mut w = race_report(TEXT).findings[0].witness.clone();
        w.block_dim = [64, 1, 1];
        w.thread_a.thread_idx = [3, 0, 0];
        w.thread_b.thread_idx = [31, 0, 0];
        assert!(same_warp(&w));
        w.thread_b.thread_idx = [32, 0, 0];
        assert!(!same_warp(&w));
    }

    #[test]
    fn verification_criterion() {
        let old = race_report(TEXT);
        let target = old.findings[0].clone();
        let inserts = vec![(0usize, 0usize, "// x\n".to_string())];
        let mut new = old.clone();
        crate::cache::shift_report(&mut new, 0, 5);
        assert!(
            !fix_verified(&old, &target, &inserts, &new),
            "the same race, moved, remains"
        );
        new.findings.clear();
        new.verdict = Verdict::RaceFree;
        assert!(fix_verified(&old, &target, &inserts, &new));
        let mut divergent = new.clone();
        divergent.findings.push(Finding {
            kind: FindingKind::BarrierDivergence,
            array: None,
            barrier: Some(cudarace_ir::BarrierScope::Block),
            condition: None,
            precondition: None,
            related: vec![Related {
                span: span_of(TEXT, "t"),
                message: "condition".into(),
            }],
            ..target.clone()
        });
        assert!(
            !fix_verified(&old, &target, &inserts, &divergent),
            "divergence added"
        );
        let mut unknown = new.clone();
        unknown.verdict = Verdict::Unknown;
        assert!(
            !fix_verified(&old, &target, &inserts, &unknown),
            "unknown proves nothing"
        );
    }

    #[test]
    fn a_race_between_rewritten_accesses_is_new() {
        // The statement holding both accesses is replaced; the edited kernel still races, now
        // between accesses inside the replacement: not the same places, so not verified.
        let old = race_report(TEXT);
        let target = old.findings[0].clone();
        let stmt = span_of(TEXT, "a[t] = a[t + 1];");
        let replacement = "auto v = a[t + 1];\n  __syncwarp();\n  a[t] = v;";
        let edits = vec![(
            stmt.start as usize,
            stmt.end as usize,
            replacement.to_string(),
        )];
        let edited = apply_edits(TEXT, &edits);
        let mut new = old.clone();
        new.findings[0].span = span_of(&edited, "a[t + 1]");
        new.findings[0].related[0].span = span_of(&edited, "a[t] = v");
        new.findings[0].related[0].span.end = new.findings[0].related[0].span.start + 4;
        assert!(!fix_verified(&old, &target, &edits, &new));
        new.findings.clear();
        new.verdict = Verdict::RaceFree;
        assert!(fix_verified(&old, &target, &edits, &new));
    }

    #[test]
    fn allow_comment_goes_above_the_line_with_its_indentation() {
        let finding = race_report(TEXT).findings[0].clone();
        let at = span_of(TEXT, "a[t + 1]");
        let c = allow_candidate(TEXT, at, &finding).unwrap();
        assert_eq!(c.title, "Allow this data race here");
        let allowed = apply_edits(TEXT, &c.edits);
        assert!(
            allowed.contains("  int t = threadIdx.x;\n  // cudarace: allow(data-race) array=a reason=<why this is intended>\n  a[t] = a[t + 1];\n"),
            "{allowed}"
        );
        // The inserted comment is a valid suppression covering the access's line.
        let (d, n) = cudarace_analysis::suppress::scan(cudarace_ir::FileId(0), &allowed);
        assert!(n.is_empty());
        assert_eq!(d[0].target_line, 4);
        let tabbed = "__global__ void k(int *a) {\n\tif (1) {\n\t\t__syncthreads();\n\t}\n}\n";
        let mut divergence = finding;
        divergence.kind = FindingKind::BarrierDivergence;
        let c = allow_candidate(tabbed, span_of(tabbed, "__syncthreads()"), &divergence).unwrap();
        assert!(apply_edits(tabbed, &c.edits)
            .contains("\t\t// cudarace: allow(barrier-divergence) reason=<why this is intended>\n\t\t__syncthreads();"));
    }

    #[test]
    fn spans_through_edits() {
        let f0 = cudarace_ir::FileId(0);
        let ins = vec![(10usize, 10usize, "abc".to_string())];
        assert_eq!(
            map_through_edits(Span::new(f0, 10, 12), &ins),
            Span::new(f0, 13, 15)
        );
        assert_eq!(
            map_through_edits(Span::new(f0, 4, 10), &ins),
            Span::new(f0, 4, 10)
        );
        assert_eq!(
            map_through_edits(Span::new(f0, 4, 11), &ins),
            Span::new(f0, 4, 14)
        );
        // A deletion before, and a replacement around, a span.
        let del = vec![
            (2usize, 5usize, String::new()),
            (20usize, 30usize, "x".to_string()),
        ];
        assert_eq!(
            map_through_edits(Span::new(f0, 5, 8), &del),
            Span::new(f0, 2, 5)
        );
        assert_eq!(
            map_through_edits(Span::new(f0, 31, 32), &del),
            Span::new(f0, 19, 20)
        );
        assert_eq!(
            map_through_edits(Span::new(f0, 22, 25), &del),
            Span::new(f0, 17, 17)
        );
        assert_eq!(
            apply_edits("0123456789", &[(2, 5, String::new()), (7, 7, "x".into())]),
            "0156x789"
        );
    }

    const DIVERGENT: &str = "__global__ void k(int *out) {\n  __shared__ int s[64];\n  int t = threadIdx.x;\n  if (t < 32) {\n    s[t] = t;\n    __syncthreads();\n  }\n  out[t] = s[63 - t];\n}\n";

    #[test]
    fn divergent_barrier_moves_out_of_its_branch() {
        let tree = parse(DIVERGENT, None);
        let c = divergence_fix_candidates(DIVERGENT, &tree, span_of(DIVERGENT, "__syncthreads()"));
        assert_eq!(c.len(), 1, "{c:#?}");
        let fixed = apply_edits(DIVERGENT, &c[0].edits);
        assert!(
            fixed.contains("  if (t < 32) {\n    s[t] = t;\n  }\n  __syncthreads();\n  out[t]"),
            "{fixed}"
        );
        assert!(c[0].title.contains("after") && c[0].title.contains("verified"));
        // First statement of the branch: moved before the `if`.
        let first = DIVERGENT.replace(
            "    s[t] = t;\n    __syncthreads();\n",
            "    __syncthreads();\n    s[t] = t;\n",
        );
        let tree = parse(&first, None);
        let c = divergence_fix_candidates(&first, &tree, span_of(&first, "__syncthreads()"));
        let fixed = apply_edits(&first, &c[0].edits);
        assert!(
            fixed.contains("  __syncthreads();\n  if (t < 32) {\n    s[t] = t;\n  }\n"),
            "{fixed}"
        );
        // In the middle of a branch: no candidate (splitting the `if` could change what it does).
        let middle = DIVERGENT.replace(
            "    __syncthreads();\n",
            "    __syncthreads();\n    s[t] = 0;\n",
        );
        let tree = parse(&middle, None);
        assert!(
            divergence_fix_candidates(&middle, &tree, span_of(&middle, "__syncthreads()"))
                .is_empty()
        );
    }
}
