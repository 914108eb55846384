//! Differential soundness test: random small kernels, run concretely by the interpreter and
//! checked statically with the same launch. Whenever the interpreter observes a race (resp. a
//! divergent barrier), the checker must not call the kernel race-free (resp. must report the
//! divergence or say unknown). Checker alarms the interpreter never confirmed are counted as a
//! precision statistic, not a failure (they may be real for parameter values or memory contents
//! the interpreter did not try).
//!
//! Size: `CUDARACE_DIFF_KERNELS` (default 60) kernels from seed `CUDARACE_DIFF_SEED` (default 1).
//! `CUDARACE_DIFF_WRAP=1` (the default) adds conditions whose unsigned arithmetic wraps
//! (`threadIdx.x - 1 > 5`, `tid < blockDim.x - 3`); `CUDARACE_DIFF_WRAP=0` leaves them out. `CUDARACE_DIFF_TILES=0` leaves out the 2-D tile statements.
//! `CUDARACE_DIFF_CXX=0` leaves out the C++ forms: by default some kernels are given to the
//! checker with accesses written through lambdas, function objects, an accessor class, `int2`
//! views and methods of an array of objects (`t[i].set(x)`) ([`GenOptions::cxx`]) while the
//! interpreter runs the plain kernel, so the lowering of
//! those constructs is held to the same soundness.
//! Each kernel is also checked once through a launch site in its own text instead of a launch
//! given from outside ([`site_case`]): a host function launches it with constant sizes and an
//! argument for `n` (a constant, the block width, or the grid's thread count), the checker binds
//! the launch and `n` from that site, and the interpreter runs that launch with that `n`, so
//! launch binding is held to the same soundness. `CUDARACE_DIFF_SITES=0` leaves these out.
//! `CUDARACE_DIFF_SHOW=N` prints N notes.

use cudarace_analysis::{analyze_source, Options};
use cudarace_interp::exec::{run, Budget, Launch, Outcome, RunReport};
use cudarace_interp::gen::{generate_with, GenOptions, MAX_PARAM_N};
use cudarace_ir::{Confidence, FindingKind, KernelReport, LaunchConfig, Span, Verdict};
use cudarace_solver::SolverPool;
use cudarace_syntax::{lower_source, FrontendOptions};
use std::collections::BTreeSet;
use std::fmt::Write;

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The launches tried for one kernel: a small single-block one and a larger two-block one.
fn launches_for(seed: u64, uses_y: bool) -> Vec<([u64; 3], [u64; 3])> {
    let small = [2, 3, 4][(seed % 3) as usize];
    let large = [5, 8][(seed / 3 % 2) as usize];
    let by = if uses_y { 2 } else { 1 };
    vec![([small, 1, 1], [1, 1, 1]), ([large, by, 1], [2, 1, 1])]
}

fn launch_config(block: [u64; 3], grid: [u64; 3]) -> LaunchConfig {
    LaunchConfig {
        block_dim: block.map(Some),
        grid_dim: grid.map(Some),
    }
}

/// Oracle runs for one launch: a few parameter values and memory contents.
fn oracle_runs(
    kernel: &cudarace_ir::Kernel,
    block: [u64; 3],
    grid: [u64; 3],
    extra_n: &[i64],
    fixed_n: Option<i64>,
) -> Vec<RunReport> {
    let mut ns: Vec<i64> = vec![0, 5, MAX_PARAM_N];
    ns.extend(extra_n.iter().copied().filter(|n| (0..=64).contains(n)));
    ns.dedup();
    if let Some(n) = fixed_n {
        ns = vec![n];
    }
    let budget = Budget {
        max_steps: 200_000,
        ..Budget::default()
    };
    let mut out = Vec::new();
    for n in ns {
        for memory_seed in [0, 1] {
            let mut l = Launch::new(block, grid);
            l.params.insert("n".into(), n);
            l.memory_seed = memory_seed;
            out.push(run(kernel, &l, &budget));
        }
    }
    out
}

