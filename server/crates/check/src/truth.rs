//! Bitwise operators on truth values as the logical operators they compute.
//!
//! C code often combines comparisons with `&` and `|` instead of `&&` and `||`
//! (`if (x < w & y < h)`, `loop < n & idx < m` in a `for` condition). The symbolic execution
//! turns each comparison into an integer 0 or 1 (`c ? 1 : 0`) and the operator into a 32-bit
//! bit-vector operation; the solver then has to bridge integers and bit-vectors for every such
//! guard (`int2bv`/`bv2int`), which Z3 4.8.12 needs seconds for, and the lemma generators of
//! [`crate::encode`] do not see the comparisons inside (they look for conjunct atoms).
//!
//! [`logical_bits`] rewrites them exactly: for operands that are each 0 or 1,
//! `(a ? 1 : 0) & (b ? 1 : 0) == (a && b ? 1 : 0)`, `|` is `||`, `^` is `!=`, in any width of
//! at least two bits (signed or not, 1 reads back as 1); and `(c ? 1 : 0) == 0` is `!c`,
//! `(c ? 1 : 0) == 1` is `c`. The result has the same value for every assignment of the
//! variables: nothing is assumed and nothing dropped.

use crate::terms::{and, any_part, eq, int, ite, not, or, rebuild};
use cudarace_solver::{BitOp, ShareKey, Term};
use std::collections::HashMap;

/// The condition `c` of a truth value `t` (`t == (c ? 1 : 0)` for every assignment).
fn truth(t: &Term) -> Option<Term> {
    match t {
        Term::Int(0) => Some(Term::Bool(false)),
        Term::Int(1) => Some(Term::Bool(true)),
        Term::Ite(c, a, b) => match (&**a, &**b) {
            (Term::Int(1), Term::Int(0)) => Some((**c).clone()),
            (Term::Int(0), Term::Int(1)) => Some(not((**c).clone())),
            _ => None,
        },
        _ => None,
    }
}

/// `t` with bitwise `&`, `|`, `^` of truth values replaced by the logical operators (see the
/// module comment). Parts without such operators are shared with `t`, not rebuilt.
pub fn logical_bits(t: &Term) -> Term {
    let bitwise = |x: &Term| {
        matches!(
            x,
            Term::Bit {
                op: BitOp::And | BitOp::Or | BitOp::Xor,
                ..
            }
        )
    };
    if !any_part(t, &mut |x| bitwise(x)) {
        return t.clone();
    }
    let mut memo = HashMap::new();
    rewrite(t, &mut memo, 0).unwrap_or_else(|| t.clone())
}

/// Deeper than this, a term is left as it is (the rewrite recurses; real guards are shallow).
const MAX_DEPTH: usize = 2_000;

/// The rewritten `t`, or `None` when nothing in it changed.
fn rewrite(t: &Term, memo: &mut HashMap<ShareKey, Option<Term>>, depth: usize) -> Option<Term> {
    if depth > MAX_DEPTH {
        return None;
    }
    let key = t.share_key()?;
    if let Some(done) = memo.get(&key) {
        return done.clone();
    }
    let kids = t.children();
    let mut changed = false;
    let mut new_kids: Vec<Term> = Vec::with_capacity(kids.len());
    for k in &kids {
        match rewrite(k, memo, depth + 1) {
            Some(n) => {
                changed = true;
                new_kids.push(n);
            }
            None => new_kids.push((*k).clone()),
        }
    }
    let rebuilt = if changed {
        let mut it = new_kids.iter();
        rebuild(t, &mut |_| it.next().cloned().unwrap_or(int(0)))
    } else {
        t.clone()
    };
    let out = match fold(&rebuilt) {
        Some(f) => Some(f),
        None if changed => Some(rebuilt),
        None => None,
    };
    memo.insert(key, out.clone());
    out
}

