//! `cargo run --release -p cudarace-bench [-- --reps N] [-- --sections abcde]`
//!
//! Prints markdown tables (pasted into BENCHMARKS.md):
//! (a) per-kernel analysis time over the fixtures, the examples and the realistic kernels of
//!     `server/crates/bench/kernels/`;
//! (b) scaling of five generated race-free families with their size;
//! (c) editor latency and (d) server memory, driving `cudarace lsp` over stdio (also on a
//!     real file of many kernels with `--lsp-file PATH`);
//! (e) project indexing: a generated CMake-like project of 200 translation units with a
//!     compilation database ([`gen_project`]): the time `cudarace check` and `cudarace lsp` take
//!     to build its launch index, and edits of a header kernel with the project against the same
//!     file without one (see [`project`]).
//!
//! Real-world corpus (see [`corpus`]):
//! `cargo run --release -p cudarace-bench -- --corpus DIR [--jobs N (2)] [--file-timeout SECONDS (60)]
//! [--bin PATH] [--out RUN.jsonl] [--compare OLD.jsonl] [--sample-definite N --seed S]` runs
//! `cudarace check --format json FILE` on every `.cu`/`.cuh` file below DIR, each in its own
//! process (N side by side, killed after the file timeout; the binary is the `cudarace` next to
//! this one, built as for (c), unless `--bin` names one), and prints: files and kernels, verdicts
//! with shares, findings by kind × confidence, the reasons of `unknown`/`unsupported` kernels
//! grouped into classes (names and numbers taken out), solver timeouts, crashes (a signal, an
//! exit status other than 0/1, or output that is not a report) and file timeouts, per-kernel and
//! per-file times and the slowest kernels. `--out` records one JSON line per file; `--compare`
//! prints what moved against such a record (verdict transitions per kernel, definite findings
//! gained and lost); `--from RUN.jsonl` prints the tables of a record instead of running
//! (`--no-tables` leaves them out, e.g. for just `--compare` or the sample);
//! `--sample-definite N --seed S` lists N definite findings picked at random, reproducibly, for
//! triage by hand (`--sample-by-kernel`: at most one per kernel); `--slow-queries DIR` checks the
//! ten slowest kernels again alone and saves the slowest solver check of each there as SMT-LIB
//! (the table names them; the slowest is printed).

mod corpus;
mod gen;
mod gen_project;
mod lsp;
mod mem;
mod project;
mod stats;

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use cudarace_analysis::{analyze_path, analyze_source, collect_paths, Options};
use cudarace_ir::Verdict;
use cudarace_solver::SolverPool;

use serde_json::Value;
use stats::Samples;

#[global_allocator]
static ALLOC: mem::Counting = mem::Counting;

const SIZES: [usize; 6] = [1, 10, 20, 30, 40, 50];

struct Args {
    reps: usize,
    sections: String,
    workers: usize,
    lsp_kernels: usize,
    lsp_edits: usize,
    /// `--lsp-file PATH`: section (c) also on this real file.
    lsp_file: Option<PathBuf>,
    size_limit_s: u64,
    one: Option<(usize, usize)>,
    /// `--write-project DIR`: write the project of section (e) there and exit.
    write_project: Option<PathBuf>,
    corpus: corpus::Options,
}

