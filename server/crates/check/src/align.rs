//! Barrier aligning (Faial, CAV'21 §4.1), computed as segment summaries.
//!
//! A protocol fragment is summarized by its barrier-free segments:
//! - `through`: paths from its start to its end that cross no barrier;
//! - `start`: from its start to its first barrier; `end`: from its last barrier to its end;
//! - `phases`: complete barrier intervals inside it.
//!
//! Sequencing joins `end × start` into phases. A synchronized loop `for x { p; sync; u }` yields
//! the first iteration's start, the in-iteration phases (iteration variable shared by both
//! threads), the wrap-around phase `end(x) ∪ start(next(x))` (iteration x's last interval with
//! x+1's first: exactly what aligning moves into the loop), and the last iteration's end. Loops
//! without a barrier (in the scope at hand) are unsynchronized: their block-uniform values become
//! per-thread, each thread taking its own iteration.

use crate::protocol::{fresh_id, LoopNode, Node, Protocol, SyncKind};
use crate::terms::*;
use cudarace_solver::Term;

/// One execution of an access, with its terms after loop substitutions.
#[derive(Debug, Clone)]
pub struct Inst {
    /// Index into [`Protocol::accs`].
    pub acc: usize,
    pub index: Vec<Term>,
    pub guard: Term,
    /// Loop counters whose value at this execution is not the shared head variable's: the
    /// first iteration's accesses before its first barrier (`n = blockIdx.x`) and the next
    /// iteration's in a wrap-around interval (`n + gridDim.x`). Head variable → its value here;
    /// only for the witness (two executions that differ only here are one pair).
    pub loop_at: Vec<(String, Term)>,
}

impl PartialEq for Inst {
    fn eq(&self, o: &Inst) -> bool {
        self.acc == o.acc && self.index == o.index && self.guard == o.guard
    }
}

impl Eq for Inst {}

impl std::hash::Hash for Inst {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        self.acc.hash(h);
        self.index.hash(h);
        self.guard.hash(h);
    }
}

impl Inst {
    /// `f` applied to every term.
    fn map(&self, f: &mut dyn FnMut(&Term) -> Term) -> Inst {
        Inst {
            acc: self.acc,
            index: self.index.iter().map(&mut *f).collect(),
            guard: f(&self.guard),
            loop_at: self
                .loop_at
                .iter()
                .map(|(h, t)| (h.clone(), f(t)))
                .collect(),
        }
    }

    /// Records the loop counters of `values` (head → value at this execution) not recorded
    /// yet.
    fn at(mut self, values: &std::collections::HashMap<String, Term>) -> Inst {
        let mut heads: Vec<&String> = values
            .keys()
            .filter(|h| crate::protocol::base_name(h).starts_with("loop."))
            .collect();
        heads.sort();
        for h in heads {
            if !self.loop_at.iter().any(|(x, _)| x == h) {
                self.loop_at.push((h.clone(), values[h].clone()));
            }
        }
        self
    }
}

/// A barrier-free stretch: accesses plus conditions of the path it lies on.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Seg {
    pub insts: Vec<Inst>,
    pub conds: Vec<Term>,
}

#[derive(Debug, Clone, Default)]
pub struct Summary {
    pub through: Vec<Seg>,
    pub start: Vec<Seg>,
    pub end: Vec<Seg>,
    pub phases: Vec<Seg>,
}

/// Beyond this many alternative segments, alternatives are merged (sound: more pairs, fewer
/// path conditions) to keep the product of uniform branches with barriers bounded.
const MAX_ALTERNATIVES: usize = 24;

impl Seg {
    fn join(&self, other: &Seg) -> Seg {
        let mut insts = self.insts.clone();
        insts.extend(other.insts.iter().cloned());
        let mut conds = self.conds.clone();
        conds.extend(other.conds.iter().cloned());
        Seg { insts, conds }
    }

