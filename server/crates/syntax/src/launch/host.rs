//! What the host function around a launch does to a local before the launch: where it is
//! declared, the statements that may change it, and whether a value read at the launch is still
//! the one it was given.

use super::*;

/// The nodes of one host function that launch sites ask about, gathered in one walk and shared
/// by the function's sites (a host function with hundreds of launches had every site walk the
/// whole body once per local it looked up: seconds per file).
#[derive(Default)]
pub(super) struct FunctionFacts<'t> {
    /// Declarations (`init_declarator`, `declaration`, `function_declarator`) by the names
    /// they may declare, in walk order.
    pub(super) decls: std::collections::HashMap<String, Vec<Node<'t>>>,
    /// Nodes that may change a variable (see [`HostEnv::changes`]), in walk order.
    pub(super) change_sites: Vec<Node<'t>>,
    /// More than [`MAX_FUNCTION_NODES`] nodes: nothing is known of the function's locals.
    pub(super) too_big: bool,
    has_goto: bool,
    /// [`HostEnv::changes`] by name: asked for each local and each text compared.
    changes: std::cell::RefCell<std::collections::HashMap<String, std::rc::Rc<[Node<'t>]>>>,
}

/// Past this many nodes a host function is not read (its locals are unknown).
const MAX_FUNCTION_NODES: usize = 200_000;

impl<'t> FunctionFacts<'t> {
    pub(super) fn of(body: Option<Node<'t>>, text: &str) -> FunctionFacts<'t> {
        let Some(body) = body else {
            // Outside a function: no locals; a `goto` cannot be ruled out.
            return FunctionFacts {
                has_goto: true,
                ..FunctionFacts::default()
            };
        };
        let mut facts = FunctionFacts::default();
        let mut stack = vec![body];
        let mut count = 0;
        while let Some(n) = stack.pop() {
            count += 1;
            if count > MAX_FUNCTION_NODES {
                return FunctionFacts {
                    too_big: true,
                    has_goto: true,
                    ..FunctionFacts::default()
                };
            }
            match n.kind() {
                "init_declarator" | "function_declarator" => {
                    let name = n.child_by_field_name("declarator").and_then(|d| {
                        if n.kind() == "init_declarator" {
                            declarator_name(d)
                        } else {
                            Some(d)
                        }
                    });
                    if let Some(name) = name {
                        facts
                            .decls
                            .entry(node_text(name, text).to_string())
                            .or_default()
                            .push(n);
                    }
                }
                "declaration" => {
                    let mut c = n.walk();
                    for d in n.children_by_field_name("declarator", &mut c) {
                        if d.kind() == "identifier" {
                            facts
                                .decls
                                .entry(node_text(d, text).to_string())
                                .or_default()
                                .push(n);
                        }
                    }
                }
                "assignment_expression"
                | "update_expression"
                | "pointer_expression"
                | "argument_list" => facts.change_sites.push(n),
                "goto_statement" => facts.has_goto = true,
                _ => {}
            }
            // A reference bound to a variable is an `init_declarator` too.
            if n.kind() == "init_declarator" {
                facts.change_sites.push(n);
            }
            let mut c = n.walk();
            for ch in n.named_children(&mut c) {
                stack.push(ch);
            }
        }
        facts
    }
}

impl ConstEnv for HostEnv<'_, '_> {
    fn macros(&self) -> &MacroTable {
        &self.tables.macros
    }
    fn ident(&self, name: &str, depth: u32) -> Option<i64> {
        if let Some(v) = self.tables.ident(name, depth) {
            return Some(v);
        }
        let (init, _) = self.local_init(name)?;
        match init.kind() {
            "argument_list" | "parameter_list" => None,
            _ => eval(init, self.text, self, depth + 1),
        }
    }
}

impl<'t> HostEnv<'_, 't> {
    /// The initializer of the local `name` in scope at the launch (the innermost declaration
    /// before it whose block holds it), if the function never assigns `name`.
    pub(super) fn local_init(&self, name: &str) -> Option<(Node<'t>, Node<'t>)> {
        let (init, decl) = self.local_decl(name, false)?;
        // Changed in the declaration's scope: its value at the launch is not the initial one,
        // except for `dim3` field stores that every run of the launch sees (`field_stores`).
        // A `const` value is its initializer's, whatever it is passed to.
        let changes = match self.const_value(decl) {
            true => vec![],
            false => self.changes_reaching(name, decl),
        };
        for change in changes {
            let field_store = self.declares_dim3(decl)
                && change
                    .child_by_field_name("left")
                    .filter(|t| t.kind() == "field_expression")
                    .and_then(|t| t.child_by_field_name("argument"))
                    .is_some_and(|b| b.kind() == "identifier")
                && self.dim3_field_store(change).is_some();
            if !field_store {
                return None;
            }
        }
        Some((init, decl))
    }

