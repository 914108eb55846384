//! The block shape a kernel is written for, read from the kernel itself when no launch fixes
//! it: per-thread slots of `__shared__` tiles every thread fills (`shared-in-bounds`), the halo
//! cell a guarded last thread fills, and block-stride loops with a constant step
//! (`constant-block-shape`).

use super::*;

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
pub(super) type Slot = (usize, i64, u32);

/// The slots every thread indexes in `b` before any may leave the kernel: those of its
/// statements in order, up to a `return` or code the checker cannot see (a call the checker
/// has no body for comes back: it does not stop the scan), those of both branches of an
/// `if`/`else` (every thread takes one of them: the same array, dimension and size in both),
/// and none from a loop (it may run no iteration). The second part: whether the scan stopped
/// (some thread may have left).
pub(super) fn every_thread_slots(
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
pub(super) fn returns_to_caller(o: &cudarace_ir::Opaque) -> bool {
    ["call to ", "method call ", "call through "]
        .iter()
        .any(|p| o.reason.starts_with(p))
}

/// Whether a thread may leave the kernel in `b` (a `return`, or code the checker cannot see).
pub(super) fn may_return(b: &[Stmt]) -> bool {
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
pub(super) fn row_major(e: &Expr, cols: Option<i64>) -> Option<(&Expr, &Expr)> {
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
/// `threadIdx.d`, or as `threadIdx.d / D` (`D` threads per step, a warp per row: the block
/// is `C * D`), (assigned just before it, or in its `init`; `thread_dim` says which values are
/// a thread index, `row * 16 + col` with `row = t / 16` and `col = t % 16` included), whose every assignment in the
/// loop adds the same constant `C` (one of them on the loop's own level: every iteration), that
/// the loop's condition tests and that indexes an array in its body. `entry`: the locals
/// holding a thread index on entry to `b`.
pub(super) fn stride_loops(
    b: &[Stmt],
    entry: &BTreeMap<cudarace_ir::LocalId, (cudarace_ir::Dim, i64)>,
    known: &BTreeMap<cudarace_ir::LocalId, Expr>,
    constant: &dyn Fn(&Expr) -> Option<i64>,
    thread_dim: &dyn Fn(&Expr) -> Option<cudarace_ir::Dim>,
    found: &mut Vec<(usize, i64)>,
) {
    let mut holds = entry.clone();
    // The value of each local assigned earlier in this straight-line code, its own locals
    // inlined: a counter computed from locals assigned twice (a row and a column split again
    // for a second phase) is still read at the value they hold where it is computed.
    let mut known = known.clone();
    let assign = |holds: &mut BTreeMap<_, _>,
                  known: &mut BTreeMap<cudarace_ir::LocalId, Expr>,
                  local: cudarace_ir::LocalId,
                  value: &Expr| {
        let value = inline_known(value, known);
        // A thread index, or one divided by a constant `D` (`row = threadIdx.x / 32`: a
        // warp's row): its loop covers `D` threads per step.
        let index = match strip_casts(&value) {
            Expr::Binary(BinOp::Div, x, k) => constant(k).and_then(|k| Some((thread_dim(x)?, k))),
            v => thread_dim(v).map(|d| (d, 1)),
        };
        match index {
            Some(d) => {
                holds.insert(local, d);
            }
            None => {
                holds.remove(&local);
            }
        }
        // What was known through the old value of `local` is no more; nor is a new value
        // that reads the old one (`pos = pos + 1` with `pos` not known).
        let changed = std::collections::BTreeSet::from([local]);
        forget(known, &changed);
        if known.len() < MAX_KNOWN && index_like(&value) && !reads_any_local(&value, &changed) {
            known.insert(local, value);
        }
    };
    for s in b {
        match s {
            Stmt::Assign { local, value, .. } => assign(&mut holds, &mut known, *local, value),
            Stmt::If {
                then_branch,
                else_branch,
                ..
            } => {
                stride_loops(then_branch, &holds, &known, constant, thread_dim, found);
                stride_loops(else_branch, &holds, &known, constant, thread_dim, found);
            }
            Stmt::Loop(l) => {
                let mut at_entry = holds.clone();
                let mut known_at_entry = known.clone();
                for s in &l.init {
                    if let Stmt::Assign { local, value, .. } = s {
                        assign(&mut at_entry, &mut known_at_entry, *local, value);
                    }
                }
                for (v, (d, per)) in &at_entry {
                    if let Some(c) = constant_step(l, *v, constant) {
                        if let Some(threads) = c.checked_mul(*per) {
                            found.push((d.index(), threads));
                        }
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
                let mut inner_known = known_at_entry;
                forget(&mut inner_known, &changed);
                for blk in [&l.cond_effects, &l.body, &l.step] {
                    stride_loops(blk, &inner, &inner_known, constant, thread_dim, found);
                }
            }
            _ => {}
        }
        // Whatever a branch, a loop or unmodelled code may change holds no thread index, and
        // no known value.
        if !matches!(s, Stmt::Assign { .. }) {
            let mut changed = std::collections::BTreeSet::new();
            cudarace_ir::assigned_locals(std::slice::from_ref(s), &mut changed);
            holds.retain(|l, _| !changed.contains(l));
            forget(&mut known, &changed);
        }
    }
}

/// Known values past which an inlined value is not kept (nodes), and how many are kept: on a
/// 500-line kernel of floating-point code, keeping every value made planning 4 s slower.
const MAX_KNOWN_SIZE: usize = 32;
const MAX_KNOWN: usize = 48;

/// Whether a value is worth keeping to inline: small, and made of indices and sizes only (no
/// memory, no unknown or floating-point value, which no thread index is built of).
fn index_like(e: &Expr) -> bool {
    let (mut n, mut data) = (0, false);
    walk_expr(
        e,
        &mut |x, _| {
            n += 1;
            data |= matches!(x, Expr::Load(_) | Expr::Unknown(_) | Expr::Float(_));
        },
        false,
    );
    n <= MAX_KNOWN_SIZE && !data
}

/// `e` with the locals of `known` replaced by their values.
fn inline_known(e: &Expr, known: &BTreeMap<cudarace_ir::LocalId, Expr>) -> Expr {
    match e {
        Expr::Local(l) => known.get(l).cloned().unwrap_or_else(|| e.clone()),
        Expr::Unary(op, a) => Expr::un(*op, inline_known(a, known)),
        Expr::Binary(op, a, b) => Expr::bin(*op, inline_known(a, known), inline_known(b, known)),
        Expr::Ite(c, a, b) => Expr::Ite(
            Box::new(inline_known(c, known)),
            Box::new(inline_known(a, known)),
            Box::new(inline_known(b, known)),
        ),
        Expr::Cast(t, a) => Expr::Cast(*t, Box::new(inline_known(a, known))),
        other => other.clone(),
    }
}

/// Drops from `known` the locals of `changed`, and the values that read one of them.
fn forget(
    known: &mut BTreeMap<cudarace_ir::LocalId, Expr>,
    changed: &std::collections::BTreeSet<cudarace_ir::LocalId>,
) {
    if !changed.is_empty() {
        known.retain(|l, v| !changed.contains(l) && !reads_any_local(v, changed));
    }
}

/// `C` when every assignment of `v` in the loop (past its `init`) is `v = v + C` with the same
/// constant, one of them on the loop's own level, the condition tests `v` and the body indexes
/// an array by it.
pub(super) fn constant_step(
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
pub(super) type Linear = BTreeMap<String, i64>;

/// `e` as a [`Linear`] form, inlining the locals of `once`; `None` past a small depth or for a
/// product of two varying values (those are compared by their text only as whole atoms).
pub(super) fn linear(
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
        // Values the same in every thread of a block are tagged `u:` (see `thread_index_dim`).
        Expr::Param(p) => match kernel.params.get(p.0 as usize)?.value {
            Some(v) => linear(kernel, once, &Expr::Int(v), depth + 1),
            None => atom(format!("u:{e:?}")),
        },
        Expr::Builtin(Builtin::BlockIdx(_) | Builtin::BlockDim(_) | Builtin::GridDim(_)) => {
            atom(format!("u:{e:?}"))
        }
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
pub(super) fn linear_text(l: &Linear) -> String {
    l.iter()
        .map(|(k, c)| format!("{c}*{k}"))
        .collect::<Vec<_>>()
        .join(";")
}

pub(super) fn parse_linear(text: &str) -> Option<Linear> {
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
pub(super) fn fold_divisions(mut l: Linear) -> Option<Linear> {
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

/// The dimension `d` when `e` is `threadIdx.d` plus a value the same in every thread of the
/// block (a constant, parameters, block indices and sizes: `blockIdx.x * N + threadIdx.x`, the
/// start of a block-stride loop over the block's part), once the locals assigned once are
/// inlined and `(x / C) * C + x % C` is folded into `x`.
pub(crate) fn thread_index_dim(
    kernel: &Kernel,
    once: &BTreeMap<cudarace_ir::LocalId, Expr>,
    e: &Expr,
) -> Option<cudarace_ir::Dim> {
    if let Expr::Builtin(cudarace_ir::Builtin::ThreadIdx(d)) = strip_casts(e) {
        return Some(*d);
    }
    let l = linear(kernel, once, e, 0)?;
    let mut thread = l
        .iter()
        .filter(|(k, _)| !(k.is_empty() || k.starts_with("u:")));
    match (thread.next(), thread.next()) {
        (Some((k, 1)), None) => {
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

/// `warp-sized-blocks`: a kernel that splits its threads into warps and lanes (`threadIdx.x /
/// 32`, `% 32`, `>> 5`, `& 31`, also of a global thread id or a local holding one, or
/// `warpSize`) or synchronizes full warps (`__syncwarp()` with the full mask) is written for
/// blocks of whole warps: its block's thread count is a multiple of 32, unless a launch fixes a
/// dimension it reads. With a partial warp, one hardware warp is split across two of the
/// kernel's warps (`tid / 32` differs) and their lanes run different code. `None` when the
/// kernel shows no such sign or the switch is off. The term names only the block dimensions the
/// kernel reads (`blockDim.x % 32 == 0`, or the product of those it reads).
pub fn warp_multiple_assumption(
    kernel: &Kernel,
    block_used: [bool; 3],
    block_symbolic: [bool; 3],
    switches: &AssumptionSwitches,
) -> Option<Assumption> {
    use cudarace_ir::{BarrierKind, Builtin, Dim};
    if !switches.warp_sized_blocks {
        return None;
    }
    // Every dimension the kernel reads must be open: a launch that gives one decides.
    let used: Vec<usize> = (0..3).filter(|d| block_used[*d]).collect();
    if used.is_empty() || used.iter().any(|d| !block_symbolic[*d]) {
        return None;
    }
    let once = assigned_once(kernel);
    let threadish = |e: &Expr| {
        thread_index(e)
            || match strip_casts(e) {
                Expr::Local(l) => once.get(l).is_some_and(thread_index),
                _ => false,
            }
    };
    let is_32 = |e: &Expr| {
        matches!(
            strip_casts(e),
            Expr::Int(32) | Expr::Builtin(Builtin::WarpSize)
        )
    };
    let mut warp_shaped = false;
    walk_block(&kernel.body, &mut |e, _| {
        if let Expr::Builtin(Builtin::WarpSize) = e {
            warp_shaped = true;
        }
        let Expr::Binary(op, a, b) = e else { return };
        let sign = match op {
            BinOp::Div | BinOp::Rem => is_32(b),
            BinOp::Shr => matches!(strip_casts(b), Expr::Int(5)),
            BinOp::BitAnd => {
                matches!(strip_casts(b), Expr::Int(31)) || matches!(strip_casts(a), Expr::Int(31))
            }
            _ => false,
        };
        if sign && (threadish(a) || threadish(b)) {
            warp_shaped = true;
        }
    });
    visit_stmts(&kernel.body, &mut |s| {
        if let Stmt::Barrier(b) = s {
            if matches!(b.kind, BarrierKind::Warp { mask: None }) {
                warp_shaped = true;
            }
        }
    });
    if !warp_shaped {
        return None;
    }
    let names: Vec<String> = used
        .iter()
        .map(|d| format!("blockDim.{}", Dim::ALL[*d].name()))
        .collect();
    let threads = names
        .iter()
        .map(|n| Term::Var(n.clone().into()))
        .reduce(mul)?;
    let mut parts = vec![eq(modulo(threads, int(32)), int(0))];
    // What follows for a 1-D block, spelled out for the solver: a block's first global thread
    // id is a multiple of 32 too (`blockIdx.x * blockDim.x`), so a global id's warp is the
    // block's first warp plus the thread's own (without it, proving that needs nonlinear
    // reasoning the solver is slow at).
    if used == [0] {
        for t in ['A', 'B'] {
            let first = mul(
                Term::Var(format!("{t}.bid.x").into()),
                Term::var("blockDim.x"),
            );
            parts.push(eq(modulo(first, int(32)), int(0)));
        }
    }
    Some(Assumption {
        term: and(parts),
        broken: Broken::BlockShape {
            text: format!("{} is not a multiple of 32", names.join(" * ")),
        },
    })
}

/// `one-to-one-thread-ids`: a thread id linearised with one block size as the radix of another
/// dimension's thread index (`threadIdx.x * blockDim.x + threadIdx.y`, or `threadIdx.y *
/// blockDim.y + threadIdx.x`) is written for blocks where that index stays below the radix:
/// `blockDim.y <= blockDim.x` (square blocks, the usual launch of such code, keep it). With a
/// larger `blockDim.y` two threads get one id; a race that needs it is conditional. One
/// assumption per pair of dimensions so combined, and only where no launch fixes either.
pub fn one_to_one_thread_id_assumptions(
    kernel: &Kernel,
    block_symbolic: [bool; 3],
    switches: &AssumptionSwitches,
) -> Vec<Assumption> {
    use cudarace_ir::{Builtin, Dim};
    if !switches.one_to_one_thread_ids {
        return Vec::new();
    }
    let once = assigned_once(kernel);
    // (digit's dimension, radix's dimension)
    let mut pairs: Vec<(usize, usize)> = Vec::new();
    walk_block(&kernel.body, &mut |e, _| {
        let Expr::Binary(BinOp::Add, _, _) = e else {
            return;
        };
        let mut terms = Vec::new();
        flatten_sum(e, &mut terms);
        let radixes: Vec<usize> = terms
            .iter()
            .filter_map(|t| {
                let Expr::Binary(BinOp::Mul, a, b) = strip_casts(t) else {
                    return None;
                };
                let (idx, radix) = match (strip_casts(a), strip_casts(b)) {
                    (x, Expr::Builtin(Builtin::BlockDim(d))) => (x, *d),
                    (Expr::Builtin(Builtin::BlockDim(d)), x) => (x, *d),
                    _ => return None,
                };
                thread_index_dim(kernel, &once, idx)?;
                Some(radix.index())
            })
            .collect();
        // Most sums have no block size as a radix: nothing to look for among their terms.
        if radixes.is_empty() {
            return;
        }
        for t in &terms {
            let Some(digit) = thread_index_dim(kernel, &once, t) else {
                continue;
            };
            let digit = digit.index();
            for r in &radixes {
                if *r != digit && !pairs.contains(&(digit, *r)) {
                    pairs.push((digit, *r));
                }
            }
        }
    });
    pairs
        .into_iter()
        .filter(|(d, r)| block_symbolic[*d] && block_symbolic[*r])
        .map(|(d, r)| {
            let (dn, rn) = (Dim::ALL[d].name(), Dim::ALL[r].name());
            Assumption {
                term: Term::le(
                    Term::var(format!("blockDim.{dn}")),
                    Term::var(format!("blockDim.{rn}")),
                ),
                broken: Broken::BlockShape {
                    text: format!("blockDim.{dn} > blockDim.{rn}"),
                },
            }
        })
        .collect()
}

/// The operands of a sum (`a + b + c`), casts looked through.
fn flatten_sum<'e>(e: &'e Expr, out: &mut Vec<&'e Expr>) {
    match strip_casts(e) {
        Expr::Binary(BinOp::Add, a, b) => {
            flatten_sum(a, out);
            flatten_sum(b, out);
        }
        x => out.push(x),
    }
}

/// Whether some block keeps `w` (a block-shape assumption), every assumption of `others` that
/// names only block sizes (`blockDim.x <= 16`, `blockDim.x == 64`) and the launch bounds
/// (`max_threads`): tried on blocks `(x, y, 1)` with `y` a power of two up to 32. An
/// assumption no block keeps would make every race conditional.
pub fn fits_block_assumptions(w: &Assumption, others: &[Assumption], max_threads: u64) -> bool {
    let on_block = |t: &Term| {
        let mut names = std::collections::BTreeSet::new();
        crate::terms::collect_vars(t, &mut names);
        !names.is_empty() && names.iter().all(|n| n.starts_with("blockDim."))
    };
    let shapes = (1..=1024i64).flat_map(|x| [1i64, 2, 4, 8, 16, 32].map(|y| (x, y)));
    shapes
        .filter(|(x, y)| u64::try_from(x * y).is_ok_and(|n| n <= max_threads))
        .any(|(x, y)| {
            let at: BTreeMap<String, i64> = [
                ("blockDim.x".to_string(), x),
                ("blockDim.y".to_string(), y),
                ("blockDim.z".to_string(), 1),
            ]
            .into_iter()
            .collect();
            crate::witness::eval_bool(&w.term, &at) == Some(true)
                && others
                    .iter()
                    .filter(|a| on_block(&a.term))
                    .all(|a| crate::witness::eval_bool(&a.term, &at) != Some(false))
        })
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
