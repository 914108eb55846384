//! `leading-dimensions`: an index `row * ld + col` is read as a row of `ld` cells, with the
//! column inside it (`ld >= n` for a column compared with `n`, a block no wider than a constant
//! row step), and the comparisons that guard an access (which take a launch bound away).

use super::*;

/// `ld >= n` for every index `col + row * ld` of an access whose `col` the kernel compares with
/// the parameter `n` (see the module documentation).
pub fn leading_dimension_assumptions(
    kernel: &Kernel,
    (block_fixed, grid_fixed): ([bool; 3], [bool; 3]),
    switches: &AssumptionSwitches,
) -> Vec<Assumption> {
    use cudarace_ir::Builtin;
    if !switches.leading_dimensions {
        return vec![];
    }
    let int_param_of = |e: &Expr| free_int_param(kernel, e);
    let int_param = |e: &Expr| int_param_of(e).map(|p| p.name.clone());
    let param_amount = |e: &Expr| int_param(e).map(Amount::param);
    let signed_param = |e: &Expr| {
        int_param_of(e)
            .filter(|p| matches!(p.ty, ScalarType::Int { signed: true, .. }))
            .map(|p| p.name.clone())
    };
    let once = assigned_once(kernel);
    // A bound is a parameter, or a parameter moved by a constant (`if (ix > nx - 2) return`
    // keeps `ix` below `nx - 1`: the row it indexes is `nx` long); a row trimmed by a margin
    // (`ix >= nx - half`, two signed parameters); or a length the kernel computes from its
    // parameters in a local (`s < words` with `words = size * size * c / 32 + 1`).
    let bound_param = |e: &Expr| match strip_casts(e) {
        Expr::Binary(BinOp::Add | BinOp::Sub, a, b) if matches!(strip_casts(b), Expr::Int(_)) => {
            param_amount(a)
        }
        Expr::Binary(BinOp::Add, a, b) if matches!(strip_casts(a), Expr::Int(_)) => param_amount(b),
        other => param_amount(other),
    };
    let computed_row = |e: &Expr| match strip_casts(e) {
        Expr::Binary(BinOp::Sub, a, b) => {
            let (n, m) = (signed_param(a)?, signed_param(b)?);
            let text = format!("{n} - {m}");
            let term = sub(Amount::param(n).term(), Amount::param(m).term());
            Some(Amount::Computed(term, text))
        }
        other => {
            let row = uniform(kernel, &once, other, 0)?;
            if row.params.is_empty() {
                return None;
            }
            let name = match other {
                Expr::Local(l) => kernel.locals.get(l.0 as usize)?.name.clone(),
                _ => row.text,
            };
            Some(Amount::Computed(row.term, name))
        }
    };
    let bound_param = |e: &Expr| bound_param(e).or_else(|| computed_row(e));
    // (compared expression, its bound), from every comparison of the kernel; and every
    // compared expression (a thread index the kernel guards itself says nothing of the block).
    let mut bounded: Vec<(Expr, Amount)> = Vec::new();
    let mut compared: Vec<Expr> = Vec::new();
    walk_block(&kernel.body, &mut |e, _| {
        if let Expr::Binary(BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge, a, b) = e {
            compared.push(strip_casts(a).clone());
            compared.push(strip_casts(b).clone());
            for (x, y) in [(a, b), (b, a)] {
                if let Some(n) = bound_param(y) {
                    let x = strip_casts(x);
                    if !matches!(x, Expr::Int(_) | Expr::Param(_)) {
                        bounded.push((x.clone(), n));
                    }
                }
            }
        }
    });
    // `x % n` is below `n` too (`int col = index % n`).
    let rem_bound = |e: &Expr| match strip_casts(e) {
        Expr::Binary(BinOp::Rem, _, n) => param_amount(n),
        _ => None,
    };
    // A thread or block index is below its launch size (`row * 16 + threadIdx.x`: a kernel
    // written for blocks no wider than 16), unless the launch fixes that size.
    let launch_bound = |b: &Builtin| match b {
        Builtin::ThreadIdx(d) if !block_fixed[d.index()] => {
            Some(Amount::launch(format!("blockDim.{}", d.name())))
        }
        Builtin::BlockIdx(d) if !grid_fixed[d.index()] => {
            Some(Amount::launch(format!("gridDim.{}", d.name())))
        }
        _ => None,
    };
    let mut once: BTreeMap<cudarace_ir::LocalId, usize> = BTreeMap::new();
    assigned_values(&kernel.body, &mut |l, value| {
        *once.entry(l).or_default() += 1;
        if let Some(n) = rem_bound(value) {
            bounded.push((Expr::Local(l), n));
        }
    });
    assigned_values(&kernel.body, &mut |l, value| {
        if compared.contains(&Expr::Local(l)) {
            return;
        }
        if let (Some(1), Expr::Builtin(b)) = (once.get(&l), strip_casts(value)) {
            if let Some(n) = launch_bound(b) {
                bounded.push((Expr::Local(l), n));
            }
        }
    });
    // The row step of a product: `row * ld` (scale 1), `row * ld / c` and `row * (ld / c)` (a
    // leading dimension counted in smaller units than the index, scale `c`), `row * 16`.
    let row_step = |prod: &Expr| -> Option<(Amount, i64)> {
        let positive = |e: &Expr| match strip_casts(e) {
            Expr::Int(c) if *c > 1 => Some(*c),
            _ => None,
        };
        let scaled_param = |e: &Expr| match strip_casts(e) {
            Expr::Binary(BinOp::Div, p, c) => Some((param_amount(p)?, positive(c)?)),
            other => Some((param_amount(other)?, 1)),
        };
        match strip_casts(prod) {
            Expr::Binary(BinOp::Mul, x, y) => {
                scaled_param(x).or_else(|| scaled_param(y)).or_else(|| {
                    positive(x)
                        .or_else(|| positive(y))
                        .map(|c| (Amount::Const(c), 1))
                })
            }
            Expr::Binary(BinOp::Div, m, c) => {
                let Expr::Binary(BinOp::Mul, x, y) = strip_casts(m) else {
                    return None;
                };
                let c = positive(c)?;
                let ld = param_amount(x).or_else(|| param_amount(y))?;
                Some((ld, c))
            }
            _ => None,
        }
    };
    let mut pairs: Vec<(Amount, i64, Amount)> = Vec::new();
    let mut visit_index = |e: &Expr| {
        walk_expr(
            e,
            &mut |e, _| {
                let Expr::Binary(BinOp::Add, a, b) = e else {
                    return;
                };
                for (col, prod) in [(a, b), (b, a)] {
                    let Some((ld, scale)) = row_step(prod) else {
                        continue;
                    };
                    let col = strip_casts(col);
                    let mut rows: Vec<Amount> = rem_bound(col).into_iter().collect();
                    rows.extend(
                        bounded
                            .iter()
                            .filter(|(c, _)| c == col)
                            .map(|(_, n)| n.clone()),
                    );
                    if let Expr::Builtin(b) = col {
                        if !compared.contains(col) {
                            rows.extend(launch_bound(b));
                        }
                    }
                    for n in rows {
                        // A constant row step bounds only a launch size (a kernel written for
                        // a block size: `row * 64 + threadIdx.x`). A parameter row step bounds
                        // a launch size too: `row * ldc + threadIdx.x` with no guard on the
                        // column is written for blocks of `ldc` threads (`<<<rows, ldc>>>`),
                        // as `blockIdx.x * FS + blockIdx.y` is for a grid `(n, FS)`.
                        if matches!(ld, Amount::Const(_)) && !n.is_launch() {
                            continue;
                        }
                        let pair = (ld.clone(), scale, n);
                        if pair.2 != ld && !pairs.contains(&pair) {
                            pairs.push(pair);
                        }
                    }
                }
            },
            false,
        );
    };
    visit_accesses(&kernel.body, &mut visit_index);
    // An index built in a local first (`int at = row * ldc + col; c[at] = …`), or a pointer
    // moved to its cell (`out += col + row * pitch`); not the step of a loop's counter
    // (`i += gridDim.x * blockDim.x * width` with `i < n` tested: no row of `width` cells).
    let mut counters = std::collections::BTreeSet::new();
    visit_stmts(&kernel.body, &mut |s| {
        if let Stmt::Loop(l) = s {
            let mut changed = std::collections::BTreeSet::new();
            for blk in [&l.body, &l.step] {
                cudarace_ir::assigned_locals(blk, &mut changed);
            }
            if let Some(cond) = &l.cond {
                // The changed locals the condition reads (one walk of it).
                walk_expr(
                    cond,
                    &mut |x, _| {
                        if let Expr::Local(v) = x {
                            if changed.contains(v) {
                                counters.insert(*v);
                            }
                        }
                    },
                    false,
                );
            }
        }
    });
    assigned_values(&kernel.body, &mut |l, value| {
        let step =
            counters.contains(&l) && reads_any_local(value, &std::collections::BTreeSet::from([l]));
        if !step {
            visit_index(value);
        }
    });
    pairs
        .into_iter()
        .map(|(ld, scale, row)| Assumption {
            term: le(mul(int(scale), row.term()), ld.term()),
            broken: Broken::LeadingDimension {
                ld: ld.text(),
                scale,
                row: row.text(),
            },
        })
        .collect()
}

