//! Plausibility assumptions: what any reader of a kernel takes for granted about its arguments
//! and launch, each named and each switchable off (`[assumptions]` in `cudarace.toml`).
//!
//! They never hide a race. The solver looks for a witness that satisfies them first; a race
//! whose every witness breaks one of them is still reported, but *conditional*, with the
//! condition it needs in words (`only if ldc < 1`). So a definite finding is one that happens
//! with sizes, strides and indices a CUDA programmer would pass.
//!
//! - `positive-sizes`: an integer parameter (also through a local assigned once: `int w =
//!   width;`, an integer member `s.w` of a by-value struct parameter) used as a stride, leading
//!   dimension, step or divisor (multiplied into an index, added to a loop counter in its step,
//!   dividing) is at least 1; one compared with an index or a loop counter (a size, a bound),
//!   or added to a thread's index (`threadIdx.x + start`: where the threads' range begins), is
//!   at least 0.
//! - `non-negative-indices`: the cell of a kernel's pointer parameter that two threads meet on
//!   has non-negative coordinates (the pointer is the start of the buffer), each below 2^31 (an
//!   `int` index reaching past it overflowed, which is undefined behaviour).
//! - `shared-in-bounds`: the cell of a `__shared__` (or `__device__`) array with a declared size
//!   is inside it;
//!   and a block fits the per-thread slots every thread fills before any may leave
//!   (`s[threadIdx.x] = …` with `s[32]`: `blockDim.x <= 32`; also `s[ty][tx]` of a 2-D tile
//!   handed to a helper, whose cells it reads row-major as `s[ty * 8 + tx]`) unless the
//!   launch fixes it. Also a block no wider than the tile whose halo a guarded last thread
//!   fills: under `if (threadIdx.x == 31)` a write `k` cells of `threadIdx.x` past a slot that
//!   another access gives each thread (`s[t]`, and `s[t + 1]` for thread 31) means
//!   `blockDim.x <= 32` (thread 32 would have the halo cell as its own slot); kept unless it
//!   contradicts `constant-block-shape`.
//! - `single-block-without-launch`: a kernel that never reads `blockIdx` or `gridDim` and that
//!   the file never launches is launched with one block (cross-block races need more); one that
//!   reads no thread index or block size, with one thread per block.
//! - `leading-dimensions`: in an index `row * 64 + threadIdx.x` or `row * ld + threadIdx.x` (or
//!   `blockIdx.y`) with no guard on the column, the block (grid) is no wider than the row: the
//!   kernel is written for that size, unless the launch fixes it. In an index `col + row * ld` where
//!   `col` is compared with a parameter `n` (`if (col < n)`, `if (col >= n) return`, also `n`
//!   moved by a constant: `if (col > n - 2)`)
//!   or is `x % n`, the leading dimension covers the row: `ld >= n` (a pitch is at least the row
//!   length it is the pitch of). The index may be built in a local first, and the leading
//!   dimension may count smaller units than the index (`row * ld / 32 + col`: `ld / 32 >= n`).
//!   Generalised to layouts `X * S + Y` ([`crate::layout`]): every digit of a mixed-radix index
//!   (`(j + s2) * d3 + (k + s3)`, flat or in Horner form, steps products of parameters) stays
//!   inside its step, bounded from the kernel (`s3 + l3 <= d3` for `k < l3`, `s3 >= 0`); a
//!   linearised thread id kept in a local (`i = tx * blockDim.x + ty` in `row * cells + i`) is
//!   such a digit, said of the two threads' own ids (`0 <= tx * blockDim.x + ty <= cells - 1`). A
//!   thread index, also one kept in a local (`int col = threadIdx.y; … row * fc + col`), is
//!   below its block size there unless a comparison that *guards* tests it (see
//!   [`guard_operands`]): `if (col < pad) y_pad = pad - col;` only chooses a value.
//! - `launch-shape-without-launch`: a kernel the file never launches is launched in the shape
//!   that its race's precondition names, when that precondition ties a shape parameter (a
//!   stride, step or divisor, not a mere bound) to the launch (`n == blockDim.x`,
//!   `step >= gridDim.x * blockDim.x`, `n % blockDim.x == 0`): the host that launches it is
//!   elsewhere (another file, Python) and sizes the launch from the same values. Not for a
//!   parameter the kernel compares a thread's position with ([`thread_bounds`]: `c <= width`
//!   with `c` the thread's column): a launch no wider than it leaves the kernel fewer threads
//!   than its guard expects.
//!   Unlike the others it is applied after the solve, to the precondition found (see
//!   [`Precondition::unless_launch`]).
//! - `constant-block-shape`: a kernel that walks an array by a block-stride loop whose step is a
//!   constant `C` instead of `blockDim.x` (`for (i = threadIdx.x; i < 1024; i += 64)`) is
//!   launched with blocks of exactly `C` threads in that dimension (`blockDim.x == 64`; the
//!   counter may start at any value equal to `threadIdx.x` once the locals assigned once are
//!   inlined and `(t / 16) * 16 + t % 16` is folded into `t`; a counter that starts at
//!   `threadIdx.x / D` walks in units of `D` threads, `for (row = tid / 32; …; row += 8)`
//!   gives blocks of `8 * 32`): fewer
//!   would leave cells to no thread, more would make threads collide. Not when the launch
//!   fixes the dimension, when the kernel reads that block size other than in
//!   `blockIdx.x * blockDim.x`, when two loops name different steps, or when `C` contradicts
//!   the kernel's other assumptions about the block (`s[threadIdx.x]` in `s[32]`) or its
//!   `__launch_bounds__`. `threadIdx.x % C` or `/ C` alone are not taken as a shape: a lane
//!   and a warp fit any multiple of `C`. A race that needs another block is conditional,
//!   `only if blockDim.x != 64`.
//! - `warp-sized-blocks`: a kernel that splits its threads into warps and lanes (`tid / 32`,
//!   `tid % 32`, `warpSize`) or synchronizes full warps (`__syncwarp()`) is launched with a
//!   whole number of warps per block (`blockDim.x % 32 == 0`, or the product of the block
//!   dimensions it reads), unless a launch fixes a dimension it reads. With a partial warp one
//!   hardware warp holds two of the kernel's warps, which diverge. A finding that needs a
//!   partial warp is conditional, `only if blockDim.x is not a multiple of 32`.
//!
//! Divergence queries take this one and every other assumption that names launch sizes and
//! parameters only (a constant block shape, sizes of at least 1, …): a barrier divergence that
//! needs one broken is conditional, as a race is.
//! - `one-to-one-thread-ids`: a thread id linearised with one block size as the radix of
//!   another dimension's index (`threadIdx.x * blockDim.x + threadIdx.y`) is one-to-one: that
//!   index stays below the radix (`blockDim.y <= blockDim.x`; square blocks keep it), unless a
//!   launch fixes either dimension. A race between two threads with one id is conditional,
//!   `only if blockDim.y > blockDim.x`.
//! - `whole-stretches`: a group of `S` lanes (`threadIdx.x % S`) that walks a stretch of `F`
//!   cells together in a loop holding a `__syncthreads()` (`end = pos + F; pos += lane; while
//!   (pos < end) { if (pos < n) …; __syncthreads(); pos += S; }`), guarding the data's own end
//!   inside, is written for stretches that are multiples of `S`: every lane then takes the
//!   barrier equally often. A divergence that needs another stretch is conditional, `only if
//!   F % S != 0` (see [`stretches`]).
//! - `divisible-sizes`: a size cut into packs of a constant `K` in an index (`(x * 32) % c`,
//!   `(x * 32) / c`, a row `ldb / 32` words long) is a whole number of packs: a race that needs
//!   `c % 32 != 0` is conditional (see [`divisible`]).

