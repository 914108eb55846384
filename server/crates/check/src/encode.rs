//! From protocol terms to solver queries.
//!
//! Two distinct symbolic threads A and B. Per-thread values (`$x`) become `A.x` / `B.x`;
//! block-uniform values (`%x`) are shared (`x`) when both threads are in one block and per-thread
//! across blocks; grid values stay as they are. Names created during symbolic execution (`@n`)
//! are renamed to per-query ordinals (`A.loop.i`, `A.loop.i#2`, `unknown`) in order of first
//! appearance, so that a question unchanged by an edit elsewhere has the same [`Query::key`].

use crate::align::Inst;
use crate::launch::{DimSpec, Launch};
use crate::lemmas::{
    divmod_facts, equal_candidates, product_bound_facts, quotient_bound_facts, quotient_lemma,
    radix_lemmas, rotation_lemma,
};
use crate::protocol::{var_key, Protocol};
use crate::split::AccessPair;
use crate::terms::*;
use crate::truth::logical_bits;
use cudarace_ir::{Expr, Kernel};
use cudarace_solver::{Query, Sort, Term};
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::Arc;

const DIMS: [&str; 3] = ["x", "y", "z"];

/// Which two threads a question is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scope {
    /// Two threads of one block; `warp`: `Some(true)` same warp, `Some(false)` different warps,
    /// `None` when the kernel has no `__syncwarp` (warps do not matter).
    SameBlock { warp: Option<bool> },
    /// Two threads of different blocks (global memory only).
    CrossBlock,
}

pub struct Encoder<'a> {
    pub p: &'a Protocol,
    pub kernel: &'a Kernel,
    pub launch: &'a Launch,
}

pub fn rename(scope: Scope, thread: char, t: &Term) -> Term {
    map_vars(t, &mut |v| {
        if let Some(rest) = v.strip_prefix('^') {
            let o = if thread == 'A' { 'B' } else { 'A' };
            return Some(rename(scope, o, &Term::Var(rest.to_string().into())));
        }
        if let Some(rest) = v.strip_prefix('$') {
            return Some(Term::Var(format!("{thread}.{rest}").into()));
        }
        if let Some(rest) = v.strip_prefix('%') {
            return Some(Term::Var(match scope {
                Scope::SameBlock { .. } if !rest.starts_with("bid.") => rest.to_string().into(),
                _ => format!("{thread}.{rest}").into(),
            }));
        }
        None
    })
}

fn v(name: String) -> Term {
    Term::Var(name.into())
}

impl<'a> Encoder<'a> {
    fn dim_term(&self, block: bool, d: usize) -> Term {
        let spec = if block {
            &self.launch.block[d]
        } else {
            &self.launch.grid[d]
        };
        match spec {
            DimSpec::Fixed(n) => int(*n as i64),
            _ => v(format!(
                "{}.{}",
                if block { "blockDim" } else { "gridDim" },
                DIMS[d]
            )),
        }
    }

    fn linear_tid(&self, t: char) -> Term {
        let bx = self.dim_term(true, 0);
        let by = self.dim_term(true, 1);
        // A dimension of size 1 has index 0: keep the term linear then.
        let idx = |d: usize| match self.launch.block[d] {
            DimSpec::Fixed(1) => int(0),
            _ => v(format!("{t}.tid.{}", DIMS[d])),
        };
        add(
            add(idx(0), mul(idx(1), bx.clone())),
            mul(idx(2), mul(bx, by)),
        )
    }

    /// Threads A and B are two different threads (of one block or not).
    pub fn threads_differ(&self) -> Term {
        or(DIMS
            .iter()
            .flat_map(|d| {
                ["tid", "bid"].map(|w| not(eq(v(format!("A.{w}.{d}")), v(format!("B.{w}.{d}")))))
            })
            .collect())
    }

    pub fn scope_constraints(&self, scope: Scope) -> Vec<Term> {
        let tid_differ = or(DIMS
            .iter()
            .map(|d| not(eq(v(format!("A.tid.{d}")), v(format!("B.tid.{d}")))))
            .collect());
        match scope {
            Scope::SameBlock { warp } => {
                let mut out: Vec<Term> = DIMS
                    .iter()
                    .map(|d| eq(v(format!("A.bid.{d}")), v(format!("B.bid.{d}"))))
                    .collect();
                out.push(tid_differ);
                if let Some(same) = warp {
                    let wa = div(self.linear_tid('A'), int(32));
                    let wb = div(self.linear_tid('B'), int(32));
                    out.push(if same { eq(wa, wb) } else { not(eq(wa, wb)) });
                }
                out
            }
            Scope::CrossBlock => {
                vec![or(DIMS
                    .iter()
                    .map(|d| not(eq(v(format!("A.bid.{d}")), v(format!("B.bid.{d}")))))
                    .collect())]
            }
        }
    }

    /// The symbolic size of one array dimension (constants, parameters and simple arithmetic).
    /// The size of an array dimension as a term, when the checker can state it.
    pub fn dim_size_term(&self, e: &Expr) -> Option<Term> {
        self.dim_size(e)
    }

    fn dim_size(&self, e: &Expr) -> Option<Term> {
        Some(match e {
            Expr::Int(n) => int(*n),
            Expr::Param(p) => {
                let prm = self.kernel.params.get(p.0 as usize)?;
                match prm.value {
                    Some(val) => int(val),
                    None => v(format!("param.{}", prm.name)),
                }
            }
            Expr::Binary(op, a, b) => {
                let (a, b) = (self.dim_size(a)?, self.dim_size(b)?);
                match op {
                    cudarace_ir::BinOp::Add => add(a, b),
                    cudarace_ir::BinOp::Sub => sub(a, b),
                    cudarace_ir::BinOp::Mul => mul(a, b),
                    cudarace_ir::BinOp::Div => div(a, b),
                    _ => return None,
                }
            }
            Expr::Cast(_, a) => self.dim_size(a)?,
            _ => return None,
        })
    }

