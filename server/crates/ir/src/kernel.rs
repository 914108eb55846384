//! The kernel IR.
//!
//! Conventions the front end guarantees and the checker relies on:
//! - Every read or write of shared or global memory is a [`Stmt::Access`], emitted in C evaluation
//!   order (operands before the store; `a[i] += x` is a read then a write of the same cell).
//! - A value read from memory appears in later expressions as [`Expr::Load`] of that access.
//! - Locals are assigned with [`Stmt::Assign`]; the checker tracks their symbolic values.
//! - Pointer aliases are resolved: an access through `float *row = &tile[ty][0]` is an access to
//!   `tile` whose `index` is the flat element offset (see [`Access::flat`]).
//! - Nothing is dropped silently: an unmodelled value is [`Expr::Unknown`], an unmodelled statement
//!   is [`Stmt::Opaque`] (with the arrays it may touch and the locals it may change).

use crate::span::{FileId, Span};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::sync::Arc;

/// Everything the front end learnt from one file.
#[derive(Debug, Clone, Default)]
pub struct FileIr {
    /// File 0 is the checked file; included files follow.
    pub files: Vec<SourceFile>,
    pub kernels: Vec<Kernel>,
    /// Syntax errors anywhere in the file (also outside kernels), for reporting.
    pub syntax_errors: Vec<SyntaxError>,
    /// `<<<grid, block>>>` launch sites found in the file.
    pub launch_sites: Vec<LaunchSite>,
    /// File-level launch configuration from GPUVerify-style header lines (`//--blockDim=[16,16] --gridDim=64`).
    pub header_launch: LaunchConfig,
}

#[derive(Debug, Clone)]
pub struct SourceFile {
    pub path: Option<PathBuf>,
    pub text: Arc<str>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyntaxError {
    pub span: Span,
    pub message: String,
}

/// A launch configuration; `None` means "not fixed, symbolic".
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct LaunchConfig {
    pub block_dim: [Option<u64>; 3],
    pub grid_dim: [Option<u64>; 3],
}

impl LaunchConfig {
    pub fn is_empty(&self) -> bool {
        self.block_dim
            .iter()
            .chain(self.grid_dim.iter())
            .all(|d| d.is_none())
    }
}

/// A `kernel<<<grid, block>>>(...)` launch in the same file. `None` where a size is not a constant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LaunchSite {
    pub kernel: String,
    pub span: Span,
    pub grid_dim: Option<[u64; 3]>,
    pub block_dim: Option<[u64; 3]>,
    /// The call's arguments in order, where the front end knows their value in terms of
    /// constants and the launch sizes (`None`: anything).
    pub args: Vec<Option<SiteValue>>,
    /// Explicit template arguments (`k<256><<<…>>>`), in order; `None` for a type or an unknown
    /// value.
    pub template_args: Vec<Option<SiteValue>>,
    /// Each grid dimension in terms of the call's arguments ([`SiteValue::Arg`]), when the grid
    /// is computed from values the call also passes (`None`: no such relation).
    pub grid_relations: [Option<SiteValue>; 3],
    /// Each block dimension in terms of the call's arguments (`k<<<rows, n / 4>>>(out, n)`).
    pub block_relations: [Option<SiteValue>; 3],
    /// When [`LaunchSite::grid_dim`] is not one constant: the values each dimension may have at
    /// the launch (`int by; if (c) by = 4; else by = 8; dim3 b(32, by)` gives `[32], [4, 8],
    /// [1]`); a dimension the site does not fix is `[ANY_SIZE]` (`dim3 g(rows(), n, 1)` gives
    /// `[ANY_SIZE], [ANY_SIZE], [1]`).
    pub grid_values: Option<[Vec<u64>; 3]>,
    /// Likewise for [`LaunchSite::block_dim`].
    pub block_values: Option<[Vec<u64>; 3]>,
    /// The definitions of the kernel's name the site can launch, when the name has explicit
    /// specializations (`k<half><<<…>>>` launches `template <> __global__ void k(half *…)`
    /// only); `None`: any definition of the name.
    pub definitions: Option<Vec<Span>>,
    /// Conditions that hold whenever the launch runs (the conditions of the `if`s around it), in
    /// terms of the call's arguments ([`SiteValue::Arg`]; non-zero is true). Only conditions
    /// written exactly in those terms; any other is left out.
    pub conditions: Vec<SiteValue>,
}

