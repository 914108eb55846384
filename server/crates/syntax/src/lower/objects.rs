//! Objects of structs and classes defined in the file.
//!
//! An object variable (a local, a by-value kernel or device-function parameter) is bound to an
//! [`Object`]: one binding per data member, so that `obj.n` is a local, `obj.data` a pointer
//! variable (an array of its own when the object is a kernel parameter, like a pointer
//! parameter) and an array member thread-private storage. A method call `obj.m(args)` inlines
//! the method with the members (and `this`) in scope, exactly like a device function.
//!
//! Constructors whose body is empty are inlined too (their member initializers); a
//! reference-returning method used as an lvalue (`obj.at(i) = v`) denotes the place it returns.
//!
//! A function object's `operator()` is a method like the others (`op(a, b)` inlines it, see
//! `cxx/lambdas.rs`), and so is an accessor's `operator[]` (`view[i]`, `rows[y][x]`, see
//! `pointers.rs`).
//!
//! A class with non-virtual base classes defined in the same file (without constructors) has
//! their data members and methods as its own (merged in `collect.rs`).
//!
//! A class template's non-type parameters (`template <typename T, int K> struct TopK`) are, in
//! its methods, the values the object's type gives (`TopK<float, 4>`: `K` is 4; a kernel
//! template parameter `W` in `TopK<float, W>`: `W`), else unknown values the same in every
//! thread.
//!
//! An object in memory (an element of an array of a class of the file: `ps[i].step(dt)`,
//! `p->step(dt)`) has its methods inlined on a copy of the element, read before the call,
//! each assignment of a member followed by the write of its cell (`cxx/element_objects.rs`).
//!
//! What is not modelled stays opaque, as before: virtual methods, member templates, other operators,
//! overloads of the same arity, constructors with statements, destructors, virtual bases and
//! bases the file does not define, class templates with parameter packs, members the front
//! end cannot bind. A by-value kernel parameter of such a class (or of any type the front end
//! does not know) gets an array of its own for the memory it may point to, which unmodelled
//! code touches (so a call on it makes the kernel unknown, never race-free).

use super::*;
use crate::collect::{ClassDef, FieldKind, MethodDef};

/// One object: its class and a binding per data member (in declaration order).
#[derive(Debug)]
pub(crate) struct Object {
    pub class: String,
    pub members: Vec<(String, Binding)>,
    /// The values of the template arguments its type gives (`TopK<float, 4>`: `[None,
    /// Some(4)]`), for the non-type parameters of a class template (see
    /// [`Lowerer::bind_class_value_params`]); set after the object is made.
    pub targs: std::cell::RefCell<Vec<Option<Expr>>>,
}

impl Object {
    pub fn member(&self, name: &str) -> Option<Binding> {
        self.members
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, b)| b.clone())
    }

    /// The locals holding the object's scalar members.
    pub fn locals(&self) -> Vec<LocalId> {
        self.members
            .iter()
            .filter_map(|(_, b)| match b {
                Binding::Local(l) => Some(*l),
                _ => None,
            })
            .collect()
    }
}

/// How a new object's members start.
pub(crate) enum ObjInit {
    /// Default-initialized: default member initializers, else unknown scalars and null pointers.
    Default,
    /// A copy of another object.
    Copy(Rc<Object>),
    /// A value the front end does not know: unknown scalars, pointers to any array.
    Unknown,
    /// A by-value kernel parameter: integer members are parameters of their own (`v.n`), other
    /// scalars uniform unknowns; each pointer member is an array of its own (as a pointer
    /// parameter is).
    Param(ParamId),
    /// An aggregate initializer `{a, b}`: members in declaration order, the rest
    /// value-initialized.
    List(Vec<Val>),
}

/// The most tokens of a definition [`Lowerer::const_twins`] compares.
const MAX_TWIN_TOKENS: usize = 4000;

/// The method definition a call with `nargs` arguments inlines, or why the call stays opaque.
/// `twins` says whether two definitions are the same code but for `const` (see
/// [`Lowerer::const_twins`]): overloads that only differ so are one method to the checker.
pub(crate) fn pick_method<'t>(
    methods: Option<&Vec<MethodDef<'t>>>,
    nargs: usize,
    twins: &dyn Fn(&FuncDef<'t>, &FuncDef<'t>) -> bool,
) -> Result<MethodDef<'t>, &'static str> {
    let Some(ms) = methods else {
        return Err("not a method of the class");
    };
    if ms.iter().any(|m| m.is_virtual) {
        return Err("virtual methods are not inlined");
    }
    if ms.iter().any(|m| m.is_template && m.def.is_none()) {
        return Err("method templates are not inlined");
    }
    let with_body: Vec<&MethodDef<'t>> = ms.iter().filter(|m| m.def.is_some()).collect();
    let count = |m: &MethodDef| m.def.map(|d| super::calls::param_count(&d)).unwrap_or(0);
    let fitting: Vec<&&MethodDef<'t>> = with_body.iter().filter(|m| count(m) == nargs).collect();
    // An overload with default arguments (or `...`) may take a call of fewer arguments.
    let optional = with_body.iter().any(|m| {
        m.def
            .is_some_and(|d| cxx::overloads::has_optional_params(&d))
    });
    if optional && with_body.len() > 1 {
        return Err("overloaded methods are not told apart");
    }
    match (fitting.as_slice(), with_body.as_slice()) {
        ([m], _) => Ok(***m),
        // A `const` overload and its twin (`T &at(int)`, `const T &at(int) const`): the same
        // code runs whichever the compiler picks.
        ([m, rest @ ..], _)
            if m.def.is_some_and(|a| {
                rest.iter()
                    .all(|r| r.is_static == m.is_static && r.def.is_some_and(|b| twins(&a, &b)))
            }) =>
        {
            Ok(***m)
        }
        // Overloads are chosen by argument types, which the front end does not know.
        ([_, _, ..], _) => Err("overloaded methods are not told apart"),
        // Default arguments.
        ([], [m]) => Ok(**m),
        ([], []) => Err("its body is not available"),
        ([], _) => Err("overloaded methods are not told apart"),
    }
}

