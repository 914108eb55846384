//! Prints generated kernels: `cargo run -p cudarace-interp --example gen -- FIRST COUNT`.
fn main() {
    let args: Vec<u64> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let first = args.first().copied().unwrap_or(1);
    let count = args.get(1).copied().unwrap_or(3);
    for seed in first..first + count {
        let g = cudarace_interp::generate(seed);
        println!("// seed {seed}\n{}", g.text);
        if let Some(c) = g.cxx_text {
            println!("// seed {seed}, C++ text\n{c}");
        }
    }
}
