//! Lowers generated kernels with the real front end and runs the interpreter on them (no checker):
//! `cargo run -p cudarace-interp --features differential --example oracle -- FIRST COUNT [-v]`.
use cudarace_interp::exec::{run, Budget, Launch, Outcome};
use cudarace_interp::generate;
use cudarace_syntax::{lower_source, FrontendOptions};
use std::collections::BTreeMap;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let nums: Vec<u64> = args.iter().filter_map(|a| a.parse().ok()).collect();
    let verbose = args.iter().any(|a| a == "-v");
    let first = nums.first().copied().unwrap_or(1);
    let count = nums.get(1).copied().unwrap_or(50);
    let mut rejected = 0;
    let (mut runs, mut complete, mut racy, mut divergent) = (0, 0, 0, 0);
    let mut reasons: BTreeMap<String, u64> = BTreeMap::new();
    for seed in first..first + count {
        let gk = generate(seed);
        let file = lower_source(None, &gk.text, &FrontendOptions::default());
        let [k] = file.kernels.as_slice() else {
            rejected += 1;
            println!("seed {seed}: {} kernels", file.kernels.len());
            continue;
        };
        if !file.syntax_errors.is_empty() || k.unsupported.is_some() {
            rejected += 1;
            println!(
                "seed {seed}: errors {:?} unsupported {:?}\n{}",
                file.syntax_errors, k.unsupported, gk.text
            );
            continue;
        }
        for (bx, gx) in [(4, 1), (8, 2)] {
            let by = if gk.uses_y { 2 } else { 1 };
            let mut l = Launch::new([bx, by, 1], [gx, 1, 1]);
            l.params.insert("n".into(), 5);
            let r = run(k, &l, &Budget::default());
            runs += 1;
            match &r.outcome {
                Outcome::Complete => complete += 1,
                Outcome::Inconclusive(w) => *reasons.entry(w.clone()).or_default() += 1,
            }
            racy += (!r.races.is_empty()) as u64;
            divergent += r.divergence.is_some() as u64;
            if verbose {
                println!("=== seed {seed}\n{}{}", gk.text, r.describe(&gk.text));
            }
        }
    }
    println!(
        "rejected {rejected}, runs {runs}, complete {complete}, racy {racy}, divergent {divergent}"
    );
    for (w, n) in reasons {
        println!("  {n:4} × {w}");
    }
}
