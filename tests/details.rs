//! End-to-end checks of finding details that the fixture convention (verdicts and lines) cannot
//! express: same-value writes, definite vs possible, witnesses that respect the launch
//! configuration a file fixes, loop variables in witnesses, and the threads a divergence names.

use cudarace_analysis::ir::{
    BarrierScope, Confidence, Finding, FindingKind, KernelReport, Verdict,
};
use cudarace_analysis::{analyze_source, Options, SolverPool};
use cudarace_tests::fixtures_dir;
use std::sync::OnceLock;

fn pool() -> &'static SolverPool {
    static POOL: OnceLock<SolverPool> = OnceLock::new();
    POOL.get_or_init(|| SolverPool::new(2))
}

/// The kernel reports of one fixture (`category/behaviour.cu`).
fn kernels(rel: &str) -> Vec<KernelReport> {
    let path = fixtures_dir().join(rel);
    let text = std::fs::read_to_string(&path).expect("fixture is readable");
    let report = analyze_source(Some(&path), &text, &Options::default(), pool());
    assert!(report.error.is_none(), "{rel}: {:?}", report.error);
    report.kernels
}

/// The findings of a fixture with exactly one kernel, which must have `verdict`.
fn findings(rel: &str, verdict: Verdict) -> Vec<Finding> {
    let ks = kernels(rel);
    assert_eq!(ks.len(), 1, "{rel}: {ks:#?}");
    assert_eq!(ks[0].verdict, verdict, "{rel}: {:#?}", ks[0]);
    assert!(
        !ks[0].findings.is_empty() || verdict == Verdict::RaceFree,
        "{rel}: no findings"
    );
    ks[0].findings.clone()
}

#[test]
fn same_constant_stored_by_all_threads_is_flagged_as_such() {
    let fs = findings("intervals/same_value_write.cu", Verdict::Racy);
    assert!(fs.iter().all(|f| f.same_value_write), "{fs:#?}");
    assert!(
        fs.iter().all(|f| f.confidence == Confidence::Definite),
        "{fs:#?}"
    );
}

#[test]
fn different_values_are_not_same_value_writes() {
    for rel in [
        "intervals/all_threads_write_one_cell.cu",
        "intervals/compound_assign_all_threads.cu",
    ] {
        let fs = findings(rel, Verdict::Racy);
        assert!(fs.iter().all(|f| !f.same_value_write), "{rel}: {fs:#?}");
    }
}

#[test]
fn races_without_unknown_values_are_definite() {
    let fs = findings("intervals/shift_without_barrier.cu", Verdict::Racy);
    assert!(
        fs.iter().all(|f| f.confidence == Confidence::Definite),
        "{fs:#?}"
    );
    assert!(
        fs.iter().all(|f| f.array.as_deref() == Some("s")),
        "{fs:#?}"
    );
}

#[test]
fn parameters_of_typedefs_of_integers_are_integers() {
    let fs = findings("frontend/typedef_of_an_integer_parameter.cu", Verdict::Racy);
    assert!(
        fs.iter().all(|f| f.confidence == Confidence::Definite),
        "{fs:#?}"
    );
}

#[test]
fn races_through_data_dependent_indices_are_possible() {
    let ks = kernels("frontend/data_dependent_index.cu");
    assert_eq!(ks.len(), 1);
    match ks[0].verdict {
        Verdict::Racy => {
            for f in &ks[0].findings {
                assert_eq!(f.confidence, Confidence::Possible, "{f:#?}");
                assert!(
                    f.confidence_reason.contains("perm"),
                    "reason should name `perm`: {f:#?}"
                );
            }
        }
        Verdict::Unknown => assert!(ks[0].reason.is_some(), "unknown needs a reason"),
        other => panic!("data_dependent_index: verdict {other:?}: {:#?}", ks[0]),
    }
}

