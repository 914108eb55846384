//! Lambdas a launch passes to a kernel template (`apply<<<g, b>>>(n, [=] __device__ (int i) {
//! out[i] = 2 * in[i]; })` with `template <class F> __global__ void apply(int n, F f)`).
//!
//! The launch deduces the type parameter `F` to the lambda (`Tables::launch_lambdas`, an
//! instantiation argument `lambda@L:C`), and the kernel parameter `f` is that lambda, so a call
//! `f(i)` inlines its body (`lambdas.rs`). The closure is a by-value kernel argument: its
//! captures are the host's values at the launch, as the members of a struct parameter are. A
//! captured pointer is an array of its own (`f.out`; like pointer parameters, assumed not to
//! overlap the others), a captured integer a parameter of its own (`f.n`), another scalar a
//! uniform unknown. A capture the host code does not declare plainly (an object, an array, a
//! pointer to pointers, `auto`), an init-capture (`[y = e]`) or `this` leaves the parameter an
//! unknown callable, as before.

use super::lambdas::{is_mutable, names_in, params_of, Capture, Lambda};
use super::type_params::visible_declarations;
use crate::collect::declarator_name;
use crate::lower::*;

impl<'a, 't> Lowerer<'a, 't> {
    /// The lambdas the kernel's instantiation binds its type parameters to: parameter name →
    /// where the lambda is.
    pub(crate) fn note_launch_lambdas(&mut self, tp: Node<'t>, args: &[String]) {
        let text = self.src.text.clone();
        let mut c = tp.walk();
        let list: Vec<Node> = tp.named_children(&mut c).collect();
        for (p, a) in list.iter().zip(args) {
            let (Some(name), Some(at)) = (
                super::type_params::type_param_name(*p, &text),
                self.tab.launch_lambdas.get(a).copied().flatten(),
            ) else {
                continue;
            };
            self.launch_lambda_types.insert(name, at);
        }
    }

    /// Binds the kernel parameter `name`, of type `ty`, to the lambda the launch passes for
    /// it (pushing the parameter and the values of its captures); `false`, with nothing done,
    /// when `ty` is no such lambda's or a capture is not modelled.
    pub(crate) fn bind_launch_lambda(&mut self, name: &str, ty: &str, span: Span) -> bool {
        let ty: String = ty
            .split_whitespace()
            .filter(|w| !matches!(*w, "const" | "volatile"))
            .collect::<Vec<_>>()
            .join(" ");
        let Some(&(file, start, end)) = self.launch_lambda_types.get(&ty) else {
            return false;
        };
        let Some(node) = self.lambda_node(file, start, end) else {
            return false;
        };
        let text = self.tab.texts[file.0 as usize].clone();
        let Some(captures) = host_captures(node, &text) else {
            return false;
        };
        // Every capture is modelled, or none: decide before pushing anything.
        let mut kinds = Vec::new();
        for (cap, decl, declarator) in captures {
            let ty_text = decl
                .child_by_field_name("type")
                .map(|t| node_text(t, &text).to_string())
                .unwrap_or_default();
            let kind = match declarator.kind() {
                "pointer_declarator"
                    if declarator
                        .child_by_field_name("declarator")
                        .is_some_and(|d| d.kind() == "identifier") =>
                {
                    CaptureKind::Pointer
                }
                "identifier" | "reference_declarator" => match self.scalar_type_of(&ty_text) {
                    ty @ (ScalarType::Int { .. } | ScalarType::Bool) => CaptureKind::Integer(ty),
                    ScalarType::Float => CaptureKind::Scalar,
                    _ => return false,
                },
                _ => return false,
            };
            kinds.push((cap, ty_text, declarator.start_byte(), kind));
        }
        let id = self.push_value_param(name, ScalarType::Other, span, false);
        let mut env = Vec::new();
        for (cap, ty_text, at, kind) in kinds {
            let full = format!("{name}.{cap}");
            let binding = match kind {
                CaptureKind::Pointer => {
                    let elem = typenames::elem_size(&ty_text);
                    let arr = self.new_array(
                        &full,
                        MemSpace::Global,
                        ArrayOrigin::Param(id.0),
                        typenames::scalar_type(&ty_text),
                        elem,
                        vec![None],
                        span,
                    );
                    let slot = self.new_slot((file, at), Base::Arr(arr), Expr::Int(0), elem, &full);
                    self.slots[slot].comp = typenames::comp_size(&ty_text);
                    Binding::Ptr(slot)
                }
                CaptureKind::Integer(ty) => {
                    Binding::Value(Expr::Param(self.push_value_param(&full, ty, span, true)))
                }
                CaptureKind::Scalar => {
                    Binding::Value(self.unknown(format!("captured `{full}`"), span, true))
                }
            };
            env.push(Capture {
                name: cap,
                binding,
                by_value: true,
            });
        }
        let lambda = Lambda {
            file,
            start,
            end,
            mutable: is_mutable(node, &text),
            env,
        };
        self.bind(name, Binding::Lambda(std::rc::Rc::new(lambda)));
        true
    }
}

enum CaptureKind {
    Pointer,
    Integer(ScalarType),
    Scalar,
}

/// The host variables a lambda written in host code captures: each name its body uses that
/// the enclosing host function declares before the lambda, in a scope that holds it (a
/// parameter or a local), with that
/// declaration and its declarator. `None` when the lambda has an init-capture, captures
/// `this`, or a captured name has several declarations there.
fn host_captures<'t>(lambda: Node<'t>, text: &str) -> Option<Vec<(String, Node<'t>, Node<'t>)>> {
    let caps = lambda.child_by_field_name("captures")?;
    let mut c = caps.walk();
    let plain = caps
        .children(&mut c)
        .all(|ch| !matches!(ch.kind(), "lambda_capture_initializer" | "this"));
    if !plain || lambda.child_by_field_name("template_parameters").is_some() {
        return None;
    }
    let body = lambda.child_by_field_name("body")?;
    let (names, this) = names_in(body, text);
    if this {
        return None;
    }
    let mut own = std::collections::HashSet::new();
    if let Some(pl) = params_of(lambda) {
        let mut c = pl.walk();
        for p in pl.named_children(&mut c) {
            if let Some(nm) = p
                .child_by_field_name("declarator")
                .and_then(declarator_name)
            {
                own.insert(node_text(nm, text).to_string());
            }
        }
    }
    let declared: Vec<(String, Node<'t>, Node<'t>)> = visible_declarations(lambda, text)?
        .into_iter()
        .map(|(n, decl, d)| {
            let d = if d.kind() == "init_declarator" {
                d.child_by_field_name("declarator").unwrap_or(d)
            } else {
                d
            };
            (n, decl, d)
        })
        .collect();
    let mut out = Vec::new();
    for name in names {
        if own.contains(&name) {
            continue;
        }
        match declared
            .iter()
            .filter(|(n, _, _)| *n == name)
            .collect::<Vec<_>>()
            .as_slice()
        {
            [] => {}
            [(n, decl, d)] => out.push((n.clone(), *decl, *d)),
            _ => return None,
        }
    }
    Some(out)
}
