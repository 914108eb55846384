//! Plausibility assumptions: what any reader of a kernel takes for granted about its arguments
//! and launch, each named and each switchable off (`[assumptions]` in `cudarace.toml`).
//!
//! They never hide a race. The solver looks for a witness that satisfies them first; a race
//! whose every witness breaks one of them is still reported, but *conditional*, with the
//! condition it needs in words (`only if ldc < 1`). So a definite finding is one that happens
//! with sizes, strides and indices a CUDA programmer would pass.
//!
//! - `positive-sizes`: an integer parameter used as a stride, leading dimension, step or
//!   divisor (multiplied into an index, added to a loop counter in its step, dividing) is at
//!   least 1; one compared with an index or a loop counter (a size, a bound), or added to a
//!   thread's index (`threadIdx.x + start`: where the threads' range begins), is at least 0.
//! - `non-negative-indices`: the cell of a kernel's pointer parameter that two threads meet on
//!   has non-negative coordinates (the pointer is the start of the buffer).
//! - `shared-in-bounds`: the cell of a `__shared__` array with a declared size is inside it;
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
//!   inside its step, bounded from the kernel (`s3 + l3 <= d3` for `k < l3`, `s3 >= 0`). A
//!   thread index, also one kept in a local (`int col = threadIdx.y; … row * fc + col`), is
//!   below its block size there unless a comparison that *guards* tests it (see
//!   [`guard_operands`]): `if (col < pad) y_pad = pad - col;` only chooses a value.
//! - `launch-shape-without-launch`: a kernel the file never launches is launched in the shape
//!   that its race's precondition names, when that precondition ties a shape parameter (a
//!   stride, step or divisor, not a mere bound) to the launch (`n == blockDim.x`,
//!   `step >= gridDim.x * blockDim.x`, `n % blockDim.x == 0`): the host that launches it is
//!   elsewhere (another file, Python) and sizes the launch from the same values.
//!   Unlike the others it is applied after the solve, to the precondition found (see
//!   [`Precondition::unless_launch`]).
//! - `constant-block-shape`: a kernel that walks an array by a block-stride loop whose step is a
//!   constant `C` instead of `blockDim.x` (`for (i = threadIdx.x; i < 1024; i += 64)`) is
//!   launched with blocks of exactly `C` threads in that dimension (`blockDim.x == 64`; the
//!   counter may start at any value equal to `threadIdx.x` once the locals assigned once are
//!   inlined and `(t / 16) * 16 + t % 16` is folded into `t`): fewer
//!   would leave cells to no thread, more would make threads collide. Not when the launch
//!   fixes the dimension, when the kernel reads that block size other than in
//!   `blockIdx.x * blockDim.x`, when two loops name different steps, or when `C` contradicts
//!   the kernel's other assumptions about the block (`s[threadIdx.x]` in `s[32]`) or its
//!   `__launch_bounds__`. `threadIdx.x % C` or `/ C` alone are not taken as a shape: a lane
//!   and a warp fit any multiple of `C`. A race that needs another block is conditional,
//!   `only if blockDim.x != 64`.

use crate::encode::Encoder;
use crate::terms::*;
use cudarace_ir::{ArrayOrigin, BinOp, Block, Expr, Kernel, MemSpace, ParamId, ScalarType, Stmt};
use cudarace_solver::Term;
use std::collections::BTreeMap;

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
    let mark = |e: &Expr, role: Role, roles: &mut BTreeMap<ParamId, Role>| {
        if let Expr::Param(p) = strip_casts(e) {
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
        }
        (MemSpace::Shared, ArrayOrigin::SharedDecl) if switches.shared_in_bounds => {
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
    let mut out = Vec::new();
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
        out.push((
            le(mul(gx(), bx()), v(p)),
            pre(
                p,
                format!("{p} >= gridDim.x * blockDim.x"),
                Some(format!("{p} < gridDim.x * blockDim.x")),
            ),
        ));
    }
    out.truncate(MAX_PRECONDITIONS);
    out
}

/// Candidate preconditions tried per race (each a small solver check, only for races found).
pub const MAX_PRECONDITIONS: usize = 12;