/// One launch of one kernel: its sizes and, for a launch written in the checked text, the host
/// code appended to it and the `n` it passes (the interpreter then runs with that `n` only).
struct LaunchCase {
    block: [u64; 3],
    grid: [u64; 3],
    site: Option<(String, i64)>,
}

/// A host function that launches kernel `name` with `block` and `grid`, passing `n` as a
/// constant, as the block width (`threads`, also the launch's block size) or as the grid's
/// thread count (`blocks * threads`), chosen by `seed`; and the value `n` has.
fn site_case(name: &str, seed: u64, block: [u64; 3], grid: [u64; 3]) -> (String, i64) {
    let (setup, arg, n) = match seed % 3 {
        0 => {
            let n = [0, 5, MAX_PARAM_N, 3][(seed / 3 % 4) as usize];
            (String::new(), n.to_string(), n)
        }
        1 => (
            format!("    const int threads = {};\n", block[0]),
            "threads".to_string(),
            block[0] as i64,
        ),
        _ => (
            format!("    int blocks = {}, threads = {};\n", grid[0], block[0]),
            "blocks * threads".to_string(),
            (grid[0] * block[0]) as i64,
        ),
    };
    let block_text = match seed % 3 {
        0 => block[0].to_string(),
        _ => "threads".to_string(),
    };
    let host = format!(
        "\nvoid launch_{name}(int *g, int *h) {{\n{setup}    dim3 grid({}, {}, {});\n    dim3 block({block_text}, {}, {});\n    {name}<<<grid, block>>>(g, h, {arg});\n}}\n",
        grid[0], grid[1], grid[2], block[1], block[2]
    );
    (host, n)
}

fn summarize(report: &KernelReport) -> String {
    let mut s = format!(
        "verdict {} ({})",
        report.verdict.as_str(),
        report.reason.clone().unwrap_or_default()
    );
    for f in &report.findings {
        let _ = write!(
            s,
            "\n    {} {:?} at {}..{} array {:?}: {}",
            f.kind.code(),
            f.confidence,
            f.span.start,
            f.span.end,
            f.array,
            f.message
        );
    }
    s
}

#[derive(Default)]
struct Stats {
    generated: u64,
    front_end_rejected: u64,
    checked_launches: u64,
    runs: u64,
    complete: u64,
    inconclusive: u64,
    launches_with_race: u64,
    launches_with_divergence: u64,
    agreements: u64,
    violations: Vec<String>,
    notes: Vec<String>,
    /// Definite alarms that no complete run (with the witness's parameter values too) confirmed.
    precision: Vec<String>,
    /// Launches the checker called racy (a definite race finding) but no complete oracle run
    /// showed a race.
    unconfirmed_racy: u64,
    unconfirmed_divergent: u64,
    /// Definite race findings whose access the oracle never saw racing in that launch.
    unconfirmed_findings: u64,
    confirmed_findings: u64,
    checker_unknown: u64,
    /// Kernels given to the checker in their C++ form, and launches of them it left unknown.
    cxx_kernels: u64,
    cxx_unknown: u64,
    /// Launches whose alarms were not judged because the interpreter stopped at a divergence.
    unjudged_after_divergence: u64,
    inconclusive_reasons: std::collections::BTreeMap<String, u64>,
    /// Launches written as a launch site in the checked text, and those whose sizes and `n`
    /// the checker bound from it (its assumed launch says so).
    site_launches: u64,
    site_launches_bound: u64,
}

fn race_spans(runs: &[RunReport]) -> BTreeSet<Span> {
    runs.iter()
        .flat_map(|r| r.races.iter().flat_map(|x| [x.a.span, x.b.span]))
        .collect()
}

