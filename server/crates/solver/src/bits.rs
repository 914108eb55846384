//! Bitwise operators in the encoding: as bit-vectors (`int2bv`/`bv2int`), or, where that is
//! exact, in integer arithmetic, which Z3 4.8.12 handles far better (bridging integers and
//! bit-vectors costs it seconds): constants folded, shifts as one case per amount, `&`, `|`,
//! `^` with a constant through the runs of the constant's ones, and `|`, `^`, `&` of operands
//! whose bits cannot overlap (packed bit fields) as sums and zeros. Only `&`, `|`, `^` of two
//! unknowns whose bits may overlap are left to bit-vectors.

use z3::ast::{Bool, Int, BV};

use crate::term::{BitOp, Term};

/// Bitwise operators: the integer operands are wrapped into `width`-bit two's complement
/// (`int2bv` reduces modulo 2^width, which is exactly C's conversion to a `width`-bit type),
/// the operation is done on bit-vectors, and the result is read back as a signed or unsigned
/// integer.
pub(crate) fn bit(op: BitOp, signed: bool, bvs: Vec<BV>) -> Result<Int, String> {
    let arity_err = |want: &str| {
        Err(format!(
            "bitwise {op:?} needs {want} operand(s), got {}",
            bvs.len()
        ))
    };
    let r = match op {
        BitOp::Not => match bvs.as_slice() {
            [a] => a.bvnot(),
            _ => return arity_err("1"),
        },
        BitOp::Shl | BitOp::Shr => match bvs.as_slice() {
            [a, b] => match (op, signed) {
                (BitOp::Shl, _) => a.bvshl(b),
                (_, true) => a.bvashr(b),
                (_, false) => a.bvlshr(b),
            },
            _ => return arity_err("2"),
        },
        BitOp::And | BitOp::Or | BitOp::Xor => {
            let mut it = bvs.iter();
            let Some(first) = it.next() else {
                return arity_err("at least 1");
            };
            it.fold(first.clone(), |acc, b| match op {
                BitOp::And => acc.bvand(b),
                BitOp::Or => acc.bvor(b),
                _ => acc.bvxor(b),
            })
        }
    };
    Ok(r.to_int(signed))
}

/// Widths up to which [`integer_bits`] writes bitwise operators in integer arithmetic (its
/// constants, `2^width` and below, fit an `i64`).
const MAX_INTEGER_WIDTH: u32 = 62;

