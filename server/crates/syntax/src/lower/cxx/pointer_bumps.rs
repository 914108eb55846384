//! Pointers bumped once per iteration of a counted loop (`for (j = 0; j < n; j++) { q[t] = …;
//! q += blockDim.x; }`).
//!
//! The pointer's offset local and the loop counter are two inductions of the loop, and the
//! checker bounds each by itself: the offset's iteration count is not tied to `j < n`, so every
//! block's pointer could walk into the next block's cells (a false race). This pass, run on the
//! finished IR, ties them: at the top of the body the offset is set to its value on entering the
//! loop plus the iteration number times the bump, the iteration number being `(j - j0) / c` for
//! the counter `j` stepped by the constant `c`. That assignment holds at that point of every
//! iteration, so it changes no execution; it only states what the checker could not derive.
//!
//! Only when everything is simple: the counter is assigned once in the step by a constant and
//! never in the body; the bump is the offset's only assignment in the loop, is unconditional at
//! the top level of the body (or in the step), and adds an amount no statement of the loop
//! changes; the body has no `continue` (which would skip a bump in the body) and the condition
//! does not read the offset.

use cudarace_ir::{BinOp, Block, Expr, LocalId, Loop, ScalarType, Stmt};
use std::collections::{BTreeSet, HashSet};

/// Rewrites every loop of `b` (inner loops first). `offsets` are the pointer offset locals;
/// `new_local` makes a fresh local (name, type).
pub(crate) fn tie_bumps(
    b: &mut Block,
    offsets: &HashSet<LocalId>,
    new_local: &mut dyn FnMut(&str, ScalarType) -> LocalId,
) {
    for s in b.iter_mut() {
        match s {
            Stmt::If {
                then_branch,
                else_branch,
                ..
            } => {
                tie_bumps(then_branch, offsets, new_local);
                tie_bumps(else_branch, offsets, new_local);
            }
            Stmt::Loop(lp) => {
                tie_bumps(&mut lp.body, offsets, new_local);
                tie_loop(lp, offsets, new_local);
            }
            _ => {}
        }
    }
}

fn tie_loop(
    lp: &mut Loop,
    offsets: &HashSet<LocalId>,
    new_local: &mut dyn FnMut(&str, ScalarType) -> LocalId,
) {
    if has_continue(&lp.body) {
        return;
    }
    let Some((j, c)) = counter(lp) else {
        return;
    };
    let mut in_loop = BTreeSet::new();
    for blk in [&lp.body, &lp.step, &lp.cond_effects] {
        cudarace_ir::assigned_locals(blk, &mut in_loop);
    }
    if count_assigns(&lp.body, j) > 0 || count_assigns(&lp.cond_effects, j) > 0 {
        return;
    }
    // Candidate bumps: `L = L + d` at the top level of the body or of the step.
    let mut ties: Vec<(LocalId, Expr, bool)> = Vec::new();
    let tops = lp
        .body
        .iter()
        .map(|s| (s, true))
        .chain(lp.step.iter().map(|s| (s, false)));
    for (s, in_body) in tops {
        let Stmt::Assign { local, value, .. } = s else {
            continue;
        };
        if !offsets.contains(local) {
            continue;
        }
        let Expr::Binary(BinOp::Add, a, d) = value else {
            continue;
        };
        if **a != Expr::Local(*local) || !invariant(d, &in_loop) {
            continue;
        }
        let total = count_assigns(&lp.body, *local) + count_assigns(&lp.step, *local);
        let read_by_cond = lp.cond.as_ref().is_some_and(|e| mentions(e, *local))
            || block_mentions(&lp.cond_effects, *local);
        if total == 1 && !read_by_cond && !ties.iter().any(|t| t.0 == *local) {
            ties.push((*local, (**d).clone(), in_body));
        }
    }
    if ties.is_empty() {
        return;
    }
    let span = lp.span;
    let i64_ty = ScalarType::Int {
        bits: 64,
        signed: true,
    };
    let j_entry = new_local("loop.counter.entry", i64_ty);
    lp.init.push(Stmt::Assign {
        local: j_entry,
        value: Expr::Local(j),
        span,
    });
    // The iteration number: (j - j0) / c.
    let diff = Expr::bin(BinOp::Sub, Expr::Local(j), Expr::Local(j_entry));
    let iter = if c == 1 {
        diff
    } else {
        Expr::bin(BinOp::Div, diff, Expr::Int(c))
    };
    let mut head = Vec::new();
    for (l, d, _) in ties {
        let entry = new_local("pointer.offset.entry", i64_ty);
        lp.init.push(Stmt::Assign {
            local: entry,
            value: Expr::Local(l),
            span,
        });
        head.push(Stmt::Assign {
            local: l,
            value: Expr::bin(
                BinOp::Add,
                Expr::Local(entry),
                Expr::bin(BinOp::Mul, iter.clone(), d),
            ),
            span,
        });
    }
    head.append(&mut lp.body);
    lp.body = head;
}

