//! CUDA text → front end → checker → Z3: verdicts and the lines findings land on.

use cudarace_check::{check_kernel, CheckOptions};
use cudarace_ir::{FindingKind, KernelReport, LineIndex, Verdict};
use cudarace_solver::{solve, Limits};

fn check(src: &str) -> (Vec<KernelReport>, LineIndex) {
    let ir = cudarace_syntax::lower_source(None, src, &Default::default());
    let limits = Limits {
        timeout_ms: 10_000,
        rlimit: 50_000_000,
    };
    let reports = ir
        .kernels
        .iter()
        .map(|k| check_kernel(&ir, k, &CheckOptions::default(), &mut |q| solve(q, &limits)))
        .collect();
    (reports, LineIndex::new(src))
}

/// 1-based lines of the findings of `kind`.
fn lines(r: &KernelReport, idx: &LineIndex, kind: FindingKind) -> Vec<u32> {
    let mut v: Vec<u32> = r
        .findings
        .iter()
        .filter(|f| f.kind == kind)
        .map(|f| idx.line_col(f.span.start).line + 1)
        .collect();
    v.sort();
    v.dedup();
    v
}

const REDUCE: &str = r#"
__global__ void reduce(const float *in, float *out) {
    __shared__ float sdata[1024];
    unsigned int tid = threadIdx.x;
    sdata[tid] = in[blockIdx.x * blockDim.x + tid];
    __syncthreads();
    for (unsigned int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s)
            sdata[tid] += sdata[tid + s];
        __syncthreads();
    }
    if (tid == 0)
        out[blockIdx.x] = sdata[0];
}
"#;

#[test]
fn tree_reduction_is_race_free() {
    let (r, _) = check(REDUCE);
    assert_eq!(r.len(), 1);
    assert_eq!(r[0].verdict, Verdict::RaceFree, "{:#?}", r[0]);
}

#[test]
fn tree_reduction_without_loop_barrier_is_racy_on_the_update_line() {
    let src = REDUCE.replacen("        __syncthreads();\n    }", "    }", 1);
    let (r, idx) = check(&src);
    assert_eq!(r[0].verdict, Verdict::Racy, "{:#?}", r[0]);
    assert_eq!(lines(&r[0], &idx, FindingKind::DataRace), vec![9]);
}

#[test]
fn barrier_inside_thread_dependent_branch_is_divergent() {
    let src = r#"
__global__ void k(float *a) {
    __shared__ float s[256];
    if (threadIdx.x < 128) {
        s[threadIdx.x] = a[threadIdx.x];
        __syncthreads();
    }
}
"#;
    let (r, idx) = check(src);
    assert_eq!(r[0].verdict, Verdict::Divergent, "{:#?}", r[0]);
    assert_eq!(lines(&r[0], &idx, FindingKind::BarrierDivergence), vec![6]);
}

#[test]
fn grid_stride_loop_is_race_free_and_neighbour_write_is_not() {
    let ok = r#"
__global__ void saxpy(int n, float a, const float *x, float *y) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        y[i] = a * x[i] + y[i];
}
"#;
    let (r, _) = check(ok);
    assert_eq!(r[0].verdict, Verdict::RaceFree, "{:#?}", r[0]);
    let bad = ok.replace("y[i] = a * x[i] + y[i];", "y[i + 1] = a * x[i] + y[i];");
    let (r, idx) = check(&bad);
    assert_eq!(r[0].verdict, Verdict::Racy, "{:#?}", r[0]);
    assert_eq!(lines(&r[0], &idx, FindingKind::DataRace), vec![4]);
}

#[test]
fn bitonic_step_with_barrier_is_race_free() {
    let src = r#"
#define N 512
__global__ void bitonic(float *values) {
    __shared__ float s[N];
    unsigned int tid = threadIdx.x;
    s[tid] = values[tid];
    __syncthreads();
    for (unsigned int k = 2; k <= N; k <<= 1) {
        for (unsigned int j = k >> 1; j > 0; j >>= 1) {
            unsigned int ixj = tid ^ j;
            if (ixj > tid) {
                float a = s[tid];
                float b = s[ixj];
                if (a > b) { s[tid] = b; s[ixj] = a; }
            }
            __syncthreads();
        }
    }
    values[tid] = s[tid];
}
"#;
    let (r, _) = check(src);
    // values[tid] is written by every block at the same cells: racy across blocks only.
    assert!(
        r[0].findings
            .iter()
            .all(|f| f.array.as_deref() == Some("values")),
        "{:#?}",
        r[0]
    );
    assert!(r[0]
        .findings
        .iter()
        .all(|f| f.witness.thread_a.block_idx != f.witness.thread_b.block_idx));
}

#[test]
fn xor_butterfly_over_powers_of_two() {
    // Racy without a barrier between the partner read and the own update; race-free with one.
    let racy = r#"
__global__ void butterfly(float *out) {
    __shared__ float s[1024];
    unsigned int tid = threadIdx.x;
    s[tid] = tid;
    __syncthreads();
    for (unsigned int j = 1; j < 32; j <<= 1) {
        float other = s[tid ^ j];
        s[tid] += other;
        __syncthreads();
    }
}
"#;
    let (r, idx) = check(racy);
    assert_eq!(r[0].verdict, Verdict::Racy, "{:#?}", r[0]);
    assert_eq!(lines(&r[0], &idx, FindingKind::DataRace), vec![8]);
    let fixed = racy.replace(
        "        s[tid] += other;",
        "        __syncthreads();\n        s[tid] += other;",
    );
    let (r, _) = check(&fixed);
    assert_eq!(r[0].verdict, Verdict::RaceFree, "{:#?}", r[0]);
}