#[test]
fn checker_never_misses_what_the_interpreter_sees() {
    let count = env_u64("CUDARACE_DIFF_KERNELS", 60);
    let first = env_u64("CUDARACE_DIFF_SEED", 1);
    let gen_options = GenOptions {
        unsigned_wrap: env_u64("CUDARACE_DIFF_WRAP", 1) != 0,
        tiles: env_u64("CUDARACE_DIFF_TILES", 1) != 0,
        tables: env_u64("CUDARACE_DIFF_TABLES", 1) != 0,
        cxx: env_u64("CUDARACE_DIFF_CXX", 1) != 0,
    };
    let sites = env_u64("CUDARACE_DIFF_SITES", 1) != 0;
    let pool = SolverPool::new(2);
    let mut st = Stats::default();
    let started = std::time::Instant::now();

    for seed in first..first + count {
        let gk = generate_with(seed, &gen_options);
        st.generated += 1;
        let file = lower_source(None, &gk.text, &FrontendOptions::default());
        let kernel = match file.kernels.as_slice() {
            [k] if file.syntax_errors.is_empty() && k.unsupported.is_none() => k,
            _ => {
                st.front_end_rejected += 1;
                st.notes.push(format!(
                    "front end rejected seed {seed} ({} kernels, errors {:?}, unsupported {:?}):\n{}",
                    file.kernels.len(),
                    file.syntax_errors,
                    file.kernels.first().and_then(|k| k.unsupported.clone()),
                    gk.text
                ));
                continue;
            }
        };
        // What the checker is given: the C++ text when there is one (the interpreter runs the
        // plain kernel, which means the same).
        let checked = gk.cxx_text.as_deref().unwrap_or(&gk.text);
        if gk.cxx_text.is_some() {
            st.cxx_kernels += 1;
        }
        let mut cases: Vec<LaunchCase> = launches_for(seed, gk.uses_y)
            .into_iter()
            .map(|(block, grid)| LaunchCase {
                block,
                grid,
                site: None,
            })
            .collect();
        if sites {
            let (block, grid) = *launches_for(seed, gk.uses_y).last().expect("two launches");
            cases.push(LaunchCase {
                block,
                grid,
                site: Some(site_case(&gk.name, seed, block, grid)),
            });
        }
        for case in cases {
            let (block, grid) = (case.block, case.grid);
            st.checked_launches += 1;
            let mut opts = Options::default();
            let with_site;
            let checked = match &case.site {
                Some((host, _)) => {
                    st.site_launches += 1;
                    with_site = format!("{checked}{host}");
                    with_site.as_str()
                }
                None => {
                    opts.check.launch_override = launch_config(block, grid);
                    checked
                }
            };
            let fixed_n = case.site.as_ref().map(|(_, n)| *n);
            let t0 = std::time::Instant::now();
            let fr = analyze_source(None, checked, &opts, &pool);
            if std::env::var("CUDARACE_DIFF_VERBOSE").is_ok() {
                println!(
                    "seed {seed} {:?}/{:?}: {:.0} ms, {} queries, {}",
                    block,
                    grid,
                    t0.elapsed().as_secs_f64() * 1000.0,
                    fr.kernels.first().map(|k| k.queries).unwrap_or(0),
                    fr.kernels.first().map(summarize).unwrap_or_default()
                );
            }
            let Some(report) = fr.kernels.iter().find(|k| k.name == gk.name) else {
                st.violations.push(format!(
                    "seed {seed}: the checker returned no report for `{}`\n{}",
                    gk.name, gk.text
                ));
                continue;
            };
            // Parameter values from the checker's witnesses are tried too, to confirm alarms.
            let witness_n: Vec<i64> = report
                .findings
                .iter()
                .filter_map(|f| f.witness.params.get("n").copied())
                .collect();
            if fixed_n.is_some()
                && report.assumed_launch.contains(&format!(
                    "blockDim=({}, {}, {}) gridDim=({}, {}, {})",
                    block[0], block[1], block[2], grid[0], grid[1], grid[2]
                ))
                && report.assumed_launch.contains("n = ")
            {
                st.site_launches_bound += 1;
            }
            let runs = oracle_runs(kernel, block, grid, &witness_n, fixed_n);
            st.runs += runs.len() as u64;
            for r in &runs {
                match &r.outcome {
                    Outcome::Complete => st.complete += 1,
                    Outcome::Inconclusive(why) => {
                        st.inconclusive += 1;
                        let key: String = why.chars().take(60).collect();
                        *st.inconclusive_reasons.entry(key).or_default() += 1;
                    }
                }
            }
            let launch_desc = match fixed_n {
                Some(n) => format!(
                    "launch site in the text: blockDim=({},{},{}) gridDim=({},{},{}) n={n}",
                    block[0], block[1], block[2], grid[0], grid[1], grid[2]
                ),
                None => format!(
                    "blockDim=({},{},{}) gridDim=({},{},{})",
                    block[0], block[1], block[2], grid[0], grid[1], grid[2]
                ),
            };
            let racy_run = runs.iter().find(|r| !r.races.is_empty());
            let divergent_run = runs.iter().find(|r| r.divergence.is_some());
            let has_race_finding = report
                .findings
                .iter()
                .any(|f| f.kind == FindingKind::DataRace);
            let has_div_finding = report
                .findings
                .iter()
                .any(|f| f.kind == FindingKind::BarrierDivergence);
            let undecided = matches!(report.verdict, Verdict::Unknown | Verdict::Unsupported);
            if undecided {
                st.checker_unknown += 1;
                if gk.cxx_text.is_some() {
                    st.cxx_unknown += 1;
                    st.notes.push(format!(
                        "C++ form left unknown, seed {seed}: {}\n{checked}",
                        summarize(report)
                    ));
                }
            }
            let mut ok = true;
            if let Some(r) = racy_run {
                st.launches_with_race += 1;
                if report.verdict == Verdict::RaceFree {
                    ok = false;
                    st.violations.push(format!(
                        "MISSED RACE, seed {seed}, {launch_desc}\n--- kernel ---\n{}--- checked text ---\n{}--- interpreter ---\n{}--- checker ---\n{}\n",
                        gk.text,
                        checked,
                        r.describe(&gk.text),
                        summarize(report)
                    ));
                } else if !undecided && !has_race_finding {
                    st.notes.push(format!(
                        "race seen but the checker reported only other findings, seed {seed}, {launch_desc}\n{}{}\n{}",
                        gk.text,
                        r.describe(&gk.text),
                        summarize(report)
                    ));
                }
            }
            if let Some(r) = divergent_run {
                st.launches_with_divergence += 1;
                // A racy verdict outranks divergence; a divergence question the solver could not
                // decide is then listed in the reason (never dropped): that is not a miss.
                let div_undecided = report.reason.as_deref().is_some_and(|why| {
                    why.contains("could not decide the divergence")
                        || why.contains("no answer for the divergence")
                });
                if !(undecided
                    || div_undecided
                    || report.verdict == Verdict::Divergent
                    || has_div_finding)
                {
                    ok = false;
                    st.violations.push(format!(
                        "MISSED DIVERGENCE, seed {seed}, {launch_desc}\n--- kernel ---\n{}--- checked text ---\n{}--- interpreter ---\n{}--- checker ---\n{}\n",
                        gk.text,
                        checked,
                        r.describe(&gk.text),
                        summarize(report)
                    ));
                }
            }
            if ok {
                st.agreements += 1;
            }
            // Precision: alarms no complete run confirmed. A run stops at an observed divergence
            // (what follows is undefined), so alarms in such launches are not judged.
            if divergent_run.is_some() {
                st.unjudged_after_divergence += 1;
                continue;
            }
            // The C++ text's spans are not the plain kernel's: its alarms are not matched.
            if gk.cxx_text.is_some() {
                continue;
            }
            let all_complete = runs.iter().all(|r| r.is_complete());
            let seen = race_spans(&runs);
            for f in report
                .findings
                .iter()
                .filter(|f| f.kind == FindingKind::DataRace && f.confidence == Confidence::Definite)
            {
                let spans: Vec<Span> = std::iter::once(f.span)
                    .chain(f.related.iter().map(|r| r.span))
                    .collect();
                if spans.iter().any(|s| seen.contains(s)) {
                    st.confirmed_findings += 1;
                } else {
                    st.unconfirmed_findings += 1;
                    if all_complete {
                        st.precision.push(format!(
                            "definite race finding never seen by the interpreter, seed {seed}, {launch_desc}\n{}--- finding ---\n{} (witness: {:?})\n--- interpreter (first run) ---\n{}",
                            gk.text,
                            f.message,
                            f.witness,
                            runs.first().map(|r| r.describe(&gk.text)).unwrap_or_default()
                        ));
                    }
                }
            }
            if all_complete && racy_run.is_none() && has_race_finding {
                st.unconfirmed_racy += 1;
            }
            if all_complete && divergent_run.is_none() && has_div_finding {
                st.unconfirmed_divergent += 1;
                if let Some(f) = report.findings.iter().find(|f| {
                    f.kind == FindingKind::BarrierDivergence && f.confidence == Confidence::Definite
                }) {
                    st.precision.push(format!(
                        "definite divergence finding never seen by the interpreter, seed {seed}, {launch_desc}\n{}--- finding ---\n{} (witness: {:?})\n",
                        gk.text, f.message, f.witness
                    ));
                }
            }
        }
    }

    let elapsed = started.elapsed().as_secs_f64();
    println!(
        "differential soundness test: seeds {first}..{}, {elapsed:.1} s",
        first + count
    );
    println!("  kernels generated            {}", st.generated);
    println!("  rejected by the front end    {}", st.front_end_rejected);
    println!("  launches checked             {}", st.checked_launches);
    println!(
        "  interpreter runs             {} ({} complete, {} inconclusive)",
        st.runs, st.complete, st.inconclusive
    );
    println!("  launches with a race seen    {}", st.launches_with_race);
    println!(
        "  launches with divergence     {}",
        st.launches_with_divergence
    );
    println!("  checker unknown/unsupported  {}", st.checker_unknown);
    println!(
        "  given in C++ form            {} kernels ({} launches unknown)",
        st.cxx_kernels, st.cxx_unknown
    );
    println!(
        "  launches through a site      {} ({} bound from the site)",
        st.site_launches, st.site_launches_bound
    );
    println!("  agreements (sound)           {}", st.agreements);
    println!("  soundness violations         {}", st.violations.len());
    println!(
        "  precision (launches without divergence): definite race findings confirmed {} / unconfirmed {}",
        st.confirmed_findings, st.unconfirmed_findings
    );
    println!(
        "  precision: launches not judged (divergence seen first) {}",
        st.unjudged_after_divergence
    );
    println!(
        "  precision: racy launches never confirmed {}, divergent never confirmed {}",
        st.unconfirmed_racy, st.unconfirmed_divergent
    );
    for (why, n) in &st.inconclusive_reasons {
        println!("  inconclusive: {n:5} × {why}");
    }
    let shown = env_u64("CUDARACE_DIFF_SHOW", 3) as usize;
    for n in st.notes.iter().take(shown) {
        println!("note: {n}");
    }
    for n in st.precision.iter().take(shown) {
        println!("precision: {n}");
    }
    if !st.violations.is_empty() {
        let mut all = String::new();
        for v in &st.violations {
            println!("{v}");
            all.push_str(v);
            all.push('\n');
        }
        let path =
            std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("differential-violations.txt");
        let _ = std::fs::write(&path, all);
        println!("(also written to {})", path.display());
    }
    // The test must be able to fail for a vacuous reason too: a front end that rejects the
    // kernels or an oracle that judges nothing would make "no violation" meaningless.
    assert!(
        st.front_end_rejected * 10 <= st.generated,
        "the front end rejected too many generated kernels"
    );
    assert!(
        st.complete * 2 >= st.runs,
        "too many inconclusive interpreter runs"
    );
    if count >= 40 {
        assert!(
            st.launches_with_race > 0 && st.launches_with_divergence > 0,
            "the generator produced no race or no divergence"
        );
    }
    // Launch sites that the checker does not bind would test nothing of the binding.
    assert!(
        st.site_launches_bound * 10 >= st.site_launches * 8,
        "the checker bound only {} of {} launch sites",
        st.site_launches_bound,
        st.site_launches
    );
    assert!(
        st.violations.is_empty(),
        "{} soundness violation(s), see above",
        st.violations.len()
    );
}