/// A size in a leading-dimension assumption: a parameter, a launch size or a constant; or a
/// row length computed from parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Amount {
    /// The query variable and the name to show.
    Var(String, String),
    Const(i64),
    /// Its term and the name to show (`nx - half`, or the local holding it: `words`).
    Computed(Term, String),
}

impl Amount {
    fn param(name: String) -> Amount {
        Amount::Var(format!("param.{name}"), name)
    }
    fn launch(var: String) -> Amount {
        Amount::Var(var.clone(), var)
    }
    fn is_launch(&self) -> bool {
        matches!(self, Amount::Var(v, _) if v.starts_with("blockDim.") || v.starts_with("gridDim."))
    }
    fn term(&self) -> Term {
        match self {
            Amount::Var(v, _) => Term::Var(v.clone().into()),
            Amount::Const(c) => int(*c),
            Amount::Computed(t, _) => t.clone(),
        }
    }
    fn text(&self) -> String {
        match self {
            Amount::Var(_, t) | Amount::Computed(_, t) => t.clone(),
            Amount::Const(c) => c.to_string(),
        }
    }
}

/// The operands (casts stripped) of the order comparisons that *guard* something: in the condition of
/// an `if` whose branches hold an access, a barrier, a loop, a `return`/`break`/`continue` or
/// code the checker cannot see; of a loop; of a `?:`; of an assumption; and of an `if` that
/// only assigns locals when one of them is read in such a condition (a flag, `if (x >= n) ok
/// = false; … if (ok)`, `bool ok = x < n; if (ok)`). The other comparisons only choose values (`if (col < pad) y_pad = pad
/// - col;`): they keep nothing from an access, and say nothing of the range of what they test.
pub(crate) fn guard_operands(kernel: &Kernel) -> Vec<Expr> {
    fn comparands(e: &Expr, out: &mut Vec<Expr>) {
        walk_expr(
            e,
            &mut |x, _| {
                if let Expr::Binary(BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge, a, b) = x {
                    out.push(strip_casts(a).clone());
                    out.push(strip_casts(b).clone());
                }
            },
            false,
        );
    }
    fn only_assigns(b: &[Stmt]) -> bool {
        b.iter().all(|s| match s {
            Stmt::Assign { value, .. } => !has_ite(value),
            Stmt::If {
                then_branch,
                else_branch,
                ..
            } => only_assigns(then_branch) && only_assigns(else_branch),
            _ => false,
        })
    }
    fn has_ite(e: &Expr) -> bool {
        let mut found = false;
        walk_expr(e, &mut |x, _| found |= matches!(x, Expr::Ite(..)), false);
        found
    }
    // Conditions that guard, and the `if`s that only choose values (condition, assigned).
    let mut guards: Vec<Expr> = Vec::new();
    // Loop conditions guard what they compare, but a value a choice sets and a loop bound reads
    // (`if (col < pad) loopc = kernel - pad;`) is a trip count, not a flag.
    let mut loop_guards: Vec<Expr> = Vec::new();
    let mut choosing: Vec<(Expr, std::collections::BTreeSet<cudarace_ir::LocalId>)> = Vec::new();
    visit_stmts(&kernel.body, &mut |s| match s {
        Stmt::If {
            cond,
            then_branch,
            else_branch,
            ..
        } => {
            if only_assigns(then_branch) && only_assigns(else_branch) {
                let mut assigned = std::collections::BTreeSet::new();
                cudarace_ir::assigned_locals(std::slice::from_ref(s), &mut assigned);
                choosing.push((cond.clone(), assigned));
            } else {
                guards.push(cond.clone());
            }
        }
        Stmt::Loop(l) => loop_guards.extend(l.cond.clone()),
        Stmt::Assume { cond, .. } => guards.push(cond.clone()),
        // A comparison kept in a local (`bool inside = x < n;`): a flag if a guard reads it.
        Stmt::Assign { local, value, .. } => {
            let mut tests = Vec::new();
            comparands(value, &mut tests);
            if !tests.is_empty() {
                choosing.push((value.clone(), [*local].into_iter().collect()));
            }
        }
        _ => {}
    });
    walk_block(&kernel.body, &mut |e, _| {
        if let Expr::Ite(c, _, _) = e {
            guards.push((**c).clone());
        }
    });
    // A flag: assigned by a choosing `if`, read in a guard (also one that is itself a flag's,
    // up to a fixed point).
    loop {
        let before = choosing.len();
        choosing.retain(|(cond, assigned)| {
            if guards.iter().any(|g| reads_any_local(g, assigned)) {
                guards.push(cond.clone());
                false
            } else {
                true
            }
        });
        if choosing.len() == before {
            break;
        }
    }
    let mut out = Vec::new();
    for g in guards.iter().chain(&loop_guards) {
        comparands(g, &mut out);
    }
    out
}