fn parse_args() -> Result<Args, String> {
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get());
    let mut a = Args {
        reps: 3,
        // (e) takes 10–15 s in a release build (2 cores, see BENCHMARKS.md): cheap enough.
        sections: "abcde".into(),
        workers,
        lsp_kernels: 50,
        lsp_edits: 100,
        lsp_file: None,
        size_limit_s: 120,
        one: None,
        write_project: None,
        corpus: corpus::Options::new(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = || it.next().ok_or(format!("{arg} needs a value"));
        match arg.as_str() {
            "--reps" => a.reps = value()?.parse().map_err(|e| format!("--reps: {e}"))?,
            "--sections" => a.sections = value()?,
            "--workers" => a.workers = value()?.parse().map_err(|e| format!("--workers: {e}"))?,
            "--lsp-edits" => {
                a.lsp_edits = value()?.parse().map_err(|e| format!("--lsp-edits: {e}"))?
            }
            "--lsp-file" => a.lsp_file = Some(PathBuf::from(value()?)),
            "--size-limit" => {
                a.size_limit_s = value()?.parse().map_err(|e| format!("--size-limit: {e}"))?
            }
            "--one" => {
                let f = value()?.parse().map_err(|e| format!("--one: {e}"))?;
                let n = value()?.parse().map_err(|e| format!("--one: {e}"))?;
                a.one = Some((f, n));
            }
            "--write-project" => a.write_project = Some(PathBuf::from(value()?)),
            "--corpus" => a.corpus.dir = Some(PathBuf::from(value()?)),
            "--from" => a.corpus.from = Some(PathBuf::from(value()?)),
            "--jobs" => {
                a.corpus.jobs = value()?.parse().map_err(|e| format!("--jobs: {e}"))?;
                a.corpus.jobs = a.corpus.jobs.max(1);
            }
            "--file-timeout" => {
                a.corpus.file_timeout_s = value()?
                    .parse()
                    .map_err(|e| format!("--file-timeout: {e}"))?
            }
            "--bin" => a.corpus.bin = Some(PathBuf::from(value()?)),
            "--out" => a.corpus.out = Some(PathBuf::from(value()?)),
            "--slow-queries" => a.corpus.slow_queries = Some(PathBuf::from(value()?)),
            "--compare" => a.corpus.compare = Some(PathBuf::from(value()?)),
            "--sample-definite" => {
                a.corpus.sample_definite = Some(
                    value()?
                        .parse()
                        .map_err(|e| format!("--sample-definite: {e}"))?,
                )
            }
            "--seed" => a.corpus.seed = value()?.parse().map_err(|e| format!("--seed: {e}"))?,
            "--no-tables" => a.corpus.no_tables = true,
            "--sample-by-kernel" => a.corpus.sample_by_kernel = true,
            "-h" | "--help" => {
                println!(
                    "bench [--reps N (3)] [--sections abcde (abcde)] [--workers N (cores)] [--lsp-edits N (100)] \
                     [--lsp-file REAL.cu] [--size-limit SECONDS (120)]\n\
                     bench --write-project DIR   (writes the generated project of section e)\n\
                     bench --corpus DIR [--jobs N (2)] [--file-timeout SECONDS (60)] [--bin PATH] \
                     [--out RUN.jsonl] [--compare OLD.jsonl] [--slow-queries DIR] [--sample-definite N --seed S [--sample-by-kernel]] [--no-tables]\n\
                     bench --from RUN.jsonl [--compare OLD.jsonl] [--sample-definite N --seed S] [--no-tables]"
                );
                std::process::exit(0);
            }
            other => return Err(format!("unknown argument {other}")),
        }
    }
    a.reps = a.reps.max(1);
    a.workers = a.workers.max(1);
    Ok(a)
}

fn main() {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("bench: {e}");
            std::process::exit(2);
        }
    };
    if let Some(dir) = &args.write_project {
        match gen_project::write_project(dir, project::UNITS) {
            Ok(p) => println!("{}", p.database.display()),
            Err(e) => {
                eprintln!("bench: {}: {e}", dir.display());
                std::process::exit(2);
            }
        }
        return;
    }
    if args.corpus.wanted() {
        if let Err(e) = corpus::run(&args.corpus, server_binary) {
            eprintln!("bench: {e}");
            std::process::exit(2);
        }
        return;
    }
    let root = repo_root();
    let opts = Options::default();
    if let Some((family, size)) = args.one {
        let pool = SolverPool::new(args.workers);
        run_one(family, size, args.reps, &opts, &pool);
        return;
    }
    print_machine(&args);
    let pool = SolverPool::new(args.workers);
    if args.sections.contains('a') {
        section_a(&root, &args, &opts, &pool);
    }
    if args.sections.contains('b') {
        section_b(&args);
    }
    if args.sections.contains('c') || args.sections.contains('d') || args.lsp_file.is_some() {
        section_cd(&args);
    }
    if args.sections.contains('e') {
        section_e(&args);
    }
}

/// The workspace root: two levels above this crate's manifest directory.
fn repo_root() -> PathBuf {
    let here = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    here.ancestors()
        .nth(3)
        .map(Path::to_path_buf)
        .unwrap_or(here)
}