/// `ld >= n` for every index `col + row * ld` of an access whose `col` the kernel compares with
/// the parameter `n` (see the module documentation).
pub fn leading_dimension_assumptions(
    kernel: &Kernel,
    (block_fixed, grid_fixed): ([bool; 3], [bool; 3]),
    switches: &AssumptionSwitches,
) -> Vec<Assumption> {
    use cudarace_ir::Builtin;
    if !switches.leading_dimensions {
        return vec![];
    }
    let int_param = |e: &Expr| match strip_casts(e) {
        Expr::Param(p) => kernel
            .params
            .get(p.0 as usize)
            .filter(|p| p.value.is_none() && matches!(p.ty, ScalarType::Int { .. }))
            .map(|p| p.name.clone()),
        _ => None,
    };
    let param_amount = |e: &Expr| int_param(e).map(Amount::param);
    // A bound is a parameter, or a parameter moved by a constant (`if (ix > nx - 2) return`
    // keeps `ix` below `nx - 1`: the row it indexes is `nx` long).
    let bound_param = |e: &Expr| match strip_casts(e) {
        Expr::Binary(BinOp::Add | BinOp::Sub, a, b) if matches!(strip_casts(b), Expr::Int(_)) => {
            param_amount(a)
        }
        Expr::Binary(BinOp::Add, a, b) if matches!(strip_casts(a), Expr::Int(_)) => param_amount(b),
        other => param_amount(other),
    };
    // (compared expression, its bound), from every comparison of the kernel; and every
    // compared expression (a thread index the kernel guards itself says nothing of the block).
    let mut bounded: Vec<(Expr, Amount)> = Vec::new();
    let mut compared: Vec<Expr> = Vec::new();
    walk_block(&kernel.body, &mut |e, _| {
        if let Expr::Binary(BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge, a, b) = e {
            compared.push(strip_casts(a).clone());
            compared.push(strip_casts(b).clone());
            for (x, y) in [(a, b), (b, a)] {
                if let Some(n) = bound_param(y) {
                    let x = strip_casts(x);
                    if !matches!(x, Expr::Int(_) | Expr::Param(_)) {
                        bounded.push((x.clone(), n));
                    }
                }
            }
        }
    });
    // `x % n` is below `n` too (`int col = index % n`).
    let rem_bound = |e: &Expr| match strip_casts(e) {
        Expr::Binary(BinOp::Rem, _, n) => param_amount(n),
        _ => None,
    };
    // A thread or block index is below its launch size (`row * 16 + threadIdx.x`: a kernel
    // written for blocks no wider than 16), unless the launch fixes that size.
    let launch_bound = |b: &Builtin| match b {
        Builtin::ThreadIdx(d) if !block_fixed[d.index()] => {
            Some(Amount::launch(format!("blockDim.{}", d.name())))
        }
        Builtin::BlockIdx(d) if !grid_fixed[d.index()] => {
            Some(Amount::launch(format!("gridDim.{}", d.name())))
        }
        _ => None,
    };
    let mut once: BTreeMap<cudarace_ir::LocalId, usize> = BTreeMap::new();
    assigned_values(&kernel.body, &mut |l, value| {
        *once.entry(l).or_default() += 1;
        if let Some(n) = rem_bound(value) {
            bounded.push((Expr::Local(l), n));
        }
    });
    assigned_values(&kernel.body, &mut |l, value| {
        if compared.contains(&Expr::Local(l)) {
            return;
        }
        if let (Some(1), Expr::Builtin(b)) = (once.get(&l), strip_casts(value)) {
            if let Some(n) = launch_bound(b) {
                bounded.push((Expr::Local(l), n));
            }
        }
    });
    // The row step of a product: `row * ld` (scale 1), `row * ld / c` and `row * (ld / c)` (a
    // leading dimension counted in smaller units than the index, scale `c`), `row * 16`.
    let row_step = |prod: &Expr| -> Option<(Amount, i64)> {
        let positive = |e: &Expr| match strip_casts(e) {
            Expr::Int(c) if *c > 1 => Some(*c),
            _ => None,
        };
        let scaled_param = |e: &Expr| match strip_casts(e) {
            Expr::Binary(BinOp::Div, p, c) => Some((param_amount(p)?, positive(c)?)),
            other => Some((param_amount(other)?, 1)),
        };
        match strip_casts(prod) {
            Expr::Binary(BinOp::Mul, x, y) => {
                scaled_param(x).or_else(|| scaled_param(y)).or_else(|| {
                    positive(x)
                        .or_else(|| positive(y))
                        .map(|c| (Amount::Const(c), 1))
                })
            }
            Expr::Binary(BinOp::Div, m, c) => {
                let Expr::Binary(BinOp::Mul, x, y) = strip_casts(m) else {
                    return None;
                };
                let c = positive(c)?;
                let ld = param_amount(x).or_else(|| param_amount(y))?;
                Some((ld, c))
            }
            _ => None,
        }
    };
    let mut pairs: Vec<(Amount, i64, Amount)> = Vec::new();
    let mut visit_index = |e: &Expr| {
        walk_expr(
            e,
            &mut |e, _| {
                let Expr::Binary(BinOp::Add, a, b) = e else {
                    return;
                };
                for (col, prod) in [(a, b), (b, a)] {
                    let Some((ld, scale)) = row_step(prod) else {
                        continue;
                    };
                    let col = strip_casts(col);
                    let mut rows: Vec<Amount> = rem_bound(col).into_iter().collect();
                    rows.extend(
                        bounded
                            .iter()
                            .filter(|(c, _)| c == col)
                            .map(|(_, n)| n.clone()),
                    );
                    if let Expr::Builtin(b) = col {
                        if !compared.contains(col) {
                            rows.extend(launch_bound(b));
                        }
                    }
                    for n in rows {
                        // A constant row step bounds only a launch size (a kernel written for
                        // a block size: `row * 64 + threadIdx.x`). A parameter row step bounds
                        // a launch size too: `row * ldc + threadIdx.x` with no guard on the
                        // column is written for blocks of `ldc` threads (`<<<rows, ldc>>>`),
                        // as `blockIdx.x * FS + blockIdx.y` is for a grid `(n, FS)`.
                        if matches!(ld, Amount::Const(_)) && !n.is_launch() {
                            continue;
                        }
                        let pair = (ld.clone(), scale, n);
                        if pair.2 != ld && !pairs.contains(&pair) {
                            pairs.push(pair);
                        }
                    }
                }
            },
            false,
        );
    };
    visit_accesses(&kernel.body, &mut visit_index);
    // An index built in a local first (`int at = row * ldc + col; c[at] = …`).
    assigned_values(&kernel.body, &mut |_, value| visit_index(value));
    pairs
        .into_iter()
        .map(|(ld, scale, row)| Assumption {
            term: le(mul(int(scale), row.term()), ld.term()),
            broken: Broken::LeadingDimension {
                ld: ld.text(),
                scale,
                row: row.text(),
            },
        })
        .collect()
}

/// A size in a leading-dimension assumption: a parameter, a launch size or a constant.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Amount {
    /// The query variable and the name to show.
    Var(String, String),
    Const(i64),
}

