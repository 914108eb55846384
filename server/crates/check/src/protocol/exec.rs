//! Symbolic execution of one kernel body for one symbolic thread.

use super::ctype::{convert, low_wrap, range_of, range_within, unwrap_low, CTy, Range};
use super::loops::{additive_step, induction_range};
use super::{
    AccInfo, LoopNode, NextIteration, Node, OpaqueUse, Protocol, SyncInfo, SyncKind, VarInfo,
};
use crate::terms::*;
use cudarace_ir::{
    AccessId, AccessMode, ArrayId, BarrierKind, BinOp, Block, Builtin, Expr, Kernel, LocalId, Loop,
    LoopKind, MemSpace, ScalarType, Span, Stmt, UnOp,
};
use cudarace_solver::{BitOp, Sort, Term};
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::Arc;

/// Values larger than this many term nodes are not tracked (see `Exec::set_local`).
const MAX_TERM_SIZE: usize = 4000;

/// How deeply the rests of blocks after `continue`/`break` are nested as branches (see
/// `exec_block`); past it, barriers are taken to order nothing, so that a long run of
/// `if (…) continue;` cannot make the recursion here and in aligning arbitrarily deep.
const MAX_SKIP_NESTING: u32 = 64;

/// How often symbolic execution reads the clock (statements between reads).
const STEPS_PER_CLOCK_READ: u32 = 32;

/// Symbolically execute `kernel` into its access protocol.
pub fn build(kernel: &Kernel) -> Protocol {
    build_until(kernel, &|| false)
}

/// [`build`] that stops when `stop()` says so (a deadline passed, the check was cancelled): the
/// protocol is then incomplete and says so ([`Protocol::out_of_time`]).
pub fn build_until(kernel: &Kernel, stop: &dyn Fn() -> bool) -> Protocol {
    let mut written = BTreeSet::new();
    scan_written(&kernel.body, &mut written);
    let mut ex = Exec {
        k: kernel,
        counter: 0,
        p: Protocol {
            written,
            ..Protocol::default()
        },
        env: vec![None; kernel.locals.len()],
        pc: tru(),
        dead: false,
        nonuniform_ctl: 0,
        assigned_nonuniform: HashSet::new(),
        returned_in_loop: false,
        skipped_rest: false,
        skip_nesting: 0,
        barriers_unordered: false,
        left_nonuniform: false,
        returned_nonuniform: false,
        loop_depth: 0,
        causes: Vec::new(),
        exits: Vec::new(),
        loads: HashMap::new(),
        pow2_vars: HashSet::new(),
        load_tys: HashMap::new(),
        float_loads: HashSet::new(),
        loops: 0,
        tables: HashMap::new(),
        epochs: Epochs::of(&kernel.body),
        epoch: None,
        write_sites: count_write_sites(&kernel.body),
        acc_wraps: Vec::new(),
        sync_wraps: Vec::new(),
        names: Vec::new(),
        assumed: Vec::new(),
        value_guards: Vec::new(),
        not_exited: Vec::new(),
        stop,
        steps: 0,
    };
    let mut root = Vec::new();
    // The top level, statement by statement, so that loads know their epoch (see `Epochs`).
    for (i, stmt) in kernel.body.iter().enumerate() {
        if ex.dead {
            break;
        }
        ex.epoch = ex.epochs.of_stmt.get(i).copied();
        ex.exec_stmt(stmt, &mut root);
    }
    ex.epoch = None;
    ex.p.root = root;
    for (a, w) in ex.p.accs.iter_mut().zip(std::mem::take(&mut ex.acc_wraps)) {
        a.guard = w.conjoin(std::mem::replace(&mut a.guard, tru()));
    }
    for (s, w) in
        ex.p.syncs
            .iter_mut()
            .zip(std::mem::take(&mut ex.sync_wraps))
    {
        let facts = std::mem::replace(&mut s.facts, tru());
        s.guard = w.conjoin(std::mem::replace(&mut s.guard, tru()));
        let mut outer_first = w.facts;
        outer_first.reverse();
        outer_first.push(facts);
        s.facts = and(outer_first);
    }
    ex.p
}

/// Conditions the enclosing loops add to one access's or barrier's guard, innermost loop first
/// (each loop pushes when its body is done). Conjoining them once, at the end, keeps a loop
/// nest linear: re-building every guard per enclosing loop cost the cube of the nesting depth.
#[derive(Debug, Default)]
struct Wraps {
    /// Conjuncts placed before the guard (each loop pushes its reach condition, then its range).
    before: Vec<Term>,
    /// Conjuncts placed after the guard (a barrier's "still in the loop"), innermost first.
    after: Vec<Term>,
    /// A barrier's facts: the ranges of the enclosing loops.
    facts: Vec<Term>,
}

impl Wraps {
    /// `and(outermost loop's conjuncts, …, innermost's, guard, after…)`: the guard as if each
    /// loop had wrapped it in turn.
    fn conjoin(&self, guard: Term) -> Term {
        let mut all: Vec<Term> = self.before.iter().rev().cloned().collect();
        all.push(guard);
        all.extend(self.after.iter().cloned());
        and(all)
    }
}

fn scan_written(b: &Block, out: &mut BTreeSet<ArrayId>) {
    for s in b {
        match s {
            Stmt::Access(a) if a.mode != AccessMode::Read => {
                out.insert(a.array);
            }
            Stmt::If {
                then_branch,
                else_branch,
                ..
            } => {
                scan_written(then_branch, out);
                scan_written(else_branch, out);
            }
            Stmt::Loop(l) => {
                for blk in [&l.init, &l.cond_effects, &l.body, &l.step] {
                    scan_written(blk, out);
                }
            }
            // An unmodelled load writes nothing.
            Stmt::Opaque(o) if !o.reads_only => out.extend(o.arrays.iter().copied()),
            _ => {}
        }
    }
}

/// How many statements may write each array (an opaque effect counts as two: never "once").
fn count_write_sites(b: &[Stmt]) -> HashMap<ArrayId, usize> {
    fn walk(b: &[Stmt], out: &mut HashMap<ArrayId, usize>) {
        for s in b {
            match s {
                Stmt::Access(a) if a.mode != AccessMode::Read => {
                    *out.entry(a.array).or_default() += 1;
                }
                Stmt::If {
                    then_branch,
                    else_branch,
                    ..
                } => {
                    walk(then_branch, out);
                    walk(else_branch, out);
                }
                Stmt::Loop(l) => {
                    for blk in [&l.init, &l.cond_effects, &l.body, &l.step] {
                        walk(blk, out);
                    }
                }
                Stmt::Opaque(o) if !o.reads_only => {
                    for a in &o.arrays {
                        *out.entry(*a).or_default() += 2;
                    }
                }
                _ => {}
            }
        }
    }
    let mut out = HashMap::new();
    walk(b, &mut out);
    out
}

/// The kernel's top level cut by the barriers every thread passes: a `__syncthreads()` or grid
/// sync directly in the kernel body, before any statement that may `return`. Two accesses in
/// different epochs are in different barrier intervals.
#[derive(Debug, Default)]
struct Epochs {
    /// Epoch of each top-level statement.
    of_stmt: Vec<u32>,
    /// (array, epoch) of every statement that may write the array (opaque effects included).
    writes: HashSet<(ArrayId, u32)>,
}

impl Epochs {
    fn of(body: &Block) -> Epochs {
        let mut e = Epochs::default();
        let mut epoch = 0u32;
        let mut cut = true;
        for s in body {
            e.of_stmt.push(epoch);
            match s {
                Stmt::Barrier(b) if cut && !matches!(b.kind, BarrierKind::Warp { .. }) => {
                    epoch += 1;
                }
                _ => {
                    for (a, _) in count_write_sites(std::slice::from_ref(s)) {
                        e.writes.insert((a, epoch));
                    }
                    // After a possible exit, later barriers may not be passed by every thread.
                    if contains_exit(s) {
                        cut = false;
                    }
                }
            }
        }
        e
    }
}

fn contains_exit(s: &Stmt) -> bool {
    match s {
        Stmt::Return { .. } => true,
        Stmt::If {
            then_branch,
            else_branch,
            ..
        } => then_branch.iter().chain(else_branch).any(contains_exit),
        Stmt::Loop(l) => [&l.init, &l.cond_effects, &l.body, &l.step]
            .into_iter()
            .flatten()
            .any(contains_exit),
        Stmt::Opaque(o) => o.may_sync,
        _ => false,
    }
}

/// A shared array that every thread of the block writes once, `a[tid.x + offset] = value`,
/// with `value` a function of its own thread index and of block-uniform values only, and that
/// nothing else writes. After a barrier all threads pass, reading `a[e]` gives the value thread
/// `e - offset` stored (issue 3, item 6: index tables built and then used). Sound because the
/// write is the array's only write and is complete before the barrier; where `e - offset` is not
/// a thread of the block (or the block is not one-dimensional) the read stays unknown.
#[derive(Debug, Clone)]
struct IndexTable {
    offset: Term,
    value: Term,
    /// The epoch of the write (see `Epochs`): reads in a later epoch see the whole table.
    written_in: u32,
}

impl IndexTable {
    /// The value of `a[e]`: what thread `e - offset` stored, if that is a thread of a 1-D block;
    /// `unknown` (the load's own fresh value) otherwise.
    fn read(&self, e: &Term, unknown: Term) -> Term {
        let writer = sub(e.clone(), self.offset.clone());
        let dim = |d: &str| Term::Var(format!("blockDim.{d}").into());
        let is_thread = and(vec![
            le(int(0), writer.clone()),
            lt(writer.clone(), dim("x")),
            eq(dim("y"), int(1)),
            eq(dim("z"), int(1)),
        ]);
        let stored = subst_with(&self.value, &mut |v| {
            (v == "$tid.x").then(|| writer.clone())
        });
        ite(is_thread, stored, unknown)
    }
}

/// Does the block contain a `continue` that belongs to the loop whose body it is?
fn has_own_continue(b: &Block) -> bool {
    b.iter().any(|s| match s {
        Stmt::Continue { .. } => true,
        Stmt::If {
            then_branch,
            else_branch,
            ..
        } => has_own_continue(then_branch) || has_own_continue(else_branch),
        _ => false,
    })
}

fn type_range(ty: ScalarType) -> (Sort, Option<i64>, Option<i64>) {
    match ty {
        ScalarType::Bool => (Sort::Bool, None, None),
        ScalarType::Int { bits, signed } => {
            let bits = bits.clamp(1, 64) as u32;
            if signed {
                let hi = if bits >= 64 {
                    i64::MAX
                } else {
                    (1i64 << (bits - 1)) - 1
                };
                let lo = if bits >= 64 {
                    i64::MIN
                } else {
                    -(1i64 << (bits - 1))
                };
                (Sort::Int, Some(lo), Some(hi))
            } else {
                let hi = if bits >= 63 {
                    i64::MAX
                } else {
                    (1i64 << bits) - 1
                };
                (Sort::Int, Some(0), Some(hi))
            }
        }
        _ => (Sort::Int, None, None),
    }
}