fn print_machine(args: &Args) {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|s| s.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let mem_gb = mem::status_kb_meminfo().map_or(0.0, |kb| kb as f64 / 1024.0 / 1024.0);
    println!("# cudarace benchmark\n");
    println!(
        "Machine: {cpu}, {cores} cores, {mem_gb:.0} GiB RAM. Z3 {}. Solver workers: {}. \
         Repetitions: {} (times are medians over them).\n",
        z3_version(),
        args.workers,
        args.reps
    );
}

fn z3_version() -> String {
    z3::full_version().to_string()
}

fn fmt_ms(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

struct KernelRun {
    corpus: &'static str,
    file: String,
    kernel: String,
    times: Samples,
    queries: usize,
    verdict: Verdict,
}

/// (a) every kernel of every file, `reps` times.
fn section_a(root: &Path, args: &Args, opts: &Options, pool: &SolverPool) {
    let corpora: [(&'static str, PathBuf); 3] = [
        ("tests/fixtures", root.join("tests/fixtures")),
        ("examples", root.join("examples")),
        ("bench kernels", root.join("server/crates/bench/kernels")),
    ];
    let mut runs: Vec<KernelRun> = Vec::new();
    for (corpus, dir) in &corpora {
        let files = match collect_paths(std::slice::from_ref(dir)) {
            Ok(f) => f,
            Err(e) => {
                eprintln!("bench: {}: {e}", dir.display());
                continue;
            }
        };
        for file in files
            .iter()
            .filter(|f| f.extension().is_some_and(|e| e == "cu"))
        {
            let rel = file
                .strip_prefix(root)
                .unwrap_or(file)
                .display()
                .to_string();
            let mut per_kernel: BTreeMap<usize, KernelRun> = BTreeMap::new();
            for _ in 0..args.reps {
                let report = analyze_path(file, opts, pool);
                for (i, k) in report.kernels.iter().enumerate() {
                    let run = per_kernel.entry(i).or_insert_with(|| KernelRun {
                        corpus,
                        file: rel.clone(),
                        kernel: k.name.clone(),
                        times: Samples::default(),
                        queries: k.queries,
                        verdict: k.verdict,
                    });
                    run.times.push(k.time_ms);
                }
            }
            runs.extend(per_kernel.into_values());
        }
    }

    println!("## (a) Per-kernel analysis time\n");
    println!(
        "Time of one kernel = median over the repetitions of the driver's per-kernel time \
         (plan + solve + finish; parsing the file is not included). Queries = solver queries \
         the kernel issued.\n"
    );
    println!("| corpus | kernels | median ms | p95 ms | max ms | queries/kernel median | max | verdicts |");
    println!("|---|---:|---:|---:|---:|---:|---:|---|");
    for (corpus, _) in &corpora {
        let rs: Vec<&KernelRun> = runs.iter().filter(|r| r.corpus == *corpus).collect();
        print_row(corpus, &rs);
    }
    print_row("all", &runs.iter().collect::<Vec<_>>());

    println!("\nRealistic kernels (`server/crates/bench/kernels/`):\n");
    println!("| file | kernel | median ms | max ms | queries | verdict |");
    println!("|---|---|---:|---:|---:|---|");
    for r in runs.iter().filter(|r| r.corpus == "bench kernels") {
        println!(
            "| {} | {} | {} | {} | {} | {} |",
            r.file.rsplit('/').next().unwrap_or(&r.file),
            r.kernel,
            fmt_ms(r.times.median()),
            fmt_ms(r.times.max()),
            r.queries,
            r.verdict.as_str()
        );
    }
    let mut slow: Vec<&KernelRun> = runs.iter().collect();
    slow.sort_by(|a, b| b.times.median().total_cmp(&a.times.median()));
    println!("\nSlowest 10 kernels overall:\n");
    println!("| file | kernel | median ms | queries | verdict |");
    println!("|---|---|---:|---:|---|");
    for r in slow.iter().take(10) {
        println!(
            "| {} | {} | {} | {} | {} |",
            r.file,
            r.kernel,
            fmt_ms(r.times.median()),
            r.queries,
            r.verdict.as_str()
        );
    }
    println!();
}

fn print_row(name: &str, rs: &[&KernelRun]) {
    let mut t = Samples::default();
    let mut q = Samples::default();
    let mut verdicts: BTreeMap<&str, usize> = BTreeMap::new();
    for r in rs {
        t.push(r.times.median());
        q.push(r.queries as f64);
        *verdicts.entry(r.verdict.as_str()).or_default() += 1;
    }
    let verdicts: Vec<String> = verdicts.iter().map(|(v, n)| format!("{n} {v}")).collect();
    println!(
        "| {name} | {} | {} | {} | {} | {:.0} | {:.0} | {} |",
        rs.len(),
        fmt_ms(t.median()),
        fmt_ms(t.percentile(95.0)),
        fmt_ms(t.max()),
        q.median(),
        q.max(),
        verdicts.join(", ")
    );
}

/// (b) the scaling families.
/// One family at one size, measured in this process (the child side of [`section_b`]); prints
/// one JSON line.
/// A scaling point repeats its analysis (in one process) for at least this long …
const MIN_POINT_TIME: Duration = Duration::from_millis(500);
/// … and at most this often.
const MAX_POINT_REPS: usize = 200;

fn run_one(family: usize, size: usize, reps: usize, opts: &Options, pool: &SolverPool) {
    let Some((_, generate)) = gen::FAMILIES.get(family) else {
        eprintln!("bench: no family {family}");
        std::process::exit(2);
    };
    let text = generate(size);
    let mut times = Vec::new();
    let (mut rss, mut heap, mut queries, mut verdict) = (0u64, 0usize, 0usize, String::new());
    // Short points repeat until they have run for a while: a single millisecond-scale run is
    // mostly scheduler noise, and a fitted growth exponent amplifies it.
    let spent = Instant::now();
    let mut done = 0;
    while done < reps || (spent.elapsed() < MIN_POINT_TIME && done < MAX_POINT_REPS) {
        done += 1;
        let window = mem::Window::start();
        let started = Instant::now();
        let report = analyze_source(None, &text, opts, pool);
        times.push(started.elapsed().as_secs_f64() * 1000.0);
        rss = rss.max(window.rss_peak_growth_kb().unwrap_or(0));
        heap = heap.max(window.heap_peak());
        queries = report.kernels.iter().map(|k| k.queries).sum();
        verdict = report
            .kernels
            .iter()
            .map(|k| k.verdict.as_str())
            .collect::<Vec<_>>()
            .join(",");
        if report.kernels.is_empty() {
            verdict = format!("no kernel ({})", report.error.unwrap_or_default());
        }
    }
    let line = serde_json::json!({"ms": times, "rss_kb": rss, "heap": heap, "queries": queries,
                                  "verdict": verdict});
    println!("{line}");
}

struct Point {
    ms: f64,
    rss_kb: u64,
    heap: u64,
    queries: u64,
    verdict: String,
}

/// Runs [`run_one`] in a child process, killed after `limit`.
fn measure_point(
    family: usize,
    size: usize,
    args: &Args,
    limit: Duration,
) -> Result<Point, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let mut child = Command::new(exe)
        .args(["--one", &family.to_string(), &size.to_string()])
        .args([
            "--reps",
            &args.reps.to_string(),
            "--workers",
            &args.workers.to_string(),
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| e.to_string())?;
    let started = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if started.elapsed() > limit => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("> {} s", limit.as_secs()));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => return Err(e.to_string()),
        }
    }
    let mut out = String::new();
    if let Some(mut stdout) = child.stdout.take() {
        let _ = stdout.read_to_string(&mut out);
    }
    let v: serde_json::Value = out
        .lines()
        .last()
        .and_then(|l| serde_json::from_str(l).ok())
        .ok_or_else(|| "child failed".to_string())?;
    let mut ms = Samples::default();
    for t in v["ms"].as_array().into_iter().flatten() {
        ms.push(t.as_f64().unwrap_or(0.0));
    }
    Ok(Point {
        ms: ms.median(),
        rss_kb: v["rss_kb"].as_u64().unwrap_or(0),
        heap: v["heap"].as_u64().unwrap_or(0),
        queries: v["queries"].as_u64().unwrap_or(0),
        verdict: v["verdict"].as_str().unwrap_or_default().to_string(),
    })
}