impl Amount {
    fn param(name: String) -> Amount {
        Amount::Var(format!("param.{name}"), name)
    }
    fn launch(var: String) -> Amount {
        Amount::Var(var.clone(), var)
    }
    fn is_launch(&self) -> bool {
        matches!(self, Amount::Var(v, _) if v.starts_with("blockDim.") || v.starts_with("gridDim."))
    }
    fn term(&self) -> Term {
        match self {
            Amount::Var(v, _) => Term::Var(v.clone().into()),
            Amount::Const(c) => int(*c),
        }
    }
    fn text(&self) -> String {
        match self {
            Amount::Var(_, t) => t.clone(),
            Amount::Const(c) => c.to_string(),
        }
    }
}

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

/// `blockDim.d <= n` for every `__shared__` array with a constant size `n` that every thread
/// indexes by its own `threadIdx.d` before any thread may leave (`s[threadIdx.x] = …` as the
/// kernel's first statements): the kernel is written for blocks that fit its per-thread slots,
/// and a larger block would index outside the array. Not for a dimension the launch fixes.
pub fn shared_slot_assumptions(
    kernel: &Kernel,
    block_fixed: [bool; 3],
    switches: &AssumptionSwitches,
) -> Vec<Assumption> {
    use cudarace_ir::{Builtin, Dim};
    if !switches.shared_in_bounds {
        return vec![];
    }
    let const_size = |e: &Option<Expr>| match e.as_ref().map(strip_casts) {
        Some(Expr::Int(n)) if *n > 0 => Some(*n),
        Some(Expr::Param(p)) => kernel
            .params
            .get(p.0 as usize)
            .and_then(|p| p.value)
            .filter(|v| *v > 0),
        _ => None,
    };
    // Locals holding a thread index (`int tx = threadIdx.x;`), assigned once at the top.
    let mut thread_locals: BTreeMap<cudarace_ir::LocalId, Dim> = BTreeMap::new();
    let mut assigned_twice: Vec<cudarace_ir::LocalId> = Vec::new();
    assigned_values(&kernel.body, &mut |l, v| {
        if thread_locals.remove(&l).is_some() || assigned_twice.contains(&l) {
            assigned_twice.push(l);
        } else if let Expr::Builtin(Builtin::ThreadIdx(d)) = strip_casts(v) {
            thread_locals.insert(l, *d);
        }
    });
    // Nor one a call the checker cannot see may change (passed by reference).
    let mut opaque_locals = Vec::new();
    visit_stmts(&kernel.body, &mut |s| {
        if let Stmt::Opaque(o) = s {
            opaque_locals.extend(o.locals.iter().copied());
        }
    });
    thread_locals.retain(|l, _| !opaque_locals.contains(l));
    let thread_dim = |e: &Expr| match strip_casts(e) {
        Expr::Builtin(Builtin::ThreadIdx(d)) => Some(*d),
        Expr::Local(l) => thread_locals.get(l).copied(),
        _ => None,
    };
    // The slots (dimension, size, array) a thread indexes by its own thread index in one
    // access of a `__shared__` array with constant sizes.
    let slots = |a: &cudarace_ir::Access| -> Vec<Slot> {
        let Some(arr) = kernel.arrays.get(a.array.0 as usize) else {
            return vec![];
        };
        if !(arr.space == MemSpace::Shared && arr.origin == ArrayOrigin::SharedDecl) {
            return vec![];
        }
        // The coordinates: one index per dimension, or a row-major flat index into a 2-D
        // array (`s[ty * 8 + tx]`: a `T s[8][8]` passed to a helper, row by row).
        let coords: Vec<(&Expr, &Option<Expr>)> = if a.index.len() == arr.dims.len() {
            a.index.iter().zip(&arr.dims).collect()
        } else if let ([flat], [rows, cols]) = (a.index.as_slice(), arr.dims.as_slice()) {
            match row_major(flat, const_size(cols)) {
                Some((r, c)) => vec![(r, rows), (c, cols)],
                None => return vec![],
            }
        } else {
            return vec![];
        };
        coords
            .into_iter()
            .filter_map(|(i, size)| Some((thread_dim(i)?.index(), const_size(size)?, a.array.0)))
            .collect()
    };
    let mut bounds: BTreeMap<usize, (i64, String)> = BTreeMap::new();
    for (d, n, array) in every_thread_slots(&kernel.body, &slots).0 {
        let name = kernel.arrays[array as usize].name.clone();
        let e = bounds.entry(d).or_insert((n, name.clone()));
        if n < e.0 {
            *e = (n, name);
        }
    }
    bounds
        .into_iter()
        .filter(|(d, _)| !block_fixed[*d])
        .map(|(d, (n, array))| {
            let dim = format!("blockDim.{}", Dim::ALL[d].name());
            Assumption {
                term: le(Term::Var(dim.clone().into()), int(n)),
                broken: Broken::BlockShape {
                    text: format!("{dim} > {n} (past the {n} slots of `{array}`)"),
                },
            }
        })
        .collect()
}

/// A per-thread slot: (dimension, size, array).
type Slot = (usize, i64, u32);

