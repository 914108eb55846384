//! Range-based `for` over a library index range (`[[range]]` in a library file, see
//! docs/library.md): `for (auto i : grid_stride_range(n)) body` is the counted loop the range
//! stands for,
//!
//! ```text
//! for (int r = from; r < to; r += step) { auto i = r; body }
//! ```
//!
//! with the entry's `from`, `to` and `step` written over the call's arguments. The hidden
//! counter `r` keeps the iteration the range's when the body may change its copy `i` (which
//! does not move the real iterator); a body that only reads `i` gets `i` itself as the counter,
//! so that witnesses name the loop by the name the programmer wrote. A range the file or its includes define, or a range-for
//! over anything else (a container, an initializer list), stays an unsupported statement.

use crate::collect::declarator_name;
use crate::lower::*;

impl<'a, 't> Lowerer<'a, 't> {
    /// Lowers the `for_range_loop` `n` when it walks a library range; false otherwise (nothing
    /// lowered).
    pub(crate) fn library_range_for(&mut self, n: Node) -> bool {
        let (Some(decl), Some(right), Some(body)) = (
            n.child_by_field_name("declarator"),
            n.child_by_field_name("right"),
            n.child_by_field_name("body"),
        ) else {
            return false;
        };
        if n.child_by_field_name("initializer").is_some() || right.kind() != "call_expression" {
            return false;
        }
        let Some(var) = declarator_name(decl).map(|d| self.text(d)) else {
            return false;
        };
        let Some((name, template_args)) = right
            .child_by_field_name("function")
            .and_then(|f| self.range_callee(f))
        else {
            return false;
        };
        let tab = self.tab;
        if tab.funcs.contains_key(&name)
            || tab.classes.contains_key(&name)
            || tab.type_aliases.contains_key(&name)
            || tab.protos.contains(&name)
            || tab.macros.contains_key(&name)
            || self.expanding.contains(&name)
        {
            return false;
        }
        let args = self.item_texts(right.child_by_field_name("arguments"));
        let library = tab.library.clone();
        let Some(range) = library.range(&name, args.len()) else {
            return false;
        };
        let sub = |t: &str| range.substitute(t, &args, &template_args);
        let (Some(from), Some(to), Some(step)) =
            (sub(&range.from), sub(&range.to), sub(&range.step))
        else {
            return false;
        };
        let value_type = match &range.value_type {
            Some(t) => match sub(t) {
                Some(t) => Some(t),
                None => return false,
            },
            None => None,
        };
        // The declared type: the words between `(` and the declarator (`const auto`, `int`).
        let open = n
            .children(&mut n.walk())
            .find(|c| c.kind() == "(")
            .map_or(n.start_byte(), |c| c.end_byte());
        let declared = self.src.text[open.min(decl.start_byte())..decl.start_byte()].trim();
        let is_auto = declared.split_whitespace().any(|w| w == "auto");
        let declared_type = match (&value_type, is_auto) {
            (Some(t), true) => declared
                .split_whitespace()
                .map(|w| if w == "auto" { t.as_str() } else { w })
                .collect::<Vec<_>>()
                .join(" "),
            _ => declared.to_string(),
        };
        let counter_type = match (&value_type, is_auto) {
            (Some(t), _) => t.clone(),
            (None, false) => declared.replace("const", " ").trim().to_string(),
            (None, true) => "auto".to_string(),
        };
        self.fallback_macros
            .insert(name.clone(), range.library.to_string());
        let head = if may_change(&self.text(body), &var) {
            let counter = format!("__cudarace_range_{}", n.start_byte());
            format!(
                "void __cudarace_snippet() {{ for ({counter_type} {counter} = {from}; {counter} < {to}; {counter} += {step}) {{ {declared_type} {var} = {counter};\n"
            )
        } else {
            format!(
                "void __cudarace_snippet() {{ for ({counter_type} {var} = {from}; {var} < {to}; {var} += {step}) {{\n"
            )
        };
        self.snippet_with_body(n, name, head, "\n}\n}\n", body)
    }

    /// The range function a range-for calls and its template arguments (`grid_stride_range`,
    /// `csl::device::block_stride_range<256>`).
    fn range_callee(&self, f: Node) -> Option<(String, Vec<String>)> {
        match f.kind() {
            "identifier" => Some((self.text(f), Vec::new())),
            "qualified_identifier" => f
                .child_by_field_name("name")
                .and_then(|x| self.range_callee(x)),
            "template_function" => {
                let name = self.text(f.child_by_field_name("name")?);
                let args = self.item_texts(f.child_by_field_name("arguments"));
                Some((name, args))
            }
            _ => None,
        }
    }
}

/// Whether `body` may change the variable `var`: an assignment to it (`var = `, `var += `),
/// an increment or decrement, or its address or a reference taken (`&var`, which is read as a
/// change: the front end does not follow where the address goes). A name shadowing it in an
/// inner scope also counts (more hidden counters, never fewer).
fn may_change(body: &str, var: &str) -> bool {
    let toks = cudarace_library::classes::tokens(body);
    toks.iter().enumerate().any(|(k, t)| {
        if *t != var {
            return false;
        }
        let next: String = toks[k + 1..].iter().take(3).copied().collect();
        let prev: String = toks[k.saturating_sub(2)..k].concat();
        const CHANGES: [&str; 12] = [
            "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>=", "++", "--",
        ];
        let assigns = (next.starts_with('=') && !next.starts_with("=="))
            || CHANGES.iter().any(|op| next.starts_with(op));
        assigns || prev.ends_with("++") || prev.ends_with("--") || prev.ends_with('&')
    })
}