/// (b) the scaling families, each point in its own process (clean memory numbers, and a size
/// that runs away is killed without disturbing the next measurements).
fn section_b(args: &Args) {
    let limit = Duration::from_secs(args.size_limit_s);
    println!("## (b) Scaling with kernel size\n");
    println!(
        "Five generated race-free families (after Faial, CAV'21 §6, Fig. 7); size n = how often \
         the pattern is repeated (or nested). Time = median wall-clock ms of the whole file \
         analysis (parse + check) in a fresh process, repeated in that process for at least \
         0.5 s (at least --reps times, at most 200); growth k = the exponent of the power law \
         t ≈ c·n^k fitted to n = 10…50 (1 = linear, 2 = quadratic); a point not finished after {} s is killed \
         and larger sizes of that family are skipped. Memory = peak growth during one \
         analysis: process RSS (covers Z3's heap) / Rust heap (counting allocator).\n",
        args.size_limit_s
    );
    let mut header = String::from("| family |");
    let mut rule = String::from("|---|");
    for s in SIZES {
        header += &format!(" n={s} ms |");
        rule += "---:|";
    }
    header += " t(50)/t(10) | growth k | queries n=50 | verdict n=50 |";
    rule += "---:|---:|---:|---|";
    println!("{header}\n{rule}");
    let mut memory_rows = Vec::new();
    for (index, (name, _)) in gen::FAMILIES.iter().enumerate() {
        let mut row = format!("| {name} |");
        let mut mem_row = format!("| {name} |");
        let (mut t10, mut t50, mut q50, mut v50) = (None, None, "-".to_string(), "-".to_string());
        let mut points: Vec<(f64, f64)> = Vec::new();
        let mut gave_up = false;
        for size in SIZES {
            if gave_up {
                row += " - |";
                mem_row += " - |";
                continue;
            }
            match measure_point(index, size, args, limit) {
                Ok(p) => {
                    eprintln!(
                        "bench: {name} n={size}: {} ms, {} queries, {}",
                        fmt_ms(p.ms),
                        p.queries,
                        p.verdict
                    );
                    row += &format!(" {} |", fmt_ms(p.ms));
                    mem_row += &format!(
                        " {:.1} / {:.2} |",
                        p.rss_kb as f64 / 1024.0,
                        p.heap as f64 / 1048576.0
                    );
                    if size >= 10 {
                        points.push((size as f64, p.ms));
                    }
                    if size == 10 {
                        t10 = Some(p.ms);
                    }
                    if size == 50 {
                        t50 = Some(p.ms);
                        q50 = p.queries.to_string();
                        v50 = p.verdict;
                    }
                }
                Err(e) => {
                    eprintln!("bench: {name} n={size}: {e}");
                    row += &format!(" {e} |");
                    mem_row += " - |";
                    gave_up = true;
                }
            }
        }
        let ratio = match (t10, t50) {
            (Some(a), Some(b)) if a > 0.0 => format!("{:.1}", b / a),
            _ => "-".into(),
        };
        let growth = growth_exponent(&points).map_or("-".into(), |k| format!("{k:.2}"));
        println!("{row} {ratio} | {growth} | {q50} | {v50} |");
        memory_rows.push(mem_row);
    }
    println!("\nPeak memory growth per size, MiB (process RSS / Rust heap):\n");
    let mut header = String::from("| family |");
    let mut rule = String::from("|---|");
    for s in SIZES {
        header += &format!(" n={s} |");
        rule += "---:|";
    }
    println!("{header}\n{rule}");
    for r in memory_rows {
        println!("{r}");
    }
    println!();
}