    /// The flat element offset of a multi-dimensional index, when the inner sizes are known.
    fn flatten(&self, acc: usize, index: &[Term]) -> Option<Term> {
        let a = self.p.accs.get(acc)?;
        if a.flat || index.len() <= 1 {
            return index.first().cloned().or(Some(int(0)));
        }
        let arr = self.kernel.arrays.get(a.array.0 as usize)?;
        let mut off = index[0].clone();
        for (k, idx) in index.iter().enumerate().skip(1) {
            let size = self.dim_size(arr.dims.get(k)?.as_ref()?)?;
            off = add(mul(off, size), idx.clone());
        }
        Some(off)
    }

    /// `A's index == B's index` per dimension (flat offsets when one access is flat), with the
    /// cell as thread A's index; `None` when a flat and an indexed access cannot be related
    /// (then the cells are left unconstrained: a sound over-approximation).
    fn same_cell(
        &self,
        (acc_a, acc_b): (usize, usize),
        ia: &[Term],
        ib: &[Term],
    ) -> Option<(Vec<Term>, Vec<Term>)> {
        if self.p.accs.get(acc_a)?.flat == self.p.accs.get(acc_b)?.flat && ia.len() == ib.len() {
            let eqs = ia.iter().zip(ib).map(|(x, y)| same_index(x, y)).collect();
            return Some((eqs, ia.to_vec()));
        }
        let fa = self.flatten(acc_a, ia)?;
        let fb = self.flatten(acc_b, ib)?;
        Some((vec![same_index(&fa, &fb)], vec![fa]))
    }

    /// One way the pair can race: both guards, the path conditions, the same cell (the scope's
    /// constraints on the two threads are added by the caller, see [`Encoder::scope_constraints`]).
    /// Returns the core and thread A's cell (one term per coordinate).
    pub fn race_core(
        &self,
        scope: Scope,
        m: &AccessPair,
        unrelated: &mut bool,
    ) -> (Term, Vec<Term>) {
        let ra = |t: &Term| rename(scope, 'A', t);
        let rb = |t: &Term| rename(scope, 'B', t);
        let ia: Vec<Term> = m.a.index.iter().map(ra).collect();
        let ib: Vec<Term> = m.b.index.iter().map(rb).collect();
        // The cells first: when they alone decide the pair, the guards are not even renamed.
        let same = self.same_cell((m.a.acc, m.b.acc), &ia, &ib);
        if let Some((eqs, c)) = &same {
            if self.cells_never_meet(scope, eqs) {
                return (Term::Bool(false), c.clone());
            }
        }
        let (ga, gb) = (logical_bits(&ra(&m.a.guard)), logical_bits(&rb(&m.b.guard)));
        let mut residue_lemmas = same_residue_lemmas(&ga, &gb);
        residue_lemmas.extend(equal_residue_lemmas(&ga, &gb));
        // A quotient's bound from the guard on its dividend (`i / points < channels` in a loop
        // `i < channels * points`); asserted after the index lemmas (Z3 is faster so).
        let mut quotient_bounds = Vec::new();
        if ia.len() == ib.len() {
            let terms: Vec<&Term> = ia.iter().chain(&ib).collect();
            quotient_bound_facts(&terms, &[&ga, &gb], &mut quotient_bounds);
        }
        let mut parts = vec![ga, gb];
        parts.extend(residue_lemmas);
        for c in &m.conds {
            parts.push(logical_bits(&ra(c)));
            parts.push(logical_bits(&rb(c)));
        }
        let mut cell = Vec::new();
        match same {
            Some((eqs, c)) => {
                parts.extend(eqs);
                cell = c;
            }
            None => *unrelated = true,
        }
        if ia.len() == ib.len() {
            for (x, y) in ia.iter().zip(&ib) {
                parts.extend(xor_involution(x, y));
                parts.extend(xor_involution(y, x));
                parts.extend(row_lemmas(x, y));
            }
            parts.extend(index_lemmas(&ia, &ib));
            parts.extend(quotient_bounds);
        }
        let lemmas = self.distinct_lemmas(scope, &parts);
        parts.extend(lemmas);
        (and(parts), cell)
    }

    /// What one side of a pair needs to execute at all, for thread `th` (`'A'`: the pair's
    /// first access, `'B'`: its second): the path condition of the access's code (every
    /// iteration of its loops), not of the aligned instance (a later iteration), named as in
    /// [`Encoder::race_core`]. A precondition under which this is unsatisfiable removes the
    /// code, not the race (see `Query::reach`); `rows == gridDim.x` that only removes the
    /// second iteration of a grid-stride loop is a precondition worth stating.
    pub fn side_reach(&self, scope: Scope, m: &AccessPair, th: char) -> Term {
        let acc = if th == 'A' { m.a.acc } else { m.b.acc };
        match self.p.accs.get(acc) {
            Some(a) => logical_bits(&rename(scope, th, &a.guard)),
            None => Term::Bool(true),
        }
    }

    /// Facts about values known to differ (see [`crate::protocol::DistinctVar`]) among the
    /// renamed variables of `terms`: two tickets taken from the same counter cell differ (a
    /// shared counter is one per block, so only within a block); two threads' per-thread
    /// distinct values differ.
    fn distinct_lemmas(&self, scope: Scope, terms: &[Term]) -> Vec<Term> {
        if self.p.distinct.is_empty() {
            return Vec::new();
        }
        let mut found: Vec<(String, char, &crate::protocol::DistinctVar)> = Vec::new();
        for t in terms {
            visit_vars(t, &mut |x| {
                let Some((th, rest)) = x.split_once('.') else {
                    return;
                };
                let th = match th {
                    "A" => 'A',
                    "B" => 'B',
                    _ => return,
                };
                if let Some(d) = self.p.distinct.get(var_key(rest)) {
                    if !found.iter().any(|f| f.0 == x) {
                        found.push((x.to_string(), th, d));
                    }
                }
            });
        }
        let mut out = Vec::new();
        for (i, (x, tx, dx)) in found.iter().enumerate() {
            for (y, ty, dy) in &found[i + 1..] {
                let differ = not(eq(v(x.clone()), v(y.clone())));
                match (&dx.counter, &dy.counter) {
                    (None, None) if tx != ty && var_key(&x[2..]) == var_key(&y[2..]) => {
                        out.push(differ);
                    }
                    (Some((ax, ix, shared)), Some((ay, iy, _))) if ax == ay => {
                        if *shared && tx != ty && scope == Scope::CrossBlock {
                            continue;
                        }
                        if ix.len() != iy.len() {
                            continue;
                        }
                        let same: Vec<Term> = ix
                            .iter()
                            .zip(iy)
                            .map(|(a, b)| eq(rename(scope, *tx, a), rename(scope, *ty, b)))
                            .collect();
                        out.push(or(vec![not(and(same)), differ]));
                    }
                    _ => {}
                }
            }
        }
        out
    }

