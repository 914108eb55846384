//! Type traits decided when the types are known: `std::is_same<T, char>::value` (or
//! `std::is_same_v<T, char>`), `std::is_floating_point<T>::value`, `std::is_integral_v<T>`, with
//! `T` a type parameter that the call (`unpack<char>(…)`) or the kernel's only instantiation
//! binds to a type. An `if` (or `if constexpr`) on such a condition lowers only the branch the
//! types choose: the other one is dead code for this instance, and may not even make sense for
//! it (`data.real()` on a `char`).
//!
//! A trait is decided only when the answer is sure: the same spelling, or two fundamental (or
//! half-precision) types the front end knows, or a fundamental type against an instance of a
//! class template of the file (`Vec<float, 4>` is never `char`; an instance of a template from
//! elsewhere may be an alias: `std::remove_cv_t<float>` is `float`). A type it cannot name for sure (a
//! typedef from a missing header) leaves the condition to the solver, as before.

use crate::lower::*;
use crate::typenames::{different_types, known_type, same_type};

impl<'a, 't> Lowerer<'a, 't> {
    /// The value of a condition made of type traits (with `!`, `&&`, `||` and parentheses),
    /// when the types decide it.
    pub(crate) fn trait_value(&self, c: Node) -> Option<bool> {
        match c.kind() {
            "parenthesized_expression" | "condition_clause" => {
                if c.child_by_field_name("initializer").is_some() {
                    return None;
                }
                let inner = c
                    .child_by_field_name("value")
                    .or_else(|| c.named_child(0))?;
                self.trait_value(inner)
            }
            "unary_expression" => {
                let op = c.child_by_field_name("operator")?;
                (self.text(op) == "!")
                    .then(|| c.child_by_field_name("argument"))
                    .flatten()
                    .and_then(|a| self.trait_value(a))
                    .map(|v| !v)
            }
            "binary_expression" => {
                let op = self.text(c.child_by_field_name("operator")?);
                let a = self.trait_value(c.child_by_field_name("left")?);
                let b = self.trait_value(c.child_by_field_name("right")?);
                // Decided by the left operand (the right one is then not evaluated), or, when
                // the left one does not decide, by the right one. An undecided left operand is
                // evaluated whatever the right one says, and may have effects
                // (`atomicAdd(p, 1) > 0 && is_same<…>`): left to the lowering.
                match (op.as_str(), a) {
                    ("&&", Some(false)) => Some(false),
                    ("||", Some(true)) => Some(true),
                    ("&&" | "||", Some(_)) => b,
                    _ => None,
                }
            }
            "qualified_identifier" | "template_function" | "identifier" => {
                self.trait_text_value(&self.text(c))
            }
            _ => None,
        }
    }

    /// `std::is_same<A, B>::value` and the other traits, from the condition's text.
    fn trait_text_value(&self, text: &str) -> Option<bool> {
        let t: String = text.split_whitespace().collect();
        let t = t
            .strip_prefix("::")
            .unwrap_or(&t)
            .trim_start_matches("cuda::")
            .trim_start_matches("std::");
        let (name, rest) = t.split_at(t.find('<')?);
        let (args, tail) = split_angle(rest)?;
        let (trait_name, is_v) = match name.strip_suffix("_v") {
            Some(n) => (n, true),
            None => (name, false),
        };
        let ok_tail = if is_v {
            tail.is_empty()
        } else {
            tail == "::value"
        };
        if !ok_tail {
            return None;
        }
        let types: Vec<String> = args
            .iter()
            .map(|a| self.resolved_type(a))
            .collect::<Option<_>>()?;
        match (trait_name, types.as_slice()) {
            ("is_same", [a, b]) => {
                if same_type(a, b) {
                    Some(true)
                } else if different_types(a, b)
                    || (known_type(a).is_some() && self.class_instance(b))
                    || (known_type(b).is_some() && self.class_instance(a))
                {
                    Some(false)
                } else {
                    None
                }
            }
            // Half-precision types are left undecided: libraries differ on them.
            ("is_floating_point", [a]) => match known_type(a)? {
                "float" | "double" => Some(true),
                "__half" | "__half2" | "__nv_bfloat16" | "__nv_bfloat162" => None,
                _ => Some(false),
            },
            ("is_integral", [a]) => match known_type(a)? {
                "float" | "double" | "__half" | "__half2" | "__nv_bfloat16" | "__nv_bfloat162" => {
                    Some(false)
                }
                _ => Some(true),
            },
            _ => None,
        }
    }

    /// Whether a type's text is an instance of a class template of the file (`Vec<float, 4>`):
    /// never a fundamental type. An instance of a template the file does not define may be an
    /// alias (`std::remove_cv_t<float>` is `float`).
    fn class_instance(&self, t: &str) -> bool {
        let Some((name, _)) = t.split_once('<') else {
            return false;
        };
        let name = name.rsplit("::").next().unwrap_or(name);
        matches!(self.tab.classes.get(name), Some(Some(_)))
    }

    /// A type argument's text without spaces, a type parameter replaced by the type it is bound
    /// to; `None` for a type parameter bound to nothing known. Qualifiers stay (`const T` is
    /// not `T`: `std::is_same<const float, float>` is false, which is left undecided here).
    fn resolved_type(&self, a: &str) -> Option<String> {
        let plain = a.split_whitespace().collect::<String>();
        if plain.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && self.is_type_param(&plain)
        {
            let bound = self.type_param_text(&plain)?;
            return Some(bound.split_whitespace().collect());
        }
        Some(plain)
    }
}

/// `<A,B>rest` → (`[A, B]`, `rest`), split at the top-level commas.
fn split_angle(s: &str) -> Option<(Vec<String>, &str)> {
    let b = s.as_bytes();
    if b.first() != Some(&b'<') {
        return None;
    }
    let mut depth = 0i32;
    let mut args = Vec::new();
    let mut start = 1;
    for (i, &c) in b.iter().enumerate() {
        match c {
            b'<' | b'(' => depth += 1,
            b'>' | b')' => {
                depth -= 1;
                if depth == 0 {
                    args.push(s[start..i].to_string());
                    return Some((args, &s[i + 1..]));
                }
            }
            b',' if depth == 1 => {
                args.push(s[start..i].to_string());
                start = i + 1;
            }
            _ => {}
        }
    }
    None
}
