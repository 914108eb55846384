//! Layouts whose steps are not a plain mixed radix.
//!
//! - **Strided digits.** A strided slice reads cell `(i * s0 + b0, j * s1 + b1)` of rows `i1`
//!   wide: `(i * s0 + b0) * i1 + (j * s1 + b1)`. The steps of the varying terms (`s0 * i1`,
//!   `s1`) do not divide one another; the steps are what the terms share (`i1`), and each digit
//!   (`j * s1 + b1`) stays inside its row like any other ([`shared_steps`]).
//! - **Independent strides.** A tensor passed as strides: `b * batchOffset + g * groupOffset +
//!   i * stride`, three sizes none of which divides another. The caller passes strides that keep
//!   the digits apart (each stride past the span of the digits below it, in some order), as every
//!   tensor layout does; that is assumed ([`independent_stride_assumptions`]), and a race that
//!   needs two digit tuples to meet in one cell is conditional, `only if strides … overlap`. A
//!   race of two threads with the same digits (an offset that forgets a digit) keeps every
//!   stride apart and stays definite.

use super::{gcd, is_chain, quotient, Atom, Ctx, Poly, Step};
use crate::assumptions::{Assumption, Broken};
use crate::terms::*;
use cudarace_solver::Term;

/// At most this many independent strides (their orders are tried one by one).
const MAX_STRIDES: usize = 4;

/// The common factor of two steps: the gcd of their constants, the sizes both have.
fn common(a: &Step, b: &Step) -> Step {
    let mut rest = b.1.clone();
    let mut shared = Vec::new();
    for x in &a.1 {
        if let Some(i) = rest.iter().position(|y| y == x) {
            shared.push(rest.remove(i));
        }
    }
    (gcd(a.0, b.0).max(1), shared)
}

/// The steps of an index as what its terms with sizes share, pairwise (`(i * s0 + b0) * i1 *
/// i2 + (j * s1 + b1) * i2 + …` shares `i1 * i2` and `i2`), when they divide one another.
pub(super) fn shared_steps(p: &Poly) -> Option<Vec<Step>> {
    let terms: Vec<Step> =
        p.0.iter()
            .filter_map(|(m, c)| {
                let sizes: Vec<Atom> = m.iter().filter(|a| !a.is_var()).cloned().collect();
                (!sizes.is_empty()).then(|| (c.abs(), sizes))
            })
            .collect();
    // Only for an index with a varying term that has sizes of its own (a strided digit).
    if !p
        .0
        .keys()
        .any(|m| m.iter().any(Atom::is_var) && m.iter().any(|a| !a.is_var()))
    {
        return None;
    }
    let mut steps: Vec<Step> = Vec::new();
    for (i, a) in terms.iter().enumerate() {
        for b in &terms[i + 1..] {
            let s = common(a, b);
            if s != (1, vec![]) && !steps.contains(&s) {
                steps.push(s);
            }
        }
    }
    steps.sort_by_key(|(c, s)| (s.len(), *c));
    if steps.is_empty() || !is_chain(&steps) {
        return None;
    }
    // Below the top step, each varying term is its step times at most one stride, a
    // parameter (`j * s1 * i2`): a term with other sizes (`blockIdx.z * gridDim.y * gridDim.x *
    // n` over steps `n`, `n * w`) is no digit of that level, and its level is not known.
    for (m, c) in &p.0 {
        let sizes: Vec<Atom> = m.iter().filter(|a| !a.is_var()).cloned().collect();
        if sizes.len() == m.len() {
            continue;
        }
        let term = (c.abs(), sizes);
        let level = steps.iter().rposition(|s| quotient(&term, s).is_some());
        if level == Some(steps.len() - 1) {
            continue;
        }
        let rest = match level {
            Some(l) => quotient(&term, &steps[l])?.1,
            None => term.1,
        };
        let stride = match rest.as_slice() {
            [] => true,
            [Atom::Size { var, .. }] => var.starts_with("param."),
            _ => false,
        };
        if !stride {
            return None;
        }
    }
    Some(steps)
}

