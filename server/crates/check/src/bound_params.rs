//! A parameter that every launch site of the file binds to the launch's thread count (`k<<<g,
//! t>>>(…, g * t)`, the step of a grid-stride loop) is `gridDim.x * blockDim.x` in the kernel
//! itself.
//!
//! The launch facts say so too (`param.step == gridDim.x * blockDim.x`, see [`crate::launch`]),
//! but only to the solver, as an equation: the symbolic execution sees a loop stepping by a
//! parameter, and the solver a product of an iteration count and that parameter, which it
//! decides in hundreds of milliseconds where the same loop written with `blockDim.x *
//! gridDim.x` is decided in a few (800 ms against 2 ms for a plain grid-stride copy).
//! Substituted before the kernel is executed, the value is what the host computed, in the
//! parameter's type (`(int)gridDim.x * (int)blockDim.x` for an `int` step), and the facts about
//! grid-stride loops apply.
//!
//! Only sites that pass every argument count, and only parameters of an integer type that
//! every one of them binds to the same product of launch sizes (a grid size and a block size
//! among them). A parameter bound to one size (`k<<<b, 256>>>(…, b)`) stays a parameter: the
//! plausibility assumptions about sizes (`W` a multiple of `window`) are about parameters, and
//! a race that needs a size no caller passes must stay conditional. A file without a launch of
//! the kernel binds nothing.

use cudarace_ir::{
    BinOp, Block, Builtin, Expr, FileIr, Kernel, ParamId, ScalarType, SiteValue, Stmt,
};

/// The kernel with its launch-bound parameters replaced by their values; `None` when no
/// parameter is bound that way.
pub fn with_bound_params(file: &FileIr, kernel: &Kernel) -> Option<Kernel> {
    let sites = crate::launch::sites_of(file, kernel);
    if sites.is_empty() {
        return None;
    }
    // Arguments bind parameters by position (template parameters are not call arguments).
    let call_params: Vec<(ParamId, &cudarace_ir::Param)> = kernel
        .params
        .iter()
        .enumerate()
        .filter(|(_, p)| !p.is_template && !p.member)
        .map(|(i, p)| (ParamId(i as u32), p))
        .collect();
    if sites.iter().any(|s| s.args.len() != call_params.len()) {
        return None;
    }
    let mut values: Vec<(ParamId, Expr)> = Vec::new();
    for (j, (id, p)) in call_params.iter().enumerate() {
        if p.value.is_some()
            || !matches!(p.ty, ScalarType::Int { .. })
            || kernel.launch_bounds_param == Some(*id)
        {
            continue;
        }
        let first = sites[0].args[j].as_ref();
        let same = sites.iter().all(|s| s.args[j].as_ref() == first);
        let Some(v) = first.filter(|_| same) else {
            continue;
        };
        if let (Some(e), true) = (launch_expr(v, p.ty), counts_threads(v)) {
            values.push((*id, e));
        }
    }
    if values.is_empty() {
        return None;
    }
    let mut k = kernel.clone();
    let value = |id: ParamId| values.iter().find(|(p, _)| *p == id).map(|(_, e)| e);
    substitute_block(&mut k.body, &value);
    for a in &mut k.arrays {
        for e in a.dims.iter_mut().flatten() {
            substitute(e, &value);
        }
    }
    Some(k)
}

/// `v` as an expression of launch sizes and constants in the parameter's type `ty` (each size
/// converted, the arithmetic in `ty`, as the host computed the argument); `None` for anything
/// else.
fn launch_expr(v: &SiteValue, ty: ScalarType) -> Option<Expr> {
    let size = |b: Builtin| Expr::Cast(ty, Box::new(Expr::Builtin(b)));
    Some(match v {
        SiteValue::Int(n) => Expr::Int(*n),
        SiteValue::GridDim(d) => size(Builtin::GridDim(*d)),
        SiteValue::BlockDim(d) => size(Builtin::BlockDim(*d)),
        SiteValue::Mul(a, b) => Expr::bin(BinOp::Mul, launch_expr(a, ty)?, launch_expr(b, ty)?),
        SiteValue::Op(op @ (BinOp::Add | BinOp::Sub | BinOp::Mul), a, b) => {
            Expr::bin(*op, launch_expr(a, ty)?, launch_expr(b, ty)?)
        }
        _ => return None,
    })
}

/// Whether `v` is a count of the launch's threads: a product of launch sizes with a grid size
/// and a block size among them (`gridDim.x * blockDim.x`).
fn counts_threads(v: &SiteValue) -> bool {
    fn factors(v: &SiteValue, grid: &mut bool, block: &mut bool) -> bool {
        match v {
            SiteValue::GridDim(_) => {
                *grid = true;
                true
            }
            SiteValue::BlockDim(_) => {
                *block = true;
                true
            }
            SiteValue::Mul(a, b) | SiteValue::Op(BinOp::Mul, a, b) => {
                factors(a, grid, block) && factors(b, grid, block)
            }
            _ => false,
        }
    }
    let (mut grid, mut block) = (false, false);
    factors(v, &mut grid, &mut block) && grid && block
}

