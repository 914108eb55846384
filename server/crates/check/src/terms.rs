//! Small constructors and traversals over [`Term`] with constant folding, so that the formulas the
//! checker builds stay readable and the hashes of unchanged questions stay stable.
//!
//! Variable naming before a query is built ("internal" names):
//! - `$name` — differs per thread (threadIdx, per-thread unknowns, unaligned loop variables);
//! - `%name` — the same for every thread of one block (blockIdx, uniform unknowns, aligned loop
//!   variables of synchronized loops);
//! - plain `name` — the same for the whole grid (blockDim, gridDim, kernel parameters).
//!
//! Names of values created during symbolic execution carry `@<n>`, a kernel-global counter that
//! `encode` replaces by a per-query ordinal before the query is hashed.

use cudarace_solver::Term;
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

pub fn int(v: i64) -> Term {
    Term::Int(v)
}

pub fn tru() -> Term {
    Term::Bool(true)
}

pub fn as_int(t: &Term) -> Option<i64> {
    match t {
        Term::Int(v) => Some(*v),
        _ => None,
    }
}

pub fn and(ts: Vec<Term>) -> Term {
    let mut out = Vec::new();
    for t in ts {
        match &t {
            Term::Bool(true) => {}
            Term::Bool(false) => return Term::Bool(false),
            Term::And(inner) => out.extend(inner.iter().cloned()),
            _ => {
                if !out.contains(&t) {
                    out.push(t)
                }
            }
        }
    }
    match out.len() {
        0 => Term::Bool(true),
        1 => out.pop().unwrap_or(Term::Bool(true)),
        _ => Term::And(out.into()),
    }
}

pub fn or(ts: Vec<Term>) -> Term {
    let mut out = Vec::new();
    for t in ts {
        match &t {
            Term::Bool(false) => {}
            Term::Bool(true) => return Term::Bool(true),
            Term::Or(inner) => out.extend(inner.iter().cloned()),
            _ => {
                if !out.contains(&t) {
                    out.push(t)
                }
            }
        }
    }
    match out.len() {
        0 => Term::Bool(false),
        1 => out.pop().unwrap_or(Term::Bool(false)),
        _ => Term::Or(out.into()),
    }
}

pub fn not(t: Term) -> Term {
    match &t {
        Term::Bool(b) => Term::Bool(!b),
        Term::Not(inner) => (**inner).clone(),
        _ => Term::Not(Arc::new(t)),
    }
}

pub fn add(a: Term, b: Term) -> Term {
    match (&a, &b) {
        (Term::Int(x), Term::Int(y)) => match x.checked_add(*y) {
            Some(v) => Term::Int(v),
            None => Term::Add(vec![a, b].into()),
        },
        (Term::Int(0), _) => b,
        (_, Term::Int(0)) => a,
        _ => Term::Add(vec![a, b].into()),
    }
}

pub fn sub(a: Term, b: Term) -> Term {
    match (&a, &b) {
        (Term::Int(x), Term::Int(y)) => match x.checked_sub(*y) {
            Some(v) => Term::Int(v),
            None => Term::sub(a, b),
        },
        (_, Term::Int(0)) => a,
        _ => Term::sub(a, b),
    }
}

pub fn mul(a: Term, b: Term) -> Term {
    match (&a, &b) {
        (Term::Int(x), Term::Int(y)) => match x.checked_mul(*y) {
            Some(v) => Term::Int(v),
            None => Term::Mul(vec![a, b].into()),
        },
        (Term::Int(1), _) => b,
        (_, Term::Int(1)) => a,
        (Term::Int(0), _) | (_, Term::Int(0)) => Term::Int(0),
        _ => Term::Mul(vec![a, b].into()),
    }
}

pub fn div(a: Term, b: Term) -> Term {
    match (&a, &b) {
        (Term::Int(x), Term::Int(y)) if *y != 0 => match x.checked_div(*y) {
            Some(v) => Term::Int(v),
            None => Term::Div(Arc::new(a), Arc::new(b)),
        },
        (_, Term::Int(1)) => a,
        _ => Term::Div(Arc::new(a), Arc::new(b)),
    }
}

pub fn rem(a: Term, b: Term) -> Term {
    match (&a, &b) {
        (Term::Int(x), Term::Int(y)) if *y != 0 => match x.checked_rem(*y) {
            Some(v) => Term::Int(v),
            None => Term::Rem(Arc::new(a), Arc::new(b)),
        },
        _ => Term::Rem(Arc::new(a), Arc::new(b)),
    }
}

