//! The branch conditions under which a value reaches a launch: a launch size a local takes in
//! a branch (`if (colors > 3) bx = 32; else bx = 16;`, `threadsY = c ? 8 : 4`) holds only on the
//! paths where that branch ran, and a launch in another branch of the same condition
//! (`if (colors > 3) { … } else { k<<<g, dim3(bx, by)>>>(…); }`) never sees it.
//!
//! Each value a size may take carries its guard: the literals (a condition and whether it held)
//! of the `if`s around its assignment and of the `?:` that chose it. The launch has the literals
//! of the `if`s around it. A value is dropped when one of its literals contradicts the launch's:
//! - the same condition (written the same way, `!c` and `a != b` read as negations) with the
//!   other outcome, when every name in it keeps one value in the whole function (no assignment,
//!   `&`, reference or call that may change it; one declaration, holding both places), so the
//!   condition has one value wherever it is evaluated;
//! - a comparison of such a local with a constant (`ipt != 4`), when every value of the local
//!   that makes the comparison come out that way is itself guarded by literals the launch
//!   contradicts (`int ipt = n % 128 == 0 ? 4 : 2;` and a launch under `n % 128 == 0`).
//!
//! Anything else is not a contradiction: the value stays (the union of the branches, as
//! without guards). A `goto` or a lambda around a place gives it no literals.

use super::*;

/// A condition and the outcome it had.
pub(super) type Lit<'t> = (Node<'t>, bool);

/// The values an expression may have, each with the literals under which it has it.
pub(super) type Guarded<'t> = Vec<(i64, Vec<Lit<'t>>)>;

/// Past this many guarded values an expression is not read.
const MAX_GUARDED: usize = 64;

