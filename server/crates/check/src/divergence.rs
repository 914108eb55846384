//! Barrier divergence (NOTES.md): can two threads of one block disagree on reaching a barrier?
//!
//! The barrier's guard is its full path condition (branch conditions, loop ranges and
//! conditions with the iteration variables of aligned loops shared, "not yet returned"). The
//! question is `∃ A ≠ B in one block: guard(A) ∧ ¬guard(B)`. A guard over block-uniform values
//! only is the same for both threads and needs no question.

use crate::encode::{rename, Encoder, Scope};
use crate::protocol::{SyncInfo, SyncKind};
use crate::terms::*;
use cudarace_solver::Query;

/// `None` when the barrier cannot diverge (uniform guard, or a warp barrier, which is meant for
/// converged subsets of a warp).
pub fn divergence_query(enc: &Encoder, s: &SyncInfo) -> Option<(Query, Vec<String>)> {
    if s.kind == SyncKind::Warp || !thread_varying(&s.guard) {
        return None;
    }
    let scope = Scope::SameBlock { warp: None };
    let mut parts = vec![
        rename(scope, 'A', &s.facts),
        rename(scope, 'B', &s.facts),
        rename(scope, 'A', &s.guard),
        not(rename(scope, 'B', &s.guard)),
    ];
    parts.extend(enc.scope_constraints(scope));
    Some(enc.finish(vec![and(parts)]))
}
