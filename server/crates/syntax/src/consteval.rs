//! Constant evaluation over syntax (used for `#if`, launch configurations, array sizes seen from
//! host code). Macros are expanded through their text.

use crate::preprocess::{Macro, MacroTable};
use crate::text::{parse_float_literal, parse_int_literal};
use tree_sitter::Node;

const MAX_DEPTH: u32 = 64;

/// Names the evaluator can look up besides macros (enum constants, `const` locals, …).
pub(crate) trait ConstEnv {
    fn macros(&self) -> &MacroTable;
    fn ident(&self, _name: &str, _depth: u32) -> Option<i64> {
        None
    }
}

pub(crate) struct MacroEnv<'a>(pub &'a MacroTable);
impl ConstEnv for MacroEnv<'_> {
    fn macros(&self) -> &MacroTable {
        self.0
    }
}

/// The expression node of a parsed snippet (see [`crate::parse::parse_snippet_body`]), if the
/// snippet is exactly one expression.
pub(crate) fn snippet_expr(tree: &tree_sitter::Tree) -> Option<Node<'_>> {
    let root = tree.root_node();
    let f = root.named_child(0)?;
    if f.kind() != "function_definition" || root.named_child_count() != 1 {
        return None;
    }
    let body = f.child_by_field_name("body")?;
    let mut stmts = Vec::new();
    let mut c = body.walk();
    for ch in body.named_children(&mut c) {
        if ch.kind() != "comment" {
            stmts.push(ch);
        }
    }
    // The wrapper adds a trailing `;`, which parses as an empty expression statement when the
    // body already ended with one.
    let stmts: Vec<_> = stmts
        .into_iter()
        .filter(|s| !(s.kind() == "expression_statement" && s.named_child_count() == 0))
        .collect();
    if stmts.len() != 1 || stmts[0].kind() != "expression_statement" || stmts[0].has_error() {
        return None;
    }
    stmts[0].named_child(0)
}

pub(crate) fn eval_text(text: &str, env: &dyn ConstEnv, depth: u32) -> Option<i64> {
    if depth > MAX_DEPTH || text.len() > 10_000 {
        return None;
    }
    let (src, tree) = crate::parse::parse_snippet_body(text);
    let e = snippet_expr(&tree)?;
    eval(e, &src, env, depth + 1)
}

fn eval_macro(m: &Macro, args: Option<Vec<String>>, env: &dyn ConstEnv, depth: u32) -> Option<i64> {
    let text = m.expand(args.as_deref())?;
    eval_text(&text, env, depth + 1)
}

pub(crate) fn node_text<'a>(n: Node, text: &'a str) -> &'a str {
    text.get(n.byte_range()).unwrap_or("")
}

/// The named children of `n` (the items of an argument, parameter or initializer list, the
/// statements of a block), comments left out.
pub(crate) fn list_items(n: Node) -> Vec<Node> {
    let mut c = n.walk();
    let v: Vec<Node> = n
        .named_children(&mut c)
        .filter(|x| x.kind() != "comment")
        .collect();
    v
}

