//! Structs and classes of the file: their data members, methods and constructors as the
//! lowering reads them (`lower/objects.rs`), with the members and methods of base classes merged
//! in.

use super::*;
/// What a data member of a class holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FieldKind {
    /// A scalar (or a value of a type the front end does not look into): one local per object.
    Scalar,
    /// A pointer: one pointer variable per object.
    Pointer,
    /// An array inside the object: thread-private storage.
    Array,
}

#[derive(Clone, Copy)]
pub(crate) struct FieldDef<'t> {
    pub name: Node<'t>,
    /// The member's type specifier.
    pub ty: Node<'t>,
    pub kind: FieldKind,
    /// `int stride = 4;`: the default member initializer.
    pub default: Option<Node<'t>>,
}

#[derive(Clone, Copy)]
pub(crate) struct MethodDef<'t> {
    /// The definition, when the method has a body (in the class or out of line).
    pub def: Option<FuncDef<'t>>,
    pub is_virtual: bool,
    pub is_static: bool,
    /// A member function template (`template <int N> void f()`).
    pub is_template: bool,
}

#[derive(Clone)]
pub(crate) struct ClassDef<'t> {
    pub file: FileId,
    /// Why objects of the class are not modelled member by member (method calls on them stay
    /// opaque): a base class, a class template, reference or bit-field members, …
    pub unmodelled: Option<String>,
    pub fields: Vec<FieldDef<'t>>,
    pub methods: HashMap<String, Vec<MethodDef<'t>>>,
    /// A user-declared constructor: creating an object runs a constructor.
    pub has_constructor: bool,
    /// Constructor definitions (in the class or out of line); those with an empty body are
    /// inlined (their member initializers), the others stay opaque.
    pub constructors: Vec<FuncDef<'t>>,
    /// The (non-virtual) base classes by bare name, in declaration order; their data members
    /// and methods are merged in after the walk (see `inherit`).
    pub bases: Vec<String>,
    /// A constructor template: constructions stay opaque.
    pub template_constructor: bool,
    /// The template parameter list of a class template with non-type parameters
    /// (`template <typename T, int N>`): an object's methods see each non-type parameter as
    /// the value its type names (`TopK<float, 4>`), see `lower/objects.rs`.
    pub template_params: Option<Node<'t>>,
}

pub(super) fn record_class<'t>(t: &mut Tables<'t>, name: &str, class: ClassDef<'t>) {
    if name.is_empty() {
        return;
    }
    match t.classes.get_mut(name) {
        Some(old) => *old = None,
        None => {
            t.classes.insert(name.to_string(), Some(class));
        }
    }
}

/// Merges each class's base classes in: their data members first (the layout of a derived
/// object), then its own; their methods where the class declares none of that name. A base
/// that is not modelled, is defined in another file (member and method nodes are read in the
/// class's file), has a constructor (construction would have to run it) or shares a member
/// name leaves the derived class unmodelled, as before. Bases of bases are merged first.
pub(super) fn inherit(classes: &mut HashMap<String, Option<ClassDef<'_>>>, texts: &[Arc<str>]) {
    let mut names: Vec<String> = classes
        .iter()
        .filter(|(_, c)| c.as_ref().is_some_and(|c| !c.bases.is_empty()))
        .map(|(n, _)| n.clone())
        .collect();
    names.sort();
    let mut done: std::collections::HashSet<String> = std::collections::HashSet::new();
    for name in names {
        inherit_one(classes, texts, &name, &mut done, 0);
    }
}

