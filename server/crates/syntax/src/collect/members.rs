//! How the file uses members by name (`x.f`, `x->f`), over every function of every file: which
//! member names are used as pointers, and which are changed.
//!
//! The lowering uses it for objects whose type it does not see (a kernel parameter of a struct
//! from a missing header, `param.ids[i]`, see `lower/member_pointers.rs`): a member used as a
//! pointer somewhere is a pointer there, and a member the file never changes keeps the
//! pointer the host gave it.

use crate::consteval::{list_items, node_text};
use std::collections::{HashMap, HashSet};
use tree_sitter::Node;

#[derive(Default)]
pub(crate) struct MemberUses {
    /// Member names subscripted (`x.f[i]`), dereferenced (`*x.f`, `*(x.f + i)`, `x.f->g`) or
    /// initializing a pointer variable (`T *p = x.f + k;`), also through casts.
    pub pointer: HashSet<String>,
    /// Member names assigned (`x.f = …`, `x->f += …`, `x.f++`) or whose address is taken
    /// (`&x.f`, which may be written through).
    pub written: HashSet<String>,
}

/// The member name of `x.f` / `x->f`, looking through parentheses.
fn member_name(n: Node, text: &str) -> Option<String> {
    let n = strip_parens(n);
    (n.kind() == "field_expression")
        .then(|| n.child_by_field_name("field"))
        .flatten()
        .map(|f| node_text(f, text).to_string())
}

fn strip_parens(mut n: Node) -> Node {
    for _ in 0..16 {
        match n.kind() {
            "parenthesized_expression" => match n.named_child(0) {
                Some(x) => n = x,
                None => break,
            },
            _ => break,
        }
    }
    n
}

/// The members used as pointer values in `n`: the expression itself, through parentheses,
/// casts (`(T *)x.f`, `reinterpret_cast<T *>(x.f)`) and pointer arithmetic (`x.f + k`).
fn pointer_operands(n: Node, text: &str, out: &mut HashSet<String>, depth: u32) {
    if depth > 8 {
        return;
    }
    let n = strip_parens(n);
    match n.kind() {
        "field_expression" => {
            if let Some(f) = member_name(n, text) {
                out.insert(f);
            }
        }
        "cast_expression" => {
            if let Some(v) = n.child_by_field_name("value") {
                pointer_operands(v, text, out, depth + 1);
            }
        }
        "call_expression" => {
            let is_cast = n
                .child_by_field_name("function")
                .filter(|f| f.kind() == "template_function")
                .and_then(|f| f.child_by_field_name("name"))
                .is_some_and(|f| {
                    matches!(
                        node_text(f, text),
                        "reinterpret_cast" | "static_cast" | "const_cast"
                    )
                });
            if is_cast {
                if let Some(a) = n
                    .child_by_field_name("arguments")
                    .and_then(|a| a.named_child(0))
                {
                    pointer_operands(a, text, out, depth + 1);
                }
            }
        }
        "binary_expression" => {
            let op = n
                .child_by_field_name("operator")
                .map(|o| node_text(o, text))
                .unwrap_or_default();
            let left = n.child_by_field_name("left");
            if op == "+" || op == "-" {
                if let Some(l) = left {
                    pointer_operands(l, text, out, depth + 1);
                }
            }
            // `k + x.f`; but in `x.f + x.n` the pointer is the left one.
            let left_member = left.is_some_and(|l| strip_parens(l).kind() == "field_expression");
            if op == "+" && !left_member {
                if let Some(r) = n.child_by_field_name("right") {
                    pointer_operands(r, text, out, depth + 1);
                }
            }
        }
        _ => {}
    }
}

/// The positions of reference parameters (`T *&p`, `float &x`) of the functions defined in the
/// files, by name (any overload).
fn reference_params(roots: &[Node], texts: &[std::sync::Arc<str>]) -> HashMap<String, Vec<usize>> {
    let mut out: HashMap<String, Vec<usize>> = HashMap::new();
    for (root, text) in roots.iter().zip(texts) {
        let mut stack = vec![*root];
        while let Some(n) = stack.pop() {
            if n.kind() == "function_declarator" {
                let name = n.child_by_field_name("declarator").map(|d| {
                    node_text(d, text)
                        .rsplit("::")
                        .next()
                        .unwrap_or("")
                        .to_string()
                });
                if let (Some(name), Some(params)) = (name, n.child_by_field_name("parameters")) {
                    for (i, p) in list_items(params).into_iter().enumerate() {
                        let by_ref = p.child_by_field_name("declarator").is_some_and(|d| {
                            node_text(d, text).trim_start().starts_with('&')
                                || d.kind() == "reference_declarator"
                                || node_text(d, text).contains("*&")
                        });
                        if by_ref {
                            out.entry(name.clone()).or_default().push(i);
                        }
                    }
                }
            }
            let mut c = n.walk();
            stack.extend(n.named_children(&mut c));
        }
    }
    out
}

