//! C integer types of IR expressions, value intervals of terms, and the wraparound of unsigned
//! arithmetic.
//!
//! Values are mathematical integers (NOTES.md). C's unsigned arithmetic is modulo 2^bits, and
//! the usual arithmetic conversions turn `int` operands into `unsigned` when the other operand
//! is unsigned (`threadIdx.x`, `blockDim.x` are `unsigned int`): `threadIdx.x - 1` is UINT_MAX at
//! thread 0, `tid < blockDim.x - 3` compares unsigned. Modelled here, cheaply:
//! - an unsigned result that may be negative becomes `ite(x < 0, x + 2^bits, x)` (exact when
//!   `x >= -2^bits`, e.g. a difference of in-range values); when the interval of `x` is
//!   non-negative nothing is added (the common, linear case);
//! - a signed value converted to unsigned (comparisons, assignments, casts) likewise;
//! - an unsigned value converted back to a signed type is wrapped back (`int t = threadIdx.x -
//!   1` is -1 at thread 0): the `ite` form above is undone.
//!
//! Not modelled (documented approximation): overflow past the top of a type (`i + blockDim.x`
//! beyond 2^31 - 1 in an `int` loop counter, products beyond 2^32, an unsigned value above
//! INT_MAX converted to `int`). Index arithmetic of real kernels stays far below; modelling it
//! would turn every strided loop and every xor partner index nonlinear.

use crate::terms::*;
use cudarace_ir::ScalarType;
use cudarace_solver::Term;

/// An integer C type after promotion (`bits` is 32 or 64).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CTy {
    pub bits: u8,
    pub signed: bool,
}

impl CTy {
    pub const INT: CTy = CTy {
        bits: 32,
        signed: true,
    };
    pub const UINT: CTy = CTy {
        bits: 32,
        signed: false,
    };
    pub const LONG: CTy = CTy {
        bits: 64,
        signed: true,
    };

    /// The type of a declared scalar (`None`: floats, pointers, structs — values not wrapped).
    /// Narrow types are kept as declared for conversions (`unsigned char`), see [`CTy::promoted`].
    pub fn of(ty: ScalarType) -> Option<CTy> {
        match ty {
            ScalarType::Int { bits, signed } if (1..=64).contains(&bits) => {
                Some(CTy { bits, signed })
            }
            ScalarType::Bool => Some(CTy::INT),
            _ => None,
        }
    }

    /// Integer promotion: narrower than `int` becomes `int`.
    pub fn promoted(self) -> CTy {
        if self.bits < 32 {
            CTy::INT
        } else {
            self
        }
    }

    /// The common type of the usual arithmetic conversions.
    pub fn common(a: Option<CTy>, b: Option<CTy>) -> Option<CTy> {
        let (a, b) = (a?.promoted(), b?.promoted());
        if a == b {
            return Some(a);
        }
        if a.signed == b.signed {
            return Some(if a.bits >= b.bits { a } else { b });
        }
        let (s, u) = if a.signed { (a, b) } else { (b, a) };
        Some(if u.bits >= s.bits { u } else { s })
    }
}

/// `2^bits` as a term (2^64 does not fit an `i64` literal: written as a product).
fn modulus(bits: u8) -> Term {
    if bits < 63 {
        int(1i64 << bits)
    } else {
        Term::Mul(vec![int(1i64 << 62), int(1i64 << (bits - 62))].into())
    }
}

/// An interval of values; `None` bounds are unknown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Range {
    pub lo: Option<i128>,
    pub hi: Option<i128>,
}

impl Range {
    pub const ANY: Range = Range { lo: None, hi: None };
    pub fn exact(v: i128) -> Range {
        Range {
            lo: Some(v),
            hi: Some(v),
        }
    }
    pub fn new(lo: i128, hi: i128) -> Range {
        Range {
            lo: Some(lo),
            hi: Some(hi),
        }
    }
    /// The values in both (an empty meet, on an infeasible path, is returned as it is).
    pub fn meet(self, o: Range) -> Range {
        let max = |a: Option<i128>, b: Option<i128>| match (a, b) {
            (Some(x), Some(y)) => Some(x.max(y)),
            (x, None) | (None, x) => x,
        };
        let min = |a: Option<i128>, b: Option<i128>| match (a, b) {
            (Some(x), Some(y)) => Some(x.min(y)),
            (x, None) | (None, x) => x,
        };
        Range {
            lo: max(self.lo, o.lo),
            hi: min(self.hi, o.hi),
        }
    }
    fn union(self, o: Range) -> Range {
        Range {
            lo: self.lo.zip(o.lo).map(|(a, b)| a.min(b)),
            hi: self.hi.zip(o.hi).map(|(a, b)| a.max(b)),
        }
    }
}

/// Interval of a term, given the intervals of its variables (`var`).
pub fn range_of(t: &Term, var: &dyn Fn(&str) -> Range) -> Range {
    range_within(t, var, &|_| Range::ANY)
}