pub fn modulo(a: Term, b: Term) -> Term {
    match (&a, &b) {
        (Term::Int(x), Term::Int(y)) if *y != 0 => Term::Int(x.rem_euclid(*y)),
        (_, Term::Int(1)) | (_, Term::Int(-1)) => Term::Int(0),
        _ => Term::Mod(Arc::new(a), Arc::new(b)),
    }
}

pub fn eq(a: Term, b: Term) -> Term {
    if a == b {
        return Term::Bool(true);
    }
    match (&a, &b) {
        (Term::Int(x), Term::Int(y)) => Term::Bool(x == y),
        (Term::Bool(x), Term::Bool(y)) => Term::Bool(x == y),
        _ => Term::eq(a, b),
    }
}

pub fn lt(a: Term, b: Term) -> Term {
    match (&a, &b) {
        (Term::Int(x), Term::Int(y)) => Term::Bool(x < y),
        _ if a == b => Term::Bool(false),
        _ => Term::lt(a, b),
    }
}

pub fn le(a: Term, b: Term) -> Term {
    match (&a, &b) {
        (Term::Int(x), Term::Int(y)) => Term::Bool(x <= y),
        _ if a == b => Term::Bool(true),
        _ => Term::le(a, b),
    }
}

pub fn ite(c: Term, a: Term, b: Term) -> Term {
    match c {
        Term::Bool(true) => a,
        Term::Bool(false) => b,
        _ if a == b => a,
        c => Term::ite(c, a, b),
    }
}

/// `t ^ p` for a power of two `p` (or 0) and `t >= 0`: `t + p` when bit log2(p) of `t` is clear,
/// `t - p` otherwise.
pub fn flip_bit(t: Term, p: Term) -> Term {
    let clear = lt(modulo(t.clone(), mul(int(2), p.clone())), p.clone());
    ite(clear, add(t.clone(), p.clone()), sub(t, p))
}

/// The `(t, p)` of a [`flip_bit`] term.
pub fn as_flip_bit(x: &Term) -> Option<(Term, Term)> {
    let Term::Ite(c, _, _) = x else { return None };
    let Term::Lt(m, p) = &**c else { return None };
    let Term::Mod(t, _) = &**m else { return None };
    let candidate = flip_bit((**t).clone(), (**p).clone());
    (candidate == *x).then(|| ((**t).clone(), (**p).clone()))
}

/// Rebuild `t` with every variable passed through `f` (`None` keeps it). `f` must be a function
/// of the name (it is asked once per shared part of a large term).
pub fn map_vars(t: &Term, f: &mut dyn FnMut(&str) -> Option<Term>) -> Term {
    let mut memo = Memo::new();
    changed_vars(t, f, &mut memo).unwrap_or_else(|| t.clone())
}

/// Past this many nodes, traversals remember the shared parts they have done (see
/// [`Term::share_key`]): below it, a plain walk is cheaper than the bookkeeping.
pub const SHARED_WALK_AFTER: usize = 512;

/// Results per shared part of the term being traversed, kept once the traversal has looked at
/// [`SHARED_WALK_AFTER`] nodes (small terms pay no bookkeeping, and nothing walks a term first
/// to decide). The keys are addresses inside that term, so a memo never outlives the traversal
/// it was made for.
struct Memo<T> {
    seen: usize,
    done: Option<HashMap<cudarace_solver::ShareKey, T>>,
}

impl<T: Clone> Memo<T> {
    fn new() -> Memo<T> {
        Memo {
            seen: 0,
            done: None,
        }
    }
    fn get(&mut self, t: &Term) -> Option<T> {
        self.seen += 1;
        if self.seen > SHARED_WALK_AFTER && self.done.is_none() {
            self.done = Some(HashMap::new());
        }
        self.done.as_ref()?.get(&t.share_key()?).cloned()
    }
    fn put(&mut self, t: &Term, v: &T) {
        if let (Some(done), Some(k)) = (self.done.as_mut(), t.share_key()) {
            done.insert(k, v.clone());
        }
    }
}

