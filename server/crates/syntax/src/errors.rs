//! Syntax errors (tree-sitter ERROR and MISSING nodes) for reporting.

use cudarace_ir::{FileId, Span, SyntaxError};
use tree_sitter::{Node, Tree};

const MAX_ERRORS: usize = 200;

pub(crate) fn collect(tree: &Tree, text: &str, file: FileId, out: &mut Vec<SyntaxError>) {
    if !tree.root_node().has_error() {
        return;
    }
    let mut stack: Vec<Node> = vec![tree.root_node()];
    while let Some(n) = stack.pop() {
        if out.len() >= MAX_ERRORS {
            return;
        }
        if n.is_missing() {
            out.push(SyntaxError {
                span: Span::new(file, n.start_byte(), n.end_byte()),
                message: format!("syntax error: missing `{}`", n.kind()),
            });
            continue;
        }
        if n.is_error() {
            let snippet: String = text
                .get(n.byte_range())
                .unwrap_or("")
                .chars()
                .take(40)
                .collect();
            let snippet = snippet.split_whitespace().collect::<Vec<_>>().join(" ");
            let message = if snippet.is_empty() {
                "syntax error".to_string()
            } else {
                format!("syntax error near `{snippet}`")
            };
            out.push(SyntaxError {
                span: Span::new(file, n.start_byte(), n.end_byte()),
                message,
            });
            continue;
        }
        if !n.has_error() {
            continue;
        }
        // `(f = e, r)`: misread by the grammar, mended by the lowering (commas.rs).
        if n.kind() == "parenthesized_expression" && crate::commas::reparse(n, text).is_some() {
            continue;
        }
        let mut c = n.walk();
        let children: Vec<Node> = n.children(&mut c).collect();
        for ch in children.into_iter().rev() {
            stack.push(ch);
        }
    }
}