/// The slots every thread indexes in `b` before any may leave the kernel: those of its
/// statements in order, up to a `return` or code the checker cannot see (a call the checker
/// has no body for comes back: it does not stop the scan), those of both branches of an
/// `if`/`else` (every thread takes one of them: the same array, dimension and size in both),
/// and none from a loop (it may run no iteration). The second part: whether the scan stopped
/// (some thread may have left).
fn every_thread_slots(
    b: &[Stmt],
    slots: &dyn Fn(&cudarace_ir::Access) -> Vec<Slot>,
) -> (Vec<Slot>, bool) {
    let mut out: Vec<Slot> = Vec::new();
    for s in b {
        match s {
            Stmt::Access(a) => out.extend(slots(a)),
            Stmt::Assign { .. } | Stmt::Barrier(_) | Stmt::Assume { .. } => {}
            Stmt::Opaque(o) if returns_to_caller(o) => {}
            Stmt::If {
                then_branch,
                else_branch,
                ..
            } => {
                let (t, t_left) = every_thread_slots(then_branch, slots);
                let (e, e_left) = every_thread_slots(else_branch, slots);
                out.extend(t.into_iter().filter(|x| e.contains(x)));
                if t_left || e_left {
                    return (out, true);
                }
            }
            // A loop no thread leaves the kernel from: every thread goes on.
            Stmt::Loop(_) if !may_return(std::slice::from_ref(s)) => {}
            // Past a `return`, or anything else some threads may have left by.
            _ => return (out, true),
        }
    }
    (out, false)
}

/// An unmodelled call (a function without a body, a method, a call through a pointer) comes
/// back to its caller: it may synchronize, but it does not end the thread. Other unmodelled
/// code (a syntax error, `goto`, inline assembly) may.
fn returns_to_caller(o: &cudarace_ir::Opaque) -> bool {
    ["call to ", "method call ", "call through "]
        .iter()
        .any(|p| o.reason.starts_with(p))
}

/// Whether a thread may leave the kernel in `b` (a `return`, or code the checker cannot see).
fn may_return(b: &[Stmt]) -> bool {
    b.iter().any(|s| match s {
        Stmt::Return { .. } => true,
        Stmt::Opaque(o) => !returns_to_caller(o),
        Stmt::If {
            then_branch,
            else_branch,
            ..
        } => may_return(then_branch) || may_return(else_branch),
        Stmt::Loop(l) => [&l.init, &l.cond_effects, &l.body, &l.step]
            .iter()
            .any(|blk| may_return(blk)),
        _ => false,
    })
}

/// `r * cols + c` (in either order of the sum and of the product): the row and the column of a
/// row-major flat index into an array `cols` wide.
fn row_major(e: &Expr, cols: Option<i64>) -> Option<(&Expr, &Expr)> {
    let cols = cols?;
    let Expr::Binary(BinOp::Add, x, y) = strip_casts(e) else {
        return None;
    };
    fn row_of(p: &Expr, cols: i64) -> Option<&Expr> {
        match strip_casts(p) {
            Expr::Binary(BinOp::Mul, a, b) => match (strip_casts(a), strip_casts(b)) {
                (r, Expr::Int(c)) | (Expr::Int(c), r) if *c == cols => Some(r),
                _ => None,
            },
            _ => None,
        }
    }
    match (row_of(x, cols), row_of(y, cols)) {
        (Some(r), _) => Some((r, &**y)),
        (_, Some(r)) => Some((r, &**x)),
        _ => None,
    }
}

/// `blockDim.d == C` for a kernel written for blocks of exactly `C` threads in dimension `d`:
/// it walks an array by a block-stride loop whose step is the constant `C` instead of
/// `blockDim.d` (`for (i = threadIdx.x; i < 1024; i += 64) s[i] = 0;`). A smaller block leaves
/// cells to no thread, a larger one makes threads collide; either is a launch the kernel is not
/// written for (see `constant-block-shape` in the module documentation). Each candidate is
/// `(dimension, C)`; the caller keeps one only when it fits the kernel's other assumptions.
///
/// Only this signal: `threadIdx.x % 16` or `threadIdx.x / 32` alone (a lane and a warp) fit
/// any block that is a multiple of the constant, and `if (threadIdx.x == 31)` names a thread
/// that exists in any block larger than 31; they say what the block is a multiple of, or at
/// least, not what it is. Not for a dimension the launch fixes, nor one whose size the kernel
/// reads other than in a global index `blockIdx.d * blockDim.d` (a kernel that reads its
/// block size is written for more than one), nor when two loops disagree on the step.
pub fn constant_shape_candidates(
    kernel: &Kernel,
    block_fixed: [bool; 3],
    switches: &AssumptionSwitches,
) -> Vec<(usize, i64)> {
    use cudarace_ir::Builtin;
    if !switches.constant_block_shape {
        return vec![];
    }
    // Where the kernel reads its block size other than in `blockIdx.d * blockDim.d`.
    let (mut reads, mut in_global_index) = ([0usize; 3], [0usize; 3]);
    walk_block(&kernel.body, &mut |e, _| match e {
        Expr::Builtin(Builtin::BlockDim(d)) => reads[d.index()] += 1,
        Expr::Binary(BinOp::Mul, a, b) => {
            if let (Expr::Builtin(Builtin::BlockIdx(x)), Expr::Builtin(Builtin::BlockDim(y)))
            | (Expr::Builtin(Builtin::BlockDim(y)), Expr::Builtin(Builtin::BlockIdx(x))) =
                (strip_casts(a), strip_casts(b))
            {
                if x == y {
                    in_global_index[x.index()] += 1;
                }
            }
        }
        _ => {}
    });
    let constant = |e: &Expr| match strip_casts(e) {
        Expr::Int(c) if *c > 1 => Some(*c),
        Expr::Param(p) => kernel
            .params
            .get(p.0 as usize)
            .and_then(|p| p.value)
            .filter(|v| *v > 1),
        _ => None,
    };
    let once = assigned_once(kernel);
    let thread_dim = |e: &Expr| thread_index_dim(kernel, &once, e);
    let mut found: Vec<(usize, i64)> = Vec::new();
    stride_loops(
        &kernel.body,
        &BTreeMap::new(),
        &constant,
        &thread_dim,
        &mut found,
    );
    let mut out = Vec::new();
    for d in 0..3 {
        let steps: Vec<i64> = found
            .iter()
            .filter(|(x, _)| *x == d)
            .map(|(_, c)| *c)
            .collect();
        let Some(&c) = steps.first() else { continue };
        if block_fixed[d] || reads[d] > in_global_index[d] || steps.iter().any(|s| *s != c) {
            continue;
        }
        out.push((d, c));
    }
    out
}

