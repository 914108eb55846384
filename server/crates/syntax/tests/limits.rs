//! Resource limits of the front end: a kernel beyond one is `unsupported` with the reason (so the
//! checker reports it as undecided, never race-free), and lowering neither crashes nor hangs.

use cudarace_syntax::{lower_source, FrontendOptions};
use std::time::{Duration, Instant};

/// Lowers `src` (bounded in time) and returns the `unsupported` reason of kernel `k`.
fn unsupported_reason(src: &str) -> Option<String> {
    let t = Instant::now();
    let f = lower_source(None, src, &FrontendOptions::default());
    assert!(
        t.elapsed() < Duration::from_secs(60),
        "lowering took {:?}",
        t.elapsed()
    );
    let k = f.kernels.iter().find(|k| k.name == "k").expect("kernel k");
    k.unsupported.clone()
}

fn nested_loops(n: usize) -> String {
    let mut s = String::from("__global__ void k(int *a) {\n");
    for i in 0..n {
        s.push_str(&format!("for (int i{i} = 0; i{i} < 2; i{i}++) {{\n"));
    }
    s.push_str("a[threadIdx.x] = 1;\n");
    s.push_str(&"}\n".repeat(n));
    s.push_str("}\n");
    s
}

#[test]
fn loop_nesting_limit() {
    assert_eq!(unsupported_reason(&nested_loops(64)), None);
    let r = unsupported_reason(&nested_loops(65)).expect("65 nested loops are unsupported");
    assert!(r.contains("loops are nested more than 64 deep"), "{r}");
}

#[test]
fn loop_nesting_counts_inlined_functions() {
    // 33 loops in the device function inside 32 loops in the kernel.
    let inner = nested_loops(33).replace("__global__ void k(int *a)", "__device__ void f(int *a)");
    let outer = nested_loops(32).replace("a[threadIdx.x] = 1;", "f(a);");
    let r = unsupported_reason(&format!("{inner}{outer}")).expect("65 nested loops");
    assert!(r.contains("loops are nested"), "{r}");
}

fn call_chain(n: usize) -> String {
    let mut s = String::from("__device__ void f0(int *a) { a[threadIdx.x] = 1; }\n");
    for i in 1..n {
        s.push_str(&format!(
            "__device__ void f{i}(int *a) {{ f{}(a); }}\n",
            i - 1
        ));
    }
    s.push_str(&format!("__global__ void k(int *a) {{ f{}(a); }}\n", n - 1));
    s
}

#[test]
fn inlining_depth_limit() {
    assert_eq!(unsupported_reason(&call_chain(10)), None);
    let r = unsupported_reason(&call_chain(40)).expect("40 nested calls are unsupported");
    assert!(r.contains("device functions nested more than"), "{r}");
}

#[test]
fn recursion_is_unsupported_not_a_hang() {
    let src = "__device__ void f(int *a, int n) { a[n] = 1; if (n > 0) f(a, n - 1); }\n\
               __global__ void k(int *a) { f(a, threadIdx.x); }\n";
    assert!(unsupported_reason(src).is_some());
}

#[test]
fn statement_nesting_limit() {
    let n = 300;
    let src = format!(
        "__global__ void k(int *a) {{\n{}a[threadIdx.x] = 1;\n{}}}\n",
        "if (a[0]) {\n".repeat(n),
        "}\n".repeat(n)
    );
    let r = unsupported_reason(&src).expect("300 nested ifs are unsupported");
    assert!(r.contains("nested too deeply"), "{r}");
}

#[test]
fn expression_nesting_limit_does_not_crash() {
    let n = 5000;
    let src = format!(
        "__global__ void k(int *a) {{ a[threadIdx.x] = {}1{}; }}\n",
        "(".repeat(n),
        ")".repeat(n)
    );
    let f = lower_source(None, &src, &FrontendOptions::default());
    // Either the parser gives up on it (syntax error) or the kernel is unsupported; never a
    // kernel that looks fine.
    let k = f.kernels.iter().find(|k| k.name == "k");
    assert!(
        k.is_none_or(|k| k.unsupported.is_some()) || !f.syntax_errors.is_empty(),
        "a 5000-deep expression was lowered as an ordinary kernel"
    );
}

#[test]
fn access_count_limit() {
    // 4^7 = 16384 calls of a device function with 2 accesses: over 20,000 accesses.
    let mut s =
        String::from("__device__ void f0(int *a) { a[threadIdx.x] = a[threadIdx.x + 1]; }\n");
    for i in 1..=7 {
        let c = format!("f{}(a); ", i - 1);
        s.push_str(&format!(
            "__device__ void f{i}(int *a) {{ {} }}\n",
            c.repeat(4)
        ));
    }
    s.push_str("__global__ void k(int *a) { f7(a); }\n");
    let r = unsupported_reason(&s).expect("too many accesses");
    assert!(
        r.contains("memory accesses") || r.contains("too large"),
        "{r}"
    );
}

#[test]
fn kernel_size_limit() {
    // 8^7 ≈ 2M inlined calls: over the syntax-node budget long before the access limit matters
    // (the statements have no memory access).
    let mut s = String::from("__device__ void f0(int x) { int y = x + 1; y = y * 2; }\n");
    for i in 1..=7 {
        let c = format!("f{}(x); ", i - 1);
        s.push_str(&format!(
            "__device__ void f{i}(int x) {{ {} }}\n",
            c.repeat(8)
        ));
    }
    s.push_str("__global__ void k(int x) { f7(x); }\n");
    let r = unsupported_reason(&s).expect("too large");
    assert!(r.contains("too large after inlining"), "{r}");
}
