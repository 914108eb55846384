//! Prints the lowered IR of a CUDA file (development aid).
fn main() {
    let path = std::env::args().nth(1).expect("usage: irdump FILE");
    let text = std::fs::read_to_string(&path).expect("read");
    let f = cudarace_syntax::lower_source(
        Some(std::path::Path::new(&path)),
        &text,
        &Default::default(),
    );
    for e in &f.syntax_errors {
        println!("syntax error {:?}: {}", e.span, e.message);
    }
    for l in &f.launch_sites {
        println!("launch {l:?}");
    }
    println!("header {:?}", f.header_launch);
    for k in &f.kernels {
        print!("{}", cudarace_syntax::pretty::kernel(k));
        println!(
            "  launch_bounds={:?} annotated={:?}",
            k.launch_bounds, k.annotated_launch
        );
    }
}