/// Interval of a term, given the intervals of its variables (`var`) and bounds known of some
/// compound terms (`known`: what the path condition says of a loop bound `S` inside
/// `for (s = 0; s < S; …)`, so that `S * blockIdx.x` is known non-negative there).
pub fn range_within(
    t: &Term,
    var: &dyn Fn(&str) -> Range,
    known: &dyn Fn(&Term) -> Range,
) -> Range {
    let r = range_by_shape(t, var, known);
    match t {
        Term::Int(_) | Term::Bool(_) | Term::Var(_) => r,
        _ => r.meet(known(t)),
    }
}

fn range_by_shape(t: &Term, var: &dyn Fn(&str) -> Range, known: &dyn Fn(&Term) -> Range) -> Range {
    let r = |x: &Term| range_within(x, var, known);
    let add2 = |a: Range, b: Range| Range {
        lo: a.lo.zip(b.lo).map(|(x, y)| x.saturating_add(y)),
        hi: a.hi.zip(b.hi).map(|(x, y)| x.saturating_add(y)),
    };
    let neg = |a: Range| Range {
        lo: a.hi.map(|x| -x),
        hi: a.lo.map(|x| -x),
    };
    let mul2 = |a: Range, b: Range| match (a.lo, a.hi, b.lo, b.hi) {
        (Some(a0), Some(a1), Some(b0), Some(b1)) => {
            let ps = [
                a0.saturating_mul(b0),
                a0.saturating_mul(b1),
                a1.saturating_mul(b0),
                a1.saturating_mul(b1),
            ];
            Range::new(
                ps.iter().copied().min().unwrap_or(0),
                ps.iter().copied().max().unwrap_or(0),
            )
        }
        // Non-negative factors with an open top: the product is non-negative.
        (Some(a0), _, Some(b0), _) if a0 >= 0 && b0 >= 0 => Range {
            lo: Some(a0.saturating_mul(b0)),
            hi: a.hi.zip(b.hi).map(|(x, y)| x.saturating_mul(y)),
        },
        _ => Range::ANY,
    };
    match t {
        Term::Int(v) => Range::exact(*v as i128),
        Term::Bool(_) => Range::new(0, 1),
        Term::Var(v) => var(v),
        Term::Add(ts) => ts.iter().map(r).reduce(add2).unwrap_or(Range::exact(0)),
        Term::Mul(ts) => ts.iter().map(r).reduce(mul2).unwrap_or(Range::exact(1)),
        Term::Sub(a, b) => add2(r(a), neg(r(b))),
        Term::Neg(a) => neg(r(a)),
        Term::Div(a, b) => {
            let (ra, rb) = (r(a), r(b));
            // Truncating division by a positive divisor moves toward zero.
            // (Division by zero is undefined behaviour: divisors are taken to be non-zero.)
            if rb.lo.is_some_and(|x| x >= 0) {
                Range {
                    lo: ra.lo.map(|x| x.min(0)),
                    hi: ra.hi.map(|x| x.max(0)),
                }
            } else {
                Range::ANY
            }
        }
        // SMT `mod` lies in [0, |b|) for b != 0 (b == 0: division by zero, undefined in C).
        Term::Mod(_, b) => match r(b) {
            Range {
                lo: Some(l),
                hi: Some(h),
            } => Range::new(0, (l.abs().max(h.abs()) - 1).max(0)),
            _ => Range {
                lo: Some(0),
                hi: None,
            },
        },
        Term::Rem(a, b) => {
            let (ra, rb) = (r(a), r(b));
            match (rb.lo, rb.hi) {
                (Some(l), Some(h)) => {
                    let m = l.abs().max(h.abs()).saturating_sub(1);
                    let lo = if ra.lo.is_some_and(|x| x >= 0) { 0 } else { -m };
                    let hi = if ra.hi.is_some_and(|x| x <= 0) { 0 } else { m };
                    Range::new(lo, hi)
                }
                _ => Range::ANY,
            }
        }
        Term::Ite(..) if as_flip_bit(t).is_some() => {
            // `t ^ p` of non-negative values (see `flip_bit`): non-negative, below `t + p`.
            let (x, p) = as_flip_bit(t).unwrap_or((int(0), int(0)));
            Range {
                lo: Some(0),
                hi: r(&x).hi.zip(r(&p).hi).map(|(a, b)| a.saturating_add(b)),
            }
        }
        Term::Ite(..) => {
            // Our own unsigned wrap: the negative part moves up by 2^bits.
            for bits in [32u8, 64] {
                if let Some(x) = unwrap_low(t, bits) {
                    let rx = r(x);
                    let m = 1i128 << bits;
                    let up = Range {
                        lo: rx.lo.map(|l| l + m),
                        hi: rx.hi.map(|h| h.min(-1) + m),
                    };
                    return match rx.hi {
                        Some(h) if h < 0 => up,
                        _ => Range {
                            lo: rx.lo.map(|l| l.max(0)),
                            hi: rx.hi,
                        }
                        .union(up),
                    };
                }
            }
            let Term::Ite(_, a, b) = t else {
                return Range::ANY;
            };
            r(a).union(r(b))
        }
        Term::Bit {
            width,
            signed: false,
            ..
        } if *width < 64 => Range::new(0, (1i128 << width) - 1),
        Term::Eq(..)
        | Term::Lt(..)
        | Term::Le(..)
        | Term::And(_)
        | Term::Or(_)
        | Term::Not(_)
        | Term::Implies(..) => Range::new(0, 1),
        Term::Bit { .. } => Range::ANY,
    }
}