pub(crate) fn member_uses(roots: &[Node], texts: &[std::sync::Arc<str>]) -> MemberUses {
    let mut uses = MemberUses::default();
    let by_ref = reference_params(roots, texts);
    for (root, text) in roots.iter().zip(texts) {
        let text: &str = text;
        // (node, inside a method: a class body or an out-of-line `C::m` definition, where a
        // bare `f = …` assigns a member).
        let mut stack = vec![(*root, false)];
        let mut count = 0u32;
        while let Some((n, in_method)) = stack.pop() {
            count += 1;
            if count > 2_000_000 {
                break;
            }
            match n.kind() {
                "subscript_expression" => {
                    if let Some(a) = n.child_by_field_name("argument") {
                        pointer_operands(a, text, &mut uses.pointer, 0);
                    }
                }
                "pointer_expression" => {
                    let op = n
                        .child_by_field_name("operator")
                        .map(|o| node_text(o, text))
                        .unwrap_or_default();
                    if let Some(a) = n.child_by_field_name("argument") {
                        if op == "*" {
                            pointer_operands(a, text, &mut uses.pointer, 0);
                        } else if let Some(f) = member_name(a, text) {
                            uses.written.insert(f);
                        }
                    }
                }
                "field_expression" => {
                    let arrow = n
                        .child_by_field_name("operator")
                        .is_some_and(|o| node_text(o, text) == "->");
                    if let (true, Some(a)) = (arrow, n.child_by_field_name("argument")) {
                        pointer_operands(a, text, &mut uses.pointer, 0);
                    }
                }
                // A member passed to a reference parameter of a function of the file
                // (`swap(p.src, p.dst)`) may be re-pointed there.
                "call_expression" => {
                    let callee = n.child_by_field_name("function").map(|f| {
                        node_text(f, text)
                            .rsplit("::")
                            .next()
                            .unwrap_or("")
                            .to_string()
                    });
                    let refs = callee.and_then(|c| by_ref.get(c.split('<').next().unwrap_or("")));
                    if let (Some(refs), Some(args)) = (refs, n.child_by_field_name("arguments")) {
                        for (i, a) in list_items(args).into_iter().enumerate() {
                            if refs.contains(&i) {
                                if let Some(f) = member_name(a, text) {
                                    uses.written.insert(f);
                                }
                            }
                        }
                    }
                }
                // `T *&r = x.f;` / `auto &r = x.f;`: written through the reference.
                "init_declarator"
                    if n.child_by_field_name("declarator")
                        .is_some_and(|d| node_text(d, text).contains('&')) =>
                {
                    if let Some(f) = n
                        .child_by_field_name("value")
                        .and_then(|v| member_name(v, text))
                    {
                        uses.written.insert(f);
                    }
                }
                "init_declarator" => {
                    let is_pointer = n
                        .child_by_field_name("declarator")
                        .is_some_and(|d| d.kind() == "pointer_declarator");
                    if let (true, Some(v)) = (is_pointer, n.child_by_field_name("value")) {
                        pointer_operands(v, text, &mut uses.pointer, 0);
                    }
                }
                "assignment_expression" | "update_expression" => {
                    let target = n
                        .child_by_field_name("left")
                        .or_else(|| n.child_by_field_name("argument"));
                    if let Some(t) = target {
                        if let Some(f) = member_name(t, text) {
                            uses.written.insert(f);
                        } else if in_method && strip_parens(t).kind() == "identifier" {
                            uses.written
                                .insert(node_text(strip_parens(t), text).to_string());
                        }
                    }
                }
                _ => {}
            }
            let in_method = in_method
                || n.kind() == "field_declaration_list"
                || (n.kind() == "function_definition"
                    && n.child_by_field_name("declarator")
                        .is_some_and(|d| node_text(d, text).contains("::")));
            let mut c = n.walk();
            for ch in n.named_children(&mut c) {
                stack.push((ch, in_method));
            }
        }
    }
    uses
}