/// A bitwise operation written in integer arithmetic, exactly as [`bit`] computes it, when
/// that needs no bit-vector: every operand a constant (a probe or a launch site substituted
/// sizes: `1 << (2 + 2)`), one constant operand of `&`, `|`, `^` (see [`with_constant`]), or a
/// shift (by a constant, or by a symbolic amount as one case per amount below the width). Z3 4.8.12 bridges integers and bit-vectors (`int2bv`/`bv2int`)
/// slowly, above all when the answer is sat: a radix sort's `(key >> shift) & 255` counter
/// index, sat, had no answer in 30 s with the bit-vectors and 0.1 s with the 32 cases of
/// `shift` (each a division by a constant). `None`: anything else (bit-vectors then).
/// `consts` are the operands' values where they are constants.
pub(crate) fn integer_bits(
    op: BitOp,
    signed: bool,
    w: u32,
    args: &[Int],
    consts: &[Option<i64>],
) -> Option<Int> {
    if w > MAX_INTEGER_WIDTH || consts.len() != args.len() {
        return None;
    }
    if let Some(values) = consts.iter().copied().collect::<Option<Vec<i64>>>() {
        return fold_bits(op, signed, w, &values).map(Int::from_i64);
    }
    let n = Int::from_i64;
    let modulus = n(1i64 << w);
    let half = n(1i64 << (w - 1));
    // `x mod 2^w` behind the test that it is needed: the operands are mostly in range
    // already (wrapped unsigned values, sizes), and the `smt` tactic (the fast engine) needs
    // seconds where a bare `mod` by 2^32 of a shifted operand splits its cases (the radix sort
    // query above: no answer in 30 s with `mod`, 0.1 s with the test).
    let unsigned = |x: &Int| {
        let fits = Bool::and(&[x.ge(n(0)), x.lt(&modulus)]);
        fits.ite(x, &x.modulo(&modulus))
    };
    let read_back = |r: Int| match signed {
        true => r
            .ge(&half)
            .ite(&Int::sub(&[r.clone(), modulus.clone()]), &r),
        false => r,
    };
    if let (BitOp::And | BitOp::Or | BitOp::Xor, [x, _], [None, Some(c)])
    | (BitOp::And | BitOp::Or | BitOp::Xor, [_, x], [Some(c), None]) = (op, args, consts)
    {
        return with_constant(op, w, x, *c, &unsigned).map(read_back);
    }
    let (BitOp::Shl | BitOp::Shr, [a, b]) = (op, args) else {
        return None;
    };
    let a_u = unsigned(a);
    // What `bvashr` shifts: the operand's signed value; floor division by 2^k is the
    // arithmetic shift. Results of a logical shift stay unsigned (read back as `bit` does).
    let a_s = a_u
        .ge(&half)
        .ite(&Int::sub(&[a_u.clone(), modulus.clone()]), &a_u);
    let shifted = |k: u32| -> Int {
        let p = n(1i64 << k);
        match (op, signed) {
            (BitOp::Shl, _) => read_back(unsigned(&Int::mul(&[a_u.clone(), p]))),
            (_, true) => a_s.div(&p),
            (_, false) => a_u.div(&p),
        }
    };
    // A shift by the width or more: `bvshl`/`bvlshr` give 0, `bvashr` the sign (C leaves it
    // undefined; this keeps the bit-vector answer).
    let beyond = match (op, signed) {
        (BitOp::Shr, true) => a_s.lt(n(0)).ite(&n(-1), &n(0)),
        _ => n(0),
    };
    let amount = unsigned(b);
    if let Some(k) = consts[1] {
        let k = u32::try_from(k.rem_euclid(1i64 << w)).ok()?;
        return Some(if k < w { shifted(k) } else { beyond });
    }
    Some((0..w).rev().fold(beyond, |rest, k| {
        amount.eq(n(i64::from(k))).ite(&shifted(k), &rest)
    }))
}

/// Runs of one bits in a constant mask, at most, for [`with_constant`].
const MAX_MASK_RUNS: usize = 8;

/// `x & c`, `x | c`, `x ^ c` for a constant `c`, as the unsigned `w`-bit result, in integer
/// arithmetic: the bits of `x` under each run `lo..hi` of ones in `c` are
/// `x mod 2^hi - x mod 2^lo` (the low bits of two's complement, for either sign of `x`), so
/// `x & c` is their sum, `x | c == x + c - (x & c)` and `x ^ c == x + c - 2 (x & c)` (no carry
/// leaves the width). `bottom & -32` (rounding down to a warp), `x & 0xF0`, `x | 1`, `x ^ 3`.
/// `None` for a mask of more than [`MAX_MASK_RUNS`] runs.
fn with_constant(
    op: BitOp,
    w: u32,
    x: &Int,
    c: i64,
    unsigned: &dyn Fn(&Int) -> Int,
) -> Option<Int> {
    let n = Int::from_i64;
    let c = u64::try_from(i128::from(c) & ((1i128 << w) - 1)).ok()?;
    let mut runs = Vec::new();
    let mut bit = 0;
    while bit < w {
        if c >> bit & 1 == 1 {
            let lo = bit;
            while bit < w && c >> bit & 1 == 1 {
                bit += 1;
            }
            runs.push((lo, bit));
        } else {
            bit += 1;
        }
    }
    if runs.len() > MAX_MASK_RUNS {
        return None;
    }
    let x_u = unsigned(x);
    // The low `j` bits of `x`.
    let low = |j: u32| match j {
        0 => n(0),
        j if j == w => x_u.clone(),
        j => x.modulo(n(1i64 << j)),
    };
    let parts: Vec<Int> = runs
        .iter()
        .map(|&(lo, hi)| Int::sub(&[low(hi), low(lo)]))
        .collect();
    let and = match parts.len() {
        0 => n(0),
        _ => Int::add(&parts),
    };
    let c = n(i64::try_from(c).ok()?);
    Some(match op {
        BitOp::And => and,
        BitOp::Or => Int::sub(&[Int::add(&[x_u, c]), and]),
        _ => Int::sub(&[Int::add(&[x_u, c]), Int::mul(&[n(2), and])]),
    })
}