/// The assumption `blockDim.d == c` (see [`constant_shape_candidates`]).
pub fn constant_shape_assumption(d: usize, c: i64) -> Assumption {
    let dim = format!("blockDim.{}", cudarace_ir::Dim::ALL[d].name());
    Assumption {
        term: eq(Term::Var(dim.clone().into()), int(c)),
        broken: Broken::BlockShape {
            text: format!("{dim} != {c} (the step of a block-stride loop)"),
        },
    }
}

/// The block-stride loops of `b` with a constant step: a counter that enters the loop as
/// `threadIdx.d` (assigned just before it, or in its `init`; `thread_dim` says which values are
/// a thread index, `row * 16 + col` with `row = t / 16` and `col = t % 16` included), whose every assignment in the
/// loop adds the same constant `C` (one of them on the loop's own level: every iteration), that
/// the loop's condition tests and that indexes an array in its body. `entry`: the locals
/// holding a thread index on entry to `b`.
fn stride_loops(
    b: &[Stmt],
    entry: &BTreeMap<cudarace_ir::LocalId, cudarace_ir::Dim>,
    constant: &dyn Fn(&Expr) -> Option<i64>,
    thread_dim: &dyn Fn(&Expr) -> Option<cudarace_ir::Dim>,
    found: &mut Vec<(usize, i64)>,
) {
    let mut holds = entry.clone();
    for s in b {
        match s {
            Stmt::Assign { local, value, .. } => match thread_dim(value) {
                Some(d) => {
                    holds.insert(*local, d);
                }
                None => {
                    holds.remove(local);
                }
            },
            Stmt::If {
                then_branch,
                else_branch,
                ..
            } => {
                stride_loops(then_branch, &holds, constant, thread_dim, found);
                stride_loops(else_branch, &holds, constant, thread_dim, found);
            }
            Stmt::Loop(l) => {
                let mut at_entry = holds.clone();
                for s in &l.init {
                    if let Stmt::Assign { local, value, .. } = s {
                        match thread_dim(value) {
                            Some(d) => {
                                at_entry.insert(*local, d);
                            }
                            None => {
                                at_entry.remove(local);
                            }
                        }
                    }
                }
                for (v, d) in &at_entry {
                    if let Some(c) = constant_step(l, *v, constant) {
                        found.push((d.index(), c));
                    }
                }
                // Inside the loop a counter changes: nested loops start from what their own
                // entry says.
                let mut inner = at_entry.clone();
                let mut changed = std::collections::BTreeSet::new();
                for blk in [&l.cond_effects, &l.body, &l.step] {
                    cudarace_ir::assigned_locals(blk, &mut changed);
                }
                inner.retain(|l, _| !changed.contains(l));
                for blk in [&l.cond_effects, &l.body, &l.step] {
                    stride_loops(blk, &inner, constant, thread_dim, found);
                }
            }
            _ => {}
        }
        // Whatever a branch, a loop or unmodelled code may change holds no thread index.
        if !matches!(s, Stmt::Assign { .. }) {
            let mut changed = std::collections::BTreeSet::new();
            cudarace_ir::assigned_locals(std::slice::from_ref(s), &mut changed);
            holds.retain(|l, _| !changed.contains(l));
        }
    }
}

/// `C` when every assignment of `v` in the loop (past its `init`) is `v = v + C` with the same
/// constant, one of them on the loop's own level, the condition tests `v` and the body indexes
/// an array by it.
fn constant_step(
    l: &cudarace_ir::Loop,
    v: cudarace_ir::LocalId,
    constant: &dyn Fn(&Expr) -> Option<i64>,
) -> Option<i64> {
    let is_v = |e: &Expr| matches!(strip_casts(e), Expr::Local(x) if *x == v);
    let step_of = |value: &Expr| match strip_casts(value) {
        Expr::Binary(BinOp::Add, a, b) if is_v(a) => constant(b),
        Expr::Binary(BinOp::Add, a, b) if is_v(b) => constant(a),
        _ => None,
    };
    let mut steps: Vec<Option<i64>> = Vec::new();
    let mut opaque_changes = false;
    for blk in [&l.cond_effects, &l.body, &l.step] {
        assigned_values(blk, &mut |x, value| {
            if x == v {
                steps.push(step_of(value));
            }
        });
        visit_stmts(blk, &mut |s| {
            if let Stmt::Opaque(o) = s {
                opaque_changes |= o.locals.contains(&v);
            }
        });
    }
    let c = (*steps.first()?)?;
    if opaque_changes || steps.iter().any(|s| *s != Some(c)) {
        return None;
    }
    // One increment every iteration: at the top level of the body or the step.
    let top = l.body.iter().chain(&l.step).any(|s| {
        matches!(s, Stmt::Assign { local, value, .. } if *local == v && step_of(value) == Some(c))
    });
    let mentions = |e: &Expr| {
        let mut found = false;
        walk_expr(e, &mut |x, _| found |= is_v(x), false);
        found
    };
    let tested = l.cond.as_ref().is_some_and(mentions);
    let mut indexes = false;
    visit_accesses(&l.body, &mut |i| indexes |= mentions(i));
    (top && tested && indexes).then_some(c)
}

/// A linear form over thread indices (`t.x`, …) and other values (by their text), with the
/// constant under the key `""`: what an index is after inlining the locals assigned once.
type Linear = BTreeMap<String, i64>;

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

