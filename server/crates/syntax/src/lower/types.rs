//! Types in the lowering: enum types of the file (what a type's name alone says is in
//! `crate::typenames`).

/// The enumerators' values of an enum type defined in the file, for a declaration's type text
/// (`Mode`, `const Mode`, `enum Mode`).
pub(crate) fn enum_values<'a>(
    tab: &'a crate::collect::Tables,
    type_text: &str,
) -> Option<&'a [i64]> {
    let words: Vec<&str> = type_text
        .split_whitespace()
        .filter(|w| !matches!(*w, "const" | "volatile" | "enum" | "class" | "struct"))
        .collect();
    let [name] = words.as_slice() else {
        return None;
    };
    tab.enum_types.get(*name)?.as_deref()
}

/// `e` is one of `values`: `lo <= e && e <= hi` when they are consecutive, else `e == v1 || …`.
pub(crate) fn one_of(e: &cudarace_ir::Expr, values: &[i64]) -> cudarace_ir::Expr {
    use cudarace_ir::{BinOp, Expr};
    let mut vs = values.to_vec();
    vs.sort_unstable();
    vs.dedup();
    let (lo, hi) = (vs[0], vs[vs.len() - 1]);
    if hi.checked_sub(lo) == Some(vs.len() as i64 - 1) {
        return Expr::bin(
            BinOp::And,
            Expr::bin(BinOp::Le, Expr::Int(lo), e.clone()),
            Expr::bin(BinOp::Le, e.clone(), Expr::Int(hi)),
        );
    }
    vs.iter()
        .map(|v| Expr::bin(BinOp::Eq, e.clone(), Expr::Int(*v)))
        .reduce(|a, b| Expr::bin(BinOp::Or, a, b))
        .unwrap_or(Expr::Bool(true))
}