mod block_shape;
mod divisible;
mod leading;
mod stretches;

pub use block_shape::{
    constant_shape_assumption, constant_shape_candidates, fits_block_assumptions, halo_assumptions,
    one_to_one_thread_id_assumptions, shared_slot_assumptions, warp_multiple_assumption,
};
pub use divisible::divisible_size_assumptions;
pub(crate) use leading::guard_operands;
pub use leading::leading_dimension_assumptions;
pub use stretches::whole_stretch_assumptions;

use crate::encode::Encoder;
use crate::terms::*;
use cudarace_ir::{
    ArrayOrigin, BinOp, Block, Builtin, Expr, Kernel, LocalId, MemSpace, ParamId, ScalarType, Stmt,
};
use cudarace_solver::Term;
use std::collections::{BTreeMap, BTreeSet};

/// Which assumptions are made (all by default).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct AssumptionSwitches {
    pub positive_sizes: bool,
    pub non_negative_indices: bool,
    pub shared_in_bounds: bool,
    pub single_block_without_launch: bool,
    pub leading_dimensions: bool,
    pub launch_shape_without_launch: bool,
    pub constant_block_shape: bool,
    pub unread_block_dimensions: bool,
    pub warp_sized_blocks: bool,
    pub one_to_one_thread_ids: bool,
    pub whole_stretches: bool,
    pub divisible_sizes: bool,
}

impl Default for AssumptionSwitches {
    fn default() -> Self {
        AssumptionSwitches {
            positive_sizes: true,
            non_negative_indices: true,
            shared_in_bounds: true,
            single_block_without_launch: true,
            leading_dimensions: true,
            launch_shape_without_launch: true,
            constant_block_shape: true,
            unread_block_dimensions: true,
            warp_sized_blocks: true,
            one_to_one_thread_ids: true,
            whole_stretches: true,
            divisible_sizes: true,
        }
    }
}

impl AssumptionSwitches {
    pub const NONE: AssumptionSwitches = AssumptionSwitches {
        positive_sizes: false,
        non_negative_indices: false,
        shared_in_bounds: false,
        single_block_without_launch: false,
        leading_dimensions: false,
        launch_shape_without_launch: false,
        constant_block_shape: false,
        unread_block_dimensions: false,
        warp_sized_blocks: false,
        one_to_one_thread_ids: false,
        whole_stretches: false,
        divisible_sizes: false,
    };
}

