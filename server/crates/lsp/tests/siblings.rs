//! The server on a folder without a compilation database: a kernel launched from the `.cu` file
//! beside it is checked under that launch, as `cudarace check` does (read once in the
//! background; a save of the sibling reads it again; keystrokes read nothing).

mod harness;

use harness::Client;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// Thread 0 of every block writes `r[0]`: race-free with one block only.
const TOTAL: &str = "__global__ void total(const float *a, float *r, int n) {\n\
    if (threadIdx.x == 0) {\n        float s = 0;\n\
        for (int i = 0; i < n; i++) s += a[i];\n        r[0] = s;\n    }\n}\n";

fn folder(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "cudarace-lsp-siblings-{}-{}",
        name,
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    std::fs::write(dir.join("total.cu"), TOTAL).expect("write");
    std::fs::write(
        dir.join("total.cuh"),
        "__global__ void total(const float *a, float *r, int n);\n",
    )
    .expect("write");
    dir
}

/// `main.cu` launching `total` (through its declaration) with `blocks` blocks of 32 threads.
fn launch_beside(dir: &Path, blocks: u32) -> PathBuf {
    let main = dir.join("main.cu");
    std::fs::write(
        &main,
        format!(
            "#include \"total.cuh\"\nvoid run(const float *a, float *r, int n) {{\n\
             total<<<{blocks}, 32>>>(a, r, n);\n}}\n"
        ),
    )
    .expect("write");
    main
}

fn uri_of(path: &Path) -> String {
    format!("file://{}", path.display())
}

/// The data-race diagnostics of a publish that are not conditional (the launch decides them).
fn definite_races(published: &Value) -> Vec<Value> {
    published["diagnostics"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter(|d| d["code"] == "data-race")
                .filter(|d| !d["message"].as_str().unwrap_or("").contains("only if"))
                .cloned()
                .collect()
        })
        .unwrap_or_default()
}

fn any_race(published: &Value) -> bool {
    published["diagnostics"]
        .as_array()
        .is_some_and(|a| a.iter().any(|d| d["code"] == "data-race"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kernel_is_checked_under_the_launch_of_the_file_beside_it() {
    let dir = folder("launch");
    let main = launch_beside(&dir, 4);
    let uri = uri_of(&dir.join("total.cu"));
    let mut c = Client::initialized(json!({})).await;
    c.open(&uri, TOTAL);
    // Alone, `total` has no launch: a cross-block race of a kernel that never reads blockIdx is
    // only conditional. With main.cu's four blocks it is definite.
    let published = c
        .wait_publish(&uri, |p| !definite_races(p).is_empty())
        .await;
    assert!(
        definite_races(&published)[0]["message"]
            .as_str()
            .is_some_and(|m| m.contains("r[0]")),
        "{published:#}"
    );
    let stats = c.stats(&uri).await;
    assert_eq!(stats["serverSiblingReads"], 1, "{stats:#}");

    // Keystrokes (a comment typed at the end of the file) read nothing again.
    let last = TOTAL.lines().count() as u32;
    for (version, ch) in (2..).zip(["/", "/", "x"]) {
        let at = (version - 2) as u32;
        c.change(&uri, version, ((last, at), (last, at)), ch);
    }
    let published = c.diagnostics(&uri).await;
    assert!(!definite_races(&published).is_empty(), "{published:#}");
    let stats = c.stats(&uri).await;
    assert_eq!(stats["serverSiblingReads"], 1, "{stats:#}");

    // main.cu changed to one block and saved: the siblings are read again and the kernel is
    // race-free under the one launch there is.
    launch_beside(&dir, 1);
    c.published.clear();
    c.notify(
        "textDocument/didSave",
        json!({"textDocument": {"uri": uri_of(&main)}}),
    );
    c.wait_publish(&uri, |p| !any_race(p)).await;
    let stats = c.stats(&uri).await;
    assert_eq!(stats["serverSiblingReads"], 2, "{stats:#}");
    c.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kernel_with_no_launch_beside_it_keeps_its_symbolic_launch() {
    let dir = folder("none");
    let uri = uri_of(&dir.join("total.cu"));
    let mut c = Client::initialized(json!({})).await;
    c.open(&uri, TOTAL);
    let published = c.diagnostics(&uri).await;
    // The race is reported, but conditional: nothing says the kernel runs with several blocks.
    assert!(any_race(&published), "{published:#}");
    assert!(definite_races(&published).is_empty(), "{published:#}");
    let stats = c.stats(&uri).await;
    assert_eq!(stats["serverSiblingReads"], 1, "{stats:#}");
    c.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
}