/// The loop counter and its constant step: `j` assigned once in the step as `j + c` (or
/// `j - c`), and last assigned in the initialization.
fn counter(lp: &Loop) -> Option<(LocalId, i64)> {
    let mut found = None;
    for s in &lp.step {
        let Stmt::Assign { local, value, .. } = s else {
            continue;
        };
        let c = match value {
            Expr::Binary(BinOp::Add, a, b) if **a == Expr::Local(*local) => match **b {
                Expr::Int(c) => c,
                _ => continue,
            },
            Expr::Binary(BinOp::Sub, a, b) if **a == Expr::Local(*local) => match **b {
                Expr::Int(c) => c.checked_neg()?,
                _ => continue,
            },
            _ => continue,
        };
        if c == 0 || count_assigns(&lp.step, *local) != 1 {
            continue;
        }
        let initialized = lp
            .init
            .iter()
            .any(|s| matches!(s, Stmt::Assign { local: l, .. } if l == local));
        if initialized && found.is_none() {
            found = Some((*local, c));
        }
    }
    found
}

fn has_continue(b: &Block) -> bool {
    b.iter().any(|s| match s {
        Stmt::Continue { .. } => true,
        Stmt::If {
            then_branch,
            else_branch,
            ..
        } => has_continue(then_branch) || has_continue(else_branch),
        // A `continue` inside an inner loop continues that loop.
        _ => false,
    })
}

fn count_assigns(b: &Block, l: LocalId) -> usize {
    let mut n = 0;
    for s in b {
        match s {
            Stmt::Assign { local, .. } if *local == l => n += 1,
            Stmt::If {
                then_branch,
                else_branch,
                ..
            } => n += count_assigns(then_branch, l) + count_assigns(else_branch, l),
            Stmt::Loop(lp) => {
                n += count_assigns(&lp.init, l)
                    + count_assigns(&lp.cond_effects, l)
                    + count_assigns(&lp.step, l)
                    + count_assigns(&lp.body, l)
            }
            // Unknown code that may change it: never a single bump.
            Stmt::Opaque(o) if o.locals.contains(&l) => n += 2,
            _ => {}
        }
    }
    n
}

/// Built from constants, parameters, launch values and locals the loop never assigns.
fn invariant(e: &Expr, in_loop: &BTreeSet<LocalId>) -> bool {
    match e {
        Expr::Int(_) | Expr::Param(_) | Expr::Builtin(_) => true,
        Expr::Local(l) => !in_loop.contains(l),
        Expr::Unary(_, a) | Expr::Cast(_, a) => invariant(a, in_loop),
        Expr::Binary(_, a, b) => invariant(a, in_loop) && invariant(b, in_loop),
        Expr::Ite(c, a, b) => {
            invariant(c, in_loop) && invariant(a, in_loop) && invariant(b, in_loop)
        }
        _ => false,
    }
}

fn mentions(e: &Expr, l: LocalId) -> bool {
    match e {
        Expr::Local(x) => *x == l,
        Expr::Unary(_, a) | Expr::Cast(_, a) => mentions(a, l),
        Expr::Binary(_, a, b) => mentions(a, l) || mentions(b, l),
        Expr::Ite(c, a, b) => mentions(c, l) || mentions(a, l) || mentions(b, l),
        _ => false,
    }
}

fn block_mentions(b: &Block, l: LocalId) -> bool {
    b.iter().any(|s| match s {
        Stmt::Assign { local, value, .. } => *local == l || mentions(value, l),
        Stmt::Access(a) => a.index.iter().any(|e| mentions(e, l)),
        Stmt::If {
            cond,
            then_branch,
            else_branch,
            ..
        } => mentions(cond, l) || block_mentions(then_branch, l) || block_mentions(else_branch, l),
        _ => true,
    })
}