pub(crate) fn eval(n: Node, text: &str, env: &dyn ConstEnv, depth: u32) -> Option<i64> {
    if depth > MAX_DEPTH {
        return None;
    }
    let d = depth + 1;
    match n.kind() {
        "number_literal" => {
            let t = node_text(n, text);
            parse_int_literal(t).or_else(|| parse_float_literal(t).map(|f| f as i64))
        }
        "char_literal" => {
            let t = node_text(n, text);
            let inner = t.strip_prefix('\'')?.strip_suffix('\'')?;
            let mut cs = inner.chars();
            let c = cs.next()?;
            if cs.next().is_none() {
                Some(c as i64)
            } else {
                None
            }
        }
        "true" => Some(1),
        "false" => Some(0),
        "parenthesized_expression" => eval(n.named_child(0)?, text, env, d),
        "identifier" => {
            let name = node_text(n, text);
            if let Some(m) = env.macros().get(name) {
                if m.params.is_none() {
                    return eval_macro(m, None, env, d);
                }
            }
            env.ident(name, d)
        }
        "unary_expression" => {
            let v = eval(n.child_by_field_name("argument")?, text, env, d)?;
            match node_text(n.child_by_field_name("operator")?, text) {
                "-" => Some(v.wrapping_neg()),
                "+" => Some(v),
                "!" | "not" => Some((v == 0) as i64),
                "~" | "compl" => Some(!v),
                _ => None,
            }
        }
        "binary_expression" => {
            let op = node_text(n.child_by_field_name("operator")?, text);
            let a = eval(n.child_by_field_name("left")?, text, env, d)?;
            if op == "&&" && a == 0 {
                return Some(0);
            }
            if op == "||" && a != 0 {
                return Some(1);
            }
            let b = eval(n.child_by_field_name("right")?, text, env, d)?;
            binop(op, a, b)
        }
        "conditional_expression" => {
            let c = eval(n.child_by_field_name("condition")?, text, env, d)?;
            if c != 0 {
                eval(n.child_by_field_name("consequence")?, text, env, d)
            } else {
                eval(n.child_by_field_name("alternative")?, text, env, d)
            }
        }
        "cast_expression" => eval(n.child_by_field_name("value")?, text, env, d),
        "sizeof_expression" => {
            let t = n.child_by_field_name("type")?;
            crate::typenames::sizeof_type(node_text(t, text))
        }
        "call_expression" => {
            let f = n.child_by_field_name("function")?;
            let args = n.child_by_field_name("arguments")?;
            let arg_nodes: Vec<Node> = list_items(args);
            match f.kind() {
                "identifier" => {
                    let name = node_text(f, text);
                    if let Some(m) = env.macros().get(name) {
                        if m.params.is_some() {
                            let a = arg_nodes
                                .iter()
                                .map(|a| node_text(*a, text).to_string())
                                .collect();
                            return eval_macro(m, Some(a), env, d);
                        }
                    }
                    let vals: Option<Vec<i64>> =
                        arg_nodes.iter().map(|a| eval(*a, text, env, d)).collect();
                    let vals = vals?;
                    match (name, vals.as_slice()) {
                        ("min", [a, b]) => Some(*a.min(b)),
                        ("max", [a, b]) => Some(*a.max(b)),
                        ("abs", [a]) => Some(a.abs()),
                        _ => None,
                    }
                }
                // static_cast<T>(x) and friends.
                "template_function" => {
                    let name = node_text(f.child_by_field_name("name")?, text);
                    if name.ends_with("_cast") && arg_nodes.len() == 1 {
                        eval(arg_nodes[0], text, env, d)
                    } else {
                        None
                    }
                }
                _ => None,
            }
        }
        _ => None,
    }
}

pub(crate) fn binop(op: &str, a: i64, b: i64) -> Option<i64> {
    Some(match op {
        "+" => a.wrapping_add(b),
        "-" => a.wrapping_sub(b),
        "*" => a.wrapping_mul(b),
        "/" => {
            if b == 0 {
                return None;
            }
            a.wrapping_div(b)
        }
        "%" => {
            if b == 0 {
                return None;
            }
            a.wrapping_rem(b)
        }
        "<<" => {
            if !(0..64).contains(&b) {
                return None;
            }
            a.wrapping_shl(b as u32)
        }
        ">>" => {
            if !(0..64).contains(&b) {
                return None;
            }
            a.wrapping_shr(b as u32)
        }
        "&" | "bitand" => a & b,
        "|" | "bitor" => a | b,
        "^" | "xor" => a ^ b,
        "<" => (a < b) as i64,
        "<=" => (a <= b) as i64,
        ">" => (a > b) as i64,
        ">=" => (a >= b) as i64,
        "==" => (a == b) as i64,
        "!=" | "not_eq" => (a != b) as i64,
        "&&" | "and" => (a != 0 && b != 0) as i64,
        "||" | "or" => (a != 0 || b != 0) as i64,
        _ => return None,
    })
}
