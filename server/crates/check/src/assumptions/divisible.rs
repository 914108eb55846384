//! `divisible-sizes`: a size the kernel cuts into packs of a constant `K` is a whole number of
//! packs.
//!
//! ```cuda
//! int chan = (pack * 32) % c;  int i = (pack * 32) / c;   // 32 channels at a time
//! out[chan * items + i * 32 + lane] = …;
//!
//! transpose(&B[b / 32], ldb / 32);                        // rows of `ldb` bits, 32 per word
//! ```
//!
//! Two shapes, both in the index of an access (through the locals assigned once, which also
//! hold the arguments of inlined helpers):
//! - a multiple of `K` divided by a parameter, or its remainder (`(x * 32) % c`, `(x * 32) / c`):
//!   packs of `K` channels walk `c` channels, and a pack that straddles the end of `c` wraps
//!   into the next row: `c` is written to be a multiple of `K`;
//! - a parameter divided by `K` as the factor of a product (`(ldb / 32) * row`): a row of
//!   `ldb` units counted in words of `K`, whose last word would be shared by two rows unless
//!   `ldb` is a multiple of `K`;
//! - the same with a parameter for `K` (`(W / window) * row`): a row of `W` pixels counted in
//!   windows of `window` (Swin's shifted-window partition), whose last window would reach into
//!   the next row unless `W` is a multiple of `window`.
//!
//! Such sizes are padded on the host (darknet aligns its bit rows to 32 and its channels to
//! packs of 32). A race that needs a size that is not a multiple is conditional, `only if
//! c % 32 != 0`. Nothing is assumed of a parameter the launch sites bind to a value.

use super::{assigned_once, free_int_param, strip_casts, visit_accesses, Assumption, Broken};
use crate::terms::*;
use cudarace_ir::{BinOp, Expr, Kernel, LocalId};
use cudarace_solver::Term;
use std::collections::BTreeMap;

/// How deep the locals of an index are followed.
const MAX_DEPTH: u32 = 16;

/// What a size is cut into: packs of a constant, or of a parameter's value.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Pack {
    Constant(i64),
    Param(String),
}

/// The `divisible-sizes` assumptions of a kernel (see the module documentation).
pub fn divisible_size_assumptions(kernel: &Kernel) -> Vec<Assumption> {
    let once = assigned_once(kernel);
    let mut found: Vec<(String, Pack)> = Vec::new();
    visit_accesses(&kernel.body, &mut |index| {
        scan(kernel, &once, index, 0, &mut found);
    });
    let param = |name: &str| Term::Var(format!("param.{name}").into());
    found
        .into_iter()
        .map(|(name, pack)| {
            let p = param(&name);
            let (k, text, mut subjects) = match pack {
                Pack::Constant(k) => (int(k), format!("{name} % {k} != 0"), vec![]),
                Pack::Param(q) => (param(&q), format!("{name} % {q} != 0"), vec![q]),
            };
            subjects.insert(0, name);
            Assumption {
                // A pack of no positive size is no layout (`k <= 0` breaks other assumptions).
                term: or(vec![
                    le(p.clone(), int(0)),
                    le(k.clone(), int(0)),
                    eq(modulo(p, k), int(0)),
                ]),
                broken: Broken::Layout { text, subjects },
            }
        })
        .collect()
}

/// The name of the integer parameter `e` names (see [`free_int_param`]).
fn int_param(kernel: &Kernel, e: &Expr) -> Option<String> {
    free_int_param(kernel, e).map(|p| p.name.clone())
}

/// `e` with a local assigned once replaced by its value (one level).
fn resolved<'a>(once: &'a BTreeMap<LocalId, Expr>, e: &'a Expr) -> &'a Expr {
    match strip_casts(e) {
        Expr::Local(l) => once.get(l).map_or(e, strip_casts),
        other => other,
    }
}

/// The constant `K >= 2` that `e` is a product with (`x * 32`, `32 * x`).
fn constant_factor(once: &BTreeMap<LocalId, Expr>, e: &Expr) -> Option<i64> {
    match resolved(once, e) {
        Expr::Binary(BinOp::Mul, a, b) => [a, b].into_iter().find_map(|f| match strip_casts(f) {
            Expr::Int(k) if *k >= 2 => Some(*k),
            _ => None,
        }),
        _ => None,
    }
}

/// `(P, K)` for a parameter `P` divided by a constant `K >= 2` (`ldb / 32`) or by another
/// parameter (`W / window`).
fn param_by_pack(
    kernel: &Kernel,
    once: &BTreeMap<LocalId, Expr>,
    e: &Expr,
) -> Option<(String, Pack)> {
    match resolved(once, e) {
        Expr::Binary(BinOp::Div, p, k) => {
            let p = int_param(kernel, p)?;
            match strip_casts(k) {
                Expr::Int(k) if *k >= 2 => Some((p, Pack::Constant(*k))),
                k => int_param(kernel, k)
                    .filter(|q| *q != p)
                    .map(|q| (p, Pack::Param(q))),
            }
        }
        _ => None,
    }
}

fn scan(
    kernel: &Kernel,
    once: &BTreeMap<LocalId, Expr>,
    e: &Expr,
    depth: u32,
    found: &mut Vec<(String, Pack)>,
) {
    if depth > MAX_DEPTH {
        return;
    }
    let mut push = |x: (String, Pack)| {
        if !found.contains(&x) {
            found.push(x);
        }
    };
    match strip_casts(e) {
        Expr::Local(l) => {
            if let Some(v) = once.get(l) {
                scan(kernel, once, v, depth + 1, found);
            }
            return;
        }
        // `(x * K) % P`, `(x * K) / P`: packs of `K` over `P`.
        Expr::Binary(BinOp::Div | BinOp::Rem, x, p) => {
            if let (Some(k), Some(name)) = (constant_factor(once, x), int_param(kernel, p)) {
                push((name, Pack::Constant(k)));
            }
        }
        // `(P / K) * x`: rows of `P` counted in words of `K`.
        Expr::Binary(BinOp::Mul, a, b) => {
            for f in [a, b] {
                if let Some(x) = param_by_pack(kernel, once, f) {
                    push(x);
                }
            }
        }
        _ => {}
    }
    match strip_casts(e) {
        Expr::Binary(_, a, b) => {
            scan(kernel, once, a, depth + 1, found);
            scan(kernel, once, b, depth + 1, found);
        }
        Expr::Unary(_, a) => scan(kernel, once, a, depth + 1, found),
        Expr::Ite(c, a, b) => {
            for x in [c, a, b] {
                scan(kernel, once, x, depth + 1, found);
            }
        }
        _ => {}
    }
}
