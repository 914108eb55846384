//! Barrier divergence (NOTES.md): can two threads of one block disagree on reaching a barrier?
//!
//! The barrier's guard is its full path condition (branch conditions, loop ranges and
//! conditions with the iteration variables of aligned loops shared, "not yet returned"). The
//! question is `∃ A ≠ B in one block: guard(A) ∧ ¬guard(B)`. A guard over block-uniform values
//! only is the same for both threads and needs no question — except for a grid-wide sync, which
//! every thread of the grid must reach, so it is also asked about two threads of different blocks.

use crate::encode::{rename, Encoder, Finished, Scope};
use crate::protocol::{SyncInfo, SyncKind};
use crate::terms::*;

/// The questions to ask about one barrier (none when its guard is uniform). A `__syncwarp()` is
/// asked about two lanes of one warp, a `__syncthreads()` about two threads of one block, and a
/// grid sync about two threads of one block (a thread-dependent guard) and two threads of
/// different blocks (a guard that varies across blocks: `blockIdx` is uniform only in a block).
/// Each comes with its question (the `extra` term: the query's formula, renamed like it), for
/// telling whether a witness depends on the query's unknowns.
pub fn divergence_queries(enc: &Encoder, s: &SyncInfo) -> Vec<Finished> {
    let mut out = Vec::new();
    if thread_varying(&s.guard) {
        // A full-mask `__syncwarp()` must be reached by every lane of the warp.
        let scope = Scope::SameBlock {
            warp: (s.kind == SyncKind::Warp).then_some(true),
        };
        out.push(query_in(enc, s, scope));
    }
    if s.kind == SyncKind::Grid && block_varying(&s.guard) {
        out.push(query_in(enc, s, Scope::CrossBlock));
    }
    out
}

/// `∃ A ≠ B in `scope`: guard(A) ∧ ¬guard(B)`.
fn query_in(enc: &Encoder, s: &SyncInfo, scope: Scope) -> Finished {
    let mut parts = vec![
        rename(scope, 'A', &s.facts),
        rename(scope, 'B', &s.facts),
        rename(scope, 'A', &s.guard),
        not(rename(scope, 'B', &s.guard)),
    ];
    // A lane that already exited is not waited for by a `__syncwarp()` (CUDA: "all non-exited
    // threads named in mask must execute" it); for `__syncthreads()` an exited thread that
    // others wait for is a divergence as any other.
    if s.kind == SyncKind::Warp {
        parts.push(rename(scope, 'B', &s.not_exited));
    }
    for (h, init) in &s.same_iteration {
        let k = |t: char| sub(rename(scope, t, h), rename(scope, t, init));
        parts.push(eq(k('A'), k('B')));
    }
    parts.extend(enc.scope_constraints(scope));
    let question = and(parts);
    enc.finish_full(vec![question.clone()], vec![question])
}
