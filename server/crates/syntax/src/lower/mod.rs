//! Lowering of kernels to the IR: the per-kernel state ([`Lowerer`]), name resolution and the
//! kernel set-up. Statements, expressions, pointers and calls live in the submodules.

pub(crate) mod calls;
pub(crate) mod cxx;
mod expr;
mod library_calls;
mod member_pointers;
mod objects;
mod pointers;
mod ptr_rows;
mod stmt;
pub(crate) mod types;

use crate::collect::{
    collect, declarator_name, function_declarator, kernel_name, qualifiers, FuncDef, GlobalSpace,
    Tables,
};
use crate::consteval::{list_items, node_text};
use crate::typenames::{self, declarator_shape, Shape};
use crate::FrontendOptions;
use cudarace_ir as ir;
use ir::*;
use objects::Object;
use ptr_rows::pointer_levels;
use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::rc::Rc;
use std::sync::Arc;
use tree_sitter::{Node, Tree};

/// Nesting of statements and expressions (after inlining) beyond which a kernel is unsupported.
const MAX_DEPTH: u32 = 200;
/// Device-function inlining depth beyond which a kernel is unsupported.
pub(crate) const MAX_INLINE_DEPTH: usize = 16;
/// Syntax nodes visited per kernel (inlining can multiply code) before giving up.
const MAX_WORK: u64 = 3_000_000;
/// Loops nested (across inlined device functions) beyond which a kernel is unsupported: every
/// loop level adds quantified variables to each access pair's query. The checker handles 50
/// nested loops (with or without barriers) in well under a second (BENCHMARKS.md, family b).
pub(crate) const MAX_LOOP_NESTING: u32 = 64;
/// Memory accesses per kernel (after inlining and struct expansion) beyond which a kernel is
/// unsupported: the checker's work grows with the number of access pairs.
pub(crate) const MAX_ACCESSES: u32 = 20_000;
/// Stands for "every array of the kernel" in an [`Opaque`] while lowering; replaced at the end.
pub(crate) const ALL_ARRAYS: ArrayId = ArrayId(u32::MAX);

pub(crate) fn lower_file(
    path: Option<&Path>,
    text: &str,
    tree: Option<&Tree>,
    opts: &FrontendOptions,
) -> FileIr {
    crate::on_big_stack(|| lower_file_inner(path, text, tree, opts)).unwrap_or_else(|| {
        let mut f = FileIr::default();
        f.files.push(SourceFile {
            path: path.map(|p| p.to_path_buf()),
            text: Arc::from(text),
        });
        f.syntax_errors.push(SyntaxError {
            span: Span::default(),
            message: "internal error in the CUDA front end; no kernel was analysed".into(),
        });
        f
    })
}

fn lower_file_inner(
    path: Option<&Path>,
    text: &str,
    tree: Option<&Tree>,
    opts: &FrontendOptions,
) -> FileIr {
    let parsed = crate::parse::parse_file(path, text, tree, opts);
    let mut tables = collect(&parsed.pre, &parsed.trees);
    tables.library_errors = parsed.library_errors.clone();
    let index = crate::file_index::index_of(&parsed, &tables, text);
    let mut fir = FileIr {
        files: index.files,
        syntax_errors: index.syntax_errors,
        header_launch: index.header_launch,
        launch_sites: index.launch_sites,
        ..FileIr::default()
    };
    for def in &tables.kernels {
        for inst in instances(&tables, def) {
            let k = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                lower_kernel(&tables, def, inst.as_ref())
            }));
            match k {
                Ok(k) => fir.kernels.push(k),
                Err(_) => fir.kernels.push(failed_kernel(
                    &tables,
                    def,
                    "internal error in the CUDA front end while lowering this kernel",
                )),
            }
        }
    }
    fir
}

/// At most this many instantiations of one kernel template are checked each on its own.
const MAX_INSTANCES: usize = 8;

/// How a kernel is lowered: once (`None`: a unique instantiation fixes its template
/// parameters, or they stay symbolic), or once per instantiation of the file when a template
/// argument names a class of the file (`sequence_pool<T, MaxPool<T>>` and `…<T, SumPool<T>>`:
/// a function object's `operator()` can be inlined only with its class known). Each instance
/// is a kernel of its own, named with its arguments (`k<T, MaxPool<T>>`).
fn instances<'t>(tab: &Tables<'t>, def: &FuncDef<'t>) -> Vec<Option<Vec<String>>> {
    if def.template_params.is_none() {
        return vec![None];
    }
    let (name, _) = kernel_name(tab, def);
    let mut distinct: Vec<Vec<String>> = Vec::new();
    for i in tab.instantiations.get(&name).into_iter().flatten() {
        if !distinct.contains(i) {
            distinct.push(i.clone());
        }
    }
    let names_class = |arg: &str| {
        let base = arg.split('<').next().unwrap_or(arg).trim();
        let base = base.rsplit("::").next().unwrap_or(base);
        tab.classes.get(base).is_some_and(|c| c.is_some()) || tab.launch_lambdas.contains_key(arg)
    };
    if distinct.len() < 2
        || distinct.len() > MAX_INSTANCES
        || !distinct.iter().flatten().any(|a| names_class(a))
    {
        return vec![None];
    }
    distinct.into_iter().map(Some).collect()
}

fn failed_kernel<'t>(tab: &Tables<'t>, def: &FuncDef<'t>, reason: &str) -> Kernel {
    let (name, name_span) = kernel_name(tab, def);
    Kernel {
        name,
        span: Span::new(def.file, def.outer.start_byte(), def.outer.end_byte()),
        name_span,
        params: vec![],
        arrays: vec![],
        locals: vec![],
        unknowns: vec![],
        body: vec![],
        launch_bounds: None,
        launch_bounds_param: None,
        annotated_launch: LaunchConfig::default(),
        unsupported: Some(reason.to_string()),
        volatile_arrays: vec![],
        library_notes: vec![],
    }
}

fn lower_kernel<'t>(tab: &Tables<'t>, def: &FuncDef<'t>, inst: Option<&Vec<String>>) -> Kernel {
    // Pointer variables whose target set grows after a use (reassignment in a loop) are lowered
    // again with the final target sets, so no access is attributed to too few arrays.
    let mut hints: HashMap<SlotKey, SlotHint> = HashMap::new();
    for pass in 0..3 {
        let mut l = Lowerer::new(tab, hints.clone());
        l.instantiation = inst.cloned();
        l.lower_kernel(def);
        if !l.widened || pass == 2 {
            return l.finish();
        }
        for s in &l.slots {
            // A choice's condition is a local of this pass: the next pass knows only the arrays.
            let base = cxx::choice::without_choice(&s.base);
            let h = hints.entry(s.key).or_insert(SlotHint {
                base: base.clone(),
                needs_local: false,
            });
            h.base = if pass == 1 && h.base != base {
                Base::Unknown
            } else {
                base
            };
            h.needs_local |= s.off_local.is_some();
        }
    }
    failed_kernel(tab, def, "pointer aliasing did not converge")
}

/// Where a pointer variable was declared (file, byte): identifies it across lowering passes.
pub(crate) type SlotKey = (FileId, usize);

#[derive(Clone, Debug)]
pub(crate) struct SlotHint {
    pub base: Base,
    pub needs_local: bool,
}

