//! Comparisons that the C++ grammar reads as template arguments.
//!
//! In `x >= 0 && x < w && y >= 0 && y < h` tree-sitter-cuda (a C++ grammar) reads `x < w && y >`
//! as the template name `x` with an argument list, splits `>=` into `>` and `=`, and the bounds
//! check becomes an assignment to a template-id: the lowering then sees an unmodelled write and
//! the kernel ends `unknown`. A variable is never a template, so when the name of such a
//! template-id is declared as a variable or parameter of the enclosing function, the text is
//! changed to `(x)< w` (the parentheses take the places of the spaces around the name, so every
//! byte offset stays the same) and parsed again. Names written without a space on both sides
//! (`x<w`) are left alone: their kernels stay `unknown`, never wrongly clean.

use std::collections::{HashMap, HashSet};
use tree_sitter::{Node, Tree};

/// The repaired text when some comparison was misread (`None` when nothing changed).
pub(crate) fn repair(tree: &Tree, text: &str) -> Option<String> {
    let mut bytes = text.as_bytes().to_vec();
    let mut changed = false;
    // Declared names per function, computed once (a long kernel may have many bounds checks).
    let mut declared: HashMap<usize, HashSet<&str>> = HashMap::new();
    let mut stack = vec![tree.root_node()];
    while let Some(n) = stack.pop() {
        if n.kind() == "template_function" {
            if let Some((open, close)) = misread_comparison(n, text, &mut declared) {
                bytes[open] = b'(';
                bytes[close] = b')';
                changed = true;
            }
        }
        let mut c = n.walk();
        stack.extend(n.children(&mut c));
    }
    if !changed {
        return None;
    }
    String::from_utf8(bytes).ok()
}

/// For a template-id `name<…>` whose name is a variable of the enclosing function and is
/// written ` name <`: the byte offsets of the spaces before and after the name.
fn misread_comparison<'t>(
    n: Node,
    text: &'t str,
    declared: &mut HashMap<usize, HashSet<&'t str>>,
) -> Option<(usize, usize)> {
    let name = n.child_by_field_name("name")?;
    if name.kind() != "identifier" {
        return None;
    }
    let b = text.as_bytes();
    let (s, e) = (name.start_byte(), name.end_byte());
    let is_blank = |i: usize| matches!(b.get(i), Some(b' ' | b'\t'));
    if s == 0 || !is_blank(s - 1) || !is_blank(e) {
        return None;
    }
    let next = text.get(e..)?.trim_start_matches([' ', '\t']);
    if !next.starts_with('<') || next.starts_with("<<") || next.starts_with("<=") {
        return None;
    }
    let func = enclosing_function(n)?;
    let ident = text.get(s..e)?;
    declared
        .entry(func.id())
        .or_insert_with(|| declared_variables(func, text))
        .contains(ident)
        .then_some((s - 1, e))
}

fn enclosing_function(n: Node) -> Option<Node> {
    let mut cur = n.parent();
    while let Some(p) = cur {
        if p.kind() == "function_definition" {
            return Some(p);
        }
        cur = p.parent();
    }
    None
}

/// Names declared as parameters or variables anywhere in `func`.
fn declared_variables<'t>(func: Node, text: &'t str) -> HashSet<&'t str> {
    let mut out = HashSet::new();
    let mut stack = vec![func];
    while let Some(n) = stack.pop() {
        if matches!(
            n.kind(),
            "parameter_declaration"
                | "optional_parameter_declaration"
                | "declaration"
                | "init_declarator"
        ) {
            let mut c = n.walk();
            for d in n.children_by_field_name("declarator", &mut c) {
                if let Some(id) = declared_name(d) {
                    if let Some(t) = text.get(id.start_byte()..id.end_byte()) {
                        out.insert(t);
                    }
                }
            }
        }
        let mut c = n.walk();
        stack.extend(n.children(&mut c));
    }
    out
}

/// The identifier a declarator declares (through pointers, references, arrays and initializers).
fn declared_name(mut d: Node) -> Option<Node> {
    for _ in 0..32 {
        match d.kind() {
            "identifier" => return Some(d),
            "pointer_declarator"
            | "reference_declarator"
            | "array_declarator"
            | "init_declarator" => {
                d = d
                    .child_by_field_name("declarator")
                    .or_else(|| d.named_child(0))?
            }
            _ => return None,
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixed(src: &str) -> Option<String> {
        repair(&crate::parse::parse(src, None), src)
    }

    #[test]
    fn bounds_checks_of_variables_are_comparisons() {
        // (In an `if` condition the grammar gets it right; in parentheses it does not.)
        let src = "__global__ void k(float *a, int w, int h) {\n  int x = threadIdx.x, y = 0;\n  a[x] = (x >= 0 && x < w && y >= 0 && y < h) ? 1 : 0;\n}\n";
        let out = fixed(src).expect("the misread comparison is repaired");
        assert_eq!(out.len(), src.len());
        assert!(out.contains("&&(x)< w"), "{out}");
        assert!(!crate::parse::parse(&out, None)
            .root_node()
            .to_sexp()
            .contains("template_function"));
    }

    #[test]
    fn templates_and_unspaced_comparisons_are_left_alone() {
        // `max` is not a variable here: a real template call.
        assert_eq!(
            fixed("__device__ int f(int a) { return max <int> (a, 1); }\n"),
            None
        );
        // No room for the parentheses without moving offsets.
        assert_eq!(
            fixed("__global__ void k(int w) { int x = 0; bool b = x >= 0 && x<w && x >= 1; }\n"),
            None
        );
        assert_eq!(fixed("__global__ void k(int *a) { a[0] = 1 < 2; }\n"), None);
    }
}