fn inherit_one(
    classes: &mut HashMap<String, Option<ClassDef<'_>>>,
    texts: &[Arc<str>],
    name: &str,
    done: &mut std::collections::HashSet<String>,
    depth: usize,
) {
    if !done.insert(name.to_string()) {
        return;
    }
    let Some(Some(class)) = classes.get(name) else {
        return;
    };
    let bases = class.bases.clone();
    let file = class.file;
    if bases.is_empty() || class.unmodelled.is_some() {
        return;
    }
    if class.template_params.is_some() {
        // Its own non-type parameters are bound in its methods, not in the bases' methods.
        if let Some(Some(c)) = classes.get_mut(name) {
            c.unmodelled.get_or_insert_with(|| {
                "derived class templates with non-type parameters are not modelled".to_string()
            });
        }
        return;
    }
    let fail = |classes: &mut HashMap<String, Option<ClassDef<'_>>>, why: &str| {
        if let Some(Some(c)) = classes.get_mut(name) {
            c.unmodelled.get_or_insert_with(|| why.to_string());
        }
    };
    if depth > 16 || bases.iter().any(|b| b == name) {
        return fail(classes, "derived classes are not modelled");
    }
    for b in &bases {
        inherit_one(classes, texts, b, done, depth + 1);
    }
    let mut fields = Vec::new();
    let mut methods: Vec<(String, Vec<MethodDef<'_>>)> = Vec::new();
    for b in &bases {
        let base = match classes.get(b) {
            Some(Some(base)) => base,
            _ => {
                return fail(
                    classes,
                    "derived classes of a class not defined here are not modelled",
                )
            }
        };
        if base.unmodelled.is_some() {
            return fail(
                classes,
                "derived classes of an unmodelled class are not modelled",
            );
        }
        if base.file != file {
            return fail(
                classes,
                "derived classes of a class in another file are not modelled",
            );
        }
        if base.has_constructor {
            return fail(
                classes,
                "derived classes of a class with a constructor are not modelled",
            );
        }
        if base.template_params.is_some() {
            // The base's non-type parameters would need the values the derived class's
            // base clause gives them.
            return fail(
                classes,
                "derived classes of a class template with non-type parameters are not modelled",
            );
        }
        fields.extend(base.fields.iter().cloned());
        for (m, defs) in &base.methods {
            methods.push((m.clone(), defs.clone()));
        }
    }
    let Some(Some(class)) = classes.get_mut(name) else {
        return;
    };
    fields.extend(class.fields.iter().cloned());
    let mut seen = std::collections::HashSet::new();
    let text = texts.get(file.0 as usize).map(|t| &**t).unwrap_or("");
    let clash = fields
        .iter()
        .any(|f| !seen.insert(node_text(f.name, text).to_string()));
    class.fields = fields;
    for (m, defs) in methods {
        class.methods.entry(m).or_insert(defs);
    }
    class.bases.clear();
    if clash {
        class.unmodelled = Some("a member inherited twice is not modelled".to_string());
    }
}

fn has_token(n: Node, kind: &str) -> bool {
    let mut c = n.walk();
    let found = n.children(&mut c).any(|ch| ch.kind() == kind);
    found
}

/// The name a method definition or declaration declares (`None` for operators and destructors),
/// and whether it is a destructor.
fn method_name<'t>(declarator: Node<'t>, text: &str) -> (Option<String>, bool) {
    let Some(fd) = function_declarator(declarator) else {
        return (None, false);
    };
    let Some(d) = fd.child_by_field_name("declarator") else {
        return (None, false);
    };
    match d.kind() {
        "destructor_name" => (None, true),
        // A function object's `operator()` (called as `op(a, b)`, see `lower/cxx/lambdas.rs`)
        // and an accessor's `operator[]` (`view[i]`, see `lower/pointers.rs`); other operators
        // are not modelled.
        "operator_name" => {
            let t: String = node_text(d, text)
                .chars()
                .filter(|c| !c.is_whitespace())
                .collect();
            ((t == "operator()" || t == "operator[]").then_some(t), false)
        }
        _ => (
            declarator_name(d).map(|n| node_text(n, text).to_string()),
            false,
        ),
    }
}

