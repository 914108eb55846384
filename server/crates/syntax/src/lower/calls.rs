//! Calls: cooperative groups, GPUVerify annotations, casts, device-function inlining, macros;
//! calls without a body go to the library model (`library_calls.rs`) or, unknown, may
//! synchronize.

use super::stmt::contains_return;
use super::*;

fn args_of(n: Node) -> Vec<Node> {
    match n.child_by_field_name("arguments") {
        Some(a) => list_items(a),
        None => vec![],
    }
}

impl<'a, 't> Lowerer<'a, 't> {
    fn linear_tid(&self) -> Expr {
        use Builtin::*;
        let x = Expr::Builtin(ThreadIdx(Dim::X));
        let y = Expr::bin(
            BinOp::Mul,
            Expr::Builtin(ThreadIdx(Dim::Y)),
            Expr::Builtin(BlockDim(Dim::X)),
        );
        let z = Expr::bin(
            BinOp::Mul,
            Expr::Builtin(ThreadIdx(Dim::Z)),
            Expr::bin(
                BinOp::Mul,
                Expr::Builtin(BlockDim(Dim::X)),
                Expr::Builtin(BlockDim(Dim::Y)),
            ),
        );
        Expr::bin(BinOp::Add, Expr::bin(BinOp::Add, x, y), z)
    }

    fn block_size(&self) -> Expr {
        use Builtin::*;
        Expr::bin(
            BinOp::Mul,
            Expr::bin(
                BinOp::Mul,
                Expr::Builtin(BlockDim(Dim::X)),
                Expr::Builtin(BlockDim(Dim::Y)),
            ),
            Expr::Builtin(BlockDim(Dim::Z)),
        )
    }

    pub(crate) fn lower_args_public(&mut self, args: &[Node]) -> Vec<Val> {
        self.lower_args(args)
    }

    pub(crate) fn arrays_of_vals_public(vals: &[Val]) -> Vec<ArrayId> {
        Self::arrays_of_vals(vals)
    }

    fn lower_args(&mut self, args: &[Node]) -> Vec<Val> {
        args.iter().map(|a| self.expr(*a)).collect()
    }

    fn arrays_of_vals(vals: &[Val]) -> Vec<ArrayId> {
        let mut out = Vec::new();
        for v in vals {
            if let Val::P(p) = v {
                out.extend(p.base.arrays());
            }
        }
        out
    }

    pub fn call(&mut self, n: Node) -> Val {
        self.call_ex(n, false)
    }

