//! Launch sites: `<<<grid, block>>>` and calls of library launchers (`cudaLaunchKernel`, …) in
//! the file's host code, with the sizes and arguments they give (launch sizes written in
//! comments are read by [`crate::annotations`]).
//!
//! This file finds the sites and builds each [`LaunchSite`]; what the host function does to a
//! local before the launch is in `host.rs`, the sizes in `sizes.rs` (with the branches that
//! choose them in `guards.rs`), the relations between arguments, sizes and branch conditions
//! in `relations.rs`, the checks before the launch (`assert(…)`, `if (…) return;`) in
//! `asserts.rs`, and which explicit specializations of a kernel template a site reaches in
//! `specializations.rs`.

use crate::collect::{declarator_name, function_declarator, Tables};
use crate::consteval::{eval, eval_text, list_items, node_text, ConstEnv};
use crate::preprocess::MacroTable;
use cudarace_ir::{BinOp, Dim, FileId, LaunchSite, SiteValue, Span, ANY_SIZE};
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
    /// The literals of the `if`s around the launch (see `guards.rs`), read once.
    launch_literals: std::cell::OnceCell<Vec<guards::Lit<'t>>>,
}

mod asserts;
mod guards;
mod host;
mod relations;
mod sizes;
mod specializations;

use host::FunctionFacts;

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
                let launches = match chevron_launch(n, text) {
                    Some(l) if l.name.kind() == "subscript_expression" => {
                        table_launches(tables, n, &l, text)
                    }
                    Some(l) => vec![l],
                    None => launcher_call(tables, n, text, file).into_iter().collect(),
                };
                for launch in launches {
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
                        launch_literals: Default::default(),
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
    /// A kernel named by a macro's expansion (`P(4)` for `k<T, (4)>` in a table of kernels):
    /// its name and template argument texts, in place of `name` and `template_args`.
    expanded: Option<(String, Vec<String>)>,
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
    let sizes = list_items(cfg);
    Some(Launch {
        name,
        expanded: None,
        template_args: (f.kind() == "template_function")
            .then(|| f.child_by_field_name("arguments"))
            .flatten(),
        grid: sizes.first().copied(),
        block: sizes.get(1).copied(),
        args: n.child_by_field_name("arguments").map(list_items),
    })
}

/// `table[i]<<<grid, block>>>(args…)`: a launch through an array of kernels, `void
/// (*table[])(…) = {k<1>, k<2>, …}` (TensorRT's plugins pick an instance by a size this way),
/// declared in the host function or at file scope. Every kernel of the initializer gets the
/// site's sizes and arguments (whichever `i` picks it). Nothing when no such table is found.
fn table_launches<'t>(
    tables: &Tables<'t>,
    call: Node<'t>,
    launch: &Launch<'t>,
    text: &str,
) -> Vec<Launch<'t>> {
    let Some(table) = launch.name.child_by_field_name("argument") else {
        return vec![];
    };
    if table.kind() != "identifier" {
        return vec![];
    }
    let name = node_text(table, text);
    // Scopes from the launch outward: the enclosing compound statements, then the file.
    let mut scopes = Vec::new();
    let mut up = call.parent();
    while let Some(p) = up {
        if p.kind() == "compound_statement" || p.kind() == "translation_unit" {
            scopes.push(p);
        }
        up = p.parent();
    }
    for scope in scopes {
        let mut c = scope.walk();
        for decl in scope.named_children(&mut c) {
            // A table declared after the launch is not the one it uses.
            if decl.kind() != "declaration" || decl.start_byte() > call.start_byte() {
                continue;
            }
            let mut dc = decl.walk();
            for init in decl.named_children(&mut dc) {
                if init.kind() != "init_declarator" {
                    continue;
                }
                let named = init
                    .child_by_field_name("declarator")
                    .and_then(declarator_name)
                    .is_some_and(|d| node_text(d, text) == name);
                let Some(list) = init
                    .child_by_field_name("value")
                    .filter(|v| v.kind() == "initializer_list")
                else {
                    continue;
                };
                if !named {
                    continue;
                }
                let mut lc = list.walk();
                let entries: Vec<Node<'t>> = list.named_children(&mut lc).collect();
                return entries
                    .into_iter()
                    .filter_map(|e| {
                        if let Some(expanded) = macro_kernel(tables, e, text) {
                            return Some(Launch {
                                name: launch.name,
                                expanded: Some(expanded),
                                template_args: None,
                                grid: launch.grid,
                                block: launch.block,
                                args: launch.args.clone(),
                            });
                        }
                        let k = kernel_operand(tables, e, text)?;
                        let (name, template_args) = kernel_name(k)?;
                        Some(Launch {
                            name,
                            expanded: None,
                            template_args,
                            grid: launch.grid,
                            block: launch.block,
                            args: launch.args.clone(),
                        })
                    })
                    .collect();
            }
        }
    }
    vec![]
}

