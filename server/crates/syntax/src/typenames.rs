//! What a type's name alone says, below the file index and the lowering: scalar types, CUDA
//! vector types, sizes (CUDA's LP64 data model) and the shape a declarator gives (pointer,
//! array, reference).

use cudarace_ir::ScalarType;
use tree_sitter::Node;

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
    if let Some(s) = sizeof_type(&t) {
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

/// `sizeof` of the basic types (CUDA's LP64 data model).
pub(crate) fn sizeof_type(t: &str) -> Option<i64> {
    let t: String = t
        .split_whitespace()
        .filter(|w| *w != "const" && *w != "volatile")
        .collect::<Vec<_>>()
        .join(" ");
    if t.ends_with('*') {
        return Some(8);
    }
    Some(match t.as_str() {
        "char" | "signed char" | "unsigned char" | "bool" | "int8_t" | "uint8_t" => 1,
        "short" | "unsigned short" | "short int" | "half" | "__half" | "int16_t" | "uint16_t"
        | "__nv_bfloat16" | "nv_bfloat16" => 2,
        "int" | "unsigned" | "unsigned int" | "float" | "int32_t" | "uint32_t" | "uint"
        | "signed" => 4,
        "long" | "unsigned long" | "long long" | "unsigned long long" | "double" | "size_t"
        | "int64_t" | "uint64_t" | "ptrdiff_t" | "long int" => 8,
        "float2" | "int2" | "uint2" => 8,
        "float4" | "int4" | "uint4" | "double2" => 16,
        "float3" | "int3" | "uint3" => 12,
        _ => return vector_size(&t),
    })
}

/// Shape of a built-in vector type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct VecType {
    /// Number of components (1 to 4).
    pub width: i64,
    /// Size in bytes of one component.
    pub comp_size: i64,
    /// The type of a component.
    pub comp: ScalarType,
}

/// The vector type named by a type text (`float4`, `const uint2`, `::int4`, `__half2`).
pub(crate) fn vector_type(type_text: &str) -> Option<VecType> {
    let words: Vec<&str> = type_text
        .split_whitespace()
        .filter(|w| !matches!(*w, "const" | "volatile" | "__restrict__" | "struct"))
        .collect();
    let [name] = words.as_slice() else {
        return None;
    };
    let name = name.strip_prefix("::").unwrap_or(name);
    let int = |bits: u8, signed: bool| ScalarType::Int { bits, signed };
    match name {
        "half2" | "__half2" => {
            return Some(VecType {
                width: 2,
                comp_size: 2,
                comp: ScalarType::Float,
            })
        }
        "__nv_bfloat162" | "nv_bfloat162" => {
            return Some(VecType {
                width: 2,
                comp_size: 2,
                comp: ScalarType::Float,
            })
        }
        _ => {}
    }
    let (base, n) = name.split_at(name.len().checked_sub(1)?);
    let width: i64 = n.parse().ok()?;
    if !(1..=4).contains(&width) {
        return None;
    }
    let (comp_size, comp) = match base {
        "char" => (1, int(8, true)),
        "uchar" => (1, int(8, false)),
        "short" => (2, int(16, true)),
        "ushort" => (2, int(16, false)),
        "int" => (4, int(32, true)),
        "uint" => (4, int(32, false)),
        "long" | "longlong" => (8, int(64, true)),
        "ulong" | "ulonglong" => (8, int(64, false)),
        "float" => (4, ScalarType::Float),
        "double" => (8, ScalarType::Float),
        _ => return None,
    };
    Some(VecType {
        width,
        comp_size,
        comp,
    })
}

/// Size in bytes of a vector type (components are packed: `float3` is 12 bytes).
pub(crate) fn vector_size(type_text: &str) -> Option<i64> {
    vector_type(type_text).map(|v| v.width * v.comp_size)
}

