//! Lambdas launches pass are named by their line and column (`lambda@3:45`): two files with a
//! lambda at the same place must not have one taken for the other.

use cudarace_syntax::{lower_source, FrontendOptions};

#[test]
fn lambdas_of_two_files_at_the_same_place_are_left_unbound() {
    let dir = std::env::temp_dir().join(format!("cudarace-launch-lambdas-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    // The two lambdas start at line 3, column 50, one in the header and one in the file.
    let header = "#pragma once\ntemplate <typename F> __global__ void each(int n, F f) { if (threadIdx.x < n) f(threadIdx.x); }\nvoid first(float *y, int n) { each<<<1, 32>>>(n, [=] __device__ (int i) { y[i] = 1.0f; }); }\n";
    let main = "#include \"lam.cuh\"\n\nvoid other(float *y, int n) { each<<<1, 32>>>(n, [=] __device__ (int i) { y[0] = 1.0f; }); }\n";
    std::fs::write(dir.join("lam.cuh"), header).expect("write");
    let path = dir.join("main.cu");
    let ir = lower_source(Some(&path), main, &FrontendOptions::default());
    let each: Vec<_> = ir
        .kernels
        .iter()
        .filter(|k| k.name.starts_with("each"))
        .collect();
    assert!(
        !each.is_empty(),
        "{:?}",
        ir.kernels.iter().map(|k| &k.name).collect::<Vec<_>>()
    );
    for k in each {
        let body = format!("{:?}", k.body);
        // Neither lambda's body is inlined for the other's launch: the call stays unknown.
        assert!(
            body.contains("call through the variable `f`"),
            "{}: {body}",
            k.name
        );
    }
}