struct Exec<'k> {
    k: &'k Kernel,
    /// Whether to give up (see [`build_until`]), asked every [`STEPS_PER_CLOCK_READ`] statements.
    stop: &'k dyn Fn() -> bool,
    steps: u32,
    counter: u32,
    p: Protocol,
    env: Vec<Option<Term>>,
    /// Path condition of the current thread.
    pc: Term,
    /// The rest of the current block is unreachable (after return/break/continue).
    dead: bool,
    /// Depth of enclosing thread-dependent branches inside the current loop body.
    nonuniform_ctl: u32,
    /// Locals assigned under thread-dependent control in the current loop body.
    assigned_nonuniform: HashSet<LocalId>,
    returned_in_loop: bool,
    /// A `continue` or `break` ended some path in the statement being executed: threads on it
    /// skip the rest of the loop body, yet keep running (see `exec_block`).
    skipped_rest: bool,
    /// Branches made by `exec_block` around the rests of blocks, enclosing this point.
    skip_nesting: u32,
    /// Past `MAX_SKIP_NESTING`: the barriers of the current loop body order nothing.
    barriers_unordered: bool,
    /// A thread-dependent `break`/`return` left the innermost loop: later iterations' barriers
    /// are not reached by every thread.
    left_nonuniform: bool,
    /// A thread-dependent `return` (leaves every enclosing loop).
    returned_nonuniform: bool,
    loop_depth: u32,
    /// Enclosing thread-dependent conditions (for divergence messages).
    causes: Vec<(Span, String)>,
    /// Thread-dependent early exits seen so far, each with whether it leaves the kernel (a
    /// `return`; a `break` or `continue` is forgotten after its loop: threads that took it go
    /// on after the loop with the others, so it cannot be why a later barrier is missed).
    exits: Vec<(Span, String, bool)>,
    loads: HashMap<AccessId, Term>,
    /// Head variables of loops known to range over powers of two.
    pow2_vars: HashSet<String>,
    /// C types of loaded values (the element type of the array read).
    load_tys: HashMap<AccessId, Option<CTy>>,
    /// Loads of floating-point elements (see [`Exec::is_float`]).
    float_loads: HashSet<AccessId>,
    /// Conditions of the enclosing loops, per access and per barrier (parallel to `p.accs`
    /// and `p.syncs`).
    acc_wraps: Vec<Wraps>,
    sync_wraps: Vec<Wraps>,
    /// Top-level barrier epochs of the kernel, and the epoch of the top-level statement being
    /// executed (`None` outside that walk).
    epochs: Epochs,
    epoch: Option<u32>,
    /// Shared index tables written once by every thread (see `IndexTable`), by array.
    tables: HashMap<ArrayId, IndexTable>,
    /// Write statements per array in the whole kernel (opaque effects count as many).
    write_sites: HashMap<ArrayId, usize>,
    /// Loops executed so far (tags of their next-iteration copies, see `NextIteration`).
    loops: u32,
    /// Names of the fresh values by counter id (`names[id - 1]`), so that a loop finds the
    /// values its body created without scanning every value of the kernel.
    names: Vec<String>,
    /// For each thread-dependent `return` seen so far: the thread did not take it.
    not_exited: Vec<Term>,
    /// `__assume`/`__requires`/`assert` seen so far, each as `path condition ⇒ cond`: facts
    /// about the thread's values that guard every later access and barrier.
    assumed: Vec<Term>,
    /// Conditions under which the subexpression being evaluated is evaluated at all (the
    /// taken side of `c ? a : b`, the right operand of `&&`/`||`): a division there traps only
    /// when they hold.
    value_guards: Vec<Term>,
}

impl<'k> Exec<'k> {
    /// A fresh value: `prefix` is `$` (per thread), `%` (per block) or "" (grid).
    fn fresh(&mut self, prefix: &str, base: &str, info: VarInfo) -> Term {
        self.counter += 1;
        let name = format!("{base}@{}", self.counter);
        self.p.vars.insert(name.clone(), info);
        self.names.push(name.clone());
        Term::Var(format!("{prefix}{name}").into())
    }

    /// Records a value known to differ from others (see [`crate::protocol::DistinctVar`]). A
    /// ticket whose counter cell depends on a thread or on a value created during execution
    /// (a loop counter, whose per-iteration copies would not match) stays a plain unknown.
    fn record_distinct(&mut self, name: &str, d: cudarace_ir::Distinct) {
        let counter = match d {
            cudarace_ir::Distinct::PerThread => None,
            cudarace_ir::Distinct::Ticket { counter } => {
                let Some(acc) = self.p.accs.iter().rev().find(|a| a.id == counter) else {
                    return;
                };
                let mut stable = true;
                for t in &acc.index {
                    visit_vars(t, &mut |v| {
                        if v.starts_with('$')
                            || v.starts_with('^')
                            || crate::protocol::fresh_id(crate::protocol::base_name(v)).is_some()
                        {
                            stable = false;
                        }
                    });
                }
                if !stable {
                    return;
                }
                let shared = self
                    .k
                    .arrays
                    .get(acc.array.0 as usize)
                    .is_some_and(|a| a.space == cudarace_ir::MemSpace::Shared);
                Some((acc.array, acc.index.clone(), shared))
            }
        };
        self.p.distinct.insert(
            crate::protocol::var_key(name).to_string(),
            crate::protocol::DistinctVar { counter },
        );
    }

    fn fresh_unknown(&mut self, varying: bool, base: &str, reason: String) -> Term {
        self.fresh_unknown_of(Sort::Int, varying, base, reason)
    }

    /// An unknown value of local `l`: of its sort (a `bool` local's unknown is a Bool, or
    /// comparing it with the local's loop head makes the query malformed).
    fn fresh_local_unknown(&mut self, l: LocalId, varying: bool, reason: String) -> Term {
        let (_, sort, ..) = self.local_info(l);
        self.fresh_unknown_of(sort, varying, "unknown", reason)
    }

    fn fresh_unknown_of(&mut self, sort: Sort, varying: bool, base: &str, reason: String) -> Term {
        let prefix = if varying { "$" } else { "%" };
        self.fresh(
            prefix,
            base,
            VarInfo {
                sort,
                reason: Some(reason),
                lo: None,
                hi: None,
            },
        )
    }

    /// Out of time: nothing more is executed (the caller gives the kernel up, see
    /// [`Protocol::out_of_time`]).
    fn past_deadline(&mut self) -> bool {
        if self.p.out_of_time {
            return true;
        }
        self.steps = self.steps.wrapping_add(1);
        if self.steps % STEPS_PER_CLOCK_READ == 1 && (self.stop)() {
            self.p.out_of_time = true;
            self.dead = true;
        }
        self.p.out_of_time
    }

    /// Assign a local; a value grown too large to track (e.g. a chain of conditional updates,
    /// whose merged `ite` doubles per branch) is replaced by an unknown of the same variance.
    fn set_local(&mut self, l: LocalId, v: Term) {
        let v = if term_size_exceeds(&v, MAX_TERM_SIZE) {
            let name = self
                .k
                .locals
                .get(l.0 as usize)
                .map(|x| x.name.clone())
                .unwrap_or_default();
            let varying = thread_varying(&v);
            self.fresh_local_unknown(
                l,
                varying,
                format!("the value of `{name}` (too complex to track)"),
            )
        } else {
            v
        };
        if let Some(slot) = self.env.get_mut(l.0 as usize) {
            *slot = Some(v);
        }
    }

    fn is_bool(&self, t: &Term) -> bool {
        match t {
            Term::Bool(_)
            | Term::Eq(..)
            | Term::Lt(..)
            | Term::Le(..)
            | Term::And(_)
            | Term::Or(_)
            | Term::Not(_)
            | Term::Implies(..) => true,
            Term::Ite(_, a, _) => self.is_bool(a),
            Term::Var(v) => self
                .p
                .vars
                .get(super::base_name(v))
                .map(|i| i.sort == Sort::Bool)
                .unwrap_or(false),
            _ => false,
        }
    }

    fn to_bool(&self, t: Term) -> Term {
        if self.is_bool(&t) {
            t
        } else {
            not(eq(t, int(0)))
        }
    }

    fn to_int(&self, t: Term) -> Term {
        if self.is_bool(&t) {
            ite(t, int(1), int(0))
        } else {
            t
        }
    }

    fn param_var(&mut self, idx: usize) -> Term {
        let p = &self.k.params[idx];
        if let Some(v) = p.value {
            return int(v);
        }
        match p.ty {
            ScalarType::Int { .. } | ScalarType::Bool => {
                let (sort, lo, hi) = type_range(p.ty);
                let name = format!("param.{}", p.name);
                self.p.vars.entry(name.clone()).or_insert(VarInfo {
                    sort,
                    reason: None,
                    lo,
                    hi,
                });
                Term::Var(name.into())
            }
            _ => {
                let reason = format!("the value of parameter `{}`", p.name);
                self.fresh_unknown(false, "unknown", reason)
            }
        }
    }

