//! Statements and declarations.

use super::*;

fn declarator_has_pointer(d: Node) -> bool {
    let mut cur = d;
    for _ in 0..32 {
        if cur.kind().contains("pointer") {
            return true;
        }
        match cur.child_by_field_name("declarator") {
            Some(x) => cur = x,
            None => return false,
        }
    }
    false
}

/// Whether a statement contains a `return` (not counting lambdas).
pub(crate) fn contains_return(n: Node) -> bool {
    let mut stack = vec![n];
    while let Some(x) = stack.pop() {
        match x.kind() {
            "return_statement" => return true,
            "lambda_expression" => continue,
            _ => {}
        }
        let mut c = x.walk();
        for ch in x.named_children(&mut c) {
            stack.push(ch);
        }
    }
    false
}

/// Whether a statement has a `break` that would leave an enclosing switch (not inside a loop or
/// a nested switch).
fn has_switch_break(n: Node) -> bool {
    let mut stack = vec![n];
    while let Some(x) = stack.pop() {
        match x.kind() {
            "break_statement" => return true,
            "for_statement" | "while_statement" | "do_statement" | "switch_statement"
            | "for_range_loop" | "lambda_expression" => continue,
            _ => {}
        }
        let mut c = x.walk();
        for ch in x.named_children(&mut c) {
            stack.push(ch);
        }
    }
    false
}

impl<'a, 't> Lowerer<'a, 't> {
    /// The statements of a compound statement, in a new scope.
    pub fn block_items(&mut self, compound: Node) {
        self.push_scope();
        self.stmts_of(compound);
        self.pop_scope();
    }

    /// The statements of a compound statement, in the current scope.
    pub fn stmts_of(&mut self, compound: Node) {
        let items = list_items(compound);
        self.stmts(&items);
    }

    pub fn stmts(&mut self, items: &[Node]) {
        for (i, s) in items.iter().enumerate() {
            if !self.tick() {
                return;
            }
            if s.kind() == "return_statement" {
                self.stmt(*s);
                return; // the rest is dead code
            }
            self.stmt(*s);
            let Some(fr) = self.frames.last() else {
                continue;
            };
            let (Some(flag), false) = (fr.flag, fr.is_kernel) else {
                continue;
            };
            if !contains_return(*s) {
                continue;
            }
            let span = self.span(*s);
            if fr.loop_depth > 0 {
                // A device-function `return` inside a loop left the loop with the flag set.
                self.emit(Stmt::If {
                    cond: Expr::Local(flag),
                    then_branch: vec![Stmt::Break { span }],
                    else_branch: vec![],
                    span,
                });
            } else {
                let rest = &items[i + 1..];
                if rest.is_empty() {
                    return;
                }
                let (_, blk) = self.capture(|l| l.stmts(rest));
                self.emit(Stmt::If {
                    cond: Expr::un(UnOp::Not, Expr::Local(flag)),
                    then_branch: blk,
                    else_branch: vec![],
                    span,
                });
                return;
            }
        }
    }

    fn opaque_stmt(&mut self, n: Node, reason: &str) {
        let span = self.span(n);
        let (arrays, locals) = self.mentions(n);
        self.opaque(reason, span, arrays, locals, true);
    }

    /// A syntax error in `n` other than a comma expression the lowering mends (commas.rs).
    pub fn has_real_error(&self, n: Node) -> bool {
        n.has_error() && crate::commas::has_real_error(n, &self.src.text)
    }

    /// True when a control statement's header (anything but its bodies) has a syntax error.
    fn header_has_error(&self, n: Node) -> bool {
        let mut c = n.walk();
        for (i, ch) in n.children(&mut c).enumerate() {
            let field = n.field_name_for_child(i as u32);
            if matches!(
                field,
                Some("body") | Some("consequence") | Some("alternative")
            ) {
                continue;
            }
            if ch.is_error() || ch.is_missing() || self.has_real_error(ch) {
                return true;
            }
        }
        false
    }

