//! Comma expressions in parentheses whose first operand is an assignment:
//! `y[i] = (f = y[i + 1], f + a);`.
//!
//! tree-sitter-cuda has a rule for a parenthesized assignment, `(x = y)`, that wins over the comma
//! expression as soon as the parser sees `( x =`, so `(f = e, r)` becomes an ERROR node. The same
//! text without the parentheses, as an expression statement (`f = e, r;`), is read right. So the
//! text between the parentheses is parsed again alone, at the same byte offsets (the rest of the
//! file is outside the parser's included ranges), and the lowering uses that comma expression in
//! place of the broken one. Nothing in the file is rewritten: spans stay valid, and where the
//! re-parse does not give a clean comma expression the syntax error stays.

use tree_sitter::{Node, Parser, Point, Range, Tree};

/// Nested broken parentheses re-parsed at most this deep (each level is one small parse).
const MAX_NESTING: u32 = 8;
/// What makes the re-parsed text an expression statement; put in the bytes before the `(`.
const HEAD: &[u8] = b"void _(){";

/// The row and column of byte `at` (a tree-sitter point).
fn point_of(text: &[u8], at: usize) -> Point {
    let before = &text[..at.min(text.len())];
    let row = before.iter().filter(|&&b| b == b'\n').count();
    let column = match before.iter().rposition(|&b| b == b'\n') {
        Some(i) => at - i - 1,
        None => at,
    };
    Point { row, column }
}

/// The re-parse of the broken parenthesized expression `paren` (of the file text `text`), when
/// it gives a comma expression without syntax errors; [`comma_node`] finds it in the tree.
pub(crate) fn reparse(paren: Node, text: &str) -> Option<Tree> {
    reparse_at(paren, text, 0)
}

fn reparse_at(paren: Node, text: &str, depth: u32) -> Option<Tree> {
    if depth > MAX_NESTING || paren.kind() != "parenthesized_expression" || !paren.has_error() {
        return None;
    }
    let b = text.as_bytes();
    let (s, e) = (paren.start_byte(), paren.end_byte());
    if s < HEAD.len() || e < s + 2 || e > b.len() || b[s] != b'(' || b[e - 1] != b')' {
        return None;
    }
    // `void _(){` right before the `(`, the inner text, `;}` in place of the `)`.
    let mut buf = b[..e].to_vec();
    buf.push(b'}');
    let head = s + 1 - HEAD.len();
    buf[head..=s].copy_from_slice(HEAD);
    buf[e - 1] = b';';
    let mut parser = Parser::new();
    parser
        .set_language(&tree_sitter_cuda::LANGUAGE.into())
        .ok()?;
    let range = Range {
        start_byte: head,
        end_byte: e + 1,
        start_point: point_of(b, head),
        end_point: point_of(b, e),
    };
    parser.set_included_ranges(&[range]).ok()?;
    let tree = parser.parse(&buf, None)?;
    let node = comma_node(&tree, paren, text)?;
    all_errors_fixable_at(node, text, depth + 1).then_some(tree)
}

/// The comma expression spanning the inside of `paren` in its re-parse `tree`.
pub(crate) fn comma_node<'t>(tree: &'t Tree, paren: Node, text: &str) -> Option<Node<'t>> {
    let inner = text.get(paren.start_byte() + 1..paren.end_byte() - 1)?;
    let start = paren.start_byte() + 1 + (inner.len() - inner.trim_start().len());
    let end = paren.end_byte() - 1 - (inner.len() - inner.trim_end().len());
    let mut n = tree
        .root_node()
        .named_descendant_for_byte_range(start, end)?;
    while n.kind() != "comma_expression" || n.start_byte() != start || n.end_byte() != end {
        n = n.parent()?;
        if n.start_byte() < start || n.end_byte() > end {
            return None;
        }
    }
    (n.parent()?.kind() == "expression_statement").then_some(n)
}

/// Whether every syntax error in `n` lies in a broken comma expression that [`reparse`] mends
/// (so `n` is to be lowered as if it had none). True when `n` has no error at all.
pub(crate) fn all_errors_fixable(n: Node, text: &str) -> bool {
    all_errors_fixable_at(n, text, 0)
}

fn all_errors_fixable_at(n: Node, text: &str, depth: u32) -> bool {
    if !n.has_error() {
        return true;
    }
    let mut stack = vec![n];
    while let Some(n) = stack.pop() {
        if n.is_error() || n.is_missing() {
            return false;
        }
        if n.kind() == "parenthesized_expression" && reparse_at(n, text, depth).is_some() {
            continue;
        }
        let mut c = n.walk();
        stack.extend(n.children(&mut c).filter(|ch| ch.has_error()));
    }
    true
}

/// Whether `n` has a syntax error that [`reparse`] does not mend.
pub(crate) fn has_real_error(n: Node, text: &str) -> bool {
    n.has_error() && !all_errors_fixable(n, text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn first_paren(tree: &Tree) -> Option<Node<'_>> {
        let mut stack = vec![tree.root_node()];
        while let Some(n) = stack.pop() {
            if n.kind() == "parenthesized_expression" && n.has_error() {
                return Some(n);
            }
            let mut c = n.walk();
            stack.extend(n.children(&mut c));
        }
        None
    }

    #[test]
    fn assignment_then_comma_is_reparsed_at_the_same_offsets() {
        let src =
            "__global__ void k(float *y, float a) {\n  float f;\n  y[0] = (f = y[1], f + a);\n}\n";
        let tree = crate::parse::parse(src, None);
        let paren = first_paren(&tree).expect("the grammar still misreads this");
        let fixed = reparse(paren, src).expect("re-parsed");
        let comma = comma_node(&fixed, paren, src).unwrap();
        assert_eq!(&src[comma.byte_range()], "f = y[1], f + a");
        let left = comma.child_by_field_name("left").unwrap();
        assert_eq!(left.kind(), "assignment_expression");
        assert_eq!(&src[left.byte_range()], "f = y[1]");
        assert!(!has_real_error(tree.root_node(), src));
    }

    #[test]
    fn other_errors_stay() {
        let src = "__global__ void k(float *y) {\n  float f;\n  y[0] = (f = y[1], f +);\n}\n";
        let tree = crate::parse::parse(src, None);
        assert!(has_real_error(tree.root_node(), src));
        // Too close to the start of the text for the statement head: no re-parse, no panic.
        let src = "(f=1,2)";
        let tree = crate::parse::parse(src, None);
        if let Some(p) = first_paren(&tree) {
            assert!(reparse(p, src).is_none());
        }
    }
}