/// `e` as a [`Linear`] form, inlining the locals of `once`; `None` past a small depth or for a
/// product of two varying values (those are compared by their text only as whole atoms).
fn linear(
    kernel: &Kernel,
    once: &BTreeMap<cudarace_ir::LocalId, Expr>,
    e: &Expr,
    depth: u32,
) -> Option<Linear> {
    use cudarace_ir::Builtin;
    if depth > 24 {
        return None;
    }
    let atom = |key: String| Some(Linear::from([(key, 1)]));
    let combine = |a: Linear, b: Linear, k: i64| -> Option<Linear> {
        let mut r = a;
        for (key, c) in b {
            let e = r.entry(key.clone()).or_insert(0);
            *e = e.checked_add(c.checked_mul(k)?)?;
            if *e == 0 {
                r.remove(&key);
            }
        }
        Some(r)
    };
    let constant_of = |l: &Linear| match l.len() {
        0 => Some(0),
        1 => l.get("").copied(),
        _ => None,
    };
    match e {
        Expr::Cast(_, a) => linear(kernel, once, a, depth + 1),
        Expr::Int(c) => Some(if *c == 0 {
            Linear::new()
        } else {
            Linear::from([(String::new(), *c)])
        }),
        Expr::Param(p) => match kernel.params.get(p.0 as usize)?.value {
            Some(v) => linear(kernel, once, &Expr::Int(v), depth + 1),
            None => atom(format!("{e:?}")),
        },
        Expr::Builtin(Builtin::ThreadIdx(d)) => atom(format!("t.{}", d.name())),
        Expr::Builtin(Builtin::WarpSize) => linear(kernel, once, &Expr::Int(32), depth + 1),
        Expr::Local(l) => match once.get(l) {
            Some(v) => linear(kernel, once, v, depth + 1),
            None => atom(format!("{e:?}")),
        },
        Expr::Unary(cudarace_ir::UnOp::Neg, a) => {
            combine(Linear::new(), linear(kernel, once, a, depth + 1)?, -1)
        }
        Expr::Binary(op @ (BinOp::Add | BinOp::Sub), a, b) => fold_divisions(combine(
            linear(kernel, once, a, depth + 1)?,
            linear(kernel, once, b, depth + 1)?,
            if *op == BinOp::Add { 1 } else { -1 },
        )?),
        Expr::Binary(BinOp::Mul, a, b) => {
            let (x, y) = (
                linear(kernel, once, a, depth + 1)?,
                linear(kernel, once, b, depth + 1)?,
            );
            let (k, v) = match (constant_of(&x), constant_of(&y)) {
                (Some(k), _) => (k, y),
                (_, Some(k)) => (k, x),
                _ => return None,
            };
            combine(Linear::new(), v, k)
        }
        Expr::Binary(op @ (BinOp::Div | BinOp::Rem), a, b) => {
            // `x / C` and `x % C` by a constant: atoms that name `x` by its linear form, so
            // that `(x / C) * C + x % C` folds back into `x` (C's truncating division).
            let c = constant_of(&linear(kernel, once, b, depth + 1)?).filter(|c| *c != 0)?;
            let x = linear(kernel, once, a, depth + 1)?;
            let tag = if *op == BinOp::Div { "div" } else { "rem" };
            atom(format!("{tag}|{c}|{}", linear_text(&x)))
        }
        other => {
            // A value of its own: short texts only (a deep expression is no index worth it).
            let text = format!("{other:?}");
            (text.len() <= 400).then_some(())?;
            atom(text)
        }
    }
}

/// A [`Linear`] form as text, the key of `x` in the atoms `x / C` and `x % C` (parsed back by
/// [`parse_linear`]).
fn linear_text(l: &Linear) -> String {
    l.iter()
        .map(|(k, c)| format!("{c}*{k}"))
        .collect::<Vec<_>>()
        .join(";")
}

fn parse_linear(text: &str) -> Option<Linear> {
    if text.is_empty() {
        return Some(Linear::new());
    }
    // Atoms of nested quotients hold `;` themselves: only flat forms are parsed back.
    text.split(';')
        .map(|part| {
            let (c, k) = part.split_once('*')?;
            (!k.contains('|')).then_some(())?;
            Some((k.to_string(), c.parse().ok()?))
        })
        .collect()
}

/// `k * C * (x / C) + k * (x % C)` is `k * x`: the terms of such a pair are replaced by `x`'s.
fn fold_divisions(mut l: Linear) -> Option<Linear> {
    let quotients: Vec<(String, i64)> = l
        .iter()
        .filter(|(k, _)| k.starts_with("div|"))
        .map(|(k, c)| (k.clone(), *c))
        .collect();
    for (q, qc) in quotients {
        let mut parts = q.splitn(3, '|');
        let (_, Some(c), Some(x)) = (parts.next(), parts.next(), parts.next()) else {
            continue;
        };
        let Ok(c) = c.parse::<i64>() else { continue };
        let r = format!("rem|{c}|{x}");
        let Some(&rc) = l.get(&r) else { continue };
        if rc.checked_mul(c) != Some(qc) {
            continue;
        }
        let Some(x) = parse_linear(x) else { continue };
        l.remove(&q);
        l.remove(&r);
        for (key, v) in x {
            let e = l.entry(key.clone()).or_insert(0);
            *e = e.checked_add(v.checked_mul(rc)?)?;
            if *e == 0 {
                l.remove(&key);
            }
        }
    }
    Some(l)
}

