//! Soundness regressions found by the differential oracle (`cudarace-interp`): each kernel races
//! or diverges at the given launch when run concretely, so the checker must say so (or at least
//! not call it race-free). Some also check precision: no definite alarm where there is none.

use cudarace_check::{check_kernel, CheckOptions};
use cudarace_ir::{Confidence, FindingKind, KernelReport, LaunchConfig, Verdict};
use cudarace_solver::{solve, Limits};

fn check_at(src: &str, block_x: u64) -> Vec<KernelReport> {
    let ir = cudarace_syntax::lower_source(None, src, &Default::default());
    assert!(ir.syntax_errors.is_empty(), "{:?}", ir.syntax_errors);
    let limits = Limits {
        timeout_ms: 10_000,
        rlimit: 50_000_000,
    };
    let opts = CheckOptions {
        launch_override: LaunchConfig {
            block_dim: [Some(block_x), Some(1), Some(1)],
            grid_dim: [Some(1), Some(1), Some(1)],
        },
        ..CheckOptions::default()
    };
    ir.kernels
        .iter()
        .map(|k| check_kernel(&ir, k, &opts, &mut |q| solve(q, &limits)))
        .collect()
}

fn has(r: &KernelReport, kind: FindingKind) -> bool {
    r.findings.iter().any(|f| f.kind == kind)
}

fn assert_finds(src: &str, block_x: u64, kind: FindingKind) {
    let r = check_at(src, block_x);
    assert!(has(&r[0], kind), "blockDim.x={block_x}: {:#?}", r[0]);
}

#[test]
fn unsigned_subtraction_wraps_in_a_condition() {
    let src = r#"
__global__ void wrap_race(int *g) {
    __shared__ int s[64];
    if (threadIdx.x - 1 > 5) s[0] = threadIdx.x;
}
"#;
    // Thread 0 wraps to UINT_MAX and thread 7 is > 5 too.
    assert_finds(src, 8, FindingKind::DataRace);
    // Only thread 0 takes the branch at 2 threads: no race.
    assert_eq!(check_at(src, 2)[0].verdict, Verdict::RaceFree);
}

#[test]
fn unsigned_wrap_makes_an_early_return_thread_dependent() {
    let src = r#"
__global__ void wrap_div(int *g) {
    if (threadIdx.x - 1 > 3) return;
    __syncthreads();
    g[threadIdx.x] = 1;
}
"#;
    assert_finds(src, 2, FindingKind::BarrierDivergence);
}

#[test]
fn signed_compared_with_unsigned_is_converted() {
    let src = r#"
__global__ void mixed_compare(int *g) {
    __shared__ int s[64];
    int tid = threadIdx.x;
    if (tid < blockDim.x - 3) s[0] = tid;
}
"#;
    // blockDim.x - 3 wraps at 2 threads: every thread writes s[0].
    assert_finds(src, 2, FindingKind::DataRace);
    // At 4 threads only thread 0 writes.
    assert_eq!(check_at(src, 4)[0].verdict, Verdict::RaceFree);
}

#[test]
fn signed_local_from_wrapped_unsigned_is_negative() {
    let src = r#"
__global__ void k(int *g) {
    __shared__ int s[64];
    int t = threadIdx.x - 1;
    if (t < 0) s[0] = 1;
    if (t >= 0) s[t + 1] = 2;
}
"#;
    // t == -1 only at thread 0: no race.
    assert_eq!(check_at(src, 8)[0].verdict, Verdict::RaceFree);
}

#[test]
fn barrier_nobody_reaches_does_not_hide_races() {
    let src = r#"
__global__ void skipped_nested_barrier(int *g) {
    __shared__ int s[64];
    int tid = threadIdx.x;
    s[tid] = tid;
    if (tid % 2 == 1) {
        if (tid == 5) {
            __syncthreads();
        }
        g[tid] = s[tid ^ 1];
    }
}
"#;
    assert_finds(src, 2, FindingKind::DataRace);
}

#[test]
fn race_before_return_is_found_despite_a_later_conditional_barrier() {
    let src = r#"
__global__ void return_then_cond_barrier(int *g) {
    int tid = threadIdx.x;
    g[3] = tid;
    if ((tid >> 1) == 0) return;
    if ((tid & 3) == 0) {
        __syncthreads();
    }
    g[tid] = 1;
}
"#;
    assert_finds(src, 2, FindingKind::DataRace);
}

