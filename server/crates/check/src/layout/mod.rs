//! Layout assumptions (part of `leading-dimensions`): an index `X * S + Y` keeps its "column" `Y`
//! inside the row step `S`, `0 <= Y <= S - 1`, as every data layout a host passes does.
//!
//! The index is read as a polynomial over sizes (integer parameters, launch sizes) and values
//! that vary (locals, thread and block indices, remainders). The steps of its varying terms
//! (`i * (d2 * d3)`, `j * d3`, `k`) must divide one another (a mixed-radix layout, flat or in
//! Horner form `((i * d2 + j) * d3 + k)`); each level's digit is bounded from the kernel (a
//! guard or loop bound `j < l2`, `x % n`, a thread index (or a local assigned it once) no guard
//! tests below its block size (a comparison that only chooses a value is no guard), a
//! parameter offset added) and assumed to stay inside the next step: `j + s2 <= d2 - 1`, in
//! words `only if l2 + s2 > d2` when broken. A digit that is a constant is a field at a fixed
//! offset of a record (`b * box_size + 4`): the record holds it, `4 <= box_size - 1`. A digit
//! of thread or block indices alone that fits its step only in a small launch (`bin * 192 +
//! blockIdx.x * 4 + group`) bounds the launch: `gridDim.x <= 48`. An
//! assumption the kernel's own bounds make false (`for (j = 0; j <= n; j++) a[i * n + j]`:
//! `n + 1 <= n`) is not made: that race is the kernel's, not its caller's.

use crate::assumptions::{
    assigned_values, strip_casts, visit_accesses, walk_block, Assumption, Broken,
};
use crate::terms::*;
use cudarace_ir::{BinOp, Builtin, Expr, Kernel, LocalId, ScalarType, UnOp};
use cudarace_solver::Term;
use std::collections::{BTreeMap, BTreeSet};

mod strides;

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Atom {
    /// A size: an integer parameter or a launch size (query variable, name shown, whether a
    /// signed parameter).
    Size {
        var: String,
        text: String,
        signed: bool,
    },
    /// A value that varies between threads or iterations (a local, a thread index, a
    /// remainder), by key.
    Var(String),
}

impl Atom {
    fn is_var(&self) -> bool {
        matches!(self, Atom::Var(_))
    }
}

/// A sorted product of atoms.
type Mono = Vec<Atom>;

const MAX_MONOS: usize = 24;
const MAX_DEGREE: usize = 8;
/// Layout assumptions per kernel.
const MAX_ASSUMPTIONS: usize = 12;

#[derive(Debug, Clone, PartialEq, Eq, Default)]
struct Poly(BTreeMap<Mono, i64>);

impl Poly {
    fn constant(c: i64) -> Poly {
        let mut p = Poly::default();
        if c != 0 {
            p.0.insert(vec![], c);
        }
        p
    }
    fn atom(a: Atom) -> Poly {
        Poly(BTreeMap::from([(vec![a], 1)]))
    }
    fn mono(c: i64, m: Mono) -> Poly {
        let mut p = Poly::default();
        p.push(m, c);
        p
    }
    fn push(&mut self, m: Mono, c: i64) -> Option<()> {
        let e = self.0.entry(m.clone()).or_insert(0);
        *e = e.checked_add(c)?;
        if *e == 0 {
            self.0.remove(&m);
        }
        Some(())
    }
    fn add(&self, o: &Poly) -> Option<Poly> {
        let mut r = self.clone();
        for (m, c) in &o.0 {
            r.push(m.clone(), *c)?;
        }
        r.small()
    }
    fn scale(&self, k: i64) -> Option<Poly> {
        let mut r = Poly::default();
        for (m, c) in &self.0 {
            r.push(m.clone(), c.checked_mul(k)?)?;
        }
        Some(r)
    }
    fn sub(&self, o: &Poly) -> Option<Poly> {
        self.add(&o.scale(-1)?)
    }
    fn mul(&self, o: &Poly) -> Option<Poly> {
        let mut r = Poly::default();
        for (m1, c1) in &self.0 {
            for (m2, c2) in &o.0 {
                let mut m = m1.clone();
                m.extend(m2.iter().cloned());
                m.sort();
                if m.len() > MAX_DEGREE {
                    return None;
                }
                r.push(m, c1.checked_mul(*c2)?)?;
            }
        }
        r.small()
    }
    fn small(self) -> Option<Poly> {
        (self.0.len() <= MAX_MONOS).then_some(self)
    }
    fn has_vars(&self) -> bool {
        self.0.keys().any(|m| m.iter().any(Atom::is_var))
    }
    fn constant_part(&self) -> i64 {
        self.0.get(&vec![]).copied().unwrap_or(0)
    }
    fn term(&self) -> Term {
        let mut t = int(0);
        for (m, c) in &self.0 {
            let mut p = int(*c);
            for a in m {
                p = mul(
                    p,
                    match a {
                        Atom::Size { var, .. } => Term::Var(var.clone().into()),
                        Atom::Var(v) => Term::Var(v.clone().into()),
                    },
                );
            }
            t = add(t, p);
        }
        t
    }
    fn text(&self) -> String {
        if self.0.is_empty() {
            return "0".into();
        }
        // Sizes first, the constant last: "l2 + s2 + 1".
        let mut parts: Vec<String> = Vec::new();
        let mut constant = None;
        for (m, c) in &self.0 {
            if m.is_empty() {
                constant = Some(c.to_string());
                continue;
            }
            let names: Vec<String> = m
                .iter()
                .map(|a| match a {
                    Atom::Size { text, .. } => text.clone(),
                    Atom::Var(v) => v.clone(),
                })
                .collect();
            let names = names.join(" * ");
            parts.push(if *c == 1 {
                names
            } else {
                format!("{c} * {names}")
            });
        }
        parts.extend(constant);
        parts.join(" + ")
    }
}