/// The name of a kernel operand (`k`, `ns::k`, `k<T, 4>`) and its template argument list.
fn kernel_name(k: Node<'_>) -> Option<(Node<'_>, Option<Node<'_>>)> {
    match k.kind() {
        "identifier" => Some((k, None)),
        "qualified_identifier" => Some((declarator_name(k)?, None)),
        "template_function" => Some((
            k.child_by_field_name("name")?,
            k.child_by_field_name("arguments"),
        )),
        _ => None,
    }
}

/// An entry of a table of kernels written with a function-like macro of the file (`#define
/// P(n) k<T, (n)>` … `{P(1), P(2)}`): the kernel's name and template argument texts of the
/// expansion.
fn macro_kernel(tables: &Tables<'_>, e: Node<'_>, text: &str) -> Option<(String, Vec<String>)> {
    if e.kind() != "call_expression" {
        return None;
    }
    let f = e.child_by_field_name("function")?;
    let m = tables.macros.get(node_text(f, text))?;
    let args: Vec<String> = list_items(e.child_by_field_name("arguments")?)
        .into_iter()
        .map(|a| node_text(a, text).to_string())
        .collect();
    let expansion = m.expand(Some(&args))?;
    let expansion = expansion.trim();
    let (name, rest) = match expansion.find('<') {
        Some(i) => (expansion[..i].trim(), Some(&expansion[i + 1..])),
        None => (expansion, None),
    };
    let name = name.rsplit("::").next()?.trim();
    let is_ident = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !is_ident || tables.funcs.get(name).is_none_or(|d| d.is_empty()) {
        return None;
    }
    let mut targs = Vec::new();
    if let Some(rest) = rest {
        let inner = rest.trim_end().strip_suffix('>')?;
        // Split at the commas outside nested brackets.
        let (mut depth, mut start) = (0i32, 0usize);
        for (i, c) in inner.char_indices() {
            match c {
                '<' | '(' | '[' | '{' => depth += 1,
                '>' | ')' | ']' | '}' => depth -= 1,
                ',' if depth == 0 => {
                    targs.push(inner[start..i].trim().to_string());
                    start = i + 1;
                }
                _ => {}
            }
        }
        targs.push(inner[start..].trim().to_string());
    }
    Some((name.to_string(), targs))
}

