//! Concrete C integer values: wrapping per type width, the usual arithmetic conversions,
//! truncating division. Values that the interpreter cannot know exactly (floats, unknown data,
//! the result of an atomic whose operation the IR does not carry) are [`Val::Poison`]: they may
//! flow into stored data, but using one to steer control flow or to index memory makes the run
//! inconclusive.

use cudarace_ir::{BinOp, ScalarType, UnOp};

/// An integer C type. `bits == 1` is `bool`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct IntTy {
    pub bits: u8,
    pub signed: bool,
}

impl IntTy {
    pub const BOOL: IntTy = IntTy {
        bits: 1,
        signed: false,
    };
    pub const INT: IntTy = IntTy {
        bits: 32,
        signed: true,
    };
    pub const UINT: IntTy = IntTy {
        bits: 32,
        signed: false,
    };
    pub const LONG: IntTy = IntTy {
        bits: 64,
        signed: true,
    };

    /// The integer type of a scalar type; `None` for floats, pointers and other types, whose
    /// values the interpreter does not model.
    pub fn of(ty: ScalarType) -> Option<IntTy> {
        match ty {
            ScalarType::Int { bits, signed } if matches!(bits, 8 | 16 | 32 | 64) => {
                Some(IntTy { bits, signed })
            }
            ScalarType::Bool => Some(IntTy::BOOL),
            _ => None,
        }
    }

    /// Integer promotion: everything narrower than `int` (including `bool`) becomes `int`.
    fn promoted(self) -> IntTy {
        if self.bits < 32 {
            IntTy::INT
        } else {
            self
        }
    }

    /// The common type of the usual arithmetic conversions (operands already promoted).
    fn common(a: IntTy, b: IntTy) -> IntTy {
        let (a, b) = (a.promoted(), b.promoted());
        if a == b {
            return a;
        }
        if a.signed == b.signed {
            return if a.bits >= b.bits { a } else { b };
        }
        let (s, u) = if a.signed { (a, b) } else { (b, a) };
        if u.bits >= s.bits {
            u
        } else {
            // The signed type is wider, so it represents every value of the unsigned one.
            s
        }
    }

