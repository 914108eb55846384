//! From a model to an [`ir::Witness`](cudarace_ir::Witness).

use cudarace_ir::Witness;
use cudarace_solver::{BitOp, Term};
use std::collections::BTreeMap;

fn dim(d: &str) -> Option<usize> {
    match d {
        "x" => Some(0),
        "y" => Some(1),
        "z" => Some(2),
        _ => None,
    }
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
            let w = (*width).clamp(1, 64) as u32;
            let mask: u64 = if w == 64 { u64::MAX } else { (1u64 << w) - 1 };
            let vals: Vec<u64> = args
                .iter()
                .map(|x| e(x).map(|v| (v as u64) & mask))
                .collect::<Option<_>>()?;
            let r = match (op, vals.as_slice()) {
                (BitOp::Not, [a]) => !a,
                (BitOp::And, [a, b]) => a & b,
                (BitOp::Or, [a, b]) => a | b,
                (BitOp::Xor, [a, b]) => a ^ b,
                (BitOp::Shl, [a, b]) => a.checked_shl(*b as u32).unwrap_or(0),
                (BitOp::Shr, [a, b]) => {
                    if *signed {
                        let sa = ((a << (64 - w)) as i64) >> (64 - w);
                        (sa.checked_shr(*b as u32)
                            .unwrap_or(if sa < 0 { -1 } else { 0 })) as u64
                    } else {
                        a.checked_shr(*b as u32).unwrap_or(0)
                    }
                }
                _ => return None,
            } & mask;
            if *signed && w < 64 && (r >> (w - 1)) & 1 == 1 {
                (r | !mask) as i64
            } else {
                r as i64
            }
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
        Term::And(ts) => {
            let mut all = true;
            for x in ts.iter() {
                all &= eval_bool(x, m)?;
            }
            all
        }
        Term::Or(ts) => {
            let mut any = false;
            for x in ts.iter() {
                any |= eval_bool(x, m)?;
            }
            any
        }
        Term::Not(a) => !eval_bool(a, m)?,
        Term::Implies(a, b) => !eval_bool(a, m)? || eval_bool(b, m)?,
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

#[cfg(test)]
mod tests {
    use super::*;

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