impl<'t> HostEnv<'_, 't> {
    /// The literals `cond` having outcome `holds` gives: the conjuncts of a true `&&`, the
    /// disjuncts of a false `||`, through `!` and parentheses; else the condition itself.
    pub(super) fn literals(&self, cond: Node<'t>, holds: bool, out: &mut Vec<Lit<'t>>) {
        match cond.kind() {
            "parenthesized_expression" if cond.named_child_count() == 1 => {
                if let Some(c) = cond.named_child(0) {
                    self.literals(c, holds, out);
                }
            }
            "unary_expression"
                if cond
                    .child_by_field_name("operator")
                    .is_some_and(|o| matches!(node_text(o, self.text), "!" | "not")) =>
            {
                if let Some(c) = cond.child_by_field_name("argument") {
                    self.literals(c, !holds, out);
                }
            }
            "binary_expression" => {
                let op = cond
                    .child_by_field_name("operator")
                    .map(|o| node_text(o, self.text));
                let split = match op {
                    Some("&&" | "and") => holds,
                    Some("||" | "or") => !holds,
                    _ => false,
                };
                if split {
                    for side in ["left", "right"] {
                        if let Some(c) = cond.child_by_field_name(side) {
                            self.literals(c, holds, out);
                        }
                    }
                } else {
                    out.push((cond, holds));
                }
            }
            _ => out.push((cond, holds)),
        }
    }

    /// The literals of the `if`s around `n` in its function: the condition of one whose `then`
    /// branch holds `n` held, that of one whose `else` branch holds it did not. None when the
    /// function has a `goto` or `n` is in a lambda.
    pub(super) fn path_literals(&self, n: Node<'t>) -> Vec<Lit<'t>> {
        let mut out = Vec::new();
        if self.func_body.is_none() || self.has_goto() {
            return out;
        }
        let mut child = n;
        let mut p = n.parent();
        while let Some(a) = p {
            if Some(a) == self.func_body {
                break;
            }
            if a.kind() == "lambda_expression" {
                return Vec::new();
            }
            if a.kind() == "if_statement" {
                let value = super::if_condition(a);
                if let Some(v) = value {
                    if a.child_by_field_name("consequence") == Some(child) {
                        self.literals(v, true, &mut out);
                    } else if a.child_by_field_name("alternative") == Some(child) {
                        self.literals(v, false, &mut out);
                    }
                }
            }
            child = a;
            p = a.parent();
        }
        out
    }

    /// Whether a value with guard `guard` may reach the launch: none of its literals
    /// contradicts those of the launch.
    pub(super) fn reaches_launch(&self, guard: &[Lit<'t>]) -> bool {
        if guard.is_empty() {
            return true;
        }
        let at = self.launch_literals.get_or_init(|| match self.func_body {
            Some(body) => self.path_literals(self.at_node(body)),
            None => Vec::new(),
        });
        !guard.iter().any(|l| self.contradicts(*l, at, 0))
    }

    fn contradicts(&self, lit: Lit<'t>, at: &[Lit<'t>], depth: u32) -> bool {
        if depth > 4 {
            return false;
        }
        let (key, holds) = self.literal_key(lit);
        if at.iter().any(|&(b, hb)| {
            let (kb, hb) = self.literal_key((b, hb));
            kb == key && hb != holds && self.stable(lit.0, b) && self.stable(b, lit.0)
        }) {
            return true;
        }
        // `x op k` with `x` a local of one value, chosen by guarded `?:`s.
        let c = strip_parens(lit.0);
        if c.kind() != "binary_expression" {
            return false;
        }
        let Some(op) = c
            .child_by_field_name("operator")
            .map(|o| node_text(o, self.text))
        else {
            return false;
        };
        if !matches!(op, "==" | "!=" | "<" | "<=" | ">" | ">=") {
            return false;
        }
        let (Some(l), Some(r)) = (
            c.child_by_field_name("left"),
            c.child_by_field_name("right"),
        ) else {
            return false;
        };
        let (local, k, flipped) = match (strip_parens(l).kind(), strip_parens(r).kind()) {
            ("identifier", _) => (strip_parens(l), r, false),
            (_, "identifier") => (strip_parens(r), l, true),
            _ => return false,
        };
        let Some(k) = self.constant(k) else {
            return false;
        };
        let Some(values) = self.single_value_local(local) else {
            return false;
        };
        for (v, guard) in values {
            let (a, b) = if flipped { (k, v) } else { (v, k) };
            let Some(outcome) = crate::consteval::binop(op, a, b) else {
                return false;
            };
            if (outcome != 0) != lit.1 {
                continue;
            }
            if !guard.iter().any(|g| self.contradicts(*g, at, depth + 1)) {
                return false;
            }
        }
        // Every value that makes the comparison come out that way is ruled out (or none
        // does): the branch never runs with the launch.
        true
    }

    /// The text a literal is compared by and its outcome: parentheses and `!` looked through,
    /// `a != b` read as `a == b` not holding.
    fn literal_key(&self, (c, holds): Lit<'t>) -> (String, bool) {
        let c = strip_parens(c);
        if c.kind() == "binary_expression"
            && c.child_by_field_name("operator")
                .is_some_and(|o| matches!(node_text(o, self.text), "!=" | "not_eq"))
        {
            if let (Some(l), Some(r)) = (
                c.child_by_field_name("left"),
                c.child_by_field_name("right"),
            ) {
                let key = format!(
                    "{}=={}",
                    squash(node_text(strip_parens(l), self.text)),
                    squash(node_text(strip_parens(r), self.text))
                );
                return (key, !holds);
            }
        }
        (squash(node_text(c, self.text)), holds)
    }

    /// Whether the condition `c` has the same value wherever in the function it is evaluated
    /// (as far as the place `other`, the condition it is compared with): it is built from
    /// names, constants and arithmetic, and each name keeps one value ([`HostEnv::one_value`]).
    fn stable(&self, c: Node<'t>, other: Node<'t>) -> bool {
        pure_expression(c, 0)
            && crate::text::tokens(node_text(c, self.text))
                .into_iter()
                .filter(|(is_id, _)| *is_id)
                .all(|(_, name)| self.one_value(name, c, other))
    }

    /// Whether `name` is the same variable with the same value at `a` and at `b`: the function
    /// never changes it (see [`HostEnv::changes`]), and declares it at most once, before both
    /// and in a block holding both (else it is a parameter or a global).
    fn one_value(&self, name: &str, a: Node<'t>, b: Node<'t>) -> bool {
        if self.facts.too_big || !self.changes(name).is_empty() {
            return false;
        }
        let decls = self.facts.decls.get(name).map_or(&[][..], |d| d.as_slice());
        match decls {
            // Not a local: a constant of the file, or a value parameter of the host function
            // (a global may be changed by any call in between).
            [] => eval_text(name, self.tables, 0).is_some() || self.value_parameter(name),
            [d] => {
                let first = a.start_byte().min(b.start_byte());
                let last = a.end_byte().max(b.end_byte());
                d.end_byte() <= first
                    && scope_of(*d).is_none_or(|s| s.start_byte() <= first && last <= s.end_byte())
            }
            _ => false,
        }
    }

    /// Whether `name` is a parameter of the host function passed by value (not a pointer, a
    /// reference or an array).
    fn value_parameter(&self, name: &str) -> bool {
        let Some(def) = self.func_body.and_then(|b| b.parent()) else {
            return false;
        };
        let Some(params) = def
            .child_by_field_name("declarator")
            .and_then(function_declarator)
            .and_then(|f| f.child_by_field_name("parameters"))
        else {
            return false;
        };
        let mut c = params.walk();
        let found = params.named_children(&mut c).any(|p| {
            p.kind() == "parameter_declaration"
                && p.child_by_field_name("declarator")
                    .is_some_and(|d| d.kind() == "identifier" && node_text(d, self.text) == name)
        });
        found
    }

    /// The guarded values of the local `x` (an identifier in a condition) when it keeps the
    /// value of its initializer in the whole function and that is a choice among constants
    /// (`int ipt = n % 128 == 0 ? 4 : n % 64 == 0 ? 2 : 1;`).
    fn single_value_local(&self, x: Node<'t>) -> Option<Guarded<'t>> {
        let name = node_text(x, self.text);
        if !self.one_value(name, x, x) {
            return None;
        }
        let [d] = self.facts.decls.get(name)?.as_slice() else {
            return None;
        };
        if d.kind() != "init_declarator" || !self.plain_integer(*d) {
            return None;
        }
        self.constant_choice(d.child_by_field_name("value")?, 0)
    }

    /// `e` as constants chosen by `?:` (with their guards), each branch a constant.
    fn constant_choice(&self, e: Node<'t>, depth: u32) -> Option<Guarded<'t>> {
        if depth > 8 {
            return None;
        }
        let e = strip_parens(e);
        if e.kind() != "conditional_expression" {
            return Some(vec![(self.constant(e)?, Vec::new())]);
        }
        let c = e.child_by_field_name("condition")?;
        let mut out = Vec::new();
        for (branch, holds) in [("consequence", true), ("alternative", false)] {
            for (v, mut g) in self.constant_choice(e.child_by_field_name(branch)?, depth + 1)? {
                self.literals(c, holds, &mut g);
                out.push((v, g));
            }
        }
        (out.len() <= MAX_GUARDED).then_some(out)
    }

    /// The value of `e` when it names no local of the function (numbers, macros, globals).
    fn constant(&self, e: Node<'t>) -> Option<i64> {
        let locals = crate::text::tokens(node_text(e, self.text))
            .into_iter()
            .any(|(is_id, name)| is_id && self.facts.decls.contains_key(name));
        if locals || self.facts.too_big {
            return None;
        }
        eval(e, self.text, self, 0)
    }

    /// The guard of the assignment `change` to a launch size: the literals of the `if`s around
    /// it when it comes before the launch in the text (one after it, in a loop, ran in an
    /// earlier iteration: no guard).
    pub(super) fn assignment_guard(&self, change: Node<'t>) -> Vec<Lit<'t>> {
        if change.start_byte() >= self.at {
            return Vec::new();
        }
        self.path_literals(change)
    }

    /// [`HostEnv::value_set`] with guards: a constant, a local's values (each assignment's
    /// guarded by the `if`s around it), `c ? a : b` (`a` guarded by `c`, `b` by its negation),
    /// arithmetic on those.
    pub(super) fn guarded_values(&self, e: Node<'t>, depth: u32) -> Option<Guarded<'t>> {
        if depth > 8 {
            return None;
        }
        if let Some(v) = eval(e, self.text, self, 0) {
            return Some(vec![(v, Vec::new())]);
        }
        let out = match e.kind() {
            "parenthesized_expression" => self.guarded_values(e.named_child(0)?, depth + 1)?,
            "conditional_expression" => {
                let c = e.child_by_field_name("condition")?;
                let mut out = Vec::new();
                for (branch, holds) in [("consequence", true), ("alternative", false)] {
                    let vs = self.guarded_values(e.child_by_field_name(branch)?, depth + 1)?;
                    for (v, mut g) in vs {
                        self.literals(c, holds, &mut g);
                        out.push((v, g));
                    }
                }
                out
            }
            "identifier" => self.local_guarded_values(node_text(e, self.text), depth + 1)?,
            "binary_expression" => {
                let op = node_text(e.child_by_field_name("operator")?, self.text);
                if !matches!(op, "+" | "-" | "*" | "/" | "%") {
                    return None;
                }
                let a = self.guarded_values(e.child_by_field_name("left")?, depth + 1)?;
                let b = self.guarded_values(e.child_by_field_name("right")?, depth + 1)?;
                let mut out = Vec::new();
                for (x, gx) in &a {
                    for (y, gy) in &b {
                        let mut g = gx.clone();
                        g.extend(gy.iter().copied());
                        out.push((crate::consteval::binop(op, *x, *y)?, g));
                    }
                }
                out
            }
            _ => return None,
        };
        (!out.is_empty() && out.len() <= MAX_GUARDED).then_some(out)
    }
}

fn strip_parens(mut e: Node<'_>) -> Node<'_> {
    while e.kind() == "parenthesized_expression" && e.named_child_count() == 1 {
        match e.named_child(0) {
            Some(c) => e = c,
            None => break,
        }
    }
    e
}