/// What a pointer may point into.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Base {
    Arr(ArrayId),
    /// Different arrays depending on the path taken: accesses become opaque.
    Many(Vec<ArrayId>),
    /// `c ? a : b` between two arrays: `a` where the condition (a local holding the value `c`
    /// had when the pointer was chosen) is true, else `b` (`cxx/choice.rs`).
    Choice(LocalId, ArrayId, ArrayId),
    /// Thread-private memory (local arrays, locals, `__constant__`): never racy.
    Private,
    /// Unknown target (e.g. a pointer from an opaque call): may be any array.
    Unknown,
    /// Null / not yet assigned.
    Null,
}

impl Base {
    pub fn join(&self, other: &Base) -> Base {
        match (self, other) {
            (a, b) if a == b => a.clone(),
            (Base::Null, b) => b.clone(),
            (a, Base::Null) => a.clone(),
            (Base::Unknown, _) | (_, Base::Unknown) => Base::Unknown,
            (Base::Private, x) | (x, Base::Private) => x.clone(),
            (a, b) => {
                let mut v = a.arrays();
                for x in b.arrays() {
                    if !v.contains(&x) {
                        v.push(x);
                    }
                }
                if v.len() == 1 {
                    Base::Arr(v[0])
                } else {
                    Base::Many(v)
                }
            }
        }
    }
    pub fn arrays(&self) -> Vec<ArrayId> {
        match self {
            Base::Arr(a) => vec![*a],
            Base::Many(v) => v.clone(),
            Base::Choice(_, a, b) => vec![*a, *b],
            Base::Unknown => vec![ALL_ARRAYS],
            Base::Private | Base::Null => vec![],
        }
    }
}

/// A pointer value: a base and an element offset (in elements of the base array), plus how many
/// elements one step of pointer arithmetic moves.
#[derive(Clone, Debug)]
pub(crate) struct PtrVal {
    pub base: Base,
    pub off: Expr,
    pub stride: Expr,
    pub elem_size: Option<i64>,
    /// Size in bytes of one component when the pointee is a CUDA vector type (`float4` → 4):
    /// `p[i].y` is then the cells of the second component (see `cxx/vectors.rs`).
    pub comp: Option<i64>,
}

