//! Template type parameters bound to classes of the file.
//!
//! `reduce<Add>(s)` with `template <class Op> __device__ void reduce(float *s) { Op op; … }`,
//! or a kernel template `k<Add>` launched (or explicitly instantiated) with one class only:
//! inside the inlined function (the kernel), the type parameter `Op` names the class `Add`, so
//! `Op op;`, `Op{}(a, b)` and `Op()(a, b)` are objects of `Add` (their `operator()` is inlined,
//! see `lambdas.rs`). A type argument that is not a class of the file leaves the parameter
//! unknown, as before. A launch that passes a temporary function object for a kernel parameter
//! of a type parameter's type (`k<<<g, b>>>(in, Scale<float>{2.0f})`) deduces that parameter
//! (see `deduced_template_args`); so does a named object declared in the launching function
//! (`RowLoad<float> load{x};`, `auto op = Scale<float>{2};`), and a lambda, whose type is the
//! argument text `lambda@L:C` (`launch_lambdas.rs`). A launch inside a host function template
//! is read once per way the file's callers bind its type parameters (`collect::host_bindings`).
//! A member function template is inlined with the call's template arguments
//! (`l.template load<4>(…)`, see `objects.rs`).

use crate::collect::FuncDef;
use crate::lower::*;

/// The name a type template parameter declares (`class Op`, `typename T = Add`).
pub(crate) fn type_param_name<'t>(p: Node<'t>, text: &str) -> Option<String> {
    match p.kind() {
        "type_parameter_declaration" => {
            let mut c = p.walk();
            let n = p
                .named_children(&mut c)
                .find(|x| x.kind() == "type_identifier");
            n.map(|n| node_text(n, text).to_string())
        }
        "optional_type_parameter_declaration" => p
            .child_by_field_name("name")
            .map(|n| node_text(n, text).to_string()),
        _ => None,
    }
}

impl<'a, 't> Lowerer<'a, 't> {
    /// The class a type template parameter of the current function names, if bound.
    pub(crate) fn type_param_class(&self, name: &str) -> Option<String> {
        current(&self.type_params, self.frames.len(), name).cloned()
    }

    /// The classes of the file that template arguments name (in the caller's context).
    pub(crate) fn template_arg_classes(&self, targs: Option<&Vec<Node>>) -> Vec<Option<String>> {
        targs
            .map(|v| v.iter().map(|t| self.class_of(&self.text(*t))).collect())
            .unwrap_or_default()
    }

    /// Binds the type parameters of `params` (a template parameter list, in the current
    /// source) to the classes `args` name, for the function just entered; a missing argument
    /// takes the parameter's default when `defaults` (a call, not a kernel the host may
    /// instantiate otherwise).
    pub(crate) fn bind_type_params(
        &mut self,
        params: Node,
        args: &[Option<String>],
        defaults: bool,
    ) {
        let depth = self.frames.len();
        let mut c = params.walk();
        let list: Vec<Node> = params.named_children(&mut c).collect();
        for (i, p) in list.iter().enumerate() {
            let Some(name) = type_param_name(*p, &self.src.text) else {
                continue;
            };
            let class = match args.get(i).cloned().flatten() {
                Some(c) => Some(c),
                // `typename Op = Add`
                None if defaults && args.get(i).is_none() => p
                    .child_by_field_name("default_type")
                    .and_then(|d| self.class_of(&self.text(d))),
                None => None,
            };
            if let Some(class) = class {
                self.type_params.push((depth, name, class));
            }
        }
    }

    /// Forgets the type parameters of functions that were left.
    pub(crate) fn drop_type_params(&mut self) {
        let depth = self.frames.len();
        self.type_params.retain(|(d, _, _)| *d <= depth);
        self.type_param_names.retain(|(d, _, _)| *d <= depth);
    }