/// A step: a positive constant times sizes (sorted).
type Step = (i64, Vec<Atom>);

/// `big / small` as a multiset difference, if `small` divides `big`.
fn quotient(big: &Step, small: &Step) -> Option<Step> {
    if small.0 == 0 || big.0 % small.0 != 0 {
        return None;
    }
    let mut rest = big.1.clone();
    for a in &small.1 {
        let i = rest.iter().position(|x| x == a)?;
        rest.remove(i);
    }
    Some((big.0 / small.0, rest))
}

struct Ctx<'a> {
    kernel: &'a Kernel,
    /// Locals assigned exactly once, and their value (inlined into an index).
    once: BTreeMap<LocalId, Expr>,
    /// Locals that stay atoms: assigned more than once, compared, or remainders.
    atoms: BTreeSet<LocalId>,
    /// Upper bounds of each varying atom (lower bounds are 0).
    ubs: BTreeMap<String, Vec<Poly>>,
    /// Upper bounds that hold only under a condition on the sizes (a tile that fits its row
    /// when the row is a multiple of the tile: see [`tile_bounds`]): the atom, the bound, and
    /// the assumption made with it.
    sides: Vec<(String, Poly, Assumption)>,
    /// Sums of varying values compared as a whole, each a value of its own (by key) wherever an
    /// index has it as a part (see [`Ctx::with_sums`]).
    sums: Vec<(Poly, String)>,
    /// Keys given to large values.
    fresh: usize,
    /// Locals holding a linearised thread id (`i = tx * blockDim.x + ty`, assigned once) read
    /// as a value of their own (see [`id_locals`]): set for a second reading of an index whose
    /// inlined steps do not divide one another.
    keep: BTreeSet<LocalId>,
    /// The values of those locals, by key.
    ids: BTreeMap<String, Poly>,
}

fn local_key(l: LocalId) -> String {
    format!("local#{}", l.0)
}

impl Ctx<'_> {
    /// The key of a value of its own: its text when small (the same `x % n` twice is one
    /// value), else a fresh one (never formatted: an expression may be deeper than recursion
    /// allows).
    fn key(&mut self, what: &str, e: &Expr) -> String {
        let mut stack = vec![e];
        let mut nodes = 0;
        while let Some(x) = stack.pop() {
            nodes += 1;
            if nodes > 64 {
                self.fresh += 1;
                return format!("{what}#{}", self.fresh);
            }
            match x {
                Expr::Unary(_, a) | Expr::Cast(_, a) => stack.push(a),
                Expr::Binary(_, a, b) => {
                    stack.push(a);
                    stack.push(b);
                }
                Expr::Ite(c, a, b) => {
                    stack.push(c);
                    stack.push(a);
                    stack.push(b);
                }
                _ => {}
            }
        }
        format!("{what}#{e:?}")
    }

    fn poly(&mut self, e: &Expr, depth: u32) -> Option<Poly> {
        if depth > 16 {
            return None;
        }
        match e {
            Expr::Cast(_, a) => self.poly(a, depth + 1),
            Expr::Int(c) => Some(Poly::constant(*c)),
            Expr::Param(p) => {
                let prm = self.kernel.params.get(p.0 as usize)?;
                let ScalarType::Int { signed, .. } = prm.ty else {
                    return None;
                };
                if let Some(v) = prm.value {
                    return Some(Poly::constant(v));
                }
                Some(Poly::atom(Atom::Size {
                    var: format!("param.{}", prm.name),
                    text: prm.name.clone(),
                    signed,
                }))
            }
            Expr::Builtin(b) => Some(match b {
                Builtin::BlockDim(d) => Poly::atom(Atom::Size {
                    var: format!("blockDim.{}", d.name()),
                    text: format!("blockDim.{}", d.name()),
                    signed: false,
                }),
                Builtin::GridDim(d) => Poly::atom(Atom::Size {
                    var: format!("gridDim.{}", d.name()),
                    text: format!("gridDim.{}", d.name()),
                    signed: false,
                }),
                Builtin::ThreadIdx(d) => Poly::atom(Atom::Var(format!("threadIdx.{}", d.name()))),
                Builtin::BlockIdx(d) => Poly::atom(Atom::Var(format!("blockIdx.{}", d.name()))),
                Builtin::WarpSize => Poly::constant(32),
            }),
            Expr::Local(l) => {
                if self.keep.contains(l) {
                    return Some(Poly::atom(Atom::Var(local_key(*l))));
                }
                // A local assigned once is its value: always when that names only sizes (`int
                // n = p.n`, also when compared), else unless it is bounded on its own.
                if let Some(v) = self.once.get(l).cloned() {
                    if let Some(p) = self.poly(&v, depth + 1) {
                        if !self.atoms.contains(l) || !p.has_vars() {
                            return Some(p);
                        }
                    }
                }
                Some(Poly::atom(Atom::Var(local_key(*l))))
            }
            Expr::Unary(UnOp::Neg, a) => self.poly(a, depth + 1)?.scale(-1),
            Expr::Binary(op, a, b) => match op {
                BinOp::Add => self.poly(a, depth + 1)?.add(&self.poly(b, depth + 1)?),
                BinOp::Sub => self.poly(a, depth + 1)?.sub(&self.poly(b, depth + 1)?),
                BinOp::Mul => self.poly(a, depth + 1)?.mul(&self.poly(b, depth + 1)?),
                BinOp::Rem => {
                    // `x % n` is below `n`: an atom of its own.
                    let key = self.key("rem", e);
                    if let Some(ub) = self.size_bound(b, -1) {
                        let ubs = self.ubs.entry(key.clone()).or_default();
                        if !ubs.contains(&ub) {
                            ubs.push(ub);
                        }
                    }
                    Some(Poly::atom(Atom::Var(key)))
                }
                // A quotient, a shift, …: a value of its own, unbounded (`n = idx / w / h`).
                BinOp::Div
                | BinOp::Shl
                | BinOp::Shr
                | BinOp::BitAnd
                | BinOp::BitOr
                | BinOp::BitXor => Some(Poly::atom(Atom::Var(self.key("opaque", e)))),
                _ => None,
            },
            Expr::Load(_) | Expr::Unknown(_) => Some(Poly::atom(Atom::Var(self.key("opaque", e)))),
            _ => None,
        }
    }

    /// `p` with each compared sum it has as a part (every term of the sum, times one factor)
    /// replaced by the sum's own value: `ix + pitch * iy` with `ix = tx + 128 * bx` inlined is
    /// read as `sum + pitch * iy`, the sum bounded by its comparison.
    fn with_sums(&self, p: Poly) -> Poly {
        let mut p = p;
        for (sum, key) in &self.sums {
            let Some((m0, c0)) = sum.0.iter().next() else {
                continue;
            };
            let Some(c) = p.0.get(m0).copied() else {
                continue;
            };
            if c % c0 != 0 {
                continue;
            }
            let k = c / c0;
            let whole = sum.0.iter().all(|(m, c)| {
                c.checked_mul(k)
                    .is_some_and(|kc| p.0.get(m).copied() == Some(kc))
            });
            if !whole {
                continue;
            }
            let replaced = sum
                .scale(k)
                .and_then(|s| p.sub(&s))
                .and_then(|r| r.add(&Poly::mono(k, vec![Atom::Var(key.clone())])));
            if let Some(r) = replaced {
                p = r;
            }
        }
        p
    }

    /// `e + delta` when `e` names only sizes and constants.
    fn size_bound(&mut self, e: &Expr, delta: i64) -> Option<Poly> {
        let p = self.poly(e, 0)?;
        if p.has_vars() {
            return None;
        }
        p.add(&Poly::constant(delta))
    }
}