#[test]
fn races_through_carried_uniform_values_are_possible() {
    // `offset` in the down-sweep is not an induction: any value shared by the block. A witness
    // built on it (offset = 0) may not happen, even though no thread-private data is involved.
    let fs = findings("loops/carried_uniform_stride_is_possible.cu", Verdict::Racy);
    for f in &fs {
        assert_eq!(f.confidence, Confidence::Possible, "{f:#?}");
        assert!(
            f.confidence_reason
                .contains("`offset` carried across loop iterations"),
            "{f:#?}"
        );
    }
}

#[test]
fn unknowns_the_witness_does_not_need_leave_it_definite() {
    // The table read is "what thread e stored, or unknown if e is no thread"; the witness's
    // threads read slots their neighbours stored, so the unknown branch plays no part.
    let fs = findings("tables/halving_table_scatter.cu", Verdict::Racy);
    for f in &fs {
        assert_eq!(f.confidence, Confidence::Definite, "{f:#?}");
    }
    // Through a table written twice, the value read is unknown: possible.
    let fs = findings("tables/table_written_twice.cu", Verdict::Racy);
    assert!(
        fs.iter().all(|f| f.confidence == Confidence::Possible),
        "{fs:#?}"
    );
}

#[test]
fn long_chains_of_continues_stay_shallow_and_sound() {
    // 300 `continue`s would nest the rest of the loop body 300 branches deep; past the nesting
    // limit the barriers count as none, so the kernel is still checked (no stack overflow), and
    // the races that those barriers might prevent are possible, not definite.
    let mut src = String::from(
        "__global__ void many_skips(const int *in, float *out, int n) {\n    __shared__ float s[1024];\n    int t = threadIdx.x;\n    for (int i = 0; i < n; i++) {\n",
    );
    for k in 0..300 {
        src += &format!("        if (in[{k}] == i) continue;\n        __syncthreads();\n");
    }
    src += "        s[t] = i;\n        __syncthreads();\n        out[t] = s[(t + 1) % blockDim.x];\n    }\n}\n";
    let report = analyze_source(None, &src, &Options::default(), pool());
    assert_eq!(report.kernels.len(), 1, "{report:#?}");
    let k = &report.kernels[0];
    // (It is race-free; a checker that keeps all the barriers may say so.)
    assert!(
        matches!(
            k.verdict,
            Verdict::RaceFree | Verdict::Racy | Verdict::Unknown
        ),
        "{k:#?}"
    );
    assert!(
        k.findings
            .iter()
            .all(|f| f.confidence != Confidence::Definite),
        "{k:#?}"
    );
}

#[test]
fn unmentioned_dimensions_are_one_in_witnesses() {
    // A 1-D kernel is launched 1-D: its witness has blockDim.y = blockDim.z = 1.
    let fs = findings("intervals/shift_without_barrier.cu", Verdict::Racy);
    for f in &fs {
        assert_eq!(f.witness.block_dim[1..], [1, 1], "{f:#?}");
        assert_eq!(f.witness.grid_dim[1..], [1, 1], "{f:#?}");
        // Shared memory: both threads are in one block, one thread reads the cell the other writes.
        assert_eq!(
            f.witness.thread_a.block_idx, f.witness.thread_b.block_idx,
            "{f:#?}"
        );
        let (ta, tb) = (
            f.witness.thread_a.thread_idx[0],
            f.witness.thread_b.thread_idx[0],
        );
        assert_eq!((ta - tb).abs(), 1, "neighbouring threads expected: {f:#?}");
    }
}

#[test]
fn cross_block_race_witness_uses_two_blocks() {
    let fs = findings("global/thread_index_only_across_blocks.cu", Verdict::Racy);
    for f in &fs {
        let w = &f.witness;
        assert_ne!(w.thread_a.block_idx, w.thread_b.block_idx, "{f:#?}");
        assert_eq!(w.thread_a.thread_idx, w.thread_b.thread_idx, "{f:#?}");
        assert_eq!(w.cell, vec![w.thread_a.thread_idx[0]], "{f:#?}");
    }
}