    /// Records the names of the type parameters of `params` (a template parameter list, in the
    /// current source) for the function just entered, bound to a class or not: `T(x)` in its
    /// body is a conversion, not a call. `args` are the template arguments' texts the call or
    /// the instantiation gives (by position; fewer when not all are given):
    /// `std::is_same<T, char>` is then decided (`type_traits.rs`).
    pub(crate) fn note_type_params(&mut self, params: Node, args: &[String]) {
        let depth = self.frames.len();
        let mut c = params.walk();
        let list: Vec<Node> = params.named_children(&mut c).collect();
        for (i, p) in list.into_iter().enumerate() {
            if let Some(name) = type_param_name(p, &self.src.text) {
                let arg = args.get(i).map(|a| a.trim().to_string());
                self.type_param_names.push((depth, name, arg));
            }
        }
    }

    /// The type argument's text a type parameter of the current function is bound to, if the
    /// call or the instantiation gave it.
    pub(crate) fn type_param_text(&self, name: &str) -> Option<String> {
        current(&self.type_param_names, self.frames.len(), name).and_then(Clone::clone)
    }

    /// `T(x)`, `T()` or `T(a, b)` for a type parameter `T`: a conversion or a construction,
    /// not a call. `T(0)` and `T(1)` keep their value (every arithmetic type, `bool` and the
    /// unsigned ones included, holds it);
    /// anything else is an unknown function of the arguments (the conversion depends on the
    /// type, which may be narrower), the same in every thread of a block when they are.
    pub(crate) fn conversion_to_type_param(
        &mut self,
        name: &str,
        args: &[Node],
        span: Span,
    ) -> Val {
        let vals: Vec<Val> = args.iter().map(|a| self.expr(*a)).collect();
        if let [Val::S(Expr::Int(k))] = vals.as_slice() {
            if (0..=1).contains(k) {
                return Val::S(Expr::Int(*k));
            }
        }
        let uniform = vals.iter().all(|v| match v {
            Val::S(e) => crate::lower::library_calls::block_uniform(e, &self.k.unknowns),
            _ => false,
        });
        Val::S(self.unknown(format!("conversion to `{name}`"), span, uniform))
    }

    /// Whether `name` is a type parameter of the current function.
    pub(crate) fn is_type_param(&self, name: &str) -> bool {
        current(&self.type_param_names, self.frames.len(), name).is_some()
    }
}

/// What the innermost binding of the type parameter `name` of the function at `depth` holds
/// (the lists are `(depth, name, what)`, latest last).
fn current<'x, T>(list: &'x [(usize, String, T)], depth: usize, name: &str) -> Option<&'x T> {
    list.iter()
        .rev()
        .find(|(d, p, _)| *d == depth && p == name)
        .map(|(_, _, t)| t)
}

/// The class of a temporary function object the launch passes (`Scale<float>{2.0f}`,
/// `Add()`): the type's text, when it names a class of the file.
fn temporary_class(a: Node, text: &str, classes: &HashSet<&str>) -> Option<String> {
    let ty = match a.kind() {
        "compound_literal_expression" => a.child_by_field_name("type")?,
        "call_expression" => a.child_by_field_name("function")?,
        _ => return None,
    };
    let name = match ty.kind() {
        "template_function" | "template_type" => ty.child_by_field_name("name")?,
        "identifier" | "type_identifier" => ty,
        _ => return None,
    };
    classes.contains(node_text(name, text)).then(|| {
        node_text(ty, text)
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    })
}

/// The template argument text standing for the type of a lambda a launch passes: where it
/// is (`lambda@3:20`, line and column), unique in its file (see `Tables::launch_lambdas`,
/// which leaves a text two files share unbound).
pub(crate) fn lambda_marker(n: Node) -> String {
    let p = n.start_position();
    format!("lambda@{}:{}", p.row + 1, p.column + 1)
}

