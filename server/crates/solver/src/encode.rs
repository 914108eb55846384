//! Translation of [`Term`]s into Z3 expressions in the calling thread's (thread-local) context.
//!
//! Every malformed input (undeclared variable, sort mismatch, bad arity or bit width, a formula
//! nested too deeply) is an `Err` with a readable message, never a panic: the caller turns it into
//! `Answer::Unknown`, which the checker reports soundly as "unknown".

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};

use z3::ast::{Bool, Int, BV};

use crate::term::{BitOp, Sort, Term};

/// Nesting depth beyond which a term is refused. Our translation is iterative, but parts of Z3
/// recurse over terms, and a stack overflow aborts the whole process (it cannot be caught); the
/// bound is far above anything the checker builds for real kernels.
pub(crate) const MAX_DEPTH: usize = 5_000;

/// A translated term of either sort.
pub(crate) enum Expr {
    Int(Int),
    Bool(Bool),
}

pub(crate) struct Encoder {
    vars: BTreeMap<String, Expr>,
    /// Bit-vector names of the non-constant operands of bitwise operators, per (operand, width).
    bit_operands: RefCell<HashMap<(Term, u32), BV>>,
    /// Definitions `name == int2bv(operand)` of those names; asserted next to the query.
    definitions: RefCell<Vec<Bool>>,
}

impl Encoder {
    /// Declares every query variable as a Z3 constant of its sort.
    pub(crate) fn new(decls: &BTreeMap<String, Sort>) -> Encoder {
        let vars = decls
            .iter()
            .map(|(name, sort)| {
                let e = match sort {
                    Sort::Int => Expr::Int(Int::new_const(name.as_str())),
                    Sort::Bool => Expr::Bool(Bool::new_const(name.as_str())),
                };
                (name.clone(), e)
            })
            .collect();
        Encoder {
            vars,
            bit_operands: RefCell::new(HashMap::new()),
            definitions: RefCell::new(Vec::new()),
        }
    }

    /// [`Encoder::new`], with the variables of `values` translated as those constants (the
    /// formulas it builds are the query's with the values substituted).
    pub(crate) fn with_values(decls: &BTreeMap<String, Sort>, values: &[(String, i64)]) -> Encoder {
        let mut enc = Encoder::new(decls);
        for (name, v) in values {
            if let Some(e @ Expr::Int(_)) = enc.vars.get_mut(name) {
                *e = Expr::Int(Int::from_i64(*v));
            }
        }
        enc
    }

    /// The definitions introduced so far by bitwise operators (see [`Encoder::bit_operand`]).
    /// Each one defines a fresh constant as a total function of its operand, so asserting it at
    /// the top level, whatever the polarity of the place where the operator occurs, keeps the
    /// query equisatisfiable.
    pub(crate) fn take_definitions(&self) -> Vec<Bool> {
        std::mem::take(&mut *self.definitions.borrow_mut())
    }

    /// The `width`-bit two's complement of an operand of a bitwise operator. A non-constant
    /// operand is not converted in place: it gets a fresh bit-vector constant `b` with the
    /// definition `b == int2bv(x)`. Measured on Z3 4.8.12 with `t ^ j == t`, `0 <= t < 1024`,
    /// `1 <= j < 1024` (unsat): 24 ms named this way; no answer within 5 s with `int2bv` in
    /// place, nor with `x == bv2nat(b) + 2^w*k`.
    fn bit_operand(&self, term: &Term, int: &Int, width: u32) -> BV {
        if let Term::Int(_) = term {
            return BV::from_int(int, width);
        }
        let key = (term.clone(), width);
        if let Some(b) = self.bit_operands.borrow().get(&key) {
            return b.clone();
        }
        let b = BV::fresh_const("bits", width);
        self.definitions
            .borrow_mut()
            .push(b.eq(BV::from_int(int, width)));
        self.bit_operands.borrow_mut().insert(key, b.clone());
        b
    }

    pub(crate) fn var(&self, name: &str) -> Option<&Expr> {
        self.vars.get(name)
    }

    pub(crate) fn bool(&self, t: &Term) -> Result<Bool, String> {
        match self.expr(t)? {
            Expr::Bool(b) => Ok(b),
            Expr::Int(_) => Err(format!(
                "expected a Bool term, found an Int term: {}",
                brief(t)
            )),
        }
    }

