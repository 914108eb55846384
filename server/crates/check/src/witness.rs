//! From a model to an [`ir::Witness`](cudarace_ir::Witness).

use cudarace_ir::Witness;
use cudarace_solver::Term;
use std::collections::{BTreeMap, BTreeSet};

fn dim(d: &str) -> Option<usize> {
    match d {
        "x" => Some(0),
        "y" => Some(1),
        "z" => Some(2),
        _ => None,
    }
}

/// The witness's name of a loop variable from its query name, shared (`loop.i`) or one
/// thread's (`A.loop.i#2`).
pub fn loop_key(name: &str) -> Option<String> {
    let rest = name
        .strip_prefix("A.")
        .or_else(|| name.strip_prefix("B."))
        .unwrap_or(name);
    loop_name(rest)
}

/// The source name of a loop variable from its query name (`loop.i`, `loop.i#2`).
fn loop_name(rest: &str) -> Option<String> {
    rest.strip_prefix("loop.").map(|s| s.to_string())
}

pub fn extract(model: &BTreeMap<String, i64>, cell_arity: usize) -> Witness {
    let mut w = Witness::default();
    let mut cell = vec![None; cell_arity];
    for (name, &val) in model {
        let (thread, rest) = match name.split_once('.') {
            Some(("A", rest)) => (Some(0), rest),
            Some(("B", rest)) => (Some(1), rest),
            _ => (None, name.as_str()),
        };
        match thread {
            Some(t) => {
                let th = if t == 0 {
                    &mut w.thread_a
                } else {
                    &mut w.thread_b
                };
                if let Some(d) = rest.strip_prefix("tid.").and_then(dim) {
                    th.thread_idx[d] = val;
                } else if let Some(d) = rest.strip_prefix("bid.").and_then(dim) {
                    th.block_idx[d] = val;
                } else if let Some(n) = loop_name(rest) {
                    th.loop_vars.insert(n, val);
                }
            }
            None => {
                if let Some(d) = rest.strip_prefix("blockDim.").and_then(dim) {
                    w.block_dim[d] = val;
                } else if let Some(d) = rest.strip_prefix("gridDim.").and_then(dim) {
                    w.grid_dim[d] = val;
                } else if let Some(p) = rest.strip_prefix("param.") {
                    w.params.insert(p.to_string(), val);
                } else if let Some(k) = rest
                    .strip_prefix("cell.")
                    .and_then(|k| k.parse::<usize>().ok())
                {
                    if k < cell.len() {
                        cell[k] = Some(val);
                    }
                } else if let Some(n) = loop_name(rest) {
                    // A loop variable both threads share (aligned synchronized loop).
                    w.thread_a.loop_vars.insert(n.clone(), val);
                    w.thread_b.loop_vars.insert(n, val);
                }
            }
        }
    }
    w.cell = cell.into_iter().map(|c| c.unwrap_or(0)).collect();
    w
}

/// The value of an integer term under a model (variables missing from the model are 0, as in
/// a completed model); `None` on division by zero or overflow.
pub fn eval_int(t: &Term, m: &BTreeMap<String, i64>) -> Option<i64> {
    let e = |x: &Term| eval_int(x, m);
    Some(match t {
        Term::Int(v) => *v,
        Term::Bool(b) => *b as i64,
        Term::Var(v) => m.get(&**v).copied().unwrap_or(0),
        Term::Add(ts) => ts.iter().try_fold(0i64, |acc, x| acc.checked_add(e(x)?))?,
        Term::Mul(ts) => ts.iter().try_fold(1i64, |acc, x| acc.checked_mul(e(x)?))?,
        Term::Sub(a, b) => e(a)?.checked_sub(e(b)?)?,
        Term::Neg(a) => e(a)?.checked_neg()?,
        Term::Div(a, b) => e(a)?.checked_div(e(b)?)?,
        Term::Rem(a, b) => e(a)?.checked_rem(e(b)?)?,
        Term::Mod(a, b) => {
            let d = e(b)?;
            if d == 0 {
                return None;
            }
            e(a)?.rem_euclid(d.checked_abs()?)
        }
        Term::Ite(c, a, b) => {
            if eval_bool(c, m)? {
                e(a)?
            } else {
                e(b)?
            }
        }
        Term::Bit {
            op,
            width,
            signed,
            args,
        } => {
            let vals = args.iter().map(e).collect::<Option<Vec<i64>>>()?;
            cudarace_solver::fold_bits(*op, *signed, u32::from(*width), &vals)?
        }
        _ => eval_bool(t, m)? as i64,
    })
}

