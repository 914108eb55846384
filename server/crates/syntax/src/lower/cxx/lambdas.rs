//! Lambdas and function objects, inlined at their calls.
//!
//! A lambda expression bound to a local (`auto f = [&](int i) { … };`), passed to a device
//! function (`for_each(n, [&](int i) { … })`) or called on the spot becomes a
//! [`Binding::Lambda`]: where the lambda's expression is (file and byte range) and its captures,
//! evaluated where the lambda is created. A call `f(args)` inlines the lambda's body like a
//! device function (parameters bound to the arguments, `return` giving the call's value), with
//! the captures in scope:
//!
//! - by reference (`[&]`, `[&x]`, `[&r = e]`): the enclosing binding itself, so the lambda sees
//!   and changes the enclosing variable;
//! - by value (`[=]`, `[x]`, `[y = e]`): a snapshot taken at the creation (a fresh local, a fresh
//!   pointer variable, a copy of an object), so later changes of the enclosing variable are not
//!   seen. A `mutable` lambda changes its own copies; copying such a lambda (into another
//!   variable, into a by-value parameter) snapshots them again;
//! - members of the enclosing method's object (`[this]`, or `[=]`/`[&]` in a method) are reached
//!   through `this`: always by reference;
//! - names usable without a capture (constants, `__shared__` arrays) are visible too.
//!
//! A function object is an object of a class of the file with an `operator()`: `op(a, b)`,
//! `Add{}(a, b)` and `Add()(a, b)` inline `operator()` with the object as `this`, and a function
//! object passed to a parameter (`reduce(s, Add())`) binds that parameter.
//!
//! Overloads of `operator()` the front end cannot tell apart are each inlined in a branch of
//! their own (`overloads.rs`); device functions passed by name are callables too
//! (`fn_refs.rs`).
//!
//! What is not modelled keeps the opaque call of before (it may touch any array and may
//! synchronize): a callable kernel parameter no launch binds (a lambda a launch passes is
//! `launch_lambdas.rs`), a lambda in a macro expansion, a template lambda,
//! a lambda capturing `*this` or a parameter pack, a callable variable that is assigned or whose
//! address is taken, a lambda that flows through anything but a declaration, a reference or an
//! argument (a `?:`, a return value, memory), a function object of a class template. A lambda
//! or function object handed to a call that is not inlined (no body, or described by a library
//! file) makes that call unknown code that may touch any array; a lambda used as a value
//! "escapes": every opaque statement of the kernel that may synchronize may change the locals it
//! captured by reference.

use crate::collect::{declarator_name, FuncDef};
use crate::lower::objects::ObjInit;
use crate::lower::*;

/// `operator()`, as a method name of a class (see `collect.rs`).
pub(crate) const OPERATOR_CALL: &str = "operator()";

/// A lambda value: where its expression is and what it captured.
#[derive(Debug)]
pub(crate) struct Lambda {
    pub file: FileId,
    pub start: usize,
    pub end: usize,
    pub mutable: bool,
    pub env: Vec<Capture>,
}

/// One captured name.
#[derive(Debug, Clone)]
pub(crate) struct Capture {
    pub name: String,
    pub binding: Binding,
    /// A copy (taken again when a `mutable` lambda is copied).
    pub by_value: bool,
}

pub(crate) fn strip_parens(mut n: Node) -> Node {
    for _ in 0..32 {
        if n.kind() != "parenthesized_expression" {
            break;
        }
        match n.named_child(0) {
            Some(x) => n = x,
            None => break,
        }
    }
    n
}

/// The parameter list of a function definition or of a lambda expression.
pub(crate) fn params_of(node: Node) -> Option<Node> {
    if node.kind() == "lambda_expression" {
        return node
            .child_by_field_name("declarator")?
            .child_by_field_name("parameters");
    }
    node.child_by_field_name("declarator")
        .and_then(crate::collect::function_declarator)
        .and_then(|f| f.child_by_field_name("parameters"))
}

/// A lambda's trailing return type (`-> float`).
pub(crate) fn lambda_return_type(node: Node, text: &str) -> Option<String> {
    if node.kind() != "lambda_expression" {
        return None;
    }
    let d = node.child_by_field_name("declarator")?;
    let mut c = d.walk();
    let t = d
        .named_children(&mut c)
        .find(|x| x.kind() == "trailing_return_type")?;
    let ty = t.named_child(0)?;
    Some(node_text(ty, text).to_string())
}

