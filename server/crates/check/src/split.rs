//! Splitting (Faial, CAV'21 §4.2): the barrier intervals of an aligned protocol, and in each
//! interval every pair of conflicting access executions (same array, at least one write, not
//! both atomic). Thread A executes the first of the pair, thread B the second.

use crate::align::{summarize, Counts, Inst, Seg};
use crate::protocol::Protocol;
use cudarace_ir::{AccessMode, ArrayId};
use cudarace_solver::Term;
use std::collections::{HashMap, HashSet};

/// Two accesses that may meet in one barrier interval (one way they can: the same pair of
/// accesses may meet in several intervals, under other path conditions).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct AccessPair {
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
/// Partial when `stop` says the budget is spent (the caller then gives up).
pub fn intervals(p: &Protocol, counts: Counts, stop: crate::align::Stop) -> Vec<Seg> {
    summarize(p, &p.root, counts, stop).intervals()
}

/// Every conflicting pair in every interval, keyed by the two accesses (table indices, ordered),
/// except pairs `never_race` decides from their indices alone.
///
/// `never_race(a, b)` may look only at the arrays, flatness and index terms of `a` and `b` (not
/// at guards): it is asked once per pair of *index groups* (accesses of one interval to one
/// array with the same index terms), and its answer is taken for every pair of members. A kernel
/// that writes `s[tid]` in fifty places has one group, so its 1,275 pairs cost one question.
pub fn access_pairs(
    p: &Protocol,
    segs: &[Seg],
    keep_array: &dyn Fn(usize) -> bool,
    never_race: &dyn Fn(&Inst, &Inst) -> bool,
) -> Vec<((usize, usize), AccessPair)> {
    let mut out: Vec<((usize, usize), AccessPair)> = Vec::new();
    let mut seen: HashSet<((usize, usize), AccessPair)> = HashSet::new();
    for seg in segs {
        // Index groups, in order of first appearance; members in interval order.
        let mut group_of: HashMap<(ArrayId, bool, &[Term]), usize> = HashMap::new();
        let mut groups: Vec<Vec<usize>> = Vec::new();
        let mut modes: Vec<Vec<AccessMode>> = Vec::new();
        let mut pairs: Vec<(usize, usize)> = Vec::new();
        for (i, x) in seg.insts.iter().enumerate() {
            let Some(a) = p.accs.get(x.acc) else { continue };
            let g = *group_of
                .entry((a.array, a.flat, x.index.as_slice()))
                .or_insert_with(|| {
                    groups.push(Vec::new());
                    modes.push(Vec::new());
                    groups.len() - 1
                });
            groups[g].push(i);
            if !modes[g].contains(&a.mode) {
                modes[g].push(a.mode);
            }
        }
        for (gi, xs) in groups.iter().enumerate() {
            for (gj, ys) in groups.iter().enumerate().skip(gi) {
                let (rx, ry) = (&seg.insts[xs[0]], &seg.insts[ys[0]]);
                let same_array = p.accs[rx.acc].array == p.accs[ry.acc].array;
                let may_conflict = modes[gi]
                    .iter()
                    .any(|&x| modes[gj].iter().any(|&y| conflicting(x, y)));
                if !same_array || !may_conflict || never_race(rx, ry) {
                    continue;
                }
                let same_group = std::ptr::eq(xs, ys);
                for &i in xs {
                    for &j in ys {
                        if !same_group || i <= j {
                            pairs.push((i.min(j), i.max(j)));
                        }
                    }
                }
            }
        }
        // Interval order, as if every pair had been visited: the order decides which of equal
        // pairs is kept and the order of the disjuncts of a query.
        pairs.sort_unstable();
        for (i, j) in pairs {
            let (x, y) = (&seg.insts[i], &seg.insts[j]);
            let (ax, ay) = (&p.accs[x.acc], &p.accs[y.acc]);
            if !conflicting(ax.mode, ay.mode) || !keep_array(x.acc) {
                continue;
            }
            let (a, b) = if x.acc <= y.acc { (x, y) } else { (y, x) };
            let m = AccessPair {
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
    out
}
