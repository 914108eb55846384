//! Loop recognition: from a head variable's first value and its value at the end of an iteration,
//! the range the variable can take at the head of any iteration.
//!
//! - `h + c` (`i += c`, `i++`, `i -= c`): `h = init + k·c` by RESIDUE, `(h - init) mod c = 0` with
//!   `h ≥ init` (or `≤` for negative steps), never with an iteration counter (NOTES: 1 ms vs 277 ms);
//! - `h · k` (`*= 2`, `<<= 1`): powers of `k` times `init` (exactly powers of two from 1);
//! - `h / k` (`/= 2`, `>>= 1`): between 0 and `init`.
//!   Anything else keeps only the loop condition (a sound over-approximation).

use crate::terms::*;
use cudarace_solver::Term;
use std::sync::Arc;

/// Is `t` positive by its shape (launch sizes and positive constants, multiplied or added)?
pub fn positive(t: &Term) -> bool {
    match t {
        Term::Int(v) => *v > 0,
        Term::Var(v) => v.starts_with("blockDim.") || v.starts_with("gridDim."),
        Term::Mul(ts) | Term::Add(ts) => !ts.is_empty() && ts.iter().all(positive),
        _ => false,
    }
}

fn is_var(t: &Term, name: &str) -> bool {
    matches!(t, Term::Var(v) if &**v == name)
}

/// `0 <= init < step` by shape, for the classic strides: `tid` with step `blockDim`, and
/// `bid*blockDim + tid` with step `blockDim*gridDim` (same dimension). Then the residue is
/// written `h mod step == init`, which Z3 decides in milliseconds (NOTES.md), where
/// `h mod step == init mod step` needs nonlinear reasoning about `init mod step`.
pub fn fits_below(init: &Term, step: &Term) -> bool {
    for d in ["x", "y", "z"] {
        let tid = format!("$tid.{d}");
        let bid = format!("%bid.{d}");
        let bdim = format!("blockDim.{d}");
        let gdim = format!("gridDim.{d}");
        if is_var(init, &tid) && is_var(step, &bdim) {
            return true;
        }
        let is_product = |t: &Term, a: &str, b: &str| match t {
            Term::Mul(ts) if ts.len() == 2 => {
                (is_var(&ts[0], a) && is_var(&ts[1], b)) || (is_var(&ts[0], b) && is_var(&ts[1], a))
            }
            _ => false,
        };
        if let Term::Add(ts) = init {
            if ts.len() == 2 && is_product(step, &bdim, &gdim) {
                let ok = |p: &Term, t: &Term| is_product(p, &bid, &bdim) && is_var(t, &tid);
                if ok(&ts[0], &ts[1]) || ok(&ts[1], &ts[0]) {
                    return true;
                }
            }
        }
    }
    false
}

/// The step of an arithmetic induction: `end = h + c` with `c` free of `h`.
pub fn additive_step(h: &Term, end: &Term) -> Option<Term> {
    let name = match h {
        Term::Var(n) => &**n,
        _ => return None,
    };
    match end {
        Term::Add(ts) if ts.len() == 2 => {
            let (a, b) = (&ts[0], &ts[1]);
            if a == h && !mentions_var(b, name) {
                Some(b.clone())
            } else if b == h && !mentions_var(a, name) {
                Some(a.clone())
            } else {
                None
            }
        }
        Term::Sub(a, b) if **a == *h && !mentions_var(b, name) => Some(match &**b {
            Term::Int(v) => int(v.checked_neg()?),
            other => Term::Neg(Arc::new(other.clone())),
        }),
        _ => None,
    }
}

fn multiplier(h: &Term, end: &Term) -> Option<i64> {
    match end {
        Term::Mul(ts) if ts.len() == 2 => match (&ts[0], &ts[1]) {
            (a, Term::Int(k)) | (Term::Int(k), a) if a == h && *k >= 2 => Some(*k),
            _ => None,
        },
        _ => None,
    }
}

fn divisor(h: &Term, end: &Term) -> Option<i64> {
    match end {
        Term::Div(a, b) if **a == *h => match **b {
            Term::Int(k) if k >= 2 => Some(k),
            _ => None,
        },
        _ => None,
    }
}