/// Does `t` have more than `limit` nodes, counted as a tree (shared parts once per use)? Stops
/// counting at the limit.
pub fn term_size_exceeds(t: &Term, limit: usize) -> bool {
    let mut stack = vec![t];
    let mut count = 0;
    while let Some(t) = stack.pop() {
        count += 1;
        if count > limit {
            return true;
        }
        t.for_each_child(&mut |c| stack.push(c));
    }
    false
}

/// [`map_vars`], or `None` when no variable changed: unchanged parts are shared with `t`, not
/// rebuilt (renaming a guard touches only the atoms that mention renamed variables), and a part
/// shared within `t` is renamed once and stays shared in the result.
fn changed_vars(
    t: &Term,
    f: &mut dyn FnMut(&str) -> Option<Term>,
    memo: &mut Memo<Option<Term>>,
) -> Option<Term> {
    if let Some(done) = memo.get(t) {
        return done;
    }
    let out = changed_vars_here(t, f, memo);
    memo.put(t, &out);
    out
}

fn changed_vars_here(
    t: &Term,
    f: &mut dyn FnMut(&str) -> Option<Term>,
    memo: &mut Memo<Option<Term>>,
) -> Option<Term> {
    type F<'a> = dyn FnMut(&str) -> Option<Term> + 'a;
    fn list(ts: &Arc<[Term]>, f: &mut F, memo: &mut Memo<Option<Term>>) -> Option<Arc<[Term]>> {
        let mut out: Option<Vec<Term>> = None;
        for (i, x) in ts.iter().enumerate() {
            if let Some(y) = changed_vars(x, f, memo) {
                out.get_or_insert_with(|| ts[..i].to_vec()).push(y);
            } else if let Some(o) = &mut out {
                o.push(x.clone());
            }
        }
        out.map(Arc::from)
    }
    fn one(a: &Arc<Term>, f: &mut F, memo: &mut Memo<Option<Term>>) -> Option<Arc<Term>> {
        changed_vars(a, f, memo).map(Arc::new)
    }
    fn two(
        a: &Arc<Term>,
        b: &Arc<Term>,
        f: &mut F,
        memo: &mut Memo<Option<Term>>,
    ) -> Option<(Arc<Term>, Arc<Term>)> {
        match (one(a, f, memo), one(b, f, memo)) {
            (None, None) => None,
            (x, y) => Some((
                x.unwrap_or_else(|| a.clone()),
                y.unwrap_or_else(|| b.clone()),
            )),
        }
    }
    match t {
        Term::Int(_) | Term::Bool(_) => None,
        Term::Var(v) => f(v),
        Term::Add(ts) => list(ts, f, memo).map(Term::Add),
        Term::Mul(ts) => list(ts, f, memo).map(Term::Mul),
        Term::And(ts) => list(ts, f, memo).map(Term::And),
        Term::Or(ts) => list(ts, f, memo).map(Term::Or),
        Term::Sub(a, b) => two(a, b, f, memo).map(|(a, b)| Term::Sub(a, b)),
        Term::Div(a, b) => two(a, b, f, memo).map(|(a, b)| Term::Div(a, b)),
        Term::Rem(a, b) => two(a, b, f, memo).map(|(a, b)| Term::Rem(a, b)),
        Term::Mod(a, b) => two(a, b, f, memo).map(|(a, b)| Term::Mod(a, b)),
        Term::Eq(a, b) => two(a, b, f, memo).map(|(a, b)| Term::Eq(a, b)),
        Term::Lt(a, b) => two(a, b, f, memo).map(|(a, b)| Term::Lt(a, b)),
        Term::Le(a, b) => two(a, b, f, memo).map(|(a, b)| Term::Le(a, b)),
        Term::Implies(a, b) => two(a, b, f, memo).map(|(a, b)| Term::Implies(a, b)),
        Term::Neg(a) => one(a, f, memo).map(Term::Neg),
        Term::Not(a) => one(a, f, memo).map(Term::Not),
        Term::Ite(c, a, b) => {
            let (c2, ab) = (one(c, f, memo), two(a, b, f, memo));
            if c2.is_none() && ab.is_none() {
                return None;
            }
            let (a, b) = ab.unwrap_or_else(|| (a.clone(), b.clone()));
            Some(Term::Ite(c2.unwrap_or_else(|| c.clone()), a, b))
        }
        Term::Bit {
            op,
            width,
            signed,
            args,
        } => list(args, f, memo).map(|args| Term::Bit {
            op: *op,
            width: *width,
            signed: *signed,
            args,
        }),
    }
}

