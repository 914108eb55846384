use super::slow_queries::{parse_dump, slowest_dump};
use super::*;

#[test]
fn reasons_lose_names_and_numbers() {
    let a = "call to `foo` whose body is not available";
    let b = "call to `bar_2` whose body is not available";
    assert_eq!(normalise_reason_part(a), normalise_reason_part(b));
    assert_eq!(
        normalise_reason_part(a),
        "call to `…` whose body is not available"
    );
    assert_eq!(
        normalise_reason_part("loop with   64 iterations at 0x1f, 2.5f steps."),
        "loop with N iterations at N, N steps."
    );
    // Digits inside a word and an apostrophe are left alone.
    assert_eq!(
        normalise_reason_part("the kernel's float4 budget (\"x\")"),
        "the kernel's float4 budget (\"…\")"
    );
    let compound = "`data0` may be accessed by unmodelled code (call to `smem_tuple` whose \
                    body is not available); `data1` may be accessed by unmodelled code (call \
                    to `g` whose body is not available); unmodelled code may synchronize; it \
                    was treated as no barrier";
    let classes = reason_classes(compound);
    assert_eq!(
        classes.keys().collect::<Vec<_>>(),
        vec![
            "`…` may be accessed by unmodelled code (call to `…` whose body is not available)",
            "unmodelled code may synchronize; it was treated as no barrier",
        ]
    );
    // The example of a class is the part of the reason that has it.
    assert!(classes.values().next().unwrap().starts_with("`data0`"));
}

#[test]
fn one_undecided_pair_and_a_counted_group_are_one_class() {
    let one = "the solver could not decide a pair of accesses to `s` (timeout)";
    let many = "the solver could not decide 12 pairs of accesses to `t` (timeout)";
    let classes = reason_classes(&format!("{one}; {many}"));
    assert_eq!(
        classes.keys().collect::<Vec<_>>(),
        vec!["the solver could not decide N pairs of accesses to `…` (timeout)"]
    );
    let one = "the solver could not decide the divergence of a __syncthreads() (timeout)";
    let many = "the solver could not decide the divergence of 2 calls to __syncthreads() (timeout)";
    assert_eq!(reason_classes(&format!("{one}; {many}")).len(), 1);
}

fn report_a() -> &'static str {
    r#"{"version": 1,
        "kernels": [
          {"file": "a.cu", "name": "k1", "line": 3, "verdict": "racy", "time_ms": 12.5, "queries": 4,
           "reason": "the solver could not decide a pair of accesses to `s` (timeout)"},
          {"file": "a.cu", "name": "k2", "line": 9, "verdict": "unknown", "time_ms": 60000.0,
           "reason": "timeout: the kernel's time budget (60000 ms) ran out"},
          {"file": "a.cu", "name": "k3", "line": 20, "verdict": "unsupported", "time_ms": 0.5,
           "reason": "call to `foo` whose body is not available"}],
        "findings": [
          {"kind": "data-race", "array": "s", "confidence": "definite", "file": "a.cu",
           "kernel": "k1", "line": 5, "message": "data race on `s`", "witness": {"x": 1},
           "related": []},
          {"kind": "data-race", "array": "t", "confidence": "conditional", "file": "a.cu",
           "kernel": "k1", "line": 6, "message": "data race on `t`",
           "precondition": "n > 32"}],
        "files": [{"file": "a.cu", "syntax_errors": [{"line": 1}], "notices": []}]}"#
}

fn report_b() -> &'static str {
    r#"{"version": 1,
        "kernels": [
          {"file": "b.cu", "name": "k", "line": 1, "verdict": "race-free", "time_ms": 2.0},
          {"file": "b.cu", "name": "m", "line": 8, "verdict": "unknown", "time_ms": 1.0,
           "reason": "call to `bar` whose body is not available; `p` may be accessed by unmodelled code (unsupported statement)"}],
        "findings": [
          {"kind": "barrier-divergence", "confidence": "possible", "file": "b.cu",
           "kernel": "m", "line": 10, "message": "barrier divergence"}],
        "files": [{"file": "b.cu", "syntax_errors": [], "notices": []}]}"#
}

