//! Runs the interpreter and the checker on one file with one launch and prints both:
//! `cargo run -p cudarace-interp --features differential --example diff_one -- FILE BX [BY] [GX] [n=N]`.
use cudarace_analysis::{analyze_source, Options};
use cudarace_interp::exec::{run, Budget, Launch};
use cudarace_ir::LaunchConfig;
use cudarace_solver::SolverPool;
use cudarace_syntax::{lower_source, FrontendOptions};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(path) = args.first() else {
        eprintln!("usage: diff_one FILE BX [BY] [GX] [n=N]");
        std::process::exit(2);
    };
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| {
        eprintln!("{path}: {e}");
        std::process::exit(2)
    });
    let nums: Vec<u64> = args.iter().skip(1).filter_map(|a| a.parse().ok()).collect();
    let (bx, by, gx) = (
        nums.first().copied().unwrap_or(4),
        nums.get(1).copied().unwrap_or(1),
        nums.get(2).copied().unwrap_or(1),
    );
    let params: Vec<(String, i64)> = args
        .iter()
        .filter_map(|a| a.split_once('='))
        .filter_map(|(k, v)| Some((k.to_string(), v.parse().ok()?)))
        .collect();
    let file = lower_source(None, &text, &FrontendOptions::default());
    let pool = SolverPool::new(2);
    let mut opts = Options::default();
    opts.check.launch_override = LaunchConfig {
        block_dim: [Some(bx), Some(by), Some(1)],
        grid_dim: [Some(gx), Some(1), Some(1)],
    };
    let report = analyze_source(None, &text, &opts, &pool);
    for k in &file.kernels {
        let mut l = Launch::new([bx, by, 1], [gx, 1, 1]);
        l.params.extend(params.iter().cloned());
        let r = run(k, &l, &Budget::default());
        println!(
            "== kernel {}\n-- interpreter --\n{}",
            k.name,
            r.describe(&text)
        );
        if let Some(kr) = report.kernels.iter().find(|x| x.name == k.name) {
            println!("-- checker: {} {:?}", kr.verdict.as_str(), kr.reason);
            for f in &kr.findings {
                println!("   {} {:?}: {}", f.kind.code(), f.confidence, f.message);
            }
        }
    }
}