/// The data members and methods of a struct or class definition.
pub(super) fn class_def<'t>(spec: Node<'t>, name: &str, file: FileId, text: &str) -> ClassDef<'t> {
    let mut class = ClassDef {
        file,
        unmodelled: None,
        fields: Vec::new(),
        methods: HashMap::new(),
        has_constructor: false,
        constructors: Vec::new(),
        template_constructor: false,
        bases: Vec::new(),
        template_params: None,
    };
    let unmodelled = |class: &mut ClassDef, why: &str| {
        if class.unmodelled.is_none() {
            // For triage: why a class's methods stay opaque (`CUDARACE_DEBUG_CLASSES=1`).
            if std::env::var_os("CUDARACE_DEBUG_CLASSES").is_some() {
                eprintln!("class {name} not modelled: {why}");
            }
            class.unmodelled = Some(why.to_string());
        }
    };
    if spec.has_error() {
        unmodelled(&mut class, "the class has a syntax error");
    }
    let mut c = spec.walk();
    let clauses: Vec<Node> = spec
        .children(&mut c)
        .filter(|ch| ch.kind() == "base_class_clause")
        .collect();
    for clause in clauses {
        if has_token(clause, "virtual") {
            unmodelled(&mut class, "virtual base classes are not modelled");
        }
        let mut c = clause.walk();
        for b in clause.named_children(&mut c) {
            match b.kind() {
                "access_specifier" | "comment" => {}
                "type_identifier" | "qualified_identifier" | "template_type" => {
                    // `ns::Base<T>`: the class template `Base` (modelled with its type
                    // parameters unknown, like a member's type).
                    let t = node_text(b, text);
                    let t = t.split('<').next().unwrap_or(t);
                    let t = t.rsplit("::").next().unwrap_or(t).trim();
                    class.bases.push(t.to_string());
                }
                _ => unmodelled(&mut class, "derived classes are not modelled"),
            }
        }
    }
    // A class template is modelled with its type parameters unknown: a `T` member or value is
    // a value of no known type (unknown), a `T *` member a pointer. Its non-type parameters
    // (array sizes, strides: `template <typename T, int N>`) take the values an object's type
    // gives (`TopK<float, 4>`), else unknown ones; packs and template template parameters are
    // not modelled.
    if let Some(t) = spec.parent().filter(|p| p.kind() == "template_declaration") {
        if let Some(ps) = t.child_by_field_name("parameters") {
            let mut c = ps.walk();
            let kinds: Vec<&str> = ps.named_children(&mut c).map(|p| p.kind()).collect();
            let value_params = kinds.iter().any(|k| {
                matches!(
                    *k,
                    "parameter_declaration" | "optional_parameter_declaration"
                )
            });
            let other = kinds.iter().any(|k| {
                !matches!(
                    *k,
                    "type_parameter_declaration"
                        | "optional_type_parameter_declaration"
                        | "parameter_declaration"
                        | "optional_parameter_declaration"
                        | "comment"
                )
            });
            if other {
                unmodelled(
                    &mut class,
                    "class templates with parameter packs or template template parameters are not modelled",
                );
            } else if value_params {
                class.template_params = Some(ps);
            }
        }
    }
    let Some(body) = spec.child_by_field_name("body") else {
        unmodelled(&mut class, "the class has no body");
        return class;
    };
    let mut c = body.walk();
    let items: Vec<Node<'t>> = body.named_children(&mut c).collect();
    for m in items {
        match m.kind() {
            "comment"
            | "access_specifier"
            | "friend_declaration"
            | "type_definition"
            | "alias_declaration"
            | "using_declaration"
            | "static_assert_declaration"
            | "enum_specifier" => {}
            "function_definition" => {
                let Some(d) = m.child_by_field_name("declarator") else {
                    continue;
                };
                let (mname, is_dtor) = method_name(d, text);
                if is_dtor {
                    // Destructors run at scope exit, which the front end does not model.
                    unmodelled(&mut class, "classes with a destructor are not modelled");
                    continue;
                }
                let Some(mname) = mname else { continue };
                if mname == name {
                    class.has_constructor = true;
                    class.constructors.push(FuncDef {
                        node: m,
                        file,
                        is_kernel: false,
                        template_params: None,
                        outer: m,
                    });
                    continue;
                }
                let quals = qualifiers(m, text);
                let def = FuncDef {
                    node: m,
                    file,
                    is_kernel: false,
                    template_params: None,
                    outer: m,
                };
                class.methods.entry(mname).or_default().push(MethodDef {
                    def: Some(def),
                    is_virtual: has_token(m, "virtual"),
                    is_static: quals.iter().any(|q| q == "static"),
                    is_template: false,
                });
            }
            "template_declaration" => {
                // A member function template: a definition in the class is inlined with the
                // call's template arguments (`l.template load<4>(…)`); a declaration alone
                // stays opaque.
                let mut c2 = m.walk();
                let inner: Vec<Node<'t>> = m.named_children(&mut c2).collect();
                for f in inner {
                    let Some(d) = f.child_by_field_name("declarator") else {
                        continue;
                    };
                    if let (Some(mname), _) = method_name(d, text) {
                        if mname == name {
                            class.has_constructor = true;
                            class.template_constructor = true;
                            continue;
                        }
                        let def = (f.kind() == "function_definition").then(|| FuncDef {
                            node: f,
                            file,
                            is_kernel: false,
                            template_params: m.child_by_field_name("parameters"),
                            outer: m,
                        });
                        let quals = qualifiers(f, text);
                        class.methods.entry(mname).or_default().push(MethodDef {
                            def,
                            is_virtual: false,
                            is_static: quals.iter().any(|q| q == "static"),
                            is_template: true,
                        });
                    }
                }
            }
            "declaration" | "field_declaration" => {
                let mut c2 = m.walk();
                let decls: Vec<Node<'t>> =
                    m.children_by_field_name("declarator", &mut c2).collect();
                let quals = qualifiers(m, text);
                let is_static = quals.iter().any(|q| q == "static");
                let is_const = quals.iter().any(|q| q == "const" || q == "constexpr");
                if decls.iter().any(|d| function_declarator(*d).is_some()) {
                    for d in decls {
                        let (mname, is_dtor) = method_name(d, text);
                        if is_dtor {
                            unmodelled(&mut class, "classes with a destructor are not modelled");
                            continue;
                        }
                        let Some(mname) = mname else { continue };
                        if mname == name {
                            class.has_constructor = true;
                            continue;
                        }
                        class.methods.entry(mname).or_default().push(MethodDef {
                            def: None,
                            is_virtual: has_token(m, "virtual"),
                            is_static,
                            is_template: false,
                        });
                    }
                    continue;
                }
                if is_static {
                    if !is_const {
                        // Storage shared by every object: not a member of one object.
                        unmodelled(
                            &mut class,
                            "classes with static data members are not modelled",
                        );
                    }
                    continue;
                }
                let Some(ty) = m.child_by_field_name("type") else {
                    unmodelled(&mut class, "a data member without a type");
                    continue;
                };
                if matches!(
                    ty.kind(),
                    "struct_specifier" | "class_specifier" | "union_specifier"
                ) && ty.child_by_field_name("body").is_some()
                {
                    // A named nested type (`union _TempStorage { … };`, `struct Node { … };`)
                    // is a type definition, no member; only a nameless one (`union { … };`)
                    // puts its members into the class.
                    if decls.is_empty() && ty.child_by_field_name("name").is_some() {
                        continue;
                    }
                    unmodelled(
                        &mut class,
                        "members of an anonymous nested type are not modelled",
                    );
                    continue;
                }
                // `enum { FILL = 0, DRAIN = 1 };`: a nested enum, whose enumerators are
                // constants (collected with the file's enums), not a member.
                if decls.is_empty() && ty.kind() == "enum_specifier" {
                    continue;
                }
                if decls.is_empty() {
                    unmodelled(&mut class, "anonymous members are not modelled");
                    continue;
                }
                if has_token(m, "bitfield_clause") {
                    unmodelled(&mut class, "bit-field members are not modelled");
                    continue;
                }
                let default = m.child_by_field_name("default_value");
                for d in decls {
                    let kind = match crate::typenames::declarator_shape(d) {
                        crate::typenames::Shape::Scalar => FieldKind::Scalar,
                        crate::typenames::Shape::Pointer => FieldKind::Pointer,
                        crate::typenames::Shape::Array => FieldKind::Array,
                        crate::typenames::Shape::Reference => {
                            unmodelled(&mut class, "reference members are not modelled");
                            continue;
                        }
                    };
                    if function_declarator(d).is_some() {
                        // A pointer to a function.
                        unmodelled(&mut class, "function pointer members are not modelled");
                        continue;
                    }
                    let Some(nm) = declarator_name(d) else {
                        unmodelled(&mut class, "a data member without a name");
                        continue;
                    };
                    class.fields.push(FieldDef {
                        name: nm,
                        ty,
                        kind,
                        default,
                    });
                }
            }
            "struct_specifier" | "class_specifier" | "union_specifier" => {}
            _ => unmodelled(
                &mut class,
                "the class has members the front end does not model",
            ),
        }
    }
    class
}