/// The assumption that the strides of an index keep its digits apart: for some order of the
/// strides, the lowest is at least 1 and each is past the span of the digits below it
/// (`stride >= (groups - 1) * groupOffset + 1`). Each varying term is one value times a
/// positive step; at most one digit may have no bound (it is then the highest).
pub(super) fn independent_stride_assumptions(
    cx: &Ctx,
    p: &Poly,
    out: &mut Vec<(String, Assumption)>,
) {
    // Each step with the largest value of its digit (None: unbounded).
    let mut digits: Vec<(Step, Option<Poly>)> = Vec::new();
    for (m, c) in &p.0 {
        let (vars, sizes): (Vec<Atom>, Vec<Atom>) = m.iter().cloned().partition(Atom::is_var);
        if vars.is_empty() {
            continue;
        }
        let [Atom::Var(v)] = vars.as_slice() else {
            return;
        };
        if *c < 0 {
            return;
        }
        // A value in two terms steps by their sum (`index * (s + t)` read as `index * s +
        // index * t`): one step, not two independent ones.
        if p.0.keys().filter(|m| m.contains(&vars[0])).count() > 1 {
            return;
        }
        let step = (*c, sizes);
        let ub = cx.ubs.get(v).and_then(|u| u.first().cloned());
        match digits.iter_mut().find(|(s, _)| *s == step) {
            Some((_, hi)) => *hi = hi.take().zip(ub).and_then(|(h, u)| h.add(&u)),
            None => digits.push((step, ub)),
        }
    }
    // Only a caller's layout: every step but the unit one names a parameter. Constant steps
    // and launch sizes are the kernel's own layout (`p + blockIdx.x * blockDim.x` read as
    // `float4`s, steps 4 and `blockDim.x`), whose overlap is the kernel's bug.
    let names_param = |sizes: &[Atom]| {
        sizes
            .iter()
            .any(|a| matches!(a, Atom::Size { var, .. } if var.starts_with("param.")))
    };
    if digits.len() < 2
        || digits.len() > MAX_STRIDES
        || !digits
            .iter()
            .all(|(step, _)| *step == (1, vec![]) || names_param(&step.1))
    {
        return;
    }
    digits.sort_by_key(|(_, hi)| hi.is_none());
    let bounded = digits.iter().filter(|(_, hi)| hi.is_some()).count();
    if digits.len() - bounded > 1 {
        return;
    }
    let mut orders: Vec<Term> = Vec::new();
    for mut order in permutations(bounded) {
        order.extend(bounded..digits.len());
        let mut conditions = Vec::new();
        // The largest value of the digits below, Σ hi * step.
        let mut below = Poly::default();
        for i in order {
            let ((c, sizes), hi) = &digits[i];
            let step = Poly::mono(*c, sizes.clone());
            let Some(least) = below.add(&Poly::constant(1)) else {
                return;
            };
            conditions.push(le(least.term(), step.term()));
            if let Some(hi) = hi {
                let Some(next) = hi.mul(&step).and_then(|h| below.add(&h)) else {
                    return;
                };
                below = next;
            }
        }
        orders.push(and(conditions));
    }
    let mut names: Vec<String> = Vec::new();
    let mut subjects: Vec<String> = Vec::new();
    for ((c, sizes), hi) in &digits {
        names.push(Poly::mono(*c, sizes.clone()).text());
        let hi_atoms = hi.iter().flat_map(|h| h.0.keys().flatten());
        for a in sizes.iter().chain(hi_atoms) {
            if let Atom::Size { var, text, .. } = a {
                if var.starts_with("param.") && !subjects.contains(text) {
                    subjects.push(text.clone());
                }
            }
        }
    }
    names.sort();
    let text = format!("strides {} overlap", names.join(", "));
    if !out.iter().any(|(k, _)| *k == text) {
        out.push((
            text.clone(),
            Assumption {
                term: or(orders),
                broken: Broken::Layout { text, subjects },
            },
        ));
    }
}

/// Every order of `0..n` (n at most [`MAX_STRIDES`]).
fn permutations(n: usize) -> Vec<Vec<usize>> {
    let mut out: Vec<Vec<usize>> = vec![vec![]];
    for _ in 0..n {
        let mut next = Vec::new();
        for p in &out {
            for i in 0..n {
                if !p.contains(&i) {
                    let mut q = p.clone();
                    q.push(i);
                    next.push(q);
                }
            }
        }
        out = next;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn size(name: &str) -> Atom {
        Atom::Size {
            var: format!("param.{name}"),
            text: name.into(),
            signed: false,
        }
    }

    #[test]
    fn strided_digits_step_by_what_their_terms_share() {
        // (i * s0 + b0) * i1 + (j * s1 + b1)
        let var = |v: &str| Atom::Var(v.into());
        let mut p = Poly::default();
        let mut mono = |atoms: Vec<Atom>| {
            let mut m = atoms;
            m.sort();
            p.push(m, 1).unwrap();
        };
        mono(vec![var("i"), size("s0"), size("i1")]);
        mono(vec![size("b0"), size("i1")]);
        mono(vec![var("j"), size("s1")]);
        mono(vec![size("b1")]);
        assert_eq!(shared_steps(&p), Some(vec![(1, vec![size("i1")])]));
    }

    #[test]
    fn every_order_of_the_strides_is_tried() {
        assert_eq!(permutations(3).len(), 6);
        assert_eq!(permutations(0), vec![Vec::<usize>::new()]);
    }
}