/// A pointer variable (parameter, local, or bound device-function parameter).
#[derive(Clone, Debug)]
pub(crate) struct PtrSlot {
    pub key: SlotKey,
    pub base: Base,
    /// The offset, when it is fixed at the declaration.
    pub off_expr: Expr,
    /// The offset local, when the pointer is reassigned.
    pub off_local: Option<LocalId>,
    pub elem_size: Option<i64>,
    /// Component size when the pointee is a vector type (see [`PtrVal::comp`]).
    pub comp: Option<i64>,
    pub used: bool,
    /// For array-shaped parameters (`float t[][32]`): the sizes after the first dimension.
    pub inner: Vec<Option<Expr>>,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum GroupKind {
    Block,
    Grid,
    /// `tiled_partition<N>` / `coalesced_threads()`: size when known.
    Tile(Option<i64>),
}

/// A memory location an assignment can target.
#[derive(Clone, Debug)]
pub(crate) enum Place {
    Cell {
        array: ArrayId,
        index: Vec<Expr>,
        flat: bool,
    },
    Local(LocalId),
    Many(Vec<ArrayId>),
    /// `width` consecutive cells from `start` (flat) of a scalar array: an element of a vector
    /// type seen through a cast pointer (`reinterpret_cast<float4 *>(p)[i]`, a `float4 *`
    /// parameter); `comp` is the cells of one component, when it is a vector (`cxx/vectors.rs`).
    Cells {
        array: ArrayId,
        start: Expr,
        width: i64,
        comp: Option<i64>,
    },
    /// A pointer chosen with `?:` between arrays: the place in `a` where `sel` holds, else the
    /// one in `b` (`cxx/choice.rs`).
    Choice {
        sel: Expr,
        a: Box<Place>,
        b: Box<Place>,
    },
    Private,
    Unknown,
    /// A pointer variable (assignments change what it points to).
    Ptr(usize),
    /// A whole object of a class defined in the file (`*this`, an object variable).
    Object(Rc<Object>),
}

#[derive(Clone, Debug)]
pub(crate) enum Binding {
    Local(LocalId),
    Value(Expr),
    Array(ArrayId),
    Ptr(usize),
    Private,
    /// A thread-private array of objects of a class of the file (`Point corners[4]`): its
    /// elements' methods are inlined on objects whose members are unknown (see
    /// `calls.rs`, method calls).
    PrivateObjects(Rc<str>),
    Cell(Place),
    Group(GroupKind),
    /// A thread-private array of pointers (`float *bufs[2] = {a, b}`): what its elements may
    /// point into.
    PtrArray(Base),
    /// An object of a class defined in the file: one binding per data member (see
    /// `objects.rs`). Inside an inlined method, `this` is bound to the object.
    Object(Rc<Object>),
    /// A lambda: its expression and its captures (see `cxx/lambdas.rs`).
    Lambda(Rc<cxx::lambdas::Lambda>),
    /// A device function passed by name, or one of a table's (see `cxx/fn_refs.rs`).
    Functions(Rc<cxx::fn_refs::FnRef>),
}

/// A lowered expression's value.
#[derive(Clone, Debug)]
pub(crate) enum Val {
    S(Expr),
    P(PtrVal),
    Group(GroupKind),
    Void,
}

#[derive(Clone)]
pub(crate) struct Src {
    pub file: FileId,
    pub text: Arc<str>,
    /// Inside a macro expansion: every span is the use site.
    pub at: Option<Span>,
}

/// One function being lowered (the kernel, or an inlined device function).
pub(crate) struct Frame {
    pub key: SlotKey,
    pub scope_base: usize,
    pub is_kernel: bool,
    pub ret_local: Option<LocalId>,
    pub ret_val: Option<Val>,
    pub flag: Option<LocalId>,
    pub loop_depth: u32,
    /// Names assigned somewhere in the function body (they need mutable locals).
    pub assigned: HashSet<String>,
    /// Names whose address is taken (`&x`) somewhere in the function body: writes through
    /// such a pointer are not followed, so objects with these names are not modelled.
    pub addressed: HashSet<String>,
    /// The function returns a reference and has a single `return` at its end: the return
    /// statement records the place it refers to (`ret_place`) instead of reading it.
    pub ret_ref: bool,
    /// The function returns an object of a class of the file by value, with a single `return`
    /// at its end: `ret_place` is that object (`Matrix sub = sub_matrix(A, r, c);`).
    pub ret_obj: Option<String>,
    pub ret_place: Option<Place>,
}

pub(crate) struct Lowerer<'a, 't> {
    pub tab: &'a Tables<'t>,
    pub k: Kernel,
    pub out: Vec<Stmt>,
    pub scopes: Vec<HashMap<String, Binding>>,
    pub frames: Vec<Frame>,
    pub src: Src,
    pub next_access: u32,
    pub depth: u32,
    pub work: u64,
    pub slots: Vec<PtrSlot>,
    pub hints: HashMap<SlotKey, SlotHint>,
    /// The template arguments of the instance being lowered (see [`instances`]).
    pub instantiation: Option<Vec<String>>,
    pub widened: bool,
    pub globals_bound: HashMap<String, Binding>,
    pub expanding: Vec<String>,
    pub unsupported: Option<String>,
    /// Element size in bytes per array (for pointer casts), when known.
    pub elem_sizes: Vec<Option<i64>>,
    /// `__shared__` declarations already lowered (a device function inlined twice declares one
    /// array, as CUDA allocates it once per block).
    pub shared_decls: HashMap<SlotKey, ArrayId>,
    /// Arrays with at least one access emitted so far.
    pub accessed: HashSet<ArrayId>,
    /// Arrays re-viewed with another element type through a pointer cast.
    pub view_changed: HashSet<ArrayId>,
    /// Arrays of structs with a known scalar layout (`float2`, a struct defined in the file):
    /// the IR array has one extra last dimension, the member number, so `a[i].x` and `a[i].y`
    /// are different cells. A whole element (`a[i]`) is every member; a pointer into such an
    /// array has an unknown offset (its arithmetic counts elements, not members).
    pub struct_members: HashMap<ArrayId, Vec<String>>,
    /// The class of the file each array's elements are objects of (`Particle *ps`, `__shared__
    /// Particle s[64]`), for their methods (`cxx/element_objects.rs`).
    pub elem_classes: HashMap<ArrayId, String>,
    /// The place a reference-returning call refers to, handed from `inline` to `call_ref`.
    pub ref_result: Option<Place>,
    /// Per array, the sign of the constant step of each atomic on it that returns a ticket
    /// (`None` for any other atomic): tickets hold only when all steps have one sign.
    pub atomic_signs: HashMap<ArrayId, Vec<Option<i64>>>,
    /// Ticket values and the array of their counter.
    pub tickets: Vec<(UnknownId, ArrayId)>,
    /// Fallback macros of the library that were expanded: name → library.
    pub fallback_macros: std::collections::BTreeMap<String, String>,
    /// Classes used from the library's fallback class sources: name → library.
    pub fallback_classes: std::cell::RefCell<std::collections::BTreeMap<String, String>>,
    /// The captures of the lambda `inline` is about to inline (set by `call_lambda`).
    pub lambda_env: Option<Vec<(String, Binding)>>,
    /// The kernel's type parameters its instantiation binds to a lambda a launch passes:
    /// parameter → where the lambda is (see `cxx/launch_lambdas.rs`).
    pub launch_lambda_types: HashMap<String, (FileId, usize, usize)>,
    /// Locals that lambdas used as values (stored, chosen with `?:`) may change when they are
    /// called by code the front end does not follow: every opaque statement of the kernel that
    /// may synchronize (unknown code) may change them (added at the end).
    pub escaped_locals: Vec<LocalId>,
    /// Template type parameters bound to classes of the file: (frame depth, parameter, class)
    /// (see `cxx/type_params.rs`).
    pub type_params: Vec<(usize, String, String)>,
    /// Every template type parameter of the functions being lowered, bound or not: (frame
    /// depth, parameter, the type argument's text when the call or the instantiation gives
    /// it) (see `cxx/type_params.rs`).
    pub type_param_names: Vec<(usize, String, Option<String>)>,
    /// `typedef`s and `using` aliases declared in the kernel and the functions inlined into it:
    /// name → aliased type text (file-level ones are in `Tables::type_aliases`).
    pub type_aliases: HashMap<String, String>,
    /// `__shared__ union { … } u;` variables: their members overlap, so a collective on
    /// `u.member` uses the storage of the whole variable (`cxx/collectives.rs`).
    pub shared_unions: HashSet<ArrayId>,
    /// Names the kernel being lowered dereferences (`p->f`, `*p`, `(p + i)->f`): a parameter
    /// of a type the front end does not know (a pointer `typedef` from a missing header) is a
    /// pointer when used so.
    pub dereferenced: HashSet<String>,
    /// The arrays of pointer members of parameters of unknown types and of struct globals,
    /// by `obj.member` (member_pointers.rs).
    pub member_arrays: HashMap<String, ArrayId>,
    /// (the object's array, a member array): unmodelled code touching the first may touch
    /// the second (member_pointers.rs).
    pub member_owners: Vec<(ArrayId, ArrayId)>,
    /// The arrays of `T **` kernel parameters: parameter, element type text, and the array of
    /// the rows their pointers point to, once made, and the pointer levels of the array's
    /// elements' type (2 for `T **`; rows of a `T ***` parameter are such arrays in turn)
    /// (ptr_rows.rs).
    pub ptr_rows: HashMap<ArrayId, (ParamId, String, Option<ArrayId>, usize)>,
}

impl<'a, 't> Lowerer<'a, 't> {
    fn new(tab: &'a Tables<'t>, hints: HashMap<SlotKey, SlotHint>) -> Self {
        Lowerer {
            tab,
            k: Kernel {
                name: String::new(),
                span: Span::default(),
                name_span: Span::default(),
                params: vec![],
                arrays: vec![],
                locals: vec![],
                unknowns: vec![],
                body: vec![],
                launch_bounds: None,
                launch_bounds_param: None,
                annotated_launch: LaunchConfig::default(),
                unsupported: None,
                volatile_arrays: vec![],
                library_notes: vec![],
            },
            out: vec![],
            scopes: vec![HashMap::new()],
            frames: vec![],
            src: Src {
                file: FileId(0),
                text: Arc::from(""),
                at: None,
            },
            next_access: 0,
            depth: 0,
            work: 0,
            slots: vec![],
            hints,
            instantiation: None,
            widened: false,
            globals_bound: HashMap::new(),
            expanding: vec![],
            unsupported: None,
            elem_sizes: vec![],
            shared_decls: HashMap::new(),
            accessed: HashSet::new(),
            view_changed: HashSet::new(),
            struct_members: HashMap::new(),
            elem_classes: HashMap::new(),
            ref_result: None,
            atomic_signs: HashMap::new(),
            tickets: Vec::new(),
            fallback_macros: std::collections::BTreeMap::new(),
            fallback_classes: Default::default(),
            lambda_env: None,
            launch_lambda_types: HashMap::new(),
            escaped_locals: Vec::new(),
            type_params: Vec::new(),
            type_param_names: Vec::new(),
            type_aliases: HashMap::new(),
            shared_unions: HashSet::new(),
            dereferenced: HashSet::new(),
            member_arrays: HashMap::new(),
            member_owners: Vec::new(),
            ptr_rows: HashMap::new(),
        }
    }

    // ---- small helpers -------------------------------------------------------------------

    pub fn span(&self, n: Node) -> Span {
        self.src
            .at
            .unwrap_or_else(|| Span::new(self.src.file, n.start_byte(), n.end_byte()))
    }

    pub fn text(&self, n: Node) -> String {
        node_text(n, &self.src.text).to_string()
    }

    pub fn set_unsupported(&mut self, reason: impl Into<String>) {
        if self.unsupported.is_none() {
            self.unsupported = Some(reason.into());
        }
    }

    /// Counts work; false once the kernel is over budget (or already unsupported).
    pub fn tick(&mut self) -> bool {
        self.work += 1;
        if self.work > MAX_WORK {
            self.set_unsupported("the kernel is too large after inlining device functions");
        }
        self.unsupported.is_none()
    }

    pub fn emit(&mut self, s: Stmt) {
        self.out.push(s);
    }

    /// Runs `f` with a fresh statement buffer and returns what it emitted.
    pub fn capture<R>(&mut self, f: impl FnOnce(&mut Self) -> R) -> (R, Block) {
        let saved = std::mem::take(&mut self.out);
        let r = f(self);
        let block = std::mem::replace(&mut self.out, saved);
        (r, block)
    }

    pub fn unknown(&mut self, reason: impl Into<String>, span: Span, uniform: bool) -> Expr {
        let id = UnknownId(self.k.unknowns.len() as u32);
        self.k.unknowns.push(UnknownValue {
            reason: reason.into(),
            span,
            uniform,
            grid: false,
            distinct: None,
        });
        Expr::Unknown(id)
    }