#[test]
fn conditional_syncwarp_does_not_order_what_precedes_it() {
    let src = r#"
__global__ void cond_syncwarp(int *g) {
    __shared__ int s[64];
    int tid = threadIdx.x;
    s[tid / 2] += 1;
    if ((tid & 1) == 0) {
        __syncwarp();
    }
}
"#;
    assert_finds(src, 2, FindingKind::DataRace);
}

#[test]
fn thread_dependent_break_after_the_barrier_diverges() {
    let src = r#"
__global__ void break_after_barrier(int *g) {
    int tid = threadIdx.x;
    for (int i = 0; i < 2; i++) {
        __syncthreads();
        if (tid == 0) break;
    }
    __syncthreads();
    g[tid] = 1;
}
"#;
    assert_finds(src, 4, FindingKind::BarrierDivergence);
}

#[test]
fn uniform_barrier_under_a_thread_dependent_branch_that_everyone_takes_still_orders() {
    // Every thread takes the branch at 64 threads: the barrier is reached by all and orders the
    // write before it and the read after it.
    let src = r#"
__global__ void k(int *g) {
    __shared__ int s[64];
    int tid = threadIdx.x;
    if (tid < 64) {
        s[tid] = tid;
        __syncthreads();
        g[tid] = s[63 - tid];
    }
}
"#;
    let r = check_at(src, 64);
    assert_eq!(r[0].verdict, Verdict::RaceFree, "{:#?}", r[0]);
}

#[test]
fn block_stride_loop_with_equal_trip_counts_does_not_diverge() {
    let src = r#"
__global__ void k(int *g) {
    __shared__ int s[64];
    for (int j = threadIdx.x; j < 34; j += blockDim.x) {
        s[j] = j;
        __syncthreads();
    }
}
"#;
    let r = check_at(src, 2);
    assert!(
        !r[0]
            .findings
            .iter()
            .any(|f| f.kind == FindingKind::BarrierDivergence
                && f.confidence == Confidence::Definite),
        "{:#?}",
        r[0]
    );
    // 34 = 8*4 + 2: threads 0 and 1 run 9 iterations, threads 2 and 3 run 8.
    assert_finds(src, 4, FindingKind::BarrierDivergence);
}

#[test]
fn count_down_do_loop_stays_in_its_range() {
    // w runs 3, 2, 1 (the test `w > 0` follows each iteration): s[w - 1] never reaches -1.
    let src = r#"
__global__ void k(int *g) {
    __shared__ int s[64];
    int w = 3;
    do {
        if (threadIdx.x == 0) s[w - 1] = 1;
        if (threadIdx.x == 1) s[w + 60] = 2;
        w = w - 1;
    } while (w > 0);
}
"#;
    let r = check_at(src, 2);
    assert_eq!(r[0].verdict, Verdict::RaceFree, "{:#?}", r[0]);
}

#[test]
fn thread_dependent_do_loop_with_barrier_diverges() {
    let src = r#"
__global__ void k(int *g) {
    int i = 0;
    do {
        __syncthreads();
        i++;
    } while (i < threadIdx.x);
}
"#;
    assert_finds(src, 4, FindingKind::BarrierDivergence);
}

#[test]
fn syncwarp_skipped_by_exited_lanes_is_not_divergent() {
    // Lane 4 has exited; CUDA requires only non-exited lanes to take part in `__syncwarp()`.
    let exited = r#"
__global__ void k(int *g) {
    int tid = threadIdx.x;
    if (tid == 4) return;
    __syncwarp();
    g[tid] = 1;
}
"#;
    let r = check_at(exited, 8);
    assert_eq!(r[0].verdict, Verdict::RaceFree, "{:#?}", r[0]);
    // A live lane that skips it is a divergence.
    let skipped = r#"
__global__ void k(int *g) {
    int tid = threadIdx.x;
    if (tid != 4) {
        __syncwarp();
    }
    g[tid] = 1;
}
"#;
    assert_finds(skipped, 8, FindingKind::BarrierDivergence);
}