/// Whether a lambda expression is `mutable`.
pub(crate) fn is_mutable(lambda: Node, text: &str) -> bool {
    lambda.child_by_field_name("declarator").is_some_and(|d| {
        let mut c = d.walk();
        let m = d
            .named_children(&mut c)
            .any(|x| x.kind() == "lambda_specifier" && node_text(x, text).trim() == "mutable");
        m
    })
}

/// The names a lambda body mentions (in the order met) and whether it mentions `this`.
pub(crate) fn names_in(body: Node, text: &str) -> (Vec<String>, bool) {
    let mut names = Vec::new();
    let mut seen = HashSet::new();
    let mut this = false;
    let mut stack = vec![body];
    let mut count = 0u32;
    while let Some(n) = stack.pop() {
        count += 1;
        if count > 200_000 {
            break;
        }
        match n.kind() {
            "identifier" => {
                let s = node_text(n, text).to_string();
                if seen.insert(s.clone()) {
                    names.push(s);
                }
            }
            "this" => this = true,
            _ => {}
        }
        let mut c = n.walk();
        let kids: Vec<Node> = n.named_children(&mut c).collect();
        stack.extend(kids.into_iter().rev());
    }
    (names, this)
}

/// Whether two bindings are the same variable.
fn same_binding(a: &Binding, b: &Binding) -> bool {
    match (a, b) {
        (Binding::Local(x), Binding::Local(y)) => x == y,
        (Binding::Ptr(x), Binding::Ptr(y)) => x == y,
        (Binding::Object(x), Binding::Object(y)) => Rc::ptr_eq(x, y),
        (Binding::Lambda(x), Binding::Lambda(y)) => Rc::ptr_eq(x, y),
        (Binding::Private, Binding::Private) => true,
        (Binding::PrivateObjects(x), Binding::PrivateObjects(y)) => Rc::ptr_eq(x, y),
        _ => false,
    }
}

/// The locals a lambda may change: those it captured by reference, its own copies, and those
/// of the objects and lambdas it captured.
pub(crate) fn lambda_locals(l: &Lambda) -> Vec<LocalId> {
    let mut out = Vec::new();
    for c in &l.env {
        match &c.binding {
            Binding::Local(x) => out.push(*x),
            Binding::Object(o) => out.extend(o.locals()),
            Binding::Lambda(inner) => out.extend(lambda_locals(inner)),
            _ => {}
        }
    }
    out
}

/// Adds `locals` to every opaque statement that may synchronize (unknown code, which may call a
/// lambda that escaped and change what it captured by reference).
pub(crate) fn add_escaped_locals(b: &mut Block, locals: &[LocalId]) {
    if locals.is_empty() {
        return;
    }
    for s in b.iter_mut() {
        match s {
            Stmt::Opaque(o) if o.may_sync => {
                for l in locals {
                    if !o.locals.contains(l) {
                        o.locals.push(*l);
                    }
                }
            }
            Stmt::If {
                then_branch,
                else_branch,
                ..
            } => {
                add_escaped_locals(then_branch, locals);
                add_escaped_locals(else_branch, locals);
            }
            Stmt::Loop(l) => {
                add_escaped_locals(&mut l.init, locals);
                add_escaped_locals(&mut l.cond_effects, locals);
                add_escaped_locals(&mut l.step, locals);
                add_escaped_locals(&mut l.body, locals);
            }
            _ => {}
        }
    }
}

