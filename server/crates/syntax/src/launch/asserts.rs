//! Guards before a launch: statements of a block around the launch, before it, past which the
//! host goes on only where a condition holds:
//! - a call of a library function that assumes its argument (`assume-arg`, as `assert`):
//!   `assert(n % 4 == 0); k<<<g, b>>>(out, n);`;
//! - an `if` without `else` whose branch leaves (`return`, `throw`, `break`, `continue`, as its
//!   only or last statement): `if (n % 4 != 0) { fprintf(…); return; }`.
//!
//! The launch runs only where they hold, as it runs only where the conditions of the `if`s
//! around it hold: `path_conditions` (`relations.rs`) reads both in one walk up from the
//! launch, into [`LaunchSite::conditions`], in terms of the call's arguments, and only when
//! every name means the same at the check and at the launch (and no `goto` may skip it).
//!
//! [`LaunchSite::conditions`]: cudarace_ir::LaunchSite::conditions

use super::{conjuncts, HostEnv};
use crate::consteval::{list_items, node_text};
use cudarace_ir::{BinOp, SiteValue};
use tree_sitter::Node;

impl<'t> HostEnv<'_, 't> {
    /// What the checks among the statements of `block` before `child` (the statement that
    /// holds the launch) establish, added to `out`.
    pub(super) fn checks_before(
        &self,
        block: Node<'t>,
        child: Node<'t>,
        args: &[String],
        out: &mut Vec<SiteValue>,
    ) {
        let mut cursor = block.walk();
        for s in block.named_children(&mut cursor) {
            if s.start_byte() >= child.start_byte() {
                break;
            }
            self.check_before(s, args, out);
        }
    }

    /// What the statement `s` guarantees for the statements after it, if it is a guard.
    fn check_before(&self, s: Node<'t>, args: &[String], out: &mut Vec<SiteValue>) {
        match s.kind() {
            "expression_statement" => {
                let Some(call) = s.named_child(0).filter(|c| c.kind() == "call_expression") else {
                    return;
                };
                let Some(arg) = self.assumed_argument(call) else {
                    return;
                };
                if self.names_mean_the_same(arg) {
                    for c in conjuncts(arg, self.text) {
                        out.extend(self.condition(c, args));
                    }
                }
            }
            "if_statement" => {
                if s.child_by_field_name("alternative").is_some()
                    || !s.child_by_field_name("consequence").is_some_and(leaves)
                {
                    return;
                }
                let value = super::if_condition(s);
                if let Some(v) = value.filter(|v| self.names_mean_the_same(*v)) {
                    out.extend(self.condition(v, args).map(|c| {
                        SiteValue::Op(BinOp::Eq, Box::new(c), Box::new(SiteValue::Int(0)))
                    }));
                }
            }
            _ => {}
        }
    }

    /// The argument a call assumes: the call is of a library function with `assume-arg`
    /// (`assert`) that the file does not define as a function or a macro.
    fn assumed_argument(&self, call: Node<'t>) -> Option<Node<'t>> {
        let f = call.child_by_field_name("function")?;
        if f.kind() != "identifier" {
            return None;
        }
        let name = node_text(f, self.text);
        if self.tables.macros.contains_key(name)
            || self.tables.funcs.get(name).is_some_and(|d| !d.is_empty())
        {
            return None;
        }
        let i = self.tables.library.function(name)?.assume_arg?;
        let list = call.child_by_field_name("arguments")?;
        list_items(list).get(i).copied()
    }
}

/// Whether the statement `s` always leaves the block the guard is in: a jump, or a block whose
/// last statement is one.
fn leaves(s: Node) -> bool {
    match s.kind() {
        "return_statement" | "throw_statement" | "break_statement" | "continue_statement" => true,
        "expression_statement" => s
            .named_child(0)
            .is_some_and(|e| e.kind() == "throw_expression"),
        "compound_statement" => {
            let mut cursor = s.walk();
            let last = s.named_children(&mut cursor).last();
            last.is_some_and(leaves)
        }
        _ => false,
    }
}