/// A term about the *other* thread of the pair: `other(t)` renamed for thread A speaks of B
/// (per-thread and per-block variables prefixed `^`, see [`crate::encode::rename`]). Used for
/// conditions on pairs of threads (they disagree on a branch).
pub fn other(t: &Term) -> Term {
    map_vars(t, &mut |v| {
        (v.starts_with('$') || v.starts_with('%')).then(|| Term::Var(format!("^{v}").into()))
    })
}

/// Replace variables by terms (simultaneously), folding constants in the result. The other
/// thread's copy `^x` of a replaced `x` gets the other thread's copy of the replacement.
pub fn subst(t: &Term, map: &HashMap<String, Term>) -> Term {
    if map.is_empty() {
        return t.clone();
    }
    subst_with(t, &mut |v| {
        map.get(v).cloned().or_else(|| {
            v.strip_prefix('^')
                .and_then(|rest| map.get(rest))
                .map(other)
        })
    })
}

/// Replace variables by `f`'s terms (simultaneously; `None` keeps a variable), folding
/// constants in the result.
pub fn subst_with(t: &Term, f: &mut dyn FnMut(&str) -> Option<Term>) -> Term {
    simplify(&map_vars(t, f))
}

/// Rebuild `t` bottom-up through the folding constructors (a part shared within `t` once).
pub fn simplify(t: &Term) -> Term {
    simplify_in(t, &mut Memo::new())
}

fn simplify_in(t: &Term, memo: &mut Memo<Term>) -> Term {
    if let Some(done) = memo.get(t) {
        return done;
    }
    let out = simplify_here(t, memo);
    memo.put(t, &out);
    out
}

fn simplify_here(t: &Term, memo: &mut Memo<Term>) -> Term {
    rebuild(t, &mut |x| simplify_in(x, memo))
}

/// `t` with each operand replaced by `s(operand)`, built again through the folding
/// constructors (leaves as they are).
pub fn rebuild(t: &Term, s: &mut dyn FnMut(&Term) -> Term) -> Term {
    let mut s = |x: &Term| s(x);
    match t {
        Term::Int(_) | Term::Bool(_) | Term::Var(_) => t.clone(),
        Term::Add(ts) => ts.iter().map(s).reduce(add).unwrap_or(int(0)),
        Term::Mul(ts) => ts.iter().map(s).reduce(mul).unwrap_or(int(1)),
        Term::And(ts) => and(ts.iter().map(s).collect()),
        Term::Or(ts) => or(ts.iter().map(s).collect()),
        Term::Sub(a, b) => sub(s(a), s(b)),
        Term::Div(a, b) => div(s(a), s(b)),
        Term::Rem(a, b) => rem(s(a), s(b)),
        Term::Mod(a, b) => modulo(s(a), s(b)),
        Term::Eq(a, b) => eq(s(a), s(b)),
        Term::Lt(a, b) => lt(s(a), s(b)),
        Term::Le(a, b) => le(s(a), s(b)),
        Term::Implies(a, b) => match (s(a), s(b)) {
            (Term::Bool(false), _) | (_, Term::Bool(true)) => tru(),
            (Term::Bool(true), b) => b,
            (a, b) => Term::implies(a, b),
        },
        Term::Neg(a) => match s(a) {
            Term::Int(v) => v
                .checked_neg()
                .map(int)
                .unwrap_or(Term::Neg(Arc::new(int(v)))),
            a => Term::Neg(Arc::new(a)),
        },
        Term::Not(a) => not(s(a)),
        Term::Ite(c, a, b) => ite(s(c), s(a), s(b)),
        Term::Bit {
            op,
            width,
            signed,
            args,
        } => Term::Bit {
            op: *op,
            width: *width,
            signed: *signed,
            args: args.iter().map(s).collect(),
        },
    }
}

pub fn collect_vars(t: &Term, out: &mut BTreeSet<String>) {
    visit_vars(t, &mut |v| {
        out.insert(v.to_string());
    });
}

/// Visit variables in a deterministic (left-to-right, depth-first) order.
/// Past [`SHARED_WALK_AFTER`] nodes a part shared within `t` is visited once (its variables
/// have all been seen at its first visit, so the order of first occurrences is the same).
pub fn visit_vars(t: &Term, f: &mut dyn FnMut(&str)) {
    any_part(t, &mut |x| {
        if let Term::Var(v) = x {
            f(v);
        }
        false
    });
}