/// In [`LaunchSite::grid_values`] and [`LaunchSite::block_values`]: a size the launch site does
/// not fix (sizes are positive, so no real size is 0).
pub const ANY_SIZE: u64 = 0;

/// The value of a launch argument: a constant, a launch size, or a product of those
/// (`k<<<g, b>>>(y, n, g * b)` passes `gridDim.x * blockDim.x`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum SiteValue {
    Int(i64),
    GridDim(Dim),
    BlockDim(Dim),
    Mul(Box<SiteValue>, Box<SiteValue>),
    /// The launch call's argument at this position: a grid size written in terms of what the
    /// call passes (`dim3 grid(DIVUP(n, 64)); k<<<grid, 64>>>(x, n)`).
    Arg(u32),
    /// `a op b` for `+ - * / %`, comparisons and `&&`, `||` (0 or 1).
    Op(BinOp, Box<SiteValue>, Box<SiteValue>),
    /// `c ? a : b`.
    Select(Box<SiteValue>, Box<SiteValue>, Box<SiteValue>),
}

/// One `__global__` function, with `__device__` calls inlined.
#[derive(Debug, Clone)]
pub struct Kernel {
    pub name: String,
    /// The whole definition.
    pub span: Span,
    /// The name in the declarator (where editors show kernel-level hints).
    pub name_span: Span,
    pub params: Vec<Param>,
    pub arrays: Vec<Array>,
    pub locals: Vec<Local>,
    /// Table of unknown values referenced by [`Expr::Unknown`].
    pub unknowns: Vec<UnknownValue>,
    pub body: Block,
    /// `__launch_bounds__(N)`: the block has at most N threads.
    pub launch_bounds: Option<u64>,
    /// `__launch_bounds__(T)` with a template parameter `T` the file does not fix: the block
    /// has at most `T` threads, whatever `T` is (a launch with more threads fails).
    pub launch_bounds_param: Option<ParamId>,
    /// A `// cudarace: blockDim=(32,8) gridDim=(64)` annotation above the kernel.
    pub annotated_launch: LaunchConfig,
    /// Set when the front end cannot model the kernel at all (e.g. recursion); the checker then
    /// reports the kernel `unsupported` with this reason and checks nothing.
    pub unsupported: Option<String>,
    /// Arrays declared `volatile` or accessed through a `volatile` pointer (`volatile float *vs =
    /// sdata`): the mark of legacy warp-synchronous code.
    pub volatile_arrays: Vec<ArrayId>,
    /// Library knowledge the kernel relied on that the user should know about (fallback
    /// definitions of framework macros whose header is missing).
    pub library_notes: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ParamId(pub u32);
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ArrayId(pub u32);
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LocalId(pub u32);
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct UnknownId(pub u32);
/// Unique per kernel; accesses are numbered in the order they were emitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AccessId(pub u32);

/// A scalar kernel parameter or a non-type template parameter: a uniform, symbolic value
/// (unless `value` is fixed by an explicit instantiation). Pointer parameters are arrays instead
/// (see [`Array::origin`]) and also appear here with `ty = Pointer` so that names and order are kept.
#[derive(Debug, Clone)]
pub struct Param {
    pub name: String,
    pub ty: ScalarType,
    pub span: Span,
    pub is_template: bool,
    /// A template parameter's position in the template's parameter list (type parameters
    /// included), so that `k<float, 256>` binds the right one.
    pub template_index: Option<u32>,
    /// Fixed value (explicit template instantiation, or a `const` param bound by a macro).
    pub value: Option<i64>,
    /// A member of a by-value class parameter (`s.n`) or a value a launched lambda captured:
    /// a value of its own, but not a call argument (launch sites bind arguments by position).
    pub member: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ScalarType {
    Int {
        bits: u8,
        signed: bool,
    },
    Bool,
    Float,
    Pointer,
    /// Anything else (structs, vectors, …): values of it are unknown.
    Other,
}

impl ScalarType {
    pub const INT: ScalarType = ScalarType::Int {
        bits: 32,
        signed: true,
    };
    pub const UINT: ScalarType = ScalarType::Int {
        bits: 32,
        signed: false,
    };
    pub const SIZE_T: ScalarType = ScalarType::Int {
        bits: 64,
        signed: false,
    };
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum MemSpace {
    /// `__shared__` / `extern __shared__`: one copy per block.
    Shared,
    /// Pointer parameters and `__device__` globals: one copy for the whole grid.
    Global,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ArrayOrigin {
    Param(u32),
    SharedDecl,
    ExternShared,
    DeviceGlobal,
}

/// A memory region accesses can race on. A `__shared__ int x;` scalar is an array with no dims.
#[derive(Debug, Clone)]
pub struct Array {
    pub name: String,
    pub space: MemSpace,
    pub origin: ArrayOrigin,
    pub elem: ScalarType,
    /// Sizes per dimension, outermost first; `None` where unknown (pointers, `extern` arrays).
    pub dims: Vec<Option<Expr>>,
    pub span: Span,
}

#[derive(Debug, Clone)]
pub struct Local {
    pub name: String,
    pub ty: ScalarType,
    pub span: Span,
}

/// An unmodelled value. `uniform` is true only when the front end knows every thread of a block
/// gets the same value (e.g. an opaque call on uniform arguments without memory arguments).
#[derive(Debug, Clone)]
pub struct UnknownValue {
    pub reason: String,
    pub span: Span,
    pub uniform: bool,
    /// The same in every thread of the grid, not only of a block (a choice the compiler makes,
    /// such as which overload a call picks); implies `uniform`.
    pub grid: bool,
    /// Known to differ from other values (atomic tickets); `None` for most unknowns.
    pub distinct: Option<Distinct>,
}

/// What an unknown value is known to differ from.
#[derive(Debug, Clone, PartialEq)]
pub enum Distinct {
    /// The old value of an atomic counter increment (`atomicAdd(&count, 1)`): it differs from
    /// every other ticket taken from the same cell, in any thread, at any call site or loop
    /// iteration. `counter` is the atomic access on the counter; the front end makes a value a
    /// ticket only when every atomic on that array in the kernel takes tickets of one sign.
    Ticket { counter: AccessId },
    /// Differs between any two threads (a library function returning a per-thread id).
    PerThread,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Dim {
    X,
    Y,
    Z,
}

impl Dim {
    pub const ALL: [Dim; 3] = [Dim::X, Dim::Y, Dim::Z];
    pub fn index(self) -> usize {
        self as usize
    }
    pub fn name(self) -> &'static str {
        ["x", "y", "z"][self as usize]
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Builtin {
    ThreadIdx(Dim),
    BlockIdx(Dim),
    BlockDim(Dim),
    GridDim(Dim),
    /// `warpSize` (32 on every current GPU; the checker may treat it as the constant 32).
    WarpSize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum UnOp {
    Neg,
    /// `!`
    Not,
    /// `~`
    BitNot,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    /// C division: truncates toward zero.
    Div,
    /// C remainder: sign of the dividend.
    Rem,
    Shl,
    Shr,
    BitAnd,
    BitOr,
    BitXor,
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
    /// `&&` (the front end emits accesses in the right operand unconditionally only if they
    /// cannot be skipped; otherwise it lowers short-circuits to [`Stmt::If`]).
    And,
    Or,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    Int(i64),
    Bool(bool),
    /// A floating-point literal; the checker treats float values as unknown data.
    Float(f64),
    Builtin(Builtin),
    Param(ParamId),
    Local(LocalId),
    /// The value read by an earlier [`Stmt::Access`] with [`AccessMode::Read`] (or an atomic's old value).
    Load(AccessId),
    Unknown(UnknownId),
    Unary(UnOp, Box<Expr>),
    Binary(BinOp, Box<Expr>, Box<Expr>),
    /// `c ? a : b`
    Ite(Box<Expr>, Box<Expr>, Box<Expr>),
    Cast(ScalarType, Box<Expr>),
}

impl BinOp {
    /// The C operator (`+`, `<<`, `&&`, …).
    pub fn symbol(self) -> &'static str {
        match self {
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::Rem => "%",
            BinOp::Shl => "<<",
            BinOp::Shr => ">>",
            BinOp::BitAnd => "&",
            BinOp::BitOr => "|",
            BinOp::BitXor => "^",
            BinOp::Lt => "<",
            BinOp::Le => "<=",
            BinOp::Gt => ">",
            BinOp::Ge => ">=",
            BinOp::Eq => "==",
            BinOp::Ne => "!=",
            BinOp::And => "&&",
            BinOp::Or => "||",
        }
    }
}

impl Expr {
    pub fn bin(op: BinOp, a: Expr, b: Expr) -> Expr {
        Expr::Binary(op, Box::new(a), Box::new(b))
    }
    pub fn un(op: UnOp, a: Expr) -> Expr {
        Expr::Unary(op, Box::new(a))
    }
    pub fn ite(c: Expr, a: Expr, b: Expr) -> Expr {
        Expr::Ite(Box::new(c), Box::new(a), Box::new(b))
    }
}

pub type Block = Vec<Stmt>;

/// Adds to `out` every local the block may change: assigned anywhere in it (branches and
/// nested loops included) or handed to unmodelled code that may write it.
pub fn assigned_locals(b: &[Stmt], out: &mut std::collections::BTreeSet<LocalId>) {
    for s in b {
        match s {
            Stmt::Assign { local, .. } => {
                out.insert(*local);
            }
            Stmt::If {
                then_branch,
                else_branch,
                ..
            } => {
                assigned_locals(then_branch, out);
                assigned_locals(else_branch, out);
            }
            Stmt::Loop(l) => {
                for blk in [&l.init, &l.cond_effects, &l.body, &l.step] {
                    assigned_locals(blk, out);
                }
            }
            Stmt::Opaque(o) => out.extend(o.locals.iter().copied()),
            _ => {}
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Stmt {
    /// `local = value` (declarations with an initializer, assignments, `++`, compound assignments).
    /// A declaration without initializer assigns an [`Expr::Unknown`].
    Assign {
        local: LocalId,
        value: Expr,
        span: Span,
    },
    Access(Access),
    Barrier(Barrier),
    If {
        cond: Expr,
        then_branch: Block,
        else_branch: Block,
        span: Span,
    },
    Loop(Loop),
    /// `return` (from the kernel; returns of inlined device functions are lowered away).
    Return {
        span: Span,
    },
    Break {
        span: Span,
    },
    Continue {
        span: Span,
    },
    /// An effect the front end could not model (ERROR node, call without a body, asm, …).
    Opaque(Opaque),
    /// `__requires(e)`, `__assume(e)`, `assert(e)`: the program continues only where `cond`
    /// holds. The checker constrains every thread's path after this point with it (a guard on
    /// what follows, for both threads of a pair); the interpreter calls a run where it fails
    /// inconclusive.
    Assume {
        cond: Expr,
        span: Span,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum AccessMode {
    Read,
    Write,
    /// An atomic read-modify-write (`atomicAdd`, `atomicCAS`, …). Atomics do not race with atomics.
    Atomic,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Access {
    pub id: AccessId,
    pub array: ArrayId,
    pub mode: AccessMode,
    /// One index per array dimension, outermost first; or, when `flat`, one flat element offset.
    /// A scalar `__shared__` variable has an empty index.
    pub index: Vec<Expr>,
    pub flat: bool,
    /// For writes: the stored value when the front end knows it (used to say "both threads store
    /// the same constant"); `None` when unknown.
    pub value: Option<Expr>,
    /// The access expression in the source (e.g. `s[tid + 1]`).
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq)]
pub enum BarrierKind {
    /// `__syncthreads()`, `__syncthreads_count/and/or`, `this_thread_block().sync()`.
    Block,
    /// `__syncwarp(mask)`; `mask` is `None` for the full mask.
    Warp { mask: Option<Expr> },
    /// `this_grid().sync()`.
    Grid,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Barrier {
    pub kind: BarrierKind,
    pub span: Span,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LoopKind {
    For,
    While,
    DoWhile,
}

/// A C loop kept in its source shape: `init; while (cond) { body; step }` (`do` loops run the
/// body before the first test). The checker recognizes inductions (`i = a; i < b; i += c`,
/// `s *= 2`, `s >>= 1`, …) from `init`, `cond` and `step`; the front end does not normalize.
#[derive(Debug, Clone, PartialEq)]
pub struct Loop {
    pub kind: LoopKind,
    pub init: Block,
    /// `None` for `for (;;)`.
    pub cond: Option<Expr>,
    /// Statements that evaluate the condition (accesses in it), run before every test.
    pub cond_effects: Block,
    pub step: Block,
    pub body: Block,
    pub span: Span,
}

impl Loop {
    /// `for (counter = 0; counter < bound; counter++) body`: how the front end spells an effect
    /// on a range of cells (a library call's range, the cells of a vector element).
    pub fn counting(counter: LocalId, bound: Expr, body: Block, span: Span) -> Loop {
        Loop {
            kind: LoopKind::For,
            init: vec![Stmt::Assign {
                local: counter,
                value: Expr::Int(0),
                span,
            }],
            cond: Some(Expr::bin(BinOp::Lt, Expr::Local(counter), bound)),
            cond_effects: vec![],
            step: vec![Stmt::Assign {
                local: counter,
                value: Expr::bin(BinOp::Add, Expr::Local(counter), Expr::Int(1)),
                span,
            }],
            body,
            span,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Opaque {
    pub reason: String,
    pub span: Span,
    /// Arrays the effect may read or write (their verdicts become unknown).
    pub arrays: Vec<ArrayId>,
    /// Locals the effect may change (they become unknown after it).
    pub locals: Vec<LocalId>,
    /// True when the unmodelled code might contain a barrier or an early exit.
    pub may_sync: bool,
    /// True when the unmodelled code starts threads of its own (a kernel launched from device
    /// code): they may race with this kernel's threads even when it has only one.
    pub starts_threads: bool,
    /// True when the unmodelled code only reads the arrays (a load through a pointer whose
    /// target is not known): a read races only with a write, so an array that nothing in the
    /// kernel writes keeps its verdict.
    pub reads_only: bool,
}

impl Kernel {
    /// The kernel's name without the template arguments of an instance (`k` for `k<T, Op>`,
    /// see the front end's instances): what launch sites and `--kernel` name.
    pub fn base_name(&self) -> &str {
        self.name.split('<').next().unwrap_or(&self.name)
    }

    pub fn array(&self, id: ArrayId) -> &Array {
        &self.arrays[id.0 as usize]
    }
    pub fn local(&self, id: LocalId) -> &Local {
        &self.locals[id.0 as usize]
    }
    pub fn param(&self, id: ParamId) -> &Param {
        &self.params[id.0 as usize]
    }
    pub fn unknown(&self, id: UnknownId) -> &UnknownValue {
        &self.unknowns[id.0 as usize]
    }
}

impl FileIr {
    pub fn main_file(&self) -> FileId {
        FileId(0)
    }
}