/// The component size of a pointer's element type, when it is a vector type.
pub(crate) fn comp_size(type_text: &str) -> Option<i64> {
    vector_type(type_text).map(|v| v.comp_size)
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Shape {
    Scalar,
    Pointer,
    Array,
    Reference,
}

/// Whether a declarator declares a pointer, an array, a reference or a plain scalar.
pub(crate) fn declarator_shape(d: Node) -> Shape {
    let mut cur = d;
    for _ in 0..32 {
        match cur.kind() {
            "pointer_declarator" | "abstract_pointer_declarator" => {
                // `float *bufs[2]` nests the array declarator inside the pointer one: an array
                // of pointers.
                let mut inner = cur.child_by_field_name("declarator");
                for _ in 0..32 {
                    match inner {
                        Some(x) if x.kind() == "array_declarator" => return Shape::Array,
                        Some(x) if x.kind() == "pointer_declarator" => {
                            inner = x.child_by_field_name("declarator")
                        }
                        _ => break,
                    }
                }
                return Shape::Pointer;
            }
            "array_declarator" | "abstract_array_declarator" => return Shape::Array,
            "reference_declarator" | "abstract_reference_declarator" => return Shape::Reference,
            "init_declarator" | "parenthesized_declarator" | "attributed_declarator" => match cur
                .child_by_field_name("declarator")
                .or_else(|| cur.named_child(0))
            {
                Some(x) => cur = x,
                None => return Shape::Scalar,
            },
            _ => return Shape::Scalar,
        }
    }
    Shape::Scalar
}

/// One spelling of each type whose names the front end knows (spaces dropped, as
/// [`first_arg`] gives them): the fundamental types and CUDA's half-precision types, with
/// their aliases. Any other name may be a typedef of one of them. (Types are given without
/// spaces: `unsigned int` is `unsignedint`.)
pub(crate) fn known_type(t: &str) -> Option<&'static str> {
    Some(match t {
        "float" => "float",
        "double" => "double",
        "bool" => "bool",
        "char" => "char",
        "signedchar" => "signed char",
        "unsignedchar" => "unsigned char",
        "short" | "shortint" | "signedshort" => "short",
        "unsignedshort" | "unsignedshortint" => "unsigned short",
        "int" | "signed" | "signedint" => "int",
        "unsigned" | "unsignedint" => "unsigned int",
        "long" | "longint" | "signedlong" => "long",
        "unsignedlong" | "unsignedlongint" => "unsigned long",
        "longlong" | "longlongint" | "signedlonglong" => "long long",
        "unsignedlonglong" | "unsignedlonglongint" => "unsigned long long",
        "half" | "__half" => "__half",
        "half2" | "__half2" => "__half2",
        "nv_bfloat16" | "__nv_bfloat16" => "__nv_bfloat16",
        "nv_bfloat162" | "__nv_bfloat162" => "__nv_bfloat162",
        _ => return None,
    })
}

/// The two template arguments surely name the same type.
pub(crate) fn same_type(a: &str, b: &str) -> bool {
    a == b || known_type(a).is_some_and(|x| known_type(b) == Some(x))
}

/// The two template arguments surely name different types.
pub(crate) fn different_types(a: &str, b: &str) -> bool {
    matches!((known_type(a), known_type(b)), (Some(x), Some(y)) if x != y)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vector_shapes() {
        assert_eq!(vector_size("float4"), Some(16));
        assert_eq!(vector_size("const uint2"), Some(8));
        assert_eq!(vector_size("double2"), Some(16));
        assert_eq!(vector_size("__half2"), Some(4));
        assert_eq!(vector_size("char4"), Some(4));
        assert_eq!(vector_size("float3"), Some(12));
        assert_eq!(comp_size("double2"), Some(8));
        assert_eq!(vector_type("float"), None);
        assert_eq!(vector_type("float5"), None);
        assert_eq!(vector_type("Vec4"), None);
        // A bfloat16 pair over bfloat16 cells is two cells.
        assert_eq!(sizeof_type("__nv_bfloat16"), Some(2));
        assert_eq!(vector_size("__nv_bfloat162"), Some(4));
    }
}