    /// A call; with `want_place`, a reference-returning inlined function leaves the place it
    /// refers to in `ref_result` (see `call_ref`).
    pub fn call_ex(&mut self, n: Node, want_place: bool) -> Val {
        let span = self.span(n);
        let Some(f) = n.child_by_field_name("function") else {
            return Val::S(self.unknown("call", span, false));
        };
        let f = self.parenthesized_function(f).unwrap_or(f);
        let args = args_of(n);
        let mut c = n.walk();
        let is_launch = n
            .children(&mut c)
            .any(|ch| ch.kind() == "kernel_call_syntax");
        if is_launch {
            let vals = self.lower_args(&args);
            let mut arrays = Self::arrays_of_vals(&vals);
            let (oa, ol) = self.objects_in_args(&args);
            arrays.extend(oa);
            // The child grid's threads are not this kernel's: they may race with it even
            // when it runs one thread.
            let reason = "kernel launch from device code";
            self.opaque_starting(reason, span, arrays, ol, false, true);
            return Val::Void;
        }
        match f.kind() {
            "identifier" => {
                let name = self.text(f);
                if let Some(m) = self.tab.macros.get(&name) {
                    if !self.expanding.contains(&name) && m.params.is_some() {
                        let texts: Vec<String> = args.iter().map(|a| self.text(*a)).collect();
                        // `AT(i) = x`: the place the expansion denotes.
                        if want_place {
                            if let Some(p) = self.macro_place_with(&name, Some(texts.clone()), n) {
                                self.ref_result = Some(p);
                                return Val::Void;
                            }
                        }
                        return self.expand_macro(&name, Some(texts), n);
                    }
                }
                let name = self.function_alias(&name);
                self.named_call(&name, None, n, &args, want_place)
            }
            "template_function" => {
                let name = f
                    .child_by_field_name("name")
                    .map(|x| self.text(x))
                    .unwrap_or_default();
                let targs = f.child_by_field_name("arguments").map(list_items);
                self.named_call(&name, targs, n, &args, want_place)
            }
            "qualified_identifier" => {
                let mut name_node = f;
                let mut scope = None;
                for _ in 0..16 {
                    if name_node.kind() != "qualified_identifier" {
                        break;
                    }
                    scope = name_node.child_by_field_name("scope");
                    match name_node.child_by_field_name("name") {
                        Some(x) => name_node = x,
                        None => break,
                    }
                }
                // `Class::method(…)` for a class defined in the file.
                if let (Some(sc), "identifier") = (scope, name_node.kind()) {
                    let class = self.text(sc);
                    let method = self.text(name_node);
                    if let Some(v) =
                        self.qualified_method_call(&class, &method, n, &args, want_place)
                    {
                        return v;
                    }
                }
                if name_node.kind() == "template_function" {
                    let name = name_node
                        .child_by_field_name("name")
                        .map(|x| self.text(x))
                        .unwrap_or_default();
                    let targs = name_node.child_by_field_name("arguments").map(list_items);
                    return self.named_call(&name, targs, n, &args, want_place);
                }
                let name = self.text(name_node);
                self.named_call(&name, None, n, &args, want_place)
            }
            "field_expression" => {
                // `obj.m<3>()`, `obj.template m<3>()`: the method's name without its template
                // arguments, and those arguments.
                let field = f.child_by_field_name("field").map(|x| {
                    if x.kind() == "dependent_name" {
                        let mut c = x.walk();
                        let inner = x
                            .named_children(&mut c)
                            .find(|y| y.kind() == "template_method");
                        inner.unwrap_or(x)
                    } else {
                        x
                    }
                });
                let (method, method_targs) = match field {
                    Some(x) if x.kind() == "template_method" => (
                        x.child_by_field_name("name")
                            .map(|nm| self.text(nm))
                            .unwrap_or_default(),
                        x.child_by_field_name("arguments").map(list_items),
                    ),
                    Some(x) => (self.text(x), None),
                    None => (String::new(), None),
                };
                let obj_node = f.child_by_field_name("argument");
                let op = f
                    .child_by_field_name("operator")
                    .map(|o| self.text(o))
                    .unwrap_or_default();
                // `BlockReduce(temp).Sum(x)`: a collective described by the library.
                if let (".", Some(o)) = (op.as_str(), obj_node) {
                    if let Some(v) = self.collective_call(o, &method, n, &args) {
                        return v;
                    }
                }
                // `ps[i].step(dt)`, `p->step(dt)`: a method of an element of an array in memory.
                if let Some(o) = obj_node.filter(|_| !want_place) {
                    if let Some(e) = self.element_object(o, &op, &method, args.len()) {
                        return self.element_method_call(
                            e,
                            o,
                            &op,
                            &method,
                            method_targs,
                            n,
                            &args,
                        );
                    }
                }
                // An object of a class defined in the file (or `*this`, or an object returned
                // by reference, as in `a.set(1).set(2)`): the method is inlined.
                let obj: Result<Rc<objects::Object>, Val> = match obj_node {
                    None => Err(Val::Void),
                    Some(o) => match self.field_object(f) {
                        Some(ob) => Ok(ob),
                        None if op == "." && o.kind() == "call_expression" => {
                            match self.call_ref(o) {
                                Ok(Place::Object(ob)) => Ok(ob),
                                Ok(p) => {
                                    let s = self.span(o);
                                    Err(Val::S(self.read(p, s)))
                                }
                                Err(v) => Err(v),
                            }
                        }
                        // `View{p}.get(i)`: a method of a temporary object.
                        None if op == "." && o.kind() == "compound_literal_expression" => {
                            match self.temporary_object(o, false) {
                                Some(ob) => Ok(ob),
                                None => Err(self.expr(o)),
                            }
                        }
                        // `corners[0].set(x, y)` on a thread-private array of objects.
                        None if op == "." => match self.private_element_object(o) {
                            Some(ob) => Ok(ob),
                            None => Err(self.expr(o)),
                        },
                        None => Err(self.expr(o)),
                    },
                };
                match obj {
                    Ok(ob) => {
                        self.method_call_with(ob, &method, method_targs, n, &args, want_place)
                    }
                    Err(Val::Group(g)) => self.group_method(g, &method, n, &args),
                    Err(_) => {
                        // Methods of user types are not inlined: the object may hold pointers
                        // to any array and the method may synchronize or change the object.
                        self.lower_args(&args);
                        let locals = match obj_node {
                            Some(o) => self.all_mentioned_locals(o).1,
                            None => vec![],
                        };
                        self.opaque(
                            format!("method call `.{method}()` (methods are not inlined)"),
                            span,
                            vec![ALL_ARRAYS],
                            locals,
                            true,
                        );
                        Val::S(self.unknown(format!("result of `{method}`"), span, false))
                    }
                }
            }
            _ => {
                // A lambda called on the spot, a temporary function object.
                if let Some(v) = self.callable_expr_call(f, n, &args, want_place) {
                    return v;
                }
                if let Some(v) = self.parenthesized_type_cast(f, &args) {
                    return v;
                }
                // It may call any function (or a lambda stored somewhere): any array.
                self.lower_args(&args);
                let (_, ol) = self.objects_in_args(&args);
                let all = vec![ALL_ARRAYS];
                let callee: String = self
                    .text(f)
                    .split_whitespace()
                    .collect::<Vec<_>>()
                    .join(" ");
                let callee = match callee.char_indices().nth(40) {
                    Some((cut, _)) => format!("{}…", &callee[..cut]),
                    None => callee,
                };
                self.opaque(
                    format!("call through `{callee}` (a function pointer or an unknown callable)"),
                    span,
                    all,
                    ol,
                    true,
                );
                Val::S(self.unknown("result of an indirect call", span, false))
            }
        }
    }