/// The `x` of a [`low_wrap`] `ite(x < 0, x + 2^bits, x)`.
pub fn unwrap_low(t: &Term, bits: u8) -> Option<&Term> {
    let Term::Ite(c, a, b) = t else { return None };
    let Term::Lt(x, z) = &**c else { return None };
    if **z != int(0) || **x != **b || **a != add((**x).clone(), modulus(bits)) {
        return None;
    }
    Some(x)
}

/// `t` as an unsigned `bits`-bit value: negative values wrap (see the module doc).
pub fn low_wrap(t: Term, bits: u8, r: Range) -> Term {
    if r.lo.is_some_and(|l| l >= 0) {
        return t;
    }
    if let Term::Int(v) = t {
        if bits < 63 {
            return int(v.rem_euclid(1i64 << bits));
        }
    }
    // Exact for `x >= -2^bits` (differences of in-range values); below that, the value has
    // overflowed a type on the way, which is not modelled (module doc). A general `mod 2^bits`
    // here would make every product with a loop counter nonlinear modulo arithmetic.
    let m = modulus(bits);
    ite(lt(t.clone(), int(0)), add(t.clone(), m), t)
}

/// Convert `t` to type `to` (see the module doc); `range` gives intervals of terms.
pub fn convert(t: Term, to: Option<CTy>, range: &dyn Fn(&Term) -> Range) -> Term {
    let Some(to) = to else { return t };
    if to.bits < 8 {
        return t;
    }
    if !to.signed {
        let r = range(&t);
        return low_wrap(t, to.bits, r);
    }
    // To a signed type: undo our own unsigned wrap (exact for values in the signed range;
    // beyond it, overflow is not modelled, see the module doc).
    for bits in [32u8, 64] {
        if bits <= to.bits {
            if let Some(x) = unwrap_low(&t, bits) {
                return x.clone();
            }
        }
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(v: &str) -> Range {
        match v {
            "$tid.x" => Range::new(0, 1023),
            _ => Range::ANY,
        }
    }

    fn terms(t: &Term) -> Range {
        range_of(t, &vars)
    }

    #[test]
    fn unsigned_difference_wraps_and_converts_back() {
        let x = sub(Term::var("$tid.x"), int(1));
        let u = convert(x.clone(), Some(CTy::UINT), &terms);
        assert_ne!(u, x, "may be negative: wrapped");
        assert_eq!(range_of(&u, &vars), Range::new(0, (1 << 32) - 1));
        assert_eq!(
            convert(u, Some(CTy::INT), &terms),
            x,
            "back to int: -1 again"
        );
        let y = add(Term::var("$tid.x"), int(1));
        assert_eq!(
            convert(y.clone(), Some(CTy::UINT), &terms),
            y,
            "non-negative: unchanged"
        );
        assert_eq!(convert(int(-1), Some(CTy::UINT), &terms), int(4294967295));
    }

    #[test]
    fn a_bound_known_of_a_compound_term_keeps_its_product_unwrapped() {
        // `s < S` with `0 <= s` inside the loop: `S >= 1`, so `S * tid` is not negative.
        let big_s = sub(mul(Term::var("p.n"), Term::var("p.m")), int(1));
        let known = |t: &Term| {
            if *t == big_s {
                Range {
                    lo: Some(1),
                    hi: None,
                }
            } else {
                Range::ANY
            }
        };
        let product = mul(big_s.clone(), Term::var("$tid.x"));
        let unknown = convert(product.clone(), Some(CTy::UINT), &terms);
        assert_ne!(unknown, product, "may be negative: wrapped");
        let within = |t: &Term| range_within(t, &vars, &known);
        assert_eq!(convert(product.clone(), Some(CTy::UINT), &within), product);
    }

    #[test]
    fn common_type_follows_c() {
        assert_eq!(
            CTy::common(Some(CTy::INT), Some(CTy::UINT)),
            Some(CTy::UINT)
        );
        assert_eq!(
            CTy::common(Some(CTy::LONG), Some(CTy::UINT)),
            Some(CTy::LONG)
        );
        assert_eq!(CTy::common(None, Some(CTy::UINT)), None);
    }
}