/// The interpreter on hand-written CUDA through the real front end.
fn run_text(text: &str, block_x: u64) -> RunReport {
    let file = lower_source(None, text, &FrontendOptions::default());
    assert!(file.syntax_errors.is_empty(), "{:?}", file.syntax_errors);
    let [k] = file.kernels.as_slice() else {
        panic!("expected one kernel, got {}", file.kernels.len())
    };
    let mut l = Launch::new([block_x, 1, 1], [1, 1, 1]);
    l.params.insert("n".into(), 8);
    run(k, &l, &Budget::default())
}

const REDUCTION: &str = r#"
__global__ void reduce(int *out) {
    __shared__ int s[64];
    unsigned int tid = threadIdx.x;
    s[tid] = tid;
    SYNC
    for (unsigned int st = 1; st < blockDim.x; st *= 2) {
        if (tid % (2 * st) == 0) s[tid] += s[tid + st];
        SYNC
    }
    if (tid == 0) out[blockIdx.x] = s[0];
}
"#;

#[test]
fn lowered_reduction_without_barriers_races() {
    let r = run_text(&REDUCTION.replace("SYNC", ""), 8);
    assert!(r.is_complete(), "{:?}", r.outcome);
    assert!(!r.races.is_empty());
}

#[test]
fn lowered_reduction_with_barriers_is_race_free() {
    let r = run_text(&REDUCTION.replace("SYNC", "__syncthreads();"), 8);
    assert!(r.is_complete(), "{:?}", r.outcome);
    assert!(r.races.is_empty(), "{}", r.describe(REDUCTION));
    assert!(r.divergence.is_none());
}