/// Timeouts of the kinds the timeout table tells apart.
fn report_g() -> &'static str {
    r#"{"version": 1,
        "kernels": [
          {"file": "g.cu", "name": "p", "line": 1, "verdict": "unknown", "time_ms": 3.0,
           "reason": "the solver could not decide a pair of accesses to `o` (timeout: race-free for the values a caller would pass, undecided for others)"},
          {"file": "g.cu", "name": "q", "line": 9, "verdict": "racy", "time_ms": 3.0,
           "reason": "the solver could not decide 2 pairs of accesses to `o` (timeout of the first pass; not asked again, both accesses are racy already)"}],
        "findings": [],
        "files": [{"file": "g.cu", "syntax_errors": [], "notices": []}]}"#
}

fn records() -> Vec<FileRecord> {
    vec![
        record_from_output("a.cu", 61000.0, &Outcome::Exited(1), report_a(), ""),
        record_from_output("b.cu", 20.0, &Outcome::Exited(0), report_b(), "warn\n"),
        record_from_output(
            "c.cu",
            5.0,
            &Outcome::Signal(6),
            "",
            "thread 'main' panicked\nabort\n",
        ),
        record_from_output("d.cu", 60000.0, &Outcome::TimedOut, "", ""),
        record_from_output("e.cu", 3.0, &Outcome::Exited(0), "{\"kernels\": [", ""),
        record_from_output("f.cu", 3.0, &Outcome::Exited(101), "{}", "panic"),
        record_from_output("g.cu", 4.0, &Outcome::Exited(1), report_g(), ""),
    ]
}

#[test]
fn records_classify_processes() {
    let r = records();
    assert_eq!(r[0].status, Status::Ok);
    assert_eq!(r[0].syntax_errors, 1);
    assert!(r[0].findings[0].get("witness").is_none());
    assert_eq!(r[0].findings[1]["precondition"], "n > 32");
    assert_eq!(r[2].status, Status::Crash);
    assert_eq!(r[2].detail.as_deref(), Some("killed by signal 6 (SIGABRT)"));
    assert_eq!(r[3].status, Status::FileTimeout);
    assert!(r[4]
        .detail
        .as_deref()
        .unwrap()
        .starts_with("unparsable JSON"));
    assert_eq!(r[5].detail.as_deref(), Some("exit status 101"));
    // A record survives its JSONL line.
    let back = FileRecord::from_json(&r[0].to_json()).unwrap();
    assert_eq!(back.to_json(), r[0].to_json());
}

#[test]
fn stats_aggregate_reports() {
    let s = Stats::of(&records());
    assert_eq!((s.files, s.files_ok, s.kernels), (7, 3, 7));
    assert_eq!(s.crashes.len(), 3);
    assert_eq!(s.file_timeouts.len(), 1);
    assert_eq!(s.verdicts["unknown"], 3);
    assert_eq!(s.verdicts["unsupported"], 1);
    assert_eq!(s.findings["data-race"]["definite"], 1);
    assert_eq!(s.findings["data-race"]["conditional"], 1);
    assert_eq!(s.findings["barrier-divergence"]["possible"], 1);
    assert_eq!(
        s.confidence_columns(),
        vec!["definite", "possible", "conditional"]
    );
    let body = &s.reasons["call to `…` whose body is not available"];
    assert_eq!(body.undecided(), 2);
    assert_eq!(body.by_verdict["unsupported"], 1);
    assert_eq!(body.example, "call to `foo` whose body is not available");
    assert_eq!(
        s.reasons["`…` may be accessed by unmodelled code (unsupported statement)"].example,
        "`p` may be accessed by unmodelled code (unsupported statement)"
    );
    assert_eq!(s.timeouts.values().sum::<usize>(), 4);
    assert_eq!(
        (s.query_timeouts, s.budget_timeouts, s.not_asked_again),
        (2, 1, 1)
    );
    assert_eq!((s.files_over_10s, s.files_over_60s), (2, 1));
    assert_eq!(s.slowest[0].kernel, "k2");
    assert_eq!(s.kernel_ms.max(), 60000.0);
    let mut out = String::new();
    s.render(&mut out);
    assert!(out.contains("| racy | 2 | 28.6 % |"), "{out}");
    assert!(
        out.contains("| … a first-pass timeout not asked again (both accesses racy already) | 1 |"),
        "{out}"
    );
    assert!(out.contains("| data-race | 1 | 0 | 1 | 2 |"), "{out}");
}