/// The `k` of `t ≈ c·n^k` that fits the points best (least squares on logarithms): 1 is linear
/// growth, 2 quadratic. Less sensitive to one noisy point than the ratio of two.
fn growth_exponent(points: &[(f64, f64)]) -> Option<f64> {
    let logs: Vec<(f64, f64)> = points
        .iter()
        .filter(|(n, t)| *n > 0.0 && *t > 0.0)
        .map(|(n, t)| (n.ln(), t.ln()))
        .collect();
    if logs.len() < 2 {
        return None;
    }
    let len = logs.len() as f64;
    let (mx, my) = (
        logs.iter().map(|p| p.0).sum::<f64>() / len,
        logs.iter().map(|p| p.1).sum::<f64>() / len,
    );
    let sxx: f64 = logs.iter().map(|p| (p.0 - mx).powi(2)).sum();
    let sxy: f64 = logs.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    (sxx > 0.0).then(|| sxy / sxx)
}

/// Builds (or confirms up to date) the `cudarace` binary next to this one, so that one command
/// measures the server of the current sources. Cargo cannot depend on another package's binary.
fn build_server_binary() {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../..");
    let profile = if cfg!(debug_assertions) {
        vec![]
    } else {
        vec!["--release"]
    };
    let status = Command::new(env!("CARGO"))
        .args(["build", "-q", "-p", "cudarace"])
        .args(profile)
        .current_dir(workspace)
        .status();
    if !matches!(status, Ok(s) if s.success()) {
        eprintln!("bench: could not build the `cudarace` binary ({status:?})");
    }
}

