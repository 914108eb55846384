//! Overloaded methods the front end cannot tell apart, inlined as a choice between them.
//!
//! C++ picks an overload by the argument types, which the front end mostly does not know (a
//! kernel template's `T1` may be `float` or `Complex<float>`). A call `op(a, b)` on an object
//! whose class has several overloads with as many parameters as the call has arguments
//! (`T operator()(const T &, const T &)` and `Complex<T> operator()(const Complex<T> &, const
//! T &)`) is one of them: each is inlined in a branch of its own, chosen by a fresh uniform
//! unknown (the choice is made at compile time: every thread of the launch takes the same
//! branch at this call). Whatever any overload does to memory is then seen, with the choice in
//! the witness, and the call's value is the chosen branch's.
//!
//! The call stays opaque, as before, when the choice would not cover every overload the
//! compiler may pick: an overload with default arguments or `...`, an overload declared
//! without a body, a method template, a virtual method; and when an overload returns a
//! reference or a pointer (a place the caller may write through), or when there are more than
//! [`MAX_OVERLOADS`] of them.

use super::super::*;
use crate::collect::{function_declarator, FuncDef, MethodDef};

/// The most overloads a call is split into.
pub(crate) const MAX_OVERLOADS: usize = 6;

/// Whether a definition returns by value (its declarator is the function declarator itself,
/// not a reference or pointer to it).
fn returns_by_value(d: &FuncDef) -> bool {
    d.node
        .child_by_field_name("declarator")
        .is_some_and(|x| x.kind() == "function_declarator")
}

/// Whether a definition's parameter list has a default argument or `...`.
pub(crate) fn has_optional_params(d: &FuncDef) -> bool {
    let Some(params) = d
        .node
        .child_by_field_name("declarator")
        .and_then(function_declarator)
        .and_then(|f| f.child_by_field_name("parameters"))
    else {
        return true;
    };
    let mut c = params.walk();
    let r = params.children(&mut c).any(|x| {
        matches!(
            x.kind(),
            "optional_parameter_declaration" | "variadic_parameter_declaration" | "..."
        )
    });
    r
}

/// The overloads a call with `nargs` arguments may pick, when every overload the compiler may
/// choose is among them and they can all be inlined; `None` otherwise.
pub(crate) fn candidates<'t>(ms: &[MethodDef<'t>], nargs: usize) -> Option<Vec<FuncDef<'t>>> {
    if ms
        .iter()
        .any(|m| m.is_virtual || m.is_template || m.is_static)
    {
        return None;
    }
    let mut out = Vec::new();
    for m in ms {
        let d = m.def?;
        if has_optional_params(&d) {
            return None;
        }
        if super::super::calls::param_count(&d) != nargs {
            continue;
        }
        if !returns_by_value(&d) {
            return None;
        }
        out.push(d);
    }
    (out.len() >= 2 && out.len() <= MAX_OVERLOADS).then_some(out)
}

impl<'a, 't> Lowerer<'a, 't> {
    /// `obj.method(args)` with the overloads `defs`: each inlined in its own branch, one taken.
    pub(crate) fn overload_choice(
        &mut self,
        obj: Rc<objects::Object>,
        method: &str,
        defs: &[FuncDef<'t>],
        n: Node,
        args: &[Node],
    ) -> Val {
        let span = self.span(n);
        let conds: Vec<Expr> = (1..defs.len())
            .map(|_| {
                self.grid_unknown(format!("which overload of `{method}` the call picks"), span)
            })
            .collect();
        let names = vec![method.to_string(); defs.len()];
        self.inline_one_of(&names, defs, conds, Some(obj), n, args)
    }

    /// One of the functions `defs` (called `names`) inlined at the call `n`: `if (conds[0])
    /// defs[0] else if (conds[1]) defs[1] … else` the last, or, with a condition for each,
    /// nothing when none holds; the call's value is the branch's.
    pub(crate) fn inline_one_of(
        &mut self,
        names: &[String],
        defs: &[FuncDef<'t>],
        conds: Vec<Expr>,
        this: Option<Rc<objects::Object>>,
        n: Node,
        args: &[Node],
    ) -> Val {
        let span = self.span(n);
        let label = names.first().cloned().unwrap_or_default();
        let result = self.new_local(&format!("{label}.result"), ScalarType::Other, span);
        let mut branches: Vec<Block> = Vec::new();
        let mut valued = false;
        for (name, d) in names.iter().zip(defs) {
            let o = this.clone();
            let (v, mut block) = self.capture(|s| s.inline(name, d, None, n, args, o, false));
            let value = match v {
                Val::S(e) => Some(e),
                Val::Void => None,
                // A pointer or group: its value is not carried out of the branch.
                _ => Some(self.unknown(format!("result of `{name}`"), span, false)),
            };
            if let Some(value) = value {
                valued = true;
                block.push(Stmt::Assign {
                    local: result,
                    value,
                    span,
                });
            }
            branches.push(block);
        }
        let mut conds = conds;
        let mut tail = if conds.len() >= branches.len() {
            Vec::new()
        } else {
            branches.pop().unwrap_or_default()
        };
        while let Some(b) = branches.pop() {
            let cond = conds.pop().unwrap_or(Expr::Bool(true));
            tail = vec![Stmt::If {
                cond,
                then_branch: b,
                else_branch: tail,
                span,
            }];
        }
        for s in tail {
            self.emit(s);
        }
        if valued {
            Val::S(Expr::Local(result))
        } else {
            Val::Void
        }
    }
}