/// `|`, `^` and `&` of operands whose bits cannot overlap, in integer arithmetic: the sum of
/// the operands for `|` and `^` (no carries), 0 for `&`. Bit fields packed into one word,
/// `flags | ((x & 1) << 8) | ((y & 1) << 4)`, are built so (OpenCV's FAST corner mask: sixteen
/// of them). `masks` are the operands' [`may_bits`]. `None`: not provably disjoint.
pub(crate) fn disjoint_bits(
    op: BitOp,
    signed: bool,
    w: u32,
    args: &[Int],
    masks: &[Option<u64>],
) -> Option<Int> {
    if w > MAX_INTEGER_WIDTH || masks.len() != args.len() || args.is_empty() {
        return None;
    }
    // Values the read-back leaves as they are: below 2^w, or 2^(w-1) when read signed.
    let limit = 1u64 << if signed { w - 1 } else { w };
    match op {
        BitOp::Or | BitOp::Xor => {
            let masks = masks.iter().copied().collect::<Option<Vec<u64>>>()?;
            let mut seen = 0u64;
            for m in &masks {
                if seen & m != 0 {
                    return None;
                }
                seen |= m;
            }
            (seen < limit).then(|| Int::add(args))
        }
        // The bits of `a & b` are among those of every operand whose bits are known, whatever
        // the others are (a negative one included).
        BitOp::And => {
            let known = masks
                .iter()
                .flatten()
                .fold(None, |acc: Option<u64>, m| Some(acc.map_or(*m, |a| a & m)))?;
            (known == 0).then(|| Int::from_i64(0))
        }
        _ => None,
    }
}

/// Terms visited at most when [`may_bits`] looks at one operand (a chain of sixteen `|` is
/// looked at again from each link).
const MAY_BITS_BUDGET: usize = 2_048;

/// The bits that may be 1 in `t`'s value, when it is known to be non-negative and below 2^62
/// (`None` otherwise, or past `budget` terms): `x % 16` may set the low four bits, `b * 256`
/// with `b` in 0..=1 bit 8, a sum of operands with disjoint bits their union; any other sum or
/// product of bounded operands every bit up to its largest value.
pub(crate) fn may_bits(t: &Term, values: &[(String, i64)]) -> Option<u64> {
    may_bits_within(t, values, &mut { MAY_BITS_BUDGET })
}

fn may_bits_within(t: &Term, values: &[(String, i64)], budget: &mut usize) -> Option<u64> {
    const TOP: u64 = 1 << 62;
    // Every bit up to the highest of `v`.
    let upto = |v: u64| {
        (v < TOP).then(|| {
            if v == 0 {
                0
            } else {
                u64::MAX >> v.leading_zeros()
            }
        })
    };
    let constant = |v: i64| u64::try_from(v).ok().filter(|v| *v < TOP);
    if *budget == 0 {
        return None;
    }
    *budget -= 1;
    let mut go = |x: &Term| may_bits_within(x, values, budget);
    match t {
        Term::Int(v) => constant(*v),
        Term::Var(n) => values
            .iter()
            .find(|(m, _)| **m == **n)
            .and_then(|(_, v)| constant(*v)),
        // SMT `mod` by a positive constant is in 0..m, whatever the dividend's sign.
        Term::Mod(_, m) => match &**m {
            Term::Int(m) if *m > 0 => upto(*m as u64 - 1),
            _ => None,
        },
        // C division of a non-negative value by a positive constant.
        Term::Div(a, m) => match &**m {
            Term::Int(m) if *m > 0 => upto(go(a)? / *m as u64),
            _ => None,
        },
        Term::Ite(_, a, b) => Some(go(a)? | go(b)?),
        Term::Add(ts) => {
            let masks = ts.iter().map(&mut go).collect::<Option<Vec<u64>>>()?;
            let mut union = 0u64;
            let mut disjoint = true;
            let mut sum = 0u64;
            for m in masks {
                disjoint &= union & m == 0;
                union |= m;
                sum = sum.checked_add(m)?;
            }
            if disjoint {
                Some(union)
            } else {
                upto(sum)
            }
        }
        Term::Mul(ts) => {
            // A power-of-two constant factor shifts the bits of the rest; other factors
            // multiply their largest values.
            let masks = ts.iter().map(&mut go).collect::<Option<Vec<u64>>>()?;
            let mut shift = 0u32;
            let mut others = Vec::new();
            for (t, m) in ts.iter().zip(&masks) {
                match t {
                    Term::Int(_) if m.is_power_of_two() => shift += m.trailing_zeros(),
                    _ => others.push(*m),
                }
            }
            let rest = match others.as_slice() {
                [] => 1,
                [m] => *m,
                ms => upto(ms.iter().try_fold(1u64, |a, m| a.checked_mul(*m))?)?,
            };
            if shift >= 62 || rest >= TOP >> shift {
                return None;
            }
            Some(rest << shift)
        }
        // What the operator's width reads back unchanged: values below 2^(w-1), whether read
        // signed or not.
        Term::Bit {
            op, width, args, ..
        } if *width >= 2 => {
            let limit = 1u64 << (u32::from(*width) - 1).min(62);
            let m = match op {
                BitOp::Or | BitOp::Xor => args
                    .iter()
                    .map(&mut go)
                    .try_fold(0u64, |a, m| Some(a | m?))?,
                // The known operands bound the result, whatever the others are.
                BitOp::And => args
                    .iter()
                    .filter_map(&mut go)
                    .fold(None, |acc: Option<u64>, m| Some(acc.map_or(m, |a| a & m)))?,
                _ => return None,
            };
            (m < limit).then_some(m)
        }
        _ => None,
    }
}