    fn map(&self, f: &mut dyn FnMut(&Term) -> Term) -> Seg {
        Seg {
            insts: self.insts.iter().map(|i| i.map(&mut *f)).collect(),
            conds: self.conds.iter().map(&mut *f).collect(),
        }
    }

    /// Each access's loop counters of `values` (see [`Inst::loop_at`]).
    fn at(mut self, values: &std::collections::HashMap<String, Term>) -> Seg {
        self.insts = self.insts.into_iter().map(|i| i.at(values)).collect();
        self
    }

    fn with_cond(mut self, c: &Term) -> Seg {
        if *c != tru() {
            self.conds.push(c.clone());
        }
        self
    }
}

fn product(a: &[Seg], b: &[Seg]) -> Vec<Seg> {
    // More alternatives with accesses than the cap keeps: `cap` would merge them into one
    // segment holding every execution of `a` and `b`; build that directly (each alternative of
    // the product repeats the executions of its parts, and a long nest of loops made millions).
    let with_accesses = a
        .iter()
        .map(|x| {
            if x.insts.is_empty() {
                b.iter().filter(|y| !y.insts.is_empty()).count()
            } else {
                b.len()
            }
        })
        .sum::<usize>();
    if with_accesses > MAX_ALTERNATIVES {
        let mut merged = Seg::default();
        // Sized up front: growing re-hashes every execution's terms.
        let total = a.iter().chain(b).map(|s| s.insts.len()).sum();
        let mut seen = std::collections::HashSet::with_capacity(total);
        for s in a.iter().chain(b) {
            for i in &s.insts {
                if seen.insert(i) {
                    merged.insts.push(i.clone());
                }
            }
        }
        return vec![merged];
    }
    let mut out = Vec::new();
    for x in a {
        for y in b {
            out.push(x.join(y));
        }
    }
    cap(out)
}

fn cap(segs: Vec<Seg>) -> Vec<Seg> {
    let mut segs = merge_empty(segs);
    segs.dedup();
    if segs.len() <= MAX_ALTERNATIVES {
        return segs;
    }
    // Each execution once, in order of first appearance (a set: the alternatives of a long
    // nest of loops hold thousands of executions, and comparing each with every one kept was
    // quadratic).
    let mut merged = Seg::default();
    let total = segs.iter().map(|s| s.insts.len()).sum();
    let mut seen = std::collections::HashSet::with_capacity(total);
    for s in segs {
        for i in s.insts {
            if seen.insert(i.clone()) {
                merged.insts.push(i);
            }
        }
    }
    vec![merged]
}

/// Alternatives without accesses differ only in their path conditions: one alternative under
/// the disjunction of those conditions is the same set of paths. Kept apart, they multiply
/// through every sequence (a nest of synchronized loops has one per loop that may run zero
/// times, each carrying the exit conditions of the loops around it).
fn merge_empty(segs: Vec<Seg>) -> Vec<Seg> {
    if segs.iter().filter(|s| s.insts.is_empty()).count() < 2 {
        return segs;
    }
    let mut out = Vec::with_capacity(segs.len());
    let mut alternatives = Vec::new();
    let mut at = None;
    for s in segs {
        if s.insts.is_empty() {
            at.get_or_insert(out.len());
            alternatives.push(and(s.conds));
        } else {
            out.push(s);
        }
    }
    let cond = or(alternatives);
    let merged = Seg {
        insts: vec![],
        conds: if cond == tru() { vec![] } else { vec![cond] },
    };
    out.insert(at.unwrap_or(0), merged);
    out
}

fn map_all(segs: &[Seg], f: &mut dyn FnMut(&Term) -> Term) -> Vec<Seg> {
    segs.iter().map(|s| s.map(f)).collect()
}

fn concat(mut a: Vec<Seg>, b: Vec<Seg>) -> Vec<Seg> {
    a.extend(b);
    cap(a)
}

impl Summary {
    fn unit() -> Summary {
        Summary {
            through: vec![Seg::default()],
            ..Summary::default()
        }
    }