/// The layout assumptions of a kernel (see the module documentation); `known` are the
/// leading-dimension pairs already assumed (`(ld, row)`), not repeated.
pub fn layout_assumptions(
    kernel: &Kernel,
    (block_fixed, grid_fixed): ([bool; 3], [bool; 3]),
    known: &[(String, String)],
) -> Vec<Assumption> {
    let mut counts: BTreeMap<LocalId, usize> = BTreeMap::new();
    let mut values: BTreeMap<LocalId, Expr> = BTreeMap::new();
    assigned_values(&kernel.body, &mut |l, v| {
        *counts.entry(l).or_default() += 1;
        values.insert(l, v.clone());
    });
    let mut atoms: BTreeSet<LocalId> = BTreeSet::new();
    let mut rems: Vec<(LocalId, Expr)> = Vec::new();
    for (l, n) in &counts {
        if *n != 1 {
            atoms.insert(*l);
        } else if let Some(Expr::Binary(BinOp::Rem, _, d)) = values.get(l).map(strip_casts) {
            atoms.insert(*l);
            rems.push((*l, (**d).clone()));
        }
    }
    // (compared value, bound, whether the value is on the left)
    let mut comparisons: Vec<(Expr, BinOp, Expr, bool)> = Vec::new();
    let mut compared: BTreeSet<String> = BTreeSet::new();
    walk_block(&kernel.body, &mut |e, _| {
        let Expr::Binary(op @ (BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge), a, b) = e else {
            return;
        };
        for (x, y, left) in [(a, b, true), (b, a, false)] {
            match strip_casts(x) {
                Expr::Local(l) => {
                    atoms.insert(*l);
                    compared.insert(local_key(*l));
                }
                Expr::Builtin(b @ (Builtin::ThreadIdx(_) | Builtin::BlockIdx(_))) => {
                    compared.insert(match b {
                        Builtin::ThreadIdx(d) => format!("threadIdx.{}", d.name()),
                        Builtin::BlockIdx(d) => format!("blockIdx.{}", d.name()),
                        _ => unreachable!(),
                    });
                }
                // A sum compared as a whole (a `const` local the front end inlined:
                // `threadIdx.x + blockDim.x * blockIdx.x >= n`), see `Ctx::sums`.
                Expr::Binary(BinOp::Add | BinOp::Sub, _, _) => {}
                _ => continue,
            }
            comparisons.push((strip_casts(x).clone(), *op, (**y).clone(), left));
        }
    });
    // What the kernel's guards test (a comparison that only chooses a value guards nothing).
    let mut guarded: BTreeSet<String> = BTreeSet::new();
    for x in crate::assumptions::guard_operands(kernel) {
        match x {
            Expr::Local(l) => {
                guarded.insert(local_key(l));
            }
            Expr::Builtin(Builtin::ThreadIdx(d)) => {
                guarded.insert(format!("threadIdx.{}", d.name()));
            }
            Expr::Builtin(Builtin::BlockIdx(d)) => {
                guarded.insert(format!("blockIdx.{}", d.name()));
            }
            _ => {}
        }
    }
    // Locals holding a thread (block) index, assigned once: compared ones stay atoms of their
    // own, and keep the index's launch bound unless a guard tests them.
    let index_locals: Vec<(LocalId, String, String, usize, bool)> = values
        .iter()
        .filter(|(l, _)| counts.get(l) == Some(&1))
        .filter_map(|(l, v)| match strip_casts(v) {
            Expr::Builtin(Builtin::ThreadIdx(d)) => Some((
                *l,
                format!("threadIdx.{}", d.name()),
                format!("blockDim.{}", d.name()),
                d.index(),
                true,
            )),
            Expr::Builtin(Builtin::BlockIdx(d)) => Some((
                *l,
                format!("blockIdx.{}", d.name()),
                format!("gridDim.{}", d.name()),
                d.index(),
                false,
            )),
            _ => None,
        })
        .collect();
    let once: BTreeMap<LocalId, Expr> = values
        .into_iter()
        .filter(|(l, _)| counts.get(l) == Some(&1))
        .collect();
    let mut cx = Ctx {
        kernel,
        once,
        atoms,
        ubs: BTreeMap::new(),
        sides: Vec::new(),
        sums: Vec::new(),
        fresh: 0,
        keep: BTreeSet::new(),
        ids: BTreeMap::new(),
    };
    for (l, d) in rems {
        if let Some(ub) = cx.size_bound(&d, -1) {
            cx.ubs.entry(local_key(l)).or_default().push(ub);
        }
    }
    // Bounds that name another varying value (`c < c0 + step`), for `tile_bounds`.
    let mut tiles: Vec<(String, Expr, i64)> = Vec::new();
    for (x, op, y, left) in comparisons {
        // `x < n`, `n > x`: n - 1; `x <= n`, `n >= x`: n. An early exit `if (x >= n) return`
        // or `if (x > n) return` keeps `x` below n, at most n.
        let delta = match (op, left) {
            (BinOp::Lt, true) | (BinOp::Gt, false) => -1,
            (BinOp::Le, true) | (BinOp::Ge, false) => 0,
            (BinOp::Ge, true) | (BinOp::Le, false) => -1,
            (BinOp::Gt, true) | (BinOp::Lt, false) => 0,
            _ => continue,
        };
        let key = match x {
            Expr::Local(l) => local_key(l),
            Expr::Builtin(Builtin::ThreadIdx(d)) => format!("threadIdx.{}", d.name()),
            Expr::Builtin(Builtin::BlockIdx(d)) => format!("blockIdx.{}", d.name()),
            x => {
                let Some(sum) = cx.poly(&x, 0) else { continue };
                if !sum.has_vars() || sum.0.len() < 2 {
                    continue;
                }
                match cx.sums.iter().find(|(p, _)| *p == sum) {
                    Some((_, k)) => k.clone(),
                    None => {
                        let k = cx.key("sum", &x);
                        cx.sums.push((sum, k.clone()));
                        k
                    }
                }
            }
        };
        let Some(ub) = cx.size_bound(&y, delta) else {
            if key.starts_with("sum#") {
                continue;
            }
            tiles.push((key, y, delta));
            continue;
        };
        let ubs = cx.ubs.entry(key).or_default();
        if !ubs.contains(&ub) {
            ubs.push(ub);
        }
    }
    // An unguarded thread (block) index is below its block (grid) size, unless the launch
    // fixes that size.
    for d in cudarace_ir::Dim::ALL {
        for (idx, size, fixed) in [
            ("threadIdx", "blockDim", block_fixed[d.index()]),
            ("blockIdx", "gridDim", grid_fixed[d.index()]),
        ] {
            let key = format!("{idx}.{}", d.name());
            if fixed || guarded.contains(&key) {
                continue;
            }
            let size = Poly::atom(Atom::Size {
                var: format!("{size}.{}", d.name()),
                text: format!("{size}.{}", d.name()),
                signed: false,
            });
            if let Some(ub) = size.add(&Poly::constant(-1)) {
                cx.ubs.entry(key).or_default().push(ub);
            }
        }
    }
    for (l, index, size, d, thread) in index_locals {
        let key = local_key(l);
        let fixed = if thread {
            block_fixed[d]
        } else {
            grid_fixed[d]
        };
        if fixed || !cx.atoms.contains(&l) || guarded.contains(&key) || guarded.contains(&index) {
            continue;
        }
        let size = Poly::atom(Atom::Size {
            var: size.clone(),
            text: size,
            signed: false,
        });
        if let Some(ub) = size.add(&Poly::constant(-1)) {
            let ubs = cx.ubs.entry(key).or_default();
            if !ubs.contains(&ub) {
                ubs.push(ub);
            }
        }
    }
    for (key, y, delta) in tiles {
        tile_bounds(&mut cx, key, &y, delta);
    }
    let id_locals = id_locals(&mut cx);
    let mut indices: Vec<Expr> = Vec::new();
    visit_accesses(&kernel.body, &mut |e| indices.push(e.clone()));
    let mut out: Vec<(String, Assumption)> = Vec::new();
    for e in indices {
        if out.len() >= MAX_ASSUMPTIONS {
            break;
        }
        let Some(p) = cx.poly(&e, 0) else { continue };
        let p = cx.with_sums(p);
        if index_assumptions(&cx, &p, &var_steps(&p), known, &mut out) {
            continue;
        }
        // `row * n + i` with `i = tx * blockDim.x + ty`: inlined, the steps `n` and
        // `blockDim.x` do not divide one another; read with `i` as the digit instead.
        if !id_locals.is_empty() {
            cx.keep = id_locals.clone();
            let kept = cx.poly(&e, 0).map(|p| cx.with_sums(p));
            cx.keep.clear();
            if kept.is_some_and(|p| index_assumptions(&cx, &p, &var_steps(&p), known, &mut out)) {
                continue;
            }
        }
        // `(i * s0 + b0) * i1 + (j * s1 + b1)`: strided digits, whose steps are what the
        // terms share.
        if let Some(steps) = strides::shared_steps(&p) {
            if index_assumptions(&cx, &p, &steps, known, &mut out) {
                continue;
            }
        }
        // `b * batchOffset + g * groupOffset + i * stride`: steps no one of which divides
        // another.
        strides::independent_stride_assumptions(&cx, &p, &mut out);
    }
    out.truncate(MAX_ASSUMPTIONS);
    out.into_iter().map(|(_, a)| a).collect()
}