    /// An unknown value that is the same in every thread of the grid (a choice the compiler
    /// makes, such as which overload a call picks).
    pub fn grid_unknown(&mut self, reason: impl Into<String>, span: Span) -> Expr {
        let e = self.unknown(reason, span, true);
        if let Some(u) = self.k.unknowns.last_mut() {
            u.grid = true;
        }
        e
    }

    pub fn new_local(&mut self, name: &str, ty: ScalarType, span: Span) -> LocalId {
        let id = LocalId(self.k.locals.len() as u32);
        self.k.locals.push(Local {
            name: name.to_string(),
            ty,
            span,
        });
        id
    }

    #[allow(clippy::too_many_arguments)]
    pub fn new_array(
        &mut self,
        name: &str,
        space: MemSpace,
        origin: ArrayOrigin,
        elem: ScalarType,
        elem_size: Option<i64>,
        dims: Vec<Option<Expr>>,
        span: Span,
    ) -> ArrayId {
        let id = ArrayId(self.k.arrays.len() as u32);
        self.elem_sizes.push(elem_size);
        self.k.arrays.push(Array {
            name: name.to_string(),
            space,
            origin,
            elem,
            dims,
            span,
        });
        id
    }

    /// Member names of the element type `ty` when it is a CUDA vector type or a struct of
    /// scalars defined in the file.
    pub fn struct_layout(&self, ty: &str) -> Option<Vec<String>> {
        let words: Vec<&str> = ty
            .split_whitespace()
            .filter(|w| !matches!(*w, "const" | "volatile" | "struct" | "class" | "static"))
            .collect();
        let [name] = words.as_slice() else {
            return None;
        };
        let name = name.strip_prefix("::").unwrap_or(name);
        if let Some(n) = typenames::vector_width(name) {
            return Some(
                ["x", "y", "z", "w"][..n]
                    .iter()
                    .map(|s| s.to_string())
                    .collect(),
            );
        }
        self.tab.struct_layouts.get(name).cloned().flatten()
    }

    /// Declares `id` as an array of structs with members `members` (adds the member dimension).
    pub fn make_struct_array(&mut self, id: ArrayId, members: Vec<String>) {
        let n = members.len() as i64;
        self.k.arrays[id.0 as usize].dims.push(Some(Expr::Int(n)));
        self.struct_members.insert(id, members);
    }

    /// Number of element dimensions (without the member dimension) of a struct array.
    pub fn struct_elem_dims(&self, id: ArrayId) -> Option<usize> {
        self.struct_members
            .get(&id)
            .map(|_| self.k.arrays[id.0 as usize].dims.len().saturating_sub(1))
    }

    /// `place.member`: selects the member cell of a whole struct element.
    /// The member a `field_expression` `n` names, of the place `p` its object is.
    pub fn field_of_place(&mut self, n: Node, p: Place) -> Place {
        let member = n
            .child_by_field_name("field")
            .map(|f| self.text(f))
            .unwrap_or_default();
        let span = self.span(n);
        self.select_member(p, &member, span)
    }

    pub fn select_member(&mut self, p: Place, member: &str, span: Span) -> Place {
        match p {
            Place::Cells { .. } => self.select_component(p, member),
            Place::Choice { sel, a, b } => self.select_in_choice(sel, *a, *b, member, span),
            Place::Cell {
                array,
                mut index,
                flat: false,
            } if self.struct_elem_dims(array) == Some(index.len()) => {
                let no = self
                    .struct_members
                    .get(&array)
                    .and_then(|m| m.iter().position(|f| f == member));
                index.push(match no {
                    Some(no) => Expr::Int(no as i64),
                    None => self.unknown(format!("struct member `{member}`"), span, false),
                });
                Place::Cell {
                    array,
                    index,
                    flat: false,
                }
            }
            p => p,
        }
    }

    /// Whether a place is a whole element of a struct array (all its member cells).
    pub fn is_whole_struct(&self, array: ArrayId, index: &[Expr], flat: bool) -> bool {
        !flat && self.struct_elem_dims(array) == Some(index.len())
    }

    pub fn access(
        &mut self,
        array: ArrayId,
        index: Vec<Expr>,
        flat: bool,
        mode: AccessMode,
        value: Option<Expr>,
        span: Span,
    ) -> AccessId {
        if self.is_whole_struct(array, &index, flat) {
            // A whole struct element: one access per member (a copy reads or writes them all).
            let n = self.struct_members.get(&array).map_or(0, |m| m.len());
            let mut last = None;
            for m in 0..n {
                let mut idx = index.clone();
                idx.push(Expr::Int(m as i64));
                let v = if n == 1 { value.clone() } else { None };
                last = Some(self.access_cell(array, idx, false, mode, v, span));
            }
            if let Some(id) = last {
                return id;
            }
        }
        self.access_cell(array, index, flat, mode, value, span)
    }

    fn access_cell(
        &mut self,
        array: ArrayId,
        index: Vec<Expr>,
        flat: bool,
        mode: AccessMode,
        value: Option<Expr>,
        span: Span,
    ) -> AccessId {
        let id = AccessId(self.next_access);
        self.next_access += 1;
        if self.next_access > MAX_ACCESSES {
            self.set_unsupported(format!(
                "the kernel has more than {MAX_ACCESSES} memory accesses after inlining"
            ));
        }
        self.accessed.insert(array);
        self.emit(Stmt::Access(Access {
            id,
            array,
            mode,
            index,
            flat,
            value,
            span,
        }));
        id
    }

    pub fn opaque(
        &mut self,
        reason: impl Into<String>,
        span: Span,
        arrays: Vec<ArrayId>,
        locals: Vec<LocalId>,
        may_sync: bool,
    ) {
        self.opaque_starting(reason, span, arrays, locals, may_sync, false);
    }

    /// [`Lowerer::opaque`] that says whether the unmodelled code starts threads of its own
    /// (a kernel launch from device code).
    pub fn opaque_starting(
        &mut self,
        reason: impl Into<String>,
        span: Span,
        arrays: Vec<ArrayId>,
        locals: Vec<LocalId>,
        may_sync: bool,
        starts_threads: bool,
    ) {
        self.emit(Stmt::Opaque(Opaque {
            reason: reason.into(),
            span,
            arrays: distinct(arrays),
            locals: distinct(locals),
            may_sync,
            starts_threads,
            reads_only: false,
        }));
    }

    /// An unmodelled load from `arrays` (a read through a pointer whose target or offset is not
    /// known): it makes those arrays unknown only where something writes them (see
    /// [`Opaque::reads_only`]).
    pub fn opaque_read(&mut self, reason: impl Into<String>, span: Span, arrays: Vec<ArrayId>) {
        self.emit(Stmt::Opaque(Opaque {
            reason: reason.into(),
            span,
            arrays: distinct(arrays),
            locals: vec![],
            may_sync: false,
            starts_threads: false,
            reads_only: true,
        }));
    }

    pub fn bind(&mut self, name: &str, b: Binding) {
        if let Some(s) = self.scopes.last_mut() {
            s.insert(name.to_string(), b);
        }
    }

    pub fn push_scope(&mut self) {
        self.scopes.push(HashMap::new());
    }

    pub fn pop_scope(&mut self) {
        if self.scopes.len() > 1 {
            self.scopes.pop();
        }
    }

