//! Translation of [`Term`]s into Z3 expressions in the calling thread's (thread-local) context.
//!
//! Every malformed input (undeclared variable, sort mismatch, bad arity or bit width, a formula
//! nested too deeply) is an `Err` with a readable message, never a panic: the caller turns it into
//! `Answer::Unknown`, which the checker reports soundly as "unknown".

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};

use z3::ast::{Bool, Int, BV};

use crate::bits::{bit, constant_value, disjoint_bits, integer_bits, may_bits};
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
    /// Translate nonlinear terms as fresh constants (see [`Encoder::linear`]), each term once.
    abstracted: Option<RefCell<HashMap<Term, Int>>>,
    /// The abstracted products `(a, b, x)` with `x == a * b`, for the facts between two
    /// products with a common factor (see [`common_factor_facts`]).
    products: RefCell<Vec<(Int, Int, Int)>>,
    /// Bit-vector names of the non-constant operands of bitwise operators, per (operand, width).
    bit_operands: RefCell<HashMap<(Term, u32), BV>>,
    /// Definitions `name == int2bv(operand)` of those names; asserted next to the query.
    definitions: RefCell<Vec<Bool>>,
    /// The constants substituted for variables (see [`Encoder::with_values`]).
    values: Vec<(String, i64)>,
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
            abstracted: None,
            products: RefCell::new(Vec::new()),
            bit_operands: RefCell::new(HashMap::new()),
            definitions: RefCell::new(Vec::new()),
            values: Vec::new(),
        }
    }

    /// An encoder of the *linear abstraction* of formulas: a product of two non-constants, a
    /// division or remainder by a non-constant and a bitwise operation become a fresh integer
    /// constant (the same term, the same constant), with facts that hold of the real
    /// operation (`a >= 1 && b >= 0 ==> a*b >= b`, `0 <= a % b < b` for `b >= 1`, a bit-vector
    /// result within its width) in [`Encoder::take_definitions`]. Every model of the formulas
    /// gives one of their abstraction (each constant taking its term's value), so an
    /// abstraction without a model proves the formulas have none, in linear arithmetic, where
    /// Z3 is fast: a digit `n < N` of `k*N + n` with `n` built of products of launch sizes.
    ///
    /// The variables of `values` are translated as those constants (see
    /// [`Encoder::with_values`]): a product with one of them as a factor is linear.
    pub(crate) fn linear_with_values(
        decls: &BTreeMap<String, Sort>,
        values: &[(String, i64)],
    ) -> Encoder {
        let mut enc = Encoder::with_values(decls, values);
        enc.abstracted = Some(RefCell::new(HashMap::new()));
        enc
    }

    /// The fresh constant standing for `t` in a linear abstraction, with `facts` (given the
    /// constant) about it recorded the first time.
    fn abstraction(&self, t: &Term, facts: impl FnOnce(&Int) -> Vec<Bool>) -> Option<Int> {
        let memo = self.abstracted.as_ref()?;
        if let Some(x) = memo.borrow().get(t) {
            return Some(x.clone());
        }
        let x = Int::fresh_const("abstracted");
        self.definitions.borrow_mut().extend(facts(&x));
        memo.borrow_mut().insert(t.clone(), x.clone());
        Some(x)
    }

    /// [`Encoder::new`], with the variables of `values` translated as those constants (the
    /// formulas it builds are the query's with the values substituted).
    pub(crate) fn with_values(decls: &BTreeMap<String, Sort>, values: &[(String, i64)]) -> Encoder {
        let mut enc = Encoder::new(decls);
        for (name, v) in values {
            if let Some(e @ Expr::Int(_)) = enc.vars.get_mut(name) {
                *e = Expr::Int(Int::from_i64(*v));
                enc.values.push((name.clone(), *v));
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

    /// Whether a formula encoded so far bridges integers and bit-vectors (`&`, `|`, `^` of two
    /// non-constants).
    pub(crate) fn uses_bit_vectors(&self) -> bool {
        !self.bit_operands.borrow().is_empty()
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
    pub(crate) fn expr(&self, root: &Term) -> Result<Expr, String> {
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
                    _ if self.abstracted.is_some() => Expr::Int(self.linear_product(t, v)?),
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
            Term::Div(..) | Term::Rem(..) | Term::Mod(..) => {
                let (a, b) = two(ints(args)?);
                let abstracted = match self.abstracted.is_some() && b.as_i64().is_none() {
                    true => self.abstraction(t, |x| quotient_facts(t, &a, &b, x)),
                    false => None,
                };
                match (abstracted, t) {
                    (Some(x), _) => Expr::Int(x),
                    (None, Term::Div(..)) => Expr::Int(c_div(&a, &b)),
                    (None, Term::Rem(..)) => Expr::Int(c_rem(&a, &b)),
                    (None, _) => Expr::Int(a.modulo(&b)),
                }
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
                // Read back signed or unsigned from `width` bits: a bound that does not fit
                // in an `i64` is left out (a weaker fact is still true).
                let in_width = |x: &Int| {
                    let (lo, hi) = match (*signed, w) {
                        (true, w) if w <= 64 => {
                            (Some(-(1i128 << (w - 1))), Some((1i128 << (w - 1)) - 1))
                        }
                        (true, _) => (None, None),
                        (false, w) if w < 64 => (Some(0), Some((1i128 << w) - 1)),
                        (false, _) => (Some(0), None),
                    };
                    let fits =
                        |v: Option<i128>| v.and_then(|v| i64::try_from(v).ok()).map(Int::from_i64);
                    let mut facts = Vec::new();
                    if let Some(lo) = fits(lo) {
                        facts.push(x.ge(&lo));
                    }
                    if let Some(hi) = fits(hi) {
                        facts.push(x.le(&hi));
                    }
                    facts
                };
                if let Some(x) = self.abstraction(t, in_width) {
                    return Ok(Expr::Int(x));
                }
                let ints = ints(args)?;
                // Constants are found on the terms, never by Z3's `simplify`: the timer may
                // have interrupted the context, and an interrupted `simplify` returns no term.
                if matches!(op, BitOp::And | BitOp::Or | BitOp::Xor) {
                    let masks: Vec<Option<u64>> =
                        operands.iter().map(|o| may_bits(o, &self.values)).collect();
                    if let Some(x) = disjoint_bits(*op, *signed, w, &ints, &masks) {
                        return Ok(Expr::Int(x));
                    }
                }
                let consts: Vec<Option<i64>> = operands
                    .iter()
                    .map(|o| constant_value(o, &self.values))
                    .collect();
                if let Some(x) = integer_bits(*op, *signed, w, &ints, &consts) {
                    return Ok(Expr::Int(x));
                }
                let bvs = operands
                    .iter()
                    .zip(&ints)
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

impl Encoder {
    /// A product in a linear abstraction: the constant factors times one fresh constant per
    /// further non-constant factor (`a*b*c` is `(a*b)*c`, two constants), each with
    /// [`product_facts`]. A factor that is itself a product with a constant factor (after the
    /// encoder's values are substituted) is taken apart, and each constant is keyed by the
    /// non-constant leaves of its two factors, so that one product written two ways is one
    /// constant: `2*(nx*ny*nz)` and `((q*nx)*ny)*nz` with `q == 2` are both `2*x` for the `x`
    /// of `nx*ny*nz`. A factor without a constant stays whole (`b*(row*col)` is `b*y` for the
    /// `y` of `row*col`, the divisor of `pos / (row*col)`, whose facts are about `y`).
    fn linear_product(&self, t: &Term, factors: Vec<Int>) -> Result<Int, String> {
        let Term::Mul(children) = t else {
            return Ok(Int::mul(&factors));
        };
        // The children come encoded already (`factors`, in their order): only a child taken
        // apart has its parts encoded here, so a product is not translated twice.
        let mut units: Vec<(Term, Int)> = Vec::new();
        let mut constant: Option<i64> = Some(1);
        for (child, encoded) in children.iter().zip(factors.iter()) {
            if let Some(k) = self.constant_factor(child) {
                constant = constant.and_then(|c| c.checked_mul(k));
            } else if matches!(child, Term::Mul(_)) && self.has_constant_factor(child) {
                let mut parts = Vec::new();
                self.product_units(child, &mut parts, &mut constant);
                for part in parts {
                    let Expr::Int(i) = self.expr(&part)? else {
                        return Err(format!("Int operand expected in {}", brief(t)));
                    };
                    units.push((part, i));
                }
            } else {
                units.push((child.clone(), encoded.clone()));
            }
        }
        let Some(constant) = constant else {
            // A constant factor that overflows: the factors as they are, keyed by the term.
            return Ok(self.abstract_product(t, factors));
        };
        let Some(((first, first_int), rest)) = units.split_first() else {
            return Ok(Int::from_i64(constant));
        };
        let mut leaves = Vec::new();
        self.product_leaves(first, &mut leaves);
        let mut acc = first_int.clone();
        for (unit, b) in rest {
            // Keyed by the non-constant leaves of both sides: the same product of the same
            // two factors, the same constant (and its facts are about those two factors).
            let mut right = Vec::new();
            self.product_leaves(unit, &mut right);
            let key = Term::Mul(
                vec![
                    Term::Mul(leaves.clone().into()),
                    Term::Mul(right.clone().into()),
                ]
                .into(),
            );
            leaves.extend(right);
            acc = self.abstract_step(&key, &acc, b);
        }
        Ok(Int::mul(&[Int::from_i64(constant), acc]))
    }

    /// The constant value of a product's factor `t` (a constant, or a variable of the
    /// encoder's values).
    fn constant_factor(&self, t: &Term) -> Option<i64> {
        match t {
            Term::Int(k) => Some(*k),
            Term::Var(n) => match self.vars.get(&**n)? {
                Expr::Int(i) => i.as_i64(),
                Expr::Bool(_) => None,
            },
            _ => None,
        }
    }

    /// Does the product `t` have a constant factor at any depth of its nested products?
    fn has_constant_factor(&self, t: &Term) -> bool {
        let mut stack = vec![t];
        while let Some(t) = stack.pop() {
            match t {
                Term::Mul(ts) => stack.extend(ts.iter()),
                other if self.constant_factor(other).is_some() => return true,
                _ => {}
            }
        }
        false
    }

    /// The factors of the product `t` to multiply (see [`Encoder::linear_product`]), in order:
    /// nested products with a constant factor taken apart, the constants multiplied into
    /// `constant` (`None` on overflow).
    fn product_units(&self, t: &Term, units: &mut Vec<Term>, constant: &mut Option<i64>) {
        // An explicit stack, in order (terms may nest deeper than recursion allows).
        let mut stack: Vec<&Term> = match t {
            Term::Mul(ts) => ts.iter().rev().collect(),
            other => vec![other],
        };
        while let Some(t) = stack.pop() {
            if let Some(k) = self.constant_factor(t) {
                *constant = constant.and_then(|c| c.checked_mul(k));
                continue;
            }
            match t {
                Term::Mul(ts) if self.has_constant_factor(t) => stack.extend(ts.iter().rev()),
                other => units.push(other.clone()),
            }
        }
    }

    /// The non-constant leaves of the product `t` (nested products flattened), appended.
    fn product_leaves(&self, t: &Term, leaves: &mut Vec<Term>) {
        let mut stack = vec![t];
        while let Some(t) = stack.pop() {
            match t {
                Term::Mul(ts) => stack.extend(ts.iter().rev()),
                other if self.constant_factor(other).is_some() => {}
                other => leaves.push(other.clone()),
            }
        }
    }

    /// [`Encoder::linear_product`] of the encoded `factors` of `t` as they are (constant
    /// factors pulled out), keyed by the term and the factor's place.
    fn abstract_product(&self, t: &Term, factors: Vec<Int>) -> Int {
        let (constants, mut others): (Vec<Int>, Vec<Int>) =
            factors.into_iter().partition(|f| f.as_i64().is_some());
        if others.len() < 2 {
            others.extend(constants);
            return Int::mul(&others);
        }
        let mut acc = others[0].clone();
        for (i, b) in others.iter().enumerate().skip(1) {
            let key = Term::Mul(vec![t.clone(), Term::Int(i as i64)].into());
            acc = self.abstract_step(&key, &acc, b);
        }
        let mut all = constants;
        all.push(acc);
        Int::mul(&all)
    }

    /// The fresh constant for `a * b` under `key`, with its facts and those relating it to
    /// the earlier products with a common factor.
    fn abstract_step(&self, key: &Term, a: &Int, b: &Int) -> Int {
        self.abstraction(key, |x| {
            let mut facts = product_facts(a, b, x);
            let mut products = self.products.borrow_mut();
            for (a2, b2, x2) in products.iter() {
                for (k, p, p2) in [(b, a, a2), (b, a, b2), (a, b, a2), (a, b, b2)] {
                    let other = if std::ptr::eq(p2, a2) { b2 } else { a2 };
                    if *k == *other {
                        facts.extend(common_factor_facts(k, p, x, p2, x2));
                    }
                }
            }
            if products.len() < MAX_PRODUCT_PAIRS {
                products.push((a.clone(), b.clone(), x.clone()));
            }
            facts
        })
        .unwrap_or_else(|| Int::mul(&[a.clone(), b.clone()]))
    }
}

/// Products of a linear abstraction compared pairwise for a common factor, at most.
const MAX_PRODUCT_PAIRS: usize = 64;

/// What holds of `x == p * k` and `x2 == p2 * k` (a common factor `k >= 1`): the products are
/// at least `k` apart when the other factors differ, and equal when they are equal. It is
/// what makes `row * w + col` one-to-one for `0 <= col < w` in linear terms.
fn common_factor_facts(k: &Int, p: &Int, x: &Int, p2: &Int, x2: &Int) -> Vec<Bool> {
    let one = Int::from_i64(1);
    let positive = k.ge(&one);
    vec![
        Bool::and(&[positive.clone(), p.ge(&(p2 + &one))]).implies(x.ge(&(x2 + k))),
        Bool::and(&[positive, p2.ge(&(p + &one))]).implies(x2.ge(&(x + k))),
        p.eq(p2).implies(x.eq(x2)),
    ]
}

/// What holds of `x == a * b` in linear terms: its sign from the factors' signs, zero with a
/// zero factor, and `|x| >= |a|` when `|b| >= 1` (on the signs given).
fn product_facts(a: &Int, b: &Int, x: &Int) -> Vec<Bool> {
    let n = Int::from_i64;
    let and = |p: &[Bool]| Bool::and(p);
    vec![
        and(&[a.ge(n(0)), b.ge(n(0))]).implies(x.ge(n(0))),
        and(&[a.le(n(0)), b.le(n(0))]).implies(x.ge(n(0))),
        and(&[a.le(n(0)), b.ge(n(0))]).implies(x.le(n(0))),
        and(&[a.ge(n(0)), b.le(n(0))]).implies(x.le(n(0))),
        Bool::or(&[a.eq(n(0)), b.eq(n(0))]).implies(x.eq(n(0))),
        and(&[a.ge(n(1)), b.ge(n(0))]).implies(x.ge(b)),
        and(&[b.ge(n(1)), a.ge(n(0))]).implies(x.ge(a)),
        and(&[a.ge(n(1)), b.le(n(0))]).implies(x.le(b)),
        and(&[b.ge(n(1)), a.le(n(0))]).implies(x.le(a)),
    ]
}

/// What holds of `x` standing for `a / b`, `a % b` (C) or `a mod b` (non-negative) with a
/// positive divisor: the quotient of a non-negative dividend is between 0 and the dividend; a
/// remainder is below the divisor and, for a non-negative dividend, not above it.
fn quotient_facts(t: &Term, a: &Int, b: &Int, x: &Int) -> Vec<Bool> {
    let n = Int::from_i64;
    let positive = b.ge(n(1));
    let natural = Bool::and(&[a.ge(n(0)), positive.clone()]);
    match t {
        Term::Div(..) => vec![natural.implies(Bool::and(&[x.ge(n(0)), x.le(a)]))],
        Term::Rem(..) => vec![natural.implies(Bool::and(&[x.ge(n(0)), x.lt(b), x.le(a)]))],
        _ => vec![
            positive.implies(Bool::and(&[x.ge(n(0)), x.lt(b)])),
            natural.implies(x.le(a)),
        ],
    }
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