/// The dimension `d` when `e` is `threadIdx.d` once the locals assigned once are inlined and
/// `(x / C) * C + x % C` is folded into `x`.
pub(crate) fn thread_index_dim(
    kernel: &Kernel,
    once: &BTreeMap<cudarace_ir::LocalId, Expr>,
    e: &Expr,
) -> Option<cudarace_ir::Dim> {
    if let Expr::Builtin(cudarace_ir::Builtin::ThreadIdx(d)) = strip_casts(e) {
        return Some(*d);
    }
    let l = linear(kernel, once, e, 0)?;
    match l.iter().next() {
        Some((k, 1)) if l.len() == 1 => {
            let i = ["t.x", "t.y", "t.z"].iter().position(|t| t == k)?;
            Some(cudarace_ir::Dim::ALL[i])
        }
        _ => None,
    }
}

/// `blockDim.d <= C + k` for a kernel whose thread `C` (under `if (threadIdx.d == C)`, `C >=
/// 1`) writes a cell of a `__shared__` array `k` steps past its own slot along `d`, a slot
/// that another access of the array gives thread `C + k` (`s[t]` and, under `t == 31`,
/// `s[t + 1]`): the halo past the tile, loaded by the tile's last thread. The kernel names that
/// thread as the last one; a block with thread `C + k` would have it in the halo too. Part of
/// `shared-in-bounds`; not for a dimension the launch fixes. With several such guards on one
/// dimension, the largest bound.
pub fn halo_assumptions(
    kernel: &Kernel,
    block_fixed: [bool; 3],
    switches: &AssumptionSwitches,
) -> Vec<Assumption> {
    if !switches.shared_in_bounds {
        return vec![];
    }
    let once = assigned_once(kernel);
    // (array, index forms, write, guards (dimension, C)), per access of a `__shared__` array.
    type Seen = (u32, Vec<Linear>, bool, Vec<(usize, i64)>);
    let mut seen: Vec<Seen> = Vec::new();
    fn guards_of(
        kernel: &Kernel,
        once: &BTreeMap<cudarace_ir::LocalId, Expr>,
        cond: &Expr,
        out: &mut Vec<(usize, i64)>,
    ) {
        match strip_casts(cond) {
            Expr::Binary(BinOp::And, a, b) => {
                guards_of(kernel, once, a, out);
                guards_of(kernel, once, b, out);
            }
            Expr::Binary(BinOp::Eq, a, b) => {
                let (Some(x), Some(y)) = (linear(kernel, once, a, 0), linear(kernel, once, b, 0))
                else {
                    return;
                };
                for (t, c) in [(&x, &y), (&y, &x)] {
                    let (1, Some((key, 1))) = (t.len(), t.iter().next()) else {
                        continue;
                    };
                    let Some(d) = ["t.x", "t.y", "t.z"].iter().position(|k| k == key) else {
                        continue;
                    };
                    let value = match c.len() {
                        0 => 0,
                        1 => match c.get("") {
                            Some(v) => *v,
                            None => continue,
                        },
                        _ => continue,
                    };
                    out.push((d, value));
                }
            }
            _ => {}
        }
    }
    fn walk(
        kernel: &Kernel,
        once: &BTreeMap<cudarace_ir::LocalId, Expr>,
        b: &[Stmt],
        guards: &[(usize, i64)],
        seen: &mut Vec<Seen>,
    ) {
        for s in b {
            match s {
                Stmt::Access(a) => {
                    let Some(arr) = kernel.arrays.get(a.array.0 as usize) else {
                        continue;
                    };
                    if !(arr.space == MemSpace::Shared && arr.origin == ArrayOrigin::SharedDecl) {
                        continue;
                    }
                    let forms: Option<Vec<Linear>> =
                        a.index.iter().map(|i| linear(kernel, once, i, 0)).collect();
                    if let Some(forms) = forms.filter(|f| !f.is_empty()) {
                        let write = a.mode == cudarace_ir::AccessMode::Write;
                        seen.push((a.array.0, forms, write, guards.to_vec()));
                    }
                }
                Stmt::If {
                    cond,
                    then_branch,
                    else_branch,
                    ..
                } => {
                    let mut inner = guards.to_vec();
                    guards_of(kernel, once, cond, &mut inner);
                    walk(kernel, once, then_branch, &inner, seen);
                    walk(kernel, once, else_branch, guards, seen);
                }
                Stmt::Loop(l) => {
                    for blk in [&l.init, &l.cond_effects, &l.body, &l.step] {
                        walk(kernel, once, blk, guards, seen);
                    }
                }
                _ => {}
            }
        }
    }
    walk(kernel, &once, &kernel.body, &[], &mut seen);
    let mut bounds: BTreeMap<usize, (i64, i64, String)> = BTreeMap::new();
    for (array, p, write, guards) in &seen {
        if !write {
            continue;
        }
        for &(d, c) in guards {
            if c < 1 || block_fixed[d] {
                continue;
            }
            let key = ["t.x", "t.y", "t.z"][d];
            for (q_array, q, _, q_guards) in &seen {
                if q_array != array || q.len() != p.len() || q_guards.iter().any(|g| g.0 == d) {
                    continue;
                }
                // Equal but in one coordinate, which is `k` steps of `threadIdx.d` further.
                let mut shift = None;
                let mut same = true;
                for (pi, qi) in p.iter().zip(q) {
                    if pi == qi {
                        continue;
                    }
                    let a = pi.get(key).copied().unwrap_or(0);
                    let mut diff = pi.clone();
                    for (k, v) in qi {
                        let e = diff.entry(k.clone()).or_insert(0);
                        *e -= v;
                        if *e == 0 {
                            diff.remove(k);
                        }
                    }
                    let delta = match (diff.len(), diff.get("")) {
                        (1, Some(v)) => *v,
                        _ => 0,
                    };
                    if shift.is_some() || a == 0 || qi.get(key) != Some(&a) || delta % a != 0 {
                        same = false;
                        break;
                    }
                    shift = Some(delta / a);
                }
                let Some(k) = shift.filter(|k| *k >= 1 && same) else {
                    continue;
                };
                let Some(bound) = c.checked_add(k) else {
                    continue;
                };
                let name = kernel.arrays[*array as usize].name.clone();
                let e = bounds.entry(d).or_insert((bound, c, name.clone()));
                if bound > e.0 {
                    *e = (bound, c, name);
                }
            }
        }
    }
    bounds
        .into_iter()
        .map(|(d, (n, c, array))| {
            let dim = format!("blockDim.{}", cudarace_ir::Dim::ALL[d].name());
            Assumption {
                term: le(Term::Var(dim.clone().into()), int(n)),
                broken: Broken::BlockShape {
                    text: format!("{dim} > {n} (thread {c} fills the halo of `{array}`)"),
                },
            }
        })
        .collect()
}