impl<'a, 't> Lowerer<'a, 't> {
    /// Whether two definitions are the same tokens but for `const` (and comments): a `const`
    /// overload of an accessor and its twin, which run the same code. Up to
    /// [`MAX_TWIN_TOKENS`] tokens each; longer ones are not compared.
    pub(crate) fn const_twins(&self, a: &FuncDef<'t>, b: &FuncDef<'t>) -> bool {
        fn tokens<'s>(n: Node, text: &'s str, out: &mut Vec<&'s str>) -> bool {
            if n.kind() == "comment" {
                return true;
            }
            if n.child_count() == 0 {
                let t = text.get(n.start_byte()..n.end_byte()).unwrap_or("");
                if t != "const" {
                    out.push(t);
                }
                return out.len() <= MAX_TWIN_TOKENS;
            }
            let mut c = n.walk();
            let children: Vec<Node> = n.children(&mut c).collect();
            children.into_iter().all(|ch| tokens(ch, text, out))
        }
        let (mut x, mut y) = (Vec::new(), Vec::new());
        tokens(a.node, self.tab.text(a.file), &mut x)
            && tokens(b.node, self.tab.text(b.file), &mut y)
            && x == y
    }

    /// The class (defined in the file, modelled member by member) a type specifier names.
    pub fn class_of(&self, ty: &str) -> Option<String> {
        self.class_of_at(ty, 0)
    }

    fn class_of_at(&self, ty: &str, depth: usize) -> Option<String> {
        // `Sum<float, int>`, `PtrStep<unsigned char>`: the template arguments (spaces
        // included) are not looked at.
        let ty = without_template_args(ty);
        let words: Vec<&str> = ty
            .split_whitespace()
            .filter(|w| {
                !matches!(
                    *w,
                    "const" | "volatile" | "struct" | "class" | "__restrict__"
                )
            })
            .collect();
        let [name] = words.as_slice() else {
            return None;
        };
        let name = name.rsplit("::").next().unwrap_or(name);
        // `SumOp<T>`: an instance of a class template (modelled with its type parameters
        // unknown, see `collect.rs`).
        let name = name.split('<').next().unwrap_or(name).trim();
        let name = match self.tab.macros.get(name) {
            Some(m) if m.params.is_none() => m.body.trim().to_string(),
            _ => name.to_string(),
        };
        // A template type parameter bound to a class (cxx/type_params.rs).
        let name = self.type_param_class(&name).unwrap_or(name);
        match self.tab.classes.get(&name) {
            Some(Some(c)) if c.unmodelled.is_none() => {
                if let Some(lib) = self.tab.fallback_files.get(&c.file.0) {
                    self.fallback_classes
                        .borrow_mut()
                        .insert(name.clone(), lib.to_string());
                }
                Some(name)
            }
            // `typedef PtrStep<float> PtrStepf;`: the class the alias names (a few steps, so
            // that a cycle of aliases ends).
            None if depth < 4 => {
                let aliased = self
                    .type_aliases
                    .get(&name)
                    .or_else(|| self.tab.type_aliases.get(&name))?;
                self.class_of_at(aliased, depth + 1)
            }
            _ => None,
        }
    }

    fn class_def(&self, name: &str) -> Option<&'a ClassDef<'t>> {
        let tab: &'a Tables<'t> = self.tab;
        tab.classes.get(name).and_then(|c| c.as_ref())
    }

    pub fn class_has_method(&self, class: &str, method: &str) -> bool {
        self.class_def(class)
            .is_some_and(|c| c.methods.contains_key(method))
    }

    /// Runs `f` with the class definition's text as the source and no names of the current
    /// function in scope (default member initializers are evaluated there).
    fn in_class<R>(&mut self, class: &ClassDef<'t>, f: impl FnOnce(&mut Self) -> R) -> R {
        let text = self.tab.texts[class.file.0 as usize].clone();
        let at = self.src.at;
        let saved = std::mem::replace(
            &mut self.src,
            Src {
                file: class.file,
                text,
                at,
            },
        );
        let scope_base = self.scopes.len();
        self.frames.push(Frame {
            key: (class.file, usize::MAX),
            scope_base,
            is_kernel: false,
            ret_local: None,
            ret_val: None,
            flag: None,
            loop_depth: 0,
            assigned: HashSet::new(),
            addressed: HashSet::new(),
            ret_ref: false,
            ret_obj: None,
            ret_place: None,
        });
        self.push_scope();
        let r = f(self);
        self.frames.pop();
        self.scopes.truncate(scope_base.max(1));
        self.src = saved;
        r
    }

    /// A new object of `class` for the variable `var` (declared at `key`).
    pub fn new_object(
        &mut self,
        class: &str,
        var: &str,
        key: SlotKey,
        init: ObjInit,
        span: Span,
    ) -> Rc<Object> {
        let mut members = Vec::new();
        // A copy has the template arguments of its source (the same type).
        let targs = std::cell::RefCell::new(match &init {
            ObjInit::Copy(o) => o.targs.borrow().clone(),
            _ => Vec::new(),
        });
        let Some(def) = self.class_def(class) else {
            return Rc::new(Object {
                class: class.to_string(),
                members,
                targs,
            });
        };
        let ctext = self.tab.texts[def.file.0 as usize].clone();
        let list_len = match &init {
            ObjInit::List(v) => v.len(),
            _ => 0,
        };
        for (k, f) in def.fields.iter().enumerate() {
            let fname = node_text(f.name, &ctext).to_string();
            let mut fty = node_text(f.ty, &ctext).to_string();
            if let Some(m) = self.tab.macros.get(fty.trim()) {
                if m.params.is_none() {
                    fty = m.body.clone();
                }
            }
            let full = format!("{var}.{fname}");
            let listed = match &init {
                ObjInit::List(v) => v.get(k).cloned(),
                _ => None,
            };
            // Members after the last listed one are value-initialized unless they have a
            // default member initializer.
            let default = match (&init, f.default) {
                (ObjInit::Default, Some(d)) => Some(d),
                (ObjInit::List(_), Some(d)) if k >= list_len => Some(d),
                _ => None,
            };
            let default_val = default.map(|d| self.in_class(def, |l| l.expr(d)));
            let b = match f.kind {
                FieldKind::Array => Binding::Private,
                FieldKind::Scalar => {
                    let value = match (&init, default_val, listed) {
                        (_, Some(v), _) => self.scalar_of(v, span),
                        (ObjInit::List(_), None, Some(v)) => self.scalar_of(v, span),
                        (ObjInit::List(_), None, None) => Expr::Int(0),
                        (ObjInit::Copy(o), _, _) => match o.member(&fname) {
                            Some(Binding::Local(l)) => Expr::Local(l),
                            Some(Binding::Value(e)) => e,
                            _ => self.unknown(format!("member `{full}`"), span, false),
                        },
                        (ObjInit::Param(_), _, _) => match self.scalar_type_of(&fty) {
                            // An integer member of a by-value parameter is a parameter of its
                            // own: the same in every thread of the grid (an unknown would only
                            // be uniform per block), and shown by name in witnesses.
                            ty @ (ScalarType::Int { .. } | ScalarType::Bool) => {
                                Expr::Param(self.push_value_param(&full, ty, span, true))
                            }
                            _ => self.unknown(
                                format!("member `{fname}` of the parameter `{var}`"),
                                span,
                                true,
                            ),
                        },
                        (ObjInit::Default, _, _) => {
                            self.unknown(format!("uninitialized member `{full}`"), span, false)
                        }
                        (ObjInit::Unknown, _, _) => {
                            self.unknown(format!("member `{full}`"), span, false)
                        }
                    };
                    let ty = self.scalar_type_of(&fty);
                    let l = self.new_local(&full, ty, span);
                    let value = self.coerce(ty, fold(&value));
                    self.emit(Stmt::Assign {
                        local: l,
                        value,
                        span,
                    });
                    Binding::Local(l)
                }
                FieldKind::Pointer => {
                    let val = match (&init, default_val, listed) {
                        (_, Some(v), _) => Some(v),
                        (ObjInit::List(_), None, v) => Some(v.unwrap_or(Val::S(Expr::Int(0)))),
                        (ObjInit::Default, None, _) => Some(Val::S(Expr::Int(0))),
                        (ObjInit::Copy(o), _, _) => match o.member(&fname) {
                            Some(Binding::Ptr(s)) => Some(Val::P(self.slot_value(s))),
                            _ => None,
                        },
                        (ObjInit::Param(id), _, _) => {
                            let arr = self.new_array(
                                &full,
                                MemSpace::Global,
                                ArrayOrigin::Param(id.0),
                                self.scalar_type_of(&fty),
                                typenames::elem_size(&fty),
                                vec![None],
                                span,
                            );
                            Some(Val::P(self.array_ptr(arr, span)))
                        }
                        (ObjInit::Unknown, _, _) => None,
                    };
                    let (elem_size, comp) = match &val {
                        Some(Val::P(p)) => cxx::vectors::slot_elem(&fty, Some(p)),
                        _ => cxx::vectors::slot_elem(&fty, None),
                    };
                    let (base, off) = match val {
                        Some(Val::P(p)) => (p.base, p.off),
                        Some(Val::S(Expr::Int(0))) => (Base::Null, Expr::Int(0)),
                        _ => (Base::Unknown, Expr::Int(0)),
                    };
                    // One pointer variable per member, keyed apart from every declaration.
                    let mkey = (key.0, key.1 | ((k + 1) << 40));
                    let slot = self.new_slot(mkey, base, off, elem_size, &full);
                    self.slots[slot].comp = comp;
                    if self.slots[slot].off_local.is_none() {
                        // Methods and member assignments re-point members where no pre-scan
                        // sees it: an offset local from the start avoids a second lowering
                        // pass, whose per-declaration hints would merge the targets of every
                        // inlined copy of a by-value object parameter.
                        let l = self.new_local(
                            &format!("{full}.offset"),
                            ScalarType::Int {
                                bits: 64,
                                signed: true,
                            },
                            span,
                        );
                        let value = self.slots[slot].off_expr.clone();
                        self.emit(Stmt::Assign {
                            local: l,
                            value,
                            span,
                        });
                        self.slots[slot].off_local = Some(l);
                    }
                    Binding::Ptr(slot)
                }
            };
            members.push((fname, b));
        }
        Rc::new(Object {
            class: class.to_string(),
            members,
            targs,
        })
    }

    /// The values of the template arguments a declared type gives (`TopK<float, 4>`,
    /// `Vec<T, N>` with `N` a template parameter of the kernel): an expression argument's
    /// value, a name bound to a value; `None` for a type, or what cannot be read.
    pub fn template_arg_values(&mut self, ty: Node) -> Vec<Option<Expr>> {
        let mut t = ty;
        while t.kind() == "qualified_identifier" {
            match t.child_by_field_name("name") {
                Some(n) => t = n,
                None => break,
            }
        }
        if t.kind() != "template_type" {
            return Vec::new();
        }
        let Some(args) = t.child_by_field_name("arguments") else {
            return Vec::new();
        };
        let kids: Vec<Node> = list_items(args);
        kids.into_iter()
            .map(|a| {
                let text = self.text(a);
                let text = text.trim();
                if let Some(v) = crate::consteval::eval_text(text, self.tab, 0) {
                    return Some(Expr::Int(v));
                }
                if text.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                    // A name bound to a value (a template parameter); a variable's value
                    // may change after the object is made.
                    return match self.lookup(text) {
                        Some(Binding::Value(e)) => Some(e),
                        _ => None,
                    };
                }
                (a.kind() != "type_descriptor").then(|| self.scalar_expr(a))
            })
            .collect()
    }

    /// Inside a method of `o`: binds each non-type template parameter of its class template to
    /// the value `o`'s type gives, else its default (a constant), else an unknown value that is
    /// the same in every thread (a template argument is a compile-time constant).
    pub fn bind_class_value_params(&mut self, o: &Object, span: Span) {
        let Some(def) = self.class_def(&o.class) else {
            return;
        };
        let Some(params) = def.template_params else {
            return;
        };
        let text = self.tab.texts[def.file.0 as usize].clone();
        let targs = o.targs.borrow().clone();
        for (i, p, nm) in crate::collect::value_template_params(params) {
            let name = node_text(nm, &text).to_string();
            let default = p
                .child_by_field_name("default_value")
                .and_then(|d| crate::consteval::eval_text(node_text(d, &text), self.tab, 0))
                .map(Expr::Int);
            let value = match targs.get(i).cloned().flatten().or(default) {
                Some(v) => v,
                None => self.unknown(
                    format!("template parameter `{name}` of `{}`", o.class),
                    span,
                    true,
                ),
            };
            self.bind(&name, Binding::Value(value));
        }
    }

    /// An object built by a constructor of the class: default-initialized, then the
    /// constructor's member initializers and body run (inlined like a method) with its
    /// parameters bound to `args`.
    /// `None` when no such constructor takes that many arguments.
    fn construct(
        &mut self,
        class: &str,
        var: &str,
        key: SlotKey,
        args: &[Node],
        at: Node,
        span: Span,
    ) -> Option<Rc<Object>> {
        let c = self.class_def(class)?;
        if c.template_constructor {
            return None;
        }
        let mut fitting = c
            .constructors
            .iter()
            .filter(|d| super::calls::param_count(d) == args.len());
        let def = *fitting.next()?;
        if fitting.next().is_some() {
            // Overloads with as many parameters (chosen by type).
            return None;
        }
        let o = self.new_object(class, var, key, ObjInit::Default, span);
        self.inline(class, &def, None, at, args, Some(o.clone()), false);
        Some(o)
    }

    /// A user-declared constructor that takes one argument (a copy constructor, or a
    /// converting one): copies then run it.
    fn has_one_argument_constructor(&self, class: &str) -> bool {
        self.class_def(class).is_some_and(|c| {
            c.template_constructor
                || c.constructors
                    .iter()
                    .any(|d| super::calls::param_count(d) == 1)
        })
    }

    /// The constructor call of a declaration: inlined when possible, else opaque (and the
    /// object's members unknown).
    #[allow(clippy::too_many_arguments)]
    pub fn construct_or_opaque(
        &mut self,
        class: &str,
        var: &str,
        key: SlotKey,
        args: &[Node],
        at: Node,
        span: Span,
    ) -> Rc<Object> {
        if let Some(o) = self.construct(class, var, key, args, at, span) {
            return o;
        }
        self.constructor_call(class, args, span);
        self.new_object(class, var, key, ObjInit::Unknown, span)
    }

    /// Declares the object variable `var` of `class` with the initializer `init` (`at` is the
    /// declarator).
    pub fn declare_object(
        &mut self,
        class: &str,
        var: &str,
        key: SlotKey,
        init: Option<Node>,
        at: Node,
        span: Span,
    ) -> Rc<Object> {
        let has_ctor = self.class_def(class).is_some_and(|c| c.has_constructor);
        let how = match init {
            None if has_ctor => {
                let o = self.construct_or_opaque(class, var, key, &[], at, span);
                self.bind(var, Binding::Object(o.clone()));
                return o;
            }
            None => ObjInit::Default,
            Some(i) if matches!(i.kind(), "initializer_list" | "argument_list") => {
                let kids: Vec<Node> = list_items(i);
                if has_ctor
                    && !(kids.len() == 1
                        && self.object_expr(kids[0]).is_some()
                        && !self.has_one_argument_constructor(class))
                {
                    let o = self.construct_or_opaque(class, var, key, &kids, i, span);
                    self.bind(var, Binding::Object(o.clone()));
                    return o;
                } else if kids.len() == 1 && self.object_expr(kids[0]).is_some() {
                    match self.object_expr(kids[0]) {
                        Some(o) => ObjInit::Copy(o),
                        None => ObjInit::Unknown,
                    }
                } else if kids
                    .iter()
                    .any(|k| matches!(k.kind(), "initializer_pair" | "initializer_list"))
                {
                    // Designated or nested initializers: evaluated, members unknown.
                    for k in kids {
                        self.expr_discard(k);
                    }
                    ObjInit::Unknown
                } else {
                    ObjInit::List(kids.iter().map(|k| self.expr(*k)).collect())
                }
            }
            Some(i) => match self.object_expr(i) {
                Some(_) if self.has_one_argument_constructor(class) => {
                    let o = self.construct_or_opaque(class, var, key, &[i], i, span);
                    self.bind(var, Binding::Object(o.clone()));
                    return o;
                }
                Some(o) => ObjInit::Copy(o),
                None => match i.kind() {
                    // `Acc a = Acc(p, n);`
                    "call_expression"
                        if has_ctor
                            && i.child_by_field_name("function")
                                .is_some_and(|f| self.text(f) == class) =>
                    {
                        let args: Vec<Node> = match i.child_by_field_name("arguments") {
                            Some(a) => list_items(a),
                            None => vec![],
                        };
                        let o = self.construct_or_opaque(class, var, key, &args, i, span);
                        self.bind(var, Binding::Object(o.clone()));
                        return o;
                    }
                    "call_expression" => match self.call_ref(i) {
                        Ok(Place::Object(o)) => ObjInit::Copy(o),
                        _ => ObjInit::Unknown,
                    },
                    _ => {
                        self.expr_discard(i);
                        ObjInit::Unknown
                    }
                },
            },
        };
        let o = self.new_object(class, var, key, how, span);
        self.bind(var, Binding::Object(o.clone()));
        o
    }

    /// Whether a type names a class of the file with a user-declared constructor (modelled or
    /// not).
    pub fn class_with_constructor(&self, ty: &str) -> bool {
        let words: Vec<&str> = ty
            .split_whitespace()
            .filter(|w| !matches!(*w, "const" | "volatile" | "struct" | "class"))
            .collect();
        let [name] = words.as_slice() else {
            return false;
        };
        let name = name.split('<').next().unwrap_or(name);
        let name = name.rsplit("::").next().unwrap_or(name);
        matches!(self.tab.classes.get(name), Some(Some(c)) if c.has_constructor)
    }

    /// `Acc acc(a);` (parsed as a function prototype): an object constructed from the names in
    /// the parameter list, when every "parameter" is a name in scope.
    pub fn vexing_object(&mut self, ty_text: &str, decl: Node, name_node: Node) {
        let Some(params) = crate::collect::function_declarator(decl)
            .and_then(|f| f.child_by_field_name("parameters"))
        else {
            return;
        };
        let ps: Vec<Node> = list_items(params);
        let mut args = Vec::new();
        let mut arg_nodes = Vec::new();
        for p in &ps {
            let arg = match (p.kind(), p.child_by_field_name("type")) {
                ("parameter_declaration", Some(t))
                    if p.child_by_field_name("declarator").is_none()
                        && t.kind() == "type_identifier" =>
                {
                    t
                }
                _ => return,
            };
            let name = self.text(arg);
            if self.lookup(&name).is_none() {
                return; // a real prototype: `Acc f(Size);`
            }
            args.push(name);
            arg_nodes.push(arg);
        }
        let var = self.text(name_node);
        let span = self.span(name_node);
        let class = self.class_of(ty_text);
        if let Some(class) = &class {
            let key = (self.src.file, decl.start_byte());
            let copy = match args.as_slice() {
                [a] => matches!(self.lookup(a), Some(Binding::Object(_))),
                _ => false,
            };
            let has_ctor = self.class_def(class).is_some_and(|c| c.has_constructor);
            // A copy uses the implicit copy constructor unless one taking one argument exists.
            let implicit_copy = copy && !self.has_one_argument_constructor(class);
            if has_ctor && !implicit_copy {
                let o = self.construct_or_opaque(class, &var, key, &arg_nodes, decl, span);
                self.bind(&var, Binding::Object(o));
                return;
            }
        }
        if self.class_with_constructor(ty_text) {
            let mut locals = Vec::new();
            for a in &args {
                if let Some(Binding::Object(o)) = self.lookup(a) {
                    locals.extend(o.locals());
                }
            }
            self.opaque(
                format!(
                    "constructor of `{}` (constructors are not inlined)",
                    ty_text.trim()
                ),
                span,
                vec![ALL_ARRAYS],
                locals,
                true,
            );
            if let Some(class) = class {
                let key = (self.src.file, decl.start_byte());
                let o = self.new_object(&class, &var, key, ObjInit::Unknown, span);
                self.bind(&var, Binding::Object(o));
            }
            return;
        }
        let Some(class) = class else { return };
        // An aggregate initialized by copy: `Acc b(a);`.
        let init = match args.as_slice() {
            [a] => match self.lookup(a) {
                Some(Binding::Object(o)) => ObjInit::Copy(o),
                _ => ObjInit::Unknown,
            },
            _ => ObjInit::Unknown,
        };
        let key = (self.src.file, decl.start_byte());
        let o = self.new_object(&class, &var, key, init, span);
        self.bind(&var, Binding::Object(o));
    }

    /// `: data(d), stride(s)` of an inlined constructor, in the constructor's scope.
    pub fn member_initializers(&mut self, o: &Object, list: Node, class: &str) {
        let mut c = list.walk();
        let inits: Vec<Node> = list
            .named_children(&mut c)
            .filter(|x| x.kind() == "field_initializer")
            .collect();
        for fi in inits {
            let span = self.span(fi);
            let mut c2 = fi.walk();
            let kids: Vec<Node> = fi.named_children(&mut c2).collect();
            let fname = kids
                .iter()
                .find(|k| k.kind() == "field_identifier")
                .map(|k| self.text(*k));
            let args: Vec<Node> = kids
                .iter()
                .find(|k| matches!(k.kind(), "argument_list" | "initializer_list"))
                .map(|a| list_items(*a))
                .unwrap_or_default();
            match (fname.and_then(|f| o.member(&f)), args.as_slice()) {
                (Some(Binding::Local(l)), [a]) => {
                    let v = self.scalar_expr(*a);
                    let ty = self
                        .k
                        .locals
                        .get(l.0 as usize)
                        .map(|x| x.ty)
                        .unwrap_or(ScalarType::Other);
                    let value = self.coerce(ty, fold(&v));
                    self.emit(Stmt::Assign {
                        local: l,
                        value,
                        span,
                    });
                }
                (Some(Binding::Local(l)), []) => self.emit(Stmt::Assign {
                    local: l,
                    value: Expr::Int(0),
                    span,
                }),
                (Some(Binding::Ptr(s)), [a]) => {
                    let v = self.expr(*a);
                    self.ptr_assign(s, v, span);
                }
                (Some(Binding::Ptr(s)), []) => self.ptr_assign(s, Val::S(Expr::Int(0)), span),
                (Some(Binding::Private | Binding::PrivateObjects(_)), _) => {
                    for a in &args {
                        self.expr_discard(*a);
                    }
                }
                _ => {
                    // A base class or a delegating constructor, or a member initialized from
                    // several values: not modelled.
                    for a in &args {
                        self.expr_discard(*a);
                    }
                    self.opaque(
                        format!("member initializer in a constructor of `{class}`"),
                        span,
                        vec![ALL_ARRAYS],
                        o.locals(),
                        true,
                    );
                    self.havoc_object(o, span);
                }
            }
        }
    }

    /// A constructor call: its body is not inlined, so it may touch any array and synchronize.
    pub fn constructor_call(&mut self, class: &str, args: &[Node], span: Span) {
        let mut locals = Vec::new();
        for a in args {
            self.expr_discard(*a);
            if let Some(o) = self.object_expr(*a) {
                locals.extend(o.locals());
            }
        }
        self.opaque(
            format!("constructor of `{class}` (constructors are not inlined)"),
            span,
            vec![ALL_ARRAYS],
            locals,
            true,
        );
    }

    /// The object an expression denotes without evaluating anything: an object variable,
    /// `*this`, `(obj)`.
    pub fn object_expr(&mut self, n: Node) -> Option<Rc<Object>> {
        match n.kind() {
            // (`type_identifier`: an argument of `Acc b(a);`, parsed as a prototype.)
            "identifier" | "type_identifier" => {
                let name = self.text(n);
                if self
                    .tab
                    .macros
                    .get(&name)
                    .is_some_and(|m| m.params.is_none())
                {
                    return None;
                }
                match self.lookup(&name) {
                    Some(Binding::Object(o)) => Some(o),
                    _ => None,
                }
            }
            "parenthesized_expression" => {
                let x = n.named_child(0)?;
                self.object_expr(x)
            }
            "pointer_expression" => {
                let op = n.child_by_field_name("operator").map(|o| self.text(o));
                let arg = n.child_by_field_name("argument")?;
                if op.as_deref() == Some("*") && is_this(arg) {
                    self.this_object()
                } else {
                    None
                }
            }
            _ => None,
        }
    }

    /// The object of the method being inlined.
    pub fn this_object(&mut self) -> Option<Rc<Object>> {
        match self.lookup("this") {
            Some(Binding::Object(o)) => Some(o),
            _ => None,
        }
    }

    /// The object whose member a field expression selects: `obj.f`, `this->f`, `(*this).f`.
    pub fn field_object(&mut self, n: Node) -> Option<Rc<Object>> {
        let arg = n.child_by_field_name("argument")?;
        let op = n.child_by_field_name("operator").map(|o| self.text(o))?;
        match op.as_str() {
            "." => self.object_expr(arg),
            "->" if is_this(arg) => self.this_object(),
            _ => None,
        }
    }

    /// The binding of the member a field expression selects, when its object is known.
    pub fn member_of_field(&mut self, n: Node) -> Option<Binding> {
        let o = self.field_object(n)?;
        let f = n.child_by_field_name("field")?;
        let name = self.text(f);
        o.member(&name)
    }

    /// The value of a member binding.
    pub fn member_value(&mut self, b: Binding, span: Span) -> Val {
        match b {
            Binding::Local(l) => Val::S(Expr::Local(l)),
            Binding::Value(e) => Val::S(e),
            Binding::Ptr(s) => Val::P(self.slot_value(s)),
            Binding::Private | Binding::PrivateObjects(_) => Val::P(PtrVal {
                base: Base::Private,
                off: Expr::Int(0),
                stride: Expr::Int(1),
                elem_size: None,
                comp: None,
            }),
            _ => Val::S(self.unknown("member of an object", span, false)),
        }
    }

    /// The place of a member binding.
    pub fn member_place(b: Binding) -> Place {
        match b {
            Binding::Local(l) => Place::Local(l),
            Binding::Ptr(s) => Place::Ptr(s),
            Binding::Private | Binding::PrivateObjects(_) => Place::Private,
            Binding::Object(o) => Place::Object(o),
            _ => Place::Unknown,
        }
    }

    /// The object's members take unknown values (a whole-object assignment from something the
    /// front end does not model, a write through a reference it cannot follow).
    pub fn havoc_object(&mut self, o: &Object, span: Span) {
        for (name, b) in &o.members {
            match b {
                Binding::Local(l) => {
                    let u = self.unknown(
                        format!("member `{name}` after an unmodelled change"),
                        span,
                        false,
                    );
                    self.emit(Stmt::Assign {
                        local: *l,
                        value: u,
                        span,
                    });
                }
                Binding::Ptr(s) => {
                    let u = self.unknown("pointer member after an unmodelled change", span, false);
                    self.ptr_assign(*s, Val::S(u), span);
                }
                _ => {}
            }
        }
    }

    /// `dst = src` for two objects: member by member.
    pub fn copy_object(&mut self, dst: &Object, src: &Object, span: Span) {
        for (name, b) in &dst.members {
            match (b, src.member(name)) {
                (Binding::Local(l), Some(Binding::Local(s))) => {
                    self.emit(Stmt::Assign {
                        local: *l,
                        value: Expr::Local(s),
                        span,
                    });
                }
                (Binding::Ptr(d), Some(Binding::Ptr(s))) => {
                    let v = self.slot_value(s);
                    self.ptr_assign(*d, Val::P(v), span);
                }
                (Binding::Local(l), _) => {
                    let u = self.unknown(format!("member `{name}`"), span, false);
                    self.emit(Stmt::Assign {
                        local: *l,
                        value: u,
                        span,
                    });
                }
                (Binding::Ptr(d), _) => {
                    let u = self.unknown("pointer member", span, false);
                    self.ptr_assign(*d, Val::S(u), span);
                }
                _ => {}
            }
        }
    }

    /// The arrays an object's pointer members (also those of its member objects) may point
    /// into.
    pub fn object_arrays(&self, o: &Object) -> Vec<ArrayId> {
        let mut out = Vec::new();
        let mut stack: Vec<(&Object, u32)> = vec![(o, 0)];
        while let Some((o, depth)) = stack.pop() {
            for (_, b) in &o.members {
                match b {
                    Binding::Ptr(s) => out.extend(self.slots[*s].base.arrays()),
                    Binding::PtrArray(base) => out.extend(base.arrays()),
                    Binding::Object(inner) if depth < 16 => stack.push((inner, depth + 1)),
                    // Too deep to follow: anything.
                    Binding::Object(_) => out.push(ALL_ARRAYS),
                    _ => {}
                }
            }
        }
        out
    }

    /// Objects passed to a call whose body is not inlined: the arrays they reach and the locals
    /// of their members (which the callee may change through a reference).
    pub fn objects_in_args(&mut self, args: &[Node]) -> (Vec<ArrayId>, Vec<LocalId>) {
        let mut arrays = Vec::new();
        let mut locals = Vec::new();
        for a in args {
            // A lambda may touch any array and change what it captured by reference.
            if let Some((a, l)) = self.callable_reach(*a) {
                arrays.extend(a);
                locals.extend(l);
                continue;
            }
            let mut x = *a;
            // `&obj`
            if x.kind() == "pointer_expression" {
                if let Some(arg) = x.child_by_field_name("argument") {
                    x = arg;
                }
            }
            // An object of a type the front end does not know, or a struct global: the memory
            // it reaches, with its member arrays (member_pointers.rs).
            if let Some(id) = self.object_array(x) {
                arrays.push(id);
                continue;
            }
            let o = if is_this(x) {
                self.this_object()
            } else {
                self.object_expr(x)
            };
            if let Some(o) = o {
                arrays.extend(self.object_arrays(&o));
                locals.extend(o.locals());
            }
        }
        (arrays, locals)
    }

    /// The element `a[i]…` of a thread-private array of objects (`Point corners[4]`), as an
    /// object whose members are unknown: the checker does not follow the array's contents
    /// (thread-private memory), so the element's scalar members read as unknown values and its
    /// pointer members point anywhere. Its methods can then be inlined: what they do to other
    /// memory is seen, what they do to the element is private to the thread.
    pub fn private_element_object(&mut self, n: Node) -> Option<Rc<Object>> {
        if n.kind() != "subscript_expression" {
            return None;
        }
        let (base, indices) = self.subscript_chain(n);
        if base.kind() != "identifier" || indices.is_empty() {
            return None;
        }
        let name = self.text(base);
        let Some(Binding::PrivateObjects(class)) = self.lookup(&name) else {
            return None;
        };
        for i in indices {
            self.expr_discard(i);
        }
        let span = self.span(n);
        let key = (self.src.file, n.start_byte());
        Some(self.new_object(&class, &format!("{name}[…]"), key, ObjInit::Unknown, span))
    }

    /// `obj.method(args)` on an object of a class defined in the file.
    pub fn method_call(
        &mut self,
        obj: Rc<Object>,
        method: &str,
        n: Node,
        args: &[Node],
        want_place: bool,
    ) -> Val {
        self.method_call_with(obj, method, None, n, args, want_place)
    }

    /// [`Self::method_call`] with the call's template arguments (`l.template load<4>(…)`):
    /// a member function template is inlined with them (those not given are unknown).
    pub fn method_call_with(
        &mut self,
        obj: Rc<Object>,
        method: &str,
        targs: Option<Vec<Node>>,
        n: Node,
        args: &[Node],
        want_place: bool,
    ) -> Val {
        let class = self.class_def(&obj.class);
        let picked = match class {
            Some(c) => pick_method(c.methods.get(method), args.len(), &|a, b| {
                self.const_twins(a, b)
            }),
            None => Err("the class is not modelled"),
        };
        match picked {
            Ok(MethodDef {
                def: Some(def),
                is_static,
                ..
            }) => {
                let this = if is_static { None } else { Some(obj) };
                self.inline(method, &def, targs, n, args, this, want_place)
            }
            Ok(_) => self.opaque_method(Some(obj), method, "its body is not available", n, args),
            Err(why) => {
                // Overloads the front end cannot tell apart: one of them (cxx/overloads.rs).
                let defs = class
                    .and_then(|c| c.methods.get(method))
                    .and_then(|ms| cxx::overloads::candidates(ms, args.len()));
                match defs {
                    Some(defs) => self.overload_choice(obj, method, &defs, n, args),
                    None => self.opaque_method(Some(obj), method, why, n, args),
                }
            }
        }
    }

    /// `Class::method(args)`: a static method (or, inside a method of the class, a method of
    /// `this`).
    pub fn qualified_method_call(
        &mut self,
        class: &str,
        method: &str,
        n: Node,
        args: &[Node],
        want_place: bool,
    ) -> Option<Val> {
        let name = self.class_of(class)?;
        let c = self.class_def(&name)?;
        let ms = c.methods.get(method)?;
        if let Some(this) = self.this_object() {
            if this.class == name && ms.iter().any(|m| !m.is_static) {
                return Some(self.method_call(this, method, n, args, want_place));
            }
        }
        Some(
            match pick_method(Some(ms), args.len(), &|a, b| self.const_twins(a, b)) {
                Ok(MethodDef {
                    def: Some(def),
                    is_static: true,
                    ..
                }) => self.inline(method, &def, None, n, args, None, want_place),
                Ok(_) => {
                    self.opaque_method(None, method, "a method called without an object", n, args)
                }
                Err(why) => self.opaque_method(None, method, why, n, args),
            },
        )
    }

    /// A method call that is not inlined: it may touch any array, synchronize and change the
    /// object.
    pub fn opaque_method(
        &mut self,
        obj: Option<Rc<Object>>,
        method: &str,
        why: &str,
        n: Node,
        args: &[Node],
    ) -> Val {
        let span = self.span(n);
        for a in args {
            self.expr_discard(*a);
        }
        let (_, mut locals) = self.objects_in_args(args);
        if let Some(o) = &obj {
            locals.extend(o.locals());
        }
        self.opaque(
            format!("method call `.{method}()` ({why})"),
            span,
            vec![ALL_ARRAYS],
            locals,
            true,
        );
        if let Some(o) = &obj {
            // The method may have re-pointed the object's pointer members.
            for (_, b) in &o.members {
                if let Binding::Ptr(s) = b {
                    let u = self.unknown("pointer member after an opaque method call", span, false);
                    self.ptr_assign(*s, Val::S(u), span);
                }
            }
        }
        Val::S(self.unknown(format!("result of `{method}`"), span, false))
    }

    /// A fresh (64-bit) local assigned the value `e` here: `e` as it is now, whatever its
    /// locals become later.
    pub fn local_holding(&mut self, label: &str, e: Expr, span: Span) -> LocalId {
        let l = self.new_local(
            label,
            ScalarType::Int {
                bits: 64,
                signed: true,
            },
            span,
        );
        let value = self.as_number(e);
        self.emit(Stmt::Assign {
            local: l,
            value,
            span,
        });
        l
    }

    /// The same place with every index that mentions a local copied into a fresh local.
    pub fn snapshot_place(&mut self, p: Place, label: &str, span: Span) -> Place {
        match p {
            Place::Cell { array, index, flat } => {
                let index = index
                    .into_iter()
                    .map(|e| {
                        if !expr_has_local(&e) {
                            return e;
                        }
                        Expr::Local(self.local_holding(label, e, span))
                    })
                    .collect();
                Place::Cell { array, index, flat }
            }
            Place::Cells {
                array,
                start,
                width,
                comp,
            } => {
                let Place::Cell { mut index, .. } = self.snapshot_place(
                    Place::Cell {
                        array,
                        index: vec![start],
                        flat: true,
                    },
                    label,
                    span,
                ) else {
                    return Place::Unknown;
                };
                Place::Cells {
                    array,
                    start: index.pop().unwrap_or(Expr::Int(0)),
                    width,
                    comp,
                }
            }
            Place::Choice { sel, a, b } => {
                // The choice as it is now, and each side's indices.
                let now = self.new_local(label, ScalarType::Bool, span);
                self.emit(Stmt::Assign {
                    local: now,
                    value: sel,
                    span,
                });
                let a = self.snapshot_place(*a, label, span);
                let b = self.snapshot_place(*b, label, span);
                Place::Choice {
                    sel: Expr::Local(now),
                    a: Box::new(a),
                    b: Box::new(b),
                }
            }
            p => p,
        }
    }

    /// A call used as an lvalue or a reference (`obj.at(i) = v`, `T &r = f()`): the place a
    /// reference-returning inlined function refers to, or else the call's value.
    pub fn call_ref(&mut self, n: Node) -> Result<Place, Val> {
        self.ref_result = None;
        let v = self.call_ex(n, true);
        match self.ref_result.take() {
            Some(p) => Ok(p),
            None => Err(v),
        }
    }
}

/// A type's text without its template argument lists (`const Sum<float, int>` → `const Sum`).
fn without_template_args(ty: &str) -> String {
    let mut out = String::with_capacity(ty.len());
    let mut depth = 0usize;
    for ch in ty.chars() {
        match ch {
            '<' => depth += 1,
            '>' if depth > 0 => depth -= 1,
            _ if depth == 0 => out.push(ch),
            _ => {}
        }
    }
    out
}

/// `this`, possibly parenthesized.
pub(crate) fn is_this(n: Node) -> bool {
    let mut x = n;
    for _ in 0..16 {
        match x.kind() {
            "this" => return true,
            "parenthesized_expression" => match x.named_child(0) {
                Some(y) => x = y,
                None => return false,
            },
            _ => return false,
        }
    }
    false
}