/// One assumption of one query: the term (in the query's names) and what breaking it means, in
/// words, given the witness's values.
#[derive(Debug, Clone)]
pub struct Assumption {
    pub term: Term,
    pub broken: Broken,
}

#[derive(Debug, Clone)]
pub enum Broken {
    /// `param.NAME >= min`.
    Param { name: String, min: i64 },
    /// `param.LD / scale >= param.N`: a leading dimension below the row length it covers
    /// (`scale` > 1 when the index divides the product, as a leading dimension in bits does).
    LeadingDimension { ld: String, scale: i64, row: String },
    /// A digit of a layout `X * S + Y` outside its row step (see [`crate::layout`]): the
    /// condition in words (`l2 + s2 > d2`), and the parameters it names.
    Layout { text: String, subjects: Vec<String> },
    /// An index into a pointer parameter is negative.
    NegativeIndex { array: String },
    /// An index into a pointer parameter is past what an `int` holds.
    HugeIndex { array: String },
    /// An index into a shared array is outside its declared size.
    OutOfBounds { array: String, size: String },
    /// A block shape the kernel is not written for, in words (`blockDim.x > 32`,
    /// `blockDim.x != 64`): the launch sizes it names.
    BlockShape { text: String },
    /// More than one block.
    SeveralBlocks,
    /// More than one thread in the block.
    SeveralThreads,
    /// A block dimension the kernel never reads is above 1 (`blockDim.y`).
    UnreadDimension { dim: String },
}

impl Broken {
    /// "ldc < 1", "stride == 0", "the index into `y` is negative", …
    pub fn describe(&self, model: &BTreeMap<String, i64>) -> String {
        match self {
            Broken::Param { name, min } => {
                let value = model.get(&format!("param.{name}")).copied();
                match (min, value) {
                    (1, Some(0)) => format!("{name} == 0"),
                    (1, _) => format!("{name} < 1"),
                    (m, _) => format!("{name} < {m}"),
                }
            }
            // A launch size past the row it indexes: "blockDim.x > 16".
            Broken::LeadingDimension { ld, scale: 1, row }
                if row.starts_with("blockDim.") || row.starts_with("gridDim.") =>
            {
                format!("{row} > {ld}")
            }
            Broken::LeadingDimension { ld, scale: 1, row } => format!("{ld} < {row}"),
            Broken::LeadingDimension { ld, scale, row } => format!("{ld} / {scale} < {row}"),
            Broken::Layout { text, .. } => text.clone(),
            Broken::NegativeIndex { array } => format!("the index into `{array}` is negative"),
            Broken::HugeIndex { array } => {
                format!("the index into `{array}` is 2^31 or more")
            }
            Broken::OutOfBounds { array, size } => {
                format!("the index into `{array}` is outside its {size} elements")
            }
            Broken::BlockShape { text } => text.clone(),
            Broken::SeveralBlocks => "launched with more than one block".into(),
            Broken::SeveralThreads => "launched with more than one thread per block".into(),
            Broken::UnreadDimension { dim } => {
                let v = model.get(dim).copied().filter(|v| *v > 1);
                match v {
                    Some(v) => format!("launched with {dim} == {v}, which the kernel never reads"),
                    None => format!("launched with {dim} > 1, which the kernel never reads"),
                }
            }
        }
    }
}

/// What an integer parameter is used as.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Role {
    /// Compared with something (a size or a bound): at least 0.
    Bound,
    /// Added to a thread's index (`n = blockIdx.x * blockDim.x + threadIdx.x + start`): where
    /// the threads' range begins, at least 0.
    Offset,
    /// Multiplied into an index, a loop step, or a divisor: at least 1.
    Stride,
}

/// The roles of the kernel's integer parameters, from how the body uses them.
pub fn param_roles(kernel: &Kernel) -> BTreeMap<ParamId, Role> {
    let mut roles = BTreeMap::new();
    let is_int_param = |p: &ParamId| {
        kernel
            .params
            .get(p.0 as usize)
            .is_some_and(|p| p.value.is_none() && matches!(p.ty, ScalarType::Int { .. }))
    };
    let once = assigned_once(kernel);
    let mark = |e: &Expr, role: Role, roles: &mut BTreeMap<ParamId, Role>| {
        if let Some(p) = param_through_locals(e, &once) {
            let p = &p;
            if is_int_param(p) {
                let r = roles.entry(*p).or_insert(role);
                *r = (*r).max(role);
            }
        }
    };
    walk_block(&kernel.body, &mut |e, in_step| {
        let Expr::Binary(op, a, b) = e else { return };
        match op {
            BinOp::Div | BinOp::Rem => mark(b, Role::Stride, &mut roles),
            BinOp::Mul => {
                // A product of a parameter and a non-constant: a stride or a leading dimension.
                if !matches!(strip_casts(b), Expr::Int(_)) {
                    mark(a, Role::Stride, &mut roles);
                }
                if !matches!(strip_casts(a), Expr::Int(_)) {
                    mark(b, Role::Stride, &mut roles);
                }
            }
            BinOp::Add | BinOp::Sub if in_step => {
                mark(a, Role::Stride, &mut roles);
                mark(b, Role::Stride, &mut roles);
            }
            BinOp::Add => {
                if thread_index(b) {
                    mark(a, Role::Offset, &mut roles);
                }
                if thread_index(a) {
                    mark(b, Role::Offset, &mut roles);
                }
            }
            BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge => {
                mark(a, Role::Bound, &mut roles);
                mark(b, Role::Bound, &mut roles);
            }
            _ => {}
        }
    });
    roles
}