pub fn eval_bool(t: &Term, m: &BTreeMap<String, i64>) -> Option<bool> {
    Some(match t {
        Term::Bool(b) => *b,
        Term::Var(v) => m.get(&**v).copied().unwrap_or(0) != 0,
        Term::Eq(a, b) => match (eval_bool_opt(a, m), eval_bool_opt(b, m)) {
            (Some(x), Some(y)) => x == y,
            _ => eval_int(a, m)? == eval_int(b, m)?,
        },
        Term::Lt(a, b) => eval_int(a, m)? < eval_int(b, m)?,
        Term::Le(a, b) => eval_int(a, m)? <= eval_int(b, m)?,
        // Three-valued: a conjunct that is false decides a conjunction even when another
        // cannot be evaluated (`window <= 0 || W % window == 0` with `window == 0`).
        Term::And(ts) => decided_by(ts.iter().map(|x| eval_bool(x, m)), false)?,
        Term::Or(ts) => decided_by(ts.iter().map(|x| eval_bool(x, m)), true)?,
        Term::Not(a) => !eval_bool(a, m)?,
        Term::Implies(a, b) => match (eval_bool(a, m), eval_bool(b, m)) {
            (Some(false), _) | (_, Some(true)) => true,
            (Some(true), Some(false)) => false,
            _ => return None,
        },
        Term::Ite(c, a, b) => {
            if eval_bool(c, m)? {
                eval_bool(a, m)?
            } else {
                eval_bool(b, m)?
            }
        }
        _ => eval_int(t, m)? != 0,
    })
}

/// A conjunction (`decisive` false) or disjunction (`decisive` true) of three-valued operands:
/// `decisive` when one operand is, the other value when all are known, else unknown.
fn decided_by(vals: impl Iterator<Item = Option<bool>>, decisive: bool) -> Option<bool> {
    let mut all_known = true;
    for v in vals {
        match v {
            Some(b) if b == decisive => return Some(decisive),
            Some(_) => {}
            None => all_known = false,
        }
    }
    all_known.then_some(!decisive)
}

/// Only for terms that are Boolean by shape.
fn eval_bool_opt(t: &Term, m: &BTreeMap<String, i64>) -> Option<bool> {
    match t {
        Term::Bool(_)
        | Term::Eq(..)
        | Term::Lt(..)
        | Term::Le(..)
        | Term::And(_)
        | Term::Or(_)
        | Term::Not(_)
        | Term::Implies(..) => eval_bool(t, m),
        _ => None,
    }
}

/// Does `t` hold under the model whatever the values of `unknown` are? Three-valued evaluation:
/// the unknown variables are "any value"; `false && x`, `true || x`, `ite` with a known
/// condition and the like still decide. `false` when it cannot tell (sound for "definite").
pub fn holds_for_any(t: &Term, m: &BTreeMap<String, i64>, unknown: &BTreeSet<String>) -> bool {
    matches!(partial(t, m, unknown), Some(v) if v != 0)
}

