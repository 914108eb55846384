//! Prints the IR of a generated kernel (or of a file): `cargo run -p cudarace-interp --features differential --example ir -- SEED|PATH`.
use cudarace_syntax::{lower_source, FrontendOptions};
fn main() {
    let arg = std::env::args().nth(1).unwrap_or_else(|| "1".into());
    let text = match arg.parse::<u64>() {
        Ok(seed) => cudarace_interp::generate(seed).text,
        Err(_) => std::fs::read_to_string(&arg).expect("readable file"),
    };
    let file = lower_source(None, &text, &FrontendOptions::default());
    println!("{text}");
    for k in &file.kernels {
        println!("{}", cudarace_syntax::pretty::kernel(k));
    }
}
