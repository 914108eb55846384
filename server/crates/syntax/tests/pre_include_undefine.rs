//! `FrontendOptions::undefines` (`-U`) and `pre_includes` (`-include`): what a compilation
//! database's flags change in the preprocessor.

use cudarace_syntax::{lower_source, FrontendOptions};
use std::path::PathBuf;

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("cudarace-syntax-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

fn kernel_names(src: &str, opts: &FrontendOptions) -> Vec<String> {
    lower_source(None, src, opts)
        .kernels
        .iter()
        .map(|k| k.name.clone())
        .collect()
}

const BY_MACRO: &str = "#ifdef FAST\n__global__ void fast(int *a) { a[threadIdx.x] = 1; }\n#else\n__global__ void slow(int *a) { a[threadIdx.x] = 2; }\n#endif\n";

#[test]
fn undefine_removes_a_define() {
    let defined = FrontendOptions {
        defines: vec![("FAST".into(), String::new())],
        ..Default::default()
    };
    assert_eq!(kernel_names(BY_MACRO, &defined), ["fast"]);
    let undefined = FrontendOptions {
        undefines: vec!["FAST".into()],
        ..defined
    };
    assert_eq!(kernel_names(BY_MACRO, &undefined), ["slow"]);
}

#[test]
fn undefine_removes_a_predefined_macro() {
    let src = "#ifdef __CUDA_ARCH__\n__global__ void device(int *a) { a[0] = 1; }\n#else\n__global__ void host(int *a) { a[0] = 1; }\n#endif\n";
    assert_eq!(kernel_names(src, &FrontendOptions::default()), ["device"]);
    let opts = FrontendOptions {
        undefines: vec!["__CUDA_ARCH__".into()],
        ..Default::default()
    };
    assert_eq!(kernel_names(src, &opts), ["host"]);
}

#[test]
fn pre_include_defines_macros_before_the_file() {
    let dir = temp_dir("pre-include");
    let config = dir.join("config.h");
    std::fs::write(
        &config,
        "#pragma once\n#define FAST 1\n__global__ void in_pre_include(int *a) { a[0] = 1; }\n",
    )
    .expect("write");
    let opts = FrontendOptions {
        pre_includes: vec![config.clone()],
        ..Default::default()
    };
    let main = dir.join("main.cu");
    let ir = lower_source(Some(&main), BY_MACRO, &opts);
    let names: Vec<&str> = ir.kernels.iter().map(|k| k.name.as_str()).collect();
    // Only the macros carry over; the checked file stays file 0.
    assert_eq!(names, ["fast"]);
    assert_eq!(ir.files.len(), 1);
    assert_eq!(ir.files[0].path.as_deref(), Some(main.as_path()));
    // A later `#include` of the same file is not read again.
    let src = format!("#include \"config.h\"\n{BY_MACRO}");
    let ir = lower_source(Some(&main), &src, &opts);
    assert_eq!(ir.files.len(), 1);
    // A pre-include that does not exist is skipped.
    let missing = FrontendOptions {
        pre_includes: vec![dir.join("missing.h")],
        ..Default::default()
    };
    assert_eq!(kernel_names(BY_MACRO, &missing), ["slow"]);
    let _ = std::fs::remove_dir_all(&dir);
}
