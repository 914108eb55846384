//! File-level tables: function definitions (kernels and device functions), prototypes,
//! `__device__`/`__shared__`/`__constant__` globals, file-scope constants, enum constants and
//! template instantiations, over the main file and every included file.

mod classes;
mod members;
use crate::consteval::{eval, list_items, node_text, ConstEnv};
use crate::preprocess::{MacroTable, Preprocessed};
use classes::{class_def, inherit, out_of_line_method, record_class};
pub(crate) use classes::{ClassDef, FieldKind, MethodDef};
use cudarace_ir::{FileId, Span};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use tree_sitter::{Node, Tree};

#[derive(Clone, Copy)]
pub(crate) struct FuncDef<'t> {
    pub node: Node<'t>,
    pub file: FileId,
    pub is_kernel: bool,
    /// `template <…>` parameter list, if the definition is a template.
    pub template_params: Option<Node<'t>>,
    /// Where the definition (with its `template` prefix) starts.
    pub outer: Node<'t>,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum GlobalSpace {
    Shared,
    Device,
    /// `__constant__`: read-only in kernels, so never racy; reads are unknown values.
    Constant,
}

#[derive(Clone, Copy)]
pub(crate) struct GlobalVar<'t> {
    pub decl: Node<'t>,
    pub declarator: Node<'t>,
    pub file: FileId,
    pub space: GlobalSpace,
}

/// What `Tables::type_aliases` holds for a name with two different definitions: no type.
pub(crate) const CONFLICTING_ALIAS: &str = "<conflicting definitions>";

pub(crate) struct Tables<'t> {
    pub texts: Vec<Arc<str>>,
    pub macros: MacroTable,
    pub library: Arc<cudarace_library::Library>,
    pub funcs: HashMap<String, Vec<FuncDef<'t>>>,
    pub kernels: Vec<FuncDef<'t>>,
    pub protos: HashSet<String>,
    pub globals: HashMap<String, GlobalVar<'t>>,
    pub consts: HashMap<String, i64>,
    pub enums: HashMap<String, i64>,
    /// Enum types defined in the file (`enum Mode { … }`, `enum class`, `typedef enum { … } M;`):
    /// name → the enumerators' values (`None` when one is not a constant the front end can
    /// evaluate, or when two definitions share the name).
    pub enum_types: HashMap<String, Option<Vec<i64>>>,
    /// Kernel name → template argument texts of explicit instantiations and templated launches.
    pub instantiations: HashMap<String, Vec<Vec<String>>>,
    /// Lambdas launch sites pass for a kernel template's type parameter (`k<<<g, b>>>(n,
    /// [=] __device__ (int i) { … })`): the instantiation's argument text (`lambda@3:20`) →
    /// where the lambda expression is (file, start and end byte); `None` when lambdas of two
    /// files share the text (same line and column), so that neither is taken for the other.
    pub launch_lambdas: HashMap<String, Option<(FileId, usize, usize)>>,
    /// Structs whose conversion operator hands out `extern __shared__` memory (the CUDA
    /// samples' `SharedMemory<T>`): name → the `extern __shared__` declaration.
    pub shared_structs: HashMap<String, GlobalVar<'t>>,
    /// Structs defined in the file whose members are all plain scalars: name → member names in
    /// declaration order (`None` when two definitions share the name). Arrays of them get one
    /// IR cell per member (see `Lowerer::struct_members`).
    pub struct_layouts: HashMap<String, Option<Vec<String>>>,
    /// Structs and classes defined in the file (`None` when two definitions share the name):
    /// their data members and methods, so that objects get one binding per member and method
    /// calls on them can be inlined.
    pub classes: HashMap<String, Option<ClassDef<'t>>>,
    /// The syntax tree of each file (lambdas are found again by their byte range).
    pub roots: Vec<Node<'t>>,
    /// File-level `typedef T Name;` and `using Name = T;`: name → the aliased type's text (the
    /// front end looks through them for library collective classes, `lower/cxx/collectives.rs`).
    pub type_aliases: HashMap<String, String>,
    /// Member names used as pointers and member names changed, file-wide (`members.rs`).
    pub member_uses: members::MemberUses,
    /// The units that are library fallback class sources: file → the library's name.
    pub fallback_files: HashMap<u32, Arc<str>>,
    /// Why a fallback class source was not used (it does not parse).
    pub library_errors: Vec<String>,
}