    /// The same-cell equalities alone rule the pair out: one of them folded to `false` (e.g.
    /// `k·blockDim + tid` against `j·blockDim + tid` with constants `k ≠ j`, see [`same_index`]),
    /// or together they force the same thread ([`Encoder::forces_same_thread`]).
    fn cells_never_meet(&self, scope: Scope, eqs: &[Term]) -> bool {
        eqs.contains(&Term::Bool(false)) || self.forces_same_thread(scope, eqs)
    }

    /// Do the two accesses' indices alone rule out a race in `scope` (see
    /// [`Encoder::cells_never_meet`])? Looks at nothing but the
    /// accesses' arrays and index terms, as [`crate::split::access_pairs`] requires.
    pub fn never_race(&self, scope: Scope, a: &Inst, b: &Inst) -> bool {
        let ia: Vec<Term> = a.index.iter().map(|t| rename(scope, 'A', t)).collect();
        let ib: Vec<Term> = b.index.iter().map(|t| rename(scope, 'B', t)).collect();
        self.same_cell((a.acc, b.acc), &ia, &ib)
            .is_some_and(|(eqs, _)| self.cells_never_meet(scope, &eqs))
    }

    /// Do the same-cell equalities alone make the two threads of a [`Scope::SameBlock`] pair
    /// the same thread? True when, for every block dimension `d` not fixed to size 1, one
    /// equality is literally `A.tid.d == B.tid.d` (e.g. `s[tid]` against `s[tid]`, or
    /// `s[tid + k]` against `s[tid + k]` with a block-uniform `k`, after [`same_index`] cancels
    /// the common summands). Proof that the race core is then unsatisfiable: the core contains
    /// those equalities; a dimension fixed to size 1 has `0 <= tid.d < blockDim.d = 1`, so both
    /// threads' `tid.d` are 0; hence `A.tid == B.tid` in every dimension, contradicting the
    /// scope's "some `tid.d` differs". So the pair cannot race in this scope and needs no query.
    /// (Across blocks, the same `tid` in two blocks can race on global memory: never pruned.)
    fn forces_same_thread(&self, scope: Scope, eqs: &[Term]) -> bool {
        if !matches!(scope, Scope::SameBlock { .. }) {
            return false;
        }
        (0..3).all(|d| {
            matches!(self.launch.block[d], DimSpec::Fixed(1)) || {
                let (a, b) = (
                    v(format!("A.tid.{}", DIMS[d])),
                    v(format!("B.tid.{}", DIMS[d])),
                );
                let is_tid_eq = |e: &Term| match e {
                    Term::Eq(x, y) => (**x == a && **y == b) || (**x == b && **y == a),
                    _ => false,
                };
                eqs.iter().any(|e| match e {
                    Term::And(ts) => ts.iter().any(is_tid_eq),
                    other => is_tid_eq(other),
                })
            }
        })
    }

    /// `bid·blockDim + tid` identifies a thread: two equal global ids have equal block and
    /// thread indices. Valid under the ranges of `tid`; added when the query multiplies a block
    /// index by the block size (grid-stride loops), where Z3 otherwise needs slow nonlinear
    /// reasoning to see it.
    /// The same for a 2-D linear thread id `tid.y·blockDim.x + tid.x`.
    fn global_id_lemmas(&self, main: &[Term]) -> Vec<Term> {
        let mut out = Vec::new();
        let mut shapes: Vec<(String, String, String)> = DIMS
            .iter()
            .map(|d| {
                (
                    format!("bid.{d}"),
                    format!("blockDim.{d}"),
                    format!("tid.{d}"),
                )
            })
            .collect();
        shapes.push(("tid.y".into(), "blockDim.x".into(), "tid.x".into()));
        for (hi, size, lo) in shapes {
            let mut found = false;
            for t in main {
                found |= contains_product(t, &format!("A.{hi}"), &size)
                    || contains_product(t, &format!("B.{hi}"), &size);
            }
            if !found {
                continue;
            }
            let id = |t: char| {
                add(
                    mul(v(format!("{t}.{hi}")), v(size.clone())),
                    v(format!("{t}.{lo}")),
                )
            };
            out.push(Term::implies(
                eq(id('A'), id('B')),
                and(vec![
                    eq(v(format!("A.{hi}")), v(format!("B.{hi}"))),
                    eq(v(format!("A.{lo}")), v(format!("B.{lo}"))),
                ]),
            ));
            // The 2-D linear thread id is below the block size (valid under the ranges of the
            // thread indices; nonlinear for Z3, which needed a second to see that `bid * 1024 +
            // linear` identifies a thread without it).
            if hi == "tid.y" {
                for t in ['A', 'B'] {
                    out.push(lt(
                        id(t),
                        mul(v("blockDim.x".into()), v("blockDim.y".into())),
                    ));
                }
            }
            // Likewise a global id is below the thread count (`i < gridDim.x * blockDim.x`):
            // a step of at least the thread count then keeps every thread in its own
            // residue, which the precondition `jump >= gridDim.x * blockDim.x` of a loop by a
            // step parameter needs (undecided in its small budget without it).
            if let Some(d) = hi.strip_prefix("bid.") {
                for t in ['A', 'B'] {
                    out.push(lt(id(t), mul(v(format!("gridDim.{d}")), v(size.clone()))));
                }
            }
        }
        out
    }

    /// Add the ranges of every variable, canonicalize names, collect unknown-value reasons.
    pub fn finish(&self, main: Vec<Term>) -> (Query, Vec<String>) {
        let (q, reasons, _) = self.finish_with(main, vec![]);
        (q, reasons)
    }