#[test]
fn gpuverify_header_fixes_the_witness_launch() {
    let fs = findings("launch/gpuverify_header_two_blocks.cu", Verdict::Racy);
    for f in &fs {
        assert_eq!(f.witness.block_dim, [32, 1, 1], "{f:#?}");
        assert_eq!(f.witness.grid_dim, [2, 1, 1], "{f:#?}");
    }
}

#[test]
fn launch_site_fixes_the_witness_launch() {
    let fs = findings("launch/launch_site_many_blocks.cu", Verdict::Racy);
    for f in &fs {
        assert_eq!(f.witness.block_dim, [64, 1, 1], "{f:#?}");
        assert_eq!(f.witness.grid_dim, [8, 1, 1], "{f:#?}");
    }
}

#[test]
fn launch_bounds_caps_the_witness_block() {
    let fs = findings("launch/launch_bounds_is_only_upper_bound.cu", Verdict::Racy);
    for f in &fs {
        assert!(
            f.witness.block_dim[0] > 128 && f.witness.block_dim[0] <= 256,
            "{f:#?}"
        );
    }
}

#[test]
fn unsynchronized_loop_witness_names_both_iterations() {
    let fs = findings("reductions/tree_missing_barrier.cu", Verdict::Racy);
    for f in &fs {
        let (a, b) = (&f.witness.thread_a.loop_vars, &f.witness.thread_b.loop_vars);
        assert!(
            a.contains_key("s") && b.contains_key("s"),
            "loop variable `s` missing: {f:#?}"
        );
        // Within one level the accesses are disjoint: the race is between two levels.
        assert_ne!(a["s"], b["s"], "{f:#?}");
    }
}

#[test]
fn divergence_witness_has_one_thread_on_each_side() {
    let fs = findings("divergence/barrier_in_thread_if.cu", Verdict::Divergent);
    for f in &fs {
        assert_eq!(f.kind, FindingKind::BarrierDivergence);
        let below = |t: i64| t < 16;
        let (a, b) = (
            f.witness.thread_a.thread_idx[0],
            f.witness.thread_b.thread_idx[0],
        );
        assert_ne!(
            below(a),
            below(b),
            "one thread must take the branch: {f:#?}"
        );
        assert!(
            !f.related.is_empty(),
            "divergence should point at the condition: {f:#?}"
        );
    }
}

#[test]
fn divergence_findings_name_the_scope_of_their_barrier() {
    for (rel, scope) in [
        ("divergence/barrier_in_thread_if.cu", BarrierScope::Block),
        (
            "divergence/syncwarp_under_lane_condition.cu",
            BarrierScope::Warp,
        ),
        (
            "divergence/grid_sync_under_block_condition.cu",
            BarrierScope::Grid,
        ),
    ] {
        let fs = findings(rel, Verdict::Divergent);
        for f in fs
            .iter()
            .filter(|f| f.kind == FindingKind::BarrierDivergence)
        {
            assert_eq!(f.barrier, Some(scope), "{rel}: {f:#?}");
        }
        assert!(fs.iter().any(|f| f.kind == FindingKind::BarrierDivergence));
    }
    let races = findings("intervals/shift_without_barrier.cu", Verdict::Racy);
    assert!(races.iter().all(|f| f.barrier.is_none()), "{races:#?}");
}

#[test]
fn findings_name_their_kernel() {
    let ks = kernels("frontend/two_kernels_per_file.cu");
    for k in &ks {
        assert!(k.findings.iter().all(|f| f.kernel == k.name), "{k:#?}");
    }
    let broken = ks
        .iter()
        .find(|k| k.name == "broken")
        .expect("kernel `broken`");
    assert!(!broken.findings.is_empty());
}

#[test]
fn unknown_and_unsupported_verdicts_give_a_reason() {
    for rel in [
        "frontend/error_node_in_kernel.cu",
        "frontend/opaque_call_with_shared_pointer.cu",
        "frontend/recursion.cu",
    ] {
        for k in kernels(rel) {
            if matches!(k.verdict, Verdict::Unknown | Verdict::Unsupported) {
                assert!(
                    k.reason.as_deref().is_some_and(|r| !r.is_empty()),
                    "{rel}: {k:#?}"
                );
            }
        }
    }
}

