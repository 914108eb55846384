//! Launch sites: `<<<grid, block>>>` in the file's host code, with the sizes and arguments they
//! give (launch sizes written in comments are read by [`crate::annotations`]).

use crate::collect::{declarator_name, function_declarator, Tables};
use crate::consteval::{eval, eval_text, node_text, ConstEnv};
use crate::preprocess::MacroTable;
use cudarace_ir::{BinOp, Dim, FileId, LaunchSite, SiteValue, Span};
use tree_sitter::{Node, Tree};

struct HostEnv<'a, 't> {
    tables: &'a Tables<'t>,
    /// The host function around the launch: local `int`/`dim3` declarations are looked up there.
    func_body: Option<Node<'t>>,
    /// Where the launch is: of several declarations of one name (`dim3 block(32, 32)` in each
    /// branch of an `if`), the one in scope there is used.
    at: usize,
    text: &'a str,
    /// What the host function holds, read once for all its launch sites.
    facts: std::rc::Rc<FunctionFacts<'t>>,
    /// While a condition around the launch is read: where it starts (or where the local it
    /// names was declared). A passed value named in it needs to stay the same from there to
    /// the launch only (see [`HostEnv::unchanged`]).
    since: std::cell::Cell<Option<usize>>,
}

/// The nodes of one host function that launch sites ask about, gathered in one walk and shared
/// by the function's sites (a host function with hundreds of launches had every site walk the
/// whole body once per local it looked up: seconds per file).
#[derive(Default)]
struct FunctionFacts<'t> {
    /// Declarations (`init_declarator`, `declaration`, `function_declarator`) by the names
    /// they may declare, in walk order.
    decls: std::collections::HashMap<String, Vec<Node<'t>>>,
    /// Nodes that may change a variable (see [`HostEnv::changes`]), in walk order.
    change_sites: Vec<Node<'t>>,
    /// More than [`MAX_FUNCTION_NODES`] nodes: nothing is known of the function's locals.
    too_big: bool,
    has_goto: bool,
    /// [`HostEnv::changes`] by name: asked for each local and each text compared.
    changes: std::cell::RefCell<std::collections::HashMap<String, std::rc::Rc<[Node<'t>]>>>,
}

/// Past this many nodes a host function is not read (its locals are unknown).
const MAX_FUNCTION_NODES: usize = 200_000;