impl ConstEnv for Tables<'_> {
    fn macros(&self) -> &MacroTable {
        &self.macros
    }
    fn ident(&self, name: &str, _depth: u32) -> Option<i64> {
        self.enums
            .get(name)
            .or_else(|| self.consts.get(name))
            .copied()
    }
}

impl<'t> Tables<'t> {
    pub fn text(&self, f: FileId) -> &str {
        self.texts.get(f.0 as usize).map(|t| &**t).unwrap_or("")
    }
}

/// The qualifier tokens (`__global__`, `__shared__`, `extern`, `const`, …) written directly on a
/// declaration or definition.
pub(crate) fn qualifiers(n: Node, text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut c = n.walk();
    for ch in n.children(&mut c) {
        match ch.kind() {
            "type_qualifier" | "storage_class_specifier" | "virtual_specifier" => {
                out.push(node_text(ch, text).trim().to_string());
            }
            k if k.starts_with("__")
                || k == "static"
                || k == "extern"
                || k == "const"
                || k == "inline"
                || k == "constexpr" =>
            {
                out.push(k.to_string())
            }
            _ => {}
        }
    }
    out
}

/// The non-type parameters of a template parameter list (`template <typename T, int N = 4>`):
/// each with its position in the list and its declaration (`int N = 4`) and name (`N`).
pub(crate) fn value_template_params<'t>(params: Node<'t>) -> Vec<(usize, Node<'t>, Node<'t>)> {
    let mut c = params.walk();
    let list: Vec<Node<'t>> = params.named_children(&mut c).collect();
    list.into_iter()
        .enumerate()
        .filter(|(_, p)| {
            matches!(
                p.kind(),
                "parameter_declaration" | "optional_parameter_declaration"
            )
        })
        .filter_map(|(i, p)| {
            let nm = p
                .child_by_field_name("declarator")
                .and_then(declarator_name)?;
            Some((i, p, nm))
        })
        .collect()
}

/// The declared name of a (possibly nested) declarator, and the innermost identifier node.
pub(crate) fn declarator_name<'t>(mut d: Node<'t>) -> Option<Node<'t>> {
    for _ in 0..64 {
        match d.kind() {
            "identifier" | "field_identifier" | "type_identifier" => return Some(d),
            "qualified_identifier" => d = d.child_by_field_name("name")?,
            "template_function" => d = d.child_by_field_name("name")?,
            "destructor_name" | "operator_name" => return None,
            _ => {
                d = match d.child_by_field_name("declarator") {
                    Some(x) => x,
                    None => {
                        // reference_declarator, parenthesized_declarator, attributed_declarator:
                        // the declarator is the last named child.
                        let cnt = d.named_child_count();
                        if cnt == 0 {
                            return None;
                        }
                        d.named_child((cnt - 1) as u32)?
                    }
                }
            }
        }
    }
    None
}

pub(crate) fn function_declarator(mut d: Node) -> Option<Node> {
    for _ in 0..64 {
        if d.kind() == "function_declarator" {
            return Some(d);
        }
        d = match d.child_by_field_name("declarator") {
            Some(x) => x,
            None => {
                let cnt = d.named_child_count();
                if cnt == 0 {
                    return None;
                }
                d.named_child((cnt - 1) as u32)?
            }
        };
    }
    None
}

/// A second definition under the same name (another namespace, a template specialization)
/// makes the name ambiguous: its arrays keep one cell per element.
fn record_layout(t: &mut Tables, name: &str, layout: Option<Vec<String>>) {
    if name.is_empty() {
        return;
    }
    match t.struct_layouts.get_mut(name) {
        Some(old) => *old = None,
        None => {
            t.struct_layouts.insert(name.to_string(), layout);
        }
    }
}

