//! The server on a project with a compilation database: a kernel in a header is checked under
//! the launch sites of the project's `.cu` files (the launch index, built once in the
//! background), saves update the index, keystrokes do not rebuild it.
//!
//! The example CMake project (examples/project) has its `build/compile_commands.json` committed
//! as CMake writes it, under `/home/user/cudarace/examples/project`; the tests copy the project to
//! a temporary folder and rewrite that prefix (as the command line's tests/project.rs does).

mod harness;

use harness::Client;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

const COMMITTED_ROOT: &str = "/home/user/cudarace/examples/project";

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read dir").flatten() {
        let target = to.join(entry.file_name());
        if entry.path().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy");
        }
    }
}

/// The example project copied to a temporary folder, its database rewritten for that place.
fn project(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "cudarace-lsp-project-{}-{}",
        name,
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../examples/project");
    copy_dir(&example, &dir);
    let db = dir.join("build/compile_commands.json");
    let text = std::fs::read_to_string(&db).expect("the committed database");
    assert!(text.contains(COMMITTED_ROOT), "{text}");
    std::fs::write(
        &db,
        text.replace(COMMITTED_ROOT, dir.to_str().expect("utf-8")),
    )
    .expect("write");
    dir
}

fn uri_of(path: &Path) -> String {
    format!("file://{}", path.display())
}

/// The data-race diagnostics of a publish.
fn races(published: &Value) -> Vec<Value> {
    published["diagnostics"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter(|d| d["code"] == "data-race")
                .cloned()
                .collect()
        })
        .unwrap_or_default()
}

/// Waits until the hover on the header's racy access names `launch` as the assumed launch (the
/// index is built in the background, and the header checked again when it is ready; the
/// diagnostics themselves may not change, so the hover tells which launch was used).
async fn wait_for_launch(c: &mut Client, uri: &str, launch: &str) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    loop {
        c.stats(uri).await;
        let hover = c
            .request(
                "textDocument/hover",
                json!({"textDocument": {"uri": uri}, "position": {"line": 10, "character": 10}}),
            )
            .await;
        if hover.to_string().contains(launch) {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no check with {launch}: {hover:#}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

async fn open_header(name: &str) -> (Client, PathBuf, String) {
    let dir = project(name);
    let header = dir.join("include/scale.cuh");
    let uri = uri_of(&header);
    let c = Client::initialized(json!({})).await;
    let text = std::fs::read_to_string(&header).expect("the header");
    c.open(&uri, &text);
    (c, dir, uri)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_header_is_checked_under_the_launch_of_another_file() {
    let (mut c, dir, uri) = open_header("header").await;
    // The header launches nothing itself: the race comes from wide.cu's launch, through the
    // index built in the background.
    wait_for_launch(&mut c, &uri, "blockDim=(256|512, 1, 1)").await;
    let published = c.diagnostics(&uri).await;
    assert!(!races(&published).is_empty(), "{published:#}");
    let stats = c.stats(&uri).await;
    assert_eq!(stats["serverIndexBuilds"], 1, "{stats:#}");
    c.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keystrokes_do_not_rebuild_the_index_and_a_save_rereads_one_unit() {
    let (mut c, dir, uri) = open_header("edits").await;
    wait_for_launch(&mut c, &uri, "blockDim=(256|512, 1, 1)").await;
    // Several edits (a comment typed at the end of the first line): no new build.
    for (version, ch) in (2..).zip(["/", "/", " ", "x"]) {
        let at = (version - 2) as u32 + "#pragma once".len() as u32;
        c.change(&uri, version, ((0, at), (0, at)), ch);
    }
    let published = c.diagnostics(&uri).await;
    assert!(!races(&published).is_empty(), "{published:#}");
    wait_for_launch(&mut c, &uri, "blockDim=(256|512, 1, 1)").await;
    let stats = c.stats(&uri).await;
    assert_eq!(stats["version"], 5, "{stats:#}");
    assert_eq!(stats["serverIndexBuilds"], 1, "{stats:#}");
    assert_eq!(stats["serverIndexUnitReads"], 0, "{stats:#}");

    // wide.cu fixed on disk and saved: that unit alone is read again, and the open header is
    // checked again without the race.
    let wide = dir.join("src/wide.cu");
    let text = std::fs::read_to_string(&wide).expect("wide.cu");
    std::fs::write(&wide, text.replace("2 * WIDTH", "WIDTH")).expect("write");
    c.published.clear();
    c.notify(
        "textDocument/didSave",
        json!({"textDocument": {"uri": uri_of(&wide)}}),
    );
    // Checked alone the header is racy (any block size); with main.cu's and wide.cu's launches
    // of WIDTH threads it is race-free.
    c.wait_publish(&uri, |p| races(p).is_empty()).await;
    let stats = c.stats(&uri).await;
    assert_eq!(stats["serverIndexBuilds"], 1, "{stats:#}");
    assert_eq!(stats["serverIndexUnitReads"], 1, "{stats:#}");
    c.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keystrokes_in_a_kernel_do_not_read_or_parse_its_headers_again() {
    let (mut c, dir, uri) = open_header("header-reads").await;
    // Checked with the index: every header the project includes (index.cuh) has been read.
    wait_for_launch(&mut c, &uri, "blockDim=(256|512, 1, 1)").await;
    let before = c.stats(&uri).await;
    let reads = before["serverHeaderReads"]
        .as_u64()
        .expect("serverHeaderReads");
    let parses = before["serverHeaderParses"]
        .as_u64()
        .expect("serverHeaderParses");
    assert!(reads >= 1 && parses >= 1, "{before:#}");
    // Typing in the kernel's body, before the statement of line 10: `int t=0;` a key at a time.
    let at = (10u32, 4u32);
    for (version, ch) in (2..).zip(["i", "n", "t", " ", "t", "=", "0", ";"]) {
        let col = at.1 + (version - 2) as u32;
        c.change(&uri, version, ((at.0, col), (at.0, col)), ch);
    }
    let after = c.stats(&uri).await;
    assert_eq!(after["version"], 9, "{after:#}");
    assert_eq!(after["serverHeaderReads"], reads, "{after:#}");
    assert_eq!(after["serverHeaderParses"], parses, "{after:#}");
    // And the checks were real ones: the race is still found under the launch of wide.cu.
    let published = c.diagnostics(&uri).await;
    assert!(!races(&published).is_empty(), "{published:#}");
    c.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_database_builds_no_index_and_the_file_is_still_checked() {
    let dir = project("malformed");
    std::fs::write(dir.join("build/compile_commands.json"), "{").expect("write");
    let header = dir.join("include/scale.cuh");
    let uri = uri_of(&header);
    let mut c = Client::initialized(json!({"defines": ["WIDTH=256"]})).await;
    c.open(&uri, &std::fs::read_to_string(&header).expect("the header"));
    // Checked alone (any block size): racy; no index, no crash.
    let published = c.diagnostics(&uri).await;
    assert!(!races(&published).is_empty(), "{published:#}");
    c.notify(
        "textDocument/didSave",
        json!({"textDocument": {"uri": uri_of(&dir.join("src/wide.cu"))}}),
    );
    let stats = c.stats(&uri).await;
    assert_eq!(stats["serverIndexBuilds"], 0, "{stats:#}");
    assert_eq!(stats["serverIndexUnitReads"], 0, "{stats:#}");
    c.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
}
