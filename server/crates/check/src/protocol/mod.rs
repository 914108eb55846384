//! Memory access protocols: the kernel after symbolic execution.
//!
//! Every local is replaced by its symbolic value (a [`Term`] over thread, block and grid
//! variables, see [`crate::terms`]); what remains is a tree of accesses, barriers, branches that
//! contain barriers, and loops with their iteration variables (loop-carried locals havocked at the
//! loop head, inductions recognized into ranges). [`align`](crate::align) and
//! [`split`](crate::split) cut this tree into barrier intervals.

pub mod ctype;
mod exec;
mod loops;

pub use exec::{build, build_until};

use cudarace_ir::{AccessId, AccessMode, ArrayId, Span};
use cudarace_solver::{Sort, Term};
use std::collections::{BTreeSet, HashMap};

/// An array an unmodelled effect may touch ([`cudarace_ir::Opaque`]).
#[derive(Debug, Clone)]
pub struct OpaqueUse {
    pub array: ArrayId,
    /// What the effect is (`call to `g` whose body is not available`).
    pub why: String,
    /// It only loads (see [`cudarace_ir::Opaque::reads_only`]).
    pub reads_only: bool,
    pub span: Span,
}

/// One access statement, its index and the path condition under which the thread executes it.
#[derive(Debug, Clone)]
pub struct AccInfo {
    pub id: AccessId,
    pub array: ArrayId,
    pub mode: AccessMode,
    /// One term per dimension, or one flat offset when `flat`.
    pub index: Vec<Term>,
    pub flat: bool,
    /// The stored value (writes), when known.
    pub value: Option<Term>,
    /// Path condition (branch conditions, loop ranges, not-yet-returned).
    pub guard: Term,
    pub span: Span,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SyncKind {
    Block,
    /// `__syncwarp` with the full mask (a partial mask is treated as no barrier: sound for races).
    Warp,
    Grid,
}

#[derive(Debug, Clone)]
pub struct SyncInfo {
    pub kind: SyncKind,
    /// Path condition: whether the thread reaches the barrier (branches, loop conditions, exits).
    pub guard: Term,
    /// Facts about the values in `guard` (ranges of loop variables); not reach conditions.
    pub facts: Term,
    pub span: Span,
    /// The innermost thread-dependent condition or early exit on the path to the barrier.
    pub cause: Option<(Span, String)>,
    /// Per-thread arithmetic inductions `(h, init)` of the enclosing loops (uniform step): two
    /// threads in the same iteration have `h - init` equal. Divergence compares two threads at
    /// the same iteration (a barrier reached in iteration k by one thread and not by the other).
    pub same_iteration: Vec<(Term, Term)>,
    /// The thread has not left the kernel by a thread-dependent `return` before this barrier
    /// (lanes that exited do not take part in a `__syncwarp()`).
    pub not_exited: Term,
}

#[derive(Debug, Clone)]
pub enum Node {
    Acc(usize),
    Sync(usize),
    /// Unmodelled code that might contain a barrier: treated as no barrier (sound for races).
    MaybeSync(Span),
    Branch {
        cond: Term,
        then_branch: Vec<Node>,
        else_branch: Vec<Node>,
    },
    Loop(Box<LoopNode>),
}

#[derive(Debug, Clone)]
pub struct LoopNode {
    /// Condition effects, body and step of one iteration, in terms of the head variables.
    pub body: Vec<Node>,
    /// Head variables → their values in the first iteration.
    pub first: HashMap<String, Term>,
    /// Terms of the next iteration (see [`NextIteration`]).
    pub next: NextIteration,
    /// The loop runs its first iteration.
    pub enter: Term,
    /// The current iteration is the last one.
    pub exit: Term,
    pub do_while: bool,
    /// Counter range of the values created while executing the body: when the loop is not
    /// synchronized, its block-uniform values are per thread (threads run iterations independently).
    pub fresh_range: (u32, u32),
}

#[derive(Debug, Clone)]
pub struct VarInfo {
    pub sort: Sort,
    /// Why this value is unknown (data, opaque code, approximation); `None` for exact values.
    pub reason: Option<String>,
    pub lo: Option<i64>,
    pub hi: Option<i64>,
}

#[derive(Debug, Clone, Default)]
pub struct Protocol {
    pub accs: Vec<AccInfo>,
    pub syncs: Vec<SyncInfo>,
    pub root: Vec<Node>,
    /// Keyed by the name without its `$`/`%` prefix.
    pub vars: HashMap<String, VarInfo>,
    /// Arrays an opaque effect may touch, one entry per effect and array.
    pub opaque_arrays: Vec<OpaqueUse>,
    /// Barriers whose order is not trusted (findings they might prevent become possible).
    pub may_sync: Vec<Span>,
    /// Unmodelled code that may synchronize (a call without a body), with what it is: treated
    /// as no barrier; findings it could prevent (it sits between the two accesses) are possible.
    pub may_sync_calls: Vec<(Span, String)>,
    /// Unmodelled code starts threads of its own (a kernel launched from device code).
    pub starts_threads: bool,
    /// Dimensions mentioned by threadIdx/blockDim (block) and blockIdx/gridDim (grid).
    pub block_dims_used: [bool; 3],
    pub grid_dims_used: [bool; 3],
    pub has_warp_sync: bool,
    pub has_grid_sync: bool,
    /// Symbolic execution stopped at its deadline: the protocol is incomplete.
    pub out_of_time: bool,
    /// Arrays some statement of the kernel may write: a store, an atomic, or unmodelled code
    /// that is not only a load.
    pub written: BTreeSet<ArrayId>,
    /// Values known to differ from others, keyed like [`Protocol::vars`].
    pub distinct: HashMap<String, DistinctVar>,
}

/// A value that differs from others (see `cudarace_ir::Distinct`).
#[derive(Debug, Clone)]
pub struct DistinctVar {
    /// For a ticket: the counter's array, its cell (block-uniform terms, no loop values) and
    /// whether it is shared memory (one counter per block). `None`: differs between threads.
    pub counter: Option<(ArrayId, Vec<Term>, bool)>,
}

/// How a term of one iteration reads in the next one: head variables become their values at
/// the end of this iteration; values created while executing the body (counter ids in `created`)
/// become next-iteration copies, named `name@id'tag` (the next iteration reads other data).
///
/// The copies are made by renaming when a term is carried over, not stored per value: a loop
/// body creates values for every loop nested in it, so a table of copies per loop grew with the
/// square of the nesting depth (and its construction with the cube).
#[derive(Debug, Clone, Default)]
pub struct NextIteration {
    /// Head variables (with their `$`/`%` prefix) → their values at the end of the iteration.
    pub heads: HashMap<String, Term>,
    /// Counter ids of the values the body created, `[start, end)`.
    pub created: (u32, u32),
    /// Unique per loop, so that the copies of nested loops differ.
    pub tag: u32,
}

impl NextIteration {
    /// `t` read in the next iteration (simultaneous: a head's end value speaks of this iteration).
    pub fn apply(&self, t: &Term) -> Term {
        let (lo, hi) = self.created;
        crate::terms::subst_with(t, &mut |v| {
            if let Some(end) = self.heads.get(v) {
                return Some(end.clone());
            }
            let other_side = v.starts_with('^');
            let rest = v.strip_prefix('^').unwrap_or(v);
            if other_side {
                if let Some(end) = self.heads.get(rest) {
                    return Some(crate::terms::other(end));
                }
            }
            let id = fresh_id(base_name(rest))?;
            (id >= lo && id < hi).then(|| Term::Var(format!("{v}'{}", self.tag).into()))
        })
    }
}

/// The key of a value in [`Protocol::vars`]: the name without its `$`/`%` prefix and without
/// the next-iteration marks (`x@7'2` is a copy of `x@7`, see [`NextIteration`]).
pub fn var_key(v: &str) -> &str {
    let base = base_name(v);
    match base.rfind('@') {
        Some(at) => match base[at..].find('\'') {
            Some(q) => &base[..at + q],
            None => base,
        },
        None => base,
    }
}

/// The name without its `$`/`%` prefix.
pub fn base_name(v: &str) -> &str {
    v.strip_prefix('$')
        .or_else(|| v.strip_prefix('%'))
        .unwrap_or(v)
}

/// The counter id of a value created during symbolic execution (`name@id`).
pub fn fresh_id(v: &str) -> Option<u32> {
    v.rsplit_once('@')
        .and_then(|(_, n)| n.split('\'').next()?.parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn next_iteration_copies_keep_their_id_and_key() {
        assert_eq!(fresh_id("ld.s@12'3'1"), Some(12));
        assert_eq!(var_key("$ld.s@12'3'1"), "ld.s@12");
        assert_eq!(var_key("%loop.i@4"), "loop.i@4");
        assert_eq!(var_key("blockDim.x"), "blockDim.x");
    }

    #[test]
    fn next_iteration_renames_created_values_and_advances_heads() {
        let mut heads = HashMap::new();
        heads.insert(
            "%loop.i@2".to_string(),
            Term::Add(vec![Term::var("%loop.i@2"), Term::var("$ld@3")].into()),
        );
        let n = NextIteration {
            heads,
            created: (2, 5),
            tag: 7,
        };
        // `i` becomes `i + ld` with this iteration's `ld`; the next iteration's own `ld` and
        // `^ld` are copies; values from before the loop stay.
        let t = Term::Add(
            vec![
                Term::var("%loop.i@2"),
                Term::var("$ld@3"),
                Term::var("^$ld@4"),
                Term::var("$before@1"),
            ]
            .into(),
        );
        let got = crate::terms::show(&n.apply(&t));
        assert_eq!(
            got,
            "((((%loop.i@2 + $ld@3) + $ld@3'7) + ^$ld@4'7) + $before@1)"
        );
    }
}