impl<'t> FunctionFacts<'t> {
    fn of(body: Option<Node<'t>>, text: &str) -> FunctionFacts<'t> {
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
    fn local_init(&self, name: &str) -> Option<(Node<'t>, Node<'t>)> {
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

    /// The changes of `name` (see [`HostEnv::changes`]) in the scope of its declaration `decl`
    /// that may run before the launch.
    fn changes_reaching(&self, name: &str, decl: Node<'t>) -> Vec<Node<'t>> {
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
    fn local_decl(&self, name: &str, bare_scalars: bool) -> Option<(Node<'t>, Node<'t>)> {
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
    fn changes(&self, name: &str) -> std::rc::Rc<[Node<'t>]> {
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

    fn find_changes(&self, name: &str) -> Vec<Node<'t>> {
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
    fn takes_by_value(&self, args: Node<'t>, i: usize) -> bool {
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
    fn unchanged(&self, text: &str) -> bool {
        crate::text::tokens(text)
            .into_iter()
            .filter(|(is_id, _)| *is_id)
            .all(|(_, name)| {
                if self
                    .local_decl(name, false)
                    .is_some_and(|(_, decl)| self.const_value(decl))
                {
                    return true;
                }
                self.changes(name).iter().all(|c| match self.since.get() {
                    None => !self.may_precede_launch(*c),
                    Some(since) => !self.may_run_between(since, *c),
                })
            })
    }

    /// Whether the change `c` may run after `since` (a condition around the launch) and before
    /// the launch: it comes between them in the text, or after the launch inside a loop that
    /// holds the launch but not the condition (a loop around both evaluates the condition
    /// again). A change before the condition cannot come between them: a loop holding it and
    /// the launch holds the condition too.
    fn may_run_between(&self, since: usize, c: Node<'t>) -> bool {
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
    fn may_precede_launch(&self, n: Node<'t>) -> bool {
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
    fn has_goto(&self) -> bool {
        self.facts.has_goto
    }

    /// Whether the local declared by `decl` (an `init_declarator`) is a `const` or `constexpr`
    /// value (not a pointer, reference or array, not `mutable`): passing it to a call, even by
    /// reference, cannot change it, so its value at the launch is its initializer's
    /// (`constexpr int TPB = 256; int blocks = ceildiv<int>(n, TPB); k<<<blocks, TPB>>>(…)`).
    fn const_value(&self, decl: Node<'t>) -> bool {
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

    /// Whether `decl` (a declaration, or a declarator inside one) has type `dim3`.
    fn declares_dim3(&self, decl: Node) -> bool {
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
    fn dim3_field_store(&self, n: Node<'t>) -> Option<(usize, Node<'t>, bool)> {
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
        let d = match node_text(target.child_by_field_name("field")?, self.text) {
            "x" => 0,
            "y" => 1,
            "z" => 2,
            _ => return None,
        };
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
    fn field_stores(&self, name: &str, decl: Node<'t>) -> Vec<(usize, Node<'t>)> {
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

    fn dims(&self, e: Node<'t>, depth: u32) -> Option<[u64; 3]> {
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
    fn dim3_params(&self, params: Node<'t>) -> Option<[u64; 3]> {
        let mut c = params.walk();
        let vals: Vec<Node> = params
            .named_children(&mut c)
            .filter(|a| a.kind() != "comment")
            .collect();
        if vals.len() > 3 {
            return None;
        }
        let mut out = [1u64; 3];
        for (i, a) in vals.iter().enumerate() {
            let v = eval_text(node_text(*a, self.text), self, 0)?;
            if v <= 0 {
                return None;
            }
            out[i] = v as u64;
        }
        Some(out)
    }

    /// [`HostEnv::list_texts`] of a call's arguments (the items), with an argument that may have another
    /// value each time it is evaluated (`rand()`, `i++`) replaced by a text nothing matches.
    fn pure_texts(&self, list: &[Node<'t>]) -> Vec<String> {
        list.iter()
            .map(|&a| match pure_expression(a, 0) {
                true => squash(node_text(a, self.text)),
                false => "\u{0}".to_string(),
            })
            .collect()
    }

    /// The texts of the items of an argument (or initializer) list, whitespace removed.
    fn list_texts(&self, list: Node<'t>) -> Vec<String> {
        let mut c = list.walk();
        list.named_children(&mut c)
            .filter(|a| a.kind() != "comment")
            .map(|a| squash(node_text(a, self.text)))
            .collect()
    }

    /// The source text of each component of a launch size (`dim3 grid(m, 2)` → `m`, `2`; a
    /// plain `n` → `n`), whitespace removed, so that an argument written the same way is known
    /// to be that size.
    fn dim_texts(&self, e: Node<'t>, depth: u32) -> Vec<String> {
        let squash = |n: Node| squash(node_text(n, self.text));
        let list = |args: Node<'t>| self.list_texts(args);
        if depth > 8 {
            return vec![];
        }
        match e.kind() {
            "call_expression" => {
                let is_dim3 = e
                    .child_by_field_name("function")
                    .is_some_and(|f| node_text(f, self.text) == "dim3");
                match (is_dim3, e.child_by_field_name("arguments")) {
                    (true, Some(a)) => list(a),
                    _ => vec![squash(e)],
                }
            }
            "initializer_list" => list(e),
            "parenthesized_expression" => match e.named_child(0) {
                Some(inner) => self.dim_texts(inner, depth + 1),
                None => vec![],
            },
            "identifier" => match self.local_init(node_text(e, self.text)) {
                Some((init, decl))
                    if self.declares_dim3(decl)
                        && !self.field_stores(node_text(e, self.text), decl).is_empty() =>
                {
                    // Components stored one by one: the texts stored over the initial ones.
                    let mut texts = match init.kind() {
                        "argument_list" | "initializer_list" | "parameter_list" => list(init),
                        _ => vec![],
                    };
                    if init.kind() != "declaration" && texts.is_empty() {
                        return vec![squash(e)];
                    }
                    texts.resize(3, "1".to_string());
                    for (d, v) in self.field_stores(node_text(e, self.text), decl) {
                        texts[d] = squash(v);
                    }
                    texts
                }
                Some((init, _)) if init.kind() == "declaration" => vec!["1".to_string(); 3],
                Some((init, decl))
                    if matches!(init.kind(), "argument_list" | "initializer_list") =>
                {
                    // `dim3 grid(m)` or `dim3 grid{m}`; an `int n(5)` is a scalar named `n`.
                    if self.declares_dim3(decl) {
                        list(init)
                    } else {
                        vec![squash(e)]
                    }
                }
                Some((init, _)) if init.kind() == "parameter_list" => list(init),
                Some((init, _)) if init.kind() == "call_expression" => {
                    let mut v = self.dim_texts(init, depth + 1);
                    if v.len() <= 1 {
                        v = vec![squash(e)];
                    }
                    v
                }
                _ => vec![squash(e)],
            },
            _ => vec![squash(e)],
        }
    }

    /// What a launch argument is worth in constants and launch sizes.
    fn site_value(
        &self,
        e: Node<'t>,
        grid: &[String],
        block: &[String],
        depth: u32,
    ) -> Option<SiteValue> {
        if depth > 8 {
            return None;
        }
        if let Some(v) = eval(e, self.text, self, 0) {
            return Some(SiteValue::Int(v));
        }
        let text: String = node_text(e, self.text)
            .chars()
            .filter(|c| !c.is_whitespace())
            .collect();
        const DIMS: [Dim; 3] = [Dim::X, Dim::Y, Dim::Z];
        // Written the same way is the same value only if nothing changes it in between.
        let same = |t: &String| *t == text && self.unchanged(&text);
        if let Some(d) = grid.iter().position(same) {
            return Some(SiteValue::GridDim(DIMS[d]));
        }
        if let Some(d) = block.iter().position(same) {
            return Some(SiteValue::BlockDim(DIMS[d]));
        }
        match e.kind() {
            "parenthesized_expression" => {
                self.site_value(e.named_child(0)?, grid, block, depth + 1)
            }
            "binary_expression" => {
                let op = e.child_by_field_name("operator")?;
                if node_text(op, self.text) != "*" {
                    return None;
                }
                let a = self.site_value(e.child_by_field_name("left")?, grid, block, depth + 1)?;
                let b = self.site_value(e.child_by_field_name("right")?, grid, block, depth + 1)?;
                Some(SiteValue::Mul(Box::new(a), Box::new(b)))
            }
            "identifier" => {
                let (init, _) = self.local_init(node_text(e, self.text))?;
                if matches!(
                    init.kind(),
                    "argument_list" | "parameter_list" | "initializer_list"
                ) {
                    return None;
                }
                self.site_value(init, grid, block, depth + 1)
            }
            // A component of a `dim3` local (`int block_x = block.x;` passed on): its constant,
            // or the launch size written the same way.
            "field_expression" => {
                let d = match node_text(e.child_by_field_name("field")?, self.text) {
                    "x" => 0,
                    "y" => 1,
                    "z" => 2,
                    _ => return None,
                };
                let v = e.child_by_field_name("argument")?;
                if v.kind() != "identifier" {
                    return None;
                }
                if let Some(dims) = self.dims(v, depth + 1) {
                    return Some(SiteValue::Int(dims[d] as i64));
                }
                let comp = self.dim_texts(v, depth + 1).get(d)?.clone();
                if let Some(g) = grid.iter().position(|t| *t == comp) {
                    return Some(SiteValue::GridDim(DIMS[g]));
                }
                block
                    .iter()
                    .position(|t| *t == comp)
                    .map(|b| SiteValue::BlockDim(DIMS[b]))
            }
            _ => None,
        }
    }

    /// The values of the arguments in `list` (a call's argument list, or the template argument
    /// list of `k<256, T>`, where a type is `None` and a constant may read as a type name).
    fn arg_values(
        &self,
        list: Option<Node<'t>>,
        grid: Option<Node<'t>>,
        block: Option<Node<'t>>,
    ) -> Vec<Option<SiteValue>> {
        match list {
            Some(list) => self.item_values(&items(list), grid, block),
            None => vec![],
        }
    }

    /// [`HostEnv::arg_values`] of the items of a list.
    fn item_values(
        &self,
        nodes: &[Node<'t>],
        grid: Option<Node<'t>>,
        block: Option<Node<'t>>,
    ) -> Vec<Option<SiteValue>> {
        let grid = grid.map(|g| self.dim_texts(g, 0)).unwrap_or_default();
        let block = block.map(|b| self.dim_texts(b, 0)).unwrap_or_default();
        let mut values: Vec<Option<SiteValue>> = nodes
            .iter()
            .map(|&a| {
                if a.kind() == "type_descriptor" {
                    let t = node_text(a, self.text).trim().to_string();
                    return eval_text(&t, self, 0).map(SiteValue::Int);
                }
                self.site_value(a, &grid, &block, 0)
            })
            .collect();
        // An argument written in terms of the others (`k(dst, width, width)`,
        // `k(x, n, n / 2)`): its parameter is that function of theirs. Only arguments whose
        // value cannot change between their evaluations (no call, no assignment) are matched.
        let texts: Vec<String> = nodes
            .iter()
            .map(|&a| match pure_expression(a, 0) {
                true => squash(node_text(a, self.text)),
                false => String::new(),
            })
            .collect();
        for (j, &a) in nodes.iter().enumerate() {
            if values[j].is_some() || texts[j].is_empty() {
                continue;
            }
            let mut others = texts.clone();
            others[j] = String::new();
            let others: Vec<String> = others
                .into_iter()
                .map(|t| if t.is_empty() { "\u{0}".into() } else { t })
                .collect();
            if let Some(v) = self.relation(a, self.text, &others, 0) {
                if mentions_arg(&v) {
                    values[j] = Some(v);
                }
            }
        }
        values
    }

    /// Each dimension of a launch size (the grid or the block) in terms of the call's
    /// arguments: `dim3 grid(DIVUP(n, 64))` with `n` passed gives `gridDim.x == DIVUP(arg, 64)`
    /// (macros expanded), `<<<rows, n / 4>>>` gives `blockDim.x == arg / 4`. `None` for a
    /// dimension that is not computed from a passed value.
    fn size_relations(
        &self,
        size: Option<Node<'t>>,
        call_args: Option<&[Node<'t>]>,
    ) -> [Option<SiteValue>; 3] {
        let mut out: [Option<SiteValue>; 3] = [None, None, None];
        let (Some(size), Some(list)) = (size, call_args) else {
            return out;
        };
        let args = self.pure_texts(list);
        // The size is computed at the launch, or where its `dim3` local is declared (its field
        // stores come later): a passed value it names needs to stay the same from there on.
        let since = match size.kind() {
            "identifier" => self
                .local_init(node_text(size, self.text))
                .map_or(0, |(_, decl)| decl.start_byte()),
            _ => self.at,
        };
        for (d, comp) in self.dim_texts(size, 0).iter().enumerate().take(3) {
            let (text, tree) = crate::parse::parse_snippet_body(comp);
            let Some(e) = crate::consteval::snippet_expr(&tree) else {
                continue;
            };
            self.since.set(Some(since));
            let v = self.relation(e, &text, &args, 0);
            self.since.set(None);
            if let Some(v) = v.filter(mentions_arg) {
                out[d] = Some(v);
            }
        }
        out
    }

    /// `e` (in `text`) in constants and the call's arguments `args` (squashed texts).
    fn relation(&self, e: Node, text: &str, args: &[String], depth: u32) -> Option<SiteValue> {
        if depth > 40 {
            return None;
        }
        let own = squash(node_text(e, text));
        if let Some(j) = args.iter().position(|a| *a == own) {
            // Written the same way is the same value only if nothing changes it in between.
            if !self.unchanged(&own) {
                return None;
            }
            return Some(SiteValue::Arg(j as u32));
        }
        if let Some(v) = eval_text(node_text(e, text), self, 0) {
            return Some(SiteValue::Int(v));
        }
        match e.kind() {
            "parenthesized_expression" => self.relation(e.named_child(0)?, text, args, depth + 1),
            "cast_expression" => {
                self.relation(e.child_by_field_name("value")?, text, args, depth + 1)
            }
            "binary_expression" => {
                let op = match node_text(e.child_by_field_name("operator")?, text) {
                    "+" => BinOp::Add,
                    "-" => BinOp::Sub,
                    "*" => BinOp::Mul,
                    "/" => BinOp::Div,
                    "%" => BinOp::Rem,
                    "<" => BinOp::Lt,
                    "<=" => BinOp::Le,
                    ">" => BinOp::Gt,
                    ">=" => BinOp::Ge,
                    "==" => BinOp::Eq,
                    "!=" => BinOp::Ne,
                    "&&" => BinOp::And,
                    "||" => BinOp::Or,
                    _ => return None,
                };
                let a = self.relation(e.child_by_field_name("left")?, text, args, depth + 1)?;
                let b = self.relation(e.child_by_field_name("right")?, text, args, depth + 1)?;
                Some(SiteValue::Op(op, Box::new(a), Box::new(b)))
            }
            "unary_expression" => {
                let a = self.relation(e.child_by_field_name("argument")?, text, args, depth + 1)?;
                match node_text(e.child_by_field_name("operator")?, text) {
                    "!" | "not" => Some(SiteValue::Op(
                        BinOp::Eq,
                        Box::new(a),
                        Box::new(SiteValue::Int(0)),
                    )),
                    "-" => Some(SiteValue::Op(
                        BinOp::Sub,
                        Box::new(SiteValue::Int(0)),
                        Box::new(a),
                    )),
                    "+" => Some(a),
                    _ => None,
                }
            }
            "conditional_expression" => {
                let c =
                    self.relation(e.child_by_field_name("condition")?, text, args, depth + 1)?;
                let a =
                    self.relation(e.child_by_field_name("consequence")?, text, args, depth + 1)?;
                let b =
                    self.relation(e.child_by_field_name("alternative")?, text, args, depth + 1)?;
                Some(SiteValue::Select(Box::new(c), Box::new(a), Box::new(b)))
            }
            // A component of a `dim3` local with one constant value (`threads.x`).
            "field_expression" => {
                let d = match node_text(e.child_by_field_name("field")?, text) {
                    "x" => 0,
                    "y" => 1,
                    "z" => 2,
                    _ => return None,
                };
                let v = e.child_by_field_name("argument")?;
                if v.kind() != "identifier" {
                    return None;
                }
                match self.local_dim_values(node_text(v, text), 0)?[d].as_slice() {
                    [one] => Some(SiteValue::Int(*one as i64)),
                    _ => None,
                }
            }
            // `static_cast<int>(n)`: like a C cast, its operand.
            "call_expression"
                if e.child_by_field_name("function").is_some_and(|f| {
                    f.kind() == "template_function"
                        && f.child_by_field_name("name")
                            .is_some_and(|n| node_text(n, text) == "static_cast")
                }) =>
            {
                let list = e.child_by_field_name("arguments")?;
                if list.named_child_count() != 1 {
                    return None;
                }
                self.relation(list.named_child(0)?, text, args, depth + 1)
            }
            // A ceiling division the library describes (`ATenCeilDiv(n, 16)`, `DIVUP(n, 64)`
            // without its header): `(a + b - 1) / b`. A function or macro of the file with the
            // name wins.
            "call_expression" if self.library_ceil_div(e, text) => {
                let list = e.child_by_field_name("arguments")?;
                let mut c = list.walk();
                let items: Vec<Node> = list
                    .named_children(&mut c)
                    .filter(|a| a.kind() != "comment")
                    .collect();
                let [a, b] = items.as_slice() else {
                    return None;
                };
                let a = self.relation(*a, text, args, depth + 1)?;
                let b = self.relation(*b, text, args, depth + 1)?;
                Some(ceil_div(a, b))
            }
            // A macro (`DIVUP(n, 64)`, `BLOCKS`): its expansion.
            "call_expression" | "identifier" => {
                let (name, call_args) = if e.kind() == "identifier" {
                    (node_text(e, text).to_string(), None)
                } else {
                    let f = e.child_by_field_name("function")?;
                    let list = e.child_by_field_name("arguments")?;
                    let mut c = list.walk();
                    let v: Vec<String> = list
                        .named_children(&mut c)
                        .filter(|a| a.kind() != "comment")
                        .map(|a| node_text(a, text).to_string())
                        .collect();
                    (node_text(f, text).to_string(), Some(v))
                };
                let Some(m) = self.tables.macros.get(&name) else {
                    // A host local computed from passed values (`int blocks = DIVUP(n, 64);`),
                    // also named in a launch size's text or a macro's expansion (both read at
                    // the launch).
                    if call_args.is_none() {
                        let (init, decl) = self.local_init(&name)?;
                        if init.kind().ends_with("_list") {
                            return None;
                        }
                        // Its initializer's values are those at the declaration.
                        let since = self.since.get();
                        if let Some(at) = since {
                            self.since.set(Some(at.min(decl.start_byte())));
                        }
                        let v = self.relation(init, self.text, args, depth + 1);
                        self.since.set(since);
                        return v;
                    }
                    return None;
                };
                let body = m.expand(call_args.as_deref())?;
                let (t, tree) = crate::parse::parse_snippet_body(&body);
                let inner = crate::consteval::snippet_expr(&tree)?;
                self.relation(inner, &t, args, depth + 1)
            }
            _ => None,
        }
    }

    /// Whether the call `e` (in `text`) is to a function the library describes as a ceiling
    /// division (`returns = "ceil-div"`) that the file does not define (as a function or a
    /// macro).
    fn library_ceil_div(&self, e: Node, text: &str) -> bool {
        let Some(f) = e.child_by_field_name("function") else {
            return false;
        };
        let f = match f.kind() {
            "template_function" => f.child_by_field_name("name").unwrap_or(f),
            _ => f,
        };
        let full = node_text(f, text);
        // `cuda::ceil_div`, `raft::ceildiv<int>`: the library names the function, not its
        // namespace or template arguments.
        let plain = full.split('<').next().unwrap_or(full);
        let name = plain.rsplit("::").next().unwrap_or(plain).trim();
        if self
            .tables
            .macros
            .get(name)
            .is_some_and(|m| m.fallback.is_none())
            || self.tables.macros.contains_key(full)
            || self.tables.funcs.get(name).is_some_and(|d| !d.is_empty())
        {
            return false;
        }
        self.tables
            .library
            .function(name)
            .is_some_and(|m| m.returns == cudarace_library::Returns::CeilDiv)
    }

    /// The values the expression `e` may have at the launch when it has a few integer
    /// constant values: a constant, a local whose initializer and every assignment that may
    /// reach the launch are such expressions (`threadsY = c ? 8 : 4`), `c ? a : b` (either),
    /// arithmetic on those. The list may hold values that never happen, never misses one.
    fn value_set(&self, e: Node<'t>, depth: u32) -> Option<Vec<i64>> {
        const MAX: usize = 16;
        if depth > 8 {
            return None;
        }
        if let Some(v) = eval(e, self.text, self, 0) {
            return Some(vec![v]);
        }
        let mut out = match e.kind() {
            "parenthesized_expression" => self.value_set(e.named_child(0)?, depth + 1)?,
            "conditional_expression" => {
                let mut a = self.value_set(e.child_by_field_name("consequence")?, depth + 1)?;
                a.extend(self.value_set(e.child_by_field_name("alternative")?, depth + 1)?);
                a
            }
            "identifier" => self.local_values(node_text(e, self.text), depth + 1)?,
            "binary_expression" => {
                let op = node_text(e.child_by_field_name("operator")?, self.text);
                if !matches!(op, "+" | "-" | "*" | "/" | "%") {
                    return None;
                }
                let a = self.value_set(e.child_by_field_name("left")?, depth + 1)?;
                let b = self.value_set(e.child_by_field_name("right")?, depth + 1)?;
                let mut out = Vec::new();
                for x in &a {
                    for y in &b {
                        out.push(crate::consteval::binop(op, *x, *y)?);
                    }
                }
                out
            }
            _ => return None,
        };
        out.sort_unstable();
        out.dedup();
        (!out.is_empty() && out.len() <= MAX).then_some(out)
    }

    /// The values the integer local `name` may have at the launch: its initializer's and those
    /// of every `name = e` that may run before the launch ([`HostEnv::value_set`]). `None` when
    /// it is changed any other way (`+=`, `++`, `&name`, passed by reference), is `static`
    /// (an assignment after the launch reaches the next call's launch) or not a plain integer.
    fn local_values(&self, name: &str, depth: u32) -> Option<Vec<i64>> {
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
                let mut c = init.walk();
                let items: Vec<Node> = init
                    .named_children(&mut c)
                    .filter(|a| a.kind() != "comment")
                    .collect();
                let [one] = items.as_slice() else {
                    return None;
                };
                self.value_set(*one, depth + 1)?
            }
            _ => self.value_set(init, depth + 1)?,
        };
        let changes = match self.const_value(decl) {
            true => vec![],
            false => self.changes_reaching(name, decl),
        };
        for change in changes {
            let plain = change.kind() == "assignment_expression"
                && change
                    .child_by_field_name("operator")
                    .is_some_and(|o| node_text(o, self.text) == "=")
                && change
                    .child_by_field_name("left")
                    .is_some_and(|l| l.kind() == "identifier" && node_text(l, self.text) == name);
            if !plain {
                return None;
            }
            out.extend(self.value_set(change.child_by_field_name("right")?, depth + 1)?);
        }
        out.sort_unstable();
        out.dedup();
        (!out.is_empty()).then_some(out)
    }

    /// Whether a statement after `decl` and before the launch, in a block that holds the
    /// launch, assigns `name` on every path through it: `name = e;`, a block with such a
    /// statement, an `if` with an `else` whose both branches do.
    fn overwritten_before_launch(&self, name: &str, decl: Node<'t>) -> bool {
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
    fn at_node(&self, body: Node<'t>) -> Node<'t> {
        body.descendant_for_byte_range(self.at, self.at)
            .unwrap_or(body)
    }

    /// Whether `decl` (an `init_declarator` or a declaration) declares a plain integer
    /// variable: not static, not a pointer, reference or array, of a built-in integer type.
    fn plain_integer(&self, decl: Node<'t>) -> bool {
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

    /// Like [`HostEnv::dims`], but each dimension is the list of values it may have
    /// ([`HostEnv::value_set`]): `dim3 threads(32, threadsY)` with `threadsY` 4 or 8.
    fn dim_values(&self, e: Node<'t>, depth: u32) -> Option<[Vec<u64>; 3]> {
        if let Some(d) = self.dims(e, depth) {
            return Some(d.map(|v| vec![v]));
        }
        if depth > 16 {
            return None;
        }
        let scalar = |e: Node<'t>| Some([positive(self.value_set(e, 0)?)?, vec![1], vec![1]]);
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
                    }
                    _ => scalar(e),
                }
            }
            _ => scalar(e),
        }
    }

    /// [`HostEnv::dim_values`] of the `dim3` local `name` (`None` when it is not one, or is
    /// changed other than by field stores every launch sees).
    fn local_dim_values(&self, name: &str, depth: u32) -> Option<[Vec<u64>; 3]> {
        if depth > 16 {
            return None;
        }
        let (init, decl) = self.local_init(name)?;
        if !self.declares_dim3(decl) {
            return None;
        }
        let mut out = match init.kind() {
            "argument_list" | "initializer_list" => self.list_values(init)?,
            "declaration" => [vec![1], vec![1], vec![1]],
            "parameter_list" => self.param_values(init)?,
            _ => self.dim_values(init, depth + 1)?,
        };
        for (d, v) in self.field_stores(name, decl) {
            out[d] = positive(self.value_set(v, 0)?)?;
        }
        Some(out)
    }

    /// The values each dimension of the `dim3` local `name` may have at the launch when it is
    /// assigned whole (`dim3 block; if (c) block = dim3(256); else block = dim3(4, 32);`): its
    /// initial value (unless every path to the launch assigns it) and those of every
    /// `name = e` that may run before the launch, dimension by dimension. `None` when it is
    /// changed any other way (a field store among whole assignments, `&name`, passed by
    /// reference) or a value is not a few constants.
    fn assigned_dim_values(&self, name: &str, depth: u32) -> Option<[Vec<u64>; 3]> {
        if depth > 16 || self.has_goto() {
            return None;
        }
        let (init, decl) = self.local_decl(name, false)?;
        if !self.declares_dim3(decl) {
            return None;
        }
        let mut out: [Vec<u64>; 3] = match self.overwritten_before_launch(name, decl) {
            true => [vec![], vec![], vec![]],
            false => match init.kind() {
                "argument_list" | "initializer_list" => self.list_values(init)?,
                "declaration" => [vec![1], vec![1], vec![1]],
                "parameter_list" => self.param_values(init)?,
                _ => self.dim_values(init, depth + 1)?,
            },
        };
        for change in self.changes_reaching(name, decl) {
            let plain = change.kind() == "assignment_expression"
                && change
                    .child_by_field_name("operator")
                    .is_some_and(|o| node_text(o, self.text) == "=")
                && change
                    .child_by_field_name("left")
                    .is_some_and(|l| l.kind() == "identifier" && node_text(l, self.text) == name);
            if !plain {
                return None;
            }
            let v = self.dim_values(change.child_by_field_name("right")?, depth + 1)?;
            for (o, v) in out.iter_mut().zip(v) {
                o.extend(v);
            }
        }
        for o in &mut out {
            o.sort_unstable();
            o.dedup();
            if o.is_empty() || o.len() > 16 {
                return None;
            }
        }
        Some(out)
    }

    /// [`HostEnv::list_values`] for the "parameters" of a `dim3 b(TILE, rows)` misparsed as a
    /// function declaration (see [`HostEnv::dim3_params`]): constants, or locals' values.
    fn param_values(&self, params: Node<'t>) -> Option<[Vec<u64>; 3]> {
        self.dim3_items(params, &|a| {
            let text = node_text(a, self.text).trim();
            match eval_text(text, self, 0) {
                Some(v) => Some(vec![v]),
                None if crate::text::tokens(text).len() == 1 => self.local_values(text, 0),
                None => None,
            }
        })
    }

    /// The values of each item of a `dim3` constructor's arguments (missing ones are 1).
    fn list_values(&self, args: Node<'t>) -> Option<[Vec<u64>; 3]> {
        self.dim3_items(args, &|a| self.value_set(a, 0))
    }

    /// Each of the (at most three) items of `list` through `values`, positive; missing ones 1.
    fn dim3_items(
        &self,
        list: Node<'t>,
        values: &dyn Fn(Node<'t>) -> Option<Vec<i64>>,
    ) -> Option<[Vec<u64>; 3]> {
        let mut c = list.walk();
        let items: Vec<Node> = list
            .named_children(&mut c)
            .filter(|a| a.kind() != "comment")
            .collect();
        if items.len() > 3 {
            return None;
        }
        let mut out = [vec![1], vec![1], vec![1]];
        for (i, a) in items.iter().enumerate() {
            out[i] = positive(values(*a)?)?;
        }
        Some(out)
    }

    /// The conditions of the `if`s around the launch `call` (in the function), in terms of
    /// the call's arguments: the conjuncts of the condition of an `if` whose `then` branch
    /// holds the launch, the negation of the whole condition of one whose `else` branch does.
    /// A condition (or conjunct) not written exactly in those terms is left out.
    fn path_conditions(&self, call: Node<'t>, call_args: Option<&[Node<'t>]>) -> Vec<SiteValue> {
        let Some(list) = call_args else {
            return vec![];
        };
        // A `goto` may jump into the branch past its condition.
        if self.func_body.is_none() || self.has_goto() {
            return vec![];
        }
        let args = self.pure_texts(list);
        let mut out = Vec::new();
        let mut child = call;
        let mut p = call.parent();
        while let Some(a) = p {
            if Some(a) == self.func_body || a.kind() == "lambda_expression" {
                break;
            }
            if a.kind() == "if_statement" {
                let value = a
                    .child_by_field_name("condition")
                    .filter(|c| c.child_by_field_name("initializer").is_none())
                    .and_then(|c| c.child_by_field_name("value"))
                    .filter(|v| v.kind() != "declaration");
                let then = a.child_by_field_name("consequence") == Some(child);
                let other = a.child_by_field_name("alternative") == Some(child);
                if let Some(v) = value.filter(|v| self.names_mean_the_same(*v)) {
                    if then {
                        for c in conjuncts(v, self.text) {
                            out.extend(self.condition(c, &args));
                        }
                    } else if other {
                        out.extend(self.condition(v, &args).map(|c| {
                            SiteValue::Op(BinOp::Eq, Box::new(c), Box::new(SiteValue::Int(0)))
                        }));
                    }
                }
            }
            child = a;
            p = a.parent();
        }
        out
    }

    /// `c` in terms of the call's arguments, if it mentions one.
    fn condition(&self, c: Node<'t>, args: &[String]) -> Option<SiteValue> {
        self.since.set(Some(c.start_byte()));
        let v = self.relation(c, self.text, args, 0);
        self.since.set(None);
        v.filter(mentions_arg)
    }

    /// Whether every name in `cond` means at the launch what it means at `cond`: no local of
    /// that name is declared between them (`if (k == 4) { int k = 8; … }`).
    fn names_mean_the_same(&self, cond: Node<'t>) -> bool {
        crate::text::tokens(node_text(cond, self.text))
            .into_iter()
            .filter(|(is_id, _)| *is_id)
            .all(|(_, name)| {
                self.local_decl(name, true)
                    .is_none_or(|(_, decl)| decl.start_byte() < cond.start_byte())
            })
    }

    fn dim3_args(&self, args: Node<'t>) -> Option<[u64; 3]> {
        let mut c = args.walk();
        let vals: Vec<Node> = args
            .named_children(&mut c)
            .filter(|a| a.kind() != "comment")
            .collect();
        if vals.len() > 3 {
            return None;
        }
        let mut out = [1u64; 3];
        for (i, a) in vals.iter().enumerate() {
            let v = eval(*a, self.text, self, 0)?;
            if v <= 0 {
                return None;
            }
            out[i] = v as u64;
        }
        Some(out)
    }
}

/// The block (or `for` statement) a declaration is in; `None` at the top of the function.
fn scope_of(decl: Node) -> Option<Node> {
    let mut p = decl.parent();
    while let Some(b) = p {
        if matches!(b.kind(), "compound_statement" | "for_statement") {
            return Some(b);
        }
        p = b.parent();
    }
    None
}

fn enclosing_function_body(mut n: Node) -> Option<Node> {
    while let Some(p) = n.parent() {
        if p.kind() == "function_definition" {
            return p.child_by_field_name("body");
        }
        n = p;
    }
    None
}

pub(crate) fn launch_sites(tables: &Tables<'_>, trees: &[Tree]) -> Vec<LaunchSite> {
    let mut out = Vec::new();
    for (i, tree) in trees.iter().enumerate() {
        let file = FileId(i as u32);
        let text = tables.text(file);
        let mut functions = std::collections::HashMap::new();
        let mut stack = vec![tree.root_node()];
        while let Some(n) = stack.pop() {
            if n.kind() == "call_expression" {
                if let Some(launch) =
                    chevron_launch(n, text).or_else(|| launcher_call(tables, n, text))
                {
                    let func_body = enclosing_function_body(n);
                    let facts = functions
                        .entry(func_body.map(|b| b.id()))
                        .or_insert_with(|| std::rc::Rc::new(FunctionFacts::of(func_body, text)))
                        .clone();
                    let env = HostEnv {
                        tables,
                        func_body,
                        at: n.start_byte(),
                        text,
                        facts,
                        since: Default::default(),
                    };
                    out.push(env.site(n, file, &launch));
                }
            }
            let mut c = n.walk();
            for ch in n.named_children(&mut c) {
                stack.push(ch);
            }
        }
    }
    out.sort_by_key(|s| (s.span.file, s.span.start));
    out
}

/// What a launch call gives, found in its syntax: the kernel's name (and its template arguments,
/// `k<256>`), the grid and block size expressions, and the kernel's arguments when they are
/// passed directly (`None`: not known).
struct Launch<'t> {
    name: Node<'t>,
    template_args: Option<Node<'t>>,
    grid: Option<Node<'t>>,
    block: Option<Node<'t>>,
    args: Option<Vec<Node<'t>>>,
}

/// `k<<<grid, block, …>>>(args…)`.
fn chevron_launch<'t>(n: Node<'t>, _text: &str) -> Option<Launch<'t>> {
    let mut c = n.walk();
    let cfg = n
        .children(&mut c)
        .find(|ch| ch.kind() == "kernel_call_syntax")?;
    let f = n.child_by_field_name("function")?;
    let name = match f.kind() {
        "template_function" => f.child_by_field_name("name"),
        "qualified_identifier" => declarator_name(f),
        _ => Some(f),
    }?;
    let sizes = items(cfg);
    Some(Launch {
        name,
        template_args: (f.kind() == "template_function")
            .then(|| f.child_by_field_name("arguments"))
            .flatten(),
        grid: sizes.first().copied(),
        block: sizes.get(1).copied(),
        args: n.child_by_field_name("arguments").map(items),
    })
}

/// A call to a launcher a library file describes (`[[launcher]]`: `cudaLaunchKernel((void *)k,
/// grid, block, args, smem, stream)`, `hipLaunchKernelGGL(k, grid, block, smem, stream, a, b)`,
/// `stream->LaunchKernel(k, CudaLaunchConfig(grid, block, 0), a, b)`) that the file does not
/// define itself. Sizes given by a configuration object are read only when it is built on the
/// spot by a constructor a `[[launch-config]]` entry describes; the kernel's arguments only when
/// they are passed directly.
fn launcher_call<'t>(tables: &Tables<'t>, n: Node<'t>, text: &str) -> Option<Launch<'t>> {
    use cudarace_library::{KernelArgs, LaunchSizes};
    let bare = |f: Node<'t>| -> Option<Node<'t>> {
        match f.kind() {
            "identifier" | "field_identifier" => Some(f),
            "template_function" => f.child_by_field_name("name"),
            "qualified_identifier" => declarator_name(f),
            "field_expression" => f.child_by_field_name("field"),
            _ => None,
        }
    };
    let callee = bare(n.child_by_field_name("function")?)?;
    let callee = node_text(callee, text);
    let model = tables.library.launcher(callee)?;
    // A function or macro of the file with the name is the program's own.
    if tables.funcs.get(callee).is_some_and(|d| !d.is_empty())
        || tables
            .macros
            .get(callee)
            .is_some_and(|m| m.fallback.is_none())
    {
        return None;
    }
    let args = items(n.child_by_field_name("arguments")?);
    let kernel = kernel_operand(tables, *args.get(model.kernel_arg)?, text)?;
    let (name, template_args) = match kernel.kind() {
        "identifier" => (kernel, None),
        "qualified_identifier" => (declarator_name(kernel)?, None),
        "template_function" => (
            kernel.child_by_field_name("name")?,
            kernel.child_by_field_name("arguments"),
        ),
        _ => return None,
    };
    // With a configuration object, the launcher is known to be the one described only when the
    // configuration is built by a described constructor: the kernel's arguments are bound only
    // then (another framework's function of the same name may take other arguments there).
    let (grid, block, identified) = match model.sizes {
        LaunchSizes::Args { grid, block } => {
            (args.get(grid).copied(), args.get(block).copied(), true)
        }
        LaunchSizes::Config { arg } => args
            .get(arg)
            .and_then(|c| config_sizes(tables, *c, text))
            .map_or((None, None, false), |(g, b)| (Some(g), Some(b), true)),
    };
    let kernel_args = match model.kernel_args {
        KernelArgs::From(from) if identified => {
            Some(args.get(from..).map(<[_]>::to_vec).unwrap_or_default())
        }
        KernelArgs::From(_) | KernelArgs::Array(_) | KernelArgs::Unknown => None,
    };
    Some(Launch {
        name,
        template_args,
        grid,
        block,
        args: kernel_args,
    })
}

/// The kernel a launcher is given: `k`, `k<T>`, through casts (`(void *)k`,
/// `reinterpret_cast<const void *>(&k)`), parentheses, `&` and a macro that expands to its
/// argument (`HIP_KERNEL_NAME(k<T>)`).
fn kernel_operand<'t>(tables: &Tables<'t>, mut k: Node<'t>, text: &str) -> Option<Node<'t>> {
    for _ in 0..8 {
        k = match k.kind() {
            "cast_expression" => k.child_by_field_name("value")?,
            "parenthesized_expression" => k.named_child(0)?,
            "pointer_expression" => k.child_by_field_name("argument")?,
            "call_expression" => {
                let f = k.child_by_field_name("function")?;
                let list = items(k.child_by_field_name("arguments")?);
                let [one] = list.as_slice() else {
                    return None;
                };
                let cast = f.kind() == "template_function"
                    && f.child_by_field_name("name").is_some_and(|n| {
                        matches!(
                            node_text(n, text),
                            "reinterpret_cast" | "static_cast" | "const_cast"
                        )
                    });
                // A macro that gives back its argument.
                let identity = f.kind() == "identifier"
                    && tables.macros.get(node_text(f, text)).is_some_and(|m| {
                        m.expand(Some(&[node_text(*one, text).to_string()]))
                            .is_some_and(|e| squash(&e) == squash(node_text(*one, text)))
                    });
                if !(cast || identity) {
                    return None;
                }
                *one
            }
            _ => return Some(k),
        };
    }
    None
}

/// The grid and block of a launch configuration built on the spot by a constructor the library
/// describes (`ep::CudaLaunchConfig(grid, block, smem)`, also `Config{grid, block, smem}`).
fn config_sizes<'t>(tables: &Tables<'t>, c: Node<'t>, text: &str) -> Option<(Node<'t>, Node<'t>)> {
    let (ty, list) = match c.kind() {
        "call_expression" => (
            c.child_by_field_name("function")?,
            c.child_by_field_name("arguments")?,
        ),
        "compound_literal_expression" => (
            c.child_by_field_name("type")?,
            c.child_by_field_name("value")?,
        ),
        _ => return None,
    };
    let ty = match ty.kind() {
        "qualified_identifier" => declarator_name(ty)?,
        "template_function" | "template_type" => ty.child_by_field_name("name")?,
        _ => ty,
    };
    let name = node_text(ty, text);
    if tables.funcs.get(name).is_some_and(|d| !d.is_empty()) {
        return None;
    }
    let model = tables.library.launch_config(name)?;
    let args = items(list);
    Some((*args.get(model.grid_arg)?, *args.get(model.block_arg)?))
}

/// The items of an argument (or initializer) list, comments left out.
fn items(list: Node) -> Vec<Node> {
    let mut c = list.walk();
    let v = list
        .named_children(&mut c)
        .filter(|a| a.kind() != "comment")
        .collect();
    v
}

impl<'t> HostEnv<'_, 't> {
    /// The launch site of `launch` (the call `n`): its sizes, bound arguments and conditions.
    fn site(&self, n: Node<'t>, file: FileId, launch: &Launch<'t>) -> LaunchSite {
        let grid_dim = launch.grid.and_then(|g| self.dims(g, 0));
        let block_dim = launch.block.and_then(|b| self.dims(b, 0));
        let grid_values = match (launch.grid, grid_dim) {
            (Some(g), None) => self.dim_values(g, 0),
            _ => None,
        };
        let block_values = match (launch.block, block_dim) {
            (Some(b), None) => self.dim_values(b, 0),
            _ => None,
        };
        let args = launch.args.as_deref();
        LaunchSite {
            kernel: node_text(launch.name, self.text).to_string(),
            span: Span::new(file, n.start_byte(), n.end_byte()),
            grid_values,
            block_values,
            grid_dim,
            block_dim,
            conditions: self.path_conditions(n, args),
            args: args
                .map(|a| self.item_values(a, launch.grid, launch.block))
                .unwrap_or_default(),
            template_args: self.arg_values(launch.template_args, launch.grid, launch.block),
            grid_relations: self.size_relations(launch.grid, args),
            block_relations: self.size_relations(launch.block, args),
        }
    }
}

/// The values as sizes, if all are positive.
fn positive(vs: Vec<i64>) -> Option<Vec<u64>> {
    vs.into_iter()
        .map(|v| (v > 0).then_some(v as u64))
        .collect()
}

/// `(a + b - 1) / b`.
fn ceil_div(a: SiteValue, b: SiteValue) -> SiteValue {
    let less = match b {
        // `(n + 63) / 64`.
        SiteValue::Int(k) => SiteValue::Op(
            BinOp::Add,
            Box::new(a),
            Box::new(SiteValue::Int(k.saturating_sub(1))),
        ),
        _ => {
            let sum = SiteValue::Op(BinOp::Add, Box::new(a), Box::new(b.clone()));
            SiteValue::Op(BinOp::Sub, Box::new(sum), Box::new(SiteValue::Int(1)))
        }
    };
    SiteValue::Op(BinOp::Div, Box::new(less), Box::new(b))
}

/// The operands of `a && b && …` (parentheses looked through), or `e` itself.
fn conjuncts<'t>(e: Node<'t>, text: &str) -> Vec<Node<'t>> {
    let mut out = Vec::new();
    let mut stack = vec![e];
    while let Some(n) = stack.pop() {
        match n.kind() {
            "parenthesized_expression" if n.named_child_count() == 1 => {
                stack.push(n.named_child(0).unwrap_or(n))
            }
            "binary_expression"
                if n.child_by_field_name("operator")
                    .is_some_and(|o| matches!(node_text(o, text), "&&" | "and")) =>
            {
                stack.extend(n.child_by_field_name("right"));
                stack.extend(n.child_by_field_name("left"));
            }
            _ => out.push(n),
        }
    }
    out
}

fn squash(s: &str) -> String {
    s.chars().filter(|c| !c.is_whitespace()).collect()
}

/// Whether `e` is built from names, members, constants and arithmetic only: evaluated twice,
/// it gives the same value.
fn pure_expression(e: Node, depth: u32) -> bool {
    if depth > 16 {
        return false;
    }
    match e.kind() {
        "identifier" | "number_literal" | "field_expression" | "qualified_identifier" => true,
        "parenthesized_expression" | "binary_expression" | "cast_expression" => {
            let mut c = e.walk();
            let ok = e
                .named_children(&mut c)
                .filter(|ch| ch.kind() != "type_descriptor")
                .all(|ch| pure_expression(ch, depth + 1));
            ok
        }
        "unary_expression" => e
            .child_by_field_name("argument")
            .is_some_and(|a| pure_expression(a, depth + 1)),
        _ => false,
    }
}

fn mentions_arg(v: &SiteValue) -> bool {
    match v {
        SiteValue::Arg(_) => true,
        SiteValue::Mul(a, b) | SiteValue::Op(_, a, b) => mentions_arg(a) || mentions_arg(b),
        SiteValue::Select(c, a, b) => mentions_arg(c) || mentions_arg(a) || mentions_arg(b),
        SiteValue::Int(_) | SiteValue::GridDim(_) | SiteValue::BlockDim(_) => false,
    }
}