/// The operands (casts stripped) of the order comparisons that *guard* something: in the condition of
/// an `if` whose branches hold an access, a barrier, a loop, a `return`/`break`/`continue` or
/// code the checker cannot see; of a loop; of a `?:`; of an assumption; and of an `if` that
/// only assigns locals when one of them is read in such a condition (a flag, `if (x >= n) ok
/// = false; … if (ok)`, `bool ok = x < n; if (ok)`). The other comparisons only choose values (`if (col < pad) y_pad = pad
/// - col;`): they keep nothing from an access, and say nothing of the range of what they test.
pub(crate) fn guard_operands(kernel: &Kernel) -> Vec<Expr> {
    fn comparands(e: &Expr, out: &mut Vec<Expr>) {
        walk_expr(
            e,
            &mut |x, _| {
                if let Expr::Binary(BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge, a, b) = x {
                    out.push(strip_casts(a).clone());
                    out.push(strip_casts(b).clone());
                }
            },
            false,
        );
    }
    fn only_assigns(b: &[Stmt]) -> bool {
        b.iter().all(|s| match s {
            Stmt::Assign { value, .. } => !has_ite(value),
            Stmt::If {
                then_branch,
                else_branch,
                ..
            } => only_assigns(then_branch) && only_assigns(else_branch),
            _ => false,
        })
    }
    fn has_ite(e: &Expr) -> bool {
        let mut found = false;
        walk_expr(e, &mut |x, _| found |= matches!(x, Expr::Ite(..)), false);
        found
    }
    fn reads_local(e: &Expr, locals: &std::collections::BTreeSet<cudarace_ir::LocalId>) -> bool {
        let mut found = false;
        walk_expr(
            e,
            &mut |x, _| found |= matches!(x, Expr::Local(l) if locals.contains(l)),
            false,
        );
        found
    }
    // Conditions that guard, and the `if`s that only choose values (condition, assigned).
    let mut guards: Vec<Expr> = Vec::new();
    // Loop conditions guard what they compare, but a value a choice sets and a loop bound reads
    // (`if (col < pad) loopc = kernel - pad;`) is a trip count, not a flag.
    let mut loop_guards: Vec<Expr> = Vec::new();
    let mut choosing: Vec<(Expr, std::collections::BTreeSet<cudarace_ir::LocalId>)> = Vec::new();
    visit_stmts(&kernel.body, &mut |s| match s {
        Stmt::If {
            cond,
            then_branch,
            else_branch,
            ..
        } => {
            if only_assigns(then_branch) && only_assigns(else_branch) {
                let mut assigned = std::collections::BTreeSet::new();
                cudarace_ir::assigned_locals(std::slice::from_ref(s), &mut assigned);
                choosing.push((cond.clone(), assigned));
            } else {
                guards.push(cond.clone());
            }
        }
        Stmt::Loop(l) => loop_guards.extend(l.cond.clone()),
        Stmt::Assume { cond, .. } => guards.push(cond.clone()),
        // A comparison kept in a local (`bool inside = x < n;`): a flag if a guard reads it.
        Stmt::Assign { local, value, .. } => {
            let mut tests = Vec::new();
            comparands(value, &mut tests);
            if !tests.is_empty() {
                choosing.push((value.clone(), [*local].into_iter().collect()));
            }
        }
        _ => {}
    });
    walk_block(&kernel.body, &mut |e, _| {
        if let Expr::Ite(c, _, _) = e {
            guards.push((**c).clone());
        }
    });
    // A flag: assigned by a choosing `if`, read in a guard (also one that is itself a flag's,
    // up to a fixed point).
    loop {
        let before = choosing.len();
        choosing.retain(|(cond, assigned)| {
            if guards.iter().any(|g| reads_local(g, assigned)) {
                guards.push(cond.clone());
                false
            } else {
                true
            }
        });
        if choosing.len() == before {
            break;
        }
    }
    let mut out = Vec::new();
    for g in guards.iter().chain(&loop_guards) {
        comparands(g, &mut out);
    }
    out
}

#[cfg(test)]
mod linear_tests {
    use super::*;

    #[test]
    fn a_quotient_and_remainder_by_the_same_constant_fold_back() {
        // 3 * 16 * (t.x / 16) + 3 * (t.x % 16) + 5 is 3 * t.x + 5.
        let x = Linear::from([("t.x".to_string(), 1)]);
        let text = linear_text(&x);
        let l = Linear::from([
            (format!("div|16|{text}"), 48),
            (format!("rem|16|{text}"), 3),
            (String::new(), 5),
        ]);
        assert_eq!(
            fold_divisions(l),
            Some(Linear::from([("t.x".to_string(), 3), (String::new(), 5)]))
        );
        // Not when the quotient's factor is not the divisor times the remainder's.
        let l = Linear::from([(format!("div|16|{text}"), 8), (format!("rem|16|{text}"), 1)]);
        assert_eq!(fold_divisions(l.clone()), Some(l));
    }
}