/// Terms visited at most when [`constant_value`] evaluates a term (the terms are DAGs: shared
/// parts are visited once per path).
const CONSTANT_BUDGET: usize = 256;

/// The value of `t` when it is a constant once `values` are substituted (`None` otherwise, on
/// overflow, a division by zero, or past [`CONSTANT_BUDGET`] terms), with C's operators.
pub(crate) fn constant_value(t: &Term, values: &[(String, i64)]) -> Option<i64> {
    constant_within(t, values, &mut { CONSTANT_BUDGET })
}

fn constant_within(t: &Term, values: &[(String, i64)], budget: &mut usize) -> Option<i64> {
    if *budget == 0 {
        return None;
    }
    *budget -= 1;
    let mut go = |x: &Term| constant_within(x, values, budget);
    match t {
        Term::Int(v) => Some(*v),
        Term::Var(n) => values.iter().find(|(m, _)| **m == **n).map(|(_, v)| *v),
        Term::Add(ts) => ts.iter().try_fold(0i64, |a, x| a.checked_add(go(x)?)),
        Term::Mul(ts) => ts.iter().try_fold(1i64, |a, x| a.checked_mul(go(x)?)),
        Term::Sub(a, b) => go(a)?.checked_sub(go(b)?),
        Term::Neg(a) => go(a)?.checked_neg(),
        Term::Div(a, b) => go(a)?.checked_div(go(b)?),
        Term::Rem(a, b) => go(a)?.checked_rem(go(b)?),
        Term::Mod(a, b) => go(a)?.checked_rem_euclid(go(b)?),
        Term::Bit {
            op,
            width,
            signed,
            args,
        } => {
            let vs = args.iter().map(go).collect::<Option<Vec<i64>>>()?;
            fold_bits(*op, *signed, u32::from(*width), &vs)
        }
        _ => None,
    }
}