/// The `cudarace` binary to measure: `$CUDARACE_BIN`, else the one next to this binary (built or
/// confirmed up to date first).
fn server_binary() -> Option<PathBuf> {
    let exe_dir = std::env::current_exe()
        .ok()
        .and_then(|p| p.parent().map(Path::to_path_buf));
    let explicit = std::env::var_os("CUDARACE_BIN").map(PathBuf::from);
    if explicit.is_none() {
        build_server_binary();
    }
    explicit
        .or_else(|| exe_dir.map(|d| d.join("cudarace")))
        .filter(|p| p.exists())
}

/// (c) editor latency and (d) server memory.
fn section_cd(args: &Args) {
    println!("## (c) Editor latency and (d) server memory\n");
    let Some(binary) = server_binary() else {
        println!(
            "not measured yet: no `cudarace` binary next to `bench` (build it with \
             `cargo build --release -p cudarace`, or set CUDARACE_BIN).\n"
        );
        return;
    };
    if args.sections.contains('c') || args.sections.contains('d') {
        match lsp::measure(&binary, args.lsp_kernels, args.lsp_edits) {
            Err(e) => println!("not measured: {e}\n"),
            Ok(r) => {
                let edits = r.series.first().map_or(0, |s| s.check_ms.len());
                println!(
                    "`{} lsp` over stdio: open a generated file of {} lines with {} kernels, wait \
                     until its check is complete (`cudarace/stats` with `wait`), then {} \
                     one-character edits of each kind below, each waited for before the next: a \
                     digit of a float literal (kernel i mod {}; no access changes), a digit in an \
                     index or loop step of a shared-memory access (`sdata[0]`, `temp[l - 3]`, \
                     `j += 8`: that kernel's queries are solved again), a digit in a comment.\n",
                    binary.display(),
                    r.lines,
                    r.kernels,
                    edits,
                    r.kernels
                );
                print_lsp_results(&r);
            }
        }
    }
    // A real file with many kernels (not bundled: its license is its own), given by path.
    if let Some(path) = &args.lsp_file {
        println!("### (c) on a real file: `{}`\n", path.display());
        match lsp::measure_real(&binary, path, args.lsp_edits) {
            Err(e) => println!("not measured: {e}\n"),
            Ok(r) => {
                println!(
                    "The same measurements on a real file of {} lines with {} kernels: edits of \
                     a digit after the point of a float literal and of a digit inside an index \
                     (the first of each kernel, cycled), and of a character in a line comment \
                     outside the kernels.\n",
                    r.lines, r.kernels
                );
                print_lsp_results(&r);
            }
        }
    }
}

fn print_lsp_results(r: &lsp::LspResults) {
    println!("| measurement | median ms | p95 ms | max ms | queries solved (all edits / most per edit) |");
    println!("|---|---:|---:|---:|---:|");
    println!("| open → check complete | {} | | | |", fmt_ms(r.open_ms));
    if let Some(p) = r.open_first_publish_ms {
        println!("| open → first diagnostics | {} | | | |", fmt_ms(p));
    }
    for s in &r.series {
        println!(
            "| edit ({}) → check complete | {} | {} | {} | {} / {} |",
            s.name,
            fmt_ms(s.check_ms.median()),
            fmt_ms(s.check_ms.percentile(95.0)),
            fmt_ms(s.check_ms.max()),
            s.queries_solved,
            s.max_queries_solved
        );
        if !s.publish_ms.is_empty() {
            println!(
                "| edit ({}) → diagnostics published | {} | {} | {} | |",
                s.name,
                fmt_ms(s.publish_ms.median()),
                fmt_ms(s.publish_ms.percentile(95.0)),
                fmt_ms(s.publish_ms.max())
            );
        }
    }
    let mb = |kb: Option<u64>| kb.map_or("-".into(), |k| format!("{:.1}", k as f64 / 1024.0));
    println!("\n| server memory | MiB |\n|---|---:|");
    println!("| RSS after initialize | {} |", mb(r.rss_before_open_kb));
    println!("| RSS after open + check | {} |", mb(r.rss_after_open_kb));
    println!(
        "| RSS after {} edits | {} |",
        r.series.iter().map(|s| s.check_ms.len()).sum::<usize>(),
        mb(r.rss_after_edits_kb)
    );
    println!("| peak RSS (VmHWM) | {} |", mb(r.peak_rss_kb));
    println!(
        "\nServer statistics after the last edit: `{}`\n",
        r.last_stats
    );
}