/// The lambda a launch argument is: a lambda expression, or a local of the launching function
/// declared once, before the launch, as `auto f = [=] __device__ (…) { … };`.
pub(crate) fn launched_lambda<'t>(a: Node<'t>, text: &str) -> Option<Node<'t>> {
    let a = crate::lower::cxx::lambdas::strip_parens(a);
    if a.kind() == "lambda_expression" {
        return Some(a);
    }
    let found = declarations_of(a, text)?;
    let [(_, d)] = found.as_slice() else {
        return None;
    };
    let is_auto = d
        .parent()
        .and_then(|decl| decl.child_by_field_name("type"))
        .is_some_and(|t| t.kind() == "placeholder_type_specifier");
    let value = (d.kind() == "init_declarator" && is_auto)
        .then(|| d.child_by_field_name("value"))
        .flatten()?;
    let value = crate::lower::cxx::lambdas::strip_parens(value);
    (value.kind() == "lambda_expression").then_some(value)
}

/// The class of a named object the launch passes (`k<<<g, b>>>(load, out)` with `DirectLoad<float>
/// load(x);`, `auto op = Scale<float>{2.0f};` or a parameter `const Scale &s` of the host
/// function): the declared type's text (the initializer's, for `auto`), when it names a class of
/// the file. The name's one declaration in the launching function
/// before the launch decides; a pointer, an array, or two declarations of the name (shadowing)
/// deduce nothing.
fn declared_class(
    a: Node,
    text: &str,
    classes: &HashSet<&str>,
    host: &HashMap<String, String>,
) -> Option<String> {
    let name = node_text(a, text);
    let found = declarations_of(a, text)?;
    let [(decl, _)] = found.as_slice() else {
        return None;
    };
    let ty = decl.child_by_field_name("type")?;
    // `auto op = Scale<float>{2.0f};`: the class of the temporary it is initialized with.
    if ty.kind() == "placeholder_type_specifier" {
        let mut c = decl.walk();
        let value = decl
            .children_by_field_name("declarator", &mut c)
            .find(|d| d.kind() == "init_declarator" && declared_name(*d, text) == Some(name))
            .and_then(|d| d.child_by_field_name("value"))?;
        return temporary_class(value, text, classes);
    }
    // A parameter of the launching host template's type parameter (`LOAD load`): what its
    // caller binds it to.
    if let Some(bound) = host.get(node_text(ty, text).trim()) {
        return Some(bound.clone());
    }
    let base = match ty.kind() {
        "template_type" => ty.child_by_field_name("name")?,
        "type_identifier" => ty,
        _ => return None,
    };
    classes.contains(node_text(base, text)).then(|| {
        node_text(ty, text)
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    })
}

/// The declarations (with the declarator) of the identifier `a` names in the function around
/// it that are visible at `a` (see [`visible_declarations`]) and declare an object or a
/// reference to one. `None` when `a` is no identifier or not in a function.
fn declarations_of<'t>(a: Node<'t>, text: &str) -> Option<Vec<(Node<'t>, Node<'t>)>> {
    if a.kind() != "identifier" {
        return None;
    }
    let name = node_text(a, text);
    Some(
        visible_declarations(a, text)?
            .into_iter()
            .filter(|(n, _, d)| n == name && declared_name(*d, text) == Some(name))
            .map(|(_, decl, d)| (decl, d))
            .collect(),
    )
}