/// C's bitwise operators on values, as [`bit`] computes them: the `w`-bit two's complement of
/// each operand, the operation, and the result read back signed or unsigned (a shift by the
/// width or more: 0, or the sign for `>>` of a signed value). `None` when an operand count does
/// not fit the operator, the width is not 1 to 64, or the result does not fit an `i64` (an
/// unsigned 64-bit result of 2^63 or more). The checker evaluates witnesses with it too.
pub fn fold_bits(op: BitOp, signed: bool, w: u32, values: &[i64]) -> Option<i64> {
    if !(1..=64).contains(&w) {
        return None;
    }
    let mask = (1i128 << w) - 1;
    let u: Vec<i128> = values.iter().map(|v| i128::from(*v) & mask).collect();
    let as_signed = |x: i128| {
        if x >> (w - 1) & 1 == 1 {
            x - (1i128 << w)
        } else {
            x
        }
    };
    let r = match (op, u.as_slice()) {
        (BitOp::Not, [a]) => !a & mask,
        (BitOp::Shl, [a, b]) => match u32::try_from(*b) {
            Ok(k) if k < w => (a << k) & mask,
            _ => 0,
        },
        (BitOp::Shr, [a, b]) => {
            let k = u32::try_from(*b).ok().filter(|k| *k < w);
            match (signed, k) {
                (true, Some(k)) => (as_signed(*a) >> k) & mask,
                (true, None) => (as_signed(*a) >> (w - 1)) & mask,
                (false, Some(k)) => a >> k,
                (false, None) => 0,
            }
        }
        (BitOp::And | BitOp::Or | BitOp::Xor, [first, rest @ ..]) => {
            rest.iter().fold(*first, |acc, b| match op {
                BitOp::And => acc & b,
                BitOp::Or => acc | b,
                _ => acc ^ b,
            })
        }
        _ => return None,
    };
    i64::try_from(if signed { as_signed(r) } else { r }).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encode::{Encoder, Expr};
    use crate::term::Sort;
    use std::collections::BTreeMap;
    use z3::ast::Ast;

    const OPS: [(BitOp, bool); 4] = [
        (BitOp::Shl, false),
        (BitOp::Shl, true),
        (BitOp::Shr, false),
        (BitOp::Shr, true),
    ];

    /// The bit-vector encoding of `op` on `args` in `w` bits (what `integer_bits` replaces).
    fn by_bit_vectors(op: BitOp, signed: bool, w: u32, args: &[Int]) -> Int {
        let bvs = args.iter().map(|a| BV::from_int(a, w)).collect();
        bit(op, signed, bvs).unwrap()
    }

    /// Shifts by a symbolic amount (cases) and by a constant one, in integer arithmetic, equal
    /// the bit-vector shifts for every operand in a range wider than the width (negative values,
    /// values past 2^w, amounts past the width and negative ones), each pair substituted.
    #[test]
    fn integer_shifts_are_the_bit_vector_shifts() {
        let w = 5;
        let (a, b) = (Int::new_const("a"), Int::new_const("b"));
        let n = Int::from_i64;
        for (op, signed) in OPS {
            for k in [None, Some(3), Some(5), Some(40), Some(-1)] {
                let args = [a.clone(), k.map_or_else(|| b.clone(), n)];
                let ints = integer_bits(op, signed, w, &args, &[None, k]).expect("a shift");
                let bits = by_bit_vectors(op, signed, w, &args);
                for x in -40..=40 {
                    for y in -3..=7 {
                        let at = |e: &Int| {
                            e.substitute(&[(&a, &n(x)), (&b, &n(y * 5))])
                                .simplify()
                                .as_i64()
                        };
                        let (got, want) = (at(&ints), at(&bits));
                        assert!(want.is_some(), "{op:?}({x}, {y}) does not fold");
                        assert_eq!(got, want, "{op:?}({x}, {}) signed={signed}", y * 5);
                    }
                }
            }
        }
    }

    /// `&`, `|`, `^` with one constant operand, in integer arithmetic, equal the bit-vector
    /// operators for either sign and either operand order (masks of one run, of several, of
    /// the sign bit, all ones, none).
    #[test]
    fn operators_with_a_constant_are_the_bit_vector_operators() {
        let w = 6;
        let a = Int::new_const("a");
        let n = Int::from_i64;
        for signed in [false, true] {
            for op in [BitOp::And, BitOp::Or, BitOp::Xor] {
                for c in [-8, -1, 0, 1, 3, 0b101101, 0b010010, 31, 32, 48, 100, -33] {
                    for swap in [false, true] {
                        let (args, consts) = match swap {
                            false => ([a.clone(), n(c)], [None, Some(c)]),
                            true => ([n(c), a.clone()], [Some(c), None]),
                        };
                        let ints = integer_bits(op, signed, w, &args, &consts).expect("integer");
                        let bits = by_bit_vectors(op, signed, w, &args);
                        for x in -80..=80 {
                            let at = |e: &Int| e.substitute(&[(&a, &n(x))]).simplify().as_i64();
                            assert_eq!(at(&ints), at(&bits), "{op:?}({x}, {c}) signed={signed}");
                        }
                    }
                }
            }
        }
    }

    /// Constants are folded as the bit-vectors compute them, for every operator.
    #[test]
    fn constant_bits_fold_as_bit_vectors_compute_them() {
        let w = 6;
        let values = [-70, -33, -32, -1, 0, 1, 5, 31, 32, 63, 64, 100];
        let ops = [BitOp::And, BitOp::Or, BitOp::Xor, BitOp::Shl, BitOp::Shr];
        for signed in [false, true] {
            for x in values {
                let not = fold_bits(BitOp::Not, signed, w, &[x]);
                let bv_not = by_bit_vectors(BitOp::Not, signed, w, &[Int::from_i64(x)]);
                assert_eq!(not, bv_not.simplify().as_i64(), "~{x} signed={signed}");
                for y in values {
                    for op in ops {
                        let folded = fold_bits(op, signed, w, &[x, y]);
                        let args = [Int::from_i64(x), Int::from_i64(y)];
                        let expected = by_bit_vectors(op, signed, w, &args).simplify().as_i64();
                        assert_eq!(folded, expected, "{op:?}({x}, {y}) signed={signed}");
                    }
                }
            }
        }
    }

    /// Operands are constants on the terms (with the substituted values), bitwise operators
    /// included; a variable without a value, or too many terms, is no constant.
    #[test]
    fn constant_operands_are_found_on_the_terms() {
        let v = |n: &str| Term::var(n);
        let values = [("k".to_string(), 2)];
        let shift = Term::Bit {
            op: BitOp::Shl,
            width: 32,
            signed: false,
            args: vec![Term::Int(1), Term::Add(vec![v("k"), v("k")].into())].into(),
        };
        assert_eq!(constant_value(&shift, &values), Some(16));
        assert_eq!(constant_within(&shift, &values, &mut 3), None);
        let open = Term::Add(vec![v("k"), v("tid")].into());
        assert_eq!(constant_value(&open, &values), None);
    }

    /// Bit fields packed with `|`, `^` and `&` of disjoint fields are sums (and zeros) in
    /// integer arithmetic, no bit-vector in the query, with the values C computes, for operands
    /// of either sign (`x % 2` and `y % 4` are fields whatever `x` and `y` are).
    #[test]
    fn disjoint_bit_fields_are_sums() {
        let v = |n: &str| Term::var(n);
        let int = Term::Int;
        let bit = |op, args: Vec<Term>| Term::Bit {
            op,
            width: 32,
            signed: false,
            args: args.into(),
        };
        let field = |x: &str, m: i64, at: i64| {
            Term::Mul(vec![int(at), Term::Mod(v(x).into(), int(m).into())].into())
        };
        let packed = bit(
            BitOp::Or,
            vec![
                bit(BitOp::Or, vec![field("x", 2, 1), field("y", 4, 256)]),
                field("x", 2, 16),
            ],
        );
        let cases = [
            packed.clone(),
            bit(BitOp::Xor, vec![field("x", 16, 1), field("y", 2, 16)]),
            bit(BitOp::And, vec![field("x", 16, 1), field("y", 2, 16)]),
            bit(BitOp::And, vec![field("x", 2, 64), field("y", 4, 1)]),
            bit(BitOp::And, vec![packed, int(0xC0)]),
        ];
        let decls: BTreeMap<String, Sort> =
            [("x".to_string(), Sort::Int), ("y".to_string(), Sort::Int)].into();
        for (i, t) in cases.iter().enumerate() {
            let enc = Encoder::new(&decls);
            let Ok(Expr::Int(e)) = enc.expr(t) else {
                panic!("case {i} is not an integer");
            };
            assert!(!enc.uses_bit_vectors(), "case {i} uses bit-vectors");
            let (x, y) = (Int::new_const("x"), Int::new_const("y"));
            for a in -9..=9 {
                for b in -9..=9 {
                    let values = [("x".to_string(), a), ("y".to_string(), b)];
                    let want = constant_value(t, &values);
                    let n = Int::from_i64;
                    let got = e
                        .substitute(&[(&x, &n(a)), (&y, &n(b))])
                        .simplify()
                        .as_i64();
                    assert_eq!(got, want, "case {i} at x = {a}, y = {b}");
                }
            }
        }
        // Bits that may overlap stay bit-vectors; so do unknown signs.
        let overlapping = bit(BitOp::Or, vec![field("x", 4, 1), field("y", 2, 2)]);
        let signed = bit(BitOp::Or, vec![v("x"), field("y", 2, 16)]);
        for t in [overlapping, signed] {
            let enc = Encoder::new(&decls);
            assert!(enc.expr(&t).is_ok());
            assert!(enc.uses_bit_vectors(), "{t:?}");
        }
    }
}