/// The parameter `e` is, also through locals assigned once (`once`): `int n = N;`, and every
/// integer member of a by-value struct parameter, which the front end binds to a local `s.n`
/// holding the member's own parameter.
fn param_through_locals(e: &Expr, once: &BTreeMap<LocalId, Expr>) -> Option<ParamId> {
    let mut e = strip_casts(e);
    for _ in 0..8 {
        match e {
            Expr::Param(p) => return Some(*p),
            Expr::Local(l) => e = strip_casts(once.get(l)?),
            _ => return None,
        }
    }
    None
}

/// The integer parameters a comparison in the kernel holds against a thread's position (`if (c
/// <= width)` with `c = blockIdx.x * blockDim.x + threadIdx.x`, through the locals assigned
/// once): bounds of the threads' range, whatever else they are. A launch no wider than such a
/// bound (`width >= gridDim.x * blockDim.x`) removes a race only by giving the kernel fewer
/// threads than the data it is written for, not by launching it in its shape (see
/// `launch-shape-without-launch`).
pub fn thread_bounds(kernel: &Kernel) -> BTreeSet<ParamId> {
    let once = assigned_once(kernel);
    fn positional(e: &Expr, once: &BTreeMap<LocalId, Expr>, depth: u32) -> bool {
        if depth > 8 {
            return false;
        }
        let mut found = false;
        walk_expr(
            e,
            &mut |x, _| match x {
                Expr::Builtin(
                    cudarace_ir::Builtin::ThreadIdx(_) | cudarace_ir::Builtin::BlockIdx(_),
                ) => found = true,
                Expr::Local(l) => {
                    if let Some(v) = once.get(l) {
                        found |= positional(v, once, depth + 1);
                    }
                }
                _ => {}
            },
            false,
        );
        found
    }
    let mut out = BTreeSet::new();
    walk_block(&kernel.body, &mut |e, _| {
        if let Expr::Binary(BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge, a, b) = e {
            for (x, y) in [(a, b), (b, a)] {
                if let Some(p) = param_through_locals(x, &once) {
                    if positional(y, &once, 0) {
                        out.insert(p);
                    }
                }
            }
        }
    });
    out
}

/// Whether `e` reads a thread or block index (it is a position in the threads' range).
fn thread_index(e: &Expr) -> bool {
    let mut found = false;
    walk_expr(
        e,
        &mut |x, _| {
            if matches!(
                x,
                Expr::Builtin(
                    cudarace_ir::Builtin::ThreadIdx(_) | cudarace_ir::Builtin::BlockIdx(_)
                )
            ) {
                found = true;
            }
        },
        false,
    );
    found
}

pub(crate) fn strip_casts(e: &Expr) -> &Expr {
    match e {
        Expr::Cast(_, a) => strip_casts(a),
        other => other,
    }
}

/// Every expression of the block (not stored values: data does not size anything), with
/// whether it is part of a loop's step.
pub(crate) fn walk_block(b: &Block, f: &mut dyn FnMut(&Expr, bool)) {
    for s in b {
        walk_stmt(s, f, false);
    }
}

fn walk_stmt(s: &Stmt, f: &mut dyn FnMut(&Expr, bool), in_step: bool) {
    match s {
        Stmt::Assign { value, .. } => walk_expr(value, f, in_step),
        Stmt::Access(a) => {
            for i in &a.index {
                walk_expr(i, f, in_step);
            }
        }
        Stmt::If {
            cond,
            then_branch,
            else_branch,
            ..
        } => {
            walk_expr(cond, f, in_step);
            for s in then_branch.iter().chain(else_branch) {
                walk_stmt(s, f, in_step);
            }
        }
        Stmt::Loop(l) => {
            for s in l.init.iter().chain(&l.cond_effects).chain(&l.body) {
                walk_stmt(s, f, in_step);
            }
            if let Some(c) = &l.cond {
                walk_expr(c, f, in_step);
            }
            for s in &l.step {
                walk_stmt(s, f, true);
            }
        }
        Stmt::Assume { cond, .. } => walk_expr(cond, f, in_step),
        Stmt::Barrier(_)
        | Stmt::Return { .. }
        | Stmt::Break { .. }
        | Stmt::Continue { .. }
        | Stmt::Opaque(_) => {}
    }
}