/// The range constraint of head variable `h`, or `None` when the update is not recognized.
pub fn induction_range(h: &Term, init: &Term, end: &Term) -> Option<Term> {
    if end == h {
        // Not changed by the loop (only conditionally assigned elsewhere would not reach here).
        return Some(eq(h.clone(), init.clone()));
    }
    if let Some(step) = additive_step(h, end) {
        let name = match h {
            Term::Var(n) => n.clone(),
            _ => return None,
        };
        if mentions_var(init, &name) {
            return None;
        }
        return Some(match as_int(&step) {
            Some(0) => eq(h.clone(), init.clone()),
            Some(1) => le(init.clone(), h.clone()),
            Some(-1) => le(h.clone(), init.clone()),
            Some(c) if c > 0 => and(vec![
                le(init.clone(), h.clone()),
                eq(modulo(sub(h.clone(), init.clone()), int(c)), int(0)),
            ]),
            Some(c) => and(vec![
                le(h.clone(), init.clone()),
                eq(
                    modulo(sub(init.clone(), h.clone()), int(c.checked_neg()?)),
                    int(0),
                ),
            ]),
            None if fits_below(init, &step) => and(vec![
                le(init.clone(), h.clone()),
                eq(modulo(h.clone(), step), init.clone()),
            ]),
            None if positive(&step) => and(vec![
                le(init.clone(), h.clone()),
                eq(modulo(h.clone(), step.clone()), modulo(init.clone(), step)),
            ]),
            None => or(vec![
                and(vec![
                    lt(int(0), step.clone()),
                    le(init.clone(), h.clone()),
                    eq(
                        modulo(h.clone(), step.clone()),
                        modulo(init.clone(), step.clone()),
                    ),
                ]),
                and(vec![
                    lt(step.clone(), int(0)),
                    le(h.clone(), init.clone()),
                    eq(
                        modulo(
                            sub(init.clone(), h.clone()),
                            Term::Neg(Arc::new(step.clone())),
                        ),
                        int(0),
                    ),
                ]),
                and(vec![eq(step, int(0)), eq(h.clone(), init.clone())]),
            ]),
        });
    }
    if let Some(k) = multiplier(h, end) {
        // Powers of k times init: kept linear (`h >= init`, `h mod init == 0`, even beyond the
        // first iteration). The exact bit-level fact `h & (h-1) == 0` ([`power_of_two`]) made
        // Z3 4.8.12 time out on Blelloch-scan queries that `h >= 1` alone answers in ms.
        return Some(match as_int(init) {
            Some(c) if c >= 1 => and(vec![
                le(int(c), h.clone()),
                eq(modulo(h.clone(), int(c)), int(0)),
                or(vec![
                    eq(h.clone(), int(c)),
                    eq(modulo(h.clone(), int(c * k)), int(0)),
                ]),
            ]),
            Some(c) => and(vec![le(h.clone(), int(c))]),
            None => or(vec![
                and(vec![
                    le(int(1), init.clone()),
                    le(init.clone(), h.clone()),
                    eq(modulo(h.clone(), init.clone()), int(0)),
                ]),
                and(vec![le(init.clone(), int(0)), le(h.clone(), init.clone())]),
            ]),
        });
    }
    if divisor(h, end).is_some() {
        return Some(or(vec![
            and(vec![
                le(int(0), init.clone()),
                le(int(0), h.clone()),
                le(h.clone(), init.clone()),
            ]),
            and(vec![
                lt(init.clone(), int(0)),
                le(init.clone(), h.clone()),
                le(h.clone(), int(0)),
            ]),
        ]));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h() -> Term {
        Term::var("%loop.i@1")
    }

    #[test]
    fn strided_loop_is_a_residue() {
        let init = Term::var("$tid.x");
        let step = Term::var("blockDim.x");
        let end = add(h(), step.clone());
        let r = induction_range(&h(), &init, &end).expect("recognized");
        let text = format!("{r:?}");
        assert!(text.contains("Mod"), "{text}");
        assert!(!text.contains("@2"), "no iteration counter: {text}");
    }

    #[test]
    fn doubling_from_one_stays_positive_and_even() {
        let end = mul(h(), int(2));
        let r = induction_range(&h(), &int(1), &end).expect("recognized");
        let text = crate::terms::show(&r);
        assert!(text.contains("(1 <= %loop.i@1)"), "{text}");
        assert!(text.contains("mod 2"), "{text}");
    }

    #[test]
    fn halving_stays_between_zero_and_init() {
        let end = div(h(), int(2));
        let r = induction_range(&h(), &Term::var("blockDim.x"), &end).expect("recognized");
        assert!(format!("{r:?}").contains("blockDim.x"));
    }

    #[test]
    fn unrecognized_update_gives_none() {
        let end = sub(int(1), h());
        assert_eq!(induction_range(&h(), &int(0), &end), None);
    }
}