#[test]
fn races_around_unmodelled_barriers_are_possible() {
    let ks = kernels("frontend/inline_asm_barrier.cu");
    assert_eq!(ks.len(), 1);
    for f in &ks[0].findings {
        assert_eq!(f.confidence, Confidence::Possible, "{f:#?}");
    }
}

#[test]
fn conditional_findings_name_their_condition() {
    let fs = findings("witnesses/zero_stride_is_conditional.cu", Verdict::Racy);
    for f in &fs {
        assert_eq!(f.confidence, Confidence::Conditional, "{f:#?}");
        assert_eq!(
            f.condition.as_deref(),
            Some("only if stride == 0"),
            "{f:#?}"
        );
        assert!(f.message.contains("(only if stride == 0)"), "{f:#?}");
        // The precondition that removes it, from the catalogue.
        assert_eq!(f.precondition.as_deref(), Some("stride >= 1"), "{f:#?}");
        assert!(f.message.ends_with("; race-free if stride >= 1"), "{f:#?}");
    }
    let fs = findings(
        "witnesses/single_block_kernel_without_launch.cu",
        Verdict::Racy,
    );
    assert_eq!(
        fs[0].condition.as_deref(),
        Some("only if launched with more than one block")
    );
    let fs = findings(
        "witnesses/shared_out_of_bounds_is_conditional.cu",
        Verdict::Racy,
    );
    assert_eq!(
        fs[0].condition.as_deref(),
        Some("only if the index into `s` is outside its 64 elements")
    );
    let fs = findings(
        "witnesses/launch_shape_precondition_without_launch_is_conditional.cu",
        Verdict::Racy,
    );
    assert_eq!(
        fs[0].condition.as_deref(),
        Some("only if sections != blockDim.x")
    );
    assert_eq!(
        fs[0].precondition.as_deref(),
        Some("sections == blockDim.x")
    );
    let fs = findings(
        "witnesses/block_stride_loop_with_constant_step_is_conditional.cu",
        Verdict::Racy,
    );
    assert_eq!(
        fs[0].condition.as_deref(),
        Some("only if blockDim.x != 64 (the step of a block-stride loop)")
    );
    let fs = findings(
        "witnesses/block_wider_than_tile_with_halo_thread_is_conditional.cu",
        Verdict::Racy,
    );
    assert_eq!(
        fs[0].condition.as_deref(),
        Some("only if blockDim.x > 64 (thread 63 fills the halo of `tile`)")
    );
    let fs = findings(
        "witnesses/thread_column_chosen_padding_of_row_step_is_conditional.cu",
        Verdict::Racy,
    );
    assert_eq!(
        fs[0].condition.as_deref(),
        Some("only if blockDim.y > cols")
    );
    let fs = findings(
        "witnesses/block_stride_loop_from_split_thread_index_is_conditional.cu",
        Verdict::Racy,
    );
    assert_eq!(
        fs[0].condition.as_deref(),
        Some("only if blockDim.x != 128 (the step of a block-stride loop)")
    );
    let fs = findings(
        "witnesses/block_taller_than_tile_filled_in_both_branches_is_conditional.cu",
        Verdict::Racy,
    );
    assert_eq!(
        fs[0].condition.as_deref(),
        Some("only if blockDim.y > 8 (past the 8 slots of `tile`)")
    );
    let fs = findings(
        "witnesses/grid_wider_than_parameter_row_is_conditional.cu",
        Verdict::Racy,
    );
    // The condition names the broken assumptions of the witness found; under a loaded machine
    // the first solve (all assumptions but the one broken) may time out (a nonlinear
    // `blockIdx.x * taps`, about 0.6 s), and the witness of the next breaks `taps >= 1` too.
    let condition = fs[0].condition.as_deref().unwrap_or_default();
    assert!(
        condition.starts_with("only if") && condition.contains("gridDim.y > taps"),
        "{condition}"
    );
    let fs = findings(
        "witnesses/index_past_int_range_is_conditional.cu",
        Verdict::Racy,
    );
    assert_eq!(
        fs[0].condition.as_deref(),
        Some("only if the index into `out` is 2^31 or more")
    );
    // Layouts `X * S + Y`: the digit past its step, in the source's names.
    let fs = findings(
        "witnesses/remainder_of_product_below_row_step_is_conditional.cu",
        Verdict::Racy,
    );
    assert_eq!(fs[0].condition.as_deref(), Some("only if h * w > align"));
    let fs = findings(
        "witnesses/concat_offset_past_axis_is_conditional.cu",
        Verdict::Racy,
    );
    assert!(
        fs[0]
            .condition
            .as_deref()
            .is_some_and(|c| c.contains("offset + part > whole")),
        "{:#?}",
        fs[0]
    );
}