    /// [`Encoder::finish`], also renaming `extra` terms (not asserted) like the query's.
    pub fn finish_with(
        &self,
        main: Vec<Term>,
        extra: Vec<Term>,
    ) -> (Query, Vec<String>, Vec<Term>) {
        let f = self.finish_full(main, extra);
        (f.query, f.reasons, f.extra)
    }

    /// [`Encoder::finish_with`], also naming the query's unknown values (canonical names).
    pub fn finish_full(&self, main: Vec<Term>, extra: Vec<Term>) -> Finished {
        let mut main: Vec<Term> = main.iter().map(logical_bits).collect();
        let mut order: Vec<String> = Vec::new();
        let mut seen = HashSet::new();
        for t in &main {
            visit_vars(t, &mut |x| {
                if seen.insert(x.to_string()) {
                    order.push(x.to_string());
                }
            });
        }
        for t in ['A', 'B'] {
            for d in DIMS {
                for role in ["tid", "bid"] {
                    let n = format!("{t}.{role}.{d}");
                    if seen.insert(n.clone()) {
                        order.push(n);
                    }
                }
            }
        }
        let mut ranges = self.launch.constraints();
        // A parameter a launch size is computed from (`<<<m, n / 8>>>(out, n)`) counts even
        // when the query does not name it: with the conditions on it (`n == 768 || n == 1024`)
        // it bounds the size.
        let size_params = self.launch.size_relation_params();
        let present: HashSet<&str> = order.iter().map(|s| s.as_str()).collect();
        let facts = self
            .launch
            .param_facts(&|p| present.contains(p) || size_params.contains(p));
        for f in &facts {
            visit_vars(f, &mut |x| {
                if seen.insert(x.to_string()) {
                    order.push(x.to_string());
                }
            });
        }
        ranges.extend(facts);
        ranges.extend(self.global_id_lemmas(&main));
        let mut sorts: BTreeMap<String, Sort> = BTreeMap::new();
        let mut reasons: Vec<String> = Vec::new();
        let mut unknown_names: Vec<String> = Vec::new();
        for d in DIMS {
            sorts.insert(format!("blockDim.{d}"), Sort::Int);
            sorts.insert(format!("gridDim.{d}"), Sort::Int);
        }
        for name in &order {
            let (thread, rest) = match name.split_once('.') {
                Some((t @ ("A" | "B"), rest)) => (Some(t), rest),
                _ => (None, name.as_str()),
            };
            let mut sort = Sort::Int;
            if let (Some(_), Some(d)) = (thread, rest.strip_prefix("tid.")) {
                ranges.push(le(int(0), v(name.clone())));
                ranges.push(lt(v(name.clone()), v(format!("blockDim.{d}"))));
            } else if let (Some(_), Some(d)) = (thread, rest.strip_prefix("bid.")) {
                ranges.push(le(int(0), v(name.clone())));
                ranges.push(lt(v(name.clone()), v(format!("gridDim.{d}"))));
            } else if let (None, Some(p)) = (
                self.p.vars.get(var_key(rest)),
                rest.strip_prefix("param.").and_then(|n| {
                    self.kernel
                        .params
                        .iter()
                        .find(|p| p.name == n && p.value.is_none())
                }),
            ) {
                // A parameter only the launch facts name.
                if p.ty == cudarace_ir::ScalarType::Bool {
                    sort = Sort::Bool;
                }
            } else if let Some(info) = self.p.vars.get(var_key(rest)) {
                sort = info.sort;
                if let Some(lo) = info.lo {
                    ranges.push(le(int(lo), v(name.clone())));
                }
                if let Some(hi) = info.hi {
                    ranges.push(le(v(name.clone()), int(hi)));
                }
                if let Some(r) = &info.reason {
                    unknown_names.push(name.clone());
                    if !reasons.contains(r) {
                        reasons.push(r.clone());
                    }
                }
            }
            sorts.insert(name.clone(), sort);
        }
        // Canonical names for values created during symbolic execution.
        let mut canon: HashMap<String, String> = HashMap::new();
        let mut used: BTreeSet<String> =
            sorts.keys().filter(|n| !n.contains('@')).cloned().collect();
        for name in &order {
            if let Some((stem, _)) = name.rsplit_once('@') {
                let mut cand = stem.to_string();
                let mut k = 2;
                while used.contains(&cand) {
                    cand = format!("{stem}#{k}");
                    k += 1;
                }
                used.insert(cand.clone());
                canon.insert(name.clone(), cand);
            }
        }
        let rn = |t: &Term| {
            map_vars(t, &mut |x| {
                canon.get(x).map(|c| Term::Var(c.clone().into()))
            })
        };
        let mut assertions: Vec<Term> = ranges.iter().map(rn).collect();
        main = main.iter().map(rn).collect();
        assertions.extend(main);
        let vars: BTreeMap<String, Sort> = sorts
            .into_iter()
            .map(|(n, s)| (canon.get(&n).cloned().unwrap_or(n), s))
            .collect();
        // What the query fixes (a launch site's `groupOffset == 1`, `groups == stride`, a
        // template argument 512) is no small value to prefer, nor one to probe.
        let (fixed, classes) = fixed_by_equalities(&assertions);
        let mut preferred = self.launch.preferred();
        for (n, s) in &vars {
            if *s == Sort::Int && n.starts_with("param.") && !fixed.contains_key(n) {
                preferred.push(le(int(-64), v(n.clone())));
                preferred.push(le(v(n.clone()), int(64)));
            }
        }
        // A query that divides by a parameter: witnesses are tried first with every integer
        // parameter 2, then 3, then distinct values 2, 3, … in the order of their names and in
        // the reverse order, then four mixes of 1 to 4 (a crop whose output is narrower than its
        // input); the divisions are then by constants, which Z3 handles fast.
        // Only the parameters that make the query nonlinear (divisors, factors of products of
        // variables) are fixed: a bound such as `idx < nthreads` stays free.
        let mut nonlinear = BTreeSet::new();
        for a in &assertions {
            nonlinear_vars(a, &mut nonlinear);
        }
        let params: Vec<&String> = vars
            .iter()
            .filter(|(n, s)| {
                **s == Sort::Int && n.starts_with("param.") && nonlinear.contains(n.as_str())
            })
            .map(|(n, _)| n)
            .collect();
        let divides = cudarace_solver::divides_by_variable(&assertions);
        let probes = if params.is_empty() || !divides {
            // (Not for products alone, `i * size + id`: Z3 usually finds those witnesses, and
            // probes that fail cost 0.1 s each on cuda-convnet2's kRGBToYUV.)
            Vec::new()
        } else {
            // What the query fixes stays fixed: a probe that contradicts it finds nothing.
            let set = |value: &dyn Fn(usize) -> i64| -> Vec<Term> {
                params
                    .iter()
                    .enumerate()
                    .map(|(i, n)| {
                        let value = match fixed.get(n.as_str()) {
                            Some(c) => *c,
                            None => {
                                // The first parameter of its class gives the value.
                                let class = classes.get(n.as_str());
                                let first = params
                                    .iter()
                                    .position(|m| {
                                        class.is_some() && classes.get(m.as_str()) == class
                                    })
                                    .unwrap_or(i);
                                value(first)
                            }
                        };
                        eq(v((*n).clone()), int(value))
                    })
                    .collect()
            };
            let k = params.len();
            let mut probes = vec![set(&|_| 2), set(&|_| 3)];
            if k > 1 {
                probes.push(set(&|i| 2 + i as i64));
                probes.push(set(&|i| 1 + (k - i) as i64));
                // Mixed small values (fixed per position, so that the same query gets the same
                // probes): one parameter larger than another of the same role.
                for j in 0..4u64 {
                    probes.push(set(&|i| 1 + (mix(i as u64 * 8 + j) % 4) as i64));
                }
            }
            probes
        };
        let report: Vec<String> = vars.keys().cloned().collect();
        let extra = extra.iter().map(rn).collect();
        let unknowns = unknown_names
            .iter()
            .map(|n| canon.get(n).cloned().unwrap_or_else(|| n.clone()))
            .collect();
        Finished {
            query: Query {
                vars,
                assertions,
                preferred,
                assumptions: vec![],
                fallback_assumptions: vec![],
                preconditions: vec![],
                reach: vec![],
                reach_base: 0,
                together: vec![],
                probes,
                report,
            },
            reasons,
            extra,
            unknowns,
        }
    }
}