    fn eval(&mut self, e: &Expr) -> Term {
        match e {
            Expr::Int(v) => int(*v),
            Expr::Bool(b) => Term::Bool(*b),
            Expr::Float(_) => self.fresh_unknown(false, "unknown", "a floating-point value".into()),
            Expr::Builtin(b) => match b {
                Builtin::ThreadIdx(d) => {
                    self.p.block_dims_used[d.index()] = true;
                    Term::Var(format!("$tid.{}", d.name()).into())
                }
                Builtin::BlockIdx(d) => {
                    self.p.grid_dims_used[d.index()] = true;
                    Term::Var(format!("%bid.{}", d.name()).into())
                }
                Builtin::BlockDim(d) => {
                    self.p.block_dims_used[d.index()] = true;
                    Term::Var(format!("blockDim.{}", d.name()).into())
                }
                Builtin::GridDim(d) => {
                    self.p.grid_dims_used[d.index()] = true;
                    Term::Var(format!("gridDim.{}", d.name()).into())
                }
                Builtin::WarpSize => int(32),
            },
            Expr::Param(p) => self.param_var(p.0 as usize),
            Expr::Local(l) => match self.env.get(l.0 as usize).cloned().flatten() {
                Some(t) => t,
                None => {
                    let name = self
                        .k
                        .locals
                        .get(l.0 as usize)
                        .map(|l| l.name.clone())
                        .unwrap_or_default();
                    let t = self.fresh_local_unknown(
                        *l,
                        true,
                        format!("the uninitialized value of `{name}`"),
                    );
                    if let Some(slot) = self.env.get_mut(l.0 as usize) {
                        *slot = Some(t.clone());
                    }
                    t
                }
            },
            Expr::Load(a) => match self.loads.get(a) {
                Some(t) => t.clone(),
                None => self.fresh_unknown(true, "load", "data read from memory".into()),
            },
            Expr::Unknown(u) => {
                let (uniform, grid, reason, distinct) = match self.k.unknowns.get(u.0 as usize) {
                    Some(uv) => (uv.uniform, uv.grid, uv.reason.clone(), uv.distinct.clone()),
                    None => (false, false, "an unmodelled value".to_string(), None),
                };
                let t = if grid {
                    // No prefix: one value for both threads, in the same block or not.
                    let info = VarInfo {
                        sort: Sort::Int,
                        reason: Some(reason),
                        lo: None,
                        hi: None,
                    };
                    self.fresh("", "unknown", info)
                } else {
                    self.fresh_unknown(!uniform, "unknown", reason)
                };
                if let (Some(d), Term::Var(name)) = (distinct, &t) {
                    self.record_distinct(name, d);
                }
                t
            }
            Expr::Unary(op, a) => {
                let ty = self.ty_of(e);
                let a = self.eval(a);
                let v = match op {
                    UnOp::Neg => match a {
                        Term::Int(v) => v
                            .checked_neg()
                            .map(int)
                            .unwrap_or(Term::Neg(Arc::new(int(v)))),
                        other => Term::Neg(Arc::new(self.to_int(other))),
                    },
                    UnOp::Not => not(self.to_bool(a)),
                    UnOp::BitNot => Term::Bit {
                        op: BitOp::Not,
                        width: 32,
                        signed: true,
                        args: vec![self.to_int(a)].into(),
                    },
                };
                if *op == UnOp::Not {
                    v
                } else {
                    self.wrap_result(v, ty)
                }
            }
            Expr::Binary(op, a, b) => {
                let (a_expr, b_expr) = (&**a, &**b);
                let (ta, tb) = (self.ty_of(a), self.ty_of(b));
                let common = CTy::common(ta, tb);
                let a = self.eval(a);
                // `a && b` evaluates `b` only where `a` holds, `a || b` only where it fails.
                let b = match op {
                    BinOp::And | BinOp::Or => {
                        let c = self.to_bool(a.clone());
                        let c = if *op == BinOp::And { c } else { not(c) };
                        self.value_guards.push(c);
                        let b = self.eval(b);
                        self.value_guards.pop();
                        b
                    }
                    _ => self.eval(b),
                };
                match op {
                    // Wrapping commutes with these: wrap the mathematical result once. An
                    // unsigned operand that is itself a wrapped difference is taken unwrapped
                    // (`blockIdx.y - s + gridDim.y` is `by - s + gy`, wrapped once: with
                    // `s <= gy` it never goes below zero, where wrapping `by - s` first and
                    // adding `gy` after would pass 2^32, which is not modelled).
                    BinOp::Add | BinOp::Sub | BinOp::Mul => {
                        let (a, b) = match common {
                            Some(ty) if !ty.signed && *op != BinOp::Mul => {
                                let plain = |t: Term| unwrap_low(&t, ty.bits).cloned().unwrap_or(t);
                                (plain(a), plain(b))
                            }
                            _ => (a, b),
                        };
                        let v = self.binary(*op, a, b);
                        self.wrap_result(v, common)
                    }
                    BinOp::Shl => {
                        let v = self.binary(*op, a, b);
                        self.wrap_result(v, ta.map(CTy::promoted))
                    }
                    // These see the converted operands (`-1 < 1u` is false in C).
                    // A floating-point division by zero is IEEE 754's infinity or NaN, not
                    // undefined behaviour: the thread runs on, so nothing is assumed of `b`.
                    BinOp::Div if self.is_float(a_expr) || self.is_float(b_expr) => div(a, b),
                    BinOp::Div
                    | BinOp::Rem
                    | BinOp::Lt
                    | BinOp::Le
                    | BinOp::Gt
                    | BinOp::Ge
                    | BinOp::Eq
                    | BinOp::Ne => {
                        let a = self.convert(a, ta, common);
                        let b = self.convert(b, tb, common);
                        self.binary(*op, a, b)
                    }
                    BinOp::Shr => {
                        let a = self.convert(a, ta, ta.map(CTy::promoted));
                        self.binary(*op, a, b)
                    }
                    _ => self.binary(*op, a, b),
                }
            }
            Expr::Ite(c, a, b) => {
                let c = self.eval(c);
                let c = self.to_bool(c);
                self.value_guards.push(c.clone());
                let a = self.eval(a);
                self.value_guards.pop();
                self.value_guards.push(not(c.clone()));
                let b = self.eval(b);
                self.value_guards.pop();
                if self.is_bool(&a) != self.is_bool(&b) {
                    let (a, b) = (self.to_int(a), self.to_int(b));
                    ite(c, a, b)
                } else {
                    ite(c, a, b)
                }
            }
            Expr::Cast(ty, a) => {
                let from = self.ty_of(a);
                let v = self.eval(a);
                match ty {
                    ScalarType::Int { .. } => {
                        let v = self.to_int(v);
                        self.convert(v, from, Self::target_ty(*ty))
                    }
                    ScalarType::Float => self.to_int(v),
                    ScalarType::Bool => self.to_bool(v),
                    _ => {
                        let varying = thread_varying(&v);
                        self.fresh_unknown(
                            varying,
                            "unknown",
                            "a value of a non-integer type".into(),
                        )
                    }
                }
            }
        }
    }

    /// Non-negative by shape: thread/block indices, launch sizes, unsigned values, and sums and
    /// products of those.
    fn non_negative(&self, t: &Term) -> bool {
        match t {
            Term::Int(v) => *v >= 0,
            Term::Var(v) => {
                let base = super::base_name(v);
                base.starts_with("tid.")
                    || base.starts_with("bid.")
                    || base.starts_with("blockDim.")
                    || base.starts_with("gridDim.")
                    || self
                        .p
                        .vars
                        .get(base)
                        .is_some_and(|i| i.sort == Sort::Int && i.lo.is_some_and(|lo| lo >= 0))
                    || self.pc_bounds_below(t)
            }
            Term::Add(ts) | Term::Mul(ts) => ts.iter().all(|x| self.non_negative(x)),
            Term::Mod(..) => true,
            Term::Div(a, b) => self.non_negative(a) && self.non_negative(b),
            _ => false,
        }
    }

    /// The path condition has a conjunct `c < t` (c >= -1) or `c <= t` (c >= 0): t >= 0 here
    /// (e.g. `s` inside `for (int s = …; s > 0; s >>= 1)`).
    fn pc_bounds_below(&self, t: &Term) -> bool {
        let conj: Vec<&Term> = match &self.pc {
            Term::And(ts) => ts.iter().collect(),
            other => vec![other],
        };
        conj.iter().any(|c| match c {
            Term::Lt(lo, x) => **x == *t && as_int(lo).is_some_and(|v| v >= -1),
            Term::Le(lo, x) => **x == *t && as_int(lo).is_some_and(|v| v >= 0),
            _ => false,
        })
    }

    /// The C type of an expression (after promotion; `None` for non-integers and unknowns).
    fn ty_of(&self, e: &Expr) -> Option<CTy> {
        match e {
            Expr::Int(v) => Some(if i32::try_from(*v).is_ok() {
                CTy::INT
            } else {
                CTy::LONG
            }),
            Expr::Bool(_) => Some(CTy::INT),
            Expr::Float(_) | Expr::Unknown(_) => None,
            Expr::Builtin(Builtin::WarpSize) => Some(CTy::INT),
            Expr::Builtin(_) => Some(CTy::UINT),
            Expr::Param(p) => self.k.params.get(p.0 as usize).and_then(|p| CTy::of(p.ty)),
            Expr::Local(l) => self.k.locals.get(l.0 as usize).and_then(|l| CTy::of(l.ty)),
            Expr::Load(a) => self.load_tys.get(a).copied().flatten(),
            Expr::Unary(UnOp::Not, _) => Some(CTy::INT),
            Expr::Unary(_, a) => self.ty_of(a).map(CTy::promoted),
            Expr::Binary(op, a, b) => match op {
                BinOp::Lt
                | BinOp::Le
                | BinOp::Gt
                | BinOp::Ge
                | BinOp::Eq
                | BinOp::Ne
                | BinOp::And
                | BinOp::Or => Some(CTy::INT),
                BinOp::Shl | BinOp::Shr => self.ty_of(a).map(CTy::promoted),
                _ => CTy::common(self.ty_of(a), self.ty_of(b)),
            },
            Expr::Ite(_, a, b) => CTy::common(self.ty_of(a), self.ty_of(b)),
            Expr::Cast(ty, _) => CTy::of(*ty).map(CTy::promoted),
        }
    }

    /// Floating-point by C's usual arithmetic conversions: a `float`/`double` literal,
    /// parameter, local, element or cast, or arithmetic with one. (An unknown value is not: it
    /// may be an integer.)
    fn is_float(&self, e: &Expr) -> bool {
        let float = |ty: Option<ScalarType>| ty == Some(ScalarType::Float);
        match e {
            Expr::Float(_) => true,
            Expr::Param(p) => float(self.k.params.get(p.0 as usize).map(|p| p.ty)),
            Expr::Local(l) => float(self.k.locals.get(l.0 as usize).map(|l| l.ty)),
            Expr::Load(a) => self.float_loads.contains(a),
            Expr::Unary(UnOp::Neg, a) => self.is_float(a),
            Expr::Binary(BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div, a, b) => {
                self.is_float(a) || self.is_float(b)
            }
            Expr::Ite(_, a, b) => self.is_float(a) || self.is_float(b),
            Expr::Cast(ty, _) => *ty == ScalarType::Float,
            _ => false,
        }
    }

    /// The declared (unpromoted) type a cast or an assignment converts to.
    fn target_ty(ty: ScalarType) -> Option<CTy> {
        match ty {
            ScalarType::Bool => None,
            other => CTy::of(other),
        }
    }

    /// The interval of a variable: launch limits for thread/block ids and sizes, the declared
    /// range of typed values, and bounds the path condition states (`0 < s` in `s > 0` loops).
    fn var_range(&self, v: &str) -> Range {
        let mut r = self.declared_range(v);
        let conj: Vec<&Term> = match &self.pc {
            Term::And(ts) => ts.iter().collect(),
            other => vec![other],
        };
        let is_v = |t: &Term| matches!(t, Term::Var(n) if &**n == v);
        // Bounds of the other side (declared ranges only, so that this cannot recurse).
        let lo_of = |t: &Term| range_of(t, &|x| self.declared_range(x)).lo;
        let hi_of = |t: &Term| range_of(t, &|x| self.declared_range(x)).hi;
        let raise = |r: &mut Range, l: i128| r.lo = Some(r.lo.map_or(l, |x| x.max(l)));
        let lower = |r: &mut Range, h: i128| r.hi = Some(r.hi.map_or(h, |x| x.min(h)));
        for t in conj {
            match t {
                Term::Lt(a, b) if is_v(b) => {
                    lo_of(a).into_iter().for_each(|k| raise(&mut r, k + 1))
                }
                Term::Le(a, b) if is_v(b) => lo_of(a).into_iter().for_each(|k| raise(&mut r, k)),
                Term::Lt(a, b) if is_v(a) => {
                    hi_of(b).into_iter().for_each(|k| lower(&mut r, k - 1))
                }
                Term::Le(a, b) if is_v(a) => hi_of(b).into_iter().for_each(|k| lower(&mut r, k)),
                _ => {}
            }
        }
        r
    }