pub(crate) fn walk_expr(e: &Expr, f: &mut dyn FnMut(&Expr, bool), in_step: bool) {
    f(e, in_step);
    match e {
        Expr::Unary(_, a) | Expr::Cast(_, a) => walk_expr(a, f, in_step),
        Expr::Binary(_, a, b) => {
            walk_expr(a, f, in_step);
            walk_expr(b, f, in_step);
        }
        Expr::Ite(c, a, b) => {
            walk_expr(c, f, in_step);
            walk_expr(a, f, in_step);
            walk_expr(b, f, in_step);
        }
        _ => {}
    }
}

/// The parameter assumptions of a kernel (before renaming: parameters keep their names).
pub fn param_assumptions(
    kernel: &Kernel,
    roles: &BTreeMap<ParamId, Role>,
    switches: &AssumptionSwitches,
) -> Vec<Assumption> {
    if !switches.positive_sizes {
        return vec![];
    }
    roles
        .iter()
        .filter_map(|(p, role)| {
            let prm = kernel.params.get(p.0 as usize)?;
            let min = match role {
                Role::Stride => 1,
                Role::Bound | Role::Offset => 0,
            };
            // An unsigned parameter is at least 0 by its type already.
            if min == 0 && matches!(prm.ty, ScalarType::Int { signed: false, .. }) {
                return None;
            }
            Some(Assumption {
                term: le(int(min), Term::Var(format!("param.{}", prm.name).into())),
                broken: Broken::Param {
                    name: prm.name.clone(),
                    min,
                },
            })
        })
        .collect()
}

/// The launch assumptions of a kernel the file never launches: one block when it never reads
/// `blockIdx`/`gridDim`, and one thread per block when it reads no thread index or block size (a
/// kernel written for one thread per block, `out[blockIdx.x] = …`: every thread of a block would
/// do the same work).
pub fn launch_assumptions(
    block_used: [bool; 3],
    grid_used: [bool; 3],
    launched: bool,
    (block_fixed, grid_fixed): (bool, bool),
    switches: &AssumptionSwitches,
) -> Vec<Assumption> {
    if !switches.single_block_without_launch || launched {
        return vec![];
    }
    let ones = |what: &str| {
        and(["x", "y", "z"]
            .iter()
            .map(|d| eq(Term::Var(format!("{what}.{d}").into()), int(1)))
            .collect())
    };
    let mut out = Vec::new();
    if !grid_fixed && !grid_used.iter().any(|u| *u) {
        out.push(Assumption {
            term: ones("gridDim"),
            broken: Broken::SeveralBlocks,
        });
    }
    if !block_fixed && !block_used.iter().any(|u| *u) {
        out.push(Assumption {
            term: ones("blockDim"),
            broken: Broken::SeveralThreads,
        });
    }
    out
}

/// A block dimension (y or z) that the kernel never reads (no `threadIdx`, no `blockDim` of it)
/// is 1 when the launch sites may launch it so but also with more: the sizes come from a local
/// assigned in branches (`block = dim3(256)` in one, `block = dim3(4, 32)` in the other) that
/// the front end cannot tie to this launch, and a kernel written without the dimension would
/// have its rows all do the same work. A race that needs the larger size is conditional.
pub fn unread_dimension_assumptions(
    block_used: [bool; 3],
    block: &[crate::launch::DimSpec; 3],
    switches: &AssumptionSwitches,
) -> Vec<Assumption> {
    if !switches.unread_block_dimensions {
        return vec![];
    }
    let mut out = Vec::new();
    for d in 1..3 {
        let name = format!("blockDim.{}", ["x", "y", "z"][d]);
        if let crate::launch::DimSpec::OneOf(ns) = &block[d] {
            if !block_used[d] && ns.contains(&1) {
                out.push(Assumption {
                    term: eq(Term::Var(name.clone().into()), int(1)),
                    broken: Broken::UnreadDimension { dim: name },
                });
            }
        }
    }
    out
}