impl<'a, 't> Lowerer<'a, 't> {
    /// The lambda expression at `start..end` of `file`'s syntax tree.
    pub(crate) fn lambda_node(&self, file: FileId, start: usize, end: usize) -> Option<Node<'t>> {
        let root = *self.tab.roots.get(file.0 as usize)?;
        let mut n = root.descendant_for_byte_range(start, end)?;
        for _ in 0..64 {
            if n.kind() == "lambda_expression" && n.start_byte() == start && n.end_byte() == end {
                return Some(n);
            }
            if n.start_byte() < start || n.end_byte() > end {
                return None;
            }
            n = n.parent()?;
        }
        None
    }

    /// The binding of `name` in the current function's scopes (not the file's globals), and
    /// whether it is a member of the object of the method being inlined.
    fn lookup_here(&self, name: &str) -> Option<(Binding, bool)> {
        let base = self.frames.last().map(|f| f.scope_base).unwrap_or(0);
        for s in self.scopes[base.min(self.scopes.len())..].iter().rev() {
            if let Some(b) = s.get(name) {
                let member = name != "this"
                    && match s.get("this") {
                        Some(Binding::Object(o)) => {
                            o.member(name).is_some_and(|m| same_binding(&m, b))
                        }
                        _ => false,
                    };
                return Some((b.clone(), member));
            }
        }
        None
    }

    /// A fresh local holding `value` (a by-value capture).
    fn copy_local(&mut self, label: &str, ty: ScalarType, value: Expr, span: Span) -> Binding {
        let l = self.new_local(label, ty, span);
        let value = self.coerce(ty, value);
        self.emit(Stmt::Assign {
            local: l,
            value,
            span,
        });
        Binding::Local(l)
    }

    /// A by-value capture of `b`: its value now, in variables of the lambda's own.
    fn snapshot(
        &mut self,
        label: &str,
        b: Binding,
        key: SlotKey,
        mutable: bool,
        span: Span,
    ) -> Binding {
        match b {
            Binding::Local(l) => {
                let ty = self
                    .k
                    .locals
                    .get(l.0 as usize)
                    .map(|x| x.ty)
                    .unwrap_or(ScalarType::Other);
                self.copy_local(label, ty, Expr::Local(l), span)
            }
            Binding::Value(e) if mutable || expr_has_local(&e) => {
                let ty = self.c_type_of(&e).unwrap_or(ScalarType::Other);
                self.copy_local(label, ty, e, span)
            }
            Binding::Cell(p) => {
                let e = self.read(p, span);
                let ty = self.c_type_of(&e).unwrap_or(ScalarType::Other);
                self.copy_local(label, ty, e, span)
            }
            Binding::Ptr(s) => {
                let v = self.slot_value(s);
                let inner = self.slots[s].inner.clone();
                let comp = v.comp;
                let ns = self.new_slot(key, v.base, v.off, v.elem_size, label);
                self.slots[ns].comp = comp;
                self.slots[ns].inner = inner;
                Binding::Ptr(ns)
            }
            Binding::Object(o) => {
                let class = o.class.clone();
                Binding::Object(self.new_object(&class, label, key, ObjInit::Copy(o), span))
            }
            Binding::Lambda(l) => Binding::Lambda(self.copy_lambda(&l, span)),
            other => other,
        }
    }

    /// A copy of a lambda: a `mutable` lambda's by-value captures are copied again.
    pub(crate) fn copy_lambda(&mut self, l: &Rc<Lambda>, span: Span) -> Rc<Lambda> {
        if !l.mutable || !l.env.iter().any(|c| c.by_value) {
            return l.clone();
        }
        let mut env = Vec::new();
        for (i, c) in l.env.iter().enumerate() {
            let binding = if c.by_value {
                let key = (l.file, l.start + 1 + i);
                self.snapshot(&c.name, c.binding.clone(), key, true, span)
            } else {
                c.binding.clone()
            };
            env.push(Capture {
                name: c.name.clone(),
                binding,
                by_value: c.by_value,
            });
        }
        Rc::new(Lambda {
            file: l.file,
            start: l.start,
            end: l.end,
            mutable: true,
            env,
        })
    }

    /// Creates the lambda a lambda expression denotes, evaluating its captures here; `None`
    /// when it is not modelled (its calls stay opaque).
    pub(crate) fn make_lambda(&mut self, n: Node, label: &str) -> Option<Rc<Lambda>> {
        let n = strip_parens(n);
        if n.kind() != "lambda_expression" || self.src.at.is_some() || n.has_error() {
            return None;
        }
        let file = self.src.file;
        let node = self.lambda_node(file, n.start_byte(), n.end_byte())?;
        let text = self.tab.texts[file.0 as usize].clone();
        if node_text(node, &text) != node_text(n, &self.src.text) {
            return None;
        }
        let caps = node.child_by_field_name("captures")?;
        let body = node.child_by_field_name("body")?;
        if node.child_by_field_name("template_parameters").is_some() {
            return None;
        }
        let mutable = is_mutable(node, &text);
        let span = self.span(n);
        // The capture list.
        let mut default: Option<bool> = None; // Some(true): `[&]`, Some(false): `[=]`
        let mut this_cap = false;
        let mut explicit: Vec<(String, bool)> = Vec::new();
        let mut inits: Vec<Node<'t>> = Vec::new();
        let mut amp = false;
        let mut c = caps.walk();
        let kids: Vec<Node<'t>> = caps.children(&mut c).collect();
        for ch in kids {
            match ch.kind() {
                "&" => amp = true,
                "," | "[" | "]" | "comment" => amp = false,
                "lambda_default_capture" => default = Some(node_text(ch, &text).trim() == "&"),
                "identifier" => {
                    explicit.push((node_text(ch, &text).to_string(), amp));
                    amp = false;
                }
                "this" => this_cap = true,
                "lambda_capture_initializer" => inits.push(ch),
                // `*this`, packs, qualified names.
                _ => return None,
            }
        }
        let mut params = HashSet::new();
        if let Some(pl) = params_of(node) {
            let mut c = pl.walk();
            for p in pl.named_children(&mut c) {
                if let Some(nm) = p
                    .child_by_field_name("declarator")
                    .and_then(declarator_name)
                {
                    params.insert(node_text(nm, &text).to_string());
                }
            }
        }
        let (mut names, _) = names_in(body, &text);
        // Macros used in the body name variables of the enclosing scope too.
        let mut i = 0;
        while i < names.len() && names.len() < 4096 {
            if let Some(m) = self.tab.macros.get(&names[i]) {
                for (is_id, w) in crate::text::tokens(&m.body) {
                    if is_id && !names.iter().any(|x| x == w) {
                        names.push(w.to_string());
                    }
                }
            }
            i += 1;
        }
        let mut env: Vec<Capture> = Vec::new();
        let mut next_key = 0usize;
        let mut key = |file: FileId| {
            next_key += 1;
            (file, node.start_byte() + next_key)
        };
        for init in inits {
            let (Some(left), Some(right)) = (
                init.child_by_field_name("left"),
                init.child_by_field_name("right"),
            ) else {
                return None;
            };
            let name = node_text(left, &text).to_string();
            let by_ref = init.child(0).is_some_and(|c| c.kind() == "&");
            let k = key(file);
            let binding = if by_ref {
                self.reference_binding(right)
            } else if let Some(o) = self.object_expr(right) {
                let class = o.class.clone();
                let label = format!("{label}.{name}");
                Binding::Object(self.new_object(&class, &label, k, ObjInit::Copy(o), span))
            } else {
                let label = format!("{label}.{name}");
                match self.expr(right) {
                    Val::P(p) => {
                        let comp = p.comp;
                        let ns = self.new_slot(k, p.base, p.off, p.elem_size, &label);
                        self.slots[ns].comp = comp;
                        Binding::Ptr(ns)
                    }
                    Val::Group(g) => Binding::Group(g),
                    Val::S(e) => self.snapshot(&label, Binding::Value(e), k, true, span),
                    Val::Void => return None,
                }
            };
            env.push(Capture {
                name,
                binding,
                by_value: !by_ref,
            });
        }
        for (name, by_ref) in explicit {
            if env.iter().any(|c| c.name == name) {
                continue;
            }
            let Some((b, _)) = self.lookup_here(&name) else {
                continue;
            };
            let k = key(file);
            let binding = if by_ref {
                b
            } else {
                self.snapshot(&format!("{label}.{name}"), b, k, mutable, span)
            };
            env.push(Capture {
                name,
                binding,
                by_value: !by_ref,
            });
        }
        // `this` (by reference); members used by their bare names go through it.
        if this_cap || default.is_some() {
            if let Some((b, _)) = self.lookup_here("this") {
                env.push(Capture {
                    name: "this".into(),
                    binding: b,
                    by_value: false,
                });
            }
        }
        for name in names {
            if name == "this" || params.contains(&name) || env.iter().any(|c| c.name == name) {
                continue;
            }
            let Some((b, member)) = self.lookup_here(&name) else {
                continue;
            };
            let (binding, by_value) = match default {
                Some(true) => (b, false),
                Some(false) if member => (b, false),
                Some(false) => {
                    let k = key(file);
                    let label = format!("{label}.{name}");
                    (self.snapshot(&label, b, k, mutable, span), true)
                }
                None if member && this_cap => (b, false),
                // Not captured: only names usable without a capture.
                None => {
                    let usable = match &b {
                        Binding::Value(e) => !expr_has_local(e),
                        Binding::Array(_) | Binding::Group(_) => true,
                        _ => false,
                    };
                    if !usable {
                        continue;
                    }
                    (b, false)
                }
            };
            env.push(Capture {
                name,
                binding,
                by_value,
            });
        }
        Some(Rc::new(Lambda {
            file,
            start: node.start_byte(),
            end: node.end_byte(),
            mutable,
            env,
        }))
    }

    /// A call through a lambda or function object that is not modelled: as before, it may
    /// touch any array, change what it captured, and synchronize.
    pub(crate) fn opaque_callable(
        &mut self,
        name: &str,
        call: Node,
        args: &[Node],
        locals: Vec<LocalId>,
    ) -> Val {
        let span = self.span(call);
        self.lower_args_public(args);
        self.opaque(
            format!("call through the variable `{name}` (lambda or function object)"),
            span,
            vec![ALL_ARRAYS],
            locals,
            true,
        );
        Val::S(self.unknown(format!("result of `{name}`"), span, false))
    }

    /// `f(args)` for a lambda `f`: its body inlined with its captures in scope.
    pub(crate) fn call_lambda(
        &mut self,
        name: &str,
        l: Rc<Lambda>,
        call: Node,
        args: &[Node],
        want_place: bool,
    ) -> Val {
        let Some(node) = self.lambda_node(l.file, l.start, l.end) else {
            let locals = lambda_locals(&l);
            return self.opaque_callable(name, call, args, locals);
        };
        let def = FuncDef {
            node,
            file: l.file,
            is_kernel: false,
            template_params: None,
            outer: node,
        };
        self.lambda_env = Some(
            l.env
                .iter()
                .map(|c| (c.name.clone(), c.binding.clone()))
                .collect(),
        );
        self.inline(name, &def, None, call, args, None, want_place)
    }

    /// A call through a variable bound to a lambda or to a function object (`f(i)`, `op(a,
    /// b)`); `None` for other variables.
    pub(crate) fn callable_variable_call(
        &mut self,
        name: &str,
        call: Node,
        args: &[Node],
        want_place: bool,
    ) -> Option<Val> {
        match self.lookup(name)? {
            Binding::Lambda(l) => Some(self.call_lambda(name, l, call, args, want_place)),
            Binding::Object(o) if self.class_has_method(&o.class, OPERATOR_CALL) => {
                Some(self.method_call(o, OPERATOR_CALL, call, args, want_place))
            }
            Binding::Functions(f) => Some(self.call_fn_ref(name, &f, call, args, want_place)),
            _ => None,
        }
    }

    /// A call whose callee is an expression: a lambda called on the spot (`[&](int i) { … }(k)`)
    /// or a temporary function object (`Add{}(a, b)`, `Add()(a, b)`).
    pub(crate) fn callable_expr_call(
        &mut self,
        f: Node,
        call: Node,
        args: &[Node],
        want_place: bool,
    ) -> Option<Val> {
        let f = strip_parens(f);
        if f.kind() == "lambda_expression" {
            let l = self.make_lambda(f, "lambda")?;
            return Some(self.call_lambda("lambda", l, call, args, want_place));
        }
        let o = self.functor_temporary(f)?;
        Some(self.method_call(o, OPERATOR_CALL, call, args, want_place))
    }

    /// `Add{}`, `Add{1.0f}`, `Add()`, `Add<T>()`: a temporary object of a class of the file with
    /// an `operator()` and no user-declared constructor.
    pub(crate) fn functor_temporary(&mut self, n: Node) -> Option<Rc<objects::Object>> {
        self.temporary_object(n, true)
    }

    /// `View{p}`, `View{}`, `View()`: a temporary object of a class of the file with no
    /// user-declared constructor (its members from the list, in order), for a method called on
    /// it (`View{p}.get(i)`); with `callable`, only of a class with an `operator()`.
    pub(crate) fn temporary_object(
        &mut self,
        n: Node,
        callable: bool,
    ) -> Option<Rc<objects::Object>> {
        let n = strip_parens(n);
        let (ty, list) = match n.kind() {
            "compound_literal_expression" => (
                n.child_by_field_name("type")?,
                n.child_by_field_name("value")?,
            ),
            "call_expression" => (
                n.child_by_field_name("function")?,
                n.child_by_field_name("arguments")?,
            ),
            _ => return None,
        };
        // `Add`, or an instance of a class template (`Add<T>`, `Add<float, int>`).
        let ty = match ty.kind() {
            "template_function" | "template_type" => ty.child_by_field_name("name")?,
            _ => ty,
        };
        if !matches!(ty.kind(), "identifier" | "type_identifier") {
            return None;
        }
        let class = self.class_of(&self.text(ty))?;
        if callable && !self.class_has_method(&class, OPERATOR_CALL) {
            return None;
        }
        if matches!(self.tab.classes.get(&class), Some(Some(c)) if c.has_constructor) {
            return None;
        }
        let kids: Vec<Node> = list_items(list);
        let init = if kids.is_empty() {
            ObjInit::Default
        } else if n.kind() == "call_expression"
            || kids
                .iter()
                .any(|k| matches!(k.kind(), "initializer_pair" | "initializer_list"))
        {
            return None;
        } else {
            ObjInit::List(kids.iter().map(|k| self.expr(*k)).collect())
        };
        let span = self.span(n);
        let key = (self.src.file, n.start_byte());
        Some(self.new_object(&class, &class, key, init, span))
    }

    /// A callable argument bound to a parameter of an inlined function: a lambda (expression
    /// or variable) or a function object; `None` for other arguments. A by-value parameter
    /// gets a copy.
    pub(crate) fn callable_arg(&mut self, a: Node, by_ref: bool) -> Option<Binding> {
        let a = strip_parens(a);
        let span = self.span(a);
        match a.kind() {
            "lambda_expression" => self.make_lambda(a, "lambda").map(Binding::Lambda),
            "identifier" => {
                let name = self.text(a);
                let Some(b) = self.lookup(&name) else {
                    // A device function passed by name (cxx/fn_refs.rs).
                    return self.function_ref(a).map(Binding::Functions);
                };
                match b {
                    Binding::Lambda(l) if by_ref => Some(Binding::Lambda(l)),
                    Binding::Lambda(l) => Some(Binding::Lambda(self.copy_lambda(&l, span))),
                    Binding::Object(o) if self.class_has_method(&o.class, OPERATOR_CALL) => {
                        if by_ref {
                            return Some(Binding::Object(o));
                        }
                        let class = o.class.clone();
                        let key = (self.src.file, a.start_byte());
                        let copy = self.new_object(&class, &name, key, ObjInit::Copy(o), span);
                        Some(Binding::Object(copy))
                    }
                    Binding::Functions(f) => Some(Binding::Functions(f)),
                    _ => None,
                }
            }
            _ => match self.functor_temporary(a) {
                Some(o) => Some(Binding::Object(o)),
                None => self.function_ref(a).map(Binding::Functions),
            },
        }
    }

    /// `auto f = [&](int i) { … };`, `auto g = f;`, `auto op = Add{};`, `const auto &h = f;`:
    /// binds `name` to the callable (a copy, unless `by_ref`); false (the declaration is lowered
    /// as before) for anything else, and for a variable that is assigned or whose address is
    /// taken.
    pub(crate) fn declare_callable(&mut self, name: &str, init: Node, by_ref: bool) -> bool {
        if self
            .frames
            .last()
            .is_some_and(|f| f.assigned.contains(name) || f.addressed.contains(name))
        {
            return false;
        }
        let i = strip_parens(init);
        let span = self.span(i);
        let b = match i.kind() {
            "lambda_expression" => self.make_lambda(i, name).map(Binding::Lambda),
            "identifier" => {
                let src = self.text(i);
                match self.lookup(&src) {
                    Some(Binding::Lambda(l)) if by_ref => Some(Binding::Lambda(l)),
                    Some(Binding::Lambda(l)) => Some(Binding::Lambda(self.copy_lambda(&l, span))),
                    Some(Binding::Functions(f)) => Some(Binding::Functions(f)),
                    _ => self.function_ref(i).map(Binding::Functions),
                }
            }
            _ => match self.functor_temporary(i) {
                Some(o) => Some(Binding::Object(o)),
                None => self.function_ref(i).map(Binding::Functions),
            },
        };
        match b {
            Some(b) => {
                self.bind(name, b);
                true
            }
            None => false,
        }
    }

    /// A lambda expression used as a value (stored, chosen with `?:`, returned): the locals it
    /// may change when called through something the front end cannot follow.
    pub(crate) fn lambda_escapes(&mut self, n: Node) {
        let (_, locals) = self.mentions(n);
        self.escaped_locals.extend(locals);
    }

    /// Whether an argument is a lambda (an expression, or a variable bound to one).
    pub(crate) fn is_lambda_arg(&mut self, a: Node) -> bool {
        let a = strip_parens(a);
        match a.kind() {
            "lambda_expression" => true,
            "identifier" => {
                let name = self.text(a);
                matches!(self.lookup(&name), Some(Binding::Lambda(_))) || self.names_functions(a)
            }
            _ => self.names_functions(a),
        }
    }

    /// Whether every `operator()` of `class` only computes on its parameters and its object's
    /// members: no call (a function, a macro, an atomic), no name of a file-level variable, no
    /// `__shared__` declaration; and whose data members are pointers and plain scalars (a member
    /// of another class or of a type the front end does not know may hold pointers it does not
    /// follow). Called by code the front end does not see, it touches only what that code hands
    /// it and what the object's pointer members point to.
    fn call_operator_is_local(&self, class: &str) -> bool {
        let Some(Some(c)) = self.tab.classes.get(class) else {
            return false;
        };
        let plain = c.fields.iter().all(|f| match f.kind {
            crate::collect::FieldKind::Pointer => true,
            crate::collect::FieldKind::Scalar => {
                let text = &self.tab.texts[c.file.0 as usize];
                crate::typenames::scalar_type(node_text(f.ty, text)) != ScalarType::Other
            }
            crate::collect::FieldKind::Array => false,
        });
        if !plain {
            return false;
        }
        let Some(ms) = c.methods.get(OPERATOR_CALL) else {
            return false;
        };
        ms.iter().all(|m| {
            let Some(d) = m.def else { return false };
            let Some(body) = d.node.child_by_field_name("body") else {
                return false;
            };
            let text = &self.tab.texts[d.file.0 as usize];
            let mut stack = vec![body];
            let mut count = 0u32;
            while let Some(n) = stack.pop() {
                count += 1;
                if count > 20_000 {
                    return false;
                }
                match n.kind() {
                    "call_expression" | "ERROR" | "gnu_asm_expression" | "asm_statement" => {
                        return false
                    }
                    "identifier" => {
                        let s = node_text(n, text);
                        if self.tab.globals.contains_key(s) || self.tab.macros.contains_key(s) {
                            return false;
                        }
                    }
                    "declaration" if node_text(n, text).contains("__shared__") => return false,
                    _ => {}
                }
                let mut cur = n.walk();
                stack.extend(n.children(&mut cur));
            }
            true
        })
    }

    /// What a callable handed to a call that is not inlined may touch: any array, and the
    /// locals a lambda (or a function object's members) may change.
    pub(crate) fn callable_reach(&mut self, a: Node) -> Option<(Vec<ArrayId>, Vec<LocalId>)> {
        let a = strip_parens(a);
        // A function of the file (it may write any array, a `__device__` one too).
        if self.names_functions(a) {
            return Some((vec![ALL_ARRAYS], Vec::new()));
        }
        match a.kind() {
            "lambda_expression" => {
                let (_, locals) = self.mentions(a);
                Some((vec![ALL_ARRAYS], locals))
            }
            "identifier" => {
                let name = self.text(a);
                match self.lookup(&name)? {
                    Binding::Lambda(l) => Some((vec![ALL_ARRAYS], lambda_locals(&l))),
                    // An `operator()` that only computes on its parameters and members reaches
                    // what the call reaches and what its members point to; any other may touch
                    // arrays its members do not reach.
                    Binding::Object(o) if self.class_has_method(&o.class, OPERATOR_CALL) => {
                        if self.call_operator_is_local(&o.class) {
                            return Some((self.object_arrays(&o), o.locals()));
                        }
                        Some((vec![ALL_ARRAYS], o.locals()))
                    }
                    _ => None,
                }
            }
            // A temporary function object (`Keep{out}`, `Less<T>()`): as a variable holding
            // one; a local `operator()` is left to the caller, which follows the temporary's
            // pointer members.
            "compound_literal_expression" | "call_expression" => {
                let ty = if a.kind() == "call_expression" {
                    a.child_by_field_name("function")?
                } else {
                    a.child_by_field_name("type")?
                };
                let ty = match ty.kind() {
                    "template_function" | "template_type" => ty.child_by_field_name("name")?,
                    "identifier" | "type_identifier" => ty,
                    _ => return None,
                };
                let class = self.class_of(&self.text(ty))?;
                if !self.class_has_method(&class, OPERATOR_CALL)
                    || self.call_operator_is_local(&class)
                {
                    return None;
                }
                let (_, locals) = self.mentions(a);
                Some((vec![ALL_ARRAYS], locals))
            }
            _ => None,
        }
    }
}