/// Member names of a struct whose data members are all non-static plain scalars (no arrays,
/// pointers, bit-fields, base classes or nested types); `None` otherwise.
fn scalar_struct_layout(spec: Node, text: &str) -> Option<Vec<String>> {
    let body = spec.child_by_field_name("body")?;
    let mut c = spec.walk();
    if spec
        .children(&mut c)
        .any(|ch| ch.kind() == "base_class_clause")
        || spec.has_error()
        || spec
            .parent()
            .is_some_and(|p| p.kind() == "template_declaration")
    {
        return None;
    }
    let mut fields = Vec::new();
    let mut c = body.walk();
    for m in body.named_children(&mut c) {
        match m.kind() {
            "comment"
            | "access_specifier"
            | "function_definition"
            | "declaration"
            | "template_declaration"
            | ";" => {}
            "field_declaration" => {
                let mut c2 = m.walk();
                let mut is_static = false;
                for ch in m.children(&mut c2) {
                    match ch.kind() {
                        "storage_class_specifier" => is_static = true,
                        "bitfield_clause" | "default_value" => return None,
                        _ => {}
                    }
                }
                let mut c3 = m.walk();
                let decls: Vec<Node> = m.children_by_field_name("declarator", &mut c3).collect();
                if decls.iter().any(|d| d.kind() == "function_declarator") {
                    // A method declaration.
                    continue;
                }
                if is_static {
                    continue;
                }
                let ty = m.child_by_field_name("type")?;
                if crate::typenames::scalar_type(node_text(ty, text))
                    == cudarace_ir::ScalarType::Other
                {
                    return None;
                }
                if decls.is_empty() {
                    return None;
                }
                for d in decls {
                    if d.kind() != "field_identifier" {
                        return None;
                    }
                    fields.push(node_text(d, text).to_string());
                }
            }
            _ => return None,
        }
    }
    if fields.is_empty() {
        None
    } else {
        Some(fields)
    }
}