#[test]
fn lowered_divergent_barrier_is_seen() {
    let text = r#"
__global__ void div(int *g, int n) {
    __shared__ int s[64];
    s[threadIdx.x] = 1;
    if (threadIdx.x < 2) {
        __syncthreads();
    }
    g[threadIdx.x] = s[threadIdx.x];
}
"#;
    let r = run_text(text, 4);
    assert!(r.divergence.is_some(), "{}", r.describe(text));
    let r = run_text(text, 2);
    assert!(r.is_complete() && r.divergence.is_none());
}

/// Soundness bugs this test found (fixed; kept as regressions), minimized. Each kernel is run by the interpreter first (the
/// bug is real at that launch), then checked with the same launch.
///
/// - `wrap_*`, `mixed_compare` (seeds 3, 28, 44, 57, 73, 81 with `CUDARACE_DIFF_WRAP=1`): the
///   checker reads `threadIdx.x - 1` as a mathematical -1 at thread 0, where C's unsigned
///   arithmetic gives UINT_MAX, and so misses races and divergence that happen at runtime.
/// - `skipped_nested_barrier` (seed 4023): a `__syncthreads()` under a thread-dependent condition
///   nested in another thread-dependent branch is taken to separate the accesses before and
///   after it, although no thread executes it at this launch.
/// - `break_after_barrier` (seed 5087): a thread-dependent `break` after the barrier of a loop
///   body makes the breaking thread skip the next iteration's barrier; no divergence is reported
///   (also seed 6102).
/// - `return_then_cond_barrier` (seed 6054): a race before an early `return` is missed when a
///   conditional `__syncthreads()` follows the return.
/// - `cond_syncwarp` (seed 6147): a race before a `__syncwarp()` under a thread-dependent
///   condition is missed. (The interpreter stops judging at that `__syncwarp`, because lanes that
///   skip it exit; the race happens before it, in every schedule.)
const KNOWN_MISSES: &str = r#"
__global__ void wrap_race(int *g) {
    __shared__ int s[64];
    if (threadIdx.x - 1 > 5) s[0] = threadIdx.x;
}
__global__ void wrap_div(int *g) {
    if (threadIdx.x - 1 > 3) return;
    __syncthreads();
    g[threadIdx.x] = 1;
}
__global__ void mixed_compare(int *g) {
    __shared__ int s[64];
    int tid = threadIdx.x;
    if (tid < blockDim.x - 3) s[0] = tid;
}
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
__global__ void break_after_barrier(int *g) {
    int tid = threadIdx.x;
    for (int i = 0; i < 2; i++) {
        __syncthreads();
        if (tid == 0) break;
    }
    __syncthreads();
    g[tid] = 1;
}
__global__ void return_then_cond_barrier(int *g) {
    int tid = threadIdx.x;
    g[3] = tid;
    if ((tid >> 1) == 0) return;
    if ((tid & 3) == 0) {
        __syncthreads();
    }
    g[tid] = 1;
}
__global__ void cond_syncwarp(int *g) {
    __shared__ int s[64];
    int tid = threadIdx.x;
    s[tid / 2] += 1;
    if ((tid & 1) == 0) {
        __syncwarp();
    }
}
"#;

