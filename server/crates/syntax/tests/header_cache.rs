//! `FrontendOptions::headers`: a header is read and parsed once per state it is included in,
//! and a check that takes it from the cache sees exactly what a fresh read gives.

use cudarace_syntax::{lower_source, FrontendOptions, HeaderCache};
use std::path::{Path, PathBuf};
use std::sync::Arc;

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "cudarace-header-cache-{name}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

const HEADER: &str = r#"#pragma once
#include "inner.cuh"
#ifdef WIDE
#define STEP 2
#else
#define STEP 1
#endif
__device__ void put(int *a, int i) { a[i * STEP] = i; }
__global__ void in_header(int *a) { put(a, threadIdx.x + OFFSET); }
"#;

const INNER: &str = "#pragma once\n#define OFFSET 1\n";

fn main_file(body: &str) -> String {
    format!("#include \"scale.cuh\"\n__global__ void k(int *a) {{ {body} }}\n")
}

fn project(name: &str) -> (PathBuf, PathBuf) {
    let dir = temp_dir(name);
    std::fs::write(dir.join("scale.cuh"), HEADER).expect("write");
    std::fs::write(dir.join("inner.cuh"), INNER).expect("write");
    let main = dir.join("main.cu");
    (dir, main)
}

/// The kernels as text, with the files they came from.
fn lowered(path: &Path, text: &str, opts: &FrontendOptions) -> String {
    let ir = lower_source(Some(path), text, opts);
    format!(
        "{:?}\n{:?}\n{:?}\n{:?}",
        ir.kernels,
        ir.syntax_errors,
        ir.files.iter().map(|f| &f.path).collect::<Vec<_>>(),
        ir.launch_sites
    )
}

fn cached() -> (FrontendOptions, Arc<HeaderCache>) {
    let cache = HeaderCache::new();
    let opts = FrontendOptions {
        headers: Some(cache.clone()),
        ..Default::default()
    };
    (opts, cache)
}

#[test]
fn edits_in_the_file_do_not_read_or_parse_its_headers_again() {
    let (dir, main) = project("edits");
    let (opts, cache) = cached();
    let first = lowered(&main, &main_file("a[threadIdx.x] = 1;"), &opts);
    // Two headers: each read and parsed once.
    assert_eq!((cache.reads(), cache.parses()), (2, 2));
    for body in [
        "a[threadIdx.x] = 2;",
        "a[threadIdx.x + 1] = 2;",
        "a[0] = 3;",
    ] {
        lowered(&main, &main_file(body), &opts);
    }
    assert_eq!((cache.reads(), cache.parses()), (2, 2));
    // And what the cache gives is what a fresh read gives.
    let again = lowered(&main, &main_file("a[threadIdx.x] = 1;"), &opts);
    let fresh = lowered(
        &main,
        &main_file("a[threadIdx.x] = 1;"),
        &FrontendOptions::default(),
    );
    assert_eq!(first, fresh);
    assert_eq!(again, fresh);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_macro_defined_before_the_include_is_a_new_state() {
    let (dir, main) = project("macro-state");
    let (opts, cache) = cached();
    let narrow = main_file("a[threadIdx.x] = 1;");
    let wide = format!("#define WIDE\n{narrow}");
    lowered(&main, &narrow, &opts);
    assert_eq!(cache.reads(), 2);
    // `WIDE` changes what the header defines: read again (its own include is unchanged by
    // WIDE but the macro state differs, so it is read again too).
    let with_wide = lowered(&main, &wide, &opts);
    assert_eq!(cache.reads(), 4);
    assert_eq!(
        with_wide,
        lowered(&main, &wide, &FrontendOptions::default())
    );
    // Both states are kept.
    lowered(&main, &narrow, &opts);
    lowered(&main, &wide, &opts);
    assert_eq!(cache.reads(), 4);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_changed_header_is_read_again() {
    let (dir, main) = project("changed");
    let (opts, cache) = cached();
    let text = main_file("a[threadIdx.x] = 1;");
    lowered(&main, &text, &opts);
    assert_eq!(cache.reads(), 2);
    // A different size is a different file, whatever the clock says.
    std::fs::write(dir.join("inner.cuh"), "#pragma once\n#define OFFSET 32\n").expect("write");
    let after = lowered(&main, &text, &opts);
    assert_eq!(after, lowered(&main, &text, &FrontendOptions::default()));
    assert!(after.contains("32"), "{after}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn files_that_include_the_same_header_share_its_parse() {
    let (dir, main) = project("shared");
    let other = dir.join("other.cu");
    let (opts, cache) = cached();
    lowered(&main, &main_file("a[threadIdx.x] = 1;"), &opts);
    lowered(&other, &main_file("a[0] = 7;"), &opts);
    assert_eq!((cache.reads(), cache.parses()), (2, 2));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_full_cache_drops_its_oldest_entries_and_stays_correct() {
    let (dir, main) = project("small");
    let cache = Arc::new(HeaderCache::with_capacity(HEADER.len() * 2 + 100));
    let opts = FrontendOptions {
        headers: Some(cache.clone()),
        ..Default::default()
    };
    let text = main_file("a[threadIdx.x] = 1;");
    for _ in 0..3 {
        assert_eq!(
            lowered(&main, &text, &opts),
            lowered(&main, &text, &FrontendOptions::default())
        );
    }
    assert!(cache.reads() > 2, "{cache:?}");
    let _ = std::fs::remove_dir_all(&dir);
}