/// (e) a project: the launch index of a generated 200-unit project with a compilation database
/// (CLI and server), and edits of a header kernel with the project and without one.
fn section_e(args: &Args) {
    println!("## (e) Project indexing\n");
    let Some(binary) = server_binary() else {
        println!(
            "not measured yet: no `cudarace` binary next to `bench` (build it with \
             `cargo build --release -p cudarace`, or set CUDARACE_BIN).\n"
        );
        return;
    };
    let r = match project::measure(&binary, args.lsp_edits, args.reps) {
        Ok(r) => r,
        Err(e) => {
            println!("not measured: {e}\n");
            return;
        }
    };
    let defines: Vec<String> = gen_project::DEFINES
        .iter()
        .map(|d| format!("-D{d}"))
        .collect();
    println!(
        "A generated CMake-like project (`gen_project.rs`, {} lines): {} translation units \
         `src/unitNNN.cu`, each including the configuration and helper headers and two of four \
         kernel headers ({} kernels in headers), defining one or two kernels of its own and \
         launching its own and the headers' kernels with constant sizes; \
         `build/compile_commands.json` in CMake's `command` form (nvcc lines with \
         `-I…/include {}`). Measured with `{}` logging at `info`; the CLI and the server with the \
         project {} times each (median / max), the edits once.\n",
        r.lines,
        r.units,
        r.kernels_in_headers,
        defines.join(" "),
        binary.display(),
        args.reps
    );
    // Median and max of one measurement over the repetitions.
    let over = |values: Vec<Option<f64>>| -> (String, String) {
        let mut s = Samples::default();
        for v in values.iter().flatten() {
            s.push(*v);
        }
        if s.is_empty() {
            ("-".into(), "-".into())
        } else {
            (fmt_ms(s.median()), fmt_ms(s.max()))
        }
    };
    println!("| measurement | median ms | max ms | notes |\n|---|---:|---:|---|");
    match &r.cli {
        Ok(runs) => {
            let last = runs.last();
            let (m, x) = over(runs.iter().map(|c| c.index_ms).collect());
            println!(
                "| CLI: start → `launch index` log line | {m} | {x} | {} sites; includes start-up \
                 and reading the database |",
                last.and_then(|c| c.sites)
                    .map_or("?".into(), |s| s.to_string())
            );
            let (m, x) = over(runs.iter().map(|c| Some(c.wall_ms)).collect());
            if let Some(c) = last {
                println!(
                    "| CLI: `check --compile-commands … --format json`, whole project | {m} | {x} \
                     | {} files, {} kernels reported ({}), {} findings, exit {} |",
                    c.files,
                    c.kernels,
                    c.verdicts,
                    c.findings,
                    c.exit.map_or("by a signal".into(), |e| e.to_string())
                );
            }
        }
        Err(e) => println!("| CLI | - | - | not measured: {e} |"),
    }
    match &r.with_project {
        Ok(runs) => {
            let last = runs.last();
            let (m, x) = over(runs.iter().map(|l| Some(l.open_ms)).collect());
            println!(
                "| server: didOpen `{}` → first check complete | {m} | {x} | before the index is \
                 ready |",
                gen_project::EDITED_HEADER
            );
            let (m, x) = over(runs.iter().map(|l| l.index_ms).collect());
            println!(
                "| server: didOpen → `launch index of …` log line | {m} | {x} | {} sites, {} \
                 index build(s) per server |",
                last.and_then(|l| l.sites)
                    .map_or("?".into(), |s| s.to_string()),
                last.map_or(Value::Null, |l| l.after["serverIndexBuilds"].clone())
            );
            let (m, x) = over(runs.iter().map(|l| l.build_ms).collect());
            println!(
                "| server: `building the launch index` → `launch index of …` log lines | {m} | {x} \
                 | the build itself, on a blocking thread |"
            );
            let (m, x) = over(runs.iter().map(|l| l.indexed_check_ms).collect());
            println!(
                "| server: didOpen → check with the index complete | {m} | {x} | `{}` then \
                 assumes {} |",
                gen_project::EDITED_KERNEL,
                last.map_or("?", |l| l.launch.as_str())
            );
        }
        Err(e) => println!("| server, with the project | - | - | not measured: {e} |"),
    }
    match &r.without_project {
        Ok(l) => println!(
            "| server, no project: didOpen → first check complete | {} | | flags as \
             `defines`/`includeDirs` settings; `{}` assumes {} |",
            fmt_ms(l.open_ms),
            gen_project::EDITED_KERNEL,
            l.launch
        ),
        Err(e) => println!("| server, no project | - | - | not measured: {e} |"),
    }
    match &r.without_project_launch {
        Ok(l) => println!(
            "| server, no project, launch as settings: didOpen → first check complete | {} | | \
             `blockDim` [256], `gridDim` [64] settings too; `{}` assumes {} |",
            fmt_ms(l.open_ms),
            gen_project::EDITED_KERNEL,
            l.launch
        ),
        Err(e) => {
            println!("| server, no project, launch as settings | - | - | not measured: {e} |")
        }
    }
    if r.with_project.is_err() && r.without_project.is_err() && r.without_project_launch.is_err() {
        println!("\nSection (e) took {:.1} s.\n", r.total_s);
        return;
    }
    println!(
        "\nOne-character edits in `{}` (a header kernel), {} of each kind, each waited for \
         (`cudarace/stats` with `wait`) before the next; the digit cycles through 1–9 (without \
         the original), so answers repeat after 8 edits. \"server's check\" = `last.timeMs` of \
         the stats (the check itself: front end and kernels); header reads/parses and index \
         builds are the server's totals before the first and after the last edit:\n",
        gen_project::EDITED_KERNEL,
        args.lsp_edits
    );
    println!(
        "| edits | kind | n | median ms | p95 ms | max ms | server's check median ms | queries solved | header reads | header parses | index builds |"
    );
    println!("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    let with = r.with_project.as_ref().ok().and_then(|runs| runs.last());
    for (name, run) in [
        ("with the project", with),
        ("without a project", r.without_project.as_ref().ok()),
        (
            "without a project, launch as settings",
            r.without_project_launch.as_ref().ok(),
        ),
    ] {
        let Some(l) = run else { continue };
        let n = |v: &Value, k: &str| v[k].as_u64().map_or("?".into(), |n| n.to_string());
        let moved = |k: &str| format!("{} → {}", n(&l.before, k), n(&l.after, k));
        for s in &l.series {
            println!(
                "| {name} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                s.name,
                s.check_ms.len(),
                fmt_ms(s.check_ms.median()),
                fmt_ms(s.check_ms.percentile(95.0)),
                fmt_ms(s.check_ms.max()),
                fmt_ms(s.server_ms.median()),
                s.queries_solved,
                moved("serverHeaderReads"),
                moved("serverHeaderParses"),
                moved("serverIndexBuilds"),
            );
        }
    }
    println!("\nSection (e) took {:.1} s.\n", r.total_s);
}

#[cfg(test)]
mod tests {
    use super::growth_exponent;

    #[test]
    fn growth_exponent_recovers_powers() {
        let linear: Vec<(f64, f64)> = [10.0, 20.0, 50.0].iter().map(|&n| (n, 3.0 * n)).collect();
        let quadratic: Vec<(f64, f64)> = [10.0, 20.0, 50.0].iter().map(|&n| (n, n * n)).collect();
        assert!((growth_exponent(&linear).unwrap() - 1.0).abs() < 1e-9);
        assert!((growth_exponent(&quadratic).unwrap() - 2.0).abs() < 1e-9);
        assert_eq!(growth_exponent(&[(10.0, 1.0)]), None);
    }
}
