//! Launch sizes from host code: `dim3` locals and their fields, constant and `const` sizes,
//! the sets of values a size takes on the paths to the launch.

use super::*;

impl<'t> HostEnv<'_, 't> {
    /// Whether `decl` (a declaration, or a declarator inside one) has type `dim3`.
    pub(super) fn declares_dim3(&self, decl: Node) -> bool {
        let mut d = Some(decl);
        while let Some(n) = d {
            if n.kind() == "declaration" {
                return n
                    .child_by_field_name("type")
                    .is_some_and(|t| node_text(t, self.text) == "dim3");
            }
            d = n.parent();
        }
        false
    }

    /// `v.x = e` (`x`, `y` or `z`) that either runs before the launch on every path to it
    /// (only blocks and expression statements between it and a block holding the launch) or
    /// runs after it and
    /// outside any loop around the launch (it cannot change this launch): the component and
    /// the stored value, with whether it comes before the launch.
    pub(super) fn dim3_field_store(&self, n: Node<'t>) -> Option<(usize, Node<'t>, bool)> {
        if n.kind() != "assignment_expression"
            || n.child_by_field_name("operator")
                .map(|o| node_text(o, self.text))
                != Some("=")
        {
            return None;
        }
        let target = n.child_by_field_name("left")?;
        if target.kind() != "field_expression" {
            return None;
        }
        let d = dim3_component(target, self.text)?;
        let value = n.child_by_field_name("right")?;
        let body = self.func_body?;
        let mut p = n.parent();
        if n.start_byte() < self.at {
            // Straight-line up to the block that also holds the launch: whenever the launch
            // runs, the store ran before it.
            while let Some(a) = p {
                let holds_launch = a.start_byte() <= self.at && self.at < a.end_byte();
                if a == body || (a.kind() == "compound_statement" && holds_launch) {
                    return Some((d, value, true));
                }
                if !matches!(
                    a.kind(),
                    "expression_statement" | "compound_statement" | "parenthesized_expression"
                ) {
                    return None;
                }
                p = a.parent();
            }
            return None;
        }
        while let Some(a) = p {
            if a == body {
                return Some((d, value, false));
            }
            let is_loop = matches!(
                a.kind(),
                "for_statement" | "while_statement" | "do_statement" | "for_range_loop"
            );
            if is_loop && a.start_byte() <= self.at && self.at < a.end_byte() {
                return None;
            }
            p = a.parent();
        }
        None
    }

    /// The stores `name.x = e` that run before the launch, after `decl` (the declaration in
    /// scope), in source order: component and value.
    pub(super) fn field_stores(&self, name: &str, decl: Node<'t>) -> Vec<(usize, Node<'t>)> {
        if self.func_body.is_none() || self.facts.too_big {
            return vec![];
        }
        let mut out = Vec::new();
        for &n in &self.facts.change_sites {
            if n.start_byte() >= self.at {
                continue;
            }
            if n.kind() == "assignment_expression" && n.start_byte() > decl.end_byte() {
                let base = n
                    .child_by_field_name("left")
                    .filter(|t| t.kind() == "field_expression")
                    .and_then(|t| t.child_by_field_name("argument"));
                if base.is_some_and(|b| node_text(b, self.text) == name) {
                    if let Some((d, v, true)) = self.dim3_field_store(n) {
                        out.push((n.start_byte(), d, v));
                    }
                }
            }
        }
        out.sort_by_key(|(at, _, _)| *at);
        out.into_iter().map(|(_, d, v)| (d, v)).collect()
    }

    pub(super) fn dims(&self, e: Node<'t>, depth: u32) -> Option<[u64; 3]> {
        if depth > 16 {
            return None;
        }
        let pos = |v: i64| if v > 0 { Some(v as u64) } else { None };
        match e.kind() {
            "call_expression" => {
                let f = e.child_by_field_name("function")?;
                if node_text(f, self.text) != "dim3" {
                    return Some([pos(eval(e, self.text, self, 0)?)?, 1, 1]);
                }
                self.dim3_args(e.child_by_field_name("arguments")?)
            }
            "identifier" => {
                if self.tables.macros.contains_key(node_text(e, self.text)) {
                    let v = eval(e, self.text, self, 0)?;
                    return Some([pos(v)?, 1, 1]);
                }
                let name = node_text(e, self.text);
                let (init, decl) = match self.local_init(name) {
                    Some(found) => found,
                    None => return Some([pos(eval(e, self.text, self, 0)?)?, 1, 1]),
                };
                let mut dims = match init.kind() {
                    "argument_list" | "initializer_list" => self.dim3_args(init),
                    "parameter_list" => self.dim3_params(init),
                    "declaration" => Some([1, 1, 1]),
                    _ => self.dims(init, depth + 1),
                };
                if self.declares_dim3(decl) {
                    for (d, v) in self.field_stores(name, decl) {
                        let v = eval(v, self.text, self, 0).and_then(pos);
                        match (&mut dims, v) {
                            (Some(dims), Some(v)) => dims[d] = v,
                            (dims, None) => *dims = None,
                            (None, Some(_)) => {}
                        }
                    }
                }
                dims
            }
            "initializer_list" => self.dim3_args(e),
            _ => Some([pos(eval(e, self.text, self, 0)?)?, 1, 1]),
        }
    }

    /// The "parameters" of a `dim3 b(TILE, ROWS)` misparsed as a function declaration: each is
    /// a constant expression written where a parameter type would be.
    pub(super) fn dim3_params(&self, params: Node<'t>) -> Option<[u64; 3]> {
        let items = self.dim3_items(params, &|a| {
            Some(vec![eval_text(node_text(a, self.text), self, 0)?])
        })?;
        Some(items.map(|v| v[0]))
    }

    /// The values the expression `e` may have at the launch when it has a few integer
    /// constant values: a constant, a local whose initializer and every assignment that may
    /// reach the launch are such expressions (`threadsY = c ? 8 : 4`), `c ? a : b` (either),
    /// arithmetic on those; a value chosen only in branches the launch's own branches rule out
    /// is left out (see `guards.rs`). The list may hold values that never happen, never misses
    /// one.
    pub(super) fn value_set(&self, e: Node<'t>, depth: u32) -> Option<Vec<i64>> {
        const MAX: usize = 16;
        let guarded = self.guarded_values(e, depth)?;
        self.reaching(guarded).filter(|out| out.len() <= MAX)
    }

    /// The values of `guarded` that may reach the launch, sorted, without repeats (`None` if
    /// none does).
    fn reaching(&self, guarded: guards::Guarded<'t>) -> Option<Vec<i64>> {
        let mut out: Vec<i64> = guarded
            .into_iter()
            .filter(|(_, g)| self.reaches_launch(g))
            .map(|(v, _)| v)
            .collect();
        out.sort_unstable();
        out.dedup();
        (!out.is_empty()).then_some(out)
    }

    /// The values the integer local `name` may have at the launch: its initializer's and those
    /// of every `name = e` that may run before the launch ([`HostEnv::value_set`]). `None` when
    /// it is changed any other way (`+=`, `++`, `&name`, passed by reference), is `static`
    /// (an assignment after the launch reaches the next call's launch) or not a plain integer.
    pub(super) fn local_values(&self, name: &str, depth: u32) -> Option<Vec<i64>> {
        let guarded = self.local_guarded_values(name, depth)?;
        self.reaching(guarded)
    }

    /// [`HostEnv::local_values`] with guards: an assignment's values hold only where the
    /// `if`s around it took the branch that holds it.
    pub(super) fn local_guarded_values(
        &self,
        name: &str,
        depth: u32,
    ) -> Option<guards::Guarded<'t>> {
        let (init, decl) = self.local_decl(name, true)?;
        if self.declares_dim3(decl) || !self.plain_integer(decl) {
            return None;
        }
        // An initial value every path to the launch overwrites (`int bx = 0; if (c) bx = 4;
        // else bx = 8;`) is not one of the values.
        let overwritten = init.kind() != "declaration"
            && !self.has_goto()
            && self.overwritten_before_launch(name, decl);
        let mut out = match init.kind() {
            "declaration" => Vec::new(),
            _ if overwritten => Vec::new(),
            "argument_list" | "initializer_list" => {
                let items: Vec<Node> = list_items(init);
                let [one] = items.as_slice() else {
                    return None;
                };
                self.guarded_values(*one, depth + 1)?
            }
            _ => self.guarded_values(init, depth + 1)?,
        };
        let changes = match self.const_value(decl) {
            true => vec![],
            false => self.changes_reaching(name, decl),
        };
        for change in changes {
            let guard = self.assignment_guard(change);
            let values = self.guarded_values(self.assigned_value(change, name)?, depth + 1)?;
            out.extend(values.into_iter().map(|(v, mut g)| {
                g.extend(guard.iter().copied());
                (v, g)
            }));
        }
        (!out.is_empty() && out.len() <= 64).then_some(out)
    }

    /// Like [`HostEnv::dims`], but each dimension is the list of values it may have
    /// ([`HostEnv::value_set`]): `dim3 threads(32, threadsY)` with `threadsY` 4 or 8.
    pub(super) fn dim_values(&self, e: Node<'t>, depth: u32) -> Option<[Vec<u64>; 3]> {
        if let Some(d) = self.dims(e, depth) {
            return Some(d.map(|v| vec![v]));
        }
        if depth > 16 {
            return None;
        }
        // A size that is an integer (`<<<(n + 255) / 256, 256>>>`) is a grid or block of one
        // dimension even when its value is not fixed.
        let scalar = |e: Node<'t>| match self.value_set(e, 0).and_then(positive) {
            Some(v) => Some([v, vec![1], vec![1]]),
            None if integer_shaped(e) => Some([vec![ANY_SIZE], vec![1], vec![1]]),
            None => None,
        };
        match e.kind() {
            "parenthesized_expression" => self.dim_values(e.named_child(0)?, depth + 1),
            "call_expression" => {
                let f = e.child_by_field_name("function")?;
                if node_text(f, self.text) == "dim3" {
                    self.list_values(e.child_by_field_name("arguments")?)
                } else {
                    scalar(e)
                }
            }
            "initializer_list" => self.list_values(e),
            "identifier" => {
                let name = node_text(e, self.text);
                if self.tables.macros.contains_key(name) {
                    return scalar(e);
                }
                match self.local_init(name) {
                    Some((_, decl)) if self.declares_dim3(decl) => {
                        self.local_dim_values(name, depth + 1)
                    }
                    None if self
                        .local_decl(name, false)
                        .is_some_and(|(_, decl)| self.declares_dim3(decl)) =>
                    {
                        self.assigned_dim_values(name, depth + 1)
                            .or_else(|| self.partly_stored_dim_values(name, depth + 1))
                    }
                    _ => scalar(e),
                }
            }
            _ => scalar(e),
        }
    }

    /// The values of a `dim3` local's initializer `init` (as [`HostEnv::local_decl`] gives it):
    /// `dim3 g(a, b)`, `dim3 g{a, b}`, `dim3 g;` (all 1), `dim3 g(A, B)` read as a declaration,
    /// or `dim3 g = e`.
    fn initial_dim_values(&self, init: Node<'t>, depth: u32) -> Option<[Vec<u64>; 3]> {
        match init.kind() {
            "argument_list" | "initializer_list" => self.list_values(init),
            "declaration" => Some([vec![1], vec![1], vec![1]]),
            "parameter_list" => self.param_values(init),
            _ => self.dim_values(init, depth + 1),
        }
    }

    /// [`HostEnv::dim_values`] of the `dim3` local `name` (`None` when it is not one, or is
    /// changed other than by field stores every launch sees).
    pub(super) fn local_dim_values(&self, name: &str, depth: u32) -> Option<[Vec<u64>; 3]> {
        if depth > 16 {
            return None;
        }
        let (init, decl) = self.local_init(name)?;
        if !self.declares_dim3(decl) {
            return None;
        }
        let mut out = self.initial_dim_values(init, depth)?;
        for (d, v) in self.field_stores(name, decl) {
            out[d] = self
                .value_set(v, 0)
                .and_then(positive)
                .unwrap_or(vec![ANY_SIZE]);
        }
        Some(out)
    }

    /// [`HostEnv::local_dim_values`] of a `dim3` local whose components are stored on some
    /// paths only (`dim3 grid(len, batch, heads); if (big) grid.x = …;`): such a component may
    /// have any size, the others keep theirs (`gridDim.z == heads`). `None` when the local is
    /// changed other than by stores to its components.
    pub(super) fn partly_stored_dim_values(&self, name: &str, depth: u32) -> Option<[Vec<u64>; 3]> {
        if depth > 16 {
            return None;
        }
        let (init, decl) = self.local_decl(name, false)?;
        if !self.declares_dim3(decl) {
            return None;
        }
        let mut out = self.initial_dim_values(init, depth)?;
        let mut changes = self.changes_reaching(name, decl);
        changes.sort_by_key(|c| c.start_byte());
        for change in changes {
            let d = self.stored_component(change, name)?;
            match self.dim3_field_store(change) {
                // On every path to the launch: its value.
                Some((d, v, true)) => {
                    out[d] = self
                        .value_set(v, 0)
                        .and_then(positive)
                        .unwrap_or(vec![ANY_SIZE]);
                }
                // After the launch, outside any loop around it: not this launch's.
                Some((_, _, false)) => {}
                // On some paths only (or not by `=`): any size.
                None => out[d] = vec![ANY_SIZE],
            }
        }
        Some(out)
    }

    /// The component (0, 1, 2 for `x`, `y`, `z`) that `change` stores to, when it is a store
    /// to a component of the local `name` (`name.x = e`, `name.y *= 2`).
    fn stored_component(&self, change: Node<'t>, name: &str) -> Option<usize> {
        if change.kind() != "assignment_expression" {
            return None;
        }
        let target = change
            .child_by_field_name("left")
            .filter(|t| t.kind() == "field_expression")?;
        let base = target.child_by_field_name("argument")?;
        if base.kind() != "identifier" || node_text(base, self.text) != name {
            return None;
        }
        dim3_component(target, self.text)
    }

    /// The values each dimension of the `dim3` local `name` may have at the launch when it is
    /// assigned whole (`dim3 block; if (c) block = dim3(256); else block = dim3(4, 32);`): its
    /// initial value (unless every path to the launch assigns it) and those of every
    /// `name = e` that may run before the launch, dimension by dimension. `None` when it is
    /// changed any other way (a field store among whole assignments, `&name`, passed by
    /// reference) or a value is not a few constants.
    pub(super) fn assigned_dim_values(&self, name: &str, depth: u32) -> Option<[Vec<u64>; 3]> {
        if depth > 16 || self.has_goto() {
            return None;
        }
        let (init, decl) = self.local_decl(name, false)?;
        if !self.declares_dim3(decl) {
            return None;
        }
        let mut out: [Vec<u64>; 3] = match self.overwritten_before_launch(name, decl) {
            true => [vec![], vec![], vec![]],
            false => self.initial_dim_values(init, depth)?,
        };
        for change in self.changes_reaching(name, decl) {
            let v = self.dim_values(self.assigned_value(change, name)?, depth + 1)?;
            for (o, v) in out.iter_mut().zip(v) {
                o.extend(v);
            }
        }
        for o in &mut out {
            o.sort_unstable();
            o.dedup();
            if o.contains(&ANY_SIZE) {
                *o = vec![ANY_SIZE];
            }
            if o.is_empty() || o.len() > 16 {
                return None;
            }
        }
        Some(out)
    }

    /// [`HostEnv::list_values`] for the "parameters" of a `dim3 b(TILE, rows)` misparsed as a
    /// function declaration (see [`HostEnv::dim3_params`]): constants, or locals' values; an
    /// item the file does not fix (`dim3 grid(n, b, heads)` with `n` a parameter) is
    /// [`ANY_SIZE`], and the others still bind, as in a constructor call.
    pub(super) fn param_values(&self, params: Node<'t>) -> Option<[Vec<u64>; 3]> {
        let items: Vec<Node> = list_items(params);
        if items.len() > 3 {
            return None;
        }
        let mut out = [vec![1], vec![1], vec![1]];
        for (i, a) in items.iter().enumerate() {
            let text = node_text(*a, self.text).trim();
            let values = match eval_text(text, self, 0) {
                Some(v) => Some(vec![v]),
                None if crate::text::tokens(text).len() == 1 => self.local_values(text, 0),
                None => None,
            };
            // One item may be another `dim3` (`dim3 grid(shape)`, a copy): only a known
            // integer is an x size then.
            if values.is_none() && items.len() == 1 {
                return None;
            }
            out[i] = values.and_then(positive).unwrap_or(vec![ANY_SIZE]);
        }
        Some(out)
    }

    /// The values of each item of a `dim3` constructor's arguments (missing ones are 1; an
    /// item the file does not fix, `dim3 grid(rows(), 4, 1)`, is [`ANY_SIZE`]: the others
    /// still bind).
    pub(super) fn list_values(&self, args: Node<'t>) -> Option<[Vec<u64>; 3]> {
        let items: Vec<Node> = list_items(args);
        // One item may be another `dim3` (a copy): only an integer expression is an x size.
        if items.len() > 3
            || (items.len() == 1
                && self.value_set(items[0], 0).is_none()
                && !integer_shaped(items[0]))
        {
            return None;
        }
        let mut out = [vec![1], vec![1], vec![1]];
        for (i, a) in items.iter().enumerate() {
            out[i] = self
                .value_set(*a, 0)
                .and_then(positive)
                .unwrap_or(vec![ANY_SIZE]);
        }
        Some(out)
    }

    /// Each of the (at most three) items of `list` through `values`, positive; missing ones 1.
    pub(super) fn dim3_items(
        &self,
        list: Node<'t>,
        values: &dyn Fn(Node<'t>) -> Option<Vec<i64>>,
    ) -> Option<[Vec<u64>; 3]> {
        let items: Vec<Node> = list_items(list);
        if items.len() > 3 {
            return None;
        }
        let mut out = [vec![1], vec![1], vec![1]];
        for (i, a) in items.iter().enumerate() {
            out[i] = positive(values(*a)?)?;
        }
        Some(out)
    }

    /// The constant items of a `dim3` constructor's arguments (missing ones are 1).
    pub(super) fn dim3_args(&self, args: Node<'t>) -> Option<[u64; 3]> {
        let items = self.dim3_items(args, &|a| Some(vec![eval(a, self.text, self, 0)?]))?;
        Some(items.map(|v| v[0]))
    }

    /// The right side of `change` when it is a plain `name = value` (not `+=`, not a member).
    pub(super) fn assigned_value(&self, change: Node<'t>, name: &str) -> Option<Node<'t>> {
        let plain = change.kind() == "assignment_expression"
            && change
                .child_by_field_name("operator")
                .is_some_and(|o| node_text(o, self.text) == "=")
            && change
                .child_by_field_name("left")
                .is_some_and(|l| l.kind() == "identifier" && node_text(l, self.text) == name);
        plain.then(|| change.child_by_field_name("right")).flatten()
    }
}

/// An expression whose value is surely an integer, not a `dim3`: arithmetic (`(n + 255) /
/// 256`), a number, or one of those in parentheses.
fn integer_shaped(e: Node<'_>) -> bool {
    match e.kind() {
        "binary_expression" | "number_literal" => true,
        "parenthesized_expression" => e.named_child(0).is_some_and(integer_shaped),
        _ => false,
    }
}