/// The value of `t` (booleans as 0/1) if it does not depend on `unknown`; `None` otherwise or on
/// an arithmetic error.
fn partial(t: &Term, m: &BTreeMap<String, i64>, unknown: &BTreeSet<String>) -> Option<i64> {
    let p = |x: &Term| partial(x, m, unknown);
    let known = |ts: &[Term]| ts.iter().map(p).collect::<Option<Vec<i64>>>();
    match t {
        Term::Var(v) if unknown.contains(&**v) => None,
        Term::Int(_) | Term::Bool(_) | Term::Var(_) => eval_int(t, m),
        Term::And(ts) => {
            let vals: Vec<Option<i64>> = ts.iter().map(p).collect();
            if vals.contains(&Some(0)) {
                Some(0)
            } else if vals.iter().all(Option::is_some) {
                Some(1)
            } else {
                None
            }
        }
        Term::Or(ts) => {
            let vals: Vec<Option<i64>> = ts.iter().map(p).collect();
            if vals.iter().any(|v| matches!(v, Some(x) if *x != 0)) {
                Some(1)
            } else if vals.iter().all(Option::is_some) {
                Some(0)
            } else {
                None
            }
        }
        Term::Implies(a, b) => match (p(a), p(b)) {
            (Some(0), _) => Some(1),
            (_, Some(x)) if x != 0 => Some(1),
            (Some(_), Some(_)) => Some(0),
            _ => None,
        },
        Term::Not(a) => p(a).map(|x| (x == 0) as i64),
        Term::Ite(c, a, b) => match p(c) {
            Some(0) => p(b),
            Some(_) => p(a),
            None => match (p(a), p(b)) {
                (Some(x), Some(y)) if x == y => Some(x),
                _ => None,
            },
        },
        Term::Mul(ts) => {
            let vals: Vec<Option<i64>> = ts.iter().map(p).collect();
            if vals.contains(&Some(0)) {
                Some(0)
            } else {
                vals.into_iter()
                    .try_fold(1i64, |acc, x| acc.checked_mul(x?))
            }
        }
        // Every other operator needs all its operands: evaluate it on their values.
        Term::Add(ts) | Term::Bit { args: ts, .. } => {
            let vals = known(ts)?;
            let lits: Vec<Term> = vals.into_iter().map(Term::Int).collect();
            let rebuilt = match t {
                Term::Add(_) => Term::Add(lits.into()),
                Term::Bit {
                    op, width, signed, ..
                } => Term::Bit {
                    op: *op,
                    width: *width,
                    signed: *signed,
                    args: lits.into(),
                },
                _ => return None,
            };
            eval_int(&rebuilt, m)
        }
        Term::Sub(a, b)
        | Term::Div(a, b)
        | Term::Rem(a, b)
        | Term::Mod(a, b)
        | Term::Eq(a, b)
        | Term::Lt(a, b)
        | Term::Le(a, b) => {
            let (x, y) = (Term::Int(p(a)?), Term::Int(p(b)?));
            let rebuilt = match t {
                Term::Sub(..) => Term::sub(x, y),
                Term::Div(..) => Term::Div(x.into(), y.into()),
                Term::Rem(..) => Term::Rem(x.into(), y.into()),
                Term::Mod(..) => Term::Mod(x.into(), y.into()),
                Term::Eq(..) => Term::eq(x, y),
                Term::Lt(..) => Term::lt(x, y),
                _ => Term::le(x, y),
            };
            eval_int(&rebuilt, m)
        }
        Term::Neg(a) => p(a)?.checked_neg(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::terms::{add, and, eq, int, le, lt, modulo, or, tru};
    use cudarace_solver::BitOp;

    #[test]
    fn unknowns_on_untaken_branches_do_not_matter() {
        let m: BTreeMap<String, i64> = [("t".to_string(), 3), ("u".to_string(), 7)].into();
        let unknown: BTreeSet<String> = ["u".to_string()].into();
        let t = Term::var("t");
        let u = Term::var("u");
        // ite(t < 8, t + 1, u) == 4: the unknown is on the branch not taken.
        let table = Term::ite(
            Term::lt(t.clone(), Term::Int(8)),
            Term::Add(vec![t.clone(), Term::Int(1)].into()),
            u.clone(),
        );
        assert!(holds_for_any(&Term::eq(table, Term::Int(4)), &m, &unknown));
        // u == 7 holds in the model, but not whatever u is.
        assert!(!holds_for_any(
            &Term::eq(u.clone(), Term::Int(7)),
            &m,
            &unknown
        ));
        // false || (u == 7) depends on u; true || (u == 7) does not.
        let f = Term::or(vec![Term::Bool(false), Term::eq(u.clone(), Term::Int(7))]);
        assert!(!holds_for_any(&f, &m, &unknown));
        let tr = Term::or(vec![
            Term::eq(t.clone(), Term::Int(3)),
            Term::eq(u.clone(), Term::Int(7)),
        ]);
        assert!(holds_for_any(&tr, &m, &unknown));
        // 0 * u == 0 whatever u is.
        let z = Term::eq(Term::Mul(vec![Term::Int(0), u].into()), Term::Int(0));
        assert!(holds_for_any(&z, &m, &unknown));
    }

    #[test]
    fn model_names_map_to_witness_fields() {
        let mut m = BTreeMap::new();
        for (k, v) in [
            ("A.tid.x", 1),
            ("B.tid.x", 0),
            ("A.bid.y", 2),
            ("B.bid.y", 2),
            ("blockDim.x", 32),
            ("gridDim.x", 4),
            ("param.n", 7),
            ("cell.0", 1),
            ("cell.1", 3),
            ("loop.s", 16),
            ("A.loop.i", 5),
            ("case", 0),
        ] {
            m.insert(k.to_string(), v);
        }
        let w = extract(&m, 2);
        assert_eq!(w.thread_a.thread_idx, [1, 0, 0]);
        assert_eq!(w.thread_b.block_idx, [0, 2, 0]);
        assert_eq!(w.block_dim[0], 32);
        assert_eq!(w.grid_dim[0], 4);
        assert_eq!(w.params.get("n"), Some(&7));
        assert_eq!(w.cell, vec![1, 3]);
        assert_eq!(w.thread_a.loop_vars.get("s"), Some(&16));
        assert_eq!(w.thread_b.loop_vars.get("s"), Some(&16));
        assert_eq!(w.thread_a.loop_vars.get("i"), Some(&5));
        assert_eq!(w.thread_b.loop_vars.get("i"), None);
    }

    /// A disjunct that holds decides a disjunction whose other disjunct divides by zero; a sum
    /// past 64 bits has no value (and findings count such an assumption as broken).
    #[test]
    fn evaluation_is_three_valued() {
        let mut m = BTreeMap::new();
        m.insert("w".to_string(), 0);
        m.insert("W".to_string(), 7);
        m.insert("b".to_string(), i64::MAX);
        let (w, big_w, b) = (Term::var("w"), Term::var("W"), Term::var("b"));
        let divisible = or(vec![
            le(w.clone(), int(0)),
            eq(modulo(big_w.clone(), w.clone()), int(0)),
        ]);
        assert_eq!(eval_bool(&divisible, &m), Some(true));
        let both = and(vec![
            lt(big_w.clone(), int(0)),
            eq(modulo(big_w, w), int(0)),
        ]);
        assert_eq!(eval_bool(&both, &m), Some(false));
        let offset = le(add(b, int(1)), int(5));
        assert_eq!(eval_bool(&offset, &m), None);
        assert_eq!(
            eval_bool(&Term::implies(offset.clone(), tru()), &m),
            Some(true)
        );
        assert_eq!(eval_bool(&or(vec![offset, Term::Bool(false)]), &m), None);
    }

    #[test]
    fn evaluation_follows_c_and_bit_semantics() {
        let mut m = BTreeMap::new();
        m.insert("t".to_string(), 5);
        let t = Term::var("t");
        assert_eq!(
            eval_int(
                &Term::Div(
                    std::sync::Arc::new(Term::Int(-7)),
                    std::sync::Arc::new(Term::Int(2))
                ),
                &m
            ),
            Some(-3)
        );
        assert_eq!(
            eval_int(
                &Term::Rem(
                    std::sync::Arc::new(Term::Int(-7)),
                    std::sync::Arc::new(Term::Int(2))
                ),
                &m
            ),
            Some(-1)
        );
        assert_eq!(
            eval_int(
                &Term::Mod(
                    std::sync::Arc::new(Term::Int(-7)),
                    std::sync::Arc::new(Term::Int(2))
                ),
                &m
            ),
            Some(1)
        );
        let x = Term::Bit {
            op: BitOp::Xor,
            width: 32,
            signed: false,
            args: vec![t.clone(), Term::Int(3)].into(),
        };
        assert_eq!(eval_int(&x, &m), Some(6));
        // A 64-bit shift by 2^32 + 1 (past the width) is 0, not a shift by 1.
        let far = Term::Bit {
            op: BitOp::Shl,
            width: 64,
            signed: false,
            args: vec![Term::Int(1), Term::Int((1 << 32) + 1)].into(),
        };
        assert_eq!(eval_int(&far, &m), Some(0));
        assert_eq!(eval_bool(&Term::lt(t, Term::Int(6)), &m), Some(true));
        assert_eq!(
            eval_int(
                &Term::Div(
                    std::sync::Arc::new(Term::Int(1)),
                    std::sync::Arc::new(Term::Int(0))
                ),
                &m
            ),
            None
        );
    }
}
