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
                    if is_dim3 && bare {
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
        // Changed in the declaration's scope: its value at the launch is not the initial one,
        // except for `dim3` field stores that every run of the launch sees (`field_stores`).
        let (_, decl) = found?;
        let scope = scope_of(decl);
        let in_scope =
            |at: usize| at > decl.start_byte() && scope.is_none_or(|b| at < b.end_byte());
        for &change in self.changes(name).iter() {
            if !in_scope(change.start_byte()) || !self.may_precede_launch(change) {
                continue;
            }
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
                self.changes(name)
                    .iter()
                    .all(|c| !self.may_precede_launch(*c))
            })
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
        let Some(list) = list else {
            return vec![];
        };
        let grid = grid.map(|g| self.dim_texts(g, 0)).unwrap_or_default();
        let block = block.map(|b| self.dim_texts(b, 0)).unwrap_or_default();
        let mut c = list.walk();
        let nodes: Vec<Node> = list
            .named_children(&mut c)
            .filter(|a| a.kind() != "comment")
            .collect();
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
        call_args: Option<Node<'t>>,
    ) -> [Option<SiteValue>; 3] {
        let mut out: [Option<SiteValue>; 3] = [None, None, None];
        let (Some(size), Some(list)) = (size, call_args) else {
            return out;
        };
        let args = self.list_texts(list);
        for (d, comp) in self.dim_texts(size, 0).iter().enumerate().take(3) {
            let (text, tree) = crate::parse::parse_snippet_body(comp);
            let Some(e) = crate::consteval::snippet_expr(&tree) else {
                continue;
            };
            if let Some(v) = self.relation(e, &text, &args, 0) {
                if mentions_arg(&v) {
                    out[d] = Some(v);
                }
            }
        }
        out
    }

    /// `e` (in `text`) in constants and the call's arguments `args` (squashed texts).
    fn relation(&self, e: Node, text: &str, args: &[String], depth: u32) -> Option<SiteValue> {
        if depth > 12 {
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
                    _ => return None,
                };
                let a = self.relation(e.child_by_field_name("left")?, text, args, depth + 1)?;
                let b = self.relation(e.child_by_field_name("right")?, text, args, depth + 1)?;
                Some(SiteValue::Op(op, Box::new(a), Box::new(b)))
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
                    // A host local computed from passed values (`int blocks = DIVUP(n, 64);`).
                    if call_args.is_none() && std::ptr::eq(text, self.text) {
                        let (init, _) = self.local_init(&name)?;
                        if init.kind().ends_with("_list") {
                            return None;
                        }
                        return self.relation(init, self.text, args, depth + 1);
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
                let mut c = n.walk();
                let cfg = n
                    .children(&mut c)
                    .find(|ch| ch.kind() == "kernel_call_syntax");
                if let (Some(cfg), Some(f)) = (cfg, n.child_by_field_name("function")) {
                    let name_node = match f.kind() {
                        "template_function" => f.child_by_field_name("name"),
                        "qualified_identifier" => declarator_name(f),
                        _ => Some(f),
                    };
                    if let Some(name_node) = name_node {
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
                        };
                        let mut c2 = cfg.walk();
                        let args: Vec<Node> = cfg
                            .named_children(&mut c2)
                            .filter(|a| a.kind() != "comment")
                            .collect();
                        out.push(LaunchSite {
                            kernel: node_text(name_node, text).to_string(),
                            span: Span::new(file, n.start_byte(), n.end_byte()),
                            grid_dim: args.first().and_then(|g| env.dims(*g, 0)),
                            block_dim: args.get(1).and_then(|b| env.dims(*b, 0)),
                            args: env.arg_values(
                                n.child_by_field_name("arguments"),
                                args.first().copied(),
                                args.get(1).copied(),
                            ),
                            template_args: env.arg_values(
                                (f.kind() == "template_function")
                                    .then(|| f.child_by_field_name("arguments"))
                                    .flatten(),
                                args.first().copied(),
                                args.get(1).copied(),
                            ),
                            grid_relations: env.size_relations(
                                args.first().copied(),
                                n.child_by_field_name("arguments"),
                            ),
                            block_relations: env.size_relations(
                                args.get(1).copied(),
                                n.child_by_field_name("arguments"),
                            ),
                        });
                    }
                } else if let Some(site) = runtime_api_launch(tables, n, file, text) {
                    out.push(site);
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

/// `cudaLaunchKernel((void *)k, grid, block, args, …)` and `cudaLaunchCooperativeKernel(…)`.
fn runtime_api_launch<'t>(
    tables: &Tables<'t>,
    n: Node<'t>,
    file: FileId,
    text: &str,
) -> Option<LaunchSite> {
    let f = n.child_by_field_name("function")?;
    let fname = node_text(f, text);
    if !matches!(fname, "cudaLaunchKernel" | "cudaLaunchCooperativeKernel") {
        return None;
    }
    let args_node = n.child_by_field_name("arguments")?;
    let mut c = args_node.walk();
    let args: Vec<Node> = args_node
        .named_children(&mut c)
        .filter(|a| a.kind() != "comment")
        .collect();
    // The kernel: strip casts, parentheses and `&`.
    let mut k = *args.first()?;
    for _ in 0..8 {
        k = match k.kind() {
            "cast_expression" => k.child_by_field_name("value")?,
            "parenthesized_expression" => k.named_child(0)?,
            "pointer_expression" => k.child_by_field_name("argument")?,
            "call_expression" => {
                // reinterpret_cast<void *>(k)
                let a = k.child_by_field_name("arguments")?;
                a.named_child(0)?
            }
            _ => break,
        };
    }
    let name_node = match k.kind() {
        "identifier" => k,
        "template_function" => k.child_by_field_name("name")?,
        _ => return None,
    };
    let func_body = enclosing_function_body(n);
    let env = HostEnv {
        tables,
        func_body,
        at: n.start_byte(),
        text,
        facts: std::rc::Rc::new(FunctionFacts::of(func_body, text)),
    };
    Some(LaunchSite {
        kernel: node_text(name_node, text).to_string(),
        span: Span::new(file, n.start_byte(), n.end_byte()),
        grid_dim: args.get(1).and_then(|g| env.dims(*g, 0)),
        block_dim: args.get(2).and_then(|b| env.dims(*b, 0)),
        // Arguments go through an array of pointers: not followed.
        args: vec![],
        template_args: vec![],
        grid_relations: [None, None, None],
        block_relations: [None, None, None],
    })
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
        SiteValue::Int(_) | SiteValue::GridDim(_) | SiteValue::BlockDim(_) => false,
    }
}
