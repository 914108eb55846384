//! `whole-stretches`: a group of `S` lanes that walks a stretch of `F` cells together in a loop
//! holding a barrier, and guards the cells past the data inside the loop, is written for
//! stretches that are whole multiples of `S`.
//!
//! ```cuda
//! int lane = threadIdx.x % 16;
//! pos = start;  end = pos + stretch;  pos += lane;   // the group's stretch, this lane's cell
//! while (pos < end) {                                // ceil((stretch - lane) / 16) trips
//!     if (pos < n) …;                                // the data ends inside the stretch
//!     __syncthreads();
//!     pos += 16;
//! }
//! ```
//!
//! Lane `r` runs `ceil((F - r) / S)` iterations: the same number for every lane exactly when
//! `F % S == 0` (or `F <= 0`). The guard on another bound inside the loop says the stretch is
//! padded on purpose (the host rounds the size up so that every lane takes every barrier, and
//! the kernel skips the cells past the data): a divergence or race that needs a stretch that is
//! not a multiple of the group is conditional, `only if F % S != 0`. Without such a guard the
//! loop's bound is the data's own size, and nothing is assumed of it.

use super::{
    assigned_once, strip_casts, uniform, visit_stmts, walk_expr, Assumption, Broken, Uniform,
};
use crate::terms::*;
use cudarace_ir::{BarrierKind, BinOp, Block, Builtin, Expr, Kernel, LocalId, Stmt};
use std::collections::BTreeMap;

/// The `whole-stretches` assumptions of a kernel (see the module documentation).
pub fn whole_stretch_assumptions(kernel: &Kernel) -> Vec<Assumption> {
    let once = assigned_once(kernel);
    let mut out: Vec<Assumption> = Vec::new();
    let mut texts: Vec<String> = Vec::new();
    scan(kernel, &once, &kernel.body, &mut |f, s| {
        let Some(Uniform { term, text, params }) = uniform(kernel, &once, f, 0) else {
            return;
        };
        let text = if text.contains(' ') {
            format!("({text}) % {s} != 0")
        } else {
            format!("{text} % {s} != 0")
        };
        if texts.contains(&text) {
            return;
        }
        texts.push(text.clone());
        out.push(Assumption {
            term: or(vec![
                le(term.clone(), int(0)),
                eq(modulo(term, int(s)), int(0)),
            ]),
            broken: Broken::Layout {
                text,
                subjects: params,
            },
        });
    });
    out
}

/// What the straight-line code of one block has said so far: `end = v + F` (the end of `v`'s
/// stretch, with the generation of `v` it was taken at), `v += x % S` (a lane, with the
/// generation it made), and how often each local was assigned.
#[derive(Default, Clone)]
struct Facts {
    generation: BTreeMap<LocalId, u32>,
    ends: BTreeMap<LocalId, (LocalId, Expr, u32, u32)>,
    lanes: BTreeMap<LocalId, (i64, u32)>,
}

impl Facts {
    fn bump(&mut self, l: LocalId) {
        *self.generation.entry(l).or_default() += 1;
    }
    fn generation(&self, l: LocalId) -> u32 {
        self.generation.get(&l).copied().unwrap_or(0)
    }
}

