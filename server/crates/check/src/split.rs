//! Splitting (Faial, CAV'21 §4.2): the barrier intervals of an aligned protocol, and in each
//! interval every pair of conflicting access executions (same array, at least one write, not
//! both atomic). Thread A executes the first of the pair, thread B the second.

use crate::align::{summarize, Counts, Inst, Seg};
use crate::protocol::Protocol;
use cudarace_ir::AccessMode;
use cudarace_solver::Term;
use std::collections::HashSet;

/// One way two accesses can meet in one barrier interval.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Meeting {
    pub a: Inst,
    pub b: Inst,
    /// Conditions of the path the interval lies on (apply to both threads).
    pub conds: Vec<Term>,
}

pub fn conflicting(x: AccessMode, y: AccessMode) -> bool {
    !matches!(
        (x, y),
        (AccessMode::Read, AccessMode::Read) | (AccessMode::Atomic, AccessMode::Atomic)
    )
}

/// The barrier intervals of the whole kernel under `counts`.
pub fn intervals(p: &Protocol, counts: Counts) -> Vec<Seg> {
    summarize(p, &p.root, counts).intervals()
}

/// Every conflicting pair in every interval, keyed by the two accesses (table indices, ordered).
pub fn meetings(
    p: &Protocol,
    segs: &[Seg],
    keep_array: &dyn Fn(usize) -> bool,
) -> Vec<((usize, usize), Meeting)> {
    let mut out: Vec<((usize, usize), Meeting)> = Vec::new();
    let mut seen: HashSet<((usize, usize), Meeting)> = HashSet::new();
    for seg in segs {
        for (i, x) in seg.insts.iter().enumerate() {
            for y in &seg.insts[i..] {
                let (ax, ay) = match (p.accs.get(x.acc), p.accs.get(y.acc)) {
                    (Some(a), Some(b)) => (a, b),
                    _ => continue,
                };
                if ax.array != ay.array || !conflicting(ax.mode, ay.mode) || !keep_array(x.acc) {
                    continue;
                }
                let (a, b) = if x.acc <= y.acc { (x, y) } else { (y, x) };
                let m = Meeting {
                    a: a.clone(),
                    b: b.clone(),
                    conds: seg.conds.clone(),
                };
                let key = (a.acc, b.acc);
                if seen.insert((key, m.clone())) {
                    out.push((key, m));
                }
            }
        }
    }
    out
}
