//! Macros that only open or close namespaces (CUB's `CUB_NAMESPACE_BEGIN`/`_END`, Thrust's) are
//! blanked with their braces, so the kernels between them parse.

use cudarace_syntax::{lower_source, FrontendOptions};

#[test]
fn namespace_begin_end_macros_are_blanked() {
    let src = "#define NS_PREFIX namespace outer {\n\
               #define MAGIC(a, b) v_##a##_##b\n\
               #define NS_BEGIN NS_PREFIX namespace lib { inline namespace MAGIC(1, 2) {\n\
               #define NS_END } } /* end namespace lib */ }\n\
               NS_BEGIN\n\
               enum Algo { A, B, };\n\
               __global__ void k(int *a) { a[threadIdx.x] = A; }\n\
               NS_END\n";
    let f = lower_source(None, src, &FrontendOptions::default());
    assert!(f.syntax_errors.is_empty(), "{:?}", f.syntax_errors);
    assert_eq!(f.kernels.len(), 1);
    assert_eq!(f.kernels[0].unsupported, None);
}

#[test]
fn macros_with_other_code_are_not_blanked() {
    // `OPEN` also declares something: not a namespace-only macro, so it is left alone (and the
    // file has syntax errors rather than silently lost code).
    let src = "#define OPEN namespace lib { int x;\n\
               OPEN\n\
               __global__ void k(int *a) { a[threadIdx.x] = 1; }\n\
               }\n";
    let f = lower_source(None, src, &FrontendOptions::default());
    assert!(!f.syntax_errors.is_empty());
}

#[test]
fn angle_includes_are_read_only_from_include_dirs() {
    let dir = std::env::temp_dir().join(format!("cudarace-angle-inc-{}", std::process::id()));
    let lib = dir.join("inc/lib");
    std::fs::create_dir_all(&lib).expect("temp dir");
    std::fs::write(
        lib.join("ns.cuh"),
        "#define LIB_BEGIN namespace lib {\n#define LIB_END }\n",
    )
    .expect("write header");
    // A file of the same name beside the source must not be taken for `<lib/ns.cuh>`.
    std::fs::create_dir_all(dir.join("lib")).expect("temp dir");
    std::fs::write(dir.join("lib/ns.cuh"), "#error wrong file\n").expect("write decoy");
    let main = dir.join("main.cu");
    let src = "#include <lib/ns.cuh>\nLIB_BEGIN\n__global__ void k(int *a) { a[threadIdx.x] = 1; }\nLIB_END\n";
    let without = lower_source(Some(&main), src, &FrontendOptions::default());
    assert_eq!(without.files.len(), 1, "no include dirs: <…> is not read");
    // Unknown, `LIB_BEGIN` is a macro before the kernel's declaration: blanked, the kernel
    // parses anyway (see repair.rs).
    assert_eq!(without.kernels.len(), 1);
    let opts = FrontendOptions {
        include_dirs: vec![dir.join("inc")],
        ..Default::default()
    };
    let with = lower_source(Some(&main), src, &opts);
    assert_eq!(with.files.len(), 2);
    assert_eq!(
        with.files[1].path.as_deref(),
        Some(lib.join("ns.cuh").as_path())
    );
    assert!(with.syntax_errors.is_empty(), "{:?}", with.syntax_errors);
    assert_eq!(with.kernels.len(), 1);
    let _ = std::fs::remove_dir_all(&dir);
}
