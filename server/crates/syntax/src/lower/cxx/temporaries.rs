//! A reference parameter bound to a temporary: `cross(p1 - p0, p2 - p0)` with
//! `float cross(const Point &a, const Point &b)`, `f(Point(1, 2))`, `g(x + 1)` with
//! `const float &v`.
//!
//! The temporary is the value of the argument, materialized in the calling thread's own
//! memory: binding a reference to it is the same as passing the value (a by-value parameter of
//! the callee), and reads through the reference are reads of that thread-private copy, not of
//! shared memory. Before, the reference had no place (`place_of` knows lvalues only) and every
//! read through it was an opaque read through a pointer with an unknown target.
//!
//! What counts as a temporary is decided from the syntax: literals, arithmetic, comparison and
//! logical operators (unless the file defines that operator returning a reference or a
//! pointer), constructions of a class of the file (`Point(x, y)`, `Point{x, y}`), conversions
//! (`(float)x`, `float(x)`, `static_cast<float>(x)`, `T(2)` with a type parameter `T`, `idx_t(n)`
//! with a scalar `typedef`), and calls of functions of the file all of whose definitions return
//! by value. Anything else (a name, an
//! element, a member, a call of a function the front end does not see, which may return a
//! reference into shared memory) is bound as a reference, as before.

use super::super::*;
use crate::collect::FuncDef;
use crate::consteval::node_text;

/// The C++ casts written as templates (`static_cast<float>(x)`).
const NAMED_CASTS: &[&str] = &[
    "static_cast",
    "reinterpret_cast",
    "const_cast",
    "dynamic_cast",
];

/// Operators whose built-in forms yield a value (a prvalue), never an lvalue.
const VALUE_OPERATORS: &[&str] = &[
    "+", "-", "*", "/", "%", "&", "|", "^", "<<", ">>", "==", "!=", "<", ">", "<=", ">=", "&&",
    "||", "!", "~",
];

impl Lowerer<'_, '_> {
    /// Whether `e`, an argument bound to a reference parameter, is a temporary.
    pub(crate) fn is_temporary(&mut self, e: Node) -> bool {
        match e.kind() {
            "parenthesized_expression" => e.named_child(0).is_some_and(|x| self.is_temporary(x)),
            "number_literal"
            | "char_literal"
            | "true"
            | "false"
            | "compound_literal_expression" => true,
            "binary_expression" | "unary_expression" => {
                let op = e
                    .child_by_field_name("operator")
                    .map(|o| self.text(o))
                    .unwrap_or_default();
                VALUE_OPERATORS.contains(&op.as_str())
                    && !self.operator_may_return_place(&format!("operator{op}"))
            }
            // `(float)x`: a conversion yields a value, unless to a reference type.
            "cast_expression" => e
                .child_by_field_name("type")
                .is_some_and(|t| !self.text(t).contains('&')),
            "call_expression" => {
                let Some(f) = e.child_by_field_name("function") else {
                    return false;
                };
                let name = match f.kind() {
                    "identifier" => self.text(f),
                    // `float(2)`: a functional cast to a built-in type.
                    "primitive_type" => return true,
                    // `Point<float>(x, y)`: a construction of a class template instance;
                    // `static_cast<float>(x)`: a conversion, a value unless to a reference.
                    "template_function" => match f.child_by_field_name("name") {
                        Some(n) => {
                            let name = self.text(n);
                            if NAMED_CASTS.contains(&name.as_str()) {
                                return f
                                    .child_by_field_name("arguments")
                                    .is_some_and(|a| !self.text(a).contains('&'));
                            }
                            name
                        }
                        None => return false,
                    },
                    _ => return false,
                };
                // A local (a lambda, a function object) or a macro is not the file's function.
                if self.lookup(&name).is_some() || self.tab.macros.contains_key(&name) {
                    return false;
                }
                // `T(2)` with a type parameter `T` of the function, `index_t(x)` with a scalar
                // `typedef`: a functional cast, a value (the callee's parameter is a copy).
                let cast = !self.tab.funcs.contains_key(&name)
                    && !self.tab.protos.contains(&name)
                    && (self.is_type_param(&name)
                        || matches!(
                            self.scalar_type_of(&name),
                            ScalarType::Int { .. } | ScalarType::Float | ScalarType::Bool
                        ));
                cast || self.constructs_class(&name) || self.returns_by_value(&name)
            }
            _ => false,
        }
    }

    /// `Name(…)` constructs an object of a class of the file (a value), unless a function of
    /// that name exists too.
    fn constructs_class(&self, name: &str) -> bool {
        self.tab.classes.get(name).is_some_and(|c| c.is_some())
            && !self.tab.funcs.contains_key(name)
    }

    /// Every definition of the function `name` in the file returns by value (not a reference,
    /// not a pointer); `false` for a function the file does not define.
    fn returns_by_value(&self, name: &str) -> bool {
        let Some(defs) = self.tab.funcs.get(name) else {
            return false;
        };
        !defs.is_empty()
            && !self.tab.protos.contains(name)
            && defs.iter().all(|d| !self.returns_place(d))
    }

    /// Whether a function or method of the file named `op` (`operator-`) may return a reference
    /// or a pointer (then `a - b` may denote a place).
    fn operator_may_return_place(&self, op: &str) -> bool {
        let funcs = self.tab.funcs.get(op).into_iter().flatten().copied();
        let methods = self
            .tab
            .classes
            .values()
            .flatten()
            .filter_map(|c| c.methods.get(op))
            .flatten()
            .map(|m| m.def);
        // A method declared without its body here: its return type is not seen.
        funcs
            .map(Some)
            .chain(methods)
            .any(|d| d.is_none_or(|d| self.returns_place(&d)))
    }
}

impl Lowerer<'_, '_> {
    /// The function definition returns a reference or a pointer, or may (`decltype(auto)`, a
    /// trailing return type `-> T &`).
    fn returns_place(&self, d: &FuncDef) -> bool {
        let text = &self.tab.texts[d.file.0 as usize];
        let ty = d
            .node
            .child_by_field_name("type")
            .map(|t| node_text(t, text))
            .unwrap_or_default();
        d.node
            .child_by_field_name("declarator")
            .is_some_and(|decl| {
                matches!(decl.kind(), "pointer_declarator" | "reference_declarator")
                    || (ty.contains("auto") || ty.contains("decltype"))
                        && node_text(decl, text).contains(['&', '*'])
                    || ty.contains("decltype")
            })
    }
}