/// A query with what its findings need to be explained.
pub struct Finished {
    pub query: Query,
    /// Why a finding from it may not happen: the unknown values it involves.
    pub reasons: Vec<String>,
    /// The `extra` terms, renamed like the query.
    pub extra: Vec<Term>,
    /// The query's unknown values (canonical names): a witness that holds whatever they are
    /// does not depend on them.
    pub unknowns: BTreeSet<String>,
}

/// SplitMix64's finalizer: a fixed, well-spread function of `x` (for the probes' mixes).
/// The variables the assertions fix to a constant, and classes of variables they make equal
/// (by a class number), from equalities asserted or conjoined at the top (in every alternative of
/// a disjunction: each launch site's bindings).
fn fixed_by_equalities(assertions: &[Term]) -> (BTreeMap<String, i64>, BTreeMap<String, usize>) {
    fn conjuncts<'t>(t: &'t Term, out: &mut Vec<&'t Term>) {
        match t {
            Term::And(ts) => ts.iter().for_each(|t| conjuncts(t, out)),
            t => out.push(t),
        }
    }
    fn equalities(t: &Term) -> BTreeSet<(String, Term)> {
        let mut parts = Vec::new();
        conjuncts(t, &mut parts);
        let mut out = BTreeSet::new();
        for p in parts {
            match p {
                Term::Eq(a, b) => match (&**a, &**b) {
                    (Term::Var(x), y @ (Term::Int(_) | Term::Var(_))) => {
                        out.insert((x.to_string(), y.clone()));
                    }
                    (y @ Term::Int(_), Term::Var(x)) => {
                        out.insert((x.to_string(), y.clone()));
                    }
                    _ => {}
                },
                Term::Or(alternatives) => {
                    let mut common: Option<BTreeSet<(String, Term)>> = None;
                    for a in alternatives.iter() {
                        let e = equalities(a);
                        common = Some(match common {
                            None => e,
                            Some(c) => c.intersection(&e).cloned().collect(),
                        });
                    }
                    out.extend(common.unwrap_or_default());
                }
                _ => {}
            }
        }
        out
    }
    let mut all = BTreeSet::new();
    for a in assertions {
        all.extend(equalities(a));
    }
    let mut fixed = BTreeMap::new();
    let mut classes: BTreeMap<String, usize> = BTreeMap::new();
    for (x, y) in &all {
        match y {
            Term::Int(c) => {
                fixed.insert(x.clone(), *c);
            }
            Term::Var(y) => {
                let (cx, cy) = (classes.get(x).copied(), classes.get(y.as_ref()).copied());
                let c = cx.or(cy).unwrap_or(classes.len());
                classes.insert(x.clone(), c);
                classes.insert(y.to_string(), c);
                // Two classes joined: the second becomes the first.
                if let (Some(a), Some(b)) = (cx, cy) {
                    classes
                        .values_mut()
                        .filter(|k| **k == b)
                        .for_each(|k| *k = a);
                }
            }
            _ => {}
        }
    }
    (fixed, classes)
}

fn mix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The variables of `t` in nonlinear positions: in a divisor, or in a factor of a product with
/// two non-constant factors. (An explicit stack: query terms can be deep.)
fn nonlinear_vars(t: &Term, out: &mut BTreeSet<String>) {
    crate::terms::any_part(t, &mut |t| {
        let nonlinear: Vec<&Term> = match t {
            Term::Div(_, d) | Term::Rem(_, d) | Term::Mod(_, d) if as_int(d).is_none() => {
                vec![&**d]
            }
            Term::Mul(ts) if ts.iter().filter(|x| as_int(x).is_none()).count() >= 2 => {
                ts.iter().collect()
            }
            _ => vec![],
        };
        for x in nonlinear {
            visit_vars(x, &mut |n| {
                out.insert(n.to_string());
            });
        }
        false
    });
}