/// `T Class::method(…) { … }` (or `Class::Class(…)`): the class name, the method name and the
/// definition. Class templates (`Acc<T>::get`) are left out.
pub(super) fn out_of_line_method<'t>(
    n: Node<'t>,
    file: FileId,
    text: &str,
) -> Option<(String, String, FuncDef<'t>)> {
    n.child_by_field_name("body")?;
    let fd = function_declarator(n.child_by_field_name("declarator")?)?;
    let q = fd.child_by_field_name("declarator")?;
    if q.kind() != "qualified_identifier" {
        return None;
    }
    let mut scope = q.child_by_field_name("scope")?;
    let mut name = q.child_by_field_name("name")?;
    // `ns::Acc::get`: the class is the scope next to the method name.
    for _ in 0..16 {
        if name.kind() != "qualified_identifier" {
            break;
        }
        scope = name.child_by_field_name("scope")?;
        name = name.child_by_field_name("name")?;
    }
    if !matches!(scope.kind(), "namespace_identifier" | "type_identifier")
        || name.kind() != "identifier"
    {
        return None;
    }
    let parent = n.parent();
    let (template_params, outer) = match parent {
        Some(p) if p.kind() == "template_declaration" => (p.child_by_field_name("parameters"), p),
        _ => (None, n),
    };
    Some((
        node_text(scope, text).to_string(),
        node_text(name, text).to_string(),
        FuncDef {
            node: n,
            file,
            is_kernel: false,
            template_params,
            outer,
        },
    ))
}