    /// The interval of a variable from launch limits and declared types alone.
    fn declared_range(&self, v: &str) -> Range {
        let base = super::base_name(v);
        if base.starts_with("tid.") {
            Range::new(0, 1023)
        } else if base.starts_with("bid.") {
            Range::new(0, (1 << 31) - 2)
        } else if base.starts_with("blockDim.") {
            Range::new(1, 1024)
        } else if base.starts_with("gridDim.") {
            Range::new(1, (1 << 31) - 1)
        } else {
            match self.p.vars.get(super::var_key(v)) {
                Some(i) if i.sort == Sort::Bool => Range::new(0, 1),
                Some(i) => Range {
                    lo: i.lo.map(i128::from),
                    hi: i.hi.map(i128::from),
                },
                None => Range::ANY,
            }
        }
    }

    fn range(&self, t: &Term) -> Range {
        let known = self.compound_bounds();
        range_within(t, &|v| self.var_range(v), &|x| {
            known
                .iter()
                .filter(|(c, _)| *c == x)
                .fold(Range::ANY, |r, (_, b)| r.meet(*b))
        })
    }

    /// Bounds the path condition states of compound terms (`s < S` with `0 <= s` inside a
    /// loop: `S >= 1`), read once per [`Self::range`] (variables get theirs from
    /// [`Self::var_range`]).
    fn compound_bounds(&self) -> Vec<(&Term, Range)> {
        let conj: Vec<&Term> = match &self.pc {
            Term::And(ts) => ts.iter().collect(),
            other => vec![other],
        };
        let lo_of = |t: &Term| range_of(t, &|x| self.declared_range(x)).lo;
        let hi_of = |t: &Term| range_of(t, &|x| self.declared_range(x)).hi;
        let compound = |t: &Term| !matches!(t, Term::Var(_) | Term::Int(_));
        let mut out = Vec::new();
        for c in conj {
            let (Term::Lt(a, b) | Term::Le(a, b)) = c else {
                continue;
            };
            let strict = matches!(c, Term::Lt(..));
            if let Some(k) = lo_of(a).filter(|_| compound(b)) {
                let lo = Some(if strict { k + 1 } else { k });
                out.push((&**b, Range { lo, hi: None }));
            }
            if let Some(k) = hi_of(b).filter(|_| compound(a)) {
                let hi = Some(if strict { k - 1 } else { k });
                out.push((&**a, Range { lo: None, hi }));
            }
        }
        out
    }

    /// Convert a value of type `from` to type `to` (C conversions; see [`super::ctype`]).
    fn convert(&self, t: Term, from: Option<CTy>, to: Option<CTy>) -> Term {
        if from.is_none() || to.is_none() || self.is_bool(&t) {
            return t;
        }
        convert(t, to, &|x| self.range(x))
    }

    /// The result of arithmetic in type `ty`: unsigned results that may be negative wrap.
    fn wrap_result(&self, t: Term, ty: Option<CTy>) -> Term {
        match ty {
            Some(ty) if !ty.signed => {
                let r = self.range(&t);
                low_wrap(t, ty.bits, r)
            }
            _ => t,
        }
    }

    /// A power of two by shape: a constant, a head variable of a doubling/halving loop over
    /// powers of two, or one of those divided by a constant power of two (`k >> 1`).
    fn is_pow2(&self, t: &Term) -> bool {
        match t {
            Term::Int(v) => *v > 0 && v & (v - 1) == 0,
            Term::Var(n) => self.pow2_vars.contains(&**n),
            Term::Div(a, b) => self.is_pow2(a) && self.is_pow2(b),
            Term::Mul(ts) => !ts.is_empty() && ts.iter().all(|x| self.is_pow2(x)),
            _ => false,
        }
    }

    /// Division and remainder by zero are undefined behaviour, not executions: a thread that
    /// gets past `a / b` (on the path and in the subexpression where it is evaluated) had
    /// `b != 0`. Recorded like an `__assume`, so no witness divides by zero.
    fn divisor_nonzero(&mut self, b: &Term) {
        if matches!(b, Term::Int(v) if *v != 0) {
            return;
        }
        let mut when = vec![self.pc.clone()];
        when.extend(self.value_guards.iter().cloned());
        let when = and(when);
        let nonzero = not(Term::eq(b.clone(), int(0)));
        let fact = match when {
            Term::Bool(true) => nonzero,
            w => Term::implies(w, nonzero),
        };
        if fact != tru() && !self.assumed.contains(&fact) {
            self.assumed.push(fact);
        }
    }

    /// The dividend of `(x - x % d) / d` as `x`: C's `x - x % d` is `d * (x / d)` exactly, so the
    /// quotient is `x / d` (a digit taken off a flat index before the division,
    /// `i = (i - i % n) / n`). The solver would otherwise need nonlinear reasoning to see that
    /// the remainder it subtracts leaves nothing for the division to truncate. A Euclidean
    /// `mod` (what `%` becomes for non-negative operands) agrees with `%` only for `x >= 0`.
    fn without_own_remainder(&self, a: Term, d: &Term) -> Term {
        if let Term::Sub(x, r) = &a {
            match &**r {
                Term::Rem(y, e) if y == x && &**e == d => return (**x).clone(),
                Term::Mod(y, e) if y == x && &**e == d && self.non_negative(x) => {
                    return (**x).clone()
                }
                _ => {}
            }
        }
        a
    }