/// A value bounded by a tile of its own: `c < c0 + step` where `c0` is a multiple of `step`
/// (`c0 = threadIdx.x * step`, assigned once) bounded by a size (`c0 < n`, so `c0 <= n - 1`).
/// The tile `c0 .. c0 + step - 1` ends inside `n` exactly when `n` is a multiple of `step`:
/// `c <= n - 1`, assuming `n % step == 0` (a kernel that hands each thread a whole tile is
/// written for sizes that tile; broken, the finding says `only if n % step != 0`). When the
/// sizes are constants (the launch gives them) the bound is taken only where it holds, and a
/// multiple of the step (`n = step * m`) needs no assumption.
fn tile_bounds(cx: &mut Ctx, key: String, y: &Expr, delta: i64) {
    let Some(p) = cx.poly(y, 0) else { return };
    // y = c0 + rest: one varying term, a local with coefficient 1.
    let mut start = None;
    let mut rest = Poly::default();
    for (m, c) in &p.0 {
        if m.iter().any(Atom::is_var) {
            if start.is_some() || *c != 1 {
                return;
            }
            let [Atom::Var(v)] = m.as_slice() else { return };
            start = Some(v.clone());
        } else if rest.push(m.clone(), *c).is_none() {
            return;
        }
    }
    let Some(start) = start else { return };
    // The tile's width: `c <= c0 + rest + delta`, so `rest + delta + 1` cells from `c0`.
    let Some(width) = rest.add(&Poly::constant(delta + 1)) else {
        return;
    };
    let width: Step = match width.0.iter().collect::<Vec<_>>().as_slice() {
        [(m, c)] if **c > 0 => (**c, m.to_vec()),
        _ => return,
    };
    let Some(l) = cx.once.keys().copied().find(|l| local_key(*l) == start) else {
        return;
    };
    let Some(value) = cx.once.get(&l).cloned() else {
        return;
    };
    let Some(value) = cx.poly(&value, 0) else {
        return;
    };
    // Every term of the start a multiple of the width (a start of 0 would be no tile).
    let multiple = |q: &Poly| {
        q.0.iter().all(|(m, c)| {
            let sizes: Vec<Atom> = m.iter().filter(|a| !a.is_var()).cloned().collect();
            quotient(&(c.abs(), sizes), &width).is_some()
        })
    };
    if !value.has_vars() || !multiple(&value) {
        return;
    }
    let width_poly = Poly::mono(width.0, width.1.clone());
    for ub in cx.ubs.get(&start).cloned().unwrap_or_default() {
        let Some(end) = ub.add(&Poly::constant(1)) else {
            continue;
        };
        let side = if multiple(&end) {
            None
        } else if !end.has_vars() && end.0.keys().all(|m| m.is_empty()) && width.1.is_empty() {
            // Both constants: the tile fits or it does not.
            if end.constant_part().rem_euclid(width.0) != 0 {
                continue;
            }
            None
        } else {
            let shown = |q: &Poly| {
                if q.0.len() > 1 {
                    format!("({})", q.text())
                } else {
                    q.text()
                }
            };
            let mut subjects: Vec<String> = Vec::new();
            for a in end.0.keys().chain(width_poly.0.keys()).flatten() {
                if let Atom::Size { var, text, .. } = a {
                    if var.starts_with("param.") && !subjects.contains(text) {
                        subjects.push(text.clone());
                    }
                }
            }
            // Said of the two threads' own tiles when the start names only thread and block
            // indices (`c0 < n -> c0 + step <= n`: linear in the product `c0` the query has
            // already), else as the remainder.
            let term = match (thread_term(&value, 'A'), thread_term(&value, 'B')) {
                (Some(a), Some(b)) => and([a, b]
                    .into_iter()
                    .map(|c0| {
                        Term::implies(
                            le(c0.clone(), ub.term()),
                            le(add(c0, width_poly.term()), end.term()),
                        )
                    })
                    .collect()),
                _ => eq(modulo(end.term(), width_poly.term()), int(0)),
            };
            Some(Assumption {
                term,
                broken: Broken::Layout {
                    text: format!("{} % {} != 0", shown(&end), shown(&width_poly)),
                    subjects,
                },
            })
        };
        let ubs = cx.ubs.entry(key.clone()).or_default();
        if !ubs.contains(&ub) {
            ubs.push(ub.clone());
            if let Some(a) = side {
                cx.sides.push((key.clone(), ub, a));
            }
        }
    }
}

