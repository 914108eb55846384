//! The formula language the checker speaks. Integers are mathematical (the checker adds the C
//! type ranges as constraints); the bitwise operators carry the bit width they are evaluated in
//! and are the only place where bit-vector reasoning is used.

use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Sort {
    Int,
    Bool,
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
/// Terms are immutable and share their parts: cloning one copies a pointer (the checker
/// conjoins the same loop ranges into many guards and renames the same indices per pair).
pub enum Term {
    Int(i64),
    Bool(bool),
    /// A free variable; its sort is declared in [`Query::vars`].
    Var(Arc<str>),
    Add(Arc<[Term]>),
    Sub(Arc<Term>, Arc<Term>),
    Mul(Arc<[Term]>),
    Neg(Arc<Term>),
    /// C division (truncation toward zero).
    Div(Arc<Term>, Arc<Term>),
    /// C remainder (sign of the dividend).
    Rem(Arc<Term>, Arc<Term>),
    /// Mathematical modulo with a non-negative result (`mod` of SMT-LIB), for residue encodings.
    Mod(Arc<Term>, Arc<Term>),
    /// Bitwise operators on the two's-complement representation in `width` bits; the operands
    /// and the result are integers (the result is read back unsigned when `signed` is false).
    Bit {
        op: BitOp,
        width: u8,
        signed: bool,
        args: Arc<[Term]>,
    },
    Eq(Arc<Term>, Arc<Term>),
    Lt(Arc<Term>, Arc<Term>),
    Le(Arc<Term>, Arc<Term>),
    And(Arc<[Term]>),
    Or(Arc<[Term]>),
    Not(Arc<Term>),
    Implies(Arc<Term>, Arc<Term>),
    Ite(Arc<Term>, Arc<Term>, Arc<Term>),
}

/// How many nodes of a term its hash looks at (breadth first: the operator and operands near
/// the top, where terms differ most).
const HASHED_NODES: usize = 128;

/// A hash of the top of the term, consistent with `==` (equal terms have equal tops). A term's
/// tree can be far larger than its graph (guards merged from branches share their parts), and
/// a hash of the whole tree took seconds where `==` on shared parts is a pointer comparison.
impl Hash for Term {
    fn hash<H: Hasher>(&self, state: &mut H) {
        let mut queue = std::collections::VecDeque::from([self]);
        let mut n = 0;
        while let Some(t) = queue.pop_front() {
            n += 1;
            if n > HASHED_NODES {
                break;
            }
            std::mem::discriminant(t).hash(state);
            match t {
                Term::Int(v) => v.hash(state),
                Term::Bool(b) => b.hash(state),
                Term::Var(v) => v.hash(state),
                Term::Bit {
                    op, width, signed, ..
                } => (op, width, signed).hash(state),
                _ => {}
            }
            let kids = t.children();
            kids.len().hash(state);
            queue.extend(kids);
        }
    }
}

/// Dropping a term frees its uniquely owned parts with an explicit stack, not by recursion: a
/// deep term (a long chain of `!` or `ite`) would otherwise overflow a thread's stack.
impl Drop for Term {
    fn drop(&mut self) {
        if !owns_composite_part(self) {
            return;
        }
        let mut stack = Vec::new();
        detach_parts(self, &mut stack);
        while let Some(mut t) = stack.pop() {
            detach_parts(&mut t, &mut stack);
            // `t` is dropped here with only leaves or shared parts left.
        }
    }
}

/// Identifies a composite term by the shared parts it is built of: two terms with the same key
/// have the same operands (the same allocations), so they are equal. Keys are addresses, valid
/// while the term they were taken from is alive (one traversal).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ShareKey(u8, usize, usize, usize);

impl Term {
    /// The [`ShareKey`] of a composite term (`None` for leaves). Terms share their parts, and a
    /// term built by merging branches (`ite(c, t, e)` per assignment, guards conjoined per
    /// branch) can be a small graph whose tree is huge; traversals that visit a shared part
    /// once (see `cudarace_check::terms`) stay linear in the graph.
    pub fn share_key(&self) -> Option<ShareKey> {
        let list =
            |tag: u8, ts: &Arc<[Term]>| Some(ShareKey(tag, ts.as_ptr() as usize, ts.len(), 0));
        let one = |tag: u8, a: &Arc<Term>| Some(ShareKey(tag, Arc::as_ptr(a) as usize, 0, 0));
        let two = |tag: u8, a: &Arc<Term>, b: &Arc<Term>| {
            Some(ShareKey(
                tag,
                Arc::as_ptr(a) as usize,
                Arc::as_ptr(b) as usize,
                0,
            ))
        };
        match self {
            Term::Int(_) | Term::Bool(_) | Term::Var(_) => None,
            Term::Add(ts) => list(1, ts),
            Term::Mul(ts) => list(2, ts),
            Term::And(ts) => list(3, ts),
            Term::Or(ts) => list(4, ts),
            Term::Bit {
                op,
                width,
                signed,
                args,
            } => Some(ShareKey(
                5,
                args.as_ptr() as usize,
                args.len(),
                ((*op as usize) << 16) | ((*width as usize) << 1) | usize::from(*signed),
            )),
            Term::Neg(a) => one(6, a),
            Term::Not(a) => one(7, a),
            Term::Sub(a, b) => two(8, a, b),
            Term::Div(a, b) => two(9, a, b),
            Term::Rem(a, b) => two(10, a, b),
            Term::Mod(a, b) => two(11, a, b),
            Term::Eq(a, b) => two(12, a, b),
            Term::Lt(a, b) => two(13, a, b),
            Term::Le(a, b) => two(14, a, b),
            Term::Implies(a, b) => two(15, a, b),
            Term::Ite(c, a, b) => Some(ShareKey(
                16,
                Arc::as_ptr(c) as usize,
                Arc::as_ptr(a) as usize,
                Arc::as_ptr(b) as usize,
            )),
        }
    }

    /// Each operand of a term, in order, without collecting them ([`Term::children`] allocates a
    /// vector per node, which walks of large terms pay for every node).
    pub fn for_each_child<'a>(&'a self, f: &mut dyn FnMut(&'a Term)) {
        match self {
            Term::Int(_) | Term::Bool(_) | Term::Var(_) => {}
            Term::Add(ts) | Term::Mul(ts) | Term::And(ts) | Term::Or(ts) => ts.iter().for_each(f),
            Term::Bit { args, .. } => args.iter().for_each(f),
            Term::Neg(a) | Term::Not(a) => f(a),
            Term::Sub(a, b)
            | Term::Div(a, b)
            | Term::Rem(a, b)
            | Term::Mod(a, b)
            | Term::Eq(a, b)
            | Term::Lt(a, b)
            | Term::Le(a, b)
            | Term::Implies(a, b) => {
                f(a);
                f(b);
            }
            Term::Ite(c, a, b) => {
                f(c);
                f(a);
                f(b);
            }
        }
    }

    /// The operands of a term, in order (what the encoder builds it from).
    pub fn children(&self) -> Vec<&Term> {
        let mut out = Vec::new();
        self.for_each_child(&mut |c| out.push(c));
        out
    }
}

/// Does a formula multiply two non-constants, divide (or take a remainder) by a non-constant
/// or use a bitwise operator? (Each shared part is looked at once.)
pub fn nonlinear(ts: &[Term]) -> bool {
    let mut seen = std::collections::HashSet::new();
    let mut stack: Vec<&Term> = ts.iter().collect();
    while let Some(t) = stack.pop() {
        if let Some(k) = t.share_key() {
            if !seen.insert(k) {
                continue;
            }
        }
        match t {
            Term::Mul(fs) if fs.iter().filter(|f| !matches!(f, Term::Int(_))).count() >= 2 => {
                return true
            }
            Term::Div(_, d) | Term::Rem(_, d) | Term::Mod(_, d) if !matches!(**d, Term::Int(_)) => {
                return true
            }
            Term::Bit { .. } => return true,
            _ => {}
        }
        stack.extend(t.children());
    }
    false
}

/// Does a formula divide (or take a remainder) by a non-constant? (An explicit stack: terms
/// can be deeper than a thread's stack allows recursion for.)
pub fn divides_by_variable(ts: &[Term]) -> bool {
    let mut stack: Vec<&Term> = ts.iter().collect();
    while let Some(t) = stack.pop() {
        if let Term::Div(_, d) | Term::Rem(_, d) | Term::Mod(_, d) = t {
            if !matches!(**d, Term::Int(_)) {
                return true;
            }
        }
        stack.extend(t.children());
    }
    false
}

fn is_composite(t: &Term) -> bool {
    !matches!(t, Term::Int(_) | Term::Bool(_) | Term::Var(_))
}

fn unique_composite(a: &Arc<Term>) -> bool {
    Arc::strong_count(a) == 1 && is_composite(a)
}

fn unique_list(ts: &Arc<[Term]>) -> bool {
    Arc::strong_count(ts) == 1 && ts.iter().any(is_composite)
}

fn owns_composite_part(t: &Term) -> bool {
    match t {
        Term::Int(_) | Term::Bool(_) | Term::Var(_) => false,
        Term::Add(ts) | Term::Mul(ts) | Term::And(ts) | Term::Or(ts) => unique_list(ts),
        Term::Bit { args, .. } => unique_list(args),
        Term::Sub(a, b)
        | Term::Div(a, b)
        | Term::Rem(a, b)
        | Term::Mod(a, b)
        | Term::Eq(a, b)
        | Term::Lt(a, b)
        | Term::Le(a, b)
        | Term::Implies(a, b) => unique_composite(a) || unique_composite(b),
        Term::Neg(a) | Term::Not(a) => unique_composite(a),
        Term::Ite(c, a, b) => unique_composite(c) || unique_composite(a) || unique_composite(b),
    }
}

/// Moves the uniquely owned composite parts of `t` onto `stack`, leaving leaves in their place.
fn detach_parts(t: &mut Term, stack: &mut Vec<Term>) {
    static LEAF: std::sync::LazyLock<Arc<Term>> =
        std::sync::LazyLock::new(|| Arc::new(Term::Bool(false)));
    let mut one = |a: &mut Arc<Term>| {
        if unique_composite(a) {
            let taken = std::mem::replace(a, LEAF.clone());
            if let Some(inner) = Arc::into_inner(taken) {
                stack.push(inner);
            }
        }
    };
    match t {
        Term::Int(_) | Term::Bool(_) | Term::Var(_) => {}
        Term::Add(ts)
        | Term::Mul(ts)
        | Term::And(ts)
        | Term::Or(ts)
        | Term::Bit { args: ts, .. } => {
            if let Some(items) = Arc::get_mut(ts) {
                for x in items.iter_mut().filter(|x| is_composite(x)) {
                    stack.push(std::mem::replace(x, Term::Bool(false)));
                }
            }
        }
        Term::Sub(a, b)
        | Term::Div(a, b)
        | Term::Rem(a, b)
        | Term::Mod(a, b)
        | Term::Eq(a, b)
        | Term::Lt(a, b)
        | Term::Le(a, b)
        | Term::Implies(a, b) => {
            one(a);
            one(b);
        }
        Term::Neg(a) | Term::Not(a) => one(a),
        Term::Ite(c, a, b) => {
            one(c);
            one(a);
            one(b);
        }
    }
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

/// Convenience constructors. `not` and `sub` build formulas; they are not the `Not`/`Sub`
/// operators on values, which `Term` deliberately does not implement.
#[allow(clippy::should_implement_trait)]
impl Term {
    pub fn var(name: impl Into<String>) -> Term {
        Term::Var(name.into().into())
    }
    pub fn eq(a: Term, b: Term) -> Term {
        Term::Eq(Arc::new(a), Arc::new(b))
    }
    pub fn ne(a: Term, b: Term) -> Term {
        Term::Not(Arc::new(Term::eq(a, b)))
    }
    pub fn lt(a: Term, b: Term) -> Term {
        Term::Lt(Arc::new(a), Arc::new(b))
    }
    pub fn le(a: Term, b: Term) -> Term {
        Term::Le(Arc::new(a), Arc::new(b))
    }
    pub fn not(a: Term) -> Term {
        Term::Not(Arc::new(a))
    }
    pub fn implies(a: Term, b: Term) -> Term {
        Term::Implies(Arc::new(a), Arc::new(b))
    }
    pub fn ite(c: Term, a: Term, b: Term) -> Term {
        Term::Ite(Arc::new(c), Arc::new(a), Arc::new(b))
    }
    pub fn sub(a: Term, b: Term) -> Term {
        Term::Sub(Arc::new(a), Arc::new(b))
    }
    pub fn and(ts: Vec<Term>) -> Term {
        Term::And(ts.into())
    }
    pub fn or(ts: Vec<Term>) -> Term {
        Term::Or(ts.into())
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
    /// Plausibility assumptions (sizes and strides at least 1, indices in bounds, …): a `sat`
    /// answer's model satisfies all of them whenever some model does. Unlike `assertions` they
    /// never turn sat into unsat: when no model satisfies them, the answer is a model that
    /// breaks some (the caller evaluates them on it to say which).
    pub assumptions: Vec<Term>,
    /// Indices of `assumptions` that a probe may break by its values alone and still give a
    /// witness worth keeping (layouts `X * S + Y`: every size 2 against `s3 + l3 <= d3`; a
    /// leading dimension `ld / 32 >= h` with `ld == h == 2`): such
    /// a probe is tried without the assumptions, and its model is the answer when the normal
    /// checks do not decide in time whether a plausible witness exists.
    pub fallback_assumptions: Vec<usize>,
    /// Candidate preconditions, simplest first (`m >= gridDim.x`, …): on `sat`, each is tried
    /// as an extra assertion under a small budget, and the answer's model names the first under
    /// which the query is unsat ([`PRECONDITION_KEY`] → its index). Never changes the answer.
    pub preconditions: Vec<Term>,
    /// What each side of the pair needs to execute (its thread's guard): a precondition under
    /// which one of them is unsatisfiable, together with the first [`Query::reach_base`]
    /// assertions, removes the race only by removing the code (`start >= finish` over
    /// `start <= i < finish`) and is not named.
    pub reach: Vec<Term>,
    /// How many of the first `assertions` hold for any two threads (ranges and launch facts,
    /// not the race): the context of the [`Query::reach`] checks.
    pub reach_base: usize,
    /// What the two sides need to execute at once besides their [`Query::reach`] terms (that
    /// they are two different threads): a precondition under which both sides together are
    /// unsatisfiable removes the race only by leaving one thread, and is not named either.
    pub together: Vec<Term>,
    /// Concrete values to try first for a nonlinear query (e.g. every size parameter `== 2`):
    /// each set is asserted with the assumptions on a small budget before the normal checks,
    /// and a model found is the answer (it is a model of the query that satisfies every
    /// assumption). Z3 finds models of nonlinear division and remainder slowly, and with the
    /// divisors fixed they are linear. Never changes sat vs unsat: an unsat or undecided probe
    /// only means that the normal checks follow.
    pub probes: Vec<Vec<Term>>,
    /// Variables whose values a `sat` answer reports.
    pub report: Vec<String>,
}

impl Query {
    /// A query of `assertions` over `vars` and nothing else (no assumptions, preferences,
    /// preconditions, probes or reported values).
    pub fn new(vars: BTreeMap<String, Sort>, assertions: Vec<Term>) -> Query {
        Query {
            vars,
            assertions,
            preferred: vec![],
            assumptions: vec![],
            fallback_assumptions: vec![],
            preconditions: vec![],
            reach: vec![],
            reach_base: 0,
            together: vec![],
            probes: vec![],
            report: vec![],
        }
    }

    /// A position-independent hash of the whole question (cache key).
    pub fn key(&self) -> u64 {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        self.hash(&mut h);
        h.finish()
    }
}

/// The model entry of a `sat` answer that names the precondition found (index into
/// [`Query::preconditions`]); absent when none removes the witness.
pub const PRECONDITION_KEY: &str = "$precondition";

/// The model entry of a `sat` answer that the time limit may have shaped: some check of the
/// query was stopped by the clock (or the precondition search ran out of time), so with more
/// time the witness could be a plausible one or name a precondition. Such an answer is right
/// (a real model) but not final: a caller that solved under a short first limit solves it again.
pub const INCOMPLETE_KEY: &str = "$incomplete";

/// The reason of an `unknown` answer stopped by the clock after the solver proved that no
/// witness satisfies the plausibility assumptions ([`Query::assumptions`]): the pair is
/// race-free for the values a caller would pass, and whether a race needs others is undecided.
/// Like a plain `"timeout"`, a caller with more time asks again.
pub const TIMEOUT_PLAUSIBLY_RACE_FREE: &str =
    "timeout: race-free for the values a caller would pass, undecided for others";

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