    /// `a + b`, with a number taken apart and put together again read as the number:
    /// `(x / d) * d + x % d` is `x` (C's division and remainder, for any `d` but 0), also with
    /// a common factor (`(x / d) * d * g + (x % d) * g` is `x * g`) and with the remainder of
    /// a coarser modulus (`((y % (m * n)) / n) * n + y % n` is `y % (m * n)`: `n` divides `m *
    /// n`). A flat index split into digits and rebuilt (`((b * C + c) * H + h) * W + w` from
    /// `w = i % W`, `h = i / W % H`, …, or `im * M * N + r / N * N + i % N` from `r = i % (M *
    /// N)`) is then, by a fact the query holds, the index itself, which the solver needs no
    /// nonlinear reasoning for.
    fn recomposed(&mut self, a: Term, b: Term) -> Term {
        // The summands of both sides (`image * M * N + r / N * N + i % N` is built as
        // `(image * M * N + r / N * N) + i % N`: the digit and its remainder meet only in the
        // second sum), paired while some pair puts a number together.
        let mut terms: Vec<Term> = Vec::new();
        for t in [&a, &b] {
            match t {
                Term::Add(ts) if ts.len() <= 16 => terms.extend(ts.iter().cloned()),
                _ => terms.push(t.clone()),
            }
        }
        // Digits kept in unsigned locals are wrapped where their sign is not known
        // (`ite(x < 0, x + 2^64, x)`, see `ctype::low_wrap`): the pairing looks through the
        // wraps, and the identity then holds where each wrap is the identity (`x >= 0`).
        let mut unwrapped_when = Vec::new();
        let mut budget = MAX_UNWRAPPED_NODES;
        let stripped: Vec<Term> = terms
            .iter()
            .map(|t| without_wraps(t, &mut unwrapped_when, &mut budget))
            .collect();
        if !unwrapped_when.is_empty() {
            terms = stripped;
        }
        // Most sums hold no quotient and remainder to pair: nothing to try (this runs for every
        // `+` the kernel executes).
        let has = |kind: fn(&Term) -> bool| terms.iter().any(|t| factors_of(t).iter().any(kind));
        if terms.len() > 16
            || !has(|f| matches!(f, Term::Div(..)))
            || !has(|f| matches!(f, Term::Rem(..) | Term::Mod(..)))
        {
            return add(a, b);
        }
        let mut changed = false;
        'pairs: loop {
            for j in 0..terms.len() {
                for k in 0..terms.len() {
                    if j == k {
                        continue;
                    }
                    if let Some(x) = self.recompose(&terms[j], &terms[k]) {
                        let (lo, hi) = (j.min(k), j.max(k));
                        terms.remove(hi);
                        terms[lo] = x;
                        changed = true;
                        continue 'pairs;
                    }
                }
            }
            break;
        }
        let sum = add(a, b);
        if !changed {
            return sum;
        }
        let mut it = terms.into_iter();
        let first = it.next().unwrap_or(Term::Int(0));
        let number = it.fold(first, add);
        // The sum keeps its shape (the lemmas about digits read it: a quotient's bound from
        // the loop's `i < channels * points`), and the identity is a fact where the divisions
        // are defined (the divisors are not 0 there, see `divisor_nonzero`).
        let mut when = vec![self.pc.clone()];
        when.extend(self.value_guards.iter().cloned());
        when.extend(unwrapped_when);
        let fact = match and(when) {
            Term::Bool(true) => Term::eq(sum.clone(), number),
            w => Term::implies(w, Term::eq(sum.clone(), number)),
        };
        if !self.assumed.contains(&fact) {
            self.assumed.push(fact);
        }
        sum
    }

    /// `x * g` when `q` is `(x / d) * d * g` and `r` is `(x % d) * g` (see [`Self::recomposed`]).
    fn recompose(&self, q: &Term, r: &Term) -> Option<Term> {
        let qf = factors_of(q);
        let rf = factors_of(r);
        for (i, f) in qf.iter().enumerate() {
            let Term::Div(x, d) = f else { continue };
            let df = factors_of(d);
            let rest = all_but(&qf, i);
            let Some(g) = without_factors(&rest, &df) else {
                continue;
            };
            for (j, t) in rf.iter().enumerate() {
                let (y, d2, euclidean) = match t {
                    Term::Rem(y, d2) => (y, d2, false),
                    Term::Mod(y, d2) => (y, d2, true),
                    _ => continue,
                };
                let others = all_but(&rf, j);
                if !same_factors(&factors_of(d2), &df) || !same_factors(&others, &g) {
                    continue;
                }
                // The remainder is `x % d`: `y` is `x`, or `x` is `y % m` (same kind, or `y`
                // not negative) with `d` dividing `m`, and `(y % m) % d == y % d`.
                let agrees = **y == **x
                    || match &**x {
                        Term::Rem(z, m) | Term::Mod(z, m) => {
                            let same_kind = matches!(&**x, Term::Mod(..)) == euclidean;
                            **z == **y
                                && (same_kind || self.non_negative(y))
                                && without_factors(&factors_of(m), &df).is_some()
                        }
                        _ => false,
                    };
                // A Euclidean `mod` is C's `%` only for a dividend that is not negative.
                if !agrees || (euclidean && !self.non_negative(x)) {
                    continue;
                }
                return Some(g.into_iter().fold((**x).clone(), mul));
            }
        }
        None
    }

    fn binary(&mut self, op: BinOp, a: Term, b: Term) -> Term {
        let bit = |op: BitOp, a: Term, b: Term| Term::Bit {
            op,
            width: 32,
            signed: false,
            args: vec![a, b].into(),
        };
        match op {
            BinOp::And => and(vec![self.to_bool(a), self.to_bool(b)]),
            BinOp::Or => or(vec![self.to_bool(a), self.to_bool(b)]),
            BinOp::Eq | BinOp::Ne if self.is_bool(&a) && self.is_bool(&b) => {
                let e = eq(a, b);
                if op == BinOp::Eq {
                    e
                } else {
                    not(e)
                }
            }
            _ => {
                let a = self.to_int(a);
                let b = self.to_int(b);
                match op {
                    BinOp::Add => self.recomposed(a, b),
                    BinOp::Sub => sub(a, b),
                    BinOp::Mul => mul(a, b),
                    BinOp::Div => {
                        self.divisor_nonzero(&b);
                        let a = self.without_own_remainder(a, &b);
                        div(a, b)
                    }
                    // On non-negative operands C's `%` is the mathematical `mod`, which Z3
                    // handles better than the sign-dependent encoding of `%`.
                    BinOp::Rem if self.non_negative(&a) && self.non_negative(&b) => {
                        self.divisor_nonzero(&b);
                        modulo(a, b)
                    }
                    BinOp::Rem => {
                        self.divisor_nonzero(&b);
                        rem(a, b)
                    }
                    BinOp::Shl => match as_int(&b) {
                        Some(k) if (0..31).contains(&k) => mul(a, int(1i64 << k)),
                        _ => bit(BitOp::Shl, a, b),
                    },
                    // `x >> k` floors; `x / 2^k` truncates: equal for non-negative `x` only.
                    BinOp::Shr => match as_int(&b) {
                        Some(k) if (0..31).contains(&k) && self.non_negative(&a) => {
                            div(a, int(1i64 << k))
                        }
                        Some(k) if (0..31).contains(&k) => {
                            // floor(a / 2^k) with truncating division: -((2^k - 1 - a) / 2^k) below 0.
                            let p = 1i64 << k;
                            let neg = Term::Neg(Arc::new(div(sub(int(p - 1), a.clone()), int(p))));
                            ite(le(int(0), a.clone()), div(a, int(p)), neg)
                        }
                        _ => bit(BitOp::Shr, a, b),
                    },
                    BinOp::BitAnd => {
                        // `x & (2^k - 1)` is `x mod 2^k` on two's complement: stay in integers.
                        let mask = |t: &Term| as_int(t).filter(|m| *m > 0 && (m + 1) & m == 0);
                        if let Some(m) = mask(&b) {
                            modulo(a, int(m + 1))
                        } else if let Some(m) = mask(&a) {
                            modulo(b, int(m + 1))
                        } else {
                            bit(BitOp::And, a, b)
                        }
                    }
                    // With one power-of-two constant `2^k` these only set, flip or read bit k:
                    // written with a linear `mod`, they avoid integer/bit-vector bridging, which
                    // Z3 4.8.12 handles slowly (seconds for `t == u ^ 1`).
                    BinOp::BitOr | BinOp::BitXor => {
                        let pow2 = |t: &Term| {
                            as_int(t).filter(|m| *m > 0 && m & (m - 1) == 0 && *m < (1 << 30))
                        };
                        let (x, m) = match (pow2(&a), pow2(&b)) {
                            (_, Some(m)) => (a.clone(), Some(m)),
                            (Some(m), _) => (b.clone(), Some(m)),
                            _ => (a.clone(), None),
                        };
                        match m {
                            Some(m) => {
                                let clear = lt(modulo(x.clone(), int(2 * m)), int(m));
                                let set = add(x.clone(), int(m));
                                let other = if op == BinOp::BitXor {
                                    sub(x, int(m))
                                } else {
                                    x
                                };
                                ite(clear, set, other)
                            }
                            None if op == BinOp::BitOr => bit(BitOp::Or, a, b),
                            // `t ^ p` for a symbolic power of two `p` and `t >= 0`: flip bit
                            // log2(p), written with `mod` (exact; no bit-vector bridging).
                            None => {
                                // `t ^ p` for a symbolic power of two `p` and `t >= 0` flips bit
                                // log2(p): written exactly with `mod` (no bit-vector bridging,
                                // which Z3 4.8.12 handles slowly); `encode` knows this shape
                                // for its xor lemmas.
                                if self.is_pow2(&b) && self.non_negative(&a) {
                                    crate::terms::flip_bit(a, b)
                                } else if self.is_pow2(&a) && self.non_negative(&b) {
                                    crate::terms::flip_bit(b, a)
                                } else {
                                    bit(BitOp::Xor, a, b)
                                }
                            }
                        }
                    }
                    BinOp::Lt => lt(a, b),
                    BinOp::Le => le(a, b),
                    BinOp::Gt => lt(b, a),
                    BinOp::Ge => le(b, a),
                    BinOp::Eq => eq(a, b),
                    BinOp::Ne => not(eq(a, b)),
                    BinOp::And | BinOp::Or => unreachable!("handled above"),
                }
            }
        }
    }

    fn exec_block(&mut self, b: &[Stmt], out: &mut Vec<Node>) {
        for (i, s) in b.iter().enumerate() {
            if self.dead {
                return;
            }
            let outer = std::mem::replace(&mut self.skipped_rest, false);
            self.exec_stmt(s, out);
            let skipped = self.skipped_rest;
            self.skipped_rest = outer || skipped;
            // Some path took a `continue`/`break`: the rest of the block runs only on the paths
            // that did not, a branch on the path condition. Barriers in it are then seen as
            // skippable by the threads that left (they go on to the next iteration or past the
            // loop without them), and accesses in it stay with those barriers.
            if skipped && !self.dead && i + 1 < b.len() {
                if self.skip_nesting >= MAX_SKIP_NESTING {
                    // Sound without the branch: the barriers that follow count as none.
                    self.barriers_unordered = true;
                    continue;
                }
                let cond = self.pc.clone();
                let mut rest = Vec::new();
                self.skip_nesting += 1;
                self.exec_block(&b[i + 1..], &mut rest);
                self.skip_nesting -= 1;
                out.push(Node::Branch {
                    cond,
                    then_branch: rest,
                    else_branch: vec![],
                });
                return;
            }
        }
    }

    /// Do all threads of a block that read one cell of `array` here read the same value? Yes for
    /// a static shared array that no statement of the current epoch writes (NOTES.md: uniform
    /// unless written in the same barrier interval): every write is then separated from the
    /// reads by a barrier all threads pass, so they all read what the earlier intervals left
    /// (the usual `if (tid == 0) flag = …; __syncthreads(); if (flag) …`). Not for
    /// `extern __shared__` arrays (they alias one buffer) nor global memory (other blocks).
    fn broadcast_read(&self, array: ArrayId) -> bool {
        let Some(epoch) = self.epoch else {
            return false;
        };
        self.k.arrays.get(array.0 as usize).is_some_and(|arr| {
            arr.space == MemSpace::Shared
                && arr.dims.iter().all(Option::is_some)
                && !self.epochs.writes.contains(&(array, epoch))
        })
    }

    /// Every thread of the block executes this point once: top level, no condition, no thread
    /// has left the kernel before it.
    fn whole_block_here(&self) -> bool {
        self.loop_depth == 0
            && self.pc == tru()
            && !self.dead
            && self.exits.is_empty()
            && self.not_exited.is_empty()
    }

    /// The write `a[index] = value` as an [`IndexTable`], when it is one.
    fn index_table(
        &self,
        array: ArrayId,
        index: &[Term],
        value: Option<&Term>,
        value_ty: Option<CTy>,
    ) -> Option<IndexTable> {
        let arr = self.k.arrays.get(array.0 as usize)?;
        // Static shared arrays only: `extern __shared__` arrays all alias one buffer.
        if arr.space != MemSpace::Shared
            || arr.dims.is_empty()
            || arr.dims.iter().any(Option::is_none)
            || self.write_sites.get(&array) != Some(&1)
            || !self.whole_block_here()
        {
            return None;
        }
        let tid = Term::Var("$tid.x".into());
        let offset = match index {
            [i] if *i == tid => int(0),
            [Term::Add(ts)] if ts.len() == 2 && ts[0] == tid && !thread_varying(&ts[1]) => {
                ts[1].clone()
            }
            _ => return None,
        };
        // The value as stored: converted to the element type as C does.
        let value = self.convert(value?.clone(), value_ty, Self::target_ty(arr.elem));
        if mentions(&value, &|v| v.starts_with('$') && v != "$tid.x") {
            return None;
        }
        // Only 32- and 64-bit elements, and values in their range: narrower stores truncate.
        let (_, lo, hi) = type_range(arr.elem);
        let r = self.range(&value);
        let fits = matches!(arr.elem, ScalarType::Int { bits, .. } if bits >= 32)
            && matches!((r.lo, lo), (Some(a), Some(b)) if a >= i128::from(b))
            && matches!((r.hi, hi), (Some(a), Some(b)) if a <= i128::from(b));
        let written_in = self.epoch?;
        fits.then_some(IndexTable {
            offset,
            value,
            written_in,
        })
    }

    fn record_exit(&mut self, span: Span, what: &str) {
        if thread_varying(&self.pc) {
            self.exits.push((
                span,
                format!("threads may {what} here depending on their thread id"),
                what == "return",
            ));
        }
    }

    fn exec_stmt(&mut self, s: &Stmt, out: &mut Vec<Node>) {
        if self.past_deadline() {
            return;
        }
        match s {
            Stmt::Assign { local, value, .. } => {
                let v = self.eval(value);
                let ty = self.k.locals.get(local.0 as usize).map(|l| l.ty);
                let v = match ty {
                    // C's conversion to `bool` (an unknown integer stored to a `bool` result
                    // would otherwise give the local two sorts).
                    Some(ScalarType::Bool) => self.to_bool(v),
                    _ => self.convert(v, self.ty_of(value), ty.and_then(Self::target_ty)),
                };
                if self.nonuniform_ctl > 0 {
                    self.assigned_nonuniform.insert(*local);
                }
                self.set_local(*local, v);
            }
            Stmt::Access(a) => {
                let index: Vec<Term> = a.index.iter().map(|e| self.eval(e)).collect();
                let index: Vec<Term> = index.into_iter().map(|t| self.to_int(t)).collect();
                let value = a.value.as_ref().map(|e| self.eval(e));
                if a.mode != AccessMode::Write {
                    let varying = index.iter().any(thread_varying)
                        || a.mode == AccessMode::Atomic
                        || (self.p.written.contains(&a.array) && !self.broadcast_read(a.array));
                    // (see `broadcast_read`)
                    let name = self
                        .k
                        .arrays
                        .get(a.array.0 as usize)
                        .map(|x| x.name.clone())
                        .unwrap_or_default();
                    let elem = self.k.arrays.get(a.array.0 as usize).map(|x| x.elem);
                    let (_, lo, hi) = elem.map(type_range).unwrap_or((Sort::Int, None, None));
                    let t = self.fresh(
                        if varying { "$" } else { "%" },
                        "load",
                        VarInfo {
                            sort: Sort::Int,
                            reason: Some(format!("data read from `{name}`")),
                            lo,
                            hi,
                        },
                    );
                    self.load_tys
                        .insert(a.id, elem.and_then(Self::target_ty).map(CTy::promoted));
                    if elem == Some(ScalarType::Float) {
                        self.float_loads.insert(a.id);
                    }
                    let t = match (a.mode, self.tables.get(&a.array), index.as_slice()) {
                        (AccessMode::Read, Some(table), [e])
                            if self.epoch.is_some_and(|e| e > table.written_in) =>
                        {
                            table.read(e, t)
                        }
                        _ => t,
                    };
                    self.loads.insert(a.id, t);
                } else if let Some(table) = self.index_table(
                    a.array,
                    &index,
                    value.as_ref(),
                    a.value.as_ref().and_then(|e| self.ty_of(e)),
                ) {
                    self.tables.insert(a.array, table);
                }
                let mut guard = vec![self.pc.clone()];
                guard.extend(self.assumed.iter().cloned());
                let guard = and(guard);
                self.p.accs.push(AccInfo {
                    id: a.id,
                    array: a.array,
                    mode: a.mode,
                    index,
                    flat: a.flat,
                    value,
                    guard,
                    span: a.span,
                });
                self.acc_wraps.push(Wraps::default());
                out.push(Node::Acc(self.p.accs.len() - 1));
            }
            Stmt::Barrier(b) => {
                let kind = match &b.kind {
                    BarrierKind::Block => Some(SyncKind::Block),
                    BarrierKind::Grid => Some(SyncKind::Grid),
                    BarrierKind::Warp { mask } => {
                        let full = match mask {
                            None => true,
                            Some(m) => matches!(self.eval(m), Term::Int(v) if v as u32 == u32::MAX),
                        };
                        full.then_some(SyncKind::Warp)
                    }
                };
                if let Some(kind) = kind {
                    match kind {
                        SyncKind::Warp => self.p.has_warp_sync = true,
                        SyncKind::Grid => self.p.has_grid_sync = true,
                        SyncKind::Block => {}
                    }
                    let cause = self
                        .causes
                        .last()
                        .cloned()
                        .or_else(|| self.exits.last().map(|(s, m, _)| (*s, m.clone())));
                    self.p.syncs.push(SyncInfo {
                        kind,
                        guard: self.pc.clone(),
                        // Assumptions are facts, not reach conditions: a thread whose
                        // assumption fails does not run, it does not skip the barrier.
                        facts: and(self.assumed.clone()),
                        span: b.span,
                        cause,
                        same_iteration: Vec::new(),
                        not_exited: and(self.not_exited.clone()),
                    });
                    self.sync_wraps.push(Wraps::default());
                    if self.barriers_unordered {
                        // Findings that a real barrier may prevent are then possible.
                        self.p.may_sync.push(b.span);
                    }
                    out.push(if self.barriers_unordered {
                        Node::MaybeSync(b.span)
                    } else {
                        Node::Sync(self.p.syncs.len() - 1)
                    });
                }
            }
            Stmt::If {
                cond,
                then_branch,
                else_branch,
                span,
            } => {
                let c = self.eval(cond);
                let c = self.to_bool(c);
                let varying = thread_varying(&c);
                let pc0 = self.pc.clone();
                let env0 = self.env.clone();
                if varying {
                    self.nonuniform_ctl += 1;
                    self.causes
                        .push((*span, "this condition depends on the thread".into()));
                }
                let mut then_nodes = Vec::new();
                self.pc = and(vec![pc0.clone(), c.clone()]);
                self.dead = false;
                self.exec_block(then_branch, &mut then_nodes);
                let (pc_t, dead_t, env_t) = (
                    self.pc.clone(),
                    self.dead,
                    std::mem::replace(&mut self.env, env0),
                );
                let mut else_nodes = Vec::new();
                let not_c = not(c.clone());
                self.pc = and(vec![pc0.clone(), not_c.clone()]);
                self.dead = false;
                self.exec_block(else_branch, &mut else_nodes);
                let (pc_e, dead_e) = (self.pc.clone(), self.dead);
                if varying {
                    self.nonuniform_ctl -= 1;
                    self.causes.pop();
                }
                // Merge the environments of the live branches.
                let env_e = std::mem::take(&mut self.env);
                self.env = match (dead_t, dead_e) {
                    (true, false) => env_e,
                    (false, true) => env_t,
                    _ => env_t
                        .into_iter()
                        .zip(env_e)
                        .map(|(t, e)| match (t, e) {
                            (Some(t), Some(e)) => Some(ite(c.clone(), t, e)),
                            (t, e) => t.or(e),
                        })
                        .collect(),
                };
                // Only a value this merge made (`c ? t : e`) can have grown: the others were
                // bounded when they were set (walking every local after every branch was most
                // of the planning time of kernels with long branchy bodies).
                for i in 0..self.env.len() {
                    let merged_here =
                        matches!(&self.env[i], Some(Term::Ite(cond, _, _)) if **cond == c);
                    if !merged_here {
                        continue;
                    }
                    if let Some(v) = self.env[i].clone() {
                        if term_size_exceeds(&v, MAX_TERM_SIZE) {
                            self.set_local(LocalId(i as u32), v);
                        }
                    }
                }
                let unchanged_t = !dead_t && pc_t == and(vec![pc0.clone(), c.clone()]);
                let unchanged_e = !dead_e && pc_e == and(vec![pc0.clone(), not_c.clone()]);
                self.dead = dead_t && dead_e;
                self.pc = if unchanged_t && unchanged_e {
                    pc0
                } else {
                    let mut live = Vec::new();
                    if !dead_t {
                        live.push(pc_t);
                    }
                    if !dead_e {
                        live.push(pc_e);
                    }
                    or(live)
                };
                out.push(Node::Branch {
                    cond: c,
                    then_branch: then_nodes,
                    else_branch: else_nodes,
                });
            }
            Stmt::Loop(l) => {
                let exits0 = self.exits.len();
                self.exec_loop(l, out);
                let returns: Vec<_> = self.exits.drain(exits0..).filter(|e| e.2).collect();
                self.exits.extend(returns);
            }
            Stmt::Return { span } => {
                self.record_exit(*span, "return");
                if thread_varying(&self.pc) {
                    self.not_exited.push(not(self.pc.clone()));
                }
                if self.loop_depth > 0 {
                    self.returned_in_loop = true;
                }
                if thread_varying(&self.pc) {
                    self.left_nonuniform = true;
                    self.returned_nonuniform = true;
                }
                self.dead = true;
            }
            Stmt::Break { span } => {
                self.record_exit(*span, "leave the loop");
                if thread_varying(&self.pc) {
                    self.left_nonuniform = true;
                }
                self.skipped_rest = true;
                self.dead = true;
            }
            Stmt::Continue { span } => {
                self.record_exit(*span, "skip the rest of the iteration");
                self.skipped_rest = true;
                self.dead = true;
            }
            Stmt::Assume { cond, .. } => {
                let c = self.eval(cond);
                let c = self.to_bool(c);
                let fact = match &self.pc {
                    Term::Bool(true) => c,
                    pc => Term::implies(pc.clone(), c),
                };
                if fact != tru() {
                    self.assumed.push(fact);
                }
            }
            Stmt::Opaque(o) => {
                for a in &o.arrays {
                    self.p.opaque_arrays.push(OpaqueUse {
                        array: *a,
                        why: o.reason.clone(),
                        reads_only: o.reads_only,
                        span: o.span,
                    });
                }
                self.p.starts_threads |= o.starts_threads;
                for l in &o.locals {
                    let name = self
                        .k
                        .locals
                        .get(l.0 as usize)
                        .map(|x| x.name.clone())
                        .unwrap_or_default();
                    let t =
                        self.fresh_local_unknown(*l, true, format!("`{name}` after {}", o.reason));
                    if self.nonuniform_ctl > 0 {
                        self.assigned_nonuniform.insert(*l);
                    }
                    if let Some(slot) = self.env.get_mut(l.0 as usize) {
                        *slot = Some(t);
                    }
                }
                if o.may_sync {
                    self.p.may_sync_calls.push((o.span, o.reason.clone()));
                    out.push(Node::MaybeSync(o.span));
                }
            }
        }
    }

    fn local_info(&self, l: LocalId) -> (String, Sort, Option<i64>, Option<i64>) {
        match self.k.locals.get(l.0 as usize) {
            Some(loc) => {
                let (sort, lo, hi) = type_range(loc.ty);
                (loc.name.clone(), sort, lo, hi)
            }
            None => ("?".into(), Sort::Int, None, None),
        }
    }

    /// The heads of a loop that move by a loop-invariant, non-zero step per iteration alongside
    /// a pivot that moves by 1 (or -1): `for (int lx = 0, col = c0; lx < n && col < w; lx++,
    /// col += blockDim.y)`. Each is then `init + (pivot - pivot_init) * ±1 * step` at every
    /// head, exactly (both change once per iteration, nowhere else), and is given that value
    /// instead of a head of its own: as an independent head, only linked to the pivot by an
    /// equality, Z3 rarely proved the digits of `col` distinct and the kernel ended unknown.
    /// Only `int`-like signed locals (an unsigned one wraps, which the value would not say),
    /// and not when a `continue` may skip a body assignment. Returns the new ones.
    #[allow(clippy::too_many_arguments)]
    fn derived_inductions(
        &self,
        lp: &Loop,
        continues: bool,
        heads: &[(LocalId, Term)],
        init: &HashMap<LocalId, Term>,
        end: &HashMap<LocalId, Term>,
        id_start: u32,
        known: &BTreeMap<LocalId, DerivedHead>,
    ) -> BTreeMap<LocalId, DerivedHead> {
        let mut body_assigned = BTreeSet::new();
        if continues {
            cudarace_ir::assigned_locals(&lp.body, &mut body_assigned);
        }
        let head_names: Vec<&str> = heads.iter().filter_map(|(_, h)| h_name(h)).collect();
        let invariant = |t: &Term| {
            !mentions(t, &|v| {
                head_names.contains(&v)
                    || super::fresh_id(v).is_some_and(|id| id >= id_start && id <= self.counter)
            })
        };
        // (local, step) of every additive head with an invariant step.
        let additive: Vec<(LocalId, Term)> = heads
            .iter()
            .filter(|(l, _)| !body_assigned.contains(l))
            .filter_map(|(l, h)| {
                let step = additive_step(h, end.get(l)?)?;
                (invariant(&step) && invariant(init.get(l)?) && as_int(&step) != Some(0))
                    .then_some((*l, step))
            })
            .collect();
        let Some((pivot, sign)) = additive.iter().find_map(|(l, s)| match as_int(s) {
            Some(c @ (1 | -1)) => Some((*l, c)),
            _ => None,
        }) else {
            return BTreeMap::new();
        };
        if known.values().any(|d| d.pivot != pivot) {
            return BTreeMap::new();
        }
        additive
            .into_iter()
            .filter(|(l, _)| *l != pivot && !known.contains_key(l))
            .filter(|(l, _)| {
                let (_, sort, lo, _) = self.local_info(*l);
                sort == Sort::Int && lo.is_some_and(|lo| lo < 0)
            })
            .map(|(l, step)| (l, DerivedHead { pivot, sign, step }))
            .collect()
    }

    /// Locals counted up from a non-negative start by a non-negative, loop-invariant step (`i =
    /// tid; …; i += blockDim.x`, or a local copy of it) and assigned nowhere else in the loop: never negative at the loop head. Known
    /// before the body runs, so that unsigned arithmetic on them needs no wraparound case.
    fn non_negative_inductions(
        &mut self,
        lp: &Loop,
        assigned: &[LocalId],
        init: &HashMap<LocalId, Term>,
    ) -> HashSet<LocalId> {
        // Loop-invariant: no local the loop assigns (`int step = blockDim.x` before the loop).
        fn simple(e: &Expr, assigned: &[LocalId]) -> bool {
            match e {
                Expr::Int(_) | Expr::Builtin(_) | Expr::Param(_) => true,
                Expr::Local(l) => !assigned.contains(l),
                Expr::Binary(BinOp::Add | BinOp::Mul, a, b) => {
                    simple(a, assigned) && simple(b, assigned)
                }
                Expr::Cast(_, a) => simple(a, assigned),
                _ => false,
            }
        }
        let mut elsewhere = BTreeSet::new();
        cudarace_ir::assigned_locals(&lp.body, &mut elsewhere);
        cudarace_ir::assigned_locals(&lp.cond_effects, &mut elsewhere);
        let mut out = HashSet::new();
        let [Stmt::Assign { local, value, .. }] = lp.step.as_slice() else {
            return out;
        };
        let step = match value {
            Expr::Binary(BinOp::Add, a, b) if **a == Expr::Local(*local) => b,
            Expr::Binary(BinOp::Add, a, b) if **b == Expr::Local(*local) => a,
            _ => return out,
        };
        if !assigned.contains(local) || elsewhere.contains(local) || !simple(step, assigned) {
            return out;
        }
        let st = self.eval(step);
        let starts = init.get(local).map(|t| self.range(t).lo);
        if self.range(&st).lo.is_some_and(|l| l >= 0) && starts.flatten().is_some_and(|l| l >= 0) {
            out.insert(*local);
        }
        out
    }

    fn exec_loop(&mut self, lp: &Loop, out: &mut Vec<Node>) {
        self.exec_block(&lp.init, out);
        if self.dead {
            return;
        }
        let mut assigned = BTreeSet::new();
        for blk in [&lp.cond_effects, &lp.body, &lp.step] {
            cudarace_ir::assigned_locals(blk, &mut assigned);
        }
        let assigned: Vec<LocalId> = assigned.into_iter().collect();
        let env0 = self.env.clone();
        let pc0 = self.pc.clone();
        let mut init: HashMap<LocalId, Term> = HashMap::new();
        for &l in &assigned {
            let v = match env0.get(l.0 as usize).cloned().flatten() {
                Some(v) => v,
                None => {
                    let (name, ..) = self.local_info(l);
                    self.fresh_local_unknown(
                        l,
                        true,
                        format!("the uninitialized value of `{name}`"),
                    )
                }
            };
            init.insert(l, v);
        }
        let mut pow2_locals: HashSet<LocalId> = HashSet::new();
        // Heads moved by a constant step per iteration alongside a unit-step pivot (`for (lx =
        // 0, col = c0; …; lx++, col += blockDim.y)`): on the next run of the body each is its
        // value in terms of the pivot's head (`col == c0 + lx * blockDim.y`), not a head of its
        // own (see `derived_inductions`).
        let mut derived: BTreeMap<LocalId, DerivedHead> = BTreeMap::new();
        let non_negative_heads = self.non_negative_inductions(lp, &assigned, &init);
        let mut uniform: HashSet<LocalId> = assigned
            .iter()
            .copied()
            .filter(|l| !thread_varying(&init[l]))
            .collect();
        let do_while = lp.kind == LoopKind::DoWhile;
        let continues = has_own_continue(&lp.body);
        let (accs0, syncs0, exits0) = (self.p.accs.len(), self.p.syncs.len(), self.exits.len());
        let assumed0 = self.assumed.len();
        let not_exited0 = self.not_exited.len();
        let saved_skip = std::mem::replace(&mut self.skipped_rest, false);
        let saved_unordered = self.barriers_unordered;
        let saved_ctl = (
            self.nonuniform_ctl,
            std::mem::take(&mut self.assigned_nonuniform),
            self.returned_in_loop,
            self.left_nonuniform,
            self.returned_nonuniform,
        );
        loop {
            self.assumed.truncate(assumed0);
            self.not_exited.truncate(not_exited0);
            self.p.accs.truncate(accs0);
            self.p.syncs.truncate(syncs0);
            self.acc_wraps.truncate(accs0);
            self.sync_wraps.truncate(syncs0);
            self.exits.truncate(exits0);
            self.nonuniform_ctl = 0;
            self.assigned_nonuniform.clear();
            self.returned_in_loop = false;
            self.skipped_rest = false;
            self.barriers_unordered = saved_unordered;
            self.left_nonuniform = false;
            self.returned_nonuniform = false;
            let id_start = self.counter + 1;
            let mut heads: Vec<(LocalId, Term)> = Vec::new();
            self.env = env0.clone();
            for &l in assigned.iter().filter(|l| !derived.contains_key(l)) {
                let (name, sort, lo, hi) = self.local_info(l);
                let prefix = if uniform.contains(&l) { "%" } else { "$" };
                let lo = match (lo, non_negative_heads.contains(&l)) {
                    (Some(x), true) => Some(x.max(0)),
                    (lo, _) => lo,
                };
                let h = self.fresh(
                    prefix,
                    &format!("loop.{name}"),
                    VarInfo {
                        sort,
                        reason: None,
                        lo,
                        hi,
                    },
                );
                if pow2_locals.contains(&l) {
                    if let Term::Var(n) = &h {
                        self.pow2_vars.insert(n.to_string());
                    }
                }
                heads.push((l, h.clone()));
                self.set_local(l, h);
            }
            for (l, d) in &derived {
                let pivot = heads
                    .iter()
                    .find(|(p, _)| *p == d.pivot)
                    .map(|(_, h)| h.clone());
                // (The pivot is always a head: `derived_inductions` never derives it.)
                let value = match pivot {
                    Some(pivot) => {
                        let taken = mul(sub(pivot, init[&d.pivot].clone()), int(d.sign));
                        add(init[l].clone(), mul(taken, d.step.clone()))
                    }
                    None => {
                        let (name, ..) = self.local_info(*l);
                        self.fresh_local_unknown(
                            *l,
                            true,
                            format!("the value of `{name}` carried across loop iterations"),
                        )
                    }
                };
                self.set_local(*l, value);
            }
            self.loop_depth += 1;
            let mut nodes = Vec::new();
            self.pc = pc0.clone();
            self.dead = false;
            self.exec_block(&lp.cond_effects, &mut nodes);
            let c = match &lp.cond {
                Some(e) => {
                    let t = self.eval(e);
                    self.to_bool(t)
                }
                None => tru(),
            };
            let c_varying = thread_varying(&c);
            if c_varying {
                self.causes
                    .push((lp.span, "the loop condition depends on the thread".into()));
                self.nonuniform_ctl += 1;
            }
            self.pc = if do_while {
                pc0.clone()
            } else {
                and(vec![pc0.clone(), c.clone()])
            };
            self.dead = false;
            self.exec_block(&lp.body, &mut nodes);
            // `continue` still runs the step; `break`/`return` paths are over-approximated as
            // continuing (sound for races; their divergence is caught at the barriers they skip).
            self.dead = false;
            self.exec_block(&lp.step, &mut nodes);
            self.dead = false;
            if c_varying {
                self.causes.pop();
                self.nonuniform_ctl -= 1;
            }
            self.loop_depth -= 1;
            let mut end: HashMap<LocalId, Term> = heads
                .iter()
                .map(|(l, h)| {
                    (
                        *l,
                        self.env
                            .get(l.0 as usize)
                            .cloned()
                            .flatten()
                            .unwrap_or_else(|| h.clone()),
                    )
                })
                .collect();
            for l in derived.keys() {
                if let Some(v) = self.env.get(l.0 as usize).cloned().flatten() {
                    end.insert(*l, v);
                }
            }
            let mut changed = false;
            let found =
                self.derived_inductions(lp, continues, &heads, &init, &end, id_start, &derived);
            if !found.is_empty() {
                derived.extend(found);
                continue;
            }
            // Doubling from a power of two, or halving one (under a `> 0` test), stays a power
            // of two: then `t ^ j` has an exact linear-modulo form (see `binary`). Re-run the
            // body once with that knowledge.
            for (l, h) in &heads {
                let grows = matches!(&end[l], Term::Mul(ts) if ts.len() == 2 && ts.contains(h) && ts.contains(&int(2)));
                let shrinks = matches!(&end[l], Term::Div(a, b) if **a == *h && **b == int(2));
                if (grows || shrinks) && self.is_pow2(&init[l]) && !pow2_locals.contains(l) {
                    pow2_locals.insert(*l);
                    changed = true;
                }
            }
            for &l in &assigned {
                if uniform.contains(&l)
                    && (end.get(&l).is_some_and(thread_varying)
                        || self.assigned_nonuniform.contains(&l))
                {
                    uniform.remove(&l);
                    changed = true;
                }
            }
            if changed {
                continue;
            }
            // Threads that left the loop early (thread-dependent break/return) skip the
            // barriers of later iterations: those barriers are reached only by threads still in
            // the loop, an unknown per-thread fact.
            let left_nonuniform = self.left_nonuniform;
            let returned_nonuniform = self.returned_nonuniform;
            if left_nonuniform && self.p.syncs.len() > syncs0 {
                let still_in = self.fresh(
                    "$",
                    "alive",
                    VarInfo {
                        sort: Sort::Bool,
                        reason: Some(
                            "whether the thread left the loop in an earlier iteration".into(),
                        ),
                        lo: None,
                        hi: None,
                    },
                );
                let cause = self
                    .exits
                    .get(exits0..)
                    .and_then(|e| e.last())
                    .map(|(s, m, _)| (*s, m.clone()));
                for (s, w) in self.p.syncs[syncs0..]
                    .iter_mut()
                    .zip(&mut self.sync_wraps[syncs0..])
                {
                    w.after.push(still_in.clone());
                    if s.cause.is_none() {
                        s.cause = cause.clone();
                    }
                }
            }
            let id_end = self.counter + 1;
            let returned = self.returned_in_loop;
            let exit_varying = c_varying || self.exits.len() > exits0;

            // Ranges of the head variables.
            let mut ranges = Vec::new();
            let mut links: Vec<(Term, Term)> = Vec::new();
            let mut first = HashMap::new();
            let mut next = HashMap::new();
            let mut body_assigned = BTreeSet::new();
            if continues {
                cudarace_ir::assigned_locals(&lp.body, &mut body_assigned);
            }
            // Recognized additive heads (head, first value, step), linked below.
            let mut additive: Vec<(Term, Term, Term)> = Vec::new();
            for (l, h) in &heads {
                let name = match h {
                    Term::Var(n) => n.to_string(),
                    _ => continue,
                };
                first.insert(name.clone(), init[l].clone());
                // A `continue` may skip body assignments: then the next value is not the end value.
                let assigned_in_body = body_assigned.contains(l);
                // The update must be loop-invariant apart from the variable itself: `acc += x`
                // with `x` read in the body is not an induction (and its "range" would only
                // drag per-thread data into every path condition of the body).
                let created_in_body = |t: &Term| {
                    mentions(t, &|v| {
                        super::fresh_id(v).is_some_and(|id| id >= id_start && id < self.counter + 1)
                            && Some(v) != h_name(h)
                    })
                };
                let recognized = if (continues && assigned_in_body) || created_in_body(&end[l]) {
                    None
                } else {
                    induction_range(h, &init[l], &end[l])
                };
                match recognized {
                    Some(r) => {
                        ranges.push(r);
                        if let Some(step) = additive_step(h, &end[l]) {
                            additive.push((h.clone(), init[l].clone(), step));
                        }
                        next.insert(name.to_string(), end[l].clone());
                        if name.starts_with('$') {
                            if let Some(step) = additive_step(h, &end[l]) {
                                if !thread_varying(&step) {
                                    links.push((h.clone(), init[l].clone()));
                                }
                            }
                        }
                    }
                    None => {
                        if continues && assigned_in_body {
                            let (lname, sort, lo, hi) = self.local_info(*l);
                            let prefix = if uniform.contains(l) { "%" } else { "$" };
                            let reason = (prefix == "$").then(|| {
                                format!("the value of `{lname}` carried across loop iterations")
                            });
                            let n = self.fresh(
                                prefix,
                                &format!("loop.{lname}"),
                                VarInfo {
                                    sort,
                                    reason,
                                    lo,
                                    hi,
                                },
                            );
                            next.insert(name.clone(), n);
                        } else {
                            next.insert(name.clone(), end[l].clone());
                        }
                        // Not an induction: the head is any value (shared by the block's
                        // threads when uniform), so a witness that uses it may not happen.
                        let (lname, ..) = self.local_info(*l);
                        if let Some(info) = self.p.vars.get_mut(super::base_name(&name)) {
                            info.reason = Some(format!(
                                "the value of `{lname}` carried across loop iterations"
                            ));
                        }
                    }
                }
            }
            ranges.extend(link_inductions(&additive));
            // Values created in the body are different in the next iteration: `next` renames
            // them when a term is carried over (no table of copies, see `NextIteration`).
            self.loops += 1;
            let next = NextIteration {
                heads: next,
                created: (id_start, id_end),
                tag: self.loops,
            };
            let range = and(ranges);
            // A `do` loop runs its first iteration unconditionally and every later one only
            // where the condition held: its accesses happen at the first values or under `c`
            // (without this, a count-down `do` loop's variable ranges below its exit value).
            let reached = if do_while {
                // The first iteration, told by the variables the condition tests (others,
                // like an accumulator, say nothing about which iteration this is).
                let at_first: Vec<Term> = heads
                    .iter()
                    .filter(|(_, h)| h_name(h).is_some_and(|n| mentions_var(&c, n)))
                    .filter_map(|(l, h)| init.get(l).map(|i| eq(h.clone(), i.clone())))
                    .collect();
                or(vec![and(at_first), c.clone()])
            } else {
                tru()
            };
            // The loop's range and reach condition guard every access and barrier of the body;
            // they are conjoined once at the end (`Wraps`), not re-built per enclosing loop.
            for w in &mut self.acc_wraps[accs0..] {
                w.before.push(reached.clone());
                w.before.push(range.clone());
            }
            let reached_varying = thread_varying(&reached);
            for (s, w) in self.p.syncs[syncs0..]
                .iter_mut()
                .zip(&mut self.sync_wraps[syncs0..])
            {
                w.before.push(reached.clone());
                if s.cause.is_none() && reached_varying {
                    s.cause = Some((lp.span, "the loop condition depends on the thread".into()));
                }
                w.facts.push(range.clone());
                s.same_iteration.extend(links.iter().cloned());
            }
            let head = and(vec![range, c]);
            let enter = if do_while {
                tru()
            } else {
                subst(&head, &first)
            };
            let exit = not(next.apply(&head));

            // After the loop: assigned locals are unknown (uniform when every thread leaves
            // after the same iterations).
            self.env = env0.clone();
            for &l in &assigned {
                let (name, sort, lo, hi) = self.local_info(l);
                let uni = uniform.contains(&l) && !exit_varying;
                let prefix = if uni { "%" } else { "$" };
                let reason = Some(format!("the value of `{name}` after the loop"));
                let v = self.fresh(
                    prefix,
                    &format!("after.{name}"),
                    VarInfo {
                        sort,
                        reason,
                        lo,
                        hi,
                    },
                );
                self.set_local(l, v);
            }
            // The final, failing test evaluates the condition once more (also when the loop
            // runs zero times): its accesses happen after the loop.
            let mut tail = Vec::new();
            if !lp.cond_effects.is_empty() {
                self.pc = pc0.clone();
                self.dead = false;
                self.exec_block(&lp.cond_effects, &mut tail);
            }
            self.pc = pc0.clone();
            if returned {
                let varying = exit_varying || thread_varying(&pc0);
                let alive = self.fresh(
                    if varying { "$" } else { "%" },
                    "alive",
                    VarInfo {
                        sort: Sort::Bool,
                        reason: Some("whether the thread returned inside an earlier loop".into()),
                        lo: None,
                        hi: None,
                    },
                );
                self.pc = and(vec![pc0.clone(), alive]);
            }
            self.nonuniform_ctl = saved_ctl.0;
            self.assigned_nonuniform = saved_ctl.1;
            if self.nonuniform_ctl > 0 || exit_varying {
                self.assigned_nonuniform.extend(assigned.iter().copied());
            }
            self.returned_in_loop = saved_ctl.2 || returned;
            self.skipped_rest = saved_skip;
            self.barriers_unordered = saved_unordered;
            self.left_nonuniform = saved_ctl.3 || returned_nonuniform;
            self.returned_nonuniform = saved_ctl.4 || returned_nonuniform;
            self.dead = false;
            out.push(Node::Loop(Box::new(LoopNode {
                body: nodes,
                first,
                next,
                enter,
                exit,
                do_while,
                fresh_range: (id_start, id_end),
            })));
            out.extend(tail);
            return;
        }
    }
}