/// The index assumptions of one access pair: for each way of meeting (`disjunct`, thread A's
/// `cell` in it), the cell is a plausible one of `array`.
pub fn cell_assumptions(
    enc: &Encoder,
    kernel: &Kernel,
    array: cudarace_ir::ArrayId,
    ways: &[(Term, Vec<Term>)],
    switches: &AssumptionSwitches,
) -> Vec<Assumption> {
    let Some(arr) = kernel.arrays.get(array.0 as usize) else {
        return vec![];
    };
    let mut out = Vec::new();
    match (arr.space, &arr.origin) {
        (MemSpace::Global, ArrayOrigin::Param(_)) if switches.non_negative_indices => {
            let parts: Vec<Term> = ways
                .iter()
                .filter(|(_, cell)| !cell.is_empty())
                .map(|(d, cell)| {
                    Term::implies(
                        d.clone(),
                        and(cell.iter().map(|c| le(int(0), c.clone())).collect()),
                    )
                })
                .collect();
            if !parts.is_empty() {
                out.push(Assumption {
                    term: and(parts),
                    broken: Broken::NegativeIndex {
                        array: arr.name.clone(),
                    },
                });
            }
            // A cell past 2^31 - 1: an `int` index computed to reach it overflowed (undefined
            // behaviour), and buffers of more than 2^31 elements are rare. Witnesses that need
            // one (`batch * groups * n` with every factor near `INT_MAX`) are conditional.
            let wide = wide_indices(kernel, array);
            let below: Vec<Term> = ways
                .iter()
                .filter(|_| !wide)
                .filter(|(_, cell)| !cell.is_empty())
                .map(|(d, cell)| {
                    Term::implies(
                        d.clone(),
                        and(cell
                            .iter()
                            .map(|c| Term::lt(c.clone(), int(1 << 31)))
                            .collect()),
                    )
                })
                .collect();
            if !below.is_empty() {
                out.push(Assumption {
                    term: and(below),
                    broken: Broken::HugeIndex {
                        array: arr.name.clone(),
                    },
                });
            }
        }
        // A `__device__` array of a declared size is as much the program's as a `__shared__`
        // one: a cell past its end is undefined behaviour, not a race a caller would accept.
        (MemSpace::Shared, ArrayOrigin::SharedDecl)
        | (MemSpace::Global, ArrayOrigin::DeviceGlobal)
            if switches.shared_in_bounds =>
        {
            // Constant sizes only: a size given by a parameter would add a variable the query
            // may not have.
            let dims: Option<Vec<Term>> = arr
                .dims
                .iter()
                .map(|d| {
                    d.as_ref()
                        .and_then(|e| enc.dim_size_term(e))
                        .filter(|t| as_int(t).is_some_and(|n| n > 0))
                })
                .collect();
            let Some(dims) = dims else { return out };
            if dims.is_empty() {
                return out;
            }
            let total = dims.iter().cloned().reduce(mul).unwrap_or_else(|| int(1));
            let size_text = match as_int(&total) {
                Some(n) => n.to_string(),
                None => "declared".into(),
            };
            let parts: Vec<Term> = ways
                .iter()
                .filter_map(|(d, cell)| {
                    let bounds: Vec<Term> = if cell.len() == dims.len() {
                        cell.iter()
                            .zip(&dims)
                            .flat_map(|(c, n)| [le(int(0), c.clone()), lt(c.clone(), n.clone())])
                            .collect()
                    } else if cell.len() == 1 {
                        vec![
                            le(int(0), cell[0].clone()),
                            lt(cell[0].clone(), total.clone()),
                        ]
                    } else {
                        return None;
                    };
                    Some(Term::implies(d.clone(), and(bounds)))
                })
                .collect();
            if !parts.is_empty() {
                out.push(Assumption {
                    term: and(parts),
                    broken: Broken::OutOfBounds {
                        array: arr.name.clone(),
                        size: size_text,
                    },
                });
            }
        }
        _ => {}
    }
    out
}

/// A candidate precondition, as the finding states it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Precondition {
    /// `n == blockDim.x`: what the message says makes the race go away.
    pub text: String,
    /// The parameter it constrains (`n`).
    pub subject: String,
    /// For a relation to the launch, the condition the race needs when it is broken
    /// (`n != blockDim.x`; see `launch-shape-without-launch`).
    pub unless_launch: Option<String>,
}

/// Candidate preconditions over the integer parameters a query has and `free` allows (not one
/// the launch sites fix), simplest first: `p >= 1`, `p == blockDim.x`, `p == gridDim.x`,
/// `p >= q`, `p % blockDim.x == 0`, `p >= gridDim.x * blockDim.x`. At most
/// [`MAX_PRECONDITIONS`].
pub fn precondition_candidates(
    kernel: &Kernel,
    vars: &BTreeMap<String, cudarace_solver::Sort>,
    free: &dyn Fn(&str) -> bool,
) -> Vec<(Term, Precondition)> {
    let params: Vec<(&str, bool)> = kernel
        .params
        .iter()
        .filter(|p| p.value.is_none() && matches!(p.ty, ScalarType::Int { .. }))
        .filter(|p| vars.contains_key(&format!("param.{}", p.name)) && free(&p.name))
        .map(|p| {
            (
                p.name.as_str(),
                matches!(p.ty, ScalarType::Int { signed: true, .. }),
            )
        })
        .collect();
    let v = |name: &str| Term::Var(format!("param.{name}").into());
    let bx = || Term::var("blockDim.x");
    let gx = || Term::var("gridDim.x");
    let pre = |p: &str, text: String, unless: Option<String>| Precondition {
        text,
        subject: p.to_string(),
        unless_launch: unless,
    };
    let thread_count = |p: &str| {
        (
            le(mul(gx(), bx()), v(p)),
            pre(
                p,
                format!("{p} >= gridDim.x * blockDim.x"),
                Some(format!("{p} < gridDim.x * blockDim.x")),
            ),
        )
    };
    // A loop's step parameter (`i += jump`) first, as the thread count: a kernel stepping by
    // a parameter is a grid-stride loop whose host passes the thread count, and the
    // candidates after two undecided ones are not tried.
    let steps = loop_step_params(kernel);
    let mut out = Vec::new();
    for (p, _) in &params {
        if steps.contains(*p) {
            out.push(thread_count(p));
        }
    }
    for (p, signed) in &params {
        if *signed {
            out.push((le(int(1), v(p)), pre(p, format!("{p} >= 1"), None)));
        }
    }
    // The launch relations before the pairs of parameters: a kernel sized for its launch
    // (`n == blockDim.x`) is the common case, and only the first candidates are tried.
    for (p, _) in &params {
        for (size, t) in [("blockDim.x", bx()), ("gridDim.x", gx())] {
            out.push((
                eq(v(p), t),
                pre(p, format!("{p} == {size}"), Some(format!("{p} != {size}"))),
            ));
        }
    }
    for (p, _) in &params {
        for (q, _) in &params {
            if p != q {
                out.push((le(v(q), v(p)), pre(p, format!("{p} >= {q}"), None)));
            }
        }
    }
    for (p, _) in &params {
        out.push((
            eq(modulo(v(p), bx()), int(0)),
            pre(
                p,
                format!("{p} % blockDim.x == 0"),
                Some(format!("{p} % blockDim.x != 0")),
            ),
        ));
        if !steps.contains(*p) {
            out.push(thread_count(p));
        }
    }
    out.truncate(MAX_PRECONDITIONS);
    out
}