    pub fn stmt(&mut self, n: Node) {
        if !self.tick() {
            return;
        }
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            self.set_unsupported("expressions or statements are nested too deeply");
        } else {
            self.stmt_inner(n);
        }
        self.depth -= 1;
    }

    fn stmt_inner(&mut self, n: Node) {
        if n.is_error() || n.is_missing() {
            self.opaque_stmt(n, "syntax error");
            return;
        }
        let structured = matches!(
            n.kind(),
            "compound_statement"
                | "if_statement"
                | "for_statement"
                | "while_statement"
                | "do_statement"
                | "else_clause"
                | "labeled_statement"
                | "attributed_statement"
        );
        if self.has_real_error(n) && (!structured || self.header_has_error(n)) {
            self.opaque_stmt(n, "syntax error");
            return;
        }
        let span = self.span(n);
        match n.kind() {
            "compound_statement" => self.block_items(n),
            "expression_statement" => {
                if let Some(e) = n.named_child(0) {
                    self.expr_discard(e);
                }
            }
            "declaration" => self.declaration(n),
            "if_statement" => self.if_stmt(n),
            "for_statement" => self.for_stmt(n),
            "while_statement" => {
                let (Some(c), Some(body)) = (
                    n.child_by_field_name("condition"),
                    n.child_by_field_name("body"),
                ) else {
                    return;
                };
                self.push_scope();
                let (cond, cond_effects) = self.capture(|l| l.condition(c));
                let body = self.loop_body(body);
                self.pop_scope();
                let cond_span = self.span(c);
                let _ = cond_span;
                self.emit(Stmt::Loop(Loop {
                    kind: LoopKind::While,
                    init: vec![],
                    cond: Some(cond),
                    cond_effects,
                    step: vec![],
                    body,
                    span,
                }));
            }
            "do_statement" => {
                let (Some(c), Some(body)) = (
                    n.child_by_field_name("condition"),
                    n.child_by_field_name("body"),
                ) else {
                    return;
                };
                let body = self.loop_body(body);
                let (cond, cond_effects) = self.capture(|l| l.cond_expr(c));
                self.emit(Stmt::Loop(Loop {
                    kind: LoopKind::DoWhile,
                    init: vec![],
                    cond: Some(cond),
                    cond_effects,
                    step: vec![],
                    body,
                    span,
                }));
            }
            "return_statement" => self.return_stmt(n),
            "break_statement" => self.emit(Stmt::Break { span }),
            "continue_statement" => self.emit(Stmt::Continue { span }),
            "switch_statement" => self.switch_stmt(n),
            "goto_statement" => self.opaque_stmt(n, "goto"),
            "labeled_statement" | "attributed_statement" => {
                let kids = list_items(n);
                for k in kids {
                    if !matches!(k.kind(), "statement_identifier" | "attribute_declaration") {
                        self.stmt(k);
                    }
                }
            }
            "else_clause" => {
                let kids = list_items(n);
                for k in kids {
                    self.stmt(k);
                }
            }
            "type_definition" | "alias_declaration" => {
                // Kept for the collective classes they may name (`typedef cub::BlockReduce<…> R;`).
                let aliases = cxx::collectives::type_aliases_of(n, &self.src.text);
                self.type_aliases.extend(aliases);
            }
            "using_declaration"
            | "static_assert_declaration"
            | "namespace_alias_definition"
            | "empty_statement"
            | ";" => {}
            "struct_specifier" | "class_specifier" | "enum_specifier" | "union_specifier" => {}
            "for_range_loop" if self.library_range_for(n) => {}
            "for_range_loop"
            | "try_statement"
            | "throw_statement"
            | "seh_try_statement"
            | "co_return_statement"
            | "co_yield_statement" => self.opaque_stmt(n, "unsupported statement"),
            k if k.starts_with("preproc_") => {}
            // `CUDA_KERNEL_LOOP(i, n) { … }` reads as a nested function definition.
            "function_definition" if self.loop_macro_with_body(n) => {}
            _ => self.opaque_stmt(n, "unsupported statement"),
        }
    }

    /// A function-like macro used as a statement head with a body after it, as framework loop
    /// macros are (`CUDA_KERNEL_LOOP(i, n) { … }`, which tree-sitter reads as a nested function
    /// definition): the expansion followed by the body, lowered as statements. False when `n`
    /// is not such a use.
    fn loop_macro_with_body(&mut self, n: Node) -> bool {
        let Some(decl) = n.child_by_field_name("declarator") else {
            return false;
        };
        let Some(body) = n.child_by_field_name("body") else {
            return false;
        };
        if decl.kind() != "function_declarator" || n.child_by_field_name("type").is_some() {
            return false;
        }
        let Some(name_node) = decl.child_by_field_name("declarator") else {
            return false;
        };
        let name = self.text(name_node);
        let Some(m) = self.tab.macros.get(&name) else {
            return false;
        };
        if m.params.is_none() || self.expanding.contains(&name) {
            return false;
        }
        let args = self.item_texts(decl.child_by_field_name("parameters"));
        let Some(expansion) = m.expand(Some(&args)) else {
            return false;
        };
        if let Some(lib) = &m.fallback {
            self.fallback_macros.insert(name.clone(), lib.to_string());
        }
        let head = format!("void __cudarace_snippet() {{ {expansion}\n");
        self.snippet_with_body(n, name, head, "\n}\n", body)
    }

    /// The texts of the items of a list (call arguments, macro arguments), comments left out;
    /// none for no list.
    pub(crate) fn item_texts(&self, list: Option<Node>) -> Vec<String> {
        list.map(|l| list_items(l).into_iter().map(|x| self.text(x)).collect())
            .unwrap_or_default()
    }

    /// Lowers `head`, the text of the statement `n`'s `body`, then `tail`, as the statements of
    /// a function: the expansion of a loop macro or a library range around a body written in
    /// the file. `name` is kept on the expansion stack meanwhile (a macro does not expand
    /// itself). False when the text does not parse as a function.
    pub(crate) fn snippet_with_body(
        &mut self,
        n: Node,
        name: String,
        head: String,
        tail: &str,
        body: Node,
    ) -> bool {
        let span = self.span(n);
        // The body keeps its byte offsets (so its accesses are reported where they are
        // written): the expansion goes into the blank space before it when it fits.
        let body_start = body.start_byte();
        let (text, at) = if self.src.at.is_none() && head.len() <= body_start {
            let mut t = head;
            t.push_str(&" ".repeat(body_start - t.len()));
            t.push_str(&self.text(body));
            t.push_str(tail);
            (t, None)
        } else {
            let t = format!("{head}{}{tail}", self.text(body));
            (t, Some(self.src.at.unwrap_or(span)))
        };
        let tree = crate::parse::parse(&text, None);
        let Some(fbody) = tree
            .root_node()
            .named_child(0)
            .and_then(|f| f.child_by_field_name("body"))
        else {
            return false;
        };
        let file = self.src.file;
        let saved = std::mem::replace(
            &mut self.src,
            Src {
                file,
                text: Arc::from(text.as_str()),
                at,
            },
        );
        self.expanding.push(name);
        self.block_items(fbody);
        self.expanding.pop();
        self.src = saved;
        true
    }

    /// A `condition_clause` (`if`, `while`, `switch`): optional init statement, then the value.
    fn condition(&mut self, c: Node) -> Expr {
        if let Some(init) = c.child_by_field_name("initializer") {
            self.stmt(init);
        }
        match c.child_by_field_name("value") {
            Some(v) if v.kind() == "declaration" => {
                self.declaration(v);
                // `if (T x = e)`: the value of the declared variable.
                let name = v
                    .child_by_field_name("declarator")
                    .and_then(declarator_name)
                    .map(|x| self.text(x));
                match name.and_then(|nm| self.lookup(&nm)) {
                    Some(Binding::Local(l)) => self.truthy_typed(Expr::Local(l)),
                    Some(Binding::Value(e)) => self.truthy_typed(e),
                    _ => {
                        let span = self.span(v);
                        self.unknown("condition declaration", span, false)
                    }
                }
            }
            Some(v) => self.cond_expr(v),
            None => self.cond_expr(c),
        }
    }

    fn loop_body(&mut self, body: Node) -> Block {
        if let Some(f) = self.frames.last_mut() {
            f.loop_depth += 1;
        }
        let nesting: u32 = self.frames.iter().map(|f| f.loop_depth).sum();
        if nesting > MAX_LOOP_NESTING {
            self.set_unsupported(format!(
                "loops are nested more than {MAX_LOOP_NESTING} deep (counting inlined device functions)"
            ));
        }
        let (_, b) = self.capture(|l| {
            l.push_scope();
            l.stmt(body);
            l.pop_scope();
        });
        if let Some(f) = self.frames.last_mut() {
            f.loop_depth -= 1;
        }
        b
    }

    fn if_stmt(&mut self, n: Node) {
        let Some(c) = n.child_by_field_name("condition") else {
            return;
        };
        // A condition the types decide (`if constexpr (std::is_same<T, char>::value)` with `T`
        // known): only the branch they choose (cxx/type_traits.rs).
        if let Some(v) = self.trait_value(c) {
            let branch = if v {
                n.child_by_field_name("consequence")
            } else {
                n.child_by_field_name("alternative")
            };
            if let Some(b) = branch {
                self.push_scope();
                self.stmt(b);
                self.pop_scope();
            }
            return;
        }
        self.push_scope();
        let cond = self.condition(c);
        let cspan = match c.child_by_field_name("value") {
            Some(v) => self.span(v),
            None => self.span(c),
        };
        let then_branch = match n.child_by_field_name("consequence") {
            Some(t) => {
                self.capture(|l| {
                    l.push_scope();
                    l.stmt(t);
                    l.pop_scope();
                })
                .1
            }
            None => vec![],
        };
        let else_branch = match n.child_by_field_name("alternative") {
            Some(e) => {
                self.capture(|l| {
                    l.push_scope();
                    l.stmt(e);
                    l.pop_scope();
                })
                .1
            }
            None => vec![],
        };
        self.pop_scope();
        self.emit(Stmt::If {
            cond,
            then_branch,
            else_branch,
            span: cspan,
        });
    }

    fn for_stmt(&mut self, n: Node) {
        let span = self.span(n);
        self.push_scope();
        let init = match n.child_by_field_name("initializer") {
            Some(i) => {
                self.capture(|l| {
                    if i.kind() == "declaration" {
                        l.declaration(i)
                    } else {
                        l.expr_discard(i)
                    }
                })
                .1
            }
            None => vec![],
        };
        let (cond, cond_effects) = match n.child_by_field_name("condition") {
            Some(c) => {
                let (e, eff) = self.capture(|l| l.cond_expr(c));
                (Some(e), eff)
            }
            None => (None, vec![]),
        };
        // The update runs after the body; lower the body first so declarations in the body
        // do not leak, but emit in source shape.
        let body = match n.child_by_field_name("body") {
            Some(b) => self.loop_body(b),
            None => vec![],
        };
        let step = match n.child_by_field_name("update") {
            Some(u) => self.capture(|l| l.expr_discard(u)).1,
            None => vec![],
        };
        self.pop_scope();
        self.emit(Stmt::Loop(Loop {
            kind: LoopKind::For,
            init,
            cond,
            cond_effects,
            step,
            body,
            span,
        }));
    }

    fn return_stmt(&mut self, n: Node) {
        let span = self.span(n);
        let value = n.named_child(0).filter(|v| v.kind() != "comment");
        let is_kernel = self.frames.last().map(|f| f.is_kernel).unwrap_or(true);
        if is_kernel {
            if let Some(v) = value {
                self.expr_discard(v);
            }
            self.emit(Stmt::Return { span });
            return;
        }
        if let Some(class) = self.frames.last().and_then(|f| f.ret_obj.clone()) {
            // `return sub;` of an object by value: the caller copies that object. `return {p,
            // n};` and `return Acc{p, n};` build a temporary object.
            let place = match value {
                Some(v) => match self.object_expr(v) {
                    Some(o) => Place::Object(o),
                    None => {
                        let list = match v.kind() {
                            "initializer_list" => Some(v),
                            "compound_literal_expression" => v.child_by_field_name("value"),
                            _ => None,
                        };
                        match list {
                            Some(l) => {
                                let key = (self.src.file, v.start_byte());
                                let o =
                                    self.declare_object(&class, "return", key, Some(l), v, span);
                                Place::Object(o)
                            }
                            None => {
                                self.expr_discard(v);
                                Place::Unknown
                            }
                        }
                    }
                },
                None => Place::Unknown,
            };
            if let Some(f) = self.frames.last_mut() {
                f.ret_place = Some(place);
            }
            return;
        }
        let lvalue = value.is_some_and(|v| {
            matches!(
                v.kind(),
                "identifier"
                    | "parenthesized_expression"
                    | "subscript_expression"
                    | "pointer_expression"
                    | "field_expression"
                    | "call_expression"
            )
        });
        if self.frames.last().is_some_and(|f| f.ret_ref) && lvalue {
            // `return data[i];` in a function returning a reference: the place, not a read.
            // (Other expressions, e.g. `c ? a : b`, are returned as values.)
            let place = match value {
                Some(v) => self.place_of(v),
                None => Place::Unknown,
            };
            if let Some(f) = self.frames.last_mut() {
                f.ret_place = Some(place);
            }
            return;
        }
        let v = match value {
            Some(v) if v.kind() == "initializer_list" => {
                Val::S(self.unknown("returned initializer list", span, false))
            }
            Some(v) => self.expr(v),
            None => Val::Void,
        };
        let Some(fr) = self.frames.last() else { return };
        let (flag, ret_local, in_loop) = (fr.flag, fr.ret_local, fr.loop_depth > 0);
        match flag {
            None => {
                if let Some(f) = self.frames.last_mut() {
                    f.ret_val = Some(v);
                }
            }
            Some(flag) => {
                if let Some(r) = ret_local {
                    let e = self.scalar_of(v, span);
                    let ty = self
                        .k
                        .locals
                        .get(r.0 as usize)
                        .map(|x| x.ty)
                        .unwrap_or(ScalarType::Other);
                    let e = self.coerce(ty, e);
                    self.emit(Stmt::Assign {
                        local: r,
                        value: e,
                        span,
                    });
                }
                self.emit(Stmt::Assign {
                    local: flag,
                    value: Expr::Bool(true),
                    span,
                });
                if in_loop {
                    self.emit(Stmt::Break { span });
                }
            }
        }
    }

    fn switch_stmt(&mut self, n: Node) {
        let span = self.span(n);
        let (Some(c), Some(body)) = (
            n.child_by_field_name("condition"),
            n.child_by_field_name("body"),
        ) else {
            self.opaque_stmt(n, "switch");
            return;
        };
        // Group the cases: (labels (None = default), statements).
        let mut groups: Vec<(Vec<Option<Node>>, Vec<Node>)> = Vec::new();
        let mut pending: Vec<Option<Node>> = Vec::new();
        for case in list_items(body) {
            if case.kind() != "case_statement" {
                continue; // code before the first label is unreachable
            }
            let value = case.child_by_field_name("value");
            pending.push(value);
            let stmts: Vec<Node> = list_items(case)
                .into_iter()
                .filter(|s| Some(*s) != value)
                .collect();
            if !stmts.is_empty() {
                groups.push((std::mem::take(&mut pending), stmts));
            }
        }
        if !pending.is_empty() {
            groups.push((pending, vec![]));
        }
        // What runs when entering at each group: its statements and, on fall-through, the
        // following groups' up to the first `break` (or `return`/`continue`).
        let mut bodies: Vec<Vec<Node>> = Vec::new();
        for gi in 0..groups.len() {
            let mut seq: Vec<Node> = Vec::new();
            for (_, stmts) in groups.iter().skip(gi) {
                let ends = stmts.last().map(|x| x.kind());
                match ends {
                    Some("break_statement") => {
                        seq.extend_from_slice(&stmts[..stmts.len() - 1]);
                        break;
                    }
                    Some("return_statement")
                    | Some("continue_statement")
                    | Some("goto_statement") => {
                        seq.extend_from_slice(stmts);
                        break;
                    }
                    _ => seq.extend_from_slice(stmts),
                }
            }
            if seq.iter().any(|x| has_switch_break(*x)) {
                self.opaque_stmt(n, "switch with a break inside a nested statement");
                return;
            }
            bodies.push(seq);
        }
        self.push_scope();
        let x = self.condition(c);
        let x = match x {
            // condition() made it a truth value; a switch needs the integer itself.
            Expr::Binary(BinOp::Ne, a, b) if *b == Expr::Int(0) => *a,
            other => other,
        };
        let x = self.as_number(x);
        let mut tail: Block = Vec::new();
        let mut chain: Vec<(Expr, Block)> = Vec::new();
        for ((labels, _), stmts) in groups.iter().zip(bodies) {
            let (_, blk) = self.capture(|l| {
                l.push_scope();
                l.stmts(&stmts);
                l.pop_scope();
            });
            if labels.iter().any(|l| l.is_none()) {
                tail = blk;
                continue;
            }
            let mut cond: Option<Expr> = None;
            for lab in labels.iter().flatten() {
                let v = self.scalar_expr(*lab);
                let eq = Expr::bin(BinOp::Eq, x.clone(), v);
                cond = Some(match cond {
                    None => eq,
                    Some(c) => Expr::bin(BinOp::Or, c, eq),
                });
            }
            if let Some(cond) = cond {
                chain.push((cond, blk));
            }
        }
        for (cond, blk) in chain.into_iter().rev() {
            tail = vec![Stmt::If {
                cond,
                then_branch: blk,
                else_branch: tail,
                span,
            }];
        }
        self.pop_scope();
        for s in tail {
            self.emit(s);
        }
    }

    pub fn declaration(&mut self, n: Node) {
        let quals = qualifiers_of(n, &self.src.text.clone());
        let ty_text = n
            .child_by_field_name("type")
            .map(|t| self.type_text(t))
            .unwrap_or_default();
        let shared = quals.iter().any(|q| q == "__shared__");
        let is_extern = quals.iter().any(|q| q == "extern");
        let is_const =
            quals.iter().any(|q| q == "const" || q == "constexpr") || ty_text.starts_with("const ");
        let is_volatile = quals.iter().any(|q| q == "volatile")
            || ty_text.split_whitespace().any(|w| w == "volatile");
        let mut c = n.walk();
        let decls: Vec<Node> = n.children_by_field_name("declarator", &mut c).collect();
        for d in decls {
            let (decl, init) = if d.kind() == "init_declarator" {
                (
                    d.child_by_field_name("declarator").unwrap_or(d),
                    d.child_by_field_name("value"),
                )
            } else {
                (d, None)
            };
            let Some(name_node) = declarator_name(decl) else {
                continue;
            };
            if crate::collect::function_declarator(decl).is_some() {
                // `Acc acc(a);` parses as a local function prototype whose parameter "types"
                // are the constructor's arguments.
                if !self.frames.is_empty() {
                    self.vexing_object(&ty_text, decl, name_node);
                }
                continue; // a local function prototype
            }
            let name = self.text(name_node);
            let nspan = self.span(name_node);
            let shape = declarator_shape(decl);
            if shared {
                let key = (self.src.file, decl.start_byte());
                if let Some(id) = self.shared_decls.get(&key).copied() {
                    if self.src.at.is_none() {
                        self.bind(&name, Binding::Array(id));
                        continue;
                    }
                }
                let dims = if shape == Shape::Array {
                    self.array_dims(decl)
                } else {
                    vec![]
                };
                let origin = if is_extern {
                    ArrayOrigin::ExternShared
                } else {
                    ArrayOrigin::SharedDecl
                };
                let id = self.new_array(
                    &name,
                    MemSpace::Shared,
                    origin,
                    self.scalar_type_of(&ty_text),
                    typenames::elem_size(&ty_text),
                    dims,
                    nspan,
                );
                if let Some(class) = self
                    .class_of(&ty_text)
                    .filter(|_| matches!(shape, Shape::Array | Shape::Scalar))
                {
                    self.elem_classes.insert(id, class);
                }
                // `extern __shared__` memory is re-viewed with other types: no member cells.
                if !is_extern && matches!(shape, Shape::Array | Shape::Scalar) {
                    if let Some(m) = self.struct_layout(&ty_text) {
                        self.make_struct_array(id, m);
                    }
                }
                if self.src.at.is_none() {
                    self.shared_decls.insert(key, id);
                }
                if is_volatile {
                    self.mark_volatile(id);
                }
                if ty_text.trim_start().starts_with("union") {
                    self.shared_unions.insert(id);
                }
                self.bind(&name, Binding::Array(id));
                continue;
            }
            // A lambda or a function object (see cxx/lambdas.rs).
            if let (Shape::Scalar | Shape::Reference, Some(i)) = (shape, init) {
                if self.declare_callable(&name, i, shape == Shape::Reference) {
                    continue;
                }
            }
            match shape {
                Shape::Pointer => {
                    let v = match init {
                        Some(i) => self.init_value(i),
                        None => Val::S(Expr::Int(0)),
                    };
                    let (elem_size, comp) = match &v {
                        Val::P(p) => cxx::vectors::slot_elem(&ty_text, Some(p)),
                        _ => cxx::vectors::slot_elem(&ty_text, None),
                    };
                    let (base, off) = match v {
                        Val::P(p) => (p.base, p.off),
                        Val::S(Expr::Int(0)) => (Base::Null, Expr::Int(0)),
                        _ => (Base::Unknown, Expr::Int(0)),
                    };
                    if let (true, Base::Arr(id)) = (is_volatile, &base) {
                        self.mark_volatile(*id);
                    }
                    let key = (self.src.file, decl.start_byte());
                    let slot = self.new_slot(key, base, off, elem_size, &name);
                    self.slots[slot].comp = comp;
                    self.bind(&name, Binding::Ptr(slot));
                }
                Shape::Array if declarator_has_pointer(decl) => {
                    // An array of pointers: its elements point into what the initializer names
                    // (anything when unknown).
                    let mut base = Base::Null;
                    match init {
                        Some(i) if i.kind() == "initializer_list" => {
                            let kids = list_items(i);
                            for k in kids {
                                base = match self.expr(k) {
                                    Val::P(p) => base.join(&p.base),
                                    Val::S(Expr::Int(0)) => base,
                                    _ => Base::Unknown,
                                };
                            }
                        }
                        Some(i) => {
                            self.expr_discard(i);
                            base = Base::Unknown;
                        }
                        None => {}
                    }
                    if self
                        .frames
                        .last()
                        .is_some_and(|f| f.assigned.contains(&name))
                        || init.is_none()
                    {
                        // Elements assigned later: any target.
                        base = Base::Unknown;
                    }
                    self.bind(&name, Binding::PtrArray(base));
                }
                Shape::Array => {
                    if let Some(i) = init {
                        self.expr_discard(i);
                    }
                    // Each element is built by the class's default constructor: run once here,
                    // inlined when it can be (its effect on other memory is the same for every
                    // element), else an opaque call. The elements' own members stay private.
                    if self.class_with_constructor(&ty_text) {
                        let span = self.span(decl);
                        let key = (self.src.file, decl.start_byte());
                        match self.class_of(&ty_text) {
                            Some(class) => {
                                let label = format!("{name}[…]");
                                self.construct_or_opaque(&class, &label, key, &[], decl, span);
                            }
                            None => self.constructor_call(&ty_text, &[], span),
                        }
                    }
                    let b = match self.class_of(&ty_text) {
                        Some(class) => Binding::PrivateObjects(class.into()),
                        None => Binding::Private,
                    };
                    self.bind(&name, b);
                }
                Shape::Reference => {
                    let b = match init {
                        Some(i) => self.reference_binding(i),
                        None => Binding::Private,
                    };
                    self.bind(&name, b);
                }
                Shape::Scalar
                    if self.class_of(&ty_text).is_some()
                        && !self
                            .frames
                            .last()
                            .is_some_and(|f| f.addressed.contains(&name)) =>
                {
                    // An object of a class defined in the file: one binding per member. (An
                    // object whose address is taken stays opaque: writes through the pointer
                    // are not followed.)
                    let class = self.class_of(&ty_text).unwrap_or_default();
                    let key = (self.src.file, decl.start_byte());
                    let targs = n
                        .child_by_field_name("type")
                        .map(|t| self.template_arg_values(t))
                        .unwrap_or_default();
                    let o = self.declare_object(&class, &name, key, init, decl, nspan);
                    if !targs.is_empty() {
                        o.targs.replace(targs);
                    }
                }
                Shape::Scalar => {
                    let declared = self.scalar_type_of(&ty_text);
                    let is_auto = typenames::is_auto(&ty_text);
                    let v = init.map(|i| self.init_value(i));
                    // An object of a class of the file that is not modelled member by member:
                    // its constructor (run after its arguments) is not inlined.
                    if self.class_with_constructor(&ty_text) {
                        self.opaque(
                            format!(
                                "constructor of `{}` (constructors are not inlined)",
                                ty_text.trim()
                            ),
                            nspan,
                            vec![ALL_ARRAYS],
                            vec![],
                            true,
                        );
                    }
                    if let Some(Val::Group(g)) = v {
                        self.bind(&name, Binding::Group(g));
                        continue;
                    }
                    if let Some(Val::P(p)) = v {
                        // `auto p = &s[0];`: a pointer although the declarator has no `*`.
                        let key = (self.src.file, decl.start_byte());
                        let comp = p.comp;
                        let slot = self.new_slot(key, p.base, p.off, p.elem_size, &name);
                        self.slots[slot].comp = comp;
                        self.bind(&name, Binding::Ptr(slot));
                        continue;
                    }
                    if v.is_none()
                        && (ty_text.contains("thread_block") || ty_text.contains("grid_group"))
                    {
                        continue;
                    }
                    let value = match v {
                        Some(v) => {
                            let e = self.scalar_of(v, nspan);
                            fold(&e)
                        }
                        None => self.unknown(
                            format!("`{name}` declared without initializer"),
                            nspan,
                            false,
                        ),
                    };
                    // `auto` takes the initializer's type (`auto i = blockIdx.x * blockDim.x +
                    // threadIdx.x` is unsigned); other declarations convert to their type.
                    let ty = if is_auto {
                        self.c_type_of(&value).unwrap_or(declared)
                    } else {
                        declared
                    };
                    let assigned = self
                        .frames
                        .last()
                        .is_some_and(|f| f.assigned.contains(&name));
                    if is_const
                        && !assigned
                        && !expr_has_local(&value)
                        && !matches!(value, Expr::Unknown(_))
                    {
                        let value = self.converted(ty, value);
                        self.bind(&name, Binding::Value(value));
                        continue;
                    }
                    let l = self.new_local(&name, ty, nspan);
                    let value = self.coerce(ty, value);
                    self.emit(Stmt::Assign {
                        local: l,
                        value,
                        span: nspan,
                    });
                    self.bind(&name, Binding::Local(l));
                }
            }
        }
    }

    fn init_value(&mut self, i: Node) -> Val {
        match i.kind() {
            "argument_list" | "initializer_list" => {
                let kids = list_items(i);
                if kids.len() == 1 {
                    self.expr(kids[0])
                } else {
                    let span = self.span(i);
                    for k in kids {
                        self.expr_discard(k);
                    }
                    Val::S(self.unknown("aggregate initializer", span, false))
                }
            }
            _ => self.expr(i),
        }
    }

    /// What a reference (`T &r = e`, or a reference parameter) binds to.
    pub fn reference_binding(&mut self, e: Node) -> Binding {
        if e.kind() == "identifier" {
            let name = self.text(e);
            if let Some(b) = self.lookup(&name) {
                return b;
            }
        }
        match self.place_of(e) {
            Place::Local(l) => Binding::Local(l),
            Place::Ptr(s) => Binding::Ptr(s),
            Place::Private => Binding::Private,
            Place::Object(o) => Binding::Object(o),
            // A vector element or a chosen place as it is now: a later change of a local in
            // its index does not move the reference.
            p @ (Place::Cells { .. } | Place::Choice { .. }) => {
                let span = self.span(e);
                Binding::Cell(self.snapshot_place(p, "reference.index", span))
            }
            p => Binding::Cell(p),
        }
    }
}