/// A loop head given by the loop's pivot head (see `Exec::derived_inductions`): its value at
/// every head is its first value plus `(pivot - pivot's first value) * sign * step`.
#[derive(Debug, Clone)]
struct DerivedHead {
    pivot: LocalId,
    sign: i64,
    step: Term,
}

/// The relation between a loop's additive heads (`head`, first value, step): every one moves
/// once per iteration, so all have taken the same number of steps `k` at the head of an
/// iteration (`for (l = 0; l < L && i < n; l++, i += blockDim.x)`: `i - i0 == l * blockDim.x`).
/// Each head is linked to one pivot (a counter stepping by ±1 when there is one):
/// - equal steps: `h - h0 == p - p0`;
/// - constant steps `c`, `d`: `(h - h0) * d == (p - p0) * c`;
/// - a pivot stepping by ±1: `h - h0 == (p - p0) * ±1 * step` (the only nonlinear form).
///
/// A step that mentions a head changes between iterations: no relation is drawn from it.
fn link_inductions(additive: &[(Term, Term, Term)]) -> Vec<Term> {
    let heads: Vec<&str> = additive.iter().filter_map(|(h, ..)| h_name(h)).collect();
    let invariant = |t: &Term| !heads.iter().any(|h| mentions_var(t, h));
    let usable: Vec<&(Term, Term, Term)> = additive
        .iter()
        .filter(|(_, init, step)| invariant(step) && invariant(init) && as_int(step) != Some(0))
        .collect();
    if usable.len() < 2 {
        return Vec::new();
    }
    let unit = |t: &Term| matches!(as_int(t), Some(1 | -1));
    let pivot = usable.iter().position(|(_, _, s)| unit(s)).unwrap_or(0);
    let (p, p0, ps) = usable[pivot];
    let taken_p = sub(p.clone(), p0.clone());
    let mut out = Vec::new();
    for (i, (h, h0, hs)) in usable.iter().enumerate() {
        if i == pivot {
            continue;
        }
        let taken = sub(h.clone(), h0.clone());
        if hs == ps {
            out.push(eq(taken, taken_p.clone()));
        } else if let (Some(c), Some(d)) = (as_int(ps), as_int(hs)) {
            out.push(eq(mul(taken, int(c)), mul(taken_p.clone(), int(d))));
        } else if let Some(c) = as_int(ps).filter(|c| *c == 1 || *c == -1) {
            out.push(eq(taken, mul(mul(taken_p.clone(), int(c)), hs.clone())));
        }
    }
    out
}