    /// The value of the local `name` where a condition around the launch is read (or at the
    /// launch), when the function reassigns it on the way: the right side of the last plain
    /// assignment `name = …;` before that point, which every run to that point executes (a
    /// statement of a block that holds it, no loop around it), and where that right side is
    /// read (its own `name` is the value before it); the initializer and the declaration
    /// when no change comes before that point. `None` when a change may run in a loop, or the
    /// last one before the point is not such an assignment (`int bs = …; if (bs >= 768) { bs =
    /// bs / 4; k<<<g, bs>>>(…); }` gives `bs / 4` at the launch and `bs`'s initializer in the
    /// condition).
    pub(super) fn value_before(&self, name: &str) -> Option<(Node<'t>, usize)> {
        let (init, decl) = self.local_decl(name, false)?;
        if init.kind().ends_with("_list") || init.kind() == "declaration" {
            return None;
        }
        let point = self.since.get().unwrap_or(self.at);
        // A declaration after the point (one the launch sees, shadowing the name the
        // condition reads) says nothing of the value there.
        if decl.start_byte() >= point {
            return None;
        }
        let changes = self.changes_reaching(name, decl);
        let in_loop = |n: Node<'t>| {
            let mut p = n.parent();
            while let Some(a) = p {
                if Some(a) == self.func_body {
                    return false;
                }
                if matches!(
                    a.kind(),
                    "for_statement" | "while_statement" | "do_statement" | "for_range_loop"
                ) {
                    return true;
                }
                p = a.parent();
            }
            false
        };
        if self.has_goto() || changes.iter().any(|c| in_loop(*c)) {
            return None;
        }
        // The changes come in the order the function was walked, not in text order.
        let Some(last) = changes
            .iter()
            .filter(|c| c.start_byte() < point)
            .max_by_key(|c| c.start_byte())
        else {
            return Some((init, decl.start_byte()));
        };
        // `name = rhs;`: a statement of its own, in a block that holds the point.
        if last.kind() != "assignment_expression"
            || last
                .child_by_field_name("operator")
                .is_none_or(|o| node_text(o, self.text) != "=")
            || last
                .child_by_field_name("left")
                .is_none_or(|l| l.kind() != "identifier" || node_text(l, self.text) != name)
        {
            return None;
        }
        let statement = last
            .parent()
            .filter(|p| p.kind() == "expression_statement")?;
        let block = statement
            .parent()
            .filter(|b| b.kind() == "compound_statement")?;
        if !(block.start_byte() <= point && point < block.end_byte()) {
            return None;
        }
        Some((last.child_by_field_name("right")?, last.start_byte()))
    }

    /// The changes of `name` (see [`HostEnv::changes`]) in the scope of its declaration `decl`
    /// that may run before the launch.
    pub(super) fn changes_reaching(&self, name: &str, decl: Node<'t>) -> Vec<Node<'t>> {
        let scope = scope_of(decl);
        let in_scope =
            |at: usize| at > decl.start_byte() && scope.is_none_or(|b| at < b.end_byte());
        self.changes(name)
            .iter()
            .copied()
            .filter(|c| in_scope(c.start_byte()) && self.may_precede_launch(*c))
            .collect()
    }

    /// The declaration of the local `name` in scope at the launch and its initializer (the
    /// innermost declaration before it whose block holds it), whatever the function does with
    /// it later. A `dim3 b;` without initializer is its own initializer; with `bare_scalars`, so
    /// is any other declaration without one (`int by;`).
    pub(super) fn local_decl(
        &self,
        name: &str,
        bare_scalars: bool,
    ) -> Option<(Node<'t>, Node<'t>)> {
        self.func_body?;
        let mut found: Option<(Node<'t>, Node<'t>)> = None;
        let at = self.at;
        // A declaration is in scope at the launch when it comes before it and its block (or
        // `for` statement) holds the launch; the innermost such one hides the others.
        let visible = |decl: Node| {
            if decl.start_byte() >= at {
                return false;
            }
            let mut p = decl.parent();
            while let Some(b) = p {
                if matches!(b.kind(), "compound_statement" | "for_statement") {
                    return b.start_byte() <= at && at < b.end_byte();
                }
                p = b.parent();
            }
            true
        };
        let mut pick = |init: Node<'t>, decl: Node<'t>| {
            if visible(decl) && found.is_none_or(|(_, d)| d.start_byte() < decl.start_byte()) {
                found = Some((init, decl));
            }
        };
        if self.facts.too_big {
            return None;
        }
        for &n in self.facts.decls.get(name).into_iter().flatten() {
            match n.kind() {
                "init_declarator" => {
                    if let (Some(d), Some(v)) = (
                        n.child_by_field_name("declarator"),
                        n.child_by_field_name("value"),
                    ) {
                        if declarator_name(d).is_some_and(|x| node_text(x, self.text) == name) {
                            pick(v, n);
                        }
                    }
                }
                // `dim3 block;`: (1, 1, 1) until its fields are stored.
                "declaration" => {
                    let is_dim3 = n
                        .child_by_field_name("type")
                        .is_some_and(|t| node_text(t, self.text) == "dim3");
                    let mut c = n.walk();
                    let bare = n
                        .children_by_field_name("declarator", &mut c)
                        .any(|d| d.kind() == "identifier" && node_text(d, self.text) == name);
                    if bare && (is_dim3 || bare_scalars) {
                        pick(n, n);
                    }
                }
                // `dim3 block(TILE, ROWS);` with macro arguments is C++'s most vexing parse:
                // tree-sitter reads a function declaration whose parameter *types* are the
                // macro names. In a `dim3` declaration inside a host function it can only be
                // the constructor call, so its parameter list is taken as the arguments.
                "function_declarator" => {
                    let is_dim3 = n.parent().is_some_and(|p| {
                        p.kind() == "declaration"
                            && p.child_by_field_name("type")
                                .is_some_and(|t| node_text(t, self.text) == "dim3")
                    });
                    if let (true, Some(d), Some(params)) = (
                        is_dim3,
                        n.child_by_field_name("declarator"),
                        n.child_by_field_name("parameters"),
                    ) {
                        if node_text(d, self.text) == name {
                            pick(params, n);
                        }
                    }
                }
                _ => {}
            }
        }
        found
    }

    /// Where the function changes `name` or lets other code change it: an assignment or
    /// increment of it (or of a member or element of it), `&name`, a reference bound to it,
    /// `name` passed whole to a call (which may take it by reference; a kernel launch takes its
    /// arguments by value). Each is the node of the change (the assignment, for field stores).
    pub(super) fn changes(&self, name: &str) -> std::rc::Rc<[Node<'t>]> {
        if let Some(known) = self.facts.changes.borrow().get(name) {
            return known.clone();
        }
        let found: std::rc::Rc<[Node<'t>]> = self.find_changes(name).into();
        self.facts
            .changes
            .borrow_mut()
            .insert(name.to_string(), found.clone());
        found
    }

    pub(super) fn find_changes(&self, name: &str) -> Vec<Node<'t>> {
        let Some(body) = self.func_body else {
            return vec![];
        };
        let is_name = |n: Node| n.kind() == "identifier" && node_text(n, self.text) == name;
        // `v`, `v.x`, `v[i]`, `v.a.b`: the variable written.
        let base = |mut t: Node<'t>| {
            while matches!(t.kind(), "field_expression" | "subscript_expression") {
                match t.child_by_field_name("argument") {
                    Some(a) => t = a,
                    None => break,
                }
            }
            t
        };
        if self.facts.too_big {
            // Too big to read: changed, as far as we know.
            return vec![body];
        }
        let mut out = Vec::new();
        for &n in &self.facts.change_sites {
            let changed = match n.kind() {
                "assignment_expression" | "update_expression" => n
                    .child_by_field_name("left")
                    .or_else(|| n.child_by_field_name("argument"))
                    .is_some_and(|t| is_name(base(t))),
                "pointer_expression" => {
                    n.child(0).is_some_and(|op| node_text(op, self.text) == "&")
                        && n.child_by_field_name("argument").is_some_and(is_name)
                }
                "init_declarator" => {
                    n.child_by_field_name("declarator")
                        .is_some_and(|d| d.kind() == "reference_declarator")
                        && n.child_by_field_name("value").is_some_and(is_name)
                }
                "argument_list" => {
                    let mut c = n.walk();
                    let position = n.named_children(&mut c).position(is_name);
                    position.is_some_and(|i| !self.takes_by_value(n, i))
                }
                _ => false,
            };
            if changed {
                out.push(n);
            }
        }
        out
    }

    /// Whether the call (or constructor) whose argument list is `args` surely takes its
    /// argument `i` by value: a kernel launch, a function-like macro (its text is expanded
    /// where it stands), a `dim3` constructor, a function of the file whose parameter `i` is a
    /// plain value (every overload of that name). Anything else may take a reference.
    pub(super) fn takes_by_value(&self, args: Node<'t>, i: usize) -> bool {
        let Some(parent) = args.parent() else {
            return false;
        };
        if parent.kind() != "call_expression" {
            // `dim3 grid(n)`: the constructor's declaration.
            return self.declares_dim3(parent);
        }
        let mut w = parent.walk();
        if parent
            .children(&mut w)
            .any(|ch| ch.kind() == "kernel_call_syntax")
        {
            return true;
        }
        let Some(callee) = parent.child_by_field_name("function") else {
            return false;
        };
        // A ceiling division the library describes is a function of the values.
        if self.library_ceil_div(parent, self.text) {
            return true;
        }
        // `float(n)`: a functional cast to a built-in type.
        if matches!(callee.kind(), "primitive_type" | "sized_type_specifier") {
            return true;
        }
        // A function of its arguments' values the library describes (`std::ceil`, `min`) and
        // the file does not define, with no effect on this argument.
        let bare = {
            let full = node_text(callee, self.text);
            full.rsplit("::").next().unwrap_or(full).trim()
        };
        if !self.tables.funcs.contains_key(bare) && !self.tables.macros.contains_key(bare) {
            use cudarace_library::Returns;
            if let Some(m) = self.tables.library.function(bare) {
                let of_values = matches!(
                    m.returns,
                    Returns::Pure
                        | Returns::Min
                        | Returns::Max
                        | Returns::Abs
                        | Returns::Product
                        | Returns::CeilDiv
                );
                if of_values && m.effects.iter().all(|e| e.arg != i) {
                    return true;
                }
            }
        }
        // `static_cast<int>(n)` to a type that is not a reference.
        if callee.kind() == "template_function"
            && callee
                .child_by_field_name("name")
                .is_some_and(|n| node_text(n, self.text) == "static_cast")
            && callee
                .child_by_field_name("arguments")
                .is_some_and(|a| !node_text(a, self.text).contains('&'))
        {
            return true;
        }
        let callee = match callee.kind() {
            "template_function" => callee.child_by_field_name("name").unwrap_or(callee),
            _ => callee,
        };
        let name = node_text(callee, self.text);
        if name == "dim3"
            || self
                .tables
                .macros
                .get(name)
                .is_some_and(|m| m.params.is_some())
        {
            return true;
        }
        let Some(defs) = self.tables.funcs.get(name).filter(|d| !d.is_empty()) else {
            return false;
        };
        defs.iter().all(|def| {
            let params = def
                .node
                .child_by_field_name("declarator")
                .and_then(function_declarator)
                .and_then(|f| f.child_by_field_name("parameters"));
            let Some(params) = params else {
                return false;
            };
            let mut c = params.walk();
            let param = params
                .named_children(&mut c)
                .filter(|p| p.kind() == "parameter_declaration")
                .nth(i);
            param.is_some_and(|p| {
                p.child_by_field_name("declarator").is_some_and(|d| {
                    crate::typenames::declarator_shape(d) == crate::typenames::Shape::Scalar
                })
            })
        })
    }

    /// Whether the value `text` names is the same wherever the function writes it: none of its
    /// names is changed anywhere in the function. A launch size and an argument written the
    /// same way are then the same value.
    pub(super) fn unchanged(&self, text: &str) -> bool {
        self.names_unchanged(text, &|c| match self.since.get() {
            None => self.may_precede_launch(c),
            Some(since) => self.may_run_between(since, c),
        })
    }

    /// [`HostEnv::unchanged`] for names read at `from` (before the launch): a change before
    /// `from` does not count (unless a `goto` may jump back over it), one after it does.
    pub(super) fn unchanged_from(&self, text: &str, from: usize) -> bool {
        if self.has_goto() {
            return self.unchanged(text);
        }
        let from = self.since.get().map_or(from, |s| s.min(from));
        self.names_unchanged(text, &|c| self.may_run_between(from, c))
    }

    /// Whether no change of a name in `text` `counts` (a `const` local never changes).
    fn names_unchanged(&self, text: &str, counts: &dyn Fn(Node<'t>) -> bool) -> bool {
        crate::text::tokens(text)
            .into_iter()
            .filter(|(is_id, _)| *is_id)
            .all(|(_, name)| {
                let constant = self
                    .local_decl(name, false)
                    .is_some_and(|(_, decl)| self.const_value(decl));
                constant || !self.changes(name).iter().any(|c| counts(*c))
            })
    }

    /// Whether the change `c` may run after `since` (a condition around the launch) and before
    /// the launch: it comes between them in the text, or after the launch inside a loop that
    /// holds the launch but not the condition (a loop around both evaluates the condition
    /// again). A change before the condition cannot come between them: a loop holding it and
    /// the launch holds the condition too.
    pub(super) fn may_run_between(&self, since: usize, c: Node<'t>) -> bool {
        if c.start_byte() < since {
            return false;
        }
        if c.start_byte() < self.at {
            return true;
        }
        let mut p = c.parent();
        while let Some(a) = p {
            if Some(a) == self.func_body {
                break;
            }
            let is_loop = matches!(
                a.kind(),
                "for_statement" | "while_statement" | "do_statement" | "for_range_loop"
            );
            let holds_launch = a.start_byte() <= self.at && self.at < a.end_byte();
            if is_loop && holds_launch && a.start_byte() > since {
                return true;
            }
            p = a.parent();
        }
        self.has_goto()
    }

    /// Whether the change `n` may run before the launch: it comes before it in the text, or
    /// after it inside a loop that also holds the launch (the next iteration's launch sees
    /// it). A change after the launch and outside every loop around it cannot reach it
    /// (`dim3 threads(128); k<<<b, threads>>>(…); threads = dim3(bx, 16);`).
    pub(super) fn may_precede_launch(&self, n: Node<'t>) -> bool {
        if n.start_byte() < self.at {
            return true;
        }
        let mut p = n.parent();
        while let Some(a) = p {
            let is_loop = matches!(
                a.kind(),
                "for_statement" | "while_statement" | "do_statement" | "for_range_loop"
            );
            if is_loop && a.start_byte() <= self.at && self.at < a.end_byte() {
                return true;
            }
            // A `goto` may jump back over the launch: read as changed.
            if Some(a) == self.func_body {
                break;
            }
            p = a.parent();
        }
        self.has_goto()
    }

    /// Whether the function holds a `goto` (code after the launch may then run before it).
    pub(super) fn has_goto(&self) -> bool {
        self.facts.has_goto
    }

    /// Whether the local declared by `decl` (an `init_declarator`) is a `const` or `constexpr`
    /// value (not a pointer, reference or array, not `mutable`): passing it to a call, even by
    /// reference, cannot change it, so its value at the launch is its initializer's
    /// (`constexpr int TPB = 256; int blocks = ceildiv<int>(n, TPB); k<<<blocks, TPB>>>(…)`).
    pub(super) fn const_value(&self, decl: Node<'t>) -> bool {
        if decl.kind() != "init_declarator"
            || decl
                .child_by_field_name("declarator")
                .is_none_or(|d| d.kind() != "identifier")
        {
            return false;
        }
        let Some(declaration) = decl.parent().filter(|d| d.kind() == "declaration") else {
            return false;
        };
        let quals = crate::collect::qualifiers(declaration, self.text);
        quals.iter().any(|q| q == "const" || q == "constexpr")
            && !quals.iter().any(|q| q == "mutable")
    }

    /// Whether a statement after `decl` and before the launch, in a block that holds the
    /// launch, assigns `name` on every path through it: `name = e;`, a block with such a
    /// statement, an `if` with an `else` whose both branches do.
    pub(super) fn overwritten_before_launch(&self, name: &str, decl: Node<'t>) -> bool {
        let Some(body) = self.func_body else {
            return false;
        };
        fn assigns(env: &HostEnv, s: Node, name: &str, depth: u32) -> bool {
            if depth > 32 {
                return false;
            }
            match s.kind() {
                "expression_statement" => s.named_child(0).is_some_and(|e| {
                    e.kind() == "assignment_expression"
                        && e.child_by_field_name("operator")
                            .is_some_and(|o| node_text(o, env.text) == "=")
                        && e.child_by_field_name("left").is_some_and(|l| {
                            l.kind() == "identifier" && node_text(l, env.text) == name
                        })
                }),
                "compound_statement" => {
                    let mut c = s.walk();
                    let found = s
                        .named_children(&mut c)
                        .any(|ch| assigns(env, ch, name, depth + 1));
                    found
                }
                "else_clause" => s
                    .named_child(0)
                    .is_some_and(|b| assigns(env, b, name, depth + 1)),
                "if_statement" => {
                    let (Some(a), Some(b)) = (
                        s.child_by_field_name("consequence"),
                        s.child_by_field_name("alternative"),
                    ) else {
                        return false;
                    };
                    assigns(env, a, name, depth + 1) && assigns(env, b, name, depth + 1)
                }
                _ => false,
            }
        }
        // The statements of the blocks from the declaration's block down to the launch.
        let mut blocks = Vec::new();
        let mut p = Some(self.at_node(body));
        while let Some(a) = p {
            if a.kind() == "compound_statement" {
                blocks.push(a);
            }
            if a == body {
                break;
            }
            p = a.parent();
        }
        // A statement of a block around the launch that comes before it runs, whole, before
        // the launch whenever the launch runs (a `break`, `continue` or `return` that skips
        // the assignment skips the launch too; a `goto` is ruled out by the caller).
        blocks.iter().any(|b| {
            let mut c = b.walk();
            let found = b.named_children(&mut c).any(|st| {
                st.start_byte() > decl.end_byte()
                    && st.end_byte() <= self.at
                    && assigns(self, st, name, 0)
            });
            found
        })
    }

    /// The innermost node of `body` that holds the launch.
    pub(super) fn at_node(&self, body: Node<'t>) -> Node<'t> {
        body.descendant_for_byte_range(self.at, self.at)
            .unwrap_or(body)
    }

    /// Whether `decl` (an `init_declarator` or a declaration) declares a plain integer
    /// variable: not static, not a pointer, reference or array, of a built-in integer type.
    pub(super) fn plain_integer(&self, decl: Node<'t>) -> bool {
        let (declaration, declarator) = match decl.kind() {
            "init_declarator" => (decl.parent(), decl.child_by_field_name("declarator")),
            _ => (Some(decl), None),
        };
        let Some(declaration) = declaration.filter(|d| d.kind() == "declaration") else {
            return false;
        };
        if declarator.is_some_and(|d| d.kind() != "identifier") {
            return false;
        }
        let mut c = declaration.walk();
        let is_static = declaration.children(&mut c).any(|ch| {
            ch.kind() == "storage_class_specifier" && node_text(ch, self.text) != "register"
        });
        let ty = declaration.child_by_field_name("type").map(|t| {
            node_text(t, self.text)
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
        });
        !is_static
            && ty.is_some_and(|t| {
                matches!(
                    t.as_str(),
                    "int"
                        | "unsigned"
                        | "unsigned int"
                        | "signed"
                        | "signed int"
                        | "long"
                        | "long int"
                        | "unsigned long"
                        | "long long"
                        | "unsigned long long"
                        | "size_t"
                        | "int32_t"
                        | "uint32_t"
                        | "int64_t"
                        | "uint64_t"
                )
            })
    }
}
