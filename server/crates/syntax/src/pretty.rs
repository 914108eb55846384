//! A compact, stable text form of a kernel's IR (for tests, debugging and `--dump-ir` style output).

use cudarace_ir::*;
use std::fmt::Write;

pub fn expr(k: &Kernel, e: &Expr) -> String {
    match e {
        Expr::Int(v) => v.to_string(),
        Expr::Bool(b) => b.to_string(),
        Expr::Float(f) => format!("{f:?}"),
        Expr::Builtin(b) => match b {
            Builtin::ThreadIdx(d) => format!("threadIdx.{}", d.name()),
            Builtin::BlockIdx(d) => format!("blockIdx.{}", d.name()),
            Builtin::BlockDim(d) => format!("blockDim.{}", d.name()),
            Builtin::GridDim(d) => format!("gridDim.{}", d.name()),
            Builtin::WarpSize => "warpSize".into(),
        },
        Expr::Param(p) => format!(
            "${}",
            k.params
                .get(p.0 as usize)
                .map(|x| x.name.as_str())
                .unwrap_or("?")
        ),
        Expr::Local(l) => k
            .locals
            .get(l.0 as usize)
            .map(|x| x.name.clone())
            .unwrap_or_else(|| "?".into()),
        Expr::Load(a) => format!("@{}", a.0),
        Expr::Unknown(u) => format!("?{}", u.0),
        Expr::Unary(op, a) => {
            let o = match op {
                UnOp::Neg => "-",
                UnOp::Not => "!",
                UnOp::BitNot => "~",
            };
            format!("{o}{}", expr(k, a))
        }
        Expr::Binary(op, a, b) => {
            let o = op.symbol();
            format!("({} {o} {})", expr(k, a), expr(k, b))
        }
        Expr::Ite(c, a, b) => format!("({} ? {} : {})", expr(k, c), expr(k, a), expr(k, b)),
        Expr::Cast(t, a) => format!("({})({})", ty(*t), expr(k, a)),
    }
}

fn ty(t: ScalarType) -> String {
    match t {
        ScalarType::Int { bits, signed } => format!("{}{bits}", if signed { "i" } else { "u" }),
        ScalarType::Bool => "bool".into(),
        ScalarType::Float => "float".into(),
        ScalarType::Pointer => "ptr".into(),
        ScalarType::Other => "other".into(),
    }
}

fn access(k: &Kernel, a: &Access) -> String {
    let name = k
        .arrays
        .get(a.array.0 as usize)
        .map(|x| x.name.as_str())
        .unwrap_or("?");
    let idx: Vec<String> = a.index.iter().map(|e| expr(k, e)).collect();
    let mode = match a.mode {
        AccessMode::Read => "read",
        AccessMode::Write => "write",
        AccessMode::Atomic => "atomic",
    };
    let cell = if a.flat {
        format!("{name}{{{}}}", idx.join(", "))
    } else {
        format!(
            "{name}{}",
            idx.iter().map(|i| format!("[{i}]")).collect::<String>()
        )
    };
    match &a.value {
        Some(v) => format!("{mode}#{} {cell} = {}", a.id.0, expr(k, v)),
        None => format!("{mode}#{} {cell}", a.id.0),
    }
}

