//! Explicit specializations of a kernel template (`template <> __global__ void k(half *…)`):
//! which definitions of the kernel's name a launch site reaches.
//!
//! - `k<half><<<…>>>` (or `k<__half>`) reaches the specialization for `half`, and only it;
//!   `k<float>` reaches the primary template; `k<fp16>` with a name the front end cannot tell
//!   apart from `half` (a typedef) reaches both.
//! - `k<T><<<…>>>` inside a host template `run<T>` that has an explicit specialization
//!   `run<half>` of its own never has `T = half` (a call of `run` with `half` takes that
//!   specialization), so it does not reach `k<half>` (FasterTransformer's `invoke…` functions
//!   launch their `half` kernels with other block sizes).
//!
//! Only the first template parameter is followed; anything else reaches every definition.

use crate::collect::{declarator_name, function_declarator, FuncDef, Tables};
use crate::consteval::node_text;
use crate::typenames::{different_types, same_type};
use cudarace_ir::Span;
use tree_sitter::Node;

/// The definitions of the kernel `name` that a launch with the explicit template arguments
/// `template_args` (in the host function `host`, if any) reaches, when the name has explicit
/// specializations; `None` (any) otherwise.
pub(super) fn reachable_definitions<'t>(
    tables: &Tables<'t>,
    name: &str,
    template_args: Option<Node<'t>>,
    host: Option<Node<'t>>,
    text: &str,
) -> Option<Vec<Span>> {
    let defs: Vec<&FuncDef<'t>> = tables
        .funcs
        .get(name)?
        .iter()
        .filter(|d| d.is_kernel)
        .collect();
    let primary = defs.iter().find(|d| is_primary(d))?;
    // A specialization whose argument cannot be read might be the one any site reaches: then
    // every site reaches every definition, as without specializations.
    let specialized: Vec<(&FuncDef<'t>, String)> = defs
        .iter()
        .filter(|d| is_explicit_specialization(d))
        .map(|d| Some((*d, specialization_arg(tables, primary, d)?)))
        .collect::<Option<_>>()?;
    if specialized.is_empty() {
        return None;
    }
    let arg = first_arg(template_args?, text)?;
    let span = |d: &FuncDef| Span::new(d.file, d.outer.start_byte(), d.outer.end_byte());
    let dependent = host.and_then(|h| host_parameter_index(h, &arg, text));
    let reached: Vec<Span> = match dependent {
        // `k<T>` in a host template: not the specializations the host itself has.
        Some(i) => {
            let excluded = host_specializations(tables, host?, i, text);
            std::iter::once(span(primary))
                .chain(
                    specialized
                        .iter()
                        .filter(|(_, a)| !excluded.iter().any(|x| same_type(x, a)))
                        .map(|(d, _)| span(d)),
                )
                .collect()
        }
        // `k<half>`: its specialization. Any other argument: the primary template, and every
        // specialization for a type the argument may name (`k<fp16>` with `typedef half
        // fp16`): only two known, different types (`float` and `half`) are surely apart.
        None => match specialized.iter().find(|(_, a)| same_type(a, &arg)) {
            Some((d, _)) => vec![span(d)],
            None => std::iter::once(span(primary))
                .chain(
                    specialized
                        .iter()
                        .filter(|(_, a)| !different_types(a, &arg))
                        .map(|(d, _)| span(d)),
                )
                .collect(),
        },
    };
    Some(reached)
}

fn template_parameter_names(list: Node, text: &str) -> Vec<String> {
    let mut c = list.walk();
    list.named_children(&mut c)
        .filter(|p| p.kind() != "comment")
        .filter_map(|p| {
            p.child_by_field_name("name")
                .or_else(|| p.child_by_field_name("declarator"))
                .or_else(|| {
                    let mut c = p.walk();
                    let last = p
                        .named_children(&mut c)
                        .filter(|x| x.kind() == "type_identifier" || x.kind() == "identifier")
                        .last();
                    last
                })
                .map(|n| node_text(n, text).to_string())
        })
        .collect()
}

fn is_primary(d: &FuncDef) -> bool {
    d.template_params.is_some_and(|l| l.named_child_count() > 0)
}

fn is_explicit_specialization(d: &FuncDef) -> bool {
    d.template_params
        .is_some_and(|l| l.named_child_count() == 0)
}

/// The first template argument of an explicit specialization: written (`k<half>(…)`), or read
/// off the parameter types against the primary template's (`T *out` and `half *out`).
fn specialization_arg(tables: &Tables, primary: &FuncDef, spec: &FuncDef) -> Option<String> {
    let text = tables.text(spec.file);
    let decl = function_declarator(spec.node.child_by_field_name("declarator")?)?;
    let name = decl.child_by_field_name("declarator")?;
    if name.kind() == "template_function" {
        return first_arg(name.child_by_field_name("arguments")?, text);
    }
    let ptext = tables.text(primary.file);
    let t = template_parameter_names(primary.template_params?, ptext)
        .into_iter()
        .next()?;
    let ptypes = parameter_types(primary.node, ptext)?;
    let stypes = parameter_types(spec.node, text)?;
    if ptypes.len() != stypes.len() {
        return None;
    }
    ptypes
        .iter()
        .zip(&stypes)
        .find_map(|(p, s)| deduce(p, s, &t))
}

/// Each parameter's type as tokens, pointer and reference marks included (`const T *` →
/// `const`, `T`, `*`).
fn parameter_types(def: Node, text: &str) -> Option<Vec<Vec<String>>> {
    let decl = function_declarator(def.child_by_field_name("declarator")?)?;
    let params = decl.child_by_field_name("parameters")?;
    let mut c = params.walk();
    let out = params
        .named_children(&mut c)
        .filter(|p| p.kind() != "comment")
        .map(|p| {
            let name = p
                .child_by_field_name("declarator")
                .and_then(declarator_name)
                .map(|n| (n.start_byte(), n.end_byte()));
            let whole = node_text(p, text);
            let kept: String = match name {
                Some((s, e)) => {
                    let (s, e) = (s - p.start_byte(), e - p.start_byte());
                    format!("{} {}", &whole[..s], &whole[e..])
                }
                None => whole.to_string(),
            };
            crate::text::tokens(&kept)
                .into_iter()
                .map(|(_, w)| w.trim().to_string())
                .filter(|w| !w.is_empty())
                .collect()
        })
        .collect();
    Some(out)
}

/// `t`'s value when `spec` is `primary` with `t` replaced by one token.
fn deduce(primary: &[String], spec: &[String], t: &str) -> Option<String> {
    if primary.len() != spec.len() || !primary.iter().any(|w| w == t) {
        return None;
    }
    let mut value: Option<&String> = None;
    for (p, s) in primary.iter().zip(spec) {
        if p == t {
            match value {
                Some(v) if v != s => return None,
                _ => value = Some(s),
            }
        } else if p != s {
            return None;
        }
    }
    value.cloned()
}

/// The first template argument's text, spaces dropped.
fn first_arg(args: Node, text: &str) -> Option<String> {
    let mut c = args.walk();
    let first = args
        .named_children(&mut c)
        .find(|a| a.kind() != "comment")?;
    Some(node_text(first, text).split_whitespace().collect())
}

/// The host function around the launch: the position of `arg` among its template
/// parameters, when it is one.
fn host_parameter_index(host: Node, arg: &str, text: &str) -> Option<usize> {
    let t = host
        .parent()
        .filter(|p| p.kind() == "template_declaration")?;
    template_parameter_names(t.child_by_field_name("parameters")?, text)
        .iter()
        .position(|n| n == arg)
}

/// The values of the `i`-th template parameter for which the host template `host` has an
/// explicit specialization in the file.
fn host_specializations(tables: &Tables, host: Node, i: usize, text: &str) -> Vec<String> {
    // Only the first parameter is read off a specialization (see `specialization_arg`).
    if i != 0 {
        return vec![];
    }
    let Some(name) = host
        .child_by_field_name("declarator")
        .and_then(function_declarator)
        .and_then(|d| d.child_by_field_name("declarator"))
        .and_then(declarator_name)
        .map(|n| node_text(n, text).to_string())
    else {
        return vec![];
    };
    let Some(defs) = tables.funcs.get(&name) else {
        return vec![];
    };
    let Some(primary) = defs.iter().find(|d| d.node.id() == host.id()) else {
        return vec![];
    };
    defs.iter()
        .filter(|d| is_explicit_specialization(d))
        .filter_map(|d| specialization_arg(tables, primary, d))
        .collect()
}