    /// Resolves a name: scopes of the current function, then file-level declarations.
    pub fn lookup(&mut self, name: &str) -> Option<Binding> {
        let base = self.frames.last().map(|f| f.scope_base).unwrap_or(0);
        for s in self.scopes[base.min(self.scopes.len())..].iter().rev() {
            if let Some(b) = s.get(name) {
                return Some(b.clone());
            }
        }
        if let Some(b) = self.globals_bound.get(name) {
            return Some(b.clone());
        }
        if let Some(g) = self.tab.globals.get(name).copied() {
            let b = self.bind_global(name, g);
            self.globals_bound.insert(name.to_string(), b.clone());
            return Some(b);
        }
        if let Some(v) = self
            .tab
            .enums
            .get(name)
            .or_else(|| self.tab.consts.get(name))
        {
            return Some(Binding::Value(Expr::Int(*v)));
        }
        None
    }

    fn bind_global(&mut self, name: &str, g: crate::collect::GlobalVar<'t>) -> Binding {
        // `__constant__` memory is a read-only global array in kernels: its reads are loads
        // (uniform when the index is), and it can never race.
        let saved = std::mem::replace(
            &mut self.src,
            Src {
                file: g.file,
                text: self.tab.texts[g.file.0 as usize].clone(),
                at: None,
            },
        );
        let ty = g
            .decl
            .child_by_field_name("type")
            .map(|t| self.text(t))
            .unwrap_or_default();
        let elem = self.scalar_type_of(&ty);
        let (dims, _) = self.capture(|l| l.array_dims(g.declarator));
        let span = self.span(g.declarator);
        self.src = saved;
        if g.space == GlobalSpace::Device {
            if let Some(b) = self.device_pointer_global(name, g, elem, &ty, span) {
                return b;
            }
        }
        let is_extern = qualifiers(g.decl, &self.tab.texts[g.file.0 as usize])
            .iter()
            .any(|q| q == "extern");
        let (space, origin) = match g.space {
            GlobalSpace::Shared if is_extern => (MemSpace::Shared, ArrayOrigin::ExternShared),
            GlobalSpace::Shared => (MemSpace::Shared, ArrayOrigin::SharedDecl),
            _ => (MemSpace::Global, ArrayOrigin::DeviceGlobal),
        };
        let id = self.new_array(
            name,
            space,
            origin,
            elem,
            typenames::elem_size(&ty),
            dims,
            span,
        );
        let plain = matches!(declarator_shape(g.declarator), Shape::Array | Shape::Scalar);
        if let Some(class) = self.class_of(&ty).filter(|_| plain) {
            self.elem_classes.insert(id, class);
        }
        if origin != ArrayOrigin::ExternShared && plain {
            if let Some(m) = self.struct_layout(&ty) {
                self.make_struct_array(id, m);
            }
        }
        Binding::Array(id)
    }

    /// Sizes of an array declarator, outermost first (`a[2][3]` → [2, 3]); `[]` → None.
    pub fn array_dims(&mut self, d: Node) -> Vec<Option<Expr>> {
        let mut dims = Vec::new();
        let mut cur = d;
        for _ in 0..32 {
            match cur.kind() {
                "array_declarator" => {
                    let size = cur.child_by_field_name("size").map(|s| {
                        let e = self.scalar_expr(s);
                        fold(&e)
                    });
                    dims.push(
                        size.map(|e| if expr_has_unknown(&e) { None } else { Some(e) })
                            .unwrap_or(None),
                    );
                    match cur.child_by_field_name("declarator") {
                        Some(x) => cur = x,
                        None => break,
                    }
                }
                "init_declarator"
                | "pointer_declarator"
                | "parenthesized_declarator"
                | "attributed_declarator" => match cur
                    .child_by_field_name("declarator")
                    .or_else(|| cur.named_child(0))
                {
                    Some(x) => cur = x,
                    None => break,
                },
                _ => break,
            }
        }
        dims.reverse();
        dims
    }

    // ---- kernel set-up --------------------------------------------------------------------

    /// The template arguments that fix the kernel template `name`'s parameters: the instance
    /// being lowered, else the file's only instantiation.
    fn fixed_instantiation(&self, name: &str) -> Option<Vec<String>> {
        if let Some(i) = &self.instantiation {
            return Some(i.clone());
        }
        let mut distinct: Vec<&Vec<String>> = Vec::new();
        for x in self.tab.instantiations.get(name).into_iter().flatten() {
            if !distinct.contains(&x) {
                distinct.push(x);
            }
        }
        match distinct[..] {
            [only] => Some(only.clone()),
            _ => None,
        }
    }

    fn lower_kernel(&mut self, def: &FuncDef<'t>) {
        let text = self.tab.texts[def.file.0 as usize].clone();
        self.src = Src {
            file: def.file,
            text: text.clone(),
            at: None,
        };
        let (name, name_span) = kernel_name(self.tab, def);
        self.k.name = match &self.instantiation {
            Some(args) => format!("{name}<{}>", args.join(", ")),
            None => name.clone(),
        };
        self.k.name_span = name_span;
        self.k.span = Span::new(def.file, def.outer.start_byte(), def.outer.end_byte());
        self.k.annotated_launch =
            crate::annotations::annotation_above(&text, def.outer.start_byte());
        // __launch_bounds__(N[, M])
        let mut c = def.node.walk();
        let lb = def
            .node
            .children(&mut c)
            .find(|ch| ch.kind() == "launch_bounds");
        if let Some(lb) = lb {
            if let Some(first) = lb.named_child(0) {
                let v = crate::consteval::eval(first, &text, self.tab, 0);
                self.k.launch_bounds = v.filter(|v| *v > 0).map(|v| v as u64);
            }
        }
        let Some(body) = def.node.child_by_field_name("body") else {
            self.set_unsupported("the kernel has no body");
            return;
        };
        let assigned = assigned_names(body, &text);
        let addressed = addressed_names(body, &text);
        self.dereferenced = dereferenced_names(body, &text);
        self.frames.push(Frame {
            key: (def.file, def.node.start_byte()),
            scope_base: 0,
            is_kernel: true,
            ret_local: None,
            ret_val: None,
            flag: None,
            loop_depth: 0,
            assigned,
            addressed,
            ret_ref: false,
            ret_obj: None,
            ret_place: None,
        });
        self.push_scope();
        // Type parameters fixed to a class of the file first: a kernel parameter of that type
        // (`Op op`) is then an object of the class, whose `operator()` can be inlined.
        if let (Some(tp), Some(f)) = (def.template_params, self.fixed_instantiation(&name)) {
            let classes: Vec<Option<String>> = f.iter().map(|a| self.class_of(a)).collect();
            self.bind_type_params(tp, &classes, false);
            self.note_launch_lambdas(tp, &f);
        }
        // Parameters.
        let params = def
            .node
            .child_by_field_name("declarator")
            .and_then(function_declarator)
            .and_then(|f| f.child_by_field_name("parameters"));
        if let Some(params) = params {
            let mut c = params.walk();
            let list: Vec<Node> = params
                .named_children(&mut c)
                .filter(|p| p.kind().contains("parameter_declaration"))
                .collect();
            for p in list {
                self.kernel_param(p);
            }
        }
        // Template parameters: uniform symbols, fixed by a unique instantiation.
        if let Some(tp) = def.template_params {
            let texts = self.fixed_instantiation(&name).unwrap_or_default();
            self.note_type_params(tp, &texts);
            let fixed = self.fixed_instantiation(&name);
            for (i, p, nm) in crate::collect::value_template_params(tp) {
                let pname = self.text(nm);
                let ty = self.scalar_type_of(
                    &p.child_by_field_name("type")
                        .map(|t| self.text(t))
                        .unwrap_or_default(),
                );
                let value = fixed
                    .as_ref()
                    .and_then(|f| f.get(i))
                    .and_then(|a| crate::consteval::eval_text(a, self.tab, 0));
                let id = ParamId(self.k.params.len() as u32);
                let span = self.span(nm);
                self.k.params.push(Param {
                    name: pname.clone(),
                    ty,
                    span,
                    is_template: true,
                    template_index: Some(i as u32),
                    member: false,
                    value,
                });
                self.bind(&pname, Binding::Value(Expr::Param(id)));
            }
            // Type parameters fixed to a class of the file (cxx/type_params.rs).
            if let Some(f) = &fixed {
                let classes: Vec<Option<String>> = f.iter().map(|a| self.class_of(a)).collect();
                self.bind_type_params(tp, &classes, false);
            }
        }
        // `__launch_bounds__(T)` with a template parameter `T`: its value when the file fixes
        // it, else a bound in terms of the parameter.
        if let (None, Some(first)) = (
            self.k.launch_bounds,
            lb.and_then(|lb| lb.named_child(0))
                .filter(|n| n.kind() == "identifier"),
        ) {
            let name = self.text(first);
            let param = self
                .k
                .params
                .iter()
                .position(|p| p.is_template && p.name == name);
            if let Some(i) = param {
                match self.k.params[i].value {
                    Some(v) if v > 0 => self.k.launch_bounds = Some(v as u64),
                    Some(_) => {}
                    None => self.k.launch_bounds_param = Some(ParamId(i as u32)),
                }
            }
        }
        self.push_scope();
        self.block_items(body);
        self.pop_scope();
        self.pop_scope();
        self.frames.pop();
    }