/// `p` for thread `t` of the query (`A.tid.x`, `A.bid.y`), when its only varying values are
/// thread and block indices.
fn thread_term(p: &Poly, t: char) -> Option<Term> {
    let mut out = int(0);
    for (m, c) in &p.0 {
        let mut term = int(*c);
        for a in m {
            let var = match a {
                Atom::Size { var, .. } => var.clone(),
                Atom::Var(v) => {
                    if let Some(d) = v.strip_prefix("threadIdx.") {
                        format!("{t}.tid.{d}")
                    } else if let Some(d) = v.strip_prefix("blockIdx.") {
                        format!("{t}.bid.{d}")
                    } else {
                        return None;
                    }
                }
            };
            term = mul(term, Term::Var(var.into()));
        }
        out = add(out, term);
    }
    Some(out)
}

/// The locals holding a linearised thread id: assigned once, not bounded on their own, whose
/// value is a sum of at least two terms in thread and block indices and launch sizes only
/// (`tx * blockDim.x + ty`), each index bounded by its launch size. Each is recorded with its
/// value: as a digit its assumption is said of the two threads' own ids (see
/// [`digit_assumptions`]), linear in the products the query has already, where a bound over
/// the sizes alone (`(blockDim.x - 1) * blockDim.x + blockDim.y <= n`) would be a nonlinear
/// fact of its own (2.5 s instead of 34 ms on Tango's ResNet kernels).
fn id_locals(cx: &mut Ctx) -> BTreeSet<LocalId> {
    let mut out = BTreeSet::new();
    let candidates: Vec<(LocalId, Expr)> = cx
        .once
        .iter()
        .filter(|(l, _)| !cx.atoms.contains(l))
        .map(|(l, v)| (*l, v.clone()))
        .collect();
    for (l, v) in candidates {
        let Some(p) = cx.poly(&v, 0) else { continue };
        let varying = p.0.keys().filter(|m| m.iter().any(Atom::is_var)).count();
        // Each index bounded by its launch size: not when the launch fixes that size (the
        // launch then says whether the ids fit) or a guard tests the index.
        let launch_only = p.0.keys().flatten().all(|a| match a {
            Atom::Size { var, .. } => var.starts_with("blockDim.") || var.starts_with("gridDim."),
            Atom::Var(v) => {
                (v.starts_with("threadIdx.") || v.starts_with("blockIdx."))
                    && cx.ubs.get(v).is_some_and(|u| !u.is_empty())
            }
        });
        if varying >= 2 && launch_only {
            cx.ids.insert(local_key(l), p);
            out.insert(l);
        }
    }
    out
}