#[test]
fn assumptions_switched_off_in_the_config_make_such_races_definite() {
    let dir = tempdir_with_config(
        "[assumptions]\npositive-sizes = false\nnon-negative-indices = false\n\
         shared-in-bounds = false\nsingle-block-without-launch = false\n\
         leading-dimensions = false\nlaunch-shape-without-launch = false\n\
         constant-block-shape = false\n\
         unread-block-dimensions = false\nwarp-sized-blocks = false\n\
         one-to-one-thread-ids = false\nwhole-stretches = false\n\
         divisible-sizes = false\n",
    );
    let config =
        cudarace_analysis::config::Config::load(&dir.join("cudarace.toml")).expect("valid config");
    assert_eq!(
        config.assumptions,
        cudarace_analysis::AssumptionSwitches::NONE
    );
    for rel in [
        "witnesses/zero_stride_is_conditional.cu",
        "witnesses/negative_index_is_conditional.cu",
        "witnesses/shared_out_of_bounds_is_conditional.cu",
        "witnesses/single_block_kernel_without_launch.cu",
        "witnesses/leading_dimension_below_row_is_conditional.cu",
        "witnesses/pitch_after_early_return_is_conditional.cu",
        "witnesses/launch_shape_precondition_without_launch_is_conditional.cu",
        "witnesses/row_without_column_guard_is_conditional.cu",
        "witnesses/concat_offset_past_axis_is_conditional.cu",
        "witnesses/remainder_of_product_below_row_step_is_conditional.cu",
        "witnesses/thread_column_of_row_step_is_conditional.cu",
        "witnesses/block_stride_loop_with_constant_step_is_conditional.cu",
        "witnesses/block_taller_than_tile_filled_in_both_branches_is_conditional.cu",
        "witnesses/block_wider_than_tile_with_halo_thread_is_conditional.cu",
        "witnesses/block_taller_than_tile_with_halo_row_is_conditional.cu",
        "witnesses/block_stride_loop_from_split_thread_index_is_conditional.cu",
        "witnesses/thread_column_chosen_padding_of_row_step_is_conditional.cu",
        "witnesses/warp_split_by_a_partial_warp_is_conditional.cu",
        "witnesses/thread_id_with_another_dimensions_radix_is_conditional.cu",
        "witnesses/index_past_int_range_is_conditional.cu",
        "witnesses/padded_stretch_per_lane_group.cu",
        "witnesses/linearised_thread_id_inside_its_row.cu",
        "witnesses/bit_rows_in_words_of_32_is_conditional.cu",
    ] {
        let path = fixtures_dir().join(rel);
        let text = std::fs::read_to_string(&path).expect("fixture is readable");
        let mut opts = Options::default();
        std::sync::Arc::new(config.clone()).apply(&mut opts);
        let report = analyze_source(Some(&path), &text, &opts, pool());
        let k = &report.kernels[0];
        assert!(
            matches!(k.verdict, Verdict::Racy | Verdict::Divergent),
            "{rel}: {k:#?}"
        );
        assert!(
            k.findings
                .iter()
                .all(|f| f.confidence == Confidence::Definite && f.condition.is_none()),
            "{rel}: {k:#?}"
        );
    }
}