    /// Pushes a kernel value of its own (not a template parameter): a parameter of the call,
    /// or a `member` of one (a struct parameter's `s.n`, a launched lambda's capture).
    pub(crate) fn push_value_param(
        &mut self,
        name: &str,
        ty: ScalarType,
        span: Span,
        member: bool,
    ) -> ParamId {
        let id = ParamId(self.k.params.len() as u32);
        self.k.params.push(Param {
            name: name.to_string(),
            ty,
            span,
            is_template: false,
            template_index: None,
            member,
            value: None,
        });
        id
    }

    fn kernel_param(&mut self, p: Node) {
        let Some(decl) = p.child_by_field_name("declarator") else {
            // An unnamed parameter still takes a position.
            self.push_value_param("", ScalarType::Other, self.span(p), false);
            return;
        };
        let Some(nm) = declarator_name(decl) else {
            return;
        };
        let name = self.text(nm);
        let span = self.span(nm);
        let ty_text = p
            .child_by_field_name("type")
            .map(|t| self.text(t))
            .unwrap_or_default();
        let shape = declarator_shape(decl);
        // A lambda the launch passes (cxx/launch_lambdas.rs).
        if matches!(shape, Shape::Scalar | Shape::Reference)
            && !self.launch_lambda_types.is_empty()
            && self.bind_launch_lambda(&name, &ty_text, span)
        {
            return;
        }
        let id = ParamId(self.k.params.len() as u32);
        // A parameter of a type the front end does not know, dereferenced as a pointer
        // (`(p + i)->f`): a pointer `typedef` from a missing header, whose elements are of an
        // unknown type.
        let untyped_pointer = shape == Shape::Scalar
            && self.scalar_type_of(&ty_text) == ScalarType::Other
            && self.class_of(&ty_text).is_none()
            && typenames::vector_type(&ty_text).is_none()
            && types::enum_values(self.tab, &ty_text).is_none()
            && self.dereferenced.contains(&name);
        let shape = if untyped_pointer {
            Shape::Pointer
        } else {
            shape
        };
        match shape {
            Shape::Pointer | Shape::Array => {
                self.push_value_param(&name, ScalarType::Pointer, span, false);
                // A vector type's array is one of components, seen through a pointer whose
                // elements are several cells (cxx/vectors.rs).
                let (elem, cell) = match typenames::vector_type(&ty_text) {
                    _ if untyped_pointer => (ScalarType::Other, None),
                    Some(v) if shape == Shape::Pointer => (v.comp, Some(v.comp_size)),
                    _ => (
                        typenames::scalar_type(&ty_text),
                        typenames::elem_size(&ty_text),
                    ),
                };
                let arr = self.new_array(
                    &name,
                    MemSpace::Global,
                    ArrayOrigin::Param(id.0),
                    elem,
                    cell,
                    vec![None],
                    span,
                );
                if let Some(class) = self.class_of(&ty_text) {
                    self.elem_classes.insert(arr, class);
                }
                let slot = self.new_slot(
                    (self.src.file, decl.start_byte()),
                    Base::Arr(arr),
                    Expr::Int(0),
                    if untyped_pointer {
                        None
                    } else {
                        typenames::elem_size(&ty_text)
                    },
                    &name,
                );
                if !untyped_pointer {
                    self.slots[slot].comp = typenames::comp_size(&ty_text);
                }
                let levels = pointer_levels(decl);
                if shape == Shape::Pointer && !untyped_pointer && levels >= 2 {
                    self.ptr_rows
                        .insert(arr, (id, ty_text.clone(), None, levels));
                }
                self.bind(&name, Binding::Ptr(slot));
            }
            Shape::Scalar
                if self.class_of(&ty_text).is_some()
                    && !self
                        .frames
                        .last()
                        .is_some_and(|f| f.addressed.contains(&name)) =>
            {
                // A struct passed by value: its members are uniform, its pointer members
                // arrays of their own.
                self.push_value_param(&name, ScalarType::Other, span, false);
                let class = self.class_of(&ty_text).unwrap_or_default();
                let key = (self.src.file, decl.start_byte());
                let targs = p
                    .child_by_field_name("type")
                    .map(|t| self.template_arg_values(t))
                    .unwrap_or_default();
                let o = self.new_object(&class, &name, key, objects::ObjInit::Param(id), span);
                o.targs.replace(targs);
                self.bind(&name, Binding::Object(o));
            }
            Shape::Scalar | Shape::Reference => {
                // A parameter of an enum type defined in the file takes its enumerators' values
                // (a kernel is not passed other values without a cast).
                let enum_values = match shape {
                    Shape::Scalar => types::enum_values(self.tab, &ty_text),
                    _ => None,
                };
                let ty = if shape == Shape::Reference {
                    ScalarType::Other
                } else if enum_values.is_some() {
                    ScalarType::INT
                } else {
                    self.scalar_type_of(&ty_text)
                };
                self.push_value_param(&name, ty, span, false);
                if ty == ScalarType::Other
                    && enum_values.is_none()
                    && typenames::vector_type(&ty_text).is_none()
                {
                    // A value of a type the front end does not model member by member (a
                    // class from a missing header, a template parameter) may hold pointers:
                    // the memory they reach is an array of its own, which only unmodelled
                    // code (a method call on it, a call it is passed to) touches. Without it,
                    // a kernel whose only memory is reached that way would have no array for
                    // such code to touch, and would be race-free.
                    self.new_array(
                        &name,
                        MemSpace::Global,
                        ArrayOrigin::Param(id.0),
                        ScalarType::Other,
                        None,
                        vec![None],
                        span,
                    );
                }
                if let Some(values) = enum_values {
                    let cond = types::one_of(&Expr::Param(id), values);
                    self.emit(Stmt::Assume { cond, span });
                }
                if self
                    .frames
                    .last()
                    .is_some_and(|f| f.assigned.contains(&name))
                {
                    // The kernel changes its copy of the parameter: a local starting at the value.
                    let l = self.new_local(&name, ty, span);
                    self.emit(Stmt::Assign {
                        local: l,
                        value: Expr::Param(id),
                        span,
                    });
                    self.bind(&name, Binding::Local(l));
                } else {
                    self.bind(&name, Binding::Value(Expr::Param(id)));
                }
            }
        }
    }