/// The steps of an index: the sizes (times a constant) of each of its varying terms, but the
/// unit step, smallest first.
fn var_steps(p: &Poly) -> Vec<Step> {
    let mut steps: Vec<Step> = Vec::new();
    for (m, c) in &p.0 {
        let (vars, sizes): (Vec<Atom>, Vec<Atom>) = m.iter().cloned().partition(Atom::is_var);
        if vars.is_empty() {
            continue;
        }
        let s = (c.abs(), sizes);
        if s != (1, vec![]) && !steps.contains(&s) {
            steps.push(s);
        }
    }
    steps.sort_by_key(|(c, s)| (s.len(), *c));
    steps
}

/// Whether each step divides the next, leaving more than 1.
fn is_chain(steps: &[Step]) -> bool {
    steps
        .windows(2)
        .all(|w| quotient(&w[1], &w[0]).is_some_and(|q| q != (1, vec![])))
}

/// The assumptions of one index polynomial read with `steps` (smallest first); false when the
/// steps do not form a mixed radix (nothing to assume).
fn index_assumptions(
    cx: &Ctx,
    p: &Poly,
    steps: &[Step],
    known: &[(String, String)],
    out: &mut Vec<(String, Assumption)>,
) -> bool {
    let split = |m: &Mono| -> (Vec<Atom>, Vec<Atom>) { m.iter().cloned().partition(Atom::is_var) };
    if steps.is_empty() || !is_chain(steps) {
        return false;
    }
    // Each term to the largest step dividing it: index = Σ digit_i * step_i.
    let mut digits: Vec<Poly> = vec![Poly::default(); steps.len() + 1];
    for (m, c) in &p.0 {
        let (vars, sizes) = split(m);
        let mut level = 0;
        let mut q: (i64, Mono) = (*c, m.clone());
        for (i, s) in steps.iter().enumerate().rev() {
            if let Some((k, rest)) = quotient(&(c.abs(), sizes.clone()), s) {
                let mut mono = vars.clone();
                mono.extend(rest);
                mono.sort();
                q = (k * c.signum(), mono);
                level = i + 1;
                break;
            }
        }
        if digits[level].push(q.1, q.0).is_none() {
            return true;
        }
    }
    for i in 0..steps.len() {
        let modulus = if i == 0 {
            Some(steps[0].clone())
        } else {
            quotient(&steps[i], &steps[i - 1])
        };
        let Some((k, m)) = modulus else { return true };
        let digit = &digits[i];
        if digit.has_vars() {
            digit_assumptions(cx, digit, &Poly::mono(k, m), known, out);
        } else if !digit.0.is_empty() {
            // A field at a fixed offset of a record (`out[b * box_size + 4]`): the record
            // holds it, `4 <= box_size - 1`, as the layout of every record a host passes does.
            let modulus = Poly::mono(k, m);
            if let Some(d) = modulus.sub(digit).and_then(|d| d.add(&Poly::constant(-1))) {
                push(nonneg(d, false), known, out);
            }
            push(nonneg(digit.clone(), true), known, out);
        }
    }
    true
}

