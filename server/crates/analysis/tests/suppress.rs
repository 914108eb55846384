//! Inline suppressions through the real pipeline: which findings each form covers, unused ones
//! reported (only where the analysis can know), and the configuration's same-value setting.

use cudarace_analysis::ir::Verdict;
use cudarace_analysis::suppress::{Suppression, INVALID_SUPPRESSION, UNUSED_SUPPRESSION};
use cudarace_analysis::{analyze_source, render, Config, FileReport, Level, Options, SolverPool};
use std::path::Path;
use std::sync::Arc;

/// `s[t]` (write, line 4) races with `s[t + 1]` (read, line 6); `b[t] = 1` (line 7) races
/// across blocks with itself and with `b[0] = 2`.
/// `SUPPRESSION` is replaced by each test.
const RACY: &str = "__global__ void shift(int *out, int *b) {
    __shared__ int s[1024];
    int t = threadIdx.x;
    s[t] = t; //P1
    //P2
    out[blockIdx.x * blockDim.x + t] = s[t + 1];
    b[t] = 1; //P3
    if (t == 0 && blockIdx.x == 0) b[0] = 2;
}
";

fn check_with(text: &str, opts: &Options) -> FileReport {
    let pool = SolverPool::new(1);
    analyze_source(Some(Path::new("k.cu")), text, opts, &pool)
}

fn check(text: &str) -> FileReport {
    check_with(text, &Options::default())
}

/// (array, suppressed) per finding.
fn outcome(r: &FileReport) -> Vec<(String, bool)> {
    let mut out = Vec::new();
    for (k, kernel) in r.kernels.iter().enumerate() {
        for (f, finding) in kernel.findings.iter().enumerate() {
            out.push((
                finding.array.clone().unwrap_or_default(),
                r.suppression(k, f).is_some(),
            ));
        }
    }
    out
}

fn all_on(r: &FileReport, array: &str, suppressed: bool) -> bool {
    let o = outcome(r);
    o.iter().any(|(a, _)| a == array)
        && o.iter()
            .filter(|(a, _)| a == array)
            .all(|(_, s)| *s == suppressed)
}

#[test]
fn unsuppressed_baseline() {
    let r = check(RACY);
    assert_eq!(r.kernels[0].verdict, Verdict::Racy);
    assert!(
        all_on(&r, "s", false) && all_on(&r, "b", false),
        "{:?}",
        outcome(&r)
    );
    assert!(r.notices.is_empty(), "{:?}", r.notices);
    assert!(r.fails(Level::Warning));
}

#[test]
fn comment_on_the_line_of_either_access() {
    let r = check(&RACY.replace(
        "//P1",
        "// cudarace: allow(data-race) reason=only one value is ever read",
    ));
    assert!(
        all_on(&r, "s", true) && all_on(&r, "b", false),
        "{:?}",
        outcome(&r)
    );
    assert!(r.notices.is_empty(), "{:?}", r.notices);
    // The reason is kept.
    let reason = (0..r.kernels[0].findings.len())
        .find_map(|f| r.suppression(0, f))
        .and_then(Suppression::reason)
        .map(str::to_string);
    assert_eq!(reason.as_deref(), Some("only one value is ever read"));
    // The other access's line (here via the line above it).
    let r = check(&RACY.replace("//P2", "// cudarace: allow(data-race)"));
    assert!(
        all_on(&r, "s", true) && all_on(&r, "b", false),
        "{:?}",
        outcome(&r)
    );
}

#[test]
fn array_narrows_the_suppression() {
    let r = check(&RACY.replace("//P1", "// cudarace: allow(data-race) array=b"));
    // A trailing comment covers its own line only, and `s`'s race is not on `b`.
    assert!(all_on(&r, "s", false), "{:?}", outcome(&r));
    assert_eq!(r.notices.len(), 1, "{:?}", r.notices);
    assert_eq!(r.notices[0].code, UNUSED_SUPPRESSION);
    let r = check(&RACY.replace("//P3", "// cudarace: allow(data-race) array=b"));
    assert!(
        all_on(&r, "b", true) && all_on(&r, "s", false),
        "{:?}",
        outcome(&r)
    );
    let r = check(&RACY.replace("//P3", "// cudarace: allow(data-race) array=s"));
    assert!(all_on(&r, "b", false));
    assert_eq!(r.notices.len(), 1);
}

#[test]
fn a_line_further_up_is_not_covered() {
    // The comment two lines above the read (a code line in between) covers `s[t] = t;` only
    // if that line holds a flagged access… it does: so move it above `int t`.
    let text = RACY.replace(
        "    int t = threadIdx.x;",
        "    // cudarace: allow(data-race)\n    int t = threadIdx.x;",
    );
    let r = check(&text);
    assert!(
        all_on(&r, "s", false) && all_on(&r, "b", false),
        "{:?}",
        outcome(&r)
    );
    assert_eq!(r.notices.len(), 1);
    assert!(
        r.notices[0].message.contains("no finding on line 4"),
        "{}",
        r.notices[0].message
    );
}