    /// Creates a pointer slot; it gets an offset local when the name is reassigned in the
    /// current function (or a previous pass found it reassigned).
    /// Records that `id` is accessed as `volatile` (see [`Kernel::volatile_arrays`]).
    pub fn mark_volatile(&mut self, id: ArrayId) {
        if !self.k.volatile_arrays.contains(&id) {
            self.k.volatile_arrays.push(id);
        }
    }

    pub fn new_slot(
        &mut self,
        key: SlotKey,
        base: Base,
        off: Expr,
        elem_size: Option<i64>,
        name: &str,
    ) -> usize {
        let hint = self.hints.get(&key).cloned();
        let base = match &hint {
            Some(h) => base.join(&h.base),
            None => base,
        };
        let reassigned = self
            .frames
            .last()
            .is_some_and(|f| f.assigned.contains(name))
            || hint.as_ref().is_some_and(|h| h.needs_local);
        let off_local = if reassigned || expr_has_local(&off) {
            let span = self
                .src
                .at
                .unwrap_or(Span::new(self.src.file, key.1, key.1));
            let l = self.new_local(
                &format!("{name}.offset"),
                ScalarType::Int {
                    bits: 64,
                    signed: true,
                },
                span,
            );
            self.emit(Stmt::Assign {
                local: l,
                value: off.clone(),
                span,
            });
            Some(l)
        } else {
            None
        };
        self.slots.push(PtrSlot {
            key,
            base,
            off_expr: off,
            off_local,
            elem_size,
            comp: None,
            used: false,
            inner: vec![],
        });
        self.slots.len() - 1
    }