    /// Converts a mathematical value to this type: modulo 2^bits, or `!= 0` for `bool`.
    pub fn wrap(self, v: i128) -> i128 {
        if self.bits == 1 {
            return (v != 0) as i128;
        }
        let m: i128 = 1i128 << self.bits;
        let r = v.rem_euclid(m);
        if self.signed && r >= m / 2 {
            r - m
        } else {
            r
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Val {
    /// A value of an integer type, always within that type's range.
    Int { v: i128, ty: IntTy },
    /// A value the interpreter does not know (see the module documentation).
    Poison,
}

/// Why a value could not be computed: the run must become inconclusive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Undefined(pub String);

impl Val {
    pub fn int(v: i128, ty: IntTy) -> Val {
        Val::Int { v: ty.wrap(v), ty }
    }

    /// The C type of an integer literal: `int` when it fits, else `long long`.
    pub fn literal(v: i64) -> Val {
        if i32::try_from(v).is_ok() {
            Val::int(v as i128, IntTy::INT)
        } else {
            Val::int(v as i128, IntTy::LONG)
        }
    }

    pub fn boolean(b: bool) -> Val {
        Val::Int {
            v: b as i128,
            ty: IntTy::INT,
        }
    }

    /// Converts to a scalar type (assignment, cast, store).
    pub fn convert(self, ty: ScalarType) -> Val {
        match (self, IntTy::of(ty)) {
            (Val::Int { v, .. }, Some(t)) => Val::int(v, t),
            _ => Val::Poison,
        }
    }

    pub fn as_int(self) -> Option<i128> {
        match self {
            Val::Int { v, .. } => Some(v),
            Val::Poison => None,
        }
    }
}

pub fn unary(op: UnOp, a: Val) -> Val {
    let Val::Int { v, ty } = a else {
        return Val::Poison;
    };
    match op {
        UnOp::Not => Val::boolean(v == 0),
        UnOp::Neg => {
            let t = ty.promoted();
            Val::int(-v, t)
        }
        UnOp::BitNot => {
            let t = ty.promoted();
            Val::int(!v, t)
        }
    }
}

/// A binary operator other than `&&` / `||` (the interpreter short-circuits those itself).
pub fn binary(op: BinOp, a: Val, b: Val) -> Result<Val, Undefined> {
    let (Val::Int { v: x, ty: tx }, Val::Int { v: y, ty: ty_ }) = (a, b) else {
        // Division by an unknown divisor may be undefined, but the result is data only: it is
        // poison, and becomes inconclusive only if it steers control flow or an index.
        return Ok(Val::Poison);
    };
    match op {
        BinOp::Shl | BinOp::Shr => {
            let t = tx.promoted();
            if y < 0 || y >= t.bits as i128 {
                return Err(Undefined(format!("shift by {y} in a {}-bit type", t.bits)));
            }
            let c = y as u32;
            let r = if op == BinOp::Shl {
                x.wrapping_shl(c)
            } else {
                x >> c
            };
            return Ok(Val::int(r, t));
        }
        BinOp::And => return Ok(Val::boolean(x != 0 && y != 0)),
        BinOp::Or => return Ok(Val::boolean(x != 0 || y != 0)),
        _ => {}
    }
    let t = IntTy::common(tx, ty_);
    let (x, y) = (t.wrap(x), t.wrap(y));
    let r = match op {
        BinOp::Add => x.wrapping_add(y),
        BinOp::Sub => x.wrapping_sub(y),
        BinOp::Mul => x.wrapping_mul(y),
        BinOp::Div | BinOp::Rem => {
            if y == 0 {
                return Err(Undefined("division by zero".into()));
            }
            let q = x / y;
            if t.wrap(q) != q {
                return Err(Undefined("signed division overflow".into()));
            }
            if op == BinOp::Div {
                q
            } else {
                x % y
            }
        }
        BinOp::BitAnd => x & y,
        BinOp::BitOr => x | y,
        BinOp::BitXor => x ^ y,
        BinOp::Lt => return Ok(Val::boolean(x < y)),
        BinOp::Le => return Ok(Val::boolean(x <= y)),
        BinOp::Gt => return Ok(Val::boolean(x > y)),
        BinOp::Ge => return Ok(Val::boolean(x >= y)),
        BinOp::Eq => return Ok(Val::boolean(x == y)),
        BinOp::Ne => return Ok(Val::boolean(x != y)),
        BinOp::Shl | BinOp::Shr | BinOp::And | BinOp::Or => unreachable!("handled above"),
    };
    Ok(Val::int(r, t))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn u(v: i128) -> Val {
        Val::int(v, IntTy::UINT)
    }
    fn i(v: i128) -> Val {
        Val::int(v, IntTy::INT)
    }

    #[test]
    fn unsigned_subtraction_wraps() {
        assert_eq!(binary(BinOp::Sub, u(0), i(1)).unwrap(), u(4294967295));
        assert_eq!(
            binary(BinOp::Sub, u(0), i(1)).unwrap().as_int(),
            Some(4294967295)
        );
    }

    #[test]
    fn signed_compared_with_unsigned_is_converted() {
        // -1 < 1u is false in C: -1 becomes UINT_MAX.
        assert_eq!(binary(BinOp::Lt, i(-1), u(1)).unwrap(), Val::boolean(false));
        // With a wider signed type the comparison is mathematical.
        let l = Val::int(-1, IntTy::LONG);
        assert_eq!(binary(BinOp::Lt, l, u(1)).unwrap(), Val::boolean(true));
    }

    #[test]
    fn division_truncates_and_rejects_zero() {
        assert_eq!(binary(BinOp::Div, i(-7), i(2)).unwrap(), i(-3));
        assert_eq!(binary(BinOp::Rem, i(-7), i(2)).unwrap(), i(-1));
        assert!(binary(BinOp::Div, i(1), i(0)).is_err());
        assert!(binary(BinOp::Div, i(i32::MIN as i128), i(-1)).is_err());
    }

    #[test]
    fn signed_overflow_wraps_like_the_gpu() {
        assert_eq!(
            binary(BinOp::Add, i(i32::MAX as i128), i(1)).unwrap(),
            i(i32::MIN as i128)
        );
        assert_eq!(binary(BinOp::Mul, u(1 << 31), u(2)).unwrap(), u(0));
    }

    #[test]
    fn shifts_and_bitwise() {
        assert_eq!(binary(BinOp::Shr, i(-8), i(1)).unwrap(), i(-4));
        assert_eq!(
            binary(BinOp::Shr, u(0xffff_fff8), i(1)).unwrap(),
            u(0x7fff_fffc)
        );
        assert!(binary(BinOp::Shl, i(1), i(32)).is_err());
        assert_eq!(binary(BinOp::BitXor, i(5), i(3)).unwrap(), i(6));
        assert_eq!(unary(UnOp::BitNot, u(0)), u(0xffff_ffff));
        assert_eq!(unary(UnOp::Neg, u(1)), u(0xffff_ffff));
    }

    #[test]
    fn poison_propagates() {
        assert_eq!(binary(BinOp::Add, Val::Poison, i(1)).unwrap(), Val::Poison);
        assert_eq!(binary(BinOp::Div, i(1), Val::Poison).unwrap(), Val::Poison);
        assert_eq!(
            Val::int(3, IntTy::INT).convert(ScalarType::Float),
            Val::Poison
        );
    }

    #[test]
    fn conversions() {
        assert_eq!(
            i(300)
                .convert(ScalarType::Int {
                    bits: 8,
                    signed: false
                })
                .as_int(),
            Some(44)
        );
        assert_eq!(i(-1).convert(ScalarType::UINT).as_int(), Some(4294967295));
        assert_eq!(i(5).convert(ScalarType::Bool).as_int(), Some(1));
    }
}