fn tempdir_with_config(text: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("cudarace-details-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    std::fs::write(dir.join("cudarace.toml"), text).expect("config written");
    dir
}

#[test]
fn legacy_warp_synchronous_code_says_so() {
    let fs = findings(
        "reductions/legacy_warp_synchronous_volatile.cu",
        Verdict::Racy,
    );
    assert!(!fs.is_empty());
    for f in &fs {
        assert_eq!(f.confidence, Confidence::Definite, "{f:#?}");
        assert!(
            f.message.contains(
                "warp-synchronous code: racy since Volta's independent thread scheduling"
            ),
            "{f:#?}"
        );
    }
    // A race between warps of the same code is not called warp-synchronous.
    let fs = findings("intervals/same_value_write.cu", Verdict::Racy);
    assert!(fs.iter().all(|f| !f.message.contains("warp-synchronous")));
}

/// The report of the first kernel of `src` (no file), checked with the default options.
fn kernel_of(src: &str) -> KernelReport {
    let report = analyze_source(None, src, &Options::default(), pool());
    report.kernels.into_iter().next().expect("a kernel")
}

/// Whether some finding of `k` says it is race-free under `precondition`.
fn states_precondition(k: &KernelReport, precondition: &str) -> bool {
    k.findings
        .iter()
        .any(|f| f.precondition.as_deref() == Some(precondition))
}

#[test]
fn preconditions_from_the_catalogue_are_stated() {
    // Row `m + bid` meets row `bid'` of another block unless the rows are apart: the race is
    // gone when m >= gridDim.x * blockDim.x (the catalogue's first relation that removes it).
    let src = "__global__ void two_rows(float *y, int m) {\n    unsigned bid = blockIdx.x;\n    y[bid * 128 + threadIdx.x] = 1.0f;\n    y[(m + bid) * 128 + threadIdx.x] = 2.0f;\n}\n";
    let k = &kernel_of(src);
    assert_eq!(k.verdict, Verdict::Racy, "{k:#?}");
    assert!(
        states_precondition(k, "m >= gridDim.x * blockDim.x"),
        "{k:#?}"
    );
}

#[test]
fn no_precondition_that_removes_an_access_instead_of_the_race() {
    // `start >= finish` makes the race go away only because no thread then runs the guarded
    // code (`start <= n < finish`): advice that empties the kernel is none, and the code
    // action would insert it.
    let src = "__global__ void shift_range(float *d, int start, int finish, int np) {\n    int n = blockIdx.x * blockDim.x + threadIdx.x + start;\n    if (n < finish) {\n        float v = d[n];\n        d[np + n] = v;\n    }\n}\n";
    let k = &kernel_of(src);
    assert_eq!(k.verdict, Verdict::Racy, "{k:#?}");
    assert!(!states_precondition(k, "start >= finish"), "{k:#?}");
    // Nor one that empties the loop around the accesses (`lo >= hi` over `lo <= j < hi`).
    let src = "__global__ void loop_range(float *out, unsigned lo, unsigned hi) {\n    __shared__ float t;\n    for (unsigned j = lo; j < hi; j++) {\n        t = j;\n        out[threadIdx.x] = t;\n    }\n}\n";
    let k = &kernel_of(src);
    assert_eq!(k.verdict, Verdict::Racy, "{k:#?}");
    assert!(!states_precondition(k, "lo >= hi"), "{k:#?}");
    // A relation that keeps both accesses is still stated.
    let src = "__global__ void shift_all(float *d, int finish, int np) {\n    int n = blockIdx.x * blockDim.x + threadIdx.x;\n    if (n < finish) {\n        float v = d[n];\n        d[np + n] = v;\n    }\n}\n";
    let k = &kernel_of(src);
    assert!(states_precondition(k, "np >= finish"), "{k:#?}");
    // A relation that removes only a later iteration of a loop (the next row's write against
    // this row's read, no barrier at the loop's end) keeps the code: it is stated.
    let src = "__global__ void rows_in_smem(const float *in, float *out, int rows) {\n    __shared__ float buf[256];\n    for (int row = blockIdx.x; row < rows; row += gridDim.x) {\n        buf[threadIdx.x] = in[row * 256 + threadIdx.x];\n        __syncthreads();\n        out[row * 256 + threadIdx.x] = buf[255 - threadIdx.x];\n    }\n}\n";
    let k = &kernel_of(src);
    assert!(states_precondition(k, "rows == gridDim.x"), "{k:#?}");
}

#[test]
fn no_precondition_that_leaves_one_thread_instead_of_removing_the_race() {
    // Every thread adds into one cell; with the grid `(n + 255) / 256` of the launch,
    // `n == gridDim.x` holds only for n <= 1, where one thread passes `i < n`: each side can
    // still run, but never two threads at once. Advice that leaves one thread is none.
    let src = "__global__ void total(const float *in, float *sum, int n) {\n    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < n)\n        *sum += in[i];\n}\nvoid run(const float *in, float *sum, int n) {\n    total<<<(n + 255) / 256, 256>>>(in, sum, n);\n}\n";
    let k = &kernel_of(src);
    assert_eq!(k.verdict, Verdict::Racy, "{k:#?}");
    assert!(!states_precondition(k, "n == gridDim.x"), "{k:#?}");
}

#[test]
fn the_precondition_removes_the_race_among_the_values_a_caller_passes() {
    // One thread per section writes its block's cell when `n == blockDim.x`; that leaves a race
    // between blocks only with `stride == 0`, which the plausibility assumption `stride >= 1`
    // (kept by the witness) rules out. So the precondition is the launch shape, not the
    // larger `n >= gridDim.x * blockDim.x` that also holds with a zero stride.
    let src = "extern \"C\" __global__ void last_section(int n, int stride, const float *coef, float *x) {\n    int tx = threadIdx.x;\n    float c = coef[blockIdx.x * n + tx];\n    if (tx >= n - 1)\n        x[blockIdx.x * stride] = c;\n}\n";
    let k = &kernel_of(src);
    assert_eq!(k.verdict, Verdict::Racy, "{k:#?}");
    assert!(states_precondition(k, "n == blockDim.x"), "{k:#?}");
}

#[test]
fn a_busy_shared_buffer_does_not_use_up_the_precondition_search_of_another_array() {
    // Six racy stores to `s` make 21 pairs, planned first; the race on `out` still gets its
    // precondition, and with it the kernel that the file never launches is conditional.
    let src = "__global__ void busy_then_sections(const float *in, float *out, int sections) {\n    __shared__ float s[8];\n    s[threadIdx.x % 2] = 1.0f;\n    s[threadIdx.x % 3] = 2.0f;\n    s[threadIdx.x % 4] = 3.0f;\n    s[threadIdx.x % 5] = 4.0f;\n    s[threadIdx.x % 6] = 5.0f;\n    s[threadIdx.x % 7] = 6.0f;\n    float v = in[blockIdx.x * sections + threadIdx.x];\n    if (threadIdx.x >= sections - 1)\n        out[blockIdx.x] = v;\n}\n";
    let k = &kernel_of(src);
    assert_eq!(k.verdict, Verdict::Racy, "{k:#?}");
    let out: Vec<_> = k
        .findings
        .iter()
        .filter(|f| f.array.as_deref() == Some("out"))
        .collect();
    assert!(!out.is_empty(), "{k:#?}");
    for f in out {
        assert_eq!(
            f.precondition.as_deref(),
            Some("sections == blockDim.x"),
            "{f:#?}"
        );
        assert_eq!(f.confidence, Confidence::Conditional, "{f:#?}");
    }
}

#[test]
fn no_precondition_on_a_parameter_the_launch_fixes() {
    // The launch passes n = 1 << 20: "race-free if n == blockDim.x" would contradict it (the
    // race query with it is unsat only because n cannot be 256 there).
    let fs = findings(
        "launch/serial_loop_in_every_thread_with_constant_size.cu",
        Verdict::Racy,
    );
    assert!(!fs.is_empty());
    assert!(fs.iter().all(|f| f.precondition.is_none()), "{fs:#?}");
}

/// A `bool` local changed by a call the checker cannot see into gets an unknown of its own
/// sort: the kernel is unknown because of the call, never because of a malformed query.
#[test]
fn unknown_values_of_bool_locals_are_bools() {
    let ks = kernels("cxx/bool_local_changed_by_unknown_call_in_loop.cu");
    assert_eq!(ks.len(), 1);
    assert_eq!(ks[0].verdict, Verdict::Unknown);
    let reason = ks[0].reason.clone().unwrap_or_default();
    assert!(
        reason.contains("call through the variable `accum`"),
        "{reason}"
    );
    assert!(!reason.contains("malformed"), "{reason}");
}

/// A divergence points at what makes a thread miss the barrier: the early `return`, not a
/// `continue` in a loop between them (threads that skip an iteration still reach the barrier
/// after the loop).
#[test]
fn divergence_after_a_loop_blames_the_return_not_a_continue_in_the_loop() {
    let rel = "divergence/barrier_after_return_and_loop_with_continue.cu";
    let text = std::fs::read_to_string(fixtures_dir().join(rel)).expect("fixture is readable");
    let return_line = text
        .lines()
        .position(|l| l.trim() == "return;")
        .expect("the fixture has a return") as u32;
    let fs = findings(rel, Verdict::Divergent);
    for f in &fs {
        assert_eq!(f.kind, FindingKind::BarrierDivergence);
        let cause = f.related.first().expect("a divergence names its cause");
        let line = text[..cause.span.start as usize].lines().count() as u32 - 1;
        assert_eq!(line, return_line, "{f:#?}");
        assert!(cause.message.contains("return"), "{f:#?}");
    }
}

#[test]
fn a_race_needing_a_block_dimension_the_kernel_never_reads_is_conditional() {
    // The block is (128, 1, 1) or (4, 32, 1) from branches not tied to the launch; the kernel
    // never reads threadIdx.y.
    let fs = findings(
        "launch/dim3_assigned_in_branches_unread_dimension_is_conditional.cu",
        Verdict::Racy,
    );
    assert!(
        fs.iter().all(|f| f.confidence == Confidence::Conditional),
        "{fs:#?}"
    );
    assert!(
        fs.iter()
            .all(|f| f.confidence_reason.contains("blockDim.y == 32")),
        "{fs:#?}"
    );
}

#[test]
fn every_assumption_of_every_query_names_only_values_the_query_has() {
    // The solver drops (with a warning) an assumption over an undeclared name; the planner must
    // not hand it one. Every fixture's every kernel, planned with the default options.
    let mut checked = 0;
    for path in cudarace_tests::cuda_files(&fixtures_dir()) {
        let text = std::fs::read_to_string(&path).expect("fixture");
        let ir = cudarace_syntax::lower_source(
            Some(&path),
            &text,
            &cudarace_syntax::FrontendOptions::default(),
        );
        for kernel in &ir.kernels {
            let plan =
                cudarace_check::plan_kernel(&ir, kernel, &cudarace_check::CheckOptions::default());
            for q in &plan.queries {
                for a in &q.assumptions {
                    let mut names = std::collections::BTreeSet::new();
                    cudarace_check::terms::collect_vars(a, &mut names);
                    for n in names {
                        assert!(
                            q.vars.contains_key(&n),
                            "{}: kernel `{}`: assumption {a:?} names `{n}`",
                            path.display(),
                            kernel.name
                        );
                    }
                    checked += 1;
                }
            }
        }
    }
    assert!(checked > 100, "{checked}");
}
