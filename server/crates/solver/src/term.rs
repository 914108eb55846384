//! The formula language the checker speaks. Integers are mathematical (the checker adds the C
//! type ranges as constraints); the bitwise operators carry the bit width they are evaluated in
//! and are the only place where bit-vector reasoning is used.

use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Sort {
    Int,
    Bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Term {
    Int(i64),
    Bool(bool),
    /// A free variable; its sort is declared in [`Query::vars`].
    Var(String),
    Add(Vec<Term>),
    Sub(Box<Term>, Box<Term>),
    Mul(Vec<Term>),
    Neg(Box<Term>),
    /// C division (truncation toward zero).
    Div(Box<Term>, Box<Term>),
    /// C remainder (sign of the dividend).
    Rem(Box<Term>, Box<Term>),
    /// Mathematical modulo with a non-negative result (`mod` of SMT-LIB), for residue encodings.
    Mod(Box<Term>, Box<Term>),
    /// Bitwise operators on the two's-complement representation in `width` bits; the operands
    /// and the result are integers (the result is read back unsigned when `signed` is false).
    Bit {
        op: BitOp,
        width: u8,
        signed: bool,
        args: Vec<Term>,
    },
    Eq(Box<Term>, Box<Term>),
    Lt(Box<Term>, Box<Term>),
    Le(Box<Term>, Box<Term>),
    And(Vec<Term>),
    Or(Vec<Term>),
    Not(Box<Term>),
    Implies(Box<Term>, Box<Term>),
    Ite(Box<Term>, Box<Term>, Box<Term>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum BitOp {
    And,
    Or,
    Xor,
    /// Unary.
    Not,
    Shl,
    /// Arithmetic shift when `signed`, logical otherwise.
    Shr,
}

/// Convenience constructors.
impl Term {
    pub fn var(name: impl Into<String>) -> Term {
        Term::Var(name.into())
    }
    pub fn eq(a: Term, b: Term) -> Term {
        Term::Eq(Box::new(a), Box::new(b))
    }
    pub fn ne(a: Term, b: Term) -> Term {
        Term::Not(Box::new(Term::eq(a, b)))
    }
    pub fn lt(a: Term, b: Term) -> Term {
        Term::Lt(Box::new(a), Box::new(b))
    }
    pub fn le(a: Term, b: Term) -> Term {
        Term::Le(Box::new(a), Box::new(b))
    }
    pub fn not(a: Term) -> Term {
        Term::Not(Box::new(a))
    }
    pub fn implies(a: Term, b: Term) -> Term {
        Term::Implies(Box::new(a), Box::new(b))
    }
    pub fn ite(c: Term, a: Term, b: Term) -> Term {
        Term::Ite(Box::new(c), Box::new(a), Box::new(b))
    }
    pub fn sub(a: Term, b: Term) -> Term {
        Term::Sub(Box::new(a), Box::new(b))
    }
    pub fn and(ts: Vec<Term>) -> Term {
        Term::And(ts)
    }
    pub fn or(ts: Vec<Term>) -> Term {
        Term::Or(ts)
    }
}

/// One satisfiability question.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct Query {
    /// Every free variable with its sort. Names carry no source positions, so that the same
    /// question asked after an edit elsewhere has the same [`Query::key`].
    pub vars: BTreeMap<String, Sort>,
    pub assertions: Vec<Term>,
    /// Extra constraints tried first for a small, readable witness (e.g. `blockDim.x <= 64`);
    /// dropped if the query is unsatisfiable with them. They never change sat vs unsat.
    pub preferred: Vec<Term>,
    /// Variables whose values a `sat` answer reports.
    pub report: Vec<String>,
}

impl Query {
    /// A position-independent hash of the whole question (cache key).
    pub fn key(&self) -> u64 {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        self.hash(&mut h);
        h.finish()
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// Values of [`Query::report`] variables (Bool as 0/1) in a model.
    Sat(BTreeMap<String, i64>),
    Unsat,
    /// Timeout, resource limit, interruption, or a solver error; the reason says which.
    Unknown(String),
}

/// Bounds for one solver call. `rlimit` (Z3's deterministic resource limit) is always set and
/// decides the answer; `timeout_ms` is enforced by a timer that interrupts the call, not by Z3's
/// own `timeout` parameter, which Debian's Z3 4.8.12 can fail to honour in nonlinear arithmetic
/// (the call then blocks forever). The solver pool adds a watchdog on top.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Limits {
    pub timeout_ms: u64,
    pub rlimit: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            timeout_ms: 2000,
            rlimit: 10_000_000,
        }
    }
}