#[test]
fn comparison_and_sample() {
    let old = records();
    let mut new = records();
    // k1 turns race-free and loses its definite finding; d.cu now finishes.
    new[0].kernels[0]["verdict"] = json!("race-free");
    new[0].findings.remove(0);
    new[3] = record_from_output("d.cu", 10.0, &Outcome::Exited(1), report_b(), "");
    let c = compare(&old, &new);
    assert_eq!(c.verdicts[&("racy".into(), "race-free".into())], 1);
    assert_eq!(c.verdicts[&(ABSENT.into(), "unknown".into())], 1);
    assert_eq!(c.files[&("file-timeout".into(), "ok".into())], 1);
    assert_eq!((c.gained_count, c.lost_count), (0, 1));
    assert_eq!(c.lost[0]["line"], 5);
    let mut out = String::new();
    c.render(&Stats::of(&old), &Stats::of(&new), &mut out);
    assert!(out.contains("gained: 0, lost: 1"), "{out}");

    let many: Vec<FileRecord> = (0..10)
        .map(|i| {
            let mut r = records().remove(0);
            r.file = format!("{i}.cu");
            r
        })
        .collect();
    let a = sample_definite(&many, 4, 1, false);
    let b = sample_definite(&many, 4, 1, false);
    assert_eq!(a, b);
    assert_eq!(a.len(), 4);
    assert_eq!(sample_definite(&many, 40, 1, false).len(), 10);
    // Two definite findings in one kernel: one of them per kernel.
    let mut two = many.clone();
    for r in &mut two {
        let mut f = r.findings[0].clone();
        f["line"] = json!(7);
        r.findings.push(f);
    }
    assert_eq!(sample_definite(&two, 40, 1, false).len(), 20);
    let per_kernel = sample_definite(&two, 40, 3, true);
    assert_eq!(per_kernel.len(), 10);
    assert_eq!(per_kernel, sample_definite(&two, 40, 3, true));
    assert_eq!(Stats::of(&two).definite_by_kernel.len(), 10);
}

#[test]
fn a_dumped_check_gives_its_time_engine_and_answer() {
    let text = "; cudarace slow check: 2003 ms, engine Fast, answer Unknown\n(declare-fun x () Int)\n(check-sat)\n";
    let q = parse_dump(text).expect("a dump");
    assert_eq!(
        (q.ms, q.engine.as_str(), q.answer.as_str()),
        (2003, "Fast", "Unknown")
    );
    assert_eq!(q.text, text);
    assert_eq!(parse_dump("(check-sat)\n"), None);
    assert_eq!(
        parse_dump("; cudarace slow check: many ms, engine Fast, answer Sat\n"),
        None
    );
}

#[test]
fn the_slowest_dump_of_a_folder_is_kept() {
    let dir = std::env::temp_dir().join(format!("cudarace-bench-dumps-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let dump = |name: &str, ms: u64, answer: &str| {
        let text =
            format!("; cudarace slow check: {ms} ms, engine Full, answer {answer}\n(check-sat)\n");
        std::fs::write(dir.join(name), text).unwrap();
    };
    dump("000120ms-a.smt2", 120, "Sat");
    dump("002004ms-b.smt2", 2004, "Unknown");
    dump("000700ms-c.smt2", 700, "Unsat");
    std::fs::write(
        dir.join("notes.txt"),
        "; cudarace slow check: 9999 ms, engine Full, answer Sat\n",
    )
    .unwrap();
    std::fs::write(dir.join("broken.smt2"), "not a dump").unwrap();
    let q = slowest_dump(&dir).expect("a dump");
    assert_eq!((q.ms, q.answer.as_str()), (2004, "Unknown"));
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(slowest_dump(&dir), None);
}