    fn finish(mut self) -> Kernel {
        self.rows_written();
        // Code the front end does not see that may touch any array (a lambda or a function of
        // the file handed to it) may touch the file's writable globals too, also those the
        // kernel itself never names (`repeat(n, bump)` with `bump` writing a `__device__`
        // array).
        if has_all_arrays(&self.out) {
            let mut names: Vec<String> = self
                .tab
                .globals
                .iter()
                .filter(|(_, g)| g.space != GlobalSpace::Constant)
                .map(|(n, _)| n.clone())
                .collect();
            names.sort();
            for n in names {
                if !self.globals_bound.contains_key(&n) {
                    let g = self.tab.globals[&n];
                    let b = self.bind_global(&n, g);
                    self.globals_bound.insert(n, b);
                }
            }
        }
        let all: Vec<ArrayId> = (0..self.k.arrays.len() as u32).map(ArrayId).collect();
        fix_all_arrays(&mut self.out, &all);
        member_pointers::add_member_arrays(&mut self.out, &self.member_owners);
        // Unknown code may call a lambda that escaped (cxx/lambdas.rs), in a loop even before
        // the lambda is made.
        cxx::lambdas::add_escaped_locals(&mut self.out, &self.escaped_locals);
        // Pointers bumped once per iteration of a counted loop follow the counter.
        let offsets: HashSet<LocalId> = self.slots.iter().filter_map(|s| s.off_local).collect();
        let mut body = std::mem::take(&mut self.out);
        let span = self.k.span;
        cxx::pointer_bumps::tie_bumps(&mut body, &offsets, &mut |name, ty| {
            self.new_local(name, ty, span)
        });
        self.out = body;
        if refers_to_undeclared_array(&self.out, all.len()) {
            // Defensive: an IR naming an array that does not exist would crash the checker.
            self.set_unsupported("internal inconsistency in the front end's pointer analysis");
        }
        self.k.body = std::mem::take(&mut self.out);
        // A counter changed by another atomic (a reset with `atomicExch`, steps of both signs)
        // hands out values that may repeat: those are not tickets.
        for (u, array) in std::mem::take(&mut self.tickets) {
            let signs = self.atomic_signs.get(&array);
            let one_sign = signs.is_some_and(|v| {
                v.iter().all(|s| s.is_some()) && v.windows(2).all(|w| w[0] == w[1])
            });
            if !one_sign {
                if let Some(uv) = self.k.unknowns.get_mut(u.0 as usize) {
                    uv.distinct = None;
                }
            }
        }
        for (name, lib) in self.fallback_classes.take() {
            self.k.library_notes.push(format!(
                "`{name}` is the library's fallback definition (`{lib}`): the file and its includes do not define it"
            ));
        }
        for e in &self.tab.library_errors {
            self.k.library_notes.push(e.clone());
        }
        for (name, lib) in std::mem::take(&mut self.fallback_macros) {
            self.k.library_notes.push(format!(
                "`{name}` was expanded from the library's fallback definition (`{lib}`): the file and its includes do not define it"
            ));
        }
        if let Some(r) = self.unsupported.take() {
            self.k.unsupported = Some(r);
        }
        self.k
    }
}

fn refers_to_undeclared_array(b: &Block, n: usize) -> bool {
    b.iter().any(|s| match s {
        Stmt::Access(a) => a.array.0 as usize >= n,
        Stmt::Opaque(o) => o.arrays.iter().any(|a| a.0 as usize >= n),
        Stmt::If {
            then_branch,
            else_branch,
            ..
        } => {
            refers_to_undeclared_array(then_branch, n) || refers_to_undeclared_array(else_branch, n)
        }
        Stmt::Loop(l) => [&l.init, &l.cond_effects, &l.step, &l.body]
            .iter()
            .any(|b| refers_to_undeclared_array(b, n)),
        _ => false,
    })
}

/// Does an opaque effect in `b` touch every array ([`ALL_ARRAYS`])?
fn has_all_arrays(b: &Block) -> bool {
    b.iter().any(|s| match s {
        Stmt::Opaque(o) => o.arrays.contains(&ALL_ARRAYS),
        Stmt::If {
            then_branch,
            else_branch,
            ..
        } => has_all_arrays(then_branch) || has_all_arrays(else_branch),
        Stmt::Loop(l) => [&l.init, &l.cond_effects, &l.step, &l.body]
            .into_iter()
            .any(has_all_arrays),
        _ => false,
    })
}

fn fix_all_arrays(b: &mut Block, all: &[ArrayId]) {
    for s in b.iter_mut() {
        match s {
            Stmt::Opaque(o) if o.arrays.contains(&ALL_ARRAYS) => o.arrays = all.to_vec(),
            Stmt::If {
                then_branch,
                else_branch,
                ..
            } => {
                fix_all_arrays(then_branch, all);
                fix_all_arrays(else_branch, all);
            }
            Stmt::Loop(l) => {
                fix_all_arrays(&mut l.init, all);
                fix_all_arrays(&mut l.cond_effects, all);
                fix_all_arrays(&mut l.step, all);
                fix_all_arrays(&mut l.body, all);
            }
            _ => {}
        }
    }
}

/// Names that are assigned (`x = …`, `x += …`, `x++`) anywhere in a function body.
pub(crate) fn assigned_names(body: Node, text: &str) -> HashSet<String> {
    let mut out = HashSet::new();
    let mut stack = vec![body];
    let mut count = 0u32;
    while let Some(n) = stack.pop() {
        count += 1;
        if count > 1_000_000 {
            break;
        }
        if let Some(names) = in_reparsed_comma(n, text, assigned_names) {
            out.extend(names);
            continue;
        }
        match n.kind() {
            "assignment_expression" => {
                if let Some(l) = n.child_by_field_name("left") {
                    if l.kind() == "identifier" {
                        out.insert(node_text(l, text).to_string());
                    }
                }
            }
            "update_expression" => {
                if let Some(l) = n.child_by_field_name("argument") {
                    if l.kind() == "identifier" {
                        out.insert(node_text(l, text).to_string());
                    }
                }
            }
            // `&x` passed somewhere may be written through: treat as assigned.
            "pointer_expression" => {
                if let (Some(op), Some(a)) = (
                    n.child_by_field_name("operator"),
                    n.child_by_field_name("argument"),
                ) {
                    if node_text(op, text) == "&" && a.kind() == "identifier" {
                        out.insert(node_text(a, text).to_string());
                    }
                }
            }
            _ => {}
        }
        let mut c = n.walk();
        for ch in n.named_children(&mut c) {
            stack.push(ch);
        }
    }
    out
}

/// `names` of a broken `(f = e, r)` taken from its re-parse (commas.rs), as the lowering sees it.
fn in_reparsed_comma(
    n: Node,
    text: &str,
    names: fn(Node, &str) -> HashSet<String>,
) -> Option<HashSet<String>> {
    if n.kind() != "parenthesized_expression" || !n.has_error() {
        return None;
    }
    let tree = crate::commas::reparse(n, text)?;
    let comma = crate::commas::comma_node(&tree, n, text)?;
    Some(names(comma, text))
}

/// Names whose address is taken (`&x`) anywhere in a function body.
/// Identifiers dereferenced as pointers in `body`: `p->f`, `*p`, and `p + i` (or `i + p`, `p -
/// i`, parenthesized) under `->` or unary `*`. Not `p[i]`, which an accessor class with an
/// `operator[]` also allows.
pub(crate) fn dereferenced_names(body: Node, text: &str) -> HashSet<String> {
    fn pointer_operands(n: Node, text: &str, out: &mut HashSet<String>, depth: u32) {
        if depth > 8 {
            return;
        }
        match n.kind() {
            "identifier" => {
                out.insert(node_text(n, text).to_string());
            }
            "parenthesized_expression" => {
                if let Some(inner) = n.named_child(0) {
                    pointer_operands(inner, text, out, depth + 1);
                }
            }
            "binary_expression" => {
                let op = n
                    .child_by_field_name("operator")
                    .map(|o| node_text(o, text))
                    .unwrap_or_default();
                if op == "+" || op == "-" {
                    if let Some(l) = n.child_by_field_name("left") {
                        pointer_operands(l, text, out, depth + 1);
                    }
                    if op == "+" {
                        if let Some(r) = n.child_by_field_name("right") {
                            pointer_operands(r, text, out, depth + 1);
                        }
                    }
                }
            }
            _ => {}
        }
    }
    let mut out = HashSet::new();
    let mut stack = vec![body];
    let mut count = 0u32;
    while let Some(n) = stack.pop() {
        count += 1;
        if count > 1_000_000 {
            break;
        }
        let operand = match n.kind() {
            "field_expression" => n
                .child_by_field_name("operator")
                .filter(|o| node_text(*o, text) == "->")
                .and_then(|_| n.child_by_field_name("argument")),
            "pointer_expression" => n
                .child_by_field_name("operator")
                .filter(|o| node_text(*o, text) == "*")
                .and_then(|_| n.child_by_field_name("argument")),
            _ => None,
        };
        if let Some(a) = operand {
            pointer_operands(a, text, &mut out, 0);
        }
        let mut c = n.walk();
        for ch in n.named_children(&mut c) {
            stack.push(ch);
        }
    }
    out
}

pub(crate) fn addressed_names(body: Node, text: &str) -> HashSet<String> {
    let mut out = HashSet::new();
    let mut stack = vec![body];
    let mut count = 0u32;
    while let Some(n) = stack.pop() {
        count += 1;
        if count > 1_000_000 {
            break;
        }
        if let Some(names) = in_reparsed_comma(n, text, addressed_names) {
            out.extend(names);
            continue;
        }
        if n.kind() == "pointer_expression" {
            if let (Some(op), Some(a)) = (
                n.child_by_field_name("operator"),
                n.child_by_field_name("argument"),
            ) {
                if node_text(op, text) == "&" && a.kind() == "identifier" {
                    out.insert(node_text(a, text).to_string());
                }
            }
        }
        let mut c = n.walk();
        for ch in n.named_children(&mut c) {
            stack.push(ch);
        }
    }
    out
}

pub(crate) fn expr_has_local(e: &Expr) -> bool {
    match e {
        Expr::Local(_) => true,
        Expr::Unary(_, a) | Expr::Cast(_, a) => expr_has_local(a),
        Expr::Binary(_, a, b) => expr_has_local(a) || expr_has_local(b),
        Expr::Ite(c, a, b) => expr_has_local(c) || expr_has_local(a) || expr_has_local(b),
        _ => false,
    }
}

pub(crate) fn expr_has_unknown(e: &Expr) -> bool {
    match e {
        Expr::Unknown(_) | Expr::Load(_) | Expr::Local(_) | Expr::Float(_) => true,
        Expr::Unary(_, a) | Expr::Cast(_, a) => expr_has_unknown(a),
        Expr::Binary(_, a, b) => expr_has_unknown(a) || expr_has_unknown(b),
        Expr::Ite(c, a, b) => expr_has_unknown(c) || expr_has_unknown(a) || expr_has_unknown(b),
        _ => false,
    }
}

/// Constant folding of integer arithmetic (keeps the shape otherwise).
pub(crate) fn fold(e: &Expr) -> Expr {
    match e {
        Expr::Binary(op, a, b) => {
            let a = fold(a);
            let b = fold(b);
            if let (Expr::Int(x), Expr::Int(y)) = (&a, &b) {
                if let Some(v) = crate::consteval::binop(op.symbol(), *x, *y) {
                    return Expr::Int(v);
                }
            }
            match (op, &a, &b) {
                (BinOp::Add, Expr::Int(0), _) => b,
                (BinOp::Add | BinOp::Sub, _, Expr::Int(0)) => a,
                (BinOp::Mul, Expr::Int(1), _) => b,
                (BinOp::Mul | BinOp::Div, _, Expr::Int(1)) => a,
                _ => Expr::bin(*op, a, b),
            }
        }
        Expr::Unary(op, a) => {
            let a = fold(a);
            match (op, &a) {
                (UnOp::Neg, Expr::Int(x)) => Expr::Int(x.wrapping_neg()),
                (UnOp::BitNot, Expr::Int(x)) => Expr::Int(!x),
                (UnOp::Not, Expr::Int(x)) => Expr::Bool(*x == 0),
                _ => Expr::un(*op, a),
            }
        }
        Expr::Cast(t, a) => {
            let a = fold(a);
            match (t, &a) {
                (ScalarType::Int { .. }, Expr::Int(_)) => a,
                _ => Expr::Cast(*t, Box::new(a)),
            }
        }
        other => other.clone(),
    }
}

pub(crate) fn qualifiers_of(n: Node, text: &str) -> Vec<String> {
    qualifiers(n, text)
}

/// `xs` without repetitions, in first-seen order.
fn distinct<T: PartialEq>(xs: Vec<T>) -> Vec<T> {
    let mut out: Vec<T> = Vec::with_capacity(xs.len());
    for x in xs {
        if !out.contains(&x) {
            out.push(x);
        }
    }
    out
}