/// `0 <= digit <= modulus - 1` for one level of an index.
fn digit_assumptions(
    cx: &Ctx,
    digit: &Poly,
    modulus: &Poly,
    known: &[(String, String)],
    out: &mut Vec<(String, Assumption)>,
) {
    // Each varying term is one atom times a constant, or times sizes (a strided digit
    // `j * s1 + b1`: its sizes are taken as not negative, as a stride is).
    let mut vars: Vec<(String, i64, Poly)> = Vec::new();
    let mut fixed = Poly::default();
    for (m, c) in &digit.0 {
        let (var, sizes): (Vec<Atom>, Vec<Atom>) = m.iter().cloned().partition(Atom::is_var);
        match var.as_slice() {
            [Atom::Var(v)] => vars.push((v.clone(), *c, Poly::mono(*c, sizes))),
            [] => {
                fixed.push(m.to_vec(), *c);
            }
            _ => return,
        }
    }
    // A linearised thread id as the digit: each of the two threads' own id stays inside the
    // step (`0 <= tx * blockDim.x + ty + s <= n - 1`).
    if let [(v, 1, k)] = vars.as_slice() {
        if let Some(value) = cx.ids.get(v).filter(|_| *k == Poly::constant(1)) {
            let Some(whole) = value.add(&fixed) else {
                return;
            };
            let Some(last) = modulus.add(&Poly::constant(-1)) else {
                return;
            };
            let (Some(a), Some(b)) = (thread_term(&whole, 'A'), thread_term(&whole, 'B')) else {
                return;
            };
            let mut subjects: Vec<String> = Vec::new();
            for x in modulus.0.keys().chain(fixed.0.keys()).flatten() {
                if let Atom::Size { var, text, .. } = x {
                    if var.starts_with("param.") && !subjects.contains(text) {
                        subjects.push(text.clone());
                    }
                }
            }
            let text = format!("{} > {}", whole.text(), last.text());
            let key = text.clone();
            if !out.iter().any(|(k, _)| *k == key) {
                let within = |t: Term| and(vec![le(int(0), t.clone()), le(t, last.term())]);
                out.push((
                    key,
                    Assumption {
                        term: and(vec![within(a), within(b)]),
                        broken: Broken::Layout { text, subjects },
                    },
                ));
            }
            return;
        }
    }
    // The choices of upper bounds (a few at most).
    let mut choices: Vec<Vec<Poly>> = vec![vec![]];
    for (v, _, _) in &vars {
        let ubs = cx.ubs.get(v).cloned().unwrap_or_default();
        let mut next = Vec::new();
        for c in &choices {
            for ub in &ubs {
                let mut c = c.clone();
                c.push(ub.clone());
                next.push(c);
            }
        }
        next.truncate(4);
        choices = next;
    }
    for ubs in choices {
        let (mut lo, mut hi) = (fixed.clone(), fixed.clone());
        let mut ok = true;
        for ((_, c, k), ub) in vars.iter().zip(&ubs) {
            let Some(scaled) = ub.mul(k) else {
                ok = false;
                break;
            };
            let next = if *c > 0 {
                hi.add(&scaled)
            } else {
                lo.add(&scaled)
            };
            match (next, *c > 0) {
                (Some(n), true) => hi = n,
                (Some(n), false) => lo = n,
                (None, _) => ok = false,
            }
        }
        if !ok {
            continue;
        }
        // The conditions some of these bounds hold under.
        for ((v, _, _), ub) in vars.iter().zip(&ubs) {
            for (key, bound, a) in &cx.sides {
                if key == v && bound == ub {
                    if let Broken::Layout { text, .. } = &a.broken {
                        // Per tile: two tiles may break the same words with different threads.
                        let key = format!("{text} ({v})");
                        if !out.iter().any(|(k, _)| *k == key) {
                            out.push((key, a.clone()));
                        }
                    }
                }
            }
        }
        // hi + 1 <= modulus
        if let Some(d) = modulus.sub(&hi).and_then(|d| d.add(&Poly::constant(-1))) {
            // A digit of thread or block indices alone (no offset) that fits its step only in
            // a small enough launch: the grid (block) is no wider than the row, as
            // `leading-dimensions` says of `row * 64 + blockIdx.x` (here `row * 192 +
            // blockIdx.x * 4 + lane`: at most 48 blocks).
            push(nonneg_or_launch(d, false, fixed.0.is_empty()), known, out);
        }
        // 0 <= lo (only where a signed size or a subtraction may make it negative)
        push(nonneg(lo, true), known, out);
    }
    // Without an upper bound for every varying term, only the lower bound.
    if vars
        .iter()
        .any(|(v, _, _)| cx.ubs.get(v).is_none_or(|u| u.is_empty()))
        && vars.iter().all(|(_, c, _)| *c > 0)
    {
        push(nonneg(fixed, true), known, out);
    }
}

fn push(
    a: Option<(String, String, Assumption)>,
    known: &[(String, String)],
    out: &mut Vec<(String, Assumption)>,
) {
    let Some((above, below, a)) = a else { return };
    if known.iter().any(|(ld, row)| *ld == below && *row == above) {
        return;
    }
    let key = format!("{above} > {below}");
    if !out.iter().any(|(k, _)| *k == key) {
        out.push((key, a));
    }
}

/// The assumption `0 <= d`, unless it holds or fails whatever the sizes (sizes at least 0),
/// with the two sides of its negation in words: `(above, below)` for "above > below".
fn nonneg(d: Poly, lower: bool) -> Option<(String, String, Assumption)> {
    nonneg_or_launch(d, lower, false)
}