/// The parameters some loop of the kernel steps its counter by (`i = i + jump`, in the loop's
/// step or body).
fn loop_step_params(kernel: &Kernel) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    visit_stmts(&kernel.body, &mut |s| {
        let Stmt::Loop(l) = s else { return };
        for blk in [&l.step, &l.body] {
            assigned_values(blk, &mut |local, value| {
                let Expr::Binary(BinOp::Add, a, b) = strip_casts(value) else {
                    return;
                };
                for (x, y) in [(a, b), (b, a)] {
                    if let (Expr::Local(c), Expr::Param(p)) = (strip_casts(x), strip_casts(y)) {
                        if *c == local {
                            if let Some(param) = kernel.params.get(p.0 as usize) {
                                out.insert(param.name.clone());
                            }
                        }
                    }
                }
            });
        }
    });
    out
}

/// Candidate preconditions tried per race (each a small solver check, only for races found).
pub const MAX_PRECONDITIONS: usize = 12;

/// Every index expression of every access of the block.
pub(crate) fn visit_accesses(b: &Block, f: &mut dyn FnMut(&Expr)) {
    for s in b {
        match s {
            Stmt::Access(a) => a.index.iter().for_each(&mut *f),
            Stmt::If {
                then_branch,
                else_branch,
                ..
            } => {
                visit_accesses(then_branch, f);
                visit_accesses(else_branch, f);
            }
            Stmt::Loop(l) => {
                for blk in [&l.init, &l.cond_effects, &l.body, &l.step] {
                    visit_accesses(blk, f);
                }
            }
            _ => {}
        }
    }
}

/// Whether an index into `array` is computed in a 64-bit type somewhere in the kernel (it
/// names a 64-bit parameter or local, or casts to one): cells past 2^31 are then what the code
/// is written for.
fn wide_indices(kernel: &Kernel, array: cudarace_ir::ArrayId) -> bool {
    fn wide(kernel: &Kernel, e: &Expr) -> bool {
        let bits =
            |ty: Option<ScalarType>| matches!(ty, Some(ScalarType::Int { bits, .. }) if bits > 32);
        match e {
            Expr::Param(p) => bits(kernel.params.get(p.0 as usize).map(|p| p.ty)),
            Expr::Local(l) => bits(kernel.locals.get(l.0 as usize).map(|l| l.ty)),
            Expr::Cast(ty, a) => bits(Some(*ty)) || wide(kernel, a),
            Expr::Unary(_, a) => wide(kernel, a),
            Expr::Binary(_, a, b) => wide(kernel, a) || wide(kernel, b),
            Expr::Ite(c, a, b) => wide(kernel, c) || wide(kernel, a) || wide(kernel, b),
            _ => false,
        }
    }
    let mut found = false;
    visit_stmts(&kernel.body, &mut |s| {
        if let Stmt::Access(a) = s {
            found |= a.array == array && a.index.iter().any(|e| wide(kernel, e));
        }
    });
    found
}

/// Every statement of the block, nested ones included.
pub(crate) fn visit_stmts(b: &Block, f: &mut dyn FnMut(&Stmt)) {
    for s in b {
        f(s);
        match s {
            Stmt::If {
                then_branch,
                else_branch,
                ..
            } => {
                visit_stmts(then_branch, f);
                visit_stmts(else_branch, f);
            }
            Stmt::Loop(l) => {
                for blk in [&l.init, &l.cond_effects, &l.body, &l.step] {
                    visit_stmts(blk, f);
                }
            }
            _ => {}
        }
    }
}

/// Every `local = value` of the block.
pub(crate) fn assigned_values(b: &Block, f: &mut dyn FnMut(cudarace_ir::LocalId, &Expr)) {
    for s in b {
        match s {
            Stmt::Assign { local, value, .. } => f(*local, value),
            Stmt::If {
                then_branch,
                else_branch,
                ..
            } => {
                assigned_values(then_branch, f);
                assigned_values(else_branch, f);
            }
            Stmt::Loop(l) => {
                for blk in [&l.init, &l.cond_effects, &l.body, &l.step] {
                    assigned_values(blk, f);
                }
            }
            _ => {}
        }
    }
}