fn scan(
    kernel: &Kernel,
    once: &BTreeMap<LocalId, Expr>,
    b: &Block,
    found: &mut dyn FnMut(&Expr, i64),
) {
    let mut facts = Facts::default();
    for s in b {
        match s {
            Stmt::Assign { local, value, .. } => {
                let value = strip_casts(value);
                // `v = v + x % S`: this lane's cell of the stretch.
                let lane = match value {
                    Expr::Binary(BinOp::Add, a, r) | Expr::Binary(BinOp::Add, r, a) if matches!(strip_casts(a), Expr::Local(v) if v == local) => {
                        lane_of(once, r)
                    }
                    _ => None,
                };
                // `end = v + F` with `F` the same in every thread.
                let end = match value {
                    Expr::Binary(BinOp::Add, a, f) => {
                        let local_plus = |x: &Expr, f: &Expr| match strip_casts(x) {
                            Expr::Local(v)
                                if v != local && uniform(kernel, once, f, 0).is_some() =>
                            {
                                Some((*v, f.clone()))
                            }
                            _ => None,
                        };
                        local_plus(a, f).or_else(|| local_plus(f, a))
                    }
                    _ => None,
                };
                let before = facts.generation(*local);
                facts.bump(*local);
                facts.lanes.remove(local);
                facts.ends.remove(local);
                if let Some(s) = lane {
                    facts.lanes.insert(*local, (s, before + 1));
                }
                if let Some((v, f)) = end {
                    let g = facts.generation(v);
                    facts
                        .ends
                        .insert(*local, (v, f, g, facts.generation(*local)));
                }
            }
            Stmt::Loop(l) => {
                if let Some((f, s)) = padded_loop(&facts, l) {
                    found(&f, s);
                }
                for blk in [&l.init, &l.cond_effects, &l.body, &l.step] {
                    scan(kernel, once, blk, found);
                }
            }
            Stmt::If {
                then_branch,
                else_branch,
                ..
            } => {
                scan(kernel, once, then_branch, found);
                scan(kernel, once, else_branch, found);
            }
            _ => {}
        }
        // Whatever a branch, a loop or unmodelled code changes is no longer known.
        if !matches!(s, Stmt::Assign { .. }) {
            let mut changed = std::collections::BTreeSet::new();
            cudarace_ir::assigned_locals(std::slice::from_ref(s), &mut changed);
            for l in changed {
                facts.bump(l);
                facts.lanes.remove(&l);
                facts.ends.remove(&l);
            }
        }
    }
}

/// `S` when `r` is a lane `x % S` of a thread index (`S >= 2` a constant), also through a
/// local assigned it once.
fn lane_of(once: &BTreeMap<LocalId, Expr>, r: &Expr) -> Option<i64> {
    let r = match strip_casts(r) {
        Expr::Local(l) => once.get(l)?,
        other => other,
    };
    let Expr::Binary(BinOp::Rem, x, s) = strip_casts(r) else {
        return None;
    };
    let Expr::Int(s) = strip_casts(s) else {
        return None;
    };
    let x = match strip_casts(x) {
        Expr::Local(l) => once.get(l)?,
        other => other,
    };
    (*s >= 2 && matches!(strip_casts(x), Expr::Builtin(Builtin::ThreadIdx(_)))).then_some(*s)
}

/// `(F, S)` for a loop `while (v < end)` that walks a lane's cells of a stretch (see the
/// module documentation): `end = v + F` was taken, then `v += x % S`, neither changed since;
/// every iteration adds `S` to `v`; the loop holds a `__syncthreads()` and compares `v` with
/// another bound inside.
fn padded_loop(facts: &Facts, l: &cudarace_ir::Loop) -> Option<(Expr, i64)> {
    if !l.init.is_empty() {
        return None;
    }
    let (v, e) = match strip_casts(l.cond.as_ref()?) {
        Expr::Binary(BinOp::Lt, a, b) => (strip_casts(a), strip_casts(b)),
        Expr::Binary(BinOp::Gt, b, a) => (strip_casts(a), strip_casts(b)),
        _ => return None,
    };
    let (Expr::Local(v), Expr::Local(e)) = (v, e) else {
        return None;
    };
    let (of, f, at, end_generation) = facts.ends.get(e)?;
    let (s, lane_generation) = facts.lanes.get(v)?;
    // `end` taken from `v` just before the lane was added, and neither changed since.
    if of != v
        || *lane_generation != at + 1
        || facts.generation(*v) != *lane_generation
        || facts.generation(*e) != *end_generation
    {
        return None;
    }
    let constant = |x: &Expr| match strip_casts(x) {
        Expr::Int(c) => Some(*c),
        _ => None,
    };
    if super::block_shape::constant_step(l, *v, &constant)? != *s {
        return None;
    }
    let mut barrier = false;
    visit_stmts(&l.body, &mut |st| {
        barrier |= matches!(st, Stmt::Barrier(b) if b.kind == BarrierKind::Block);
    });
    // The data's own end, tested inside: `v` compared with something other than `end`.
    let mut tail_guard = false;
    let is = |x: &Expr, l: LocalId| matches!(strip_casts(x), Expr::Local(y) if *y == l);
    let mut check = |x: &Expr, _: bool| {
        if let Expr::Binary(BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge, a, b) = x {
            tail_guard |= (is(a, *v) && !is(b, *e)) || (is(b, *v) && !is(a, *e));
        }
    };
    visit_stmts(&l.body, &mut |st| {
        if let Stmt::If { cond, .. } = st {
            walk_expr(cond, &mut check, false);
        }
    });
    (barrier && tail_guard).then(|| (f.clone(), *s))
}
