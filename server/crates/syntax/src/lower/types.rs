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

impl crate::lower::Lowerer<'_, '_> {
    /// The scalar type a declaration's type text names, through the `typedef`s and `using`
    /// aliases of the kernel and of the file (`typedef int index_t;`, `using real = float;`,
    /// `ns::size_type`): the type of the first alias that names a scalar type (at most 8 steps,
    /// so that alias cycles end). `Other` when none does.
    pub(crate) fn scalar_type_of(&self, type_text: &str) -> cudarace_ir::ScalarType {
        use cudarace_ir::ScalarType;
        let mut text = type_text.to_string();
        for _ in 0..8 {
            let t = crate::typenames::scalar_type(&text);
            if t != ScalarType::Other {
                return t;
            }
            // Only a (qualified) name: `const ns::index_t`, not `index_t *` or `V<int>`.
            let words: Vec<&str> = text
                .split_whitespace()
                .filter(|w| !matches!(*w, "const" | "volatile" | "typename" | "__restrict__"))
                .collect();
            let [name] = words.as_slice() else {
                return ScalarType::Other;
            };
            let name = name.rsplit("::").next().unwrap_or(name);
            if !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                return ScalarType::Other;
            }
            match self
                .type_aliases
                .get(name)
                .or_else(|| self.tab.type_aliases.get(name))
            {
                Some(next) if next != &text => text = next.clone(),
                _ => return ScalarType::Other,
            }
        }
        ScalarType::Other
    }
}