#[test]
fn kernel_level_form() {
    let text = format!("// cudarace: allow(data-race) kernel reason=reviewed\n{RACY}");
    let r = check(&text);
    assert!(
        all_on(&r, "s", true) && all_on(&r, "b", true),
        "{:?}",
        outcome(&r)
    );
    assert!(r.notices.is_empty());
    assert!(!r.fails(Level::Info));
    // Narrowed to one array, and combined with a launch annotation in one comment.
    let text = format!("// cudarace: blockDim=(64) allow(data-race) kernel array=b\n{RACY}");
    let r = check(&text);
    assert!(
        all_on(&r, "b", true) && all_on(&r, "s", false),
        "{:?}",
        outcome(&r)
    );
    assert!(
        r.kernels[0].assumed_launch.contains("blockDim=(64"),
        "{}",
        r.kernels[0].assumed_launch
    );
    // Only the kernel directly below: a blank-line-separated comment still counts, code does not.
    let text = format!("// cudarace: allow(data-race) kernel\nint x;\n{RACY}");
    let r = check(&text);
    assert!(all_on(&r, "s", false));
    assert_eq!(r.notices.len(), 1);
    assert!(
        r.notices[0].message.contains("not directly above a kernel"),
        "{:?}",
        r.notices
    );
}

#[test]
fn a_launch_annotation_and_a_kernel_suppression_work_in_either_order() {
    // The front end reads the nearest `cudarace:` comment above a kernel that sets a launch size,
    // skipping suppression comments; both orders keep the annotation and the suppression.
    for text in [
        format!("// cudarace: blockDim=(64)\n// cudarace: allow(data-race) kernel\n{RACY}"),
        format!("// cudarace: allow(data-race) kernel\n// cudarace: blockDim=(64)\n{RACY}"),
    ] {
        let r = check(&text);
        assert!(r.notices.is_empty(), "{:?}", r.notices);
        assert!(
            r.kernels[0].assumed_launch.contains("blockDim=(64"),
            "{}",
            r.kernels[0].assumed_launch
        );
        assert!(all_on(&r, "s", true));
    }
}

#[test]
fn unused_suppressions_only_where_the_analysis_knows() {
    const CLEAN: &str = "__global__ void copy(int *out, const int *in) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    out[i] = in[i]; // cudarace: allow(data-race)
}
// cudarace: allow(barrier-divergence)
int host() { return 0; }
";
    let r = check(CLEAN);
    assert_eq!(r.kernels[0].verdict, Verdict::RaceFree);
    let codes: Vec<(&str, u32)> = r.notices.iter().map(|n| (n.code, n.span.start)).collect();
    assert_eq!(codes.len(), 2, "{:?}", r.notices);
    assert!(r.notices.iter().all(|n| n.code == UNUSED_SUPPRESSION));
    assert!(r.fails(Level::Warning));
    assert!(!r.fails(Level::Error));
    // With a kernel filter that leaves `copy` out, nothing can be judged.
    let opts = Options {
        kernel: Some("nothing".into()),
        ..Options::default()
    };
    assert!(check_with(CLEAN, &opts).notices.is_empty());
}

#[test]
fn malformed_suppressions_are_reported() {
    let r = check(&RACY.replace("//P1", "// cudarace: allow(data-rcae)"));
    assert_eq!(r.notices.len(), 1);
    assert_eq!(r.notices[0].code, INVALID_SUPPRESSION);
    assert!(all_on(&r, "s", false));
    // A launch annotation is not a suppression, and not an error.
    let r = check(&RACY.replace("//P1", "// cudarace: blockDim=(32,8)"));
    assert!(r.notices.is_empty(), "{:?}", r.notices);
}

#[test]
fn same_value_writes_allowed_by_the_config() {
    const SAME: &str = "__global__ void flag(int *out) {
    __shared__ int done;
    done = 1;
    __syncthreads();
    out[blockIdx.x * blockDim.x + threadIdx.x] = done;
}
";
    let r = check(SAME);
    assert!(
        r.kernels[0].findings.iter().any(|f| f.same_value_write),
        "{:?}",
        r.kernels
    );
    assert!(r.fails(Level::Warning));
    let config = Config::parse(
        Path::new("cudarace.toml"),
        "allow-same-value-writes = true\n",
    )
    .unwrap();
    let mut opts = Options::default();
    Arc::new(config).apply(&mut opts);
    let r = check_with(SAME, &opts);
    assert!(!r.fails(Level::Info), "{:?}", r.suppressed);
    assert_eq!(r.suppression(0, 0), Some(&Suppression::SameValueWrite));
    let v = render::json(std::slice::from_ref(&r));
    assert_eq!(v["findings"][0]["suppressed"], true);
    assert_eq!(v["findings"][0]["suppression"]["by"], "config");
}