pub fn block(k: &Kernel, b: &Block, indent: usize, out: &mut String) {
    let pad = "  ".repeat(indent);
    for s in b {
        match s {
            Stmt::Assign { local, value, .. } => {
                let _ = writeln!(
                    out,
                    "{pad}{} := {}",
                    expr(k, &Expr::Local(*local)),
                    expr(k, value)
                );
            }
            Stmt::Access(a) => {
                let _ = writeln!(out, "{pad}{}", access(k, a));
            }
            Stmt::Barrier(b) => {
                let _ = match &b.kind {
                    BarrierKind::Block => writeln!(out, "{pad}sync"),
                    BarrierKind::Grid => writeln!(out, "{pad}grid.sync"),
                    BarrierKind::Warp { mask: None } => writeln!(out, "{pad}syncwarp"),
                    BarrierKind::Warp { mask: Some(m) } => {
                        writeln!(out, "{pad}syncwarp({})", expr(k, m))
                    }
                };
            }
            Stmt::If {
                cond,
                then_branch,
                else_branch,
                ..
            } => {
                let _ = writeln!(out, "{pad}if {} {{", expr(k, cond));
                block(k, then_branch, indent + 1, out);
                if !else_branch.is_empty() {
                    let _ = writeln!(out, "{pad}}} else {{");
                    block(k, else_branch, indent + 1, out);
                }
                let _ = writeln!(out, "{pad}}}");
            }
            Stmt::Loop(l) => {
                let kind = match l.kind {
                    LoopKind::For => "for",
                    LoopKind::While => "while",
                    LoopKind::DoWhile => "do",
                };
                let _ = writeln!(
                    out,
                    "{pad}{kind} {} {{",
                    l.cond
                        .as_ref()
                        .map(|c| expr(k, c))
                        .unwrap_or_else(|| "true".into())
                );
                if !l.init.is_empty() {
                    let _ = writeln!(out, "{pad}  init:");
                    block(k, &l.init, indent + 2, out);
                }
                if !l.cond_effects.is_empty() {
                    let _ = writeln!(out, "{pad}  cond:");
                    block(k, &l.cond_effects, indent + 2, out);
                }
                if !l.step.is_empty() {
                    let _ = writeln!(out, "{pad}  step:");
                    block(k, &l.step, indent + 2, out);
                }
                let _ = writeln!(out, "{pad}  body:");
                block(k, &l.body, indent + 2, out);
                let _ = writeln!(out, "{pad}}}");
            }
            Stmt::Return { .. } => {
                let _ = writeln!(out, "{pad}return");
            }
            Stmt::Break { .. } => {
                let _ = writeln!(out, "{pad}break");
            }
            Stmt::Continue { .. } => {
                let _ = writeln!(out, "{pad}continue");
            }
            Stmt::Assume { cond, .. } => {
                let _ = writeln!(out, "{pad}assume {}", expr(k, cond));
            }
            Stmt::Opaque(o) => {
                let arrays: Vec<&str> = o
                    .arrays
                    .iter()
                    .map(|a| {
                        k.arrays
                            .get(a.0 as usize)
                            .map(|x| x.name.as_str())
                            .unwrap_or("?")
                    })
                    .collect();
                let locals: Vec<String> =
                    o.locals.iter().map(|l| expr(k, &Expr::Local(*l))).collect();
                let _ = writeln!(
                    out,
                    "{pad}opaque({}; arrays=[{}]; locals=[{}]{}{})",
                    o.reason,
                    arrays.join(","),
                    locals.join(","),
                    if o.may_sync { "; may_sync" } else { "" },
                    if o.reads_only { "; reads_only" } else { "" }
                );
            }
        }
    }
}

/// The kernel's body, one statement per line.
pub fn body(k: &Kernel) -> String {
    let mut s = String::new();
    block(k, &k.body, 0, &mut s);
    s
}

/// Arrays, params and body.
pub fn kernel(k: &Kernel) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "kernel {}", k.name);
    for p in &k.params {
        let _ = writeln!(
            s,
            "  param {}: {}{}{}",
            p.name,
            ty(p.ty),
            if p.is_template { " template" } else { "" },
            p.value.map(|v| format!(" = {v}")).unwrap_or_default()
        );
    }
    for a in &k.arrays {
        let dims: Vec<String> = a
            .dims
            .iter()
            .map(|d| d.as_ref().map(|e| expr(k, e)).unwrap_or_else(|| "?".into()))
            .collect();
        let _ = writeln!(
            s,
            "  array {}: {:?} {:?} {} [{}]",
            a.name,
            a.space,
            a.origin,
            ty(a.elem),
            dims.join(", ")
        );
    }
    if let Some(u) = &k.unsupported {
        let _ = writeln!(s, "  unsupported: {u}");
    }
    block(k, &k.body, 1, &mut s);
    s
}