/// Does `t` have at most `budget` nodes (counted with repetitions)? Stops counting early.
fn within(t: &Term, mut budget: usize) -> bool {
    let mut stack = vec![t];
    while let Some(t) = stack.pop() {
        if budget == 0 {
            return false;
        }
        budget -= 1;
        stack.extend(t.children());
    }
    true
}

fn contains_product(t: &Term, a: &str, b: &str) -> bool {
    let is = |x: &Term, n: &str| matches!(x, Term::Var(v) if &**v == n);
    crate::terms::any_part(t, &mut |x| {
        matches!(x, Term::Mul(ts) if ts.len() == 2
            && ((is(&ts[0], a) && is(&ts[1], b)) || (is(&ts[0], b) && is(&ts[1], a))))
    })
}

/// For a cell equality `x == p ^ q` (unsigned `w`-bit xor): the valid lemma
/// `0 <= p < 2^w && x == p ^ q  ==>  p == x ^ q`. It lets Z3 relate the partner's index back to
/// this thread's by congruence (bitonic `tid ^ j`) instead of bit-vector/integer bridging, which
/// Z3 4.8.12 needs seconds for.
/// When both sides are `p1 ^ q == p2 ^ q`: injectivity, `p1 == p2` (both in range).
fn xor_involution(x: &Term, y: &Term) -> Option<Term> {
    if let Some(l) = flip_involution(x, y) {
        return Some(l);
    }
    let Term::Bit {
        op: cudarace_solver::BitOp::Xor,
        width,
        signed: false,
        args,
    } = y
    else {
        return None;
    };
    let [p, q] = &args[..] else { return None };
    if *width > 62 {
        return None;
    }
    let hi = (1i64 << *width) - 1;
    let in_range = |t: &Term| vec![le(int(0), t.clone()), le(t.clone(), int(hi))];
    if let Term::Bit {
        op: cudarace_solver::BitOp::Xor,
        width: w2,
        signed: false,
        args: a2,
    } = x
    {
        if let [p2, q2] = &a2[..] {
            if q2 == q && w2 == width {
                let mut pre = in_range(p);
                pre.extend(in_range(p2));
                pre.push(eq(x.clone(), y.clone()));
                return Some(Term::implies(and(pre), eq(p.clone(), p2.clone())));
            }
        }
    }
    let back = Term::Bit {
        op: cudarace_solver::BitOp::Xor,
        width: *width,
        signed: false,
        args: vec![x.clone(), q.clone()].into(),
    };
    Some(Term::implies(
        and(vec![
            le(int(0), p.clone()),
            le(p.clone(), int(hi)),
            eq(x.clone(), y.clone()),
        ]),
        eq(p.clone(), back),
    ))
}

/// `x == y` for two threads' indices. The classic shape `hi·M + lo` with `0 <= lo < M` on both
/// sides (global id `blockIdx·blockDim + threadIdx`, 2-D linear id `threadIdx.y·blockDim.x +
/// threadIdx.x`) is equal exactly when both parts are: written so, the equality stays linear,
/// and Z3 answers in milliseconds instead of seconds.
fn same_index(x: &Term, y: &Term) -> Term {
    let (x, y) = cancel_common(x, y);
    let (x, y) = (&x, &y);
    if let (Some((hx, mx, lx)), Some((hy, my, ly))) = (split_id(x), split_id(y)) {
        if mx == my {
            return and(vec![eq(hx, hy), eq(lx, ly)]);
        }
    }
    eq(x.clone(), y.clone())
}

/// `hi·M + lo` where `lo` is a thread index bounded by `M` (`tid.d < blockDim.d`, and `tid.x <
/// blockDim.x` under `tid.y·blockDim.x`).
/// Also `k·blockDim.d + tid.d` with a constant `k`, and the degenerate `blockDim.d + tid.d`
/// (`k = 1`) and bare `tid.d` (`k = 0`): then two different constants make the cells disjoint
/// without a query (e.g. `s[tid + 2*T]` against `s[tid + 3*T]`).
fn split_id(t: &Term) -> Option<(Term, Term, Term)> {
    let thread_index = |lo: &Term| -> Option<String> {
        let Term::Var(lo_name) = lo else { return None };
        let (thread, rest) = lo_name.split_once('.')?;
        let dim = rest.strip_prefix("tid.")?;
        (thread == "A" || thread == "B").then(|| format!("blockDim.{dim}"))
    };
    if let Some(bound) = thread_index(t) {
        return Some((int(0), Term::Var(bound.into()), t.clone()));
    }
    let Term::Add(ts) = t else { return None };
    let [a, b] = &ts[..] else { return None };
    for (high, lo) in [(a, b), (b, a)] {
        let Some(bound) = thread_index(lo) else {
            continue;
        };
        let is_bound = |x: &Term| matches!(x, Term::Var(n) if **n == *bound);
        let hi = match high {
            h if is_bound(h) => int(1),
            Term::Mul(ps) => match &ps[..] {
                [p @ (Term::Var(_) | Term::Int(_)), q] if is_bound(q) => p.clone(),
                [p, q @ (Term::Var(_) | Term::Int(_))] if is_bound(p) => q.clone(),
                _ => continue,
            },
            _ => continue,
        };
        return Some((hi, Term::Var(bound.into()), lo.clone()));
    }
    None
}

