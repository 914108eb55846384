//! Arrays of structs with a known scalar layout get one IR cell per member (an extra last
//! dimension); unknown layouts keep one cell per element, which is coarse but sound.

use cudarace_syntax::{lower_source, pretty, FrontendOptions};

fn ir(src: &str) -> String {
    let f = lower_source(None, src, &FrontendOptions::default());
    assert_eq!(f.kernels.len(), 1, "{:?}", f.syntax_errors);
    pretty::kernel(&f.kernels[0])
}

#[test]
fn vector_type_members_are_cells() {
    let s = ir("__global__ void k() { __shared__ float4 v[8]; v[threadIdx.x].z = 1; }");
    assert!(s.contains("array v: Shared SharedDecl"), "{s}");
    assert!(s.contains("[8, 4]"), "{s}");
    assert!(s.contains("v[threadIdx.x][2] = 1"), "{s}");
}

#[test]
fn file_struct_members_are_cells_and_whole_copies_touch_all() {
    let s = ir(
        "struct P { int a; float b, c; void f(); static const int n = 3; };\n\
                __global__ void k(float *o) { __shared__ P p[8]; p[threadIdx.x].c = 1;\n\
                P q = p[0]; atomicAdd(&p[1].b, 1.0f); }",
    );
    assert!(s.contains("[8, 3]"), "{s}");
    assert!(s.contains("p[threadIdx.x][2] = 1"), "{s}");
    for m in 0..3 {
        assert!(s.contains(&format!("read#{} p[0][{m}]", m + 1)), "{s}");
    }
    assert!(s.contains("atomic#4 p[1][1]"), "{s}");
}

#[test]
fn unknown_layouts_keep_one_cell_per_element() {
    // An array member, a nested struct, a template type: no member cells.
    for (def, ty) in [
        ("struct P { int a[2]; };", "P"),
        ("struct Q { int a; }; struct P { Q q; int b; };", "P"),
        ("struct P { int *a; };", "P"),
    ] {
        let s = ir(&format!(
            "{def}\n__global__ void k() {{ __shared__ {ty} p[8]; p[threadIdx.x].a = 0; }}"
        ));
        assert!(s.contains("[8]"), "{def}: {s}");
        assert!(s.contains("p[threadIdx.x] ="), "{def}: {s}");
    }
}

#[test]
fn pointers_into_struct_arrays_have_unknown_offsets() {
    let s = ir("__global__ void k() { __shared__ float2 v[8]; float2 *q = v + 1; q->x = 1; }");
    assert!(!s.contains("v[1][0]"), "{s}");
    assert!(s.contains("v{"), "flat access through the pointer: {s}");
}