/// Is some part of `t` (itself included) one `pred` holds for? Parts are looked at depth first,
/// left to right; a part shared within a large `t` once.
pub fn any_part(t: &Term, pred: &mut dyn FnMut(&Term) -> bool) -> bool {
    let mut stack = vec![t];
    let mut count = 0usize;
    let mut seen = std::collections::HashSet::new();
    while let Some(t) = stack.pop() {
        count += 1;
        if count > SHARED_WALK_AFTER {
            if let Some(k) = t.share_key() {
                if !seen.insert(k) {
                    continue;
                }
            }
        }
        if pred(t) {
            return true;
        }
        // Operands pushed last-first, so that they are looked at left to right (an explicit
        // stack: query terms can be deep).
        stack.extend(t.children().into_iter().rev());
    }
    false
}

pub fn mentions(t: &Term, pred: &dyn Fn(&str) -> bool) -> bool {
    let mut found = false;
    visit_vars(t, &mut |v| found |= pred(v));
    found
}

/// Does the value possibly differ between two threads of one block?
pub fn thread_varying(t: &Term) -> bool {
    mentions(t, &|v| v.starts_with('$'))
}

/// Does the value possibly differ between blocks (or threads)?
pub fn block_varying(t: &Term) -> bool {
    mentions(t, &|v| v.starts_with('$') || v.starts_with('%'))
}

pub fn mentions_var(t: &Term, name: &str) -> bool {
    mentions(t, &|v| v == name)
}

/// A compact infix rendering (debugging and test messages).
pub fn show(t: &Term) -> String {
    let list = |ts: &[Term], sep: &str| ts.iter().map(show).collect::<Vec<_>>().join(sep);
    match t {
        Term::Int(v) => v.to_string(),
        Term::Bool(b) => b.to_string(),
        Term::Var(v) => v.to_string(),
        Term::Add(ts) => format!("({})", list(ts, " + ")),
        Term::Mul(ts) => format!("({})", list(ts, " * ")),
        Term::And(ts) => format!("({})", list(ts, " && ")),
        Term::Or(ts) => format!("({})", list(ts, " || ")),
        Term::Sub(a, b) => format!("({} - {})", show(a), show(b)),
        Term::Div(a, b) => format!("({} / {})", show(a), show(b)),
        Term::Rem(a, b) => format!("({} % {})", show(a), show(b)),
        Term::Mod(a, b) => format!("({} mod {})", show(a), show(b)),
        Term::Eq(a, b) => format!("({} == {})", show(a), show(b)),
        Term::Lt(a, b) => format!("({} < {})", show(a), show(b)),
        Term::Le(a, b) => format!("({} <= {})", show(a), show(b)),
        Term::Implies(a, b) => format!("({} => {})", show(a), show(b)),
        Term::Neg(a) => format!("-{}", show(a)),
        Term::Not(a) => format!("!{}", show(a)),
        Term::Ite(c, a, b) => format!("({} ? {} : {})", show(c), show(a), show(b)),
        Term::Bit { op, args, .. } => format!("{op:?}({})", list(args, ", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folding_keeps_terms_small() {
        assert_eq!(add(int(2), int(3)), int(5));
        assert_eq!(and(vec![tru(), Term::var("x"), tru()]), Term::var("x"));
        assert_eq!(or(vec![Term::Bool(false), tru()]), tru());
        assert_eq!(not(not(Term::var("b"))), Term::var("b"));
        assert_eq!(modulo(int(-3), int(4)), int(1));
    }

    #[test]
    fn substitution_is_simultaneous() {
        let mut m = HashMap::new();
        m.insert("a".to_string(), Term::var("b"));
        m.insert("b".to_string(), Term::var("a"));
        let t = Term::sub(Term::var("a"), Term::var("b"));
        assert_eq!(subst(&t, &m), Term::sub(Term::var("b"), Term::var("a")));
    }

    #[test]
    fn varying_by_prefix() {
        assert!(thread_varying(&add(Term::var("$tid.x"), int(1))));
        assert!(!thread_varying(&Term::var("%bid.x")));
        assert!(block_varying(&Term::var("%bid.x")));
        assert!(!block_varying(&Term::var("blockDim.x")));
    }
}