    fn seq(self, b: Summary) -> Summary {
        let through = product(&self.through, &b.through);
        let start = concat(self.start, product(&self.through, &b.start));
        let mut phases = self.phases;
        phases.extend(b.phases);
        phases.extend(product(&self.end, &b.start));
        let end = concat(b.end, product(&self.end, &b.through));
        Summary {
            through,
            start,
            end,
            phases,
        }
    }

    /// Every barrier interval of a whole kernel (its start and end act as barriers).
    pub fn intervals(self) -> Vec<Seg> {
        let mut all = self.phases;
        all.extend(self.start);
        all.extend(self.end);
        all.extend(self.through);
        all
    }
}

/// Which barrier kinds order the pair of threads being considered.
pub type Counts<'a> = &'a dyn Fn(SyncKind) -> bool;

/// Does barrier `i` order the pair of threads at hand? A grid sync that only some blocks reach
/// is never checked for divergence across blocks, so it is not trusted to order anything. (A
/// `__syncthreads()` or `__syncwarp()` under a thread-dependent guard still counts: two threads
/// that both reach it are ordered, two threads on different sides of the condition are handled
/// by [`summarize_node`], and a pair of threads of one block (warp) that disagrees on reaching
/// it is a divergence, reported by its own query.)
pub fn orders(p: &Protocol, i: usize, counts: Counts) -> bool {
    p.syncs
        .get(i)
        .is_some_and(|s| counts(s.kind) && (s.kind != SyncKind::Grid || !block_varying(&s.guard)))
}

pub fn contains_sync(p: &Protocol, nodes: &[Node], counts: Counts) -> bool {
    nodes.iter().any(|n| match n {
        Node::Sync(i) => orders(p, *i, counts),
        Node::Acc(_) | Node::MaybeSync(_) => false,
        Node::Branch {
            then_branch,
            else_branch,
            ..
        } => contains_sync(p, then_branch, counts) || contains_sync(p, else_branch, counts),
        Node::Loop(l) => contains_sync(p, &l.body, counts),
    })
}

/// Make the block-uniform values created inside an unsynchronized loop per-thread.
fn dealign(range: (u32, u32)) -> impl FnMut(&Term) -> Term {
    move |t: &Term| {
        map_vars(t, &mut |v| {
            let (hat, v) = match v.strip_prefix('^') {
                Some(rest) => ("^", rest),
                None => ("", v),
            };
            let rest = v.strip_prefix('%')?;
            let id = fresh_id(rest)?;
            (id >= range.0 && id < range.1).then(|| Term::Var(format!("{hat}${rest}").into()))
        })
    }
}

/// All access executions of a barrier-free fragment.
fn collect(p: &Protocol, nodes: &[Node], out: &mut Vec<Inst>) {
    collect_in(p, nodes, false, out)
}

/// `in_loop`: an enclosing unsynchronized loop makes the collected terms per-thread. The values
/// created in a nested loop are created in the body of the enclosing one too (counter ranges
/// nest), so the outermost loop's renaming covers every inner loop's: renaming once per access
/// instead of once per level keeps deep nests linear.
fn collect_in(p: &Protocol, nodes: &[Node], in_loop: bool, out: &mut Vec<Inst>) {
    for n in nodes {
        match n {
            Node::Acc(i) => {
                if let Some(a) = p.accs.get(*i) {
                    out.push(Inst {
                        acc: *i,
                        index: a.index.clone(),
                        guard: a.guard.clone(),
                        loop_at: Vec::new(),
                    });
                }
            }
            Node::Sync(_) | Node::MaybeSync(_) => {}
            Node::Branch {
                then_branch,
                else_branch,
                ..
            } => {
                collect_in(p, then_branch, in_loop, out);
                collect_in(p, else_branch, in_loop, out);
            }
            Node::Loop(l) if in_loop => collect_in(p, &l.body, true, out),
            Node::Loop(l) => {
                let mut inner = Vec::new();
                collect_in(p, &l.body, true, &mut inner);
                let mut f = dealign(l.fresh_range);
                out.extend(inner.into_iter().map(|i| i.map(&mut f)));
            }
        }
    }
}