/// Flatten a sum and list its products `hi·M` with a per-thread `hi` and a thread-independent
/// `M`: each as `(hi, M, rest)` with `t == hi·M + rest`.
fn split_rows(t: &Term) -> Vec<(Term, Term, Term)> {
    fn flat(t: &Term, out: &mut Vec<Term>) {
        match t {
            Term::Add(ts) => ts.iter().for_each(|x| flat(x, out)),
            // `a - b` is `a + (-b)` (Blelloch indices `2*s*(tid+1) - 1 - s`).
            Term::Sub(a, b) => {
                flat(a, out);
                out.push(match &**b {
                    Term::Int(v) => v.checked_neg().map(int).unwrap_or(Term::Neg(b.clone())),
                    other => Term::Neg(Arc::new(other.clone())),
                });
            }
            other => out.push(other.clone()),
        }
    }
    let per_thread = |x: &Term| mentions(x, &|v| v.starts_with("A.") || v.starts_with("B."));
    let mut summands = Vec::new();
    flat(t, &mut summands);
    let mut out = Vec::new();
    for (i, s) in summands.iter().enumerate() {
        let Term::Mul(fs) = s else { continue };
        let [p, q] = &fs[..] else { continue };
        let (hi, m) = if per_thread(p) && !per_thread(q) {
            (p.clone(), q.clone())
        } else if per_thread(q) && !per_thread(p) {
            (q.clone(), p.clone())
        } else {
            continue;
        };
        let rest = summands
            .iter()
            .enumerate()
            .filter(|(j, _)| *j != i)
            .map(|(_, s)| s.clone())
            .reduce(add)
            .unwrap_or(int(0));
        out.push((hi, m, rest));
    }
    out
}

/// `t` with every unsigned wrap-around of [`crate::protocol::ctype::low_wrap`] replaced by the
/// value it wraps (which is what it is where that value is not negative).
fn without_wraps(t: &Term) -> Term {
    use crate::protocol::ctype::unwrap_low;
    if let Some(x) = unwrap_low(t, 32).or_else(|| unwrap_low(t, 64)) {
        return without_wraps(x);
    }
    let all = |ts: &[Term]| -> Option<Vec<Term>> {
        let new: Vec<Term> = ts.iter().map(without_wraps).collect();
        (new.as_slice() != ts).then_some(new)
    };
    match t {
        Term::Add(ts) => all(ts).map_or_else(|| t.clone(), |n| Term::Add(n.into())),
        Term::Mul(ts) => all(ts).map_or_else(|| t.clone(), |n| Term::Mul(n.into())),
        Term::Sub(a, b) => {
            let (x, y) = (without_wraps(a), without_wraps(b));
            if x == **a && y == **b {
                t.clone()
            } else {
                Term::sub(x, y)
            }
        }
        _ => t.clone(),
    }
}

/// The facts of [`crate::lemmas`] for two threads' indices: mixed-radix digits of the indices
/// and of the operands of their divisions, and quotient and remainder facts of the divisions.
fn index_lemmas(ia: &[Term], ib: &[Term]) -> Vec<Term> {
    // Huge indices (chains of unsigned wrap-arounds, hundreds of nodes) are left alone: the
    // facts would cost more to build and hash than they save (LBPM's D3Q19 kernels, 300-node
    // indices: 0.7 s -> 2 s per kernel with them).
    if ia.iter().chain(ib).any(|t| !within(t, 200)) {
        return Vec::new();
    }
    let mut out = Vec::new();
    // The digits of an index an unsigned conversion may have wrapped once (`const uint off =
    // b * w + k`: `ite(x < 0, x + 2^32, x)`, see `ctype::low_wrap`) are those of the index
    // without the wrap, which it is whenever nothing wrapped: the lemmas of that index too.
    let (wa, wb): (Vec<Term>, Vec<Term>) = (
        ia.iter().map(without_wraps).collect(),
        ib.iter().map(without_wraps).collect(),
    );
    let wrapped = wa.as_slice() != ia || wb.as_slice() != ib;
    let pairs: Vec<(&Term, &Term)> = if wrapped {
        ia.iter().zip(ib).chain(wa.iter().zip(&wb)).collect()
    } else {
        ia.iter().zip(ib).collect()
    };
    for (x, y) in pairs {
        radix_lemmas(x, y, &mut out);
        let mut pairs = Vec::new();
        equal_candidates(x, y, &mut pairs);
        for c in &pairs {
            radix_lemmas(&c.a, &c.b, &mut out);
            if let Some(d) = &c.divisor {
                out.push(quotient_lemma(&c.a, &c.b, d));
                if c.remainder {
                    out.push(rotation_lemma(&c.a, &c.b, d));
                }
            }
        }
    }
    let mut terms: Vec<&Term> = ia.iter().chain(ib).collect();
    if wrapped {
        terms.extend(wa.iter().chain(&wb));
    }
    divmod_facts(&terms, &mut out);
    product_bound_facts(&terms, &mut out);
    // For triage: what the solver is told about a pair's indices.
    if std::env::var_os("CUDARACE_DEBUG_LEMMAS").is_some() {
        for (x, y) in ia.iter().zip(ib) {
            eprintln!(
                "lemmas for {} == {}:",
                crate::terms::show(x),
                crate::terms::show(y)
            );
        }
        for l in &out {
            eprintln!("  {}", crate::terms::show(l));
        }
    }
    out
}

/// Row-major indices `hiA·M + loA` vs `hiB·M + loB` (global ids, `row·width + col`): valid
/// lemmas that let the linear core decide most such pairs without nonlinear search:
/// equal rows and columns when the indices are equal and both columns are in `[0, M)`, and
/// `hiA < hiB ⇒ hiA·M + M <= hiB·M` (for `M >= 0`), and symmetrically.
fn row_lemmas(x: &Term, y: &Term) -> Vec<Term> {
    let mut out = Vec::new();
    let ys = split_rows(y);
    for (ha, ma, la) in split_rows(x) {
        for (hb, mb, lb) in &ys {
            // Constant widths are linear already.
            if ma == *mb && ha != *hb && as_int(&ma).is_none() {
                out.extend(row_lemma(
                    x,
                    y,
                    (ha.clone(), ma.clone(), la.clone()),
                    (hb.clone(), lb.clone()),
                ));
            }
        }
    }
    out
}

fn row_lemma(
    x: &Term,
    y: &Term,
    (ha, m, la): (Term, Term, Term),
    (hb, lb): (Term, Term),
) -> Vec<Term> {
    let pa = mul(ha.clone(), m.clone());
    let pb = mul(hb.clone(), m.clone());
    let in_row = |l: &Term| vec![le(int(0), l.clone()), lt(l.clone(), m.clone())];
    let mut pre = in_row(&la);
    pre.extend(in_row(&lb));
    pre.push(eq(x.clone(), y.clone()));
    vec![
        Term::implies(and(pre), and(vec![eq(ha.clone(), hb.clone()), eq(la, lb)])),
        Term::implies(
            and(vec![lt(ha.clone(), hb.clone()), le(int(0), m.clone())]),
            le(add(pa.clone(), m.clone()), pb.clone()),
        ),
        Term::implies(
            and(vec![lt(hb, ha), le(int(0), m.clone())]),
            le(add(pb, m), pa),
        ),
    ]
}