    /// Translates `t` bottom-up with an explicit work stack rather than recursion, so that the
    /// thread's stack size does not bound the nesting depth (`solve` runs on the caller's thread).
    fn expr(&self, root: &Term) -> Result<Expr, String> {
        enum Step<'a> {
            Visit(&'a Term, usize),
            Build(&'a Term),
        }
        let mut work = vec![Step::Visit(root, 0)];
        let mut done: Vec<Expr> = Vec::new();
        while let Some(step) = work.pop() {
            match step {
                Step::Visit(t, depth) => {
                    if depth > MAX_DEPTH {
                        return Err(format!("formula nested deeper than {MAX_DEPTH} levels"));
                    }
                    let kids = t.children();
                    work.push(Step::Build(t));
                    work.extend(kids.into_iter().rev().map(|k| Step::Visit(k, depth + 1)));
                }
                Step::Build(t) => {
                    let n = t.children().len();
                    let args = done.split_off(done.len().saturating_sub(n));
                    done.push(self.build(t, args)?);
                }
            }
        }
        match (done.pop(), done.is_empty()) {
            (Some(e), true) => Ok(e),
            _ => Err("internal error: unbalanced term translation".to_string()),
        }
    }

    /// Builds the Z3 expression of `t` from the translations of its [`Term::children`], in order.
    fn build(&self, t: &Term, args: Vec<Expr>) -> Result<Expr, String> {
        let ints = |args: Vec<Expr>| -> Result<Vec<Int>, String> {
            args.into_iter()
                .map(|e| match e {
                    Expr::Int(i) => Ok(i),
                    Expr::Bool(_) => Err(format!("Int operand expected in {}", brief(t))),
                })
                .collect()
        };
        let bools = |args: Vec<Expr>| -> Result<Vec<Bool>, String> {
            args.into_iter()
                .map(|e| match e {
                    Expr::Bool(b) => Ok(b),
                    Expr::Int(_) => Err(format!("Bool operand expected in {}", brief(t))),
                })
                .collect()
        };
        let two = |mut v: Vec<Int>| -> (Int, Int) {
            // `children` gives binary nodes exactly two operands.
            let b = v.pop().unwrap_or_else(|| Int::from_i64(0));
            let a = v.pop().unwrap_or_else(|| Int::from_i64(0));
            (a, b)
        };
        Ok(match t {
            Term::Int(v) => Expr::Int(Int::from_i64(*v)),
            Term::Bool(b) => Expr::Bool(Bool::from_bool(*b)),
            Term::Var(name) => match self.vars.get(&**name) {
                Some(Expr::Int(i)) => Expr::Int(i.clone()),
                Some(Expr::Bool(b)) => Expr::Bool(b.clone()),
                None => return Err(format!("variable `{name}` is not declared in the query")),
            },
            // Z3 rejects n-ary applications with no arguments; the neutral elements stand in.
            Term::Add(_) => {
                let v = ints(args)?;
                match v.len() {
                    0 => Expr::Int(Int::from_i64(0)),
                    _ => Expr::Int(Int::add(&v)),
                }
            }
            Term::Mul(_) => {
                let v = ints(args)?;
                match v.len() {
                    0 => Expr::Int(Int::from_i64(1)),
                    _ => Expr::Int(Int::mul(&v)),
                }
            }
            Term::Sub(..) => {
                let (a, b) = two(ints(args)?);
                Expr::Int(Int::sub(&[a, b]))
            }
            Term::Neg(_) => match ints(args)?.pop() {
                Some(a) => Expr::Int(a.unary_minus()),
                None => return Err("internal error: unary `-` without operand".to_string()),
            },
            Term::Div(..) => {
                let (a, b) = two(ints(args)?);
                Expr::Int(c_div(&a, &b))
            }
            Term::Rem(..) => {
                let (a, b) = two(ints(args)?);
                Expr::Int(c_rem(&a, &b))
            }
            Term::Mod(..) => {
                let (a, b) = two(ints(args)?);
                Expr::Int(a.modulo(&b))
            }
            Term::Bit {
                op,
                width,
                signed,
                args: operands,
            } => {
                if *width == 0 {
                    return Err("bitwise operator with bit width 0".to_string());
                }
                let w = u32::from(*width);
                let bvs = operands
                    .iter()
                    .zip(&ints(args)?)
                    .map(|(term, int)| self.bit_operand(term, int, w))
                    .collect();
                Expr::Int(bit(*op, *signed, bvs)?)
            }
            Term::Eq(..) => {
                let mut it = args.into_iter();
                match (it.next(), it.next()) {
                    (Some(Expr::Int(a)), Some(Expr::Int(b))) => Expr::Bool(a.eq(&b)),
                    (Some(Expr::Bool(a)), Some(Expr::Bool(b))) => Expr::Bool(a.iff(&b)),
                    _ => return Err(format!("`==` between an Int and a Bool: {}", brief(t))),
                }
            }
            Term::Lt(..) => {
                let (a, b) = two(ints(args)?);
                Expr::Bool(a.lt(&b))
            }
            Term::Le(..) => {
                let (a, b) = two(ints(args)?);
                Expr::Bool(a.le(&b))
            }
            Term::And(_) => {
                let v = bools(args)?;
                match v.len() {
                    0 => Expr::Bool(Bool::from_bool(true)),
                    _ => Expr::Bool(Bool::and(&v)),
                }
            }
            Term::Or(_) => {
                let v = bools(args)?;
                match v.len() {
                    0 => Expr::Bool(Bool::from_bool(false)),
                    _ => Expr::Bool(Bool::or(&v)),
                }
            }
            Term::Not(_) => match bools(args)?.pop() {
                Some(a) => Expr::Bool(a.not()),
                None => return Err("internal error: `!` without operand".to_string()),
            },
            Term::Implies(..) => {
                let mut v = bools(args)?;
                match (v.pop(), v.pop()) {
                    (Some(b), Some(a)) => Expr::Bool(a.implies(&b)),
                    _ => return Err("internal error: `=>` without operands".to_string()),
                }
            }
            Term::Ite(..) => {
                let mut it = args.into_iter();
                match (it.next(), it.next(), it.next()) {
                    (Some(Expr::Bool(c)), Some(Expr::Int(a)), Some(Expr::Int(b))) => {
                        Expr::Int(c.ite(&a, &b))
                    }
                    (Some(Expr::Bool(c)), Some(Expr::Bool(a)), Some(Expr::Bool(b))) => {
                        Expr::Bool(c.ite(&a, &b))
                    }
                    _ => return Err(format!("ill-sorted `?:`: {}", brief(t))),
                }
            }
        })
    }
}

/// Bitwise operators: the integer operands are wrapped into `width`-bit two's complement
/// (`int2bv` reduces modulo 2^width, which is exactly C's conversion to a `width`-bit type),
/// the operation is done on bit-vectors, and the result is read back as a signed or unsigned
/// integer.
fn bit(op: BitOp, signed: bool, bvs: Vec<BV>) -> Result<Int, String> {
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

/// C division, truncating toward zero. SMT-LIB `div` rounds so that the remainder is
/// non-negative; for a non-negative dividend that coincides with truncation whatever the
/// divisor's sign, and C guarantees `(-a)/b == -(a/b)`, which covers negative dividends.
fn c_div(a: &Int, b: &Int) -> Int {
    let zero = Int::from_i64(0);
    let neg_a = a.unary_minus();
    a.ge(&zero).ite(&a.div(b), &neg_a.div(b).unary_minus())
}

/// C remainder, with the sign of the dividend: `a % b == a - (a/b)*b`. For a non-negative
/// dividend it equals SMT-LIB `mod`; C guarantees `(-a)%b == -(a%b)`.
fn c_rem(a: &Int, b: &Int) -> Int {
    let zero = Int::from_i64(0);
    let neg_a = a.unary_minus();
    a.ge(&zero)
        .ite(&a.modulo(b), &neg_a.modulo(b).unary_minus())
}

/// A short rendering of a term for error messages.
fn brief(t: &Term) -> String {
    let s = format!("{t:?}");
    if s.len() > 120 {
        let cut = (0..=120)
            .rev()
            .find(|&i| s.is_char_boundary(i))
            .unwrap_or(0);
        format!("{}…", &s[..cut])
    } else {
        s
    }
}