fn h_name(h: &Term) -> Option<&str> {
    match h {
        Term::Var(n) => Some(&**n),
        _ => None,
    }
}

/// How many nodes of a sum's summands [`without_wraps`] looks at (it runs for every `+`).
const MAX_UNWRAPPED_NODES: usize = 64;

/// `t` with the unsigned wraps in its arithmetic taken off (`ite(x < 0, x + 2^bits, x)` is
/// `x`); `when` gets, for each, the condition that makes it the identity (`x >= 0`, stated on
/// `x` without its own wraps: the inner conditions make it equal to the wrapped one).
fn without_wraps(t: &Term, when: &mut Vec<Term>, budget: &mut usize) -> Term {
    if *budget == 0 {
        return t.clone();
    }
    *budget -= 1;
    for bits in [64u8, 32] {
        if let Some(x) = unwrap_low(t, bits) {
            let x = without_wraps(x, when, budget);
            let c = le(int(0), x.clone());
            if !when.contains(&c) {
                when.push(c);
            }
            return x;
        }
    }
    let mut each = |ts: &[Term], join: fn(Term, Term) -> Term, unit: i64| {
        ts.iter()
            .map(|u| without_wraps(u, when, budget))
            .fold(int(unit), join)
    };
    let (join, a, b): (fn(Term, Term) -> Term, _, _) = match t {
        Term::Add(ts) => return each(ts, add, 0),
        Term::Mul(ts) => return each(ts, mul, 1),
        Term::Sub(a, b) => (sub, a, b),
        Term::Div(a, b) => (div, a, b),
        Term::Rem(a, b) => (rem, a, b),
        Term::Mod(a, b) => (modulo, a, b),
        _ => return t.clone(),
    };
    let a = without_wraps(a, when, budget);
    join(a, without_wraps(b, when, budget))
}

/// The factors of a product (nested products flattened); a term that is no product is its
/// own only factor.
fn factors_of(t: &Term) -> Vec<Term> {
    let mut out = Vec::new();
    let mut stack = vec![t];
    while let Some(x) = stack.pop() {
        match x {
            Term::Mul(ts) if out.len() + stack.len() < 16 => stack.extend(ts.iter()),
            _ => out.push(x.clone()),
        }
    }
    out
}

/// The factors but the one at `i`.
fn all_but(factors: &[Term], i: usize) -> Vec<Term> {
    let mut out = factors.to_vec();
    out.remove(i);
    out
}

/// `all` without one occurrence of each of `some` (as multisets); `None` when one is missing.
fn without_factors(all: &[Term], some: &[Term]) -> Option<Vec<Term>> {
    let mut left = all.to_vec();
    for s in some {
        let at = left.iter().position(|t| t == s)?;
        left.remove(at);
    }
    Some(left)
}

fn same_factors(a: &[Term], b: &[Term]) -> bool {
    a.len() == b.len() && without_factors(a, b).is_some_and(|l| l.is_empty())
}
