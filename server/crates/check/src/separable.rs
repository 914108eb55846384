//! Which races an unmodelled call could prevent.
//!
//! A call without a body or library description may contain a barrier. The checker treats it as
//! no barrier (sound for races), so a race between two accesses that such a call separates
//! might not happen: it is reported as possible, naming the call. A race it cannot prevent —
//! the two accesses meet in a barrier interval even when every such call is a barrier — keeps
//! its confidence. This module finds the pairs of accesses that still meet: the protocol is
//! split again with every unmodelled call counted as a `__syncthreads()`.

use crate::align::Counts;
use crate::protocol::{Node, Protocol, SyncInfo, SyncKind};
use crate::split;
use crate::terms::tru;
use std::collections::HashSet;

/// Beyond this many access executions in one interval the pairs are not enumerated: every pair
/// is then taken as separable (its finding possible), which never overstates a finding.
const MAX_INSTS: usize = 2_000;

/// The pairs of accesses (protocol indices, smaller first) that meet in some barrier interval
/// when every unmodelled call is a barrier; `None` when that could not be computed (then any
/// pair may be separable), or when `stop` says the budget is spent.
pub fn pairs_meeting_across_calls(
    p: &Protocol,
    stop: crate::align::Stop,
) -> Option<HashSet<(usize, usize)>> {
    let mut strict = p.clone();
    strict.root = with_calls_as_barriers(&p.root, &mut strict.syncs);
    let counts = |k: SyncKind| k != SyncKind::Warp;
    let counts: Counts = &counts;
    let segs = split::intervals(&strict, counts, stop);
    if stop() {
        return None;
    }
    // Meeting in an interval is a property of the pair of statements, not of the witness: in a
    // loop that contains a call, the wrap-around interval holds iteration k's last accesses
    // and iteration k+1's first, while the witness may need iterations further apart, with
    // the call in between. Accesses in such loops are taken as separable.
    let mut in_call_loop = HashSet::new();
    call_loop_accesses(&p.root, false, &mut in_call_loop);
    let mut out = HashSet::new();
    for seg in &segs {
        if seg.insts.len() > MAX_INSTS {
            return None;
        }
        let mut accs: Vec<usize> = seg
            .insts
            .iter()
            .map(|i| i.acc)
            .filter(|a| !in_call_loop.contains(a))
            .collect();
        accs.sort_unstable();
        accs.dedup();
        for (i, a) in accs.iter().enumerate() {
            for b in &accs[i..] {
                out.insert((*a, *b));
            }
        }
    }
    Some(out)
}

fn with_calls_as_barriers(nodes: &[Node], syncs: &mut Vec<SyncInfo>) -> Vec<Node> {
    nodes
        .iter()
        .map(|n| match n {
            Node::MaybeSync(span) => {
                syncs.push(SyncInfo {
                    kind: SyncKind::Block,
                    guard: tru(),
                    facts: tru(),
                    span: *span,
                    cause: None,
                    same_iteration: Vec::new(),
                    not_exited: tru(),
                });
                Node::Sync(syncs.len() - 1)
            }
            Node::Branch {
                cond,
                then_branch,
                else_branch,
            } => Node::Branch {
                cond: cond.clone(),
                then_branch: with_calls_as_barriers(then_branch, syncs),
                else_branch: with_calls_as_barriers(else_branch, syncs),
            },
            Node::Loop(l) => {
                let mut l = (**l).clone();
                l.body = with_calls_as_barriers(&l.body, syncs);
                Node::Loop(Box::new(l))
            }
            other => other.clone(),
        })
        .collect()
}

fn contains_call(nodes: &[Node]) -> bool {
    nodes.iter().any(|n| match n {
        Node::MaybeSync(_) => true,
        Node::Branch {
            then_branch,
            else_branch,
            ..
        } => contains_call(then_branch) || contains_call(else_branch),
        Node::Loop(l) => contains_call(&l.body),
        Node::Acc(_) | Node::Sync(_) => false,
    })
}

/// The accesses inside a loop whose body contains an unmodelled call.
fn call_loop_accesses(nodes: &[Node], inside: bool, out: &mut HashSet<usize>) {
    for n in nodes {
        match n {
            Node::Acc(a) if inside => {
                out.insert(*a);
            }
            Node::Branch {
                then_branch,
                else_branch,
                ..
            } => {
                call_loop_accesses(then_branch, inside, out);
                call_loop_accesses(else_branch, inside, out);
            }
            Node::Loop(l) => {
                let inside = inside || contains_call(&l.body);
                call_loop_accesses(&l.body, inside, out);
            }
            _ => {}
        }
    }
}