/// What to ask whether the time budget is spent; once it says so, the summary returned is
/// partial and must not be used (the caller asks again and gives up).
pub type Stop<'a> = &'a dyn Fn() -> bool;

pub fn summarize(p: &Protocol, nodes: &[Node], counts: Counts, stop: Stop) -> Summary {
    let mut acc = Summary::unit();
    let mut pending = Vec::new();
    for n in nodes {
        if stop() {
            return acc;
        }
        if !contains_sync(p, std::slice::from_ref(n), counts) {
            collect(p, std::slice::from_ref(n), &mut pending);
            continue;
        }
        if !pending.is_empty() {
            let s = Summary {
                through: vec![Seg {
                    insts: std::mem::take(&mut pending),
                    conds: vec![],
                }],
                ..Summary::default()
            };
            acc = acc.seq(s);
        }
        acc = acc.seq(summarize_node(p, n, counts, stop));
    }
    if !pending.is_empty() {
        let s = Summary {
            through: vec![Seg {
                insts: pending,
                conds: vec![],
            }],
            ..Summary::default()
        };
        acc = acc.seq(s);
    }
    acc
}

fn summarize_node(p: &Protocol, n: &Node, counts: Counts, stop: Stop) -> Summary {
    match n {
        Node::Sync(i) if !orders(p, *i, counts) => Summary::unit(),
        Node::Sync(_) => Summary {
            start: vec![Seg::default()],
            end: vec![Seg::default()],
            ..Summary::default()
        },
        Node::Branch {
            cond,
            then_branch,
            else_branch,
        } => {
            let t = summarize(p, then_branch, counts, stop);
            let e = summarize(p, else_branch, counts, stop);
            let nc = not(cond.clone());
            // Two threads on different sides of a thread-dependent condition: each crosses its
            // side without a barrier (a side's `through` paths, or it already left the kernel),
            // or one of them reaches a barrier the other skips, which is a divergence (reported
            // by its own query). So their accesses on the barrier-free paths of both sides meet
            // the code before and after the branch in one interval, each thread under its own
            // condition (folded into the access guards, since segment conditions bind both).
            let differ = thread_varying(cond).then(|| {
                // The two threads disagree on the condition.
                let mut s = Seg {
                    insts: vec![],
                    conds: vec![not(eq(cond.clone(), other(cond)))],
                };
                for (segs, c) in [(&t.through, cond), (&e.through, &nc)] {
                    for seg in segs.iter() {
                        let mut pre = vec![c.clone()];
                        pre.extend(seg.conds.iter().cloned());
                        for i in &seg.insts {
                            let mut g = pre.clone();
                            g.push(i.guard.clone());
                            s.insts.push(Inst {
                                acc: i.acc,
                                index: i.index.clone(),
                                guard: and(g),
                                loop_at: i.loop_at.clone(),
                            });
                        }
                    }
                }
                s
            });
            let add = |segs: Vec<Seg>, c: &Term| -> Vec<Seg> {
                segs.into_iter().map(|s| s.with_cond(c)).collect()
            };
            let mut through = concat(add(t.through, cond), add(e.through, &nc));
            through.extend(differ);
            Summary {
                through: cap(through),
                start: concat(add(t.start, cond), add(e.start, &nc)),
                end: concat(add(t.end, cond), add(e.end, &nc)),
                phases: {
                    let mut ph = add(t.phases, cond);
                    ph.extend(add(e.phases, &nc));
                    ph
                },
            }
        }
        Node::Loop(l) => summarize_loop(p, l, counts, stop),
        Node::Acc(_) | Node::MaybeSync(_) => {
            let mut insts = Vec::new();
            collect(p, std::slice::from_ref(n), &mut insts);
            Summary {
                through: vec![Seg {
                    insts,
                    conds: vec![],
                }],
                ..Summary::default()
            }
        }
    }
}