fn substitute_block<'v>(b: &mut Block, value: &dyn Fn(ParamId) -> Option<&'v Expr>) {
    for s in b {
        match s {
            Stmt::Assign { value: v, .. } => substitute(v, value),
            Stmt::Access(a) => {
                for e in a.index.iter_mut().chain(a.value.iter_mut()) {
                    substitute(e, value);
                }
            }
            Stmt::If {
                cond,
                then_branch,
                else_branch,
                ..
            } => {
                substitute(cond, value);
                substitute_block(then_branch, value);
                substitute_block(else_branch, value);
            }
            Stmt::Loop(l) => {
                if let Some(c) = &mut l.cond {
                    substitute(c, value);
                }
                for blk in [&mut l.init, &mut l.cond_effects, &mut l.body, &mut l.step] {
                    substitute_block(blk, value);
                }
            }
            Stmt::Assume { cond, .. } => substitute(cond, value),
            Stmt::Barrier(_)
            | Stmt::Return { .. }
            | Stmt::Break { .. }
            | Stmt::Continue { .. }
            | Stmt::Opaque(_) => {}
        }
    }
}

fn substitute<'v>(e: &mut Expr, value: &dyn Fn(ParamId) -> Option<&'v Expr>) {
    match e {
        Expr::Param(p) => {
            if let Some(v) = value(*p) {
                *e = v.clone();
            }
        }
        Expr::Unary(_, a) | Expr::Cast(_, a) => substitute(a, value),
        Expr::Binary(_, a, b) => {
            substitute(a, value);
            substitute(b, value);
        }
        Expr::Ite(c, a, b) => {
            substitute(c, value);
            substitute(a, value);
            substitute(b, value);
        }
        Expr::Int(_)
        | Expr::Bool(_)
        | Expr::Float(_)
        | Expr::Builtin(_)
        | Expr::Local(_)
        | Expr::Load(_)
        | Expr::Unknown(_) => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lowered(src: &str) -> FileIr {
        cudarace_syntax::lower_source(None, src, &cudarace_syntax::FrontendOptions::default())
    }

    fn reads_param(b: &Block, p: ParamId) -> bool {
        fn expr(e: &Expr, p: ParamId) -> bool {
            match e {
                Expr::Param(q) => *q == p,
                Expr::Unary(_, a) | Expr::Cast(_, a) => expr(a, p),
                Expr::Binary(_, a, b) => expr(a, p) || expr(b, p),
                Expr::Ite(c, a, b) => expr(c, p) || expr(a, p) || expr(b, p),
                _ => false,
            }
        }
        b.iter().any(|s| match s {
            Stmt::Assign { value, .. } => expr(value, p),
            Stmt::Access(a) => a.index.iter().chain(&a.value).any(|e| expr(e, p)),
            Stmt::If {
                cond,
                then_branch,
                else_branch,
                ..
            } => expr(cond, p) || reads_param(then_branch, p) || reads_param(else_branch, p),
            Stmt::Loop(l) => {
                l.cond.as_ref().is_some_and(|c| expr(c, p))
                    || [&l.init, &l.cond_effects, &l.body, &l.step]
                        .into_iter()
                        .any(|blk| reads_param(blk, p))
            }
            Stmt::Assume { cond, .. } => expr(cond, p),
            _ => false,
        })
    }

    const KERNEL: &str = "
__global__ void scale(float *y, int n, int step) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step)
        y[i] = 2.0f * y[i];
}
";

    #[test]
    fn a_step_every_site_passes_as_the_thread_count_is_that_count() {
        let file = lowered(&format!(
            "{KERNEL}void run(float *y, int n, int g, int b) {{ scale<<<g, b>>>(y, n, g * b); \
             scale<<<2 * g, b>>>(y, n, 2 * g * b); }}"
        ));
        let k = &file.kernels[0];
        let step = ParamId(2);
        assert!(reads_param(&k.body, step));
        let bound = with_bound_params(&file, k).expect("both sites pass the thread count");
        assert!(!reads_param(&bound.body, step));
        assert!(
            reads_param(&bound.body, ParamId(1)),
            "`n` is not a launch size"
        );
    }

    #[test]
    fn sites_that_disagree_or_pass_one_size_bind_nothing() {
        let other = lowered(&format!(
            "{KERNEL}void run(float *y, int n, int g, int b) {{ scale<<<g, b>>>(y, n, g * b); \
             scale<<<g, b>>>(y, n, 64); }}"
        ));
        assert!(with_bound_params(&other, &other.kernels[0]).is_none());
        // A size stays a parameter, for the assumptions about sizes (see the module's docs).
        let size = lowered(&format!(
            "{KERNEL}void run(float *y, int n, int g) {{ scale<<<g, 256>>>(y, n, g); }}"
        ));
        assert!(with_bound_params(&size, &size.kernels[0]).is_none());
        let unlaunched = lowered(KERNEL);
        assert!(with_bound_params(&unlaunched, &unlaunched.kernels[0]).is_none());
    }
}