/// The logical form of one node whose operands are rewritten already, if it has one.
fn fold(t: &Term) -> Option<Term> {
    match t {
        Term::Bit {
            op: op @ (BitOp::And | BitOp::Or | BitOp::Xor),
            width,
            args,
            ..
        } if *width >= 2 && !args.is_empty() => {
            let cs: Vec<Term> = args.iter().map(truth).collect::<Option<_>>()?;
            let c = match op {
                BitOp::And => and(cs),
                BitOp::Or => or(cs),
                _ => cs
                    .into_iter()
                    .reduce(|a, b| not(eq(a, b)))
                    .unwrap_or(Term::Bool(false)),
            };
            Some(ite(c, int(1), int(0)))
        }
        Term::Eq(a, b) => {
            let (c, k) = match (truth(a), truth(b)) {
                (Some(c), _) if matches!(**b, Term::Int(0 | 1)) && !matches!(**a, Term::Int(_)) => {
                    (c, &**b)
                }
                (_, Some(c)) if matches!(**a, Term::Int(0 | 1)) && !matches!(**b, Term::Int(_)) => {
                    (c, &**a)
                }
                _ => return None,
            };
            Some(match k {
                Term::Int(0) => not(c),
                _ => c,
            })
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::terms::lt;

    fn bit(op: BitOp, width: u8, args: Vec<Term>) -> Term {
        Term::Bit {
            op,
            width,
            signed: false,
            args: args.into(),
        }
    }

    fn b(c: Term) -> Term {
        ite(c, int(1), int(0))
    }

    #[test]
    fn and_or_xor_of_comparisons_are_logical() {
        let (p, q) = (
            lt(Term::var("x"), Term::var("w")),
            lt(Term::var("y"), Term::var("h")),
        );
        // `if ((x < w) & (y < h))`: `!((p?1:0) & (q?1:0) == 0)`.
        let guard = not(eq(
            bit(BitOp::And, 32, vec![b(p.clone()), b(q.clone())]),
            int(0),
        ));
        assert_eq!(logical_bits(&guard), and(vec![p.clone(), q.clone()]));
        let any = bit(BitOp::Or, 32, vec![b(p.clone()), b(q.clone())]);
        assert_eq!(logical_bits(&any), b(or(vec![p.clone(), q.clone()])));
        let one = bit(BitOp::Xor, 32, vec![b(p.clone()), b(q.clone())]);
        assert_eq!(logical_bits(&one), b(not(eq(p.clone(), q.clone()))));
        // Nested: `(p & q) | p`.
        let nested = bit(
            BitOp::Or,
            32,
            vec![
                bit(BitOp::And, 32, vec![b(p.clone()), b(q.clone())]),
                b(p.clone()),
            ],
        );
        assert_eq!(
            logical_bits(&nested),
            b(or(vec![and(vec![p.clone(), q.clone()]), p.clone()]))
        );
    }

    #[test]
    fn other_bitwise_operations_are_kept() {
        let p = lt(Term::var("x"), Term::var("w"));
        // `x & (p?1:0)`: `x` need not be 0 or 1.
        let mixed = bit(BitOp::And, 32, vec![Term::var("x"), b(p.clone())]);
        assert_eq!(logical_bits(&mixed), mixed);
        // One bit, signed: 1 reads back as -1.
        let narrow = Term::Bit {
            op: BitOp::And,
            width: 1,
            signed: true,
            args: vec![b(p.clone()), b(p.clone())].into(),
        };
        assert_eq!(logical_bits(&narrow), narrow);
        let shift = bit(BitOp::Shl, 32, vec![b(p.clone()), int(1)]);
        assert_eq!(logical_bits(&shift), shift);
    }

    /// The rewrite keeps values: every assignment of two comparisons gives the same result as
    /// the bitwise operator on 0 and 1.
    #[test]
    fn rewrite_agrees_with_bitwise_values() {
        for op in [BitOp::And, BitOp::Or, BitOp::Xor] {
            for (x, y) in [(false, false), (false, true), (true, false), (true, true)] {
                let t = bit(op, 32, vec![b(Term::Bool(x)), b(Term::var("c"))]);
                let r = logical_bits(&t);
                let value = |c: bool| -> i64 {
                    let s =
                        crate::terms::subst_with(&r, &mut |v| (v == "c").then_some(Term::Bool(c)));
                    match s {
                        Term::Int(v) => v,
                        other => panic!("not folded: {other:?}"),
                    }
                };
                let (xi, yi) = (x as i64, y as i64);
                let want = match op {
                    BitOp::And => xi & yi,
                    BitOp::Or => xi | yi,
                    _ => xi ^ yi,
                };
                assert_eq!(value(y), want, "{op:?} {x} {y}");
            }
        }
    }
}