#[test]
fn known_misses() {
    let pool = SolverPool::new(2);
    let file = lower_source(None, KNOWN_MISSES, &FrontendOptions::default());
    let mut failures = Vec::new();
    for (name, block_x, kind) in [
        ("wrap_race", 8, FindingKind::DataRace),
        ("wrap_div", 2, FindingKind::BarrierDivergence),
        ("mixed_compare", 2, FindingKind::DataRace),
        ("skipped_nested_barrier", 2, FindingKind::DataRace),
        ("break_after_barrier", 4, FindingKind::BarrierDivergence),
        ("return_then_cond_barrier", 2, FindingKind::DataRace),
        ("cond_syncwarp", 2, FindingKind::DataRace),
    ] {
        let Some(kernel) = file.kernels.iter().find(|k| k.name == name) else {
            panic!("kernel {name} not lowered");
        };
        let r = run(
            kernel,
            &Launch::new([block_x, 1, 1], [1, 1, 1]),
            &Budget::default(),
        );
        // Observations of an inconclusive run are still real (a prefix of an execution).
        match kind {
            FindingKind::DataRace => {
                assert!(!r.races.is_empty(), "{name}: {}", r.describe(KNOWN_MISSES))
            }
            FindingKind::BarrierDivergence => assert!(r.divergence.is_some(), "{name}"),
        }
        let mut opts = Options::default();
        opts.check.launch_override = launch_config([block_x, 1, 1], [1, 1, 1]);
        opts.kernel = Some(name.to_string());
        let fr = analyze_source(None, KNOWN_MISSES, &opts, &pool);
        let Some(report) = fr.kernels.iter().find(|k| k.name == name) else {
            panic!("no report for {name}");
        };
        let found = report.findings.iter().any(|f| f.kind == kind)
            || matches!(report.verdict, Verdict::Unknown | Verdict::Unsupported);
        if !found {
            failures.push(format!(
                "{name} (blockDim.x={block_x}): {}",
                summarize(report)
            ));
        }
    }
    assert!(failures.is_empty(), "missed:\n{}", failures.join("\n"));
}
