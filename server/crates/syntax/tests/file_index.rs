//! `index_source`: what a file declares for other files, read without lowering. It must name
//! the kernels, launch sites and files that lowering finds, for every fixture of the project.

use cudarace_syntax::{index_source, lower_source, FrontendOptions};
use std::path::{Path, PathBuf};

fn fixtures(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("fixtures folder").flatten() {
        let path = entry.path();
        if path.is_dir() {
            fixtures(&path, out);
        } else if path.extension().is_some_and(|e| e == "cu" || e == "cuh") {
            out.push(path);
        }
    }
}

#[test]
fn the_index_names_what_lowering_finds_in_every_fixture() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../tests/fixtures");
    let mut files = Vec::new();
    fixtures(&root, &mut files);
    files.sort();
    assert!(files.len() > 100, "{} fixtures", files.len());
    let opts = FrontendOptions::default();
    for path in files {
        let text = std::fs::read_to_string(&path).expect("fixture");
        let ir = lower_source(Some(&path), &text, &opts);
        let index = index_source(Some(&path), &text, &opts);
        // A kernel template lowered once per instantiation is one definition in the index.
        let mut lowered: Vec<_> = ir
            .kernels
            .iter()
            .map(|k| (k.base_name().to_string(), k.span, k.name_span))
            .collect();
        lowered.dedup();
        let indexed: Vec<_> = index
            .kernels
            .iter()
            .map(|k| (k.name.clone(), k.span, k.name_span))
            .collect();
        let what = path.display();
        assert_eq!(indexed, lowered, "{what}");
        assert_eq!(index.launch_sites, ir.launch_sites, "{what}");
        assert_eq!(index.header_launch, ir.header_launch, "{what}");
        assert_eq!(index.syntax_errors, ir.syntax_errors, "{what}");
        let index_paths: Vec<_> = index.files.iter().map(|f| f.path.clone()).collect();
        let ir_paths: Vec<_> = ir.files.iter().map(|f| f.path.clone()).collect();
        assert_eq!(index_paths, ir_paths, "{what}");
    }
}

#[test]
fn the_index_of_broken_or_binary_input_is_empty_not_a_panic() {
    let opts = FrontendOptions::default();
    for text in [
        "",
        "\u{0}\u{1}\u{2}garbage",
        "__global__ void k(int *a) { a[",
        "#if\n#endif\n}}}}",
    ] {
        let index = index_source(None, text, &opts);
        assert!(index.launch_sites.is_empty());
        assert_eq!(index.files.len(), 1);
    }
}