/// The parameters and locals of the function around `at` declared before it in a scope that
/// holds it (not in a sibling block, not inside a lambda): name, declaration, declarator as
/// written (`init_declarator` included). `None` when `at` is not in a function.
pub(crate) fn visible_declarations<'t>(
    at: Node<'t>,
    text: &str,
) -> Option<Vec<(String, Node<'t>, Node<'t>)>> {
    let mut f = at.parent()?;
    while f.kind() != "function_definition" {
        f = f.parent()?;
    }
    let holds_at =
        |scope: Node| scope.start_byte() <= at.start_byte() && at.end_byte() <= scope.end_byte();
    let mut out = Vec::new();
    let mut stack = vec![f];
    while let Some(x) = stack.pop() {
        if x.start_byte() >= at.start_byte() || (x.kind() == "lambda_expression" && !holds_at(x)) {
            continue;
        }
        let visible = match x.kind() {
            "parameter_declaration" => true,
            "declaration" => x.parent().is_some_and(holds_at),
            _ => false,
        };
        if visible {
            let mut c = x.walk();
            for d in x.children_by_field_name("declarator", &mut c) {
                if let Some(nm) = crate::collect::declarator_name(d) {
                    out.push((node_text(nm, text).to_string(), x, d));
                }
            }
        }
        let mut c = x.walk();
        stack.extend(x.named_children(&mut c));
    }
    Some(out)
}

/// The name a declarator declares as an object or a reference to one (`x`, `x = …`, `&x`,
/// `x{…}`, `x(…)`); `None` for a pointer, an array or a function.
fn declared_name<'x>(d: Node, text: &'x str) -> Option<&'x str> {
    match d.kind() {
        "identifier" => Some(node_text(d, text)),
        "init_declarator" | "reference_declarator" => {
            let inner = d
                .child_by_field_name("declarator")
                .or_else(|| d.named_child(0))?;
            declared_name(inner, text)
        }
        _ => None,
    }
}

/// The template arguments of a launch of the kernel template `def` that names no (or only
/// some) template arguments, `k<<<g, b>>>(in, out, Scale<float>{2.0f})`: a type parameter
/// that is the type of a by-value kernel parameter is deduced from the argument when that is
/// a temporary of a class of the file (`Op` is `Scale<float>`); the other type parameters stay
/// themselves (unknown). With whether anything was deduced; `None` when a non-type parameter or
/// a pack is not given explicitly.
pub(crate) fn deduced_template_args(
    def: &FuncDef,
    explicit: &[String],
    args: &[Node],
    ktext: &str,
    text: &str,
    classes: &HashSet<&str>,
    host: &HashMap<String, String>,
) -> Option<(Vec<String>, bool)> {
    let tp = def.template_params?;
    let mut c = tp.walk();
    let list: Vec<Node> = tp.named_children(&mut c).collect();
    let mut out: Vec<Option<String>> = Vec::new();
    let mut names: Vec<Option<String>> = Vec::new();
    for (i, p) in list.iter().enumerate() {
        let explicit_arg = explicit.get(i).cloned();
        let name = type_param_name(*p, ktext);
        if name.is_none() && explicit_arg.is_none() {
            // A non-type parameter or a pack, not given.
            return None;
        }
        names.push(name);
        out.push(explicit_arg);
    }
    let params = crate::lower::cxx::lambdas::params_of(def.node)?;
    let mut c = params.walk();
    let params: Vec<Node> = params
        .named_children(&mut c)
        .filter(|p| p.kind().contains("parameter_declaration"))
        .collect();
    let mut deduced = false;
    for (p, a) in params.iter().zip(args) {
        let (Some(ty), Some(d)) = (
            p.child_by_field_name("type"),
            p.child_by_field_name("declarator"),
        ) else {
            continue;
        };
        if d.kind() != "identifier" {
            continue;
        }
        let ty = node_text(ty, ktext);
        let Some(i) = names.iter().position(|n| n.as_deref() == Some(ty)) else {
            continue;
        };
        if out[i].is_some() {
            continue;
        }
        if let Some(lambda) = launched_lambda(*a, text) {
            out[i] = Some(lambda_marker(lambda));
            deduced = true;
        } else if let Some(class) =
            temporary_class(*a, text, classes).or_else(|| declared_class(*a, text, classes, host))
        {
            out[i] = Some(class);
            deduced = true;
        }
    }
    let args = out
        .into_iter()
        .zip(names)
        .map(|(a, n)| a.or(n).unwrap_or_default())
        .collect();
    Some((args, deduced))
}
