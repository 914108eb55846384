//! C type names → IR scalar types.

use cudarace_ir::ScalarType;

/// The scalar type of a declaration's type specifier text (qualifiers removed). Pointers are
/// decided by the declarator, not here.
pub(crate) fn scalar_type(type_text: &str) -> ScalarType {
    let words: Vec<&str> = type_text
        .split(|c: char| c.is_whitespace() || c == ':')
        .filter(|w| !w.is_empty())
        .filter(|w| {
            !matches!(
                *w,
                "const"
                    | "volatile"
                    | "static"
                    | "register"
                    | "constexpr"
                    | "__restrict__"
                    | "std"
                    | "inline"
            )
        })
        .collect();
    let t = words.join(" ");
    let int = |bits: u8, signed: bool| ScalarType::Int { bits, signed };
    match t.as_str() {
        "bool" => return ScalarType::Bool,
        "float" | "double" | "half" | "__half" | "__nv_bfloat16" | "long double" | "__half2" => {
            return ScalarType::Float
        }
        "size_t"
        | "uint64_t"
        | "unsigned long"
        | "unsigned long long"
        | "unsigned long int"
        | "unsigned long long int"
        | "ulong"
        | "ulonglong"
        | "uintptr_t" => return int(64, false),
        "long" | "long long" | "long int" | "long long int" | "int64_t" | "ptrdiff_t"
        | "ssize_t" | "signed long" | "intptr_t" | "longlong" => return int(64, true),
        "int" | "signed" | "signed int" | "int32_t" | "auto" => return int(32, true),
        "unsigned" | "unsigned int" | "uint" | "uint32_t" => return int(32, false),
        "short" | "short int" | "int16_t" | "signed short" => return int(16, true),
        "unsigned short" | "ushort" | "uint16_t" | "unsigned short int" => return int(16, false),
        "char" | "signed char" | "int8_t" => return int(8, true),
        "unsigned char" | "uchar" | "uint8_t" => return int(8, false),
        _ => {}
    }
    ScalarType::Other
}

/// Whether a declaration's type is `auto` (with qualifiers): its type is its initializer's.
pub(crate) fn is_auto(type_text: &str) -> bool {
    let mut words = type_text.split_whitespace().filter(|w| {
        !matches!(
            *w,
            "const" | "volatile" | "static" | "register" | "constexpr"
        )
    });
    words.next() == Some("auto") && words.next().is_none()
}

/// Size in bytes of an element type (for pointer casts), if known.
///
/// Types of unknown size (template parameters, structs) get a negative pseudo size derived from
/// their name: casts between the same named type are recognized as no-ops, casts between
/// different ones are not.
pub(crate) fn elem_size(type_text: &str) -> Option<i64> {
    let t: String = type_text
        .split_whitespace()
        .filter(|w| !matches!(*w, "const" | "volatile" | "__restrict__"))
        .collect::<Vec<_>>()
        .join(" ");
    if t.is_empty() {
        return None;
    }
    if let Some(s) = crate::consteval::sizeof_type(&t) {
        return Some(s);
    }
    let mut h: i64 = 1469598103934665603u64 as i64;
    for b in t.bytes() {
        h = (h ^ b as i64).wrapping_mul(1099511628211);
    }
    Some(-(h & 0x7fff_ffff_ffff) - 1)
}

/// Number of components of a CUDA built-in vector type (`float2` → 2, `uchar4` → 4).
pub(crate) fn vector_width(name: &str) -> Option<usize> {
    let (base, n) = name.split_at(name.len().checked_sub(1)?);
    let n: usize = n.parse().ok()?;
    let known = matches!(
        base,
        "char"
            | "uchar"
            | "short"
            | "ushort"
            | "int"
            | "uint"
            | "long"
            | "ulong"
            | "longlong"
            | "ulonglong"
            | "float"
            | "double"
    );
    (known && (1..=4).contains(&n)).then_some(n)
}

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