/// A call to a launcher a library file describes (`[[launcher]]`: `cudaLaunchKernel((void *)k,
/// grid, block, args, smem, stream)`, `hipLaunchKernelGGL(k, grid, block, smem, stream, a, b)`,
/// `stream->LaunchKernel(k, CudaLaunchConfig(grid, block, 0), a, b)`) that the file does not
/// define itself. Sizes given by a configuration object are read only when it is built on the
/// spot by a constructor a `[[launch-config]]` entry describes, or by a helper of the file
/// that returns one (see [`config_sizes`]); the kernel's arguments only when they are passed
/// directly.
fn launcher_call<'t>(
    tables: &Tables<'t>,
    n: Node<'t>,
    text: &str,
    file: FileId,
) -> Option<Launch<'t>> {
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
    let args = list_items(n.child_by_field_name("arguments")?);
    let kernel = kernel_operand(tables, *args.get(model.kernel_arg)?, text)?;
    let (name, template_args) = kernel_name(kernel)?;
    // With a configuration object, the launcher is known to be the one described only when the
    // configuration is built by a described constructor: the kernel's arguments are bound only
    // then (another framework's function of the same name may take other arguments there).
    let (grid, block, identified) = match model.sizes {
        LaunchSizes::Args { grid, block } => {
            (args.get(grid).copied(), args.get(block).copied(), true)
        }
        LaunchSizes::Config { arg } => args
            .get(arg)
            .and_then(|c| config_sizes(tables, *c, text, file))
            .map_or((None, None, false), |(g, b)| (g, b, true)),
    };
    let kernel_args = match model.kernel_args {
        KernelArgs::From(from) if identified => {
            Some(args.get(from..).map(<[_]>::to_vec).unwrap_or_default())
        }
        KernelArgs::From(_) | KernelArgs::Array(_) | KernelArgs::Unknown => None,
    };
    Some(Launch {
        name,
        expanded: None,
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
                let list = list_items(k.child_by_field_name("arguments")?);
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

/// The type (or function) a call or a braced temporary names, without qualifiers or template
/// arguments, and its argument list (`LaunchConfig(g, b)`, `cfg::Launch<T>{g, b}`).
fn constructed_type<'t, 's>(c: Node<'t>, text: &'s str) -> Option<(&'s str, Node<'t>)> {
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
    Some((node_text(ty, text), list))
}

/// The grid and block of a launch configuration built on the spot by a constructor the library
/// describes (`ep::CudaLaunchConfig(grid, block, smem)`, also `Config{grid, block, smem}`), or
/// by a helper of the file whose body only returns one (`GetLaunchConfig(n)` with `return
/// ep::CudaLaunchConfig((n + 3) / 4, kWarps * 32, 0);`). A size the helper computes from its
/// parameters is not read (`None`: symbolic); one that is a constant of the file is.
fn config_sizes<'t>(
    tables: &Tables<'t>,
    c: Node<'t>,
    text: &str,
    file: FileId,
) -> Option<(Option<Node<'t>>, Option<Node<'t>>)> {
    let (name, list) = constructed_type(c, text)?;
    if let Some(defs) = tables.funcs.get(name).filter(|d| !d.is_empty()) {
        return helper_config_sizes(tables, defs, c.kind(), text, file);
    }
    let model = tables.library.launch_config(name)?;
    let args = list_items(list);
    Some((
        Some(*args.get(model.grid_arg)?),
        Some(*args.get(model.block_arg)?),
    ))
}

/// [`config_sizes`] of a call to a function of the file (`defs`, every overload): one
/// definition, in this file, whose body is `return config;` with `config` built by a described
/// constructor. Only the sizes that are constants of the file (without the helper's
/// parameters) are kept.
fn helper_config_sizes<'t>(
    tables: &Tables<'t>,
    defs: &[crate::collect::FuncDef<'t>],
    call_kind: &str,
    text: &str,
    file: FileId,
) -> Option<(Option<Node<'t>>, Option<Node<'t>>)> {
    let [def] = defs else {
        return None;
    };
    if call_kind != "call_expression" || def.file != file || def.is_kernel {
        return None;
    }
    let body = def.node.child_by_field_name("body")?;
    let statements: Vec<Node<'t>> = {
        let mut c = body.walk();
        body.named_children(&mut c)
            .filter(|s| s.kind() != "comment")
            .collect()
    };
    let [ret] = statements.as_slice() else {
        return None;
    };
    if ret.kind() != "return_statement" {
        return None;
    }
    let config = ret.named_child(0)?;
    // The returned configuration must be built by a described constructor (not by another
    // helper: one level only).
    let (name, list) = constructed_type(config, text)?;
    if tables.funcs.get(name).is_some_and(|d| !d.is_empty()) {
        return None;
    }
    let model = tables.library.launch_config(name)?;
    let args = list_items(list);
    // A size the tables alone evaluate names only constants of the file: it means the same at
    // the launch (where the file's constants are looked up before the host function's locals).
    let constant = |i: usize| {
        args.get(i)
            .copied()
            .filter(|a| eval(*a, text, tables, 0).is_some())
    };
    Some((constant(model.grid_arg), constant(model.block_arg)))
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
        let (kernel, template_args, template_list) = match &launch.expanded {
            Some((name, targs)) => (
                name.clone(),
                targs
                    .iter()
                    .map(|t| eval_text(t, self, 0).map(SiteValue::Int))
                    .collect(),
                None,
            ),
            None => (
                node_text(launch.name, self.text).to_string(),
                self.arg_values(launch.template_args, launch.grid, launch.block),
                launch.template_args,
            ),
        };
        let definitions = specializations::reachable_definitions(
            self.tables,
            &kernel,
            template_list,
            self.func_body.and_then(|b| b.parent()),
            self.text,
        );
        LaunchSite {
            kernel,
            span: Span::new(file, n.start_byte(), n.end_byte()),
            grid_values,
            block_values,
            grid_dim,
            block_dim,
            conditions: self.path_conditions(n, args),
            args: args
                .map(|a| self.item_values(a, launch.grid, launch.block))
                .unwrap_or_default(),
            template_args,
            definitions,
            grid_relations: self.size_relations(launch.grid, args),
            block_relations: self.size_relations(launch.block, args),
        }
    }
}

/// The values as sizes, if all are positive.
/// The dimension (0, 1, 2) a `dim3` component expression `v.x` / `v.y` / `v.z` names.
fn dim3_component(field_expression: Node, text: &str) -> Option<usize> {
    match node_text(field_expression.child_by_field_name("field")?, text) {
        "x" => Some(0),
        "y" => Some(1),
        "z" => Some(2),
        _ => None,
    }
}

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

/// The condition of an `if` as one expression: `None` for `if (int k = f(); k > 0)` and
/// `if (auto *p = q)` (a declaration), whose names are the branch's own.
fn if_condition(if_statement: Node) -> Option<Node> {
    if_statement
        .child_by_field_name("condition")
        .filter(|c| c.child_by_field_name("initializer").is_none())
        .and_then(|c| c.child_by_field_name("value"))
        .filter(|v| v.kind() != "declaration")
}