fn summarize_loop(p: &Protocol, l: &LoopNode, counts: Counts, stop: Stop) -> Summary {
    let b = summarize(p, &l.body, counts, stop);
    let first = |t: &Term| subst(t, &l.first);
    let next = |t: &Term| l.next.apply(t);
    let zero_trip = if l.do_while {
        vec![]
    } else {
        vec![Seg {
            insts: vec![],
            conds: vec![not(l.enter.clone())],
        }]
    };
    let no_insts = |segs: &[Seg]| segs.iter().all(|s| s.insts.is_empty());
    if !b.through.is_empty() && no_insts(&b.through) && (no_insts(&b.end) || no_insts(&b.start)) {
        // Some iterations may cross no barrier but access nothing either (e.g. an inner
        // synchronized loop that may run zero times). Such an iteration is the same for every
        // thread of the block, so threads stay aligned; only "the next iteration" becomes "some
        // later iteration", which the wrap-around below does not rely on when one side is empty.
        let wrap: Vec<Seg> = if no_insts(&b.end) {
            b.start.clone()
        } else {
            b.end.clone()
        };
        let mut phases = b.phases;
        phases.extend(wrap.into_iter().map(|s| Seg {
            insts: s.insts,
            conds: vec![],
        }));
        let mut through = zero_trip;
        through.push(Seg::default());
        return Summary {
            through,
            start: b.start,
            end: b.end,
            phases,
        };
    }
    if !b.through.is_empty() {
        // Some iterations cross no barrier: a barrier interval can span several iterations, in
        // which threads are not aligned. Fall back to per-thread iterations for everything that
        // is not a complete in-iteration phase (sound over-approximation).
        let mut f = dealign(l.fresh_range);
        let merge = |lists: &[&Vec<Seg>], f: &mut dyn FnMut(&Term) -> Term| -> Seg {
            let mut s = Seg::default();
            for list in lists {
                for seg in list.iter() {
                    s.insts.extend(seg.map(f).insts);
                }
            }
            s
        };
        let through = merge(&[&b.through], &mut f);
        let start = merge(&[&b.through, &b.start], &mut f);
        let end = merge(&[&b.end, &b.through], &mut f);
        let wrap = merge(&[&b.end, &b.through, &b.start], &mut f);
        let mut phases = b.phases;
        phases.push(wrap);
        let mut thr = zero_trip;
        thr.push(through);
        return Summary {
            through: thr,
            start: vec![start],
            end: vec![end],
            phases,
        };
    }
    let start: Vec<Seg> = map_all(&b.start, &mut |t| first(t))
        .into_iter()
        .map(|s| s.at(&l.first).with_cond(&l.enter))
        .collect();
    // The wrap-around interval: iteration x's last interval with x+1's first. When one side has
    // no access, the other side at an arbitrary iteration is the same set of pairs (and the
    // queries stay free of next-iteration terms).
    let wrap = if no_insts(&b.end) {
        b.start
            .iter()
            .map(|s| Seg {
                insts: s.insts.clone(),
                conds: vec![],
            })
            .collect()
    } else if no_insts(&b.start) {
        b.end
            .iter()
            .map(|s| Seg {
                insts: s.insts.clone(),
                conds: vec![],
            })
            .collect()
    } else {
        let next_start: Vec<Seg> = map_all(&b.start, &mut |t| next(t))
            .into_iter()
            .map(|s| s.at(&l.next.heads))
            .collect();
        product(&b.end, &next_start)
    };
    let end: Vec<Seg> = b.end.into_iter().map(|s| s.with_cond(&l.exit)).collect();
    let mut phases = b.phases;
    phases.extend(wrap);
    Summary {
        through: zero_trip,
        start,
        end,
        phases,
    }
}