    /// `(T)(x)`: tree-sitter reads a C cast to a type it does not know as a type (a template
    /// parameter, a typedef from a header) as a call through the parenthesized name. A name
    /// that is no variable, function, prototype, macro or library function, with one
    /// argument, can only be a type: the value is cast (or kept, for a type that is not a
    /// known scalar, as any cast to such a type is).
    /// `(cub::min)(a, b)`, `(max)(a, b)`: a function named in parentheses (written so to keep a
    /// function-like macro of that name from expanding) is that function, when the file, its
    /// headers or the library define one of that name.
    fn parenthesized_function<'n>(&mut self, f: Node<'n>) -> Option<Node<'n>> {
        if f.kind() != "parenthesized_expression" || f.named_child_count() != 1 {
            return None;
        }
        let inner = f.named_child(0)?;
        if !matches!(inner.kind(), "identifier" | "qualified_identifier") {
            return None;
        }
        let name = self.text(inner);
        let plain = name.rsplit("::").next().unwrap_or(&name).to_string();
        if self.lookup(&name).is_some() {
            return None;
        }
        let known = |n: &str| {
            self.tab.funcs.contains_key(n)
                || self.tab.protos.contains(n)
                || self.tab.library.function(n).is_some()
        };
        (known(&name) || known(&plain)).then_some(inner)
    }

    fn parenthesized_type_cast(&mut self, f: Node, args: &[Node]) -> Option<Val> {
        // A functional cast `double(x)`, `short(n)`: the callee is the type itself.
        if matches!(f.kind(), "primitive_type" | "sized_type_specifier") && args.len() == 1 {
            return Some(self.cast_to(f, args[0]));
        }
        // `float()`, `int()`: a value-initialized scalar, zero.
        if matches!(f.kind(), "primitive_type" | "sized_type_specifier") && args.is_empty() {
            return Some(Val::S(Expr::Int(0)));
        }
        if f.kind() != "parenthesized_expression" || args.len() != 1 {
            return None;
        }
        let inner = f.named_child(0)?;
        if f.named_child_count() != 1
            || !matches!(
                inner.kind(),
                "identifier" | "type_identifier" | "qualified_identifier" | "template_type"
            )
        {
            return None;
        }
        let name = self.text(inner);
        let plain = name.rsplit("::").next().unwrap_or(&name).to_string();
        let known_callable = |s: &mut Self, n: &str| {
            s.tab.funcs.contains_key(n)
                || s.tab.protos.contains(n)
                || s.tab.macros.get(n).is_some_and(|m| m.params.is_some())
                || s.tab.library.function(n).is_some()
        };
        if self.lookup(&name).is_some()
            || known_callable(self, &name)
            || known_callable(self, &plain)
        {
            return None;
        }
        Some(self.cast_to(inner, args[0]))
    }

    /// `arg` converted to the type named by `ty_node` (a scalar type; anything else keeps it).
    fn cast_to(&mut self, ty_node: Node, arg: Node) -> Val {
        let ty = self.type_text(ty_node);
        let v = self.expr(arg);
        match (self.scalar_type_of(&ty), v) {
            (t @ ScalarType::Int { .. }, Val::S(e)) => Val::S(fold(&Expr::Cast(t, Box::new(e)))),
            (t @ (ScalarType::Float | ScalarType::Bool), Val::S(e)) => {
                Val::S(Expr::Cast(t, Box::new(e)))
            }
            (_, v) => v,
        }
    }

    fn barrier(&mut self, kind: BarrierKind, span: Span) {
        self.emit(Stmt::Barrier(Barrier { kind, span }));
    }

    pub(crate) fn group_sync(&mut self, g: GroupKind, span: Span) {
        match g {
            GroupKind::Block => self.barrier(BarrierKind::Block, span),
            GroupKind::Grid => self.barrier(BarrierKind::Grid, span),
            GroupKind::Tile(Some(32)) => self.barrier(BarrierKind::Warp { mask: None }, span),
            GroupKind::Tile(_) => self.opaque(
                "synchronization of a thread group other than a block, a grid or a warp",
                span,
                vec![],
                vec![],
                true,
            ),
        }
    }

    fn group_method(&mut self, g: GroupKind, method: &str, n: Node, args: &[Node]) -> Val {
        let span = self.span(n);
        match method {
            "sync" | "barrier_wait" => {
                self.group_sync(g, span);
                Val::Void
            }
            "thread_rank" => match g {
                GroupKind::Block => Val::S(self.linear_tid()),
                GroupKind::Tile(Some(t)) if t > 0 && (t & (t - 1)) == 0 && t <= 32 => {
                    Val::S(Expr::bin(BinOp::Rem, self.linear_tid(), Expr::Int(t)))
                }
                _ => Val::S(self.unknown("thread rank in a group", span, false)),
            },
            "size" | "num_threads" => match g {
                GroupKind::Block => Val::S(self.block_size()),
                GroupKind::Tile(Some(t)) => Val::S(Expr::Int(t)),
                _ => Val::S(self.unknown("group size", span, true)),
            },
            "meta_group_size" | "num_blocks" | "is_valid" => {
                Val::S(self.unknown(format!("group `{method}`"), span, true))
            }
            _ => {
                self.lower_args(args);
                Val::S(self.unknown(format!("group `{method}`"), span, false))
            }
        }
    }

    fn named_call(
        &mut self,
        name: &str,
        targs: Option<Vec<Node>>,
        n: Node,
        args: &[Node],
        want_place: bool,
    ) -> Val {
        let span = self.span(n);
        // Inside a method, a bare name can be another method of the class (`this->m()`).
        if let Some(this) = self.this_object() {
            if self.class_has_method(&this.class, name) {
                return self.method_call(this, name, n, args, want_place);
            }
        }
        match name {
            // GPUVerify-style annotations: a guard on what follows.
            "__requires" | "__assume" => {
                if let Some(a) = args.first() {
                    let cond = self.scalar_expr(*a);
                    self.emit(Stmt::Assume { cond, span });
                }
                return Val::Void;
            }
            "__implies" if args.len() == 2 => return self.implies(args[0], args[1]),
            // Loop invariants and postconditions: not needed by the checker, accepted and ignored.
            "__invariant" | "__global_invariant" | "__ensures" | "__function_wide_invariant" => {
                return Val::Void
            }
            // Cooperative groups: the group values their methods and `sync(g)` act on.
            "this_thread_block" => return Val::Group(GroupKind::Block),
            "this_grid" => return Val::Group(GroupKind::Grid),
            "coalesced_threads" => return Val::Group(GroupKind::Tile(None)),
            "tiled_partition" => {
                let vals = self.lower_args(args);
                let size = match (&targs, vals.get(1)) {
                    (Some(t), _) if !t.is_empty() => {
                        let e = self.scalar_expr(t[0]);
                        match fold(&e) {
                            Expr::Int(v) => Some(v),
                            _ => None,
                        }
                    }
                    (_, Some(Val::S(Expr::Int(v)))) => Some(*v),
                    _ => None,
                };
                return Val::Group(GroupKind::Tile(size));
            }
            "static_cast" | "reinterpret_cast" | "const_cast" | "dynamic_cast" => {
                let Some(a) = args.first() else {
                    return Val::Void;
                };
                let v = self.expr(*a);
                let ty = targs.as_ref().and_then(|t| t.first().copied());
                return self.cast_val(ty, v, span);
            }
            _ => {}
        }
        if let Some(g) = self.tab.shared_structs.get(name).copied() {
            // `T *s = SharedMemory<T>();` — the dynamic shared memory array.
            self.lower_args(args);
            let key = (g.file, g.declarator.start_byte());
            let id = match self.shared_decls.get(&key) {
                Some(id) => *id,
                None => {
                    let text = self.tab.texts[g.file.0 as usize].clone();
                    let nm = declarator_name(g.declarator)
                        .map(|x| node_text(x, &text).to_string())
                        .unwrap_or_else(|| "dynamic_shared".into());
                    let aspan =
                        Span::new(g.file, g.declarator.start_byte(), g.declarator.end_byte());
                    let id = self.new_array(
                        &nm,
                        MemSpace::Shared,
                        ArrayOrigin::ExternShared,
                        ScalarType::Other,
                        None,
                        vec![None],
                        aspan,
                    );
                    self.shared_decls.insert(key, id);
                    id
                }
            };
            let p = self.array_ptr(id, span);
            return Val::P(p);
        }
        // A call through a lambda or function object: inlined (cxx/lambdas.rs).
        if let Some(v) = self.callable_variable_call(name, n, args, want_place) {
            return v;
        }
        // A call through another variable (a callable parameter of the kernel): its body is
        // not known; it may touch any array and synchronize.
        if matches!(
            self.lookup(name),
            Some(
                Binding::Local(_)
                    | Binding::Value(_)
                    | Binding::Private
                    | Binding::PrivateObjects(_)
                    | Binding::Ptr(_)
                    | Binding::Object(_)
                    | Binding::Cell(_)
            )
        ) {
            self.lower_args(args);
            self.opaque(
                format!("call through the variable `{name}` (lambda or function object)"),
                span,
                vec![ALL_ARRAYS],
                vec![],
                true,
            );
            return Val::S(self.unknown(format!("result of `{name}`"), span, false));
        }
        // A device function with a body: inline it.
        let def = self.tab.funcs.get(name).and_then(|defs| {
            let pick = defs
                .iter()
                .filter(|d| !d.is_kernel && d.node.child_by_field_name("body").is_some());
            let candidates: Vec<&FuncDef<'t>> = pick.collect();
            candidates
                .iter()
                .find(|d| param_count(d) == args.len())
                .or_else(|| candidates.first())
                .copied()
                .copied()
        });
        if let Some(def) = def {
            return self.inline(name, &def, targs, n, args, None, want_place);
        }
        // `short(x)`, `index_t(x)`: a functional cast to a type that reads as a name (a type
        // keyword tree-sitter takes for an identifier, a `typedef` of a scalar type).
        if targs.is_none()
            && args.len() == 1
            && !self.tab.protos.contains(name)
            && self.lookup(name).is_none()
        {
            let t = self.scalar_type_of(name);
            if matches!(
                t,
                ScalarType::Int { .. } | ScalarType::Float | ScalarType::Bool
            ) {
                return match (t, self.expr(args[0])) {
                    (ScalarType::Int { .. }, Val::S(e)) => {
                        Val::S(fold(&Expr::Cast(t, Box::new(e))))
                    }
                    (_, Val::S(e)) => Val::S(Expr::Cast(t, Box::new(e))),
                    (_, v) => v,
                };
            }
        }
        // `T(x)`, `T()` with a type parameter `T` of the function (`auto sum = T(0);`): a
        // conversion to a type the front end does not know, not a call.
        if targs.is_none() && self.is_type_param(name) {
            return self.conversion_to_type_param(name, args, span);
        }
        // No body: what a library file says of it.
        let library = self.tab.library.clone();
        if let Some(model) = library.function(name) {
            return self.library_call(name, model, n, args);
        }
        // Unknown, declared or not: it may synchronize at block scope (the findings it could
        // prevent become possible, see `cudarace_check::separable`) and may touch whatever its
        // pointer arguments reach.
        let vals = self.lower_args(args);
        let mut arrays = Self::arrays_of_vals(&vals);
        let (oa, ol) = self.objects_in_args(args);
        arrays.extend(oa);
        self.opaque(
            format!("call to `{name}` whose body is not available"),
            span,
            arrays,
            ol,
            true,
        );
        Val::S(self.unknown(format!("result of `{name}`"), span, false))
    }

    /// The function an object-like macro names (`#define syncthreads __syncthreads`), followed
    /// through a few aliases; the name itself otherwise.
    fn function_alias(&self, name: &str) -> String {
        let mut cur = name.to_string();
        for _ in 0..8 {
            let Some(m) = self.tab.macros.get(&cur) else {
                break;
            };
            if m.params.is_some() {
                break;
            }
            let body = m.body.trim();
            let body = body.rsplit("::").next().unwrap_or(body).trim();
            let is_ident = body
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && body.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            if !is_ident || body == cur {
                break;
            }
            cur = body.to_string();
        }
        cur
    }

    pub fn cast_val(&mut self, ty: Option<Node>, v: Val, span: Span) -> Val {
        let Some(ty) = ty else { return v };
        let is_ptr = ty
            .child_by_field_name("declarator")
            .is_some_and(|d| d.kind().contains("pointer"));
        let base_ty = ty
            .child_by_field_name("type")
            .map(|t| self.type_text(t))
            .unwrap_or_default();
        if is_ptr {
            let target = typenames::elem_size(&base_ty);
            return match v {
                Val::P(p) => Val::P(self.ptr_cast(p, target, &base_ty, span)),
                Val::S(Expr::Int(0)) => Val::S(Expr::Int(0)),
                _ => Val::P(PtrVal {
                    base: Base::Unknown,
                    off: Expr::Int(0),
                    stride: Expr::Int(1),
                    elem_size: target,
                    comp: None,
                }),
            };
        }
        if base_ty.trim() == "void" {
            return Val::Void;
        }
        match (self.scalar_type_of(&base_ty), v) {
            (t @ ScalarType::Int { .. }, Val::S(e)) => Val::S(fold(&Expr::Cast(t, Box::new(e)))),
            (t @ (ScalarType::Float | ScalarType::Bool), Val::S(e)) => {
                Val::S(Expr::Cast(t, Box::new(e)))
            }
            (_, v) => v,
        }
    }

    /// The place a pointer argument points to; `&a[i][j]` keeps its per-dimension index.
    pub(crate) fn pointed_place(&mut self, arg: Node) -> Place {
        let mut a = arg;
        while a.kind() == "parenthesized_expression" {
            match a.named_child(0) {
                Some(x) => a = x,
                None => break,
            }
        }
        if a.kind() == "pointer_expression"
            && a.child_by_field_name("operator")
                .is_some_and(|o| self.text(o) == "&")
        {
            if let Some(inner) = a.child_by_field_name("argument") {
                if inner.kind() == "subscript_expression" {
                    if let Ok(p) = self.subscript(inner) {
                        return p;
                    }
                }
                // `&a[i].m`: the member's cell (the whole element when the layout is unknown).
                if inner.kind() == "field_expression"
                    && inner
                        .child_by_field_name("operator")
                        .is_some_and(|o| self.text(o) == ".")
                    && inner
                        .child_by_field_name("argument")
                        .is_some_and(|x| x.kind() == "subscript_expression")
                {
                    if let p @ (Place::Cell { .. } | Place::Cells { .. } | Place::Choice { .. }) =
                        self.place_of(inner)
                    {
                        return p;
                    }
                }
            }
        }
        match self.expr(arg) {
            Val::P(p) => self.deref(&p, Expr::Int(0)),
            _ => Place::Unknown,
        }
    }

    /// Inlines a device function (or, with `this`, a method of that object) at `call`.
    #[allow(clippy::too_many_arguments)]
    pub fn inline(
        &mut self,
        name: &str,
        def: &FuncDef<'t>,
        targs: Option<Vec<Node>>,
        call: Node,
        args: &[Node],
        this: Option<Rc<objects::Object>>,
        want_place: bool,
    ) -> Val {
        let span = self.span(call);
        // The captures of a lambda being inlined (see cxx/lambdas.rs).
        let env = self.lambda_env.take();
        let key = (def.file, def.node.start_byte());
        if self.frames.iter().any(|f| f.key == key) {
            let what = if this.is_some() {
                "method"
            } else {
                "device function"
            };
            self.set_unsupported(format!("recursive {what} `{name}` cannot be inlined"));
            return Val::S(self.unknown("recursive call", span, false));
        }
        if self.frames.len() > MAX_INLINE_DEPTH {
            self.set_unsupported(format!(
                "device functions nested more than {MAX_INLINE_DEPTH} calls deep (at `{name}`)"
            ));
            return Val::S(self.unknown("call nested too deeply", span, false));
        }
        let Some(body) = def.node.child_by_field_name("body") else {
            return Val::S(self.unknown("call", span, false));
        };
        let def_text = self.tab.texts[def.file.0 as usize].clone();
        // Parameter declarations of the callee.
        let params: Vec<Node<'t>> = cxx::lambdas::params_of(def.node)
            .map(|p| {
                let mut c = p.walk();
                let v: Vec<Node<'t>> = p
                    .named_children(&mut c)
                    .filter(|x| x.kind().contains("parameter_declaration"))
                    .collect();
                v
            })
            .unwrap_or_default();
        // Arguments, in the caller's context: references bind places, others values.
        let mut bound: Vec<(String, Node<'t>, Shape, ArgVal)> = Vec::new();
        for (i, p) in params.iter().enumerate() {
            let decl = p.child_by_field_name("declarator");
            let mut shape = decl.map(declarator_shape).unwrap_or(Shape::Scalar);
            // A plain reference (`const P &a`) bound to a temporary: the callee's own copy of
            // the value, like a by-value parameter (cxx/temporaries.rs).
            if shape == Shape::Reference
                && decl.is_some_and(|d| {
                    d.kind() == "reference_declarator"
                        && d.named_child(0).is_some_and(|x| x.kind() == "identifier")
                })
                && args.get(i).is_some_and(|a| self.is_temporary(*a))
            {
                shape = Shape::Scalar;
            }
            let pname = decl
                .and_then(declarator_name)
                .map(|x| node_text(x, &def_text).to_string())
                .unwrap_or_default();
            let any_class = p
                .child_by_field_name("type")
                .and_then(|t| self.class_of(node_text(t, &def_text)));
            let class = any_class.clone().filter(|_| shape == Shape::Scalar);
            // A lambda or a function object: the parameter names it.
            let callable = match args
                .get(i)
                .and_then(|a| self.callable_arg(*a, shape == Shape::Reference))
            {
                // An object whose address the callee takes: not modelled (see below).
                Some(Binding::Object(_)) if addressed_names(body, &def_text).contains(&pname) => {
                    None
                }
                // A function the callee may re-point (`f = other;`, `&f`): not the argument's.
                Some(Binding::Functions(_))
                    if addressed_names(body, &def_text).contains(&pname)
                        || assigned_names(body, &def_text).contains(&pname) =>
                {
                    None
                }
                c => c,
            };
            let av = match (callable, args.get(i)) {
                (Some(b), _) => ArgVal::Ref(b),
                // An element of a thread-private array of objects, by reference: an object
                // of unknown members (see `private_element_object`).
                (None, Some(a)) if shape == Shape::Reference && any_class.is_some() => {
                    match self.private_element_object(*a) {
                        Some(o) => ArgVal::Ref(Binding::Object(o)),
                        None => ArgVal::Ref(self.reference_binding(*a)),
                    }
                }
                (None, Some(a)) if shape == Shape::Reference => {
                    ArgVal::Ref(self.reference_binding(*a))
                }
                (None, Some(a)) if class.is_some() => match self.object_expr(*a) {
                    Some(o) => ArgVal::Obj(o),
                    None => ArgVal::V(self.expr(*a)),
                },
                (None, Some(a)) => ArgVal::V(self.expr(*a)),
                (None, None) => ArgVal::Default,
            };
            bound.push((pname, *p, shape, av));
        }
        for a in args.iter().skip(params.len()) {
            self.expr_discard(*a); // variadic extras
        }
        let targ_classes = self.template_arg_classes(targs.as_ref());
        // The type arguments' texts, with type parameters of the caller resolved
        // (`_unpack<T>` inside a function where `T` is `char`).
        let targ_texts: Vec<String> = targs
            .as_ref()
            .map(|v| {
                v.iter()
                    .map(|t| {
                        let text = self.text(*t);
                        self.type_param_text(text.trim()).unwrap_or(text)
                    })
                    .collect()
            })
            .unwrap_or_default();
        let targ_vals: Vec<Option<Expr>> = targs
            .unwrap_or_default()
            .iter()
            .map(|t| {
                if t.kind() == "type_descriptor" {
                    None
                } else {
                    Some(self.scalar_expr(*t))
                }
            })
            .collect();
        // Switch to the callee.
        let saved_src = std::mem::replace(
            &mut self.src,
            Src {
                file: def.file,
                text: def_text.clone(),
                at: None,
            },
        );
        let assigned = assigned_names(body, &def_text);
        let addressed = addressed_names(body, &def_text);
        let returns = count_returns(body);
        let last_is_return = {
            let mut c = body.walk();
            let last = body
                .named_children(&mut c)
                .filter(|x| x.kind() != "comment")
                .last();
            last.is_some_and(|l| l.kind() == "return_statement")
        };
        let ret_ty_text = def
            .node
            .child_by_field_name("type")
            .map(|t| node_text(t, &def_text).to_string())
            .or_else(|| cxx::lambdas::lambda_return_type(def.node, &def_text))
            .unwrap_or_default();
        let returns_ptr = def.node.child_by_field_name("declarator").is_some_and(|d| {
            d.kind() == "pointer_declarator" || d.kind() == "reference_declarator"
        });
        let is_void = ret_ty_text.trim() == "void" && !returns_ptr;
        let needs_flag = returns > 1 || (returns == 1 && !last_is_return);
        // A reference returned by the only `return`, at the end: the call denotes that place.
        let ret_ref = !needs_flag
            && returns == 1
            && def
                .node
                .child_by_field_name("declarator")
                .is_some_and(|d| d.kind() == "reference_declarator");
        let ret_obj = if !needs_flag && returns == 1 && !returns_ptr {
            self.class_of(&ret_ty_text)
        } else {
            None
        };
        let scope_base = self.scopes.len();
        self.frames.push(Frame {
            key,
            scope_base,
            is_kernel: false,
            ret_local: None,
            ret_val: None,
            flag: None,
            loop_depth: 0,
            assigned,
            addressed,
            ret_ref,
            ret_obj,
            ret_place: None,
        });
        self.push_scope();
        for (n, b) in env.into_iter().flatten() {
            self.bind(&n, b);
        }
        if let Some(tp) = def.template_params {
            self.bind_type_params(tp, &targ_classes, true);
            self.note_type_params(tp, &targ_texts);
        }
        // Template parameters.
        if let Some(tp) = def.template_params {
            for (i, p, nm) in crate::collect::value_template_params(tp) {
                let pname = self.text(nm);
                let v = match targ_vals.get(i).cloned().flatten() {
                    Some(v) => v,
                    None => match p.child_by_field_name("default_value") {
                        Some(d) => self.scalar_expr(d),
                        None => {
                            let s = self.span(nm);
                            self.unknown(
                                format!("template parameter `{pname}` of `{name}` (deduced)"),
                                s,
                                true,
                            )
                        }
                    },
                };
                self.bind(&pname, Binding::Value(v));
            }
        }
        // The object's members (and `this`); parameters declared next shadow them.
        if let Some(o) = &this {
            for (m, b) in o.members.iter() {
                self.bind(m, b.clone());
            }
            self.bind("this", Binding::Object(o.clone()));
            self.bind_class_value_params(o, span);
        }
        for (pname, p, shape, av) in bound {
            if pname.is_empty() {
                continue;
            }
            let decl = p.child_by_field_name("declarator");
            let pspan = self.span(decl.unwrap_or(p));
            let ty_text = p
                .child_by_field_name("type")
                .map(|t| self.type_text(t))
                .unwrap_or_default();
            let av = match av {
                ArgVal::Default => match p.child_by_field_name("default_value") {
                    Some(d) => ArgVal::V(self.expr(d)),
                    None => ArgVal::V(Val::S(self.unknown(
                        format!("missing argument `{pname}`"),
                        pspan,
                        false,
                    ))),
                },
                x => x,
            };
            let class = match shape {
                Shape::Scalar => self.class_of(&ty_text),
                _ => None,
            };
            let addressed = self
                .frames
                .last()
                .is_some_and(|f| f.addressed.contains(&pname));
            if let (Some(class), false) = (&class, addressed) {
                if !matches!(av, ArgVal::Ref(_)) {
                    // An object passed by value: the callee's copy.
                    let init = match av {
                        ArgVal::Obj(o) => objects::ObjInit::Copy(o),
                        _ => objects::ObjInit::Unknown,
                    };
                    let key = (
                        def.file,
                        decl.map(|d| d.start_byte()).unwrap_or(p.start_byte()),
                    );
                    let o = self.new_object(class, &format!("{name}.{pname}"), key, init, pspan);
                    self.bind(&pname, Binding::Object(o));
                    continue;
                }
            }
            let av = match av {
                ArgVal::Obj(_) => ArgVal::V(Val::S(self.unknown(
                    format!("object `{pname}` changed in `{name}`"),
                    pspan,
                    false,
                ))),
                x => x,
            };
            match (shape, av) {
                (_, ArgVal::Ref(b)) => self.bind(&pname, b),
                (_, ArgVal::V(Val::Group(g))) => self.bind(&pname, Binding::Group(g)),
                (Shape::Pointer | Shape::Array, ArgVal::V(v)) => {
                    let (elem_size, comp) = match &v {
                        Val::P(p) => cxx::vectors::slot_elem(&ty_text, Some(p)),
                        _ => cxx::vectors::slot_elem(&ty_text, None),
                    };
                    let (base, off) = match v {
                        Val::P(p) => (p.base, p.off),
                        Val::S(Expr::Int(0)) => (Base::Null, Expr::Int(0)),
                        _ => (Base::Unknown, Expr::Int(0)),
                    };
                    let key = (
                        def.file,
                        decl.map(|d| d.start_byte()).unwrap_or(p.start_byte()),
                    );
                    let slot = self.new_slot(key, base, off, elem_size, &pname);
                    self.slots[slot].comp = comp;
                    if shape == Shape::Array {
                        if let Some(d) = decl {
                            let (dims, _) = self.capture(|l| l.array_dims(d));
                            self.slots[slot].inner = dims.into_iter().skip(1).collect();
                        }
                    }
                    self.bind(&pname, Binding::Ptr(slot));
                }
                // A pointer passed to a parameter of a deduced type (`auto p` of a generic
                // lambda, `T p`): a pointer variable.
                (Shape::Scalar, ArgVal::V(Val::P(pv)))
                    if typenames::is_auto(&ty_text)
                        || self.scalar_type_of(&ty_text) == ScalarType::Other =>
                {
                    let key = (
                        def.file,
                        decl.map(|d| d.start_byte()).unwrap_or(p.start_byte()),
                    );
                    let comp = pv.comp;
                    let slot = self.new_slot(key, pv.base, pv.off, pv.elem_size, &pname);
                    self.slots[slot].comp = comp;
                    self.bind(&pname, Binding::Ptr(slot));
                }
                (_, ArgVal::V(v)) => {
                    let e = self.scalar_of(v, pspan);
                    let reassigned = self
                        .frames
                        .last()
                        .is_some_and(|f| f.assigned.contains(&pname));
                    if reassigned || expr_has_local(&e) {
                        let ty = self.scalar_type_of(&ty_text);
                        let l = self.new_local(&format!("{name}.{pname}"), ty, pspan);
                        let e = self.coerce(ty, e);
                        self.emit(Stmt::Assign {
                            local: l,
                            value: e,
                            span: pspan,
                        });
                        self.bind(&pname, Binding::Local(l));
                    } else {
                        self.bind(&pname, Binding::Value(e));
                    }
                }
                (_, ArgVal::Default) | (_, ArgVal::Obj(_)) => {}
            }
        }
        // A constructor's member initializers (`: data(d), stride(s)`).
        if let Some(o) = &this {
            let mut c = def.node.walk();
            let list = def
                .node
                .children(&mut c)
                .find(|x| x.kind() == "field_initializer_list");
            if let Some(list) = list {
                self.member_initializers(o, list, name);
            }
        }
        if needs_flag {
            let fspan = self.span(body);
            let flag = self.new_local(&format!("{name}.returned"), ScalarType::Bool, fspan);
            self.emit(Stmt::Assign {
                local: flag,
                value: Expr::Bool(false),
                span: fspan,
            });
            let ret = if is_void || returns_ptr {
                None
            } else {
                let l = self.new_local(
                    &format!("{name}.result"),
                    self.scalar_type_of(&ret_ty_text),
                    fspan,
                );
                let u = self.unknown(
                    format!("result of `{name}` when it returns no value"),
                    fspan,
                    false,
                );
                self.emit(Stmt::Assign {
                    local: l,
                    value: u,
                    span: fspan,
                });
                Some(l)
            };
            if let Some(f) = self.frames.last_mut() {
                f.flag = Some(flag);
                f.ret_local = ret;
            }
        }
        self.block_items(body);
        let frame = self.frames.pop();
        self.drop_type_params();
        self.scopes.truncate(scope_base.max(1));
        self.src = saved_src;
        let Some(frame) = frame else { return Val::Void };
        if frame.ret_obj.is_some() {
            if let (true, Some(p @ Place::Object(_))) = (want_place, frame.ret_place) {
                self.ref_result = Some(p);
                return Val::Void;
            }
            return Val::S(self.unknown(format!("object returned by `{name}`"), span, false));
        }
        if let (true, Some(place)) = (frame.ret_ref, frame.ret_place) {
            if want_place {
                // The caller may bind the place and inline this function again before using
                // it (`float &a = t.at(0, i), &b = t.at(1, j);`): its index must not depend on
                // this call's parameter locals any more.
                let place = self.snapshot_place(place, &format!("{name}.ref"), span);
                self.ref_result = Some(place);
                return Val::Void;
            }
            return match place {
                Place::Ptr(s) => Val::P(self.slot_value(s)),
                Place::Object(_) => {
                    Val::S(self.unknown(format!("object returned by `{name}`"), span, false))
                }
                p => Val::S(self.read(p, span)),
            };
        }
        if let Some(r) = frame.ret_local {
            return Val::S(Expr::Local(r));
        }
        if frame.flag.is_some() && returns_ptr {
            return Val::P(PtrVal {
                base: Base::Unknown,
                off: Expr::Int(0),
                stride: Expr::Int(1),
                elem_size: None,
                comp: None,
            });
        }
        match frame.ret_val {
            Some(v) => v,
            None if is_void => Val::Void,
            None => Val::S(self.unknown(format!("result of `{name}`"), span, false)),
        }
    }
}

enum ArgVal {
    V(Val),
    Ref(Binding),
    /// An object passed to a by-value parameter of its class.
    Obj(Rc<objects::Object>),
    Default,
}

pub(crate) fn param_count(d: &FuncDef) -> usize {
    d.node
        .child_by_field_name("declarator")
        .and_then(function_declarator)
        .and_then(|f| f.child_by_field_name("parameters"))
        .map(|p| {
            let mut c = p.walk();
            let n = p
                .named_children(&mut c)
                .filter(|x| x.kind().contains("parameter_declaration"))
                .count();
            n
        })
        .unwrap_or(0)
}

fn count_returns(body: Node) -> usize {
    let mut n = 0;
    let mut stack = vec![body];
    while let Some(x) = stack.pop() {
        match x.kind() {
            "return_statement" => {
                n += 1;
                continue;
            }
            "lambda_expression" => continue,
            _ => {}
        }
        let mut c = x.walk();
        for ch in x.named_children(&mut c) {
            stack.push(ch);
        }
    }
    let _ = contains_return;
    n
}
