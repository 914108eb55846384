//! Runs the checker over the repository's CUDA fixtures (front end included) and prints every
//! disagreement with the `// expect:` lines and `// RACE` / `// DIVERGENT` markers. Ignored by
//! default: the fixture runner of the root package is the authoritative test; this is the
//! checker's own diagnostic view (`cargo test -p cudarace-check --test fixture_scan -- --ignored --nocapture`).

use cudarace_check::{check_kernel, CheckOptions};
use cudarace_ir::{LineIndex, Verdict};
use cudarace_solver::{solve, Limits};
use std::path::{Path, PathBuf};

fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<PathBuf> = rd.filter_map(|e| e.ok().map(|e| e.path())).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            collect(&p, out);
        } else if p.extension().is_some_and(|e| e == "cu") {
            out.push(p);
        }
    }
}

fn expected(text: &str, kernel: &str) -> Option<String> {
    let line = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("// expect:"))?
        .trim();
    if !line.contains('=') {
        return Some(line.to_string());
    }
    line.split_whitespace()
        .find_map(|kv| kv.strip_prefix(&format!("{kernel}=")).map(str::to_string))
}

#[test]
#[ignore]
fn scan_fixtures() {
    let root = match std::env::var("FIXTURE_ROOT") {
        Ok(r) => PathBuf::from(r),
        Err(_) => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../tests/fixtures"),
    };
    let filter = std::env::var("FIXTURE").unwrap_or_default();
    let mut files = Vec::new();
    collect(&root, &mut files);
    // `RLIMIT=2000000` checks that every query is answered well within the default rlimit
    // (deterministic), independent of machine load.
    let limits = Limits {
        timeout_ms: 60_000,
        rlimit: std::env::var("RLIMIT")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(20_000_000),
    };
    let (mut ok, mut bad) = (0, 0);
    for f in files {
        if !f.to_string_lossy().contains(&filter) {
            continue;
        }
        let text = std::fs::read_to_string(&f).unwrap_or_default();
        let ir = cudarace_syntax::lower_source(Some(&f), &text, &Default::default());
        let idx = LineIndex::new(&text);
        let marked: Vec<u32> = text
            .lines()
            .enumerate()
            .filter(|(_, l)| {
                l.trim_end().ends_with("// RACE") || l.trim_end().ends_with("// DIVERGENT")
            })
            .map(|(i, _)| i as u32)
            .collect();
        let mut hit: Vec<u32> = Vec::new();
        let mut problems = Vec::new();
        for k in &ir.kernels {
            let t0 = std::time::Instant::now();
            let dump = std::env::var("DUMPQ").is_ok();
            let r = check_kernel(&ir, k, &CheckOptions::default(), &mut |q| {
                let t = std::time::Instant::now();
                let mut q = q.clone();
                if std::env::var("CLEARPREF").is_ok() {
                    q.preferred.clear();
                }
                let a = solve(&q, &limits);
                if t.elapsed().as_millis() > 200 {
                    println!(
                        "slow query: {} in {:?} ({})",
                        k.name,
                        t.elapsed(),
                        match &a {
                            cudarace_solver::Answer::Sat(_) => "sat",
                            cudarace_solver::Answer::Unsat => "unsat",
                            cudarace_solver::Answer::Unknown(_) => "unknown",
                        }
                    );
                }
                if dump {
                    println!("--- {:?} in {:?}", a, t.elapsed());
                    for t in &q.assertions {
                        println!("  {}", cudarace_check::terms::show(t));
                    }
                }
                a
            });
            let want = expected(&text, &k.name).unwrap_or_default();
            if !want.split('|').any(|w| w == r.verdict.as_str()) {
                problems.push(format!(
                    "{}: verdict {} (want {want}) reason {:?}",
                    k.name,
                    r.verdict.as_str(),
                    r.reason
                ));
            }
            for fd in &r.findings {
                if fd.span.file.0 != 0 {
                    continue;
                }
                let l = idx.line_col(fd.span.start).line;
                hit.push(l);
                if !marked.contains(&l) {
                    problems.push(format!(
                        "{}: unmarked finding line {}: {}",
                        k.name,
                        l + 1,
                        fd.message
                    ));
                }
                for rel in &fd.related {
                    if fd.kind == cudarace_ir::FindingKind::DataRace && rel.span.file.0 == 0 {
                        hit.push(idx.line_col(rel.span.start).line);
                    }
                }
            }
            if t0.elapsed().as_millis() > 3000 {
                problems.push(format!(
                    "{}: slow {:?} ({} queries)",
                    k.name,
                    t0.elapsed(),
                    r.queries
                ));
            }
            let _ = Verdict::RaceFree;
        }
        for m in &marked {
            if !hit.contains(m) {
                problems.push(format!("marked line {} has no finding", m + 1));
            }
        }
        let name = f.strip_prefix(&root).unwrap_or(&f).display().to_string();
        if problems.is_empty() {
            ok += 1;
        } else {
            bad += 1;
            println!("FAIL {name}");
            for p in problems {
                println!("    {p}");
            }
        }
    }
    println!("fixtures: {ok} ok, {bad} with problems");
}