/// Conjunct atoms `x mod M == c` (constant `c`) of a guard.
fn residue_atoms(t: &Term, out: &mut Vec<(Term, Term, i64)>) {
    match t {
        Term::And(ts) => ts.iter().for_each(|x| residue_atoms(x, out)),
        Term::Eq(a, b) => {
            if let (Term::Mod(x, m), Term::Int(c)) | (Term::Int(c), Term::Mod(x, m)) = (&**a, &**b)
            {
                out.push(((**x).clone(), (**m).clone(), *c));
            }
        }
        _ => {}
    }
}

/// Two values with the same residue modulo `M > 0` are equal or at least `M` apart: the valid
/// lemma that decides `tid % (2*s) == 0` tree reductions linearly (`2*s` is a linear term),
/// where Z3 otherwise searches nonlinear models for seconds.
fn same_residue_lemmas(ga: &Term, gb: &Term) -> Vec<Term> {
    let (mut xs, mut ys) = (Vec::new(), Vec::new());
    residue_atoms(ga, &mut xs);
    residue_atoms(gb, &mut ys);
    let per_thread = |x: &Term| mentions(x, &|v| v.starts_with("A.") || v.starts_with("B."));
    let mut out = Vec::new();
    for (xa, ma, ca) in &xs {
        for (xb, mb, cb) in &ys {
            if ma != mb
                || ca != cb
                || xa == xb
                || per_thread(ma)
                || as_int(ma).is_some()
                || out.len() >= 8
            {
                continue;
            }
            let m = ma.clone();
            out.push(Term::implies(
                and(vec![
                    lt(int(0), m.clone()),
                    eq(modulo(xa.clone(), m.clone()), int(*ca)),
                    eq(modulo(xb.clone(), m.clone()), int(*cb)),
                ]),
                or(vec![
                    eq(xa.clone(), xb.clone()),
                    le(add(xa.clone(), m.clone()), xb.clone()),
                    le(add(xb.clone(), m.clone()), xa.clone()),
                ]),
            ));
        }
    }
    out
}

/// Drop summands both sides share (`i + 1 == j + 1` → `i == j`), so that equal residue terms
/// meet by congruence.
fn cancel_common(x: &Term, y: &Term) -> (Term, Term) {
    fn flat(t: &Term, out: &mut Vec<Term>) {
        match t {
            Term::Add(ts) => ts.iter().for_each(|x| flat(x, out)),
            other => out.push(other.clone()),
        }
    }
    let (mut xs, mut ys) = (Vec::new(), Vec::new());
    flat(x, &mut xs);
    flat(y, &mut ys);
    if xs.len() < 2 && ys.len() < 2 {
        return (x.clone(), y.clone());
    }
    let mut changed = false;
    let mut i = 0;
    while i < xs.len() {
        if let Some(j) = ys.iter().position(|t| *t == xs[i]) {
            ys.remove(j);
            xs.remove(i);
            changed = true;
        } else {
            i += 1;
        }
    }
    if !changed {
        return (x.clone(), y.clone());
    }
    let sum = |v: Vec<Term>| v.into_iter().reduce(add).unwrap_or(int(0));
    (sum(xs), sum(ys))
}

/// [`xor_involution`] for the power-of-two form [`flip_bit`]: `x == flip(p, q) ⇒ p == flip(x, q)`
/// (for `p, x >= 0`), and injectivity `flip(p1, q) == flip(p2, q) ⇒ p1 == p2`.
fn flip_involution(x: &Term, y: &Term) -> Option<Term> {
    let (p, q) = as_flip_bit(y)?;
    if let Some((p2, q2)) = as_flip_bit(x) {
        if q2 == q {
            return Some(Term::implies(
                and(vec![
                    le(int(0), p.clone()),
                    le(int(0), p2.clone()),
                    eq(x.clone(), y.clone()),
                ]),
                eq(p, p2),
            ));
        }
    }
    Some(Term::implies(
        and(vec![
            le(int(0), p.clone()),
            le(int(0), x.clone()),
            eq(x.clone(), y.clone()),
        ]),
        eq(p, flip_bit(x.clone(), q)),
    ))
}

/// Conjunct atoms `x mod M == g` of a guard (any `g`: strided loops `i mod T == gid`).
fn residue_defs(t: &Term, out: &mut Vec<(Term, Term, Term)>) {
    match t {
        Term::And(ts) => ts.iter().for_each(|x| residue_defs(x, out)),
        Term::Eq(a, b) => {
            if let Term::Mod(x, m) = &**a {
                out.push(((**x).clone(), (**m).clone(), (**b).clone()));
            } else if let Term::Mod(x, m) = &**b {
                out.push(((**x).clone(), (**m).clone(), (**a).clone()));
            }
        }
        _ => {}
    }
}

/// `x mod M == gA`, `y mod M == gB`: the valid lemma `x == y ⇒ gA == gB`. It lets Z3 relate
/// two threads' positions in a strided loop at once (the wrap-around pair of a grid-stride loop
/// with a barrier took Z3 4.8.12 over a second without it).
fn equal_residue_lemmas(ga: &Term, gb: &Term) -> Vec<Term> {
    let (mut xs, mut ys) = (Vec::new(), Vec::new());
    residue_defs(ga, &mut xs);
    residue_defs(gb, &mut ys);
    let mut out = Vec::new();
    for (xa, ma, ra) in &xs {
        for (xb, mb, rb) in &ys {
            if ma != mb || ra == rb || out.len() >= 8 || as_int(ra).is_some() {
                continue;
            }
            out.push(Term::implies(
                eq(xa.clone(), xb.clone()),
                eq(ra.clone(), rb.clone()),
            ));
        }
    }
    out
}