/// [`nonneg`], also for `d` whose varying terms are all negative when they are launch sizes
/// alone and `launch_row` allows it (`48 - gridDim.x`: at most 48 blocks).
fn nonneg_or_launch(
    d: Poly,
    lower: bool,
    launch_row: bool,
) -> Option<(String, String, Assumption)> {
    let mut d = d;
    // A size every term has (`cs * b + cs * o <= cs * t`) divides out.
    if d.constant_part() == 0 {
        // Not down to a constant: `n <= m` stays itself.
        while let Some(first) = d.0.keys().next() {
            if d.0.keys().any(|m| m.len() < 2) {
                break;
            }
            let common = first
                .iter()
                .find(|a| !a.is_var() && d.0.keys().all(|m| m.contains(a)));
            let Some(a) = common.cloned() else { break };
            let mut r = Poly::default();
            for (m, c) in &d.0 {
                let mut m = m.clone();
                if let Some(i) = m.iter().position(|x| *x == a) {
                    m.remove(i);
                }
                r.push(m, *c)?;
            }
            d = r;
        }
    }
    let g = d.0.values().fold(0i64, |g, c| gcd(g, c.abs()));
    if g > 1 {
        let mut r = Poly::default();
        for (m, c) in &d.0 {
            r.push(m.clone(), c / g)?;
        }
        d = r;
    }
    let constant = d.constant_part();
    let terms: Vec<i64> =
        d.0.iter()
            .filter(|(m, _)| !m.is_empty())
            .map(|(_, c)| *c)
            .collect();
    if terms.is_empty() {
        // A constant: it holds, or the kernel's own bounds break it.
        return None;
    }
    let signed =
        d.0.keys()
            .flatten()
            .any(|a| matches!(a, Atom::Size { signed: true, .. }));
    if terms.iter().all(|c| *c > 0) && constant >= 0 && !(lower && signed) {
        return None;
    }
    let launch_sizes_only = d.0.keys().flatten().all(|a| {
        matches!(a, Atom::Size { var, .. } if var.starts_with("blockDim.") || var.starts_with("gridDim."))
    });
    if terms.iter().all(|c| *c < 0) && !(launch_row && launch_sizes_only && constant > 0) {
        // Only with sizes at their smallest (`1 - m >= 0` for a digit `j + k`, `k < m`, in a
        // row of `j < n`): the kernel's own code reaches past the step (an off-by-one, a
        // stencil writing its neighbours), not a caller's layout.
        return None;
    }
    let mut pos = Poly::default();
    let mut neg = Poly::default();
    for (m, c) in &d.0 {
        if *c > 0 {
            pos.push(m.clone(), *c)?;
        } else {
            neg.push(m.clone(), -c)?;
        }
    }
    let mut subjects: Vec<String> = Vec::new();
    for a in d.0.keys().flatten() {
        if let Atom::Size { var, text, .. } = a {
            if var.starts_with("param.") && !subjects.contains(text) {
                subjects.push(text.clone());
            }
        }
    }
    let (above, below) = (neg.text(), pos.text());
    let text = if lower {
        format!("{below} < {above}")
    } else {
        format!("{above} > {below}")
    };
    Some((
        above,
        below,
        Assumption {
            term: le(neg.term(), pos.term()),
            broken: Broken::Layout { text, subjects },
        },
    ))
}

fn gcd(a: i64, b: i64) -> i64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn size(name: &str) -> Poly {
        Poly::atom(Atom::Size {
            var: format!("param.{name}"),
            text: name.into(),
            signed: false,
        })
    }

    fn words(d: Poly, lower: bool) -> Option<String> {
        nonneg(d, lower).map(|(_, _, a)| match a.broken {
            Broken::Layout { text, .. } => text,
            other => panic!("{other:?}"),
        })
    }

    #[test]
    fn a_digit_past_its_step_is_described_with_the_sizes() {
        // d4 - (s4 + l4 - 1) - 1 >= 0
        let d = size("d4")
            .sub(&size("s4"))
            .unwrap()
            .sub(&size("l4"))
            .unwrap();
        assert_eq!(words(d, false).as_deref(), Some("l4 + s4 > d4"));
        // cs * t - cs * o - cs * b >= 0: the common size divides out.
        let cs = size("cs");
        let d = cs
            .mul(&size("t"))
            .unwrap()
            .sub(&cs.mul(&size("o")).unwrap())
            .unwrap()
            .sub(&cs.mul(&size("b")).unwrap())
            .unwrap();
        assert_eq!(words(d, false).as_deref(), Some("b + o > t"));
    }

    #[test]
    fn the_kernels_own_overrun_is_no_assumption() {
        // `j <= n` in rows of n: n - n - 1 >= 0 is false whatever n.
        assert_eq!(words(Poly::constant(-1), false), None);
        // `j + k`, k < taps, in rows of n: 1 - taps >= 0 only for the smallest taps.
        let d = Poly::constant(1).sub(&size("taps")).unwrap();
        assert_eq!(words(d, false), None);
        // Holds for any sizes: no assumption either.
        assert_eq!(words(size("n"), false), None);
    }

    #[test]
    fn steps_divide_as_multisets() {
        let s = |c: i64, names: &[&str]| -> Step {
            let mut v: Vec<Atom> = names
                .iter()
                .map(|n| Atom::Size {
                    var: format!("param.{n}"),
                    text: n.to_string(),
                    signed: false,
                })
                .collect();
            v.sort();
            (c, v)
        };
        assert_eq!(
            quotient(&s(1, &["d3", "d4"]), &s(1, &["d4"])),
            Some(s(1, &["d3"]))
        );
        assert_eq!(quotient(&s(64, &[]), &s(16, &[])), Some(s(4, &[])));
        assert_eq!(quotient(&s(1, &["n"]), &s(16, &[])), None);
        assert_eq!(quotient(&s(1, &["s5", "i6"]), &s(1, &["s6"])), None);
    }
}
