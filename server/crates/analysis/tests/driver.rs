//! The driver over the real front end, checker and solver: what it keeps from the input, kernel
//! selection, and reports for text that is not (all) valid CUDA.

use cudarace_analysis::ir::Verdict;
use cudarace_analysis::{analyze_source, Options, SolverPool};
use std::path::Path;

const TWO_KERNELS: &str = "\
__global__ void shift(int *out) {
    __shared__ int s[64];
    int t = threadIdx.x;
    s[t] = t;
    out[blockIdx.x] = s[(t + 1) % 64];
}

__global__ void alone(int *out) {
    __shared__ int s[64];
    s[threadIdx.x % 64] = 1;
}
";

#[test]
fn reports_keep_the_input_and_the_kernel_order() {
    let pool = SolverPool::new(1);
    let r = analyze_source(
        Some(Path::new("k.cu")),
        TWO_KERNELS,
        &Options::default(),
        &pool,
    );
    assert!(r.error.is_none());
    assert_eq!(r.path.as_deref(), Some(Path::new("k.cu")));
    assert_eq!(&*r.files[0].text, TWO_KERNELS);
    let names: Vec<&str> = r.kernels.iter().map(|k| k.name.as_str()).collect();
    assert_eq!(names, ["shift", "alone"]);
    // `shift` reads a neighbour's cell without a barrier.
    assert_eq!(r.kernels[0].verdict, Verdict::Racy);
    assert!(r.kernels.iter().all(|k| k.time_ms >= 0.0));
}

#[test]
fn kernel_option_selects_by_name() {
    let pool = SolverPool::new(1);
    let opts = Options {
        kernel: Some("alone".to_string()),
        ..Options::default()
    };
    let r = analyze_source(None, TWO_KERNELS, &opts, &pool);
    let names: Vec<&str> = r.kernels.iter().map(|k| k.name.as_str()).collect();
    assert_eq!(names, ["alone"]);
    let opts = Options {
        kernel: Some("nothing".to_string()),
        ..Options::default()
    };
    assert!(analyze_source(None, TWO_KERNELS, &opts, &pool)
        .kernels
        .is_empty());
}

#[test]
fn text_that_is_not_cuda_gives_syntax_errors_not_a_failure() {
    let pool = SolverPool::new(1);
    let r = analyze_source(None, "this is )( not { CUDA", &Options::default(), &pool);
    assert!(r.error.is_none());
    assert!(r.kernels.is_empty());
    assert!(!r.syntax_errors.is_empty());
    let r = analyze_source(None, "", &Options::default(), &pool);
    assert!(r.error.is_none() && r.kernels.is_empty());
}

/// A file's kernels share one time budget: once it is spent, a kernel that still has queries
/// is `unknown` and says whose budget ran out (never clean, never racy without a witness).
#[test]
fn kernels_past_the_file_budget_are_unknown() {
    let pool = SolverPool::new(1);
    let mut opts = Options::default();
    opts.budget.file_time = std::time::Duration::ZERO;
    opts.budget.late_kernel_slice = std::time::Duration::ZERO;
    let r = analyze_source(Some(Path::new("k.cu")), TWO_KERNELS, &opts, &pool);
    let shift = &r.kernels[0];
    assert_eq!(shift.verdict, Verdict::Unknown, "{shift:#?}");
    let reason = shift.reason.clone().unwrap_or_default();
    assert!(reason.contains("the file's time budget"), "{reason}");
    // With the default budget the same file is decided.
    let r = analyze_source(
        Some(Path::new("k.cu")),
        TWO_KERNELS,
        &Options::default(),
        &pool,
    );
    assert_eq!(r.kernels[0].verdict, Verdict::Racy);
}

/// Ten stores to neighbouring cells race pairwise (45 racy pairs): 32 races on the array are
/// reported, its other pairs are not asked, and the reason says how many were left out.
#[test]
fn racy_pairs_past_the_cap_are_not_checked() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../tests/fixtures/global/racy_pairs_past_the_cap_are_not_checked.cu");
    let text = std::fs::read_to_string(&path).expect("the fixture");
    let pool = SolverPool::new(2);
    let r = analyze_source(Some(&path), &text, &Options::default(), &pool);
    let k = &r.kernels[0];
    assert_eq!(k.verdict, Verdict::Racy);
    assert_eq!(k.findings.len(), 32, "{:?}", k.reason);
    let reason = k.reason.as_deref().unwrap_or_default();
    assert!(
        reason.contains(
            "32 races on `out` were found first: its other 18 pairs of accesses were not checked"
        ),
        "{reason}"
    );
}