pub(crate) fn collect<'t>(pre: &Preprocessed, trees: &'t [Tree]) -> Tables<'t> {
    let mut t = Tables {
        texts: pre.units.iter().map(|u| u.clean.clone()).collect(),
        macros: pre.macros.clone(),
        library: pre.library.clone(),
        funcs: HashMap::new(),
        kernels: Vec::new(),
        protos: HashSet::new(),
        globals: HashMap::new(),
        consts: HashMap::new(),
        enums: HashMap::new(),
        enum_types: HashMap::new(),
        instantiations: HashMap::new(),
        launch_lambdas: HashMap::new(),
        shared_structs: HashMap::new(),
        struct_layouts: HashMap::new(),
        classes: HashMap::new(),
        roots: trees.iter().map(|t| t.root_node()).collect(),
        type_aliases: HashMap::new(),
        member_uses: members::MemberUses::default(),
        fallback_files: pre
            .fallbacks
            .iter()
            .map(|f| (f.file.0, f.library.clone()))
            .collect(),
        library_errors: Vec::new(),
    };
    // Out-of-line method definitions (`float Acc::get(int i) const { … }`): class name, method
    // name, definition; attached to their classes after the walk.
    let mut out_of_line: Vec<(String, String, FuncDef<'t>)> = Vec::new();
    let mut const_decls: Vec<(Node<'t>, FileId)> = Vec::new();
    let mut enum_specs: Vec<(Node<'t>, FileId)> = Vec::new();
    let mut launches: Vec<(Node<'t>, FileId)> = Vec::new();
    // Other calls (of host function templates that launch kernels, see `host_bindings`).
    let mut calls: Vec<(Node<'t>, FileId)> = Vec::new();
    for (i, tree) in trees.iter().enumerate() {
        let file = FileId(i as u32);
        let text = t.texts[i].clone();
        let marks: &[usize] = pre
            .units
            .get(i)
            .map(|u| u.kernel_marks.as_slice())
            .unwrap_or(&[]);
        // Whole-tree walk: enums and templated launches can be anywhere.
        let mut stack = vec![(tree.root_node(), true)];
        while let Some((n, top)) = stack.pop() {
            let mut descend_top = false;
            match n.kind() {
                "enum_specifier" => enum_specs.push((n, file)),
                "call_expression" if has_child_kind(n, "kernel_call_syntax") => {
                    launches.push((n, file))
                }
                "call_expression" => calls.push((n, file)),
                "type_definition" => {
                    // `typedef struct { float x, y; } P;`
                    if let (Some(ty), Some(d)) = (
                        n.child_by_field_name("type"),
                        n.child_by_field_name("declarator"),
                    ) {
                        if ty.kind() == "struct_specifier" && d.kind() == "type_identifier" {
                            let layout = scalar_struct_layout(ty, &text);
                            record_layout(&mut t, node_text(d, &text), layout);
                            if ty.child_by_field_name("name").is_none() {
                                let class = class_def(ty, node_text(d, &text), file, &text);
                                record_class(&mut t, node_text(d, &text), class);
                            }
                        }
                    }
                }
                "struct_specifier" | "class_specifier" => {
                    if let (Some(name), Some(_)) =
                        (n.child_by_field_name("name"), n.child_by_field_name("body"))
                    {
                        let layout = scalar_struct_layout(n, &text);
                        record_layout(&mut t, node_text(name, &text), layout);
                        let class = class_def(n, node_text(name, &text), file, &text);
                        record_class(&mut t, node_text(name, &text), class);
                    }
                    if let (Some(name), Some(body)) =
                        (n.child_by_field_name("name"), n.child_by_field_name("body"))
                    {
                        if let Some((decl, d)) = find_extern_shared(body, &text) {
                            t.shared_structs.insert(
                                node_text(name, &text).to_string(),
                                GlobalVar {
                                    decl,
                                    declarator: d,
                                    file,
                                    space: GlobalSpace::Shared,
                                },
                            );
                        }
                    }
                }
                _ => {}
            }
            if top {
                match n.kind() {
                    "translation_unit"
                    | "declaration_list"
                    | "linkage_specification"
                    | "namespace_definition"
                    | "ERROR"
                    | "preproc_if"
                    | "preproc_ifdef"
                    | "preproc_else"
                    | "preproc_elif"
                    | "export_declaration" => descend_top = true,
                    "template_declaration" => descend_top = true,
                    "function_definition" => {
                        add_function(&mut t, n, file, &text, marks);
                        if let Some((class, method, def)) = out_of_line_method(n, file, &text) {
                            out_of_line.push((class, method, def));
                        }
                    }
                    "declaration" | "field_declaration" => {
                        add_declaration(&mut t, n, file, &text, &mut const_decls);
                    }
                    "type_definition" | "alias_declaration" => {
                        // Two different definitions of one name (in two namespaces) name no
                        // type the front end can trust: the name is kept as unresolvable.
                        for (name, aliased) in
                            crate::lower::cxx::collectives::type_aliases_of(n, &text)
                        {
                            match t.type_aliases.get(&name) {
                                Some(old) if *old != aliased => {
                                    t.type_aliases.insert(name, CONFLICTING_ALIAS.to_string());
                                }
                                _ => {
                                    t.type_aliases.insert(name, aliased);
                                }
                            }
                        }
                    }
                    "template_instantiation" => {
                        if let Some((name, args)) = n
                            .child_by_field_name("declarator")
                            .and_then(function_declarator)
                            .and_then(|f| f.child_by_field_name("declarator"))
                            .and_then(|d| template_args(d, &text))
                        {
                            t.instantiations.entry(name).or_default().push(args);
                        }
                    }
                    _ => {}
                }
            }
            let mut c = n.walk();
            let children: Vec<Node> = n.children(&mut c).collect();
            for ch in children.into_iter().rev() {
                stack.push((ch, descend_top));
            }
        }
    }
    for (class, method, def) in out_of_line {
        if let Some(Some(c)) = t.classes.get_mut(&class) {
            if method == class {
                c.has_constructor = true;
                if def.template_params.is_some() {
                    c.template_constructor = true;
                } else {
                    c.constructors.push(def);
                }
                continue;
            }
            // Flags (virtual, static) are written on the declaration in the class.
            let decl = c
                .methods
                .get(&method)
                .and_then(|v| v.iter().find(|m| m.def.is_none()).copied());
            c.methods.entry(method).or_default().push(MethodDef {
                def: Some(def),
                is_virtual: decl.is_some_and(|d| d.is_virtual),
                is_static: decl.is_some_and(|d| d.is_static),
                is_template: def.template_params.is_some(),
            });
        }
    }
    inherit(&mut t.classes, &t.texts);
    // Enum constants (in file order; a value may refer to earlier ones and to macros).
    for (e, file) in enum_specs {
        let text = t.texts[file.0 as usize].clone();
        let Some(list) = e.child_by_field_name("body") else {
            continue;
        };
        let mut next = 0i64;
        let mut c = list.walk();
        let items: Vec<Node> = list
            .named_children(&mut c)
            .filter(|x| x.kind() == "enumerator")
            .collect();
        let mut values = Some(Vec::new());
        for en in items {
            let Some(name) = en.child_by_field_name("name") else {
                values = None;
                continue;
            };
            let v = match en.child_by_field_name("value") {
                Some(v) => eval(v, &text, &t, 0),
                None => Some(next),
            };
            if let Some(v) = v {
                t.enums.insert(node_text(name, &text).to_string(), v);
                if let Some(vs) = values.as_mut() {
                    vs.push(v);
                }
                next = v.wrapping_add(1);
            } else {
                values = None;
                break;
            }
        }
        // The type's name: `enum Mode { … }`, or `typedef enum { … } Mode;`.
        let type_name = e.child_by_field_name("name").or_else(|| {
            e.parent()
                .filter(|p| p.kind() == "type_definition")
                .and_then(|p| p.child_by_field_name("declarator"))
                .filter(|d| d.kind() == "type_identifier")
        });
        if let Some(tn) = type_name {
            let tn = node_text(tn, &text).to_string();
            let values = values.filter(|v| !v.is_empty());
            t.enum_types
                .entry(tn)
                .and_modify(|v| *v = None)
                .or_insert(values);
        }
    }
    for (d, file) in const_decls {
        let text = t.texts[file.0 as usize].clone();
        let mut c = d.walk();
        let decls: Vec<Node> = d.children_by_field_name("declarator", &mut c).collect();
        for decl in decls {
            if decl.kind() != "init_declarator" {
                continue;
            }
            let (Some(name), Some(value)) = (
                decl.child_by_field_name("declarator"),
                decl.child_by_field_name("value"),
            ) else {
                continue;
            };
            if name.kind() != "identifier" {
                continue;
            }
            if let Some(v) = eval(value, &text, &t, 0) {
                t.consts.insert(node_text(name, &text).to_string(), v);
            }
        }
    }
    let class_names: HashSet<String> = t.classes.keys().cloned().collect();
    let class_names: HashSet<&str> = class_names.iter().map(|s| s.as_str()).collect();
    // Kernel name → per launch: its template arguments (explicit, deduced, or the parameters
    // themselves), whether one was deduced, and the explicit ones.
    type Deduction = (Vec<String>, bool, Option<Vec<String>>);
    let mut deductions: HashMap<String, Vec<Deduction>> = HashMap::new();
    // The names macro bodies use, made the first time `host_bindings` needs them.
    let mut macro_words: Option<HashSet<String>> = None;
    // The other calls by the name they call (`f(…)`, `f<A>(…)`), for `host_bindings`.
    let mut calls_by_name: HashMap<String, Vec<(Node<'t>, FileId)>> = HashMap::new();
    for (c, cfile) in calls {
        let text = &t.texts[cfile.0 as usize];
        let name = c
            .child_by_field_name("function")
            .and_then(|f| match f.kind() {
                "identifier" => Some(f),
                "template_function" => f.child_by_field_name("name"),
                _ => None,
            });
        if let Some(n) = name {
            calls_by_name
                .entry(node_text(n, text).to_string())
                .or_default()
                .push((c, cfile));
        }
    }
    for (call, file) in launches {
        let text = t.texts[file.0 as usize].clone();
        let Some(f) = call.child_by_field_name("function") else {
            continue;
        };
        // A launch inside a host function template: once per way its callers bind its type
        // parameters (`launch<RowLoad<float>>(…)`, or deduced from their arguments), else once.
        let (hosts, lambdas) = host_bindings(
            call,
            file,
            &t,
            &calls_by_name,
            &class_names,
            &mut macro_words,
        );
        for (marker, at) in lambdas {
            note_launch_lambda(&mut t.launch_lambdas, marker, at);
        }
        for host in hosts {
            let explicit = template_args(f, &text).map(|(n, a)| {
                let a = a
                    .into_iter()
                    .map(|x| host.get(x.trim()).cloned().unwrap_or(x))
                    .collect::<Vec<_>>();
                (n, a)
            });
            // Type parameters deduced from the launch's arguments (`k<<<g, b>>>(x, Add<T>())`).
            let (name, given) = match &explicit {
                Some((n, a)) => (n.clone(), a.clone()),
                None if f.kind() == "identifier" => (node_text(f, &text).to_string(), Vec::new()),
                None => continue,
            };
            let args: Vec<Node> = call
                .child_by_field_name("arguments")
                .map(list_items)
                .unwrap_or_default();
            // Instantiations are kept by the kernel's name: an overloaded name gets none deduced
            // (they would be tried on every overload).
            let kernels: Vec<FuncDef<'t>> = t
                .funcs
                .get(&name)
                .into_iter()
                .flatten()
                .filter(|d| d.is_kernel)
                .copied()
                .collect();
            let kernels: Vec<FuncDef<'t>> = match kernels.as_slice() {
                [k] if k.template_params.is_some()
                    && crate::lower::calls::param_count(k) == args.len() =>
                {
                    vec![*k]
                }
                _ => Vec::new(),
            };
            let entry = deductions.entry(name.clone()).or_default();
            let deduced = match kernels.as_slice() {
                [k] => crate::lower::cxx::type_params::deduced_template_args(
                    k,
                    &given,
                    &args,
                    &t.texts[k.file.0 as usize].clone(),
                    &text,
                    &class_names,
                    &host,
                ),
                _ => None,
            };
            if deduced.as_ref().is_some_and(|(_, d)| *d) {
                for a in &args {
                    if let Some(l) = crate::lower::cxx::type_params::launched_lambda(*a, &text) {
                        note_launch_lambda(
                            &mut t.launch_lambdas,
                            crate::lower::cxx::type_params::lambda_marker(l),
                            (file, l.start_byte(), l.end_byte()),
                        );
                    }
                }
            }
            match deduced {
                Some((a, d)) => entry.push((a, d, explicit.map(|(_, a)| a))),
                // Not even the launch's own arguments: nothing deduced for this kernel is trusted.
                None => entry.push((Vec::new(), false, explicit.map(|(_, a)| a))),
            }
        }
    }
    for (name, launches) in deductions {
        // A kernel any launch of which deduced a type parameter: every launch's arguments,
        // the others' parameters left unknown, so that each is checked. Else as before: the
        // explicit template arguments only.
        let trusted =
            launches.iter().any(|(_, d, _)| *d) && launches.iter().all(|(a, _, _)| !a.is_empty());
        for (args, _, explicit) in launches {
            let args = if trusted { Some(args) } else { explicit };
            if let Some(args) = args {
                t.instantiations.entry(name.clone()).or_default().push(args);
            }
        }
        // A launch in a macro's expansion is not in the tree: its types are not known, so the
        // kernel is checked as written too.
        if trusted && macro_names(&t, &mut macro_words).contains(&name) {
            if let Some(args) = template_params_as_written(&t, &name) {
                t.instantiations.entry(name.clone()).or_default().push(args);
            }
        }
    }
    t.member_uses = members::member_uses(&t.roots, &t.texts);
    t
}

/// The names macro bodies use, made on first need.
fn macro_names<'m>(t: &Tables, words: &'m mut Option<HashSet<String>>) -> &'m HashSet<String> {
    words.get_or_insert_with(|| {
        t.macros
            .values()
            .flat_map(|m| {
                crate::text::tokens(&m.body)
                    .into_iter()
                    .filter(|(is_id, _)| *is_id)
                    .map(|(_, w)| w.to_string())
                    .collect::<Vec<_>>()
            })
            .collect()
    })
}

/// The template arguments of a kernel template left as its own parameters (`k<T, N>`: types
/// unknown, values symbolic), when `name` is one kernel template.
fn template_params_as_written(t: &Tables, name: &str) -> Option<Vec<String>> {
    let [k] = t.funcs.get(name)?.as_slice() else {
        return None;
    };
    let tp = k.template_params.filter(|_| k.is_kernel)?;
    let text = &t.texts[k.file.0 as usize];
    let mut c = tp.walk();
    let args = tp
        .named_children(&mut c)
        .map(|p| {
            crate::lower::cxx::type_params::type_param_name(p, text)
                .or_else(|| {
                    p.child_by_field_name("declarator")
                        .and_then(declarator_name)
                        .map(|n| node_text(n, text).to_string())
                })
                .unwrap_or_default()
        })
        .collect();
    Some(args)
}

/// Records where the lambda `marker` names is; a second place for it makes it ambiguous.
fn note_launch_lambda(
    map: &mut HashMap<String, Option<(FileId, usize, usize)>>,
    marker: String,
    at: (FileId, usize, usize),
) {
    let e = map.entry(marker).or_insert(Some(at));
    if *e != Some(at) {
        *e = None;
    }
}

/// At most this many callers of a host function template are followed for its launches.
const MAX_HOST_BINDINGS: usize = 8;

/// The ways the callers of the host function template around the launch `call` bind its type
/// parameters to classes of the file or to lambdas (`launch<RowLoad<float>>(…)`, or
/// `launch(load, …)` with `RowLoad<float> load` declared there): one map per calling site that
/// binds one (parameter → argument text). `macro_words`: the names macro bodies use, made on
/// first need. A single empty map when the launch is not in a
/// function template, or no caller binds anything: the launch as written, which is among the
/// ways too when a caller's binding is not read (or a macro names the function: a call in its
/// expansion is not in the tree). With the lambdas the callers pass (see
/// `Tables::launch_lambdas`).
type HostBindings = (
    Vec<HashMap<String, String>>,
    Vec<(String, (FileId, usize, usize))>,
);
fn host_bindings<'t>(
    call: Node<'t>,
    file: FileId,
    t: &Tables<'t>,
    calls: &HashMap<String, Vec<(Node<'t>, FileId)>>,
    classes: &HashSet<&str>,
    macro_words: &mut Option<HashSet<String>>,
) -> HostBindings {
    let none = (vec![HashMap::new()], Vec::new());
    let mut f = match call.parent() {
        Some(p) => p,
        None => return none,
    };
    while f.kind() != "function_definition" {
        f = match f.parent() {
            Some(p) => p,
            None => return none,
        };
    }
    let Some(tmpl) = f.parent().filter(|p| p.kind() == "template_declaration") else {
        return none;
    };
    let Some(params) = tmpl.child_by_field_name("parameters") else {
        return none;
    };
    let text = t.texts[file.0 as usize].clone();
    let Some(name) = f
        .child_by_field_name("declarator")
        .and_then(function_declarator)
        .and_then(|d| d.child_by_field_name("declarator"))
        .map(|n| node_text(n, &text).to_string())
    else {
        return none;
    };
    let host = FuncDef {
        node: f,
        file,
        is_kernel: false,
        template_params: Some(params),
        outer: tmpl,
    };
    let mut pc = params.walk();
    let names: Vec<Option<String>> = params
        .named_children(&mut pc)
        .map(|p| crate::lower::cxx::type_params::type_param_name(p, &text))
        .collect();
    let mut out: Vec<HashMap<String, String>> = Vec::new();
    let mut lambdas = Vec::new();
    // A caller whose binding is not read keeps the launch as written (its type parameters
    // unknown) among the ways.
    let as_written = HashMap::new();
    if macro_names(t, macro_words).contains(&name) {
        out.push(as_written.clone());
    }
    for (c, cfile) in calls.get(&name).into_iter().flatten() {
        let ctext = t.texts[cfile.0 as usize].clone();
        let Some(cf) = c.child_by_field_name("function") else {
            continue;
        };
        let given = template_args(cf, &ctext)
            .map(|(_, a)| a)
            .unwrap_or_default();
        let args: Vec<Node> = c
            .child_by_field_name("arguments")
            .map(list_items)
            .unwrap_or_default();
        if crate::lower::calls::param_count(&host) != args.len() {
            if !out.contains(&as_written) {
                out.push(as_written.clone());
            }
            continue;
        }
        let Some((bound, _)) = crate::lower::cxx::type_params::deduced_template_args(
            &host,
            &given,
            &args,
            &text,
            &ctext,
            classes,
            &HashMap::new(),
        ) else {
            if !out.contains(&as_written) {
                out.push(as_written.clone());
            }
            continue;
        };
        let map: HashMap<String, String> = names
            .iter()
            .zip(bound)
            .filter_map(|(n, b)| {
                let n = n.as_ref()?;
                // A class with methods (a function object, an accessor) or a lambda: what the
                // kernel calls. A plain data class would only split the kernel into instances.
                let base = b.split('<').next().unwrap_or(&b).trim();
                let base = base.rsplit("::").next().unwrap_or(base);
                let callable = t
                    .classes
                    .get(base)
                    .and_then(|c| c.as_ref())
                    .is_some_and(|c| !c.methods.is_empty());
                let useful = (classes.contains(base) && callable) || b.starts_with("lambda@");
                (useful && *n != b).then(|| (n.clone(), b))
            })
            .collect();
        if !out.contains(&map) {
            let binds = !map.is_empty();
            out.push(map);
            if !binds {
                continue;
            }
            for a in &args {
                if let Some(l) = crate::lower::cxx::type_params::launched_lambda(*a, &ctext) {
                    lambdas.push((
                        crate::lower::cxx::type_params::lambda_marker(l),
                        (*cfile, l.start_byte(), l.end_byte()),
                    ));
                }
            }
        }
        if out.len() > MAX_HOST_BINDINGS {
            return none;
        }
    }
    if out.iter().all(|m| m.is_empty()) {
        none
    } else {
        (out, lambdas)
    }
}

fn has_child_kind(n: Node, kind: &str) -> bool {
    let mut c = n.walk();
    let found = n.children(&mut c).any(|ch| ch.kind() == kind);
    found
}

fn template_args(f: Node, text: &str) -> Option<(String, Vec<String>)> {
    if f.kind() != "template_function" {
        return None;
    }
    let name = node_text(f.child_by_field_name("name")?, text).to_string();
    let args = f.child_by_field_name("arguments")?;
    let mut c = args.walk();
    let list = args
        .named_children(&mut c)
        .filter(|a| a.kind() != "comment")
        .map(|a| node_text(a, text).to_string())
        .collect();
    Some((name, list))
}

fn add_function<'t>(
    t: &mut Tables<'t>,
    n: Node<'t>,
    file: FileId,
    text: &str,
    kernel_marks: &[usize],
) {
    let Some(decl) = n.child_by_field_name("declarator") else {
        return;
    };
    let Some(fd) = function_declarator(decl) else {
        return;
    };
    let Some(name_node) = fd
        .child_by_field_name("declarator")
        .and_then(declarator_name)
    else {
        return;
    };
    let name = node_text(name_node, text).to_string();
    let quals = qualifiers(n, text);
    let parent = n.parent();
    let head_start = match parent {
        Some(p) if p.kind() == "template_declaration" => p.start_byte(),
        _ => n.start_byte(),
    };
    let is_kernel = quals.iter().any(|q| q == "__global__")
        || kernel_marks.iter().any(|&m| {
            m < fd.start_byte()
                && (m >= head_start || text.get(m..head_start).is_some_and(|g| g.trim().is_empty()))
        });
    let (template_params, outer) = match parent {
        Some(p) if p.kind() == "template_declaration" => (p.child_by_field_name("parameters"), p),
        _ => (None, n),
    };
    let def = FuncDef {
        node: n,
        file,
        is_kernel,
        template_params,
        outer,
    };
    if is_kernel {
        t.kernels.push(def);
    }
    t.funcs.entry(name).or_default().push(def);
}

fn add_declaration<'t>(
    t: &mut Tables<'t>,
    n: Node<'t>,
    file: FileId,
    text: &str,
    consts: &mut Vec<(Node<'t>, FileId)>,
) {
    let quals = qualifiers(n, text);
    let space = if quals.iter().any(|q| q == "__shared__") {
        Some(GlobalSpace::Shared)
    } else if quals.iter().any(|q| q == "__constant__") {
        Some(GlobalSpace::Constant)
    } else if quals
        .iter()
        .any(|q| q == "__device__" || q == "__managed__")
    {
        Some(GlobalSpace::Device)
    } else {
        None
    };
    let mut c = n.walk();
    let decls: Vec<Node> = n.children_by_field_name("declarator", &mut c).collect();
    let mut is_const = quals.iter().any(|q| q == "const" || q == "constexpr");
    for d in &decls {
        if function_declarator(*d).is_some() && d.kind() != "init_declarator" {
            if let Some(name) = function_declarator(*d)
                .and_then(|f| f.child_by_field_name("declarator"))
                .and_then(declarator_name)
            {
                t.protos.insert(node_text(name, text).to_string());
            }
            is_const = false;
            continue;
        }
        if let Some(space) = space {
            if let Some(name) = declarator_name(*d) {
                t.globals.insert(
                    node_text(name, text).to_string(),
                    GlobalVar {
                        decl: n,
                        declarator: *d,
                        file,
                        space,
                    },
                );
            }
        }
    }
    if is_const && space.is_none() {
        consts.push((n, file));
    }
}

fn find_extern_shared<'t>(body: Node<'t>, text: &str) -> Option<(Node<'t>, Node<'t>)> {
    let mut stack = vec![body];
    let mut count = 0;
    while let Some(n) = stack.pop() {
        count += 1;
        if count > 10_000 {
            return None;
        }
        if n.kind() == "declaration" {
            let q = qualifiers(n, text);
            if q.iter().any(|x| x == "extern") && q.iter().any(|x| x == "__shared__") {
                return n.child_by_field_name("declarator").map(|d| (n, d));
            }
        }
        let mut c = n.walk();
        for ch in n.named_children(&mut c) {
            stack.push(ch);
        }
    }
    None
}

/// A function's name and the place of the name (`<kernel>` at its start when the declarator
/// has none we read).
pub(crate) fn kernel_name<'t>(tab: &Tables<'t>, def: &FuncDef<'t>) -> (String, Span) {
    let text = tab.text(def.file);
    let name = def
        .node
        .child_by_field_name("declarator")
        .and_then(function_declarator)
        .and_then(|f| f.child_by_field_name("declarator"))
        .and_then(declarator_name);
    match name {
        Some(n) => (
            node_text(n, text).to_string(),
            Span::new(def.file, n.start_byte(), n.end_byte()),
        ),
        None => (
            "<kernel>".to_string(),
            Span::new(def.file, def.node.start_byte(), def.node.start_byte()),
        ),
    }
}