/// The integer parameter `e` names (casts stripped), unless the launch sites bind its value.
pub(crate) fn free_int_param<'k>(kernel: &'k Kernel, e: &Expr) -> Option<&'k cudarace_ir::Param> {
    match strip_casts(e) {
        Expr::Param(p) => kernel
            .params
            .get(p.0 as usize)
            .filter(|p| p.value.is_none() && matches!(p.ty, ScalarType::Int { .. })),
        _ => None,
    }
}

/// Whether `e` reads one of the locals of `locals`.
pub(crate) fn reads_any_local(e: &Expr, locals: &std::collections::BTreeSet<LocalId>) -> bool {
    let mut found = false;
    walk_expr(
        e,
        &mut |x, _| found |= matches!(x, Expr::Local(l) if locals.contains(l)),
        false,
    );
    found
}

/// The locals of `kernel` assigned exactly once, with their value.
pub(crate) fn assigned_once(kernel: &Kernel) -> BTreeMap<cudarace_ir::LocalId, Expr> {
    let mut counts: BTreeMap<cudarace_ir::LocalId, usize> = BTreeMap::new();
    let mut values: BTreeMap<cudarace_ir::LocalId, Expr> = BTreeMap::new();
    assigned_values(&kernel.body, &mut |l, v| {
        *counts.entry(l).or_default() += 1;
        values.insert(l, v.clone());
    });
    let mut opaque = Vec::new();
    visit_stmts(&kernel.body, &mut |s| {
        if let Stmt::Opaque(o) = s {
            opaque.extend(o.locals.iter().copied());
        }
    });
    values.retain(|l, _| counts.get(l) == Some(&1) && !opaque.contains(l));
    values
}

/// A value the same in every thread: its term, its words and the parameters it names.
pub(super) struct Uniform {
    pub(super) term: Term,
    pub(super) text: String,
    pub(super) params: Vec<String>,
}

/// `e` as a [`Uniform`] when it names only parameters, launch sizes and constants (sums,
/// products, and quotients by a positive constant: no difference, which an unsigned value
/// would wrap), through the locals assigned once.
pub(super) fn uniform(
    kernel: &Kernel,
    once: &BTreeMap<LocalId, Expr>,
    e: &Expr,
    depth: u32,
) -> Option<Uniform> {
    if depth > 12 {
        return None;
    }
    let go = |x: &Expr| uniform(kernel, once, x, depth + 1);
    let leaf = |term: Term, text: String| Uniform {
        term,
        text,
        params: Vec::new(),
    };
    let wrap = |t: &str| {
        if t.contains(' ') {
            format!("({t})")
        } else {
            t.to_string()
        }
    };
    // `a op b`, the term built by `f`.
    let binary = |a: Uniform, b: Uniform, f: fn(Term, Term) -> Term, op: &str| {
        // A product on the left of `*` or `/` reads the same without parentheses.
        let product = |t: &str| !t.contains(['+', '-', '/', '%']);
        let text = match op {
            "+" => format!("{} + {}", a.text, b.text),
            _ if product(&a.text) => format!("{} {op} {}", a.text, wrap(&b.text)),
            _ => format!("{} {op} {}", wrap(&a.text), wrap(&b.text)),
        };
        let mut params = a.params;
        for p in b.params {
            if !params.contains(&p) {
                params.push(p);
            }
        }
        Uniform {
            term: f(a.term, b.term),
            text,
            params,
        }
    };
    Some(match e {
        Expr::Int(c) => leaf(int(*c), c.to_string()),
        Expr::Cast(_, a) => go(a)?,
        Expr::Param(p) => {
            let prm = kernel.params.get(p.0 as usize)?;
            if !matches!(prm.ty, cudarace_ir::ScalarType::Int { .. }) {
                return None;
            }
            match prm.value {
                Some(v) => leaf(int(v), v.to_string()),
                None => Uniform {
                    term: Term::Var(format!("param.{}", prm.name).into()),
                    text: prm.name.clone(),
                    params: vec![prm.name.clone()],
                },
            }
        }
        Expr::Builtin(Builtin::BlockDim(d)) => {
            let name = format!("blockDim.{}", d.name());
            leaf(Term::Var(name.clone().into()), name)
        }
        Expr::Builtin(Builtin::GridDim(d)) => {
            let name = format!("gridDim.{}", d.name());
            leaf(Term::Var(name.clone().into()), name)
        }
        Expr::Local(l) => go(once.get(l)?)?,
        Expr::Binary(BinOp::Add, a, b) => binary(go(a)?, go(b)?, add, "+"),
        Expr::Binary(BinOp::Mul, a, b) => binary(go(a)?, go(b)?, mul, "*"),
        Expr::Binary(BinOp::Div, a, b) => match strip_casts(b) {
            Expr::Int(c) if *c > 0 => binary(go(a)?, leaf(int(*c), c.to_string()), div, "/"),
            _ => return None,
        },
        _ => return None,
    })
}
