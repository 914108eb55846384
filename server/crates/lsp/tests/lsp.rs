//! End-to-end tests of the language server over in-memory pipes, with the real analysis.

mod harness;

use harness::{apply_edits, position_of, range_of, Client};
use serde_json::{json, Value};

/// A race between `s[t]` (write) and `s[t + 1]` (read) of neighbouring threads, with non-ASCII
/// text before the kernel and on the accesses' lines.
const RACY: &str = "// ünïcødé 😀 before the kernel\n\
#define N 256\n\
__global__ void shift(int *out) {\n\
  __shared__ int s[N];\n\
  int t = threadIdx.x; /* ü */\n\
  /*😀*/ s[t] = t;\n\
  out[blockIdx.x * blockDim.x + t] = s[t + 1];\n\
}\n";

/// The same race, but only inside a thread-dependent branch: a barrier between the accesses
/// would be divergent, so no fix may be offered.
const RACY_IN_BRANCH: &str = "__global__ void branchy(int *out) {\n\
  __shared__ int s[64];\n\
  int t = threadIdx.x;\n\
  if (t < 16) {\n\
    s[t] = t;\n\
    out[blockIdx.x * blockDim.x + t] = s[t + 1];\n\
  }\n\
}\n";

/// Both accesses of the race in one assignment.
const SHIFT_IN_PLACE: &str = "__global__ void shift_in_place(int *out) {\n\
  __shared__ int s[65];\n\
  int t = threadIdx.x;\n\
  s[t] = t;\n\
  __syncthreads();\n\
  s[t] = s[t + 1];\n\
  __syncthreads();\n\
  out[blockIdx.x * blockDim.x + t] = s[t];\n\
}\n";

/// A barrier that only the threads of the first warp reach.
const DIVERGENT: &str = "__global__ void half(int *out) {\n\
  __shared__ int s[64];\n\
  int t = threadIdx.x;\n\
  if (t < 32) {\n\
    s[t] = t;\n\
    __syncthreads();\n\
  }\n\
  out[blockIdx.x * blockDim.x + t] = s[63 - t];\n\
}\n";

/// Two kernels with host code and comments around them; the second has two barrier intervals.
const TWO_KERNELS: &str = "// a comment\n\
#include <cstdio>\n\
__global__ void first(float *a, int n) {\n\
  int i = blockIdx.x * blockDim.x + threadIdx.x;\n\
  if (i < n) a[i] = a[i] * 2.0f;\n\
}\n\
\n\
__global__ void second(int *out) {\n\
  __shared__ int s[128];\n\
  int t = threadIdx.x;\n\
  s[t] = t;\n\
  __syncthreads();\n\
  int x = s[127 - t];\n\
  __syncthreads();\n\
  s[t] = x + 1;\n\
  out[blockIdx.x * blockDim.x + t] = s[(t + 1) % 128];\n\
}\n\
\n\
int main() {\n\
  // host code\n\
  return 0;\n\
}\n";

const URI: &str = "file:///work/test/shift.cu";

/// The messages name the witness the solver chose (thread ids, cells); those numbers may change
/// with the solver or the checker's preferences, so the snapshot replaces digits in messages.
fn without_witness_numbers(v: &Value) -> Value {
    match v {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| match (k.as_str(), v) {
                    ("message", Value::String(m)) => (
                        k.clone(),
                        Value::String(
                            m.chars()
                                .map(|c| if c.is_ascii_digit() { '#' } else { c })
                                .collect(),
                        ),
                    ),
                    _ => (k.clone(), without_witness_numbers(v)),
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(without_witness_numbers).collect()),
        other => other.clone(),
    }
}

fn diags_of(published: &Value) -> Vec<Value> {
    published["diagnostics"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// The code actions that change the code (not "Allow this … here").
fn fixes(actions: &Value) -> Vec<Value> {
    actions
        .as_array()
        .expect("actions")
        .iter()
        .filter(|a| !a["title"].as_str().unwrap_or("").starts_with("Allow this"))
        .cloned()
        .collect()
}

fn races(published: &Value) -> Vec<Value> {
    diags_of(published)
        .into_iter()
        .filter(|d| d["code"] == "data-race")
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn racy_file_gets_diagnostics_on_both_accesses() {
    let mut c = Client::initialized(json!({"blockDim": [256], "gridDim": [4]})).await;
    c.open(URI, RACY);
    let published = c.diagnostics(URI).await;
    let races = races(&published);
    assert!(!races.is_empty(), "{published:#}");
    let write = range_of(RACY, "s[t]", 0);
    let read = range_of(RACY, "s[t + 1]", 0);
    for d in &races {
        assert_eq!(d["source"], "cudarace");
        assert_eq!(d["severity"], 2, "definite → Warning");
        let related = d["relatedInformation"]
            .as_array()
            .expect("related information");
        let pair = (d["range"].clone(), related[0]["location"]["range"].clone());
        assert!(
            pair == (write.clone(), read.clone()) || pair == (read.clone(), write.clone()),
            "{d:#}"
        );
        assert_eq!(related[0]["location"]["uri"], URI);
    }
    let ranges: Vec<&Value> = races.iter().map(|d| &d["range"]).collect();
    assert!(
        ranges.contains(&&write) && ranges.contains(&&read),
        "a squiggle on each access: {ranges:?}"
    );
    insta::assert_json_snapshot!(
        "racy_diagnostics",
        without_witness_numbers(&published["diagnostics"])
    );
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hover_shows_the_witness() {
    let mut c = Client::initialized(json!({"blockDim": [256], "gridDim": [4]})).await;
    c.open(URI, RACY);
    c.diagnostics(URI).await;
    let (line, character) = position_of(RACY, "s[t + 1]", 0);
    let hover = c
        .request(
            "textDocument/hover",
            json!({"textDocument": {"uri": URI}, "position": {"line": line, "character": character + 1}}),
        )
        .await;
    let md = hover["contents"]["value"].as_str().expect("markdown hover");
    assert!(md.contains("**data race** on `s`"), "{md}");
    assert!(md.contains("| | thread A | thread B |"), "{md}");
    assert!(md.contains("| threadIdx |"), "{md}");
    assert!(md.contains("| cell | `s["), "{md}");
    assert!(md.contains("blockDim = (256, 1, 1)"), "{md}");
    assert!(md.contains("Definite"), "{md}");
    // Nothing to say on plain code.
    let (line, _) = position_of(RACY, "#define", 0);
    let none = c
        .request(
            "textDocument/hover",
            json!({"textDocument": {"uri": URI}, "position": {"line": line, "character": 1}}),
        )
        .await;
    assert!(none.is_null(), "{none}");
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verified_fix_removes_the_race() {
    let mut c = Client::initialized(json!({"blockDim": [256], "gridDim": [4]})).await;
    c.open(URI, RACY);
    let published = c.diagnostics(URI).await;
    let race = races(&published)[0].clone();
    let actions = c
        .request(
            "textDocument/codeAction",
            json!({"textDocument": {"uri": URI}, "range": race["range"], "context": {"diagnostics": [race]}}),
        )
        .await;
    let actions = actions.as_array().expect("actions");
    assert!(!actions.is_empty(), "a fix is offered");
    let action = &actions[0];
    assert!(
        action["title"].as_str().unwrap().contains("verified"),
        "{action:#}"
    );
    assert_eq!(action["kind"], "quickfix");
    assert_eq!(action["isPreferred"], true);
    let change = &action["edit"]["documentChanges"][0];
    assert_eq!(change["textDocument"]["version"], 1);
    let edits = change["edits"].as_array().unwrap().clone();
    let fixed = apply_edits(RACY, &edits);
    assert!(
        fixed.contains("__syncthreads();") || fixed.contains("__syncwarp();"),
        "{fixed}"
    );
    // Apply it as the editor would, with the same edits.
    c.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": URI, "version": 2},
               "contentChanges": edits.iter().rev().map(|e| json!({"range": e["range"], "text": e["newText"]})).collect::<Vec<_>>()}),
    );
    let after = c.diagnostics(URI).await;
    assert!(
        races(&after).is_empty(),
        "the fix removes the race: {after:#}"
    );
    assert!(
        diags_of(&after)
            .iter()
            .all(|d| d["code"] != "barrier-divergence"),
        "{after:#}"
    );
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn race_within_one_assignment_is_fixed_with_a_temporary() {
    let uri = "file:///work/test/in_place.cu";
    let mut c = Client::initialized(json!({"blockDim": [64], "gridDim": [2]})).await;
    c.open(uri, SHIFT_IN_PLACE);
    let published = c.diagnostics(uri).await;
    let race = races(&published).first().cloned().expect("a race");
    let actions = c
        .request(
            "textDocument/codeAction",
            json!({"textDocument": {"uri": uri}, "range": race["range"], "context": {"diagnostics": [race]}}),
        )
        .await;
    let action = actions
        .as_array()
        .and_then(|a| {
            a.iter()
                .find(|a| a["title"].as_str().unwrap_or("").contains("temporary"))
        })
        .cloned()
        .unwrap_or_else(|| panic!("a temporary-based fix: {actions:#}"));
    let edits = action["edit"]["documentChanges"][0]["edits"]
        .as_array()
        .unwrap()
        .clone();
    let fixed = apply_edits(SHIFT_IN_PLACE, &edits);
    assert!(
        fixed.contains("auto cudarace_tmp = s[t + 1];\n__syncthreads();\ns[t] = cudarace_tmp;"),
        "{fixed}"
    );
    c.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": uri, "version": 2}, "contentChanges": [{"text": fixed}]}),
    );
    let after = c.diagnostics(uri).await;
    assert!(races(&after).is_empty(), "{after:#}");
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_fix_where_it_would_add_divergence() {
    let uri = "file:///work/test/branchy.cu";
    let mut c = Client::initialized(json!({"blockDim": [64], "gridDim": [2]})).await;
    c.open(uri, RACY_IN_BRANCH);
    let published = c.diagnostics(uri).await;
    let races = races(&published);
    assert!(!races.is_empty(), "{published:#}");
    for race in races {
        let actions = c
            .request(
                "textDocument/codeAction",
                json!({"textDocument": {"uri": uri}, "range": race["range"], "context": {"diagnostics": [race]}}),
            )
            .await;
        // Only the "allow" action: every barrier in the branch would diverge.
        assert_eq!(
            fixes(&actions),
            Vec::<Value>::new(),
            "a barrier in the branch would diverge"
        );
        assert!(actions
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a["title"] == "Allow this data race here"));
    }
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn divergent_barrier_is_flagged_and_moved_out() {
    let uri = "file:///work/test/half.cu";
    let mut c = Client::initialized(json!({"blockDim": [64], "gridDim": [2]})).await;
    c.open(uri, DIVERGENT);
    let published = c.diagnostics(uri).await;
    let divergent: Vec<Value> = diags_of(&published)
        .into_iter()
        .filter(|d| d["code"] == "barrier-divergence")
        .collect();
    assert_eq!(divergent.len(), 1, "{published:#}");
    let d = &divergent[0];
    assert_eq!(d["range"], range_of(DIVERGENT, "__syncthreads()", 0));
    let related = &d["relatedInformation"][0]["location"]["range"];
    assert_eq!(
        related["start"]["line"], 3,
        "the condition is related information: {d:#}"
    );
    let actions = c
        .request(
            "textDocument/codeAction",
            json!({"textDocument": {"uri": uri}, "range": d["range"], "context": {"diagnostics": [d]}}),
        )
        .await;
    let all = actions.as_array().expect("actions").clone();
    let actions = fixes(&actions);
    assert_eq!(actions.len(), 1, "{actions:#?}");
    assert!(actions[0]["title"]
        .as_str()
        .unwrap()
        .starts_with("Move `__syncthreads()` after"));
    assert_eq!(actions[0]["isPreferred"], true);
    assert_eq!(
        all.last().unwrap()["title"],
        "Allow this barrier divergence here"
    );
    let edits = actions[0]["edit"]["documentChanges"][0]["edits"]
        .as_array()
        .unwrap()
        .clone();
    let fixed = apply_edits(DIVERGENT, &edits);
    c.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": uri, "version": 2}, "contentChanges": [{"text": fixed}]}),
    );
    let after = c.diagnostics(uri).await;
    assert_eq!(diags_of(&after), Vec::<Value>::new(), "{fixed}");
    c.shutdown().await;
}

/// Incremental edits (including non-ASCII text and multi-line replacements) end with the same
/// diagnostics as opening the final text fresh.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn incremental_edits_match_a_fresh_open() {
    let mut c = Client::initialized(json!({"blockDim": [256], "gridDim": [4]})).await;
    let start = RACY.replace("s[t + 1]", "s[t]");
    c.open(URI, &start);
    c.diagnostics(URI).await;
    let mut text = start.clone();
    let mut version = 1;
    let mut edit = |c: &Client, text: &mut String, range: ((u32, u32), (u32, u32)), new: &str| {
        version += 1;
        c.change(URI, version, range, new);
        let json_range = json!({"start": {"line": range.0 .0, "character": range.0 .1},
                                "end": {"line": range.1 .0, "character": range.1 .1}});
        *text = apply_edits(text, &[json!({"range": json_range, "newText": new})]);
    };
    let (l, ch) = position_of(&text, "= s[t];", 0);
    edit(&c, &mut text, ((l, ch + 5), (l, ch + 5)), " + 1");
    edit(&c, &mut text, ((0, 0), (0, 0)), "// ≠ 𝔘𝔫𝔦𝔠𝔬𝔡𝔢\n// more\n");
    edit(&c, &mut text, ((1, 3), (2, 4)), "é\n// r");
    assert_eq!(text.matches("s[t + 1]").count(), 1, "{text}");
    let incremental = c.diagnostics(URI).await;

    let fresh_uri = "file:///work/test/fresh.cu";
    c.open(fresh_uri, &text);
    let fresh = c.diagnostics(fresh_uri).await;
    let normalize = |v: &Value| v["diagnostics"].to_string().replace(fresh_uri, URI);
    assert_eq!(normalize(&incremental), normalize(&fresh));
    c.shutdown().await;
}

/// 200 edits sent without waiting: the final diagnostics are those of the final text.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rapid_edits_end_with_the_last_version() {
    let mut c = Client::initialized(json!({"blockDim": [256], "gridDim": [4]})).await;
    c.open(URI, RACY);
    let (l, ch) = position_of(RACY, "s[t + 1]", 0);
    // Toggle `s[t + 1]` ↔ `s[t + 2]` 200 times; the final text has `s[t + 1]` again… and then
    // one last edit makes it race-free (`s[t]`), so stale results would show a race.
    for v in 0..200 {
        let digit = if v % 2 == 0 { "2" } else { "1" };
        c.change(URI, v + 2, ((l, ch + 6), (l, ch + 7)), digit);
    }
    c.change(URI, 202, ((l, ch + 3), (l, ch + 7)), "");
    let last = c.diagnostics(URI).await;
    assert_eq!(last["version"], 202);
    let final_text = RACY.replace("s[t + 1]", "s[t]");
    let fresh_uri = "file:///work/test/final.cu";
    c.open(fresh_uri, &final_text);
    let fresh = c.diagnostics(fresh_uri).await;
    assert_eq!(
        last["diagnostics"].to_string(),
        fresh["diagnostics"].to_string().replace(fresh_uri, URI)
    );
    let stats = c.stats(URI).await;
    assert_eq!(stats["version"], 202);
    assert_eq!(stats["complete"], true);
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rapid_edits_do_not_leave_stale_races() {
    let mut c = Client::initialized(json!({"blockDim": [256], "gridDim": [4]})).await;
    c.open(URI, RACY);
    assert!(!races(&c.diagnostics(URI).await).is_empty());
    let (l, ch) = position_of(RACY, "s[t + 1]", 0);
    for v in 0..200 {
        let digit = if v % 2 == 0 { "2" } else { "1" };
        c.change(URI, v + 2, ((l, ch + 6), (l, ch + 7)), digit);
    }
    c.change(URI, 202, ((l, ch + 3), (l, ch + 7)), "");
    let last = c.diagnostics(URI).await;
    assert!(races(&last).is_empty(), "{last:#}");
    // Every text before the last one was racy: no publish in between may have dropped the race
    // (a kernel being re-checked keeps its previous diagnostics).
    for p in &c.published[URI] {
        if p["version"].as_i64().unwrap_or(0) < 202 {
            assert!(!races(p).is_empty(), "flickered to no race: {p:#}");
        }
    }
    c.shutdown().await;
}

/// Edits outside a kernel (comments, host code, lines inserted above) re-solve nothing; an edit
/// inside one barrier interval re-solves fewer queries than the whole kernel.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn edits_outside_kernels_solve_nothing() {
    let uri = "file:///work/test/two.cu";
    let mut c = Client::initialized(json!({"blockDim": [128], "gridDim": [4]})).await;
    c.open(uri, TWO_KERNELS);
    let first = c.diagnostics(uri).await;
    let stats = c.stats(uri).await;
    let initial_solved = stats["last"]["queriesSolved"].as_u64().unwrap();
    assert!(initial_solved > 0, "{stats:#}");
    assert_eq!(stats["last"]["kernelsAnalysed"], 2);

    // A comment edit, lines inserted above everything, and host code edits.
    c.change(uri, 2, ((0, 2), (0, 2)), " edited");
    c.change(uri, 3, ((0, 0), (0, 0)), "\n\n// new lines ü😀\n");
    let (l, ch) = position_of(TWO_KERNELS, "return 0;", 0);
    c.change(uri, 4, ((l + 3, ch), (l + 3, ch)), "printf(\"hi\\n\"); ");
    let after = c.diagnostics(uri).await;
    let stats = c.stats(uri).await;
    assert_eq!(stats["last"]["queriesSolved"], 0, "{stats:#}");
    assert_eq!(stats["last"]["kernelsFromCache"], 2, "{stats:#}");
    // The same findings, moved three lines down.
    assert_eq!(diags_of(&after).len(), diags_of(&first).len());
    for (a, b) in diags_of(&after).iter().zip(diags_of(&first)) {
        assert_eq!(
            a["range"]["start"]["line"].as_u64().unwrap(),
            b["range"]["start"]["line"].as_u64().unwrap() + 3
        );
        assert_eq!(a["message"], b["message"]);
    }

    // An edit inside the last barrier interval of `second`.
    let (l, ch) = position_of(TWO_KERNELS, "(t + 1) % 128", 0);
    c.change(uri, 5, ((l + 3, ch + 6), (l + 3, ch + 7)), "2");
    c.diagnostics(uri).await;
    let stats = c.stats(uri).await;
    let solved = stats["last"]["queriesSolved"].as_u64().unwrap();
    assert!(
        solved < initial_solved,
        "only the edited interval's queries: {solved} of {initial_solved}"
    );
    assert!(
        stats["last"]["queriesFromCache"].as_u64().unwrap() > 0,
        "{stats:#}"
    );
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn broken_syntax_keeps_the_server_alive() {
    let uri = "file:///work/test/broken.cu";
    let mut c = Client::initialized(Value::Null).await;
    let broken =
        "__global__ void k(int *a { a[threadIdx.x = ;;; }}} \u{0}\u{7f} #if\n__global__ void \n";
    c.open(uri, broken);
    c.diagnostics(uri).await;
    // Edits with positions out of range and inside a multi-byte character are clamped.
    c.change(uri, 2, ((99, 99), (120, 0)), "é");
    c.change(uri, 3, ((0, 500), (0, 2)), "😀");
    let published = c.diagnostics(uri).await;
    assert_eq!(published["version"], 3);
    let hover = c
        .request(
            "textDocument/hover",
            json!({"textDocument": {"uri": uri}, "position": {"line": 0, "character": 1}}),
        )
        .await;
    assert!(hover.is_null() || hover["contents"].is_object());
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_messages_do_not_kill_the_server() {
    let mut c = Client::initialized(Value::Null).await;
    c.send_raw(harness::frame("{this is not json"));
    c.send_raw(harness::frame(
        r#"{"jsonrpc":"2.0","method":"textDocument/didOpen","params":{"nonsense":1}}"#,
    ));
    c.send_raw(harness::frame(r#"{"jsonrpc":"2.0","method":"textDocument/didChange","params":{"textDocument":{"uri":"file:///nope.cu","version":3},"contentChanges":[{"text":"x"}]}}"#));
    let unknown = c.request_raw("cudarace/nope", json!({})).await;
    assert!(unknown.get("error").is_some(), "{unknown}");
    let bad = c
        .request_raw(
            "cudarace/stats",
            json!({"textDocument": {"uri": "file:///not/open.cu"}}),
        )
        .await;
    assert!(bad.get("error").is_some(), "{bad}");
    let hover = c
        .request_raw(
            "textDocument/hover",
            json!({"textDocument": {"uri": 5}, "position": "here"}),
        )
        .await;
    assert!(hover.get("error").is_some(), "{hover}");
    // Still serving.
    c.open(URI, RACY);
    let stats = c.stats(URI).await;
    assert_eq!(stats["complete"], true);
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn settings_changes_are_applied_and_bad_ones_reported() {
    let mut c = Client::initialized(json!({"cudarace": {"workers": 0}})).await;
    c.open(URI, RACY);
    c.diagnostics(URI).await;
    assert!(
        c.other.iter().any(|(m, p)| m == "window/showMessage"
            && p["message"].as_str().unwrap_or("").contains("workers")),
        "{:?}",
        c.other
    );
    c.notify(
        "workspace/didChangeConfiguration",
        json!({"settings": {"cudarace": {"possibleSeverity": "hint", "workers": 1}}}),
    );
    // The configuration change re-checks open documents: a new check finishes.
    let stats = c.stats(URI).await;
    assert_eq!(stats["complete"], true);
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn non_cuda_documents_are_ignored() {
    let mut c = Client::initialized(Value::Null).await;
    c.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": "file:///a/readme.md", "languageId": "markdown", "version": 1, "text": "# hi"}}),
    );
    let r = c
        .request_raw(
            "cudarace/stats",
            json!({"textDocument": {"uri": "file:///a/readme.md"}}),
        )
        .await;
    assert!(r.get("error").is_some(), "{r}");
    let uri = "file:///a/k.cuh";
    c.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": uri, "languageId": "cpp", "version": 1, "text": "__global__ void k() {}\n"}}),
    );
    assert_eq!(c.stats(uri).await["complete"], true);
    c.shutdown().await;
}

/// A check that takes longer than ~300 ms shows `$/progress` (begin … end) when the client
/// supports it. 40 distinct kernels take well over that in a test build.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_checks_report_progress() {
    let mut c = Client::start();
    c.request(
        "initialize",
        json!({"processId": null, "capabilities": {"window": {"workDoneProgress": true}}}),
    )
    .await;
    c.notify("initialized", json!({}));
    let mut text = String::new();
    for i in 0..40 {
        text.push_str(&format!(
            "__global__ void k{i}(int *out, int n) {{\n  __shared__ int s[{m}];\n  int t = threadIdx.x;\n  s[t % {m}] = t;\n  __syncthreads();\n  for (int j = 0; j < n; j++) {{\n    out[blockIdx.x * blockDim.x + t] += s[(t + j + {i}) % {m}];\n  }}\n}}\n",
            m = 64 + i
        ));
    }
    let uri = "file:///work/test/many.cu";
    c.open(uri, &text);
    c.diagnostics(uri).await;
    let stats = c.stats(uri).await;
    let took = stats["last"]["timeMs"].as_f64().unwrap();
    if took > 600.0 {
        assert!(
            c.server_requests
                .lock()
                .unwrap()
                .iter()
                .any(|m| m == "window/workDoneProgress/create"),
            "a {took} ms check without progress"
        );
        let begin = c
            .wait_notification("$/progress", |p| p["value"]["kind"] == "begin")
            .await;
        let token = begin["token"].clone();
        c.wait_notification("$/progress", |p| {
            p["token"] == token && p["value"]["kind"] == "end"
        })
        .await;
    } else {
        eprintln!("the check took only {took} ms; progress not exercised");
    }
    c.shutdown().await;
}

/// Checks superseded by edits elsewhere hand their running queries to the next check instead of
/// cancelling them: typing in a comment while a kernel is being solved submits nothing twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn superseded_checks_hand_over_their_queries() {
    // A fast racy kernel, then a grid-stride loop whose queries take the solver a while.
    let text = format!(
        "{RACY}\n__global__ void saxpy(int n, float a, const float *x, float *y) {{\n  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)\n    y[i] = a * x[i] + y[i];\n}}\n"
    );
    let mut c = Client::initialized(json!({})).await;
    c.open(URI, &text);
    // The first kernel is finished (so every query of the check was submitted) …
    c.wait_publish(URI, |p| !races(p).is_empty()).await;
    // … and edits arrive while the second one is still being solved.
    for v in 2..7 {
        c.change(URI, v, ((0, 2), (0, 2)), "x");
    }
    let edited = c.diagnostics(URI).await;
    let submitted = c.stats(URI).await["serverQueriesSubmitted"]
        .as_u64()
        .unwrap();

    let final_text = text.replacen("// ", "// xxxxx", 1);
    let mut fresh = Client::initialized(json!({})).await;
    fresh.open(URI, &final_text);
    let once = fresh.diagnostics(URI).await;
    let expected = fresh.stats(URI).await["serverQueriesSubmitted"]
        .as_u64()
        .unwrap();
    assert!(expected > 0);
    assert_eq!(submitted, expected, "every query submitted once");
    assert_eq!(edited["diagnostics"], once["diagnostics"]);
    fresh.shutdown().await;
    c.shutdown().await;
}

/// "Allow this data race here" inserts an indented suppression comment above the access's
/// line; after it, the race is no longer shown (and the comment is not reported as unused).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn allow_action_suppresses_the_race() {
    const RACY: &str = "__global__ void shift(int *out) {\n    __shared__ int s[256];\n    int t = threadIdx.x;\n    s[t] = t;\n    if (t < 8) {\n        out[blockIdx.x * blockDim.x + t] = s[t + 1];\n    }\n}\n";
    let uri = "file:///work/test/allow.cu";
    let mut c = Client::initialized(json!({"blockDim": [256], "gridDim": [4]})).await;
    c.open(uri, RACY);
    let published = c.diagnostics(uri).await;
    let read = range_of(RACY, "s[t + 1]", 0);
    let race = races(&published)
        .into_iter()
        .find(|d| d["range"] == read)
        .expect("a squiggle on the read");
    let actions = c
        .request(
            "textDocument/codeAction",
            json!({"textDocument": {"uri": uri}, "range": race["range"], "context": {"diagnostics": [race]}}),
        )
        .await;
    let actions = actions.as_array().expect("actions").clone();
    let allow = actions
        .iter()
        .find(|a| a["title"] == "Allow this data race here")
        .unwrap_or_else(|| panic!("an allow action: {actions:#?}"))
        .clone();
    assert_eq!(allow["kind"], "quickfix");
    assert_ne!(
        allow["isPreferred"], true,
        "a verified fix is preferred over allowing"
    );
    assert_eq!(allow["diagnostics"][0]["range"], read);
    let edits = allow["edit"]["documentChanges"][0]["edits"]
        .as_array()
        .unwrap()
        .clone();
    let allowed = apply_edits(RACY, &edits);
    assert!(
        allowed.contains(
            "    if (t < 8) {\n        // cudarace: allow(data-race) array=s reason=<why this is intended>\n        out[blockIdx.x * blockDim.x + t] = s[t + 1];"
        ),
        "{allowed}"
    );
    c.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": uri, "version": 2}, "contentChanges": [{"text": allowed}]}),
    );
    let after = c.diagnostics(uri).await;
    assert!(races(&after).is_empty(), "{after:#}");
    assert!(
        diags_of(&after)
            .iter()
            .all(|d| d["code"] != "unused-suppression"),
        "{after:#}"
    );
    // Removing the race leaves the comment unused: it is reported, faded.
    let fixed = allowed.replace("s[t + 1]", "s[t]");
    c.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": uri, "version": 3}, "contentChanges": [{"text": fixed}]}),
    );
    let after = c.diagnostics(uri).await;
    let unused: Vec<Value> = diags_of(&after)
        .into_iter()
        .filter(|d| d["code"] == "unused-suppression")
        .collect();
    assert_eq!(unused.len(), 1, "{after:#}");
    assert_eq!(unused[0]["tags"], json!([1]));
    c.shutdown().await;
}

/// The workspace's cudarace.toml sets severities; the server watches it and re-checks open
/// documents when it changes; a bad file is reported on itself.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workspace_config_is_read_and_watched() {
    let dir = std::env::temp_dir().join(format!("cudarace-lsp-config-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("src")).unwrap();
    let toml = dir.join("cudarace.toml");
    std::fs::write(
        &toml,
        "[severity]\ndata-race = \"error\"\n[launch]\nblock-dim = [256]\n",
    )
    .unwrap();
    let root_uri = format!("file://{}", dir.display());
    let uri = format!("file://{}/src/shift.cu", dir.display());
    let toml_uri = format!("file://{}", toml.display());

    let mut c = Client::start();
    c.request(
        "initialize",
        json!({"processId": null, "rootUri": root_uri,
               "capabilities": {"workspace": {"didChangeWatchedFiles": {"dynamicRegistration": true}}}}),
    )
    .await;
    c.notify("initialized", json!({}));
    c.open(&uri, RACY);
    let published = c.diagnostics(&uri).await;
    let race = races(&published);
    assert!(!race.is_empty(), "{published:#}");
    assert!(
        race.iter().all(|d| d["severity"] == 1),
        "error from cudarace.toml: {published:#}"
    );
    assert!(
        c.server_requests
            .lock()
            .unwrap()
            .iter()
            .any(|m| m == "client/registerCapability"),
        "a watcher for cudarace.toml is registered"
    );

    // Races switched off: re-checked on the change notification.
    std::fs::write(&toml, "[severity]\ndata-race = \"off\"\n").unwrap();
    c.notify(
        "workspace/didChangeWatchedFiles",
        json!({"changes": [{"uri": toml_uri, "type": 2}]}),
    );
    let after = c.diagnostics(&uri).await;
    assert!(races(&after).is_empty(), "{after:#}");

    // A bad file: an error on the file itself, and the defaults apply (races are warnings).
    std::fs::write(&toml, "[severity]\ndata-race = \"loud\"\n").unwrap();
    c.notify(
        "workspace/didChangeWatchedFiles",
        json!({"changes": [{"uri": toml_uri, "type": 2}]}),
    );
    let after = c.diagnostics(&uri).await;
    assert!(
        races(&after).iter().all(|d| d["severity"] == 2),
        "{after:#}"
    );
    assert!(!races(&after).is_empty(), "{after:#}");
    let bad = c.wait_publish(&toml_uri, |p| !diags_of(p).is_empty()).await;
    let d = &diags_of(&bad)[0];
    assert_eq!(d["range"]["start"]["line"], 1, "{d:#}");
    assert!(
        d["message"]
            .as_str()
            .unwrap()
            .contains("unknown variant `loud`"),
        "{d:#}"
    );
    let _ = std::fs::remove_dir_all(&dir);
    c.shutdown().await;
}

/// After `shutdown` (LSP: "the server errors on requests after shutdown"), every request gets an
/// InvalidRequest error and notifications are ignored, without a crash; `exit` then stops the
/// server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_after_shutdown_are_refused_and_exit_stops_the_server() {
    const INVALID_REQUEST: i64 = -32600;
    let mut c = Client::initialized(json!({"blockDim": [256], "gridDim": [4]})).await;
    c.open(URI, RACY);
    c.diagnostics(URI).await;
    let published_before = c.published[URI].len();
    assert!(c.request("shutdown", Value::Null).await.is_null());

    let (line, character) = position_of(RACY, "s[t + 1]", 0);
    let hover = c
        .request_raw(
            "textDocument/hover",
            json!({"textDocument": {"uri": URI}, "position": {"line": line, "character": character + 1}}),
        )
        .await;
    assert_eq!(hover["error"]["code"], INVALID_REQUEST, "{hover}");
    let stats = c
        .request_raw(
            "cudarace/stats",
            json!({"textDocument": {"uri": URI}, "wait": true}),
        )
        .await;
    assert_eq!(stats["error"]["code"], INVALID_REQUEST, "{stats}");
    let again = c.request_raw("shutdown", Value::Null).await;
    assert_eq!(again["error"]["code"], INVALID_REQUEST, "{again}");

    // A change after shutdown is not applied: no check runs, nothing is published.
    c.change(
        URI,
        2,
        ((0, 0), (0, 0)),
        "__global__ void k(int *a) { a[0] = 1; }\n",
    );
    let after = c
        .request_raw(
            "textDocument/hover",
            json!({"textDocument": {"uri": URI}, "position": {"line": 0, "character": 0}}),
        )
        .await;
    assert_eq!(after["error"]["code"], INVALID_REQUEST, "{after}");
    c.collect_for(std::time::Duration::from_millis(500)).await;
    assert_eq!(
        c.published[URI].len(),
        published_before,
        "{:#?}",
        c.published[URI]
    );

    c.exit().await;
}

/// Documents over the command line's size limit (4 MiB) are not analysed: one Warning at the
/// top says so (old findings go), and analysis resumes when the document is small again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn documents_over_the_size_limit_are_not_analysed() {
    const LIMIT: usize = 4 * 1024 * 1024;
    let filler_line = format!("// {}\n", "x".repeat(77));
    let filler_lines = LIMIT / filler_line.len() + 1;
    let filler = filler_line.repeat(filler_lines);
    let big = format!("{RACY}{filler}");
    assert!(big.len() > LIMIT);
    let racy_lines = RACY.matches('\n').count() as u32;
    let filler_range = ((racy_lines, 0), (racy_lines + filler_lines as u32, 0));
    let too_large = |published: &Value, size: usize| {
        let diags = diags_of(published);
        assert_eq!(diags.len(), 1, "{diags:#?}");
        let d = &diags[0];
        assert_eq!(d["severity"], 2, "{d:#}");
        assert_eq!(d["source"], "cudarace");
        assert_eq!(d["range"]["start"]["line"], 0);
        let message = d["message"].as_str().expect("message");
        assert!(message.contains("too large"), "{message}");
        assert!(message.contains(&format!("{size} bytes")), "{message}");
        assert!(message.contains("4 MiB"), "{message}");
    };
    let mut c = Client::initialized(json!({"blockDim": [256], "gridDim": [4]})).await;

    // Opened too large.
    c.open(URI, &big);
    let published = c.diagnostics(URI).await;
    too_large(&published, big.len());

    // Shrunk under the limit: checked again.
    c.change(URI, 2, filler_range, "");
    let published = c.diagnostics(URI).await;
    assert!(!races(&published).is_empty(), "{published:#}");

    // Grown over the limit by an edit: the race goes with the other findings, hover says nothing.
    c.change(URI, 3, ((racy_lines, 0), (racy_lines, 0)), &filler);
    let published = c.diagnostics(URI).await;
    assert_eq!(published["version"], 3);
    too_large(&published, big.len());
    let (line, character) = position_of(RACY, "s[t + 1]", 0);
    let hover = c
        .request(
            "textDocument/hover",
            json!({"textDocument": {"uri": URI}, "position": {"line": line, "character": character + 1}}),
        )
        .await;
    assert!(hover.is_null(), "{hover}");
    c.shutdown().await;
}

/// A kernel whose only call has no body, which may write `s`: the verdict is unknown.
const OPAQUE: &str = "__device__ void touch(int *p);\n\
__global__ void opaque(int *out) {\n\
  __shared__ int s[64];\n\
  int t = threadIdx.x;\n\
  touch(s);\n\
  __syncthreads();\n\
  out[blockIdx.x * blockDim.x + t] = s[63 - t];\n\
}\n";

/// An unknown kernel's diagnostic points at the unmodelled code that made it unknown.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_kernel_points_at_the_unmodelled_code() {
    let mut c = Client::initialized(json!({"blockDim": [64], "gridDim": [2]})).await;
    c.open(URI, OPAQUE);
    let published = c.diagnostics(URI).await;
    let unknown: Vec<Value> = diags_of(&published)
        .into_iter()
        .filter(|d| d["code"] == "unknown")
        .collect();
    assert_eq!(unknown.len(), 1, "{published:#}");
    let related = unknown[0]["relatedInformation"]
        .as_array()
        .expect("related information");
    assert_eq!(related.len(), 1, "{related:#?}");
    assert_eq!(related[0]["location"]["uri"], URI);
    assert_eq!(
        related[0]["location"]["range"]["start"]["line"], 4,
        "the call `touch(s)`: {related:#?}"
    );
    assert!(
        related[0]["message"]
            .as_str()
            .unwrap_or("")
            .contains("call to `touch` whose body is not available"),
        "{related:#?}"
    );
    c.shutdown().await;
}

/// Hover on a barrier without a finding says what the check established: no divergence in a
/// kernel whose check is complete, nothing claimed where the verdict is unknown; on a divergent
/// barrier the finding's hover wins.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hover_on_barriers_says_what_the_check_established() {
    const CLEAN: &str = "__global__ void reverse(int *out) {\n\
  __shared__ int s[64];\n\
  int t = threadIdx.x;\n\
  s[t] = t;\n\
  __syncthreads();\n\
  out[blockIdx.x * blockDim.x + t] = s[63 - t];\n\
}\n";
    // TWICE: two barriers on one path under a thread-dependent condition: one finding, at the
    // first, that names the second; hovering the second shows that finding.
    const TWICE: &str = "__global__ void twice(int *out) {\n\
  if (threadIdx.x < 32) {\n\
    __syncthreads();\n\
    out[threadIdx.x] = 1;\n\
    __syncthreads();\n\
  }\n\
}\n";
    // OPAQUE: an opaque call that may write `s`, the verdict is unknown.
    let mut c = Client::initialized(json!({"blockDim": [64], "gridDim": [2]})).await;
    let mut hover_on_nth_barrier = async |uri: &str, text: &str, nth: usize| {
        c.open(uri, text);
        c.diagnostics(uri).await;
        let (line, character) = position_of(text, "__syncthreads()", nth);
        let hover = c
            .request(
                "textDocument/hover",
                json!({"textDocument": {"uri": uri}, "position": {"line": line, "character": character + 2}}),
            )
            .await;
        assert_eq!(
            hover["range"],
            range_of(text, "__syncthreads()", nth),
            "{hover:#}"
        );
        hover["contents"]["value"]
            .as_str()
            .unwrap_or_else(|| panic!("markdown hover: {hover:#}"))
            .to_string()
    };

    let md = hover_on_nth_barrier("file:///work/test/clean.cu", CLEAN, 0).await;
    assert!(
        md.starts_with("`__syncthreads()` in kernel `reverse`: **no divergence found**"),
        "{md}"
    );
    assert!(
        md.contains("every thread of the block reaches it, or none does"),
        "{md}"
    );

    let md = hover_on_nth_barrier("file:///work/test/half.cu", DIVERGENT, 0).await;
    assert!(
        md.starts_with("**barrier divergence** in kernel `half`"),
        "{md}"
    );
    assert!(!md.contains("no divergence"), "{md}");

    let md = hover_on_nth_barrier("file:///work/test/opaque.cu", OPAQUE, 0).await;
    assert!(
        md.starts_with("`__syncthreads()` in kernel `opaque`: divergence **not ruled out** — kernel verdict `unknown`: "),
        "{md}"
    );
    assert!(!md.contains("no divergence"), "{md}");

    let md = hover_on_nth_barrier("file:///work/test/twice.cu", TWICE, 0).await;
    assert!(
        md.starts_with("**barrier divergence** in kernel `twice`"),
        "{md}"
    );
    let md = hover_on_nth_barrier("file:///work/test/twice_second.cu", TWICE, 1).await;
    assert!(
        md.starts_with("**barrier divergence** in kernel `twice`"),
        "{md}"
    );
    assert!(
        md.contains("(and the one after it on the same path)"),
        "{md}"
    );
    c.shutdown().await;
}

/// The tree reduction of the README, indented by 4 spaces: the barrier the verified fix inserts at
/// the end of the loop body is indented like the body (8 spaces), as a real client showed it was
/// not (6); and the hover says once that the witness depends on no unknown value.
const REDUCE_4_SPACES: &str = "__global__ void reduce(const float *in, float *out) {\n\
\x20   __shared__ float sdata[256];\n\
\x20   unsigned int tid = threadIdx.x;\n\
\x20   sdata[tid] = in[blockIdx.x * blockDim.x + tid];\n\
\x20   __syncthreads();\n\
\x20   for (unsigned int s = blockDim.x / 2; s > 0; s >>= 1) {\n\
\x20       if (tid < s) {\n\
\x20           sdata[tid] += sdata[tid + s];\n\
\x20       }\n\
\x20   }\n\
\x20   if (tid == 0) {\n\
\x20       out[blockIdx.x] = sdata[0];\n\
\x20   }\n\
}\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn loop_end_fix_is_indented_like_the_loop_body() {
    let uri = "file:///work/test/reduce.cu";
    let mut c = Client::initialized(json!({})).await;
    c.open(uri, REDUCE_4_SPACES);
    let published = c.diagnostics(uri).await;
    let race = races(&published)[0].clone();
    let (line, character) = position_of(REDUCE_4_SPACES, "sdata[tid + s]", 0);
    let hover = c
        .request(
            "textDocument/hover",
            json!({"textDocument": {"uri": uri}, "position": {"line": line, "character": character + 1}}),
        )
        .await;
    let md = hover["contents"]["value"].as_str().expect("markdown hover");
    assert_eq!(md.matches("depends on no unknown value").count(), 1, "{md}");
    // The fix is verified in the background: ask until it is offered.
    let fix = offered_fix(
        &mut c,
        uri,
        &race,
        "Insert `__syncthreads()` at the end of the loop body",
    )
    .await
    .expect("the loop-end fix is offered");
    let edits = fix["edit"]["documentChanges"][0]["edits"]
        .as_array()
        .unwrap()
        .clone();
    let fixed = apply_edits(REDUCE_4_SPACES, &edits);
    assert!(
        fixed.contains(
            "            sdata[tid] += sdata[tid + s];\n        }\n        __syncthreads();\n    }\n"
        ),
        "{fixed}"
    );
    c.shutdown().await;
}

/// Two rows per block, the second `m` rows further: the race is gone when the rows are apart,
/// which the checker states as a precondition and offers to write down, verified.
const TWO_ROWS: &str = "__global__ void two_rows(float *y, int m) {\n\
\x20   unsigned bid = blockIdx.x;\n\
\x20   y[bid * 128 + threadIdx.x] = 1.0f;\n\
\x20   y[(m + bid) * 128 + threadIdx.x] = 2.0f;\n\
}\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn precondition_is_offered_as_a_verified_requires() {
    let uri = "file:///work/test/two_rows.cu";
    let mut c = Client::initialized(json!({"blockDim": [128]})).await;
    c.open(uri, TWO_ROWS);
    let published = c.diagnostics(uri).await;
    let race = races(&published)
        .into_iter()
        .find(|d| d["message"].as_str().unwrap_or("").contains("race-free if"))
        .expect("a race with a precondition");
    let fix = offered_fix(&mut c, uri, &race, "Require `")
        .await
        .expect("the precondition is offered once verified");
    let edits = fix["edit"]["documentChanges"][0]["edits"]
        .as_array()
        .unwrap()
        .clone();
    let fixed = apply_edits(TWO_ROWS, &edits);
    assert!(
        fixed.starts_with("__global__ void two_rows(float *y, int m) {\n    __requires("),
        "{fixed}"
    );
    c.shutdown().await;
}

/// The code action for `race` whose title starts with `title`, asked for until the background
/// verification offers it (up to a minute).
async fn offered_fix(c: &mut Client, uri: &str, race: &Value, title: &str) -> Option<Value> {
    for _ in 0..600 {
        let actions = c
            .request(
                "textDocument/codeAction",
                json!({"textDocument": {"uri": uri}, "range": race["range"], "context": {"diagnostics": [race]}}),
            )
            .await;
        let fix = fixes(&actions)
            .into_iter()
            .find(|a| a["title"].as_str().unwrap_or("").starts_with(title));
        if fix.is_some() {
            return fix;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    None
}

/// A CUB `TempStorage` reused by a second block reduction without a barrier (the fixture
/// `cub/cub_tempstorage_reused_without_barrier.cu`): the fix puts `__syncthreads()` between
/// the two collectives, and the re-check proves it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cub_tempstorage_reuse_is_fixed_with_a_barrier_between_the_collectives() {
    const CUB_REUSE: &str =
        include_str!("../../../../tests/fixtures/cub/cub_tempstorage_reused_without_barrier.cu");
    let uri = "file:///work/test/cub_reuse.cu";
    let mut c = Client::initialized(json!({"blockDim": [256], "gridDim": [4]})).await;
    c.open(uri, CUB_REUSE);
    let published = c.diagnostics(uri).await;
    let race = races(&published)[0].clone();
    let actions = c
        .request(
            "textDocument/codeAction",
            json!({"textDocument": {"uri": uri}, "range": race["range"], "context": {"diagnostics": [race]}}),
        )
        .await;
    let actions = actions.as_array().expect("actions");
    let action = actions
        .iter()
        .find(|a| {
            a["title"]
                .as_str()
                .is_some_and(|t| t.contains("`__syncthreads()` between the racing accesses"))
        })
        .unwrap_or_else(|| panic!("a barrier between the collectives is offered: {actions:#?}"));
    assert!(
        action["title"].as_str().unwrap().contains("verified"),
        "{action:#}"
    );
    let edits = action["edit"]["documentChanges"][0]["edits"]
        .as_array()
        .unwrap()
        .clone();
    let fixed = apply_edits(CUB_REUSE, &edits);
    let first = fixed.find("Sum(x);").expect("first reduction");
    let barrier = fixed.find("__syncthreads();").expect("barrier inserted");
    let second = fixed.find("Sum(x * x);").expect("second reduction");
    assert!(first < barrier && barrier < second, "{fixed}");
    c.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": uri, "version": 2},
               "contentChanges": edits.iter().rev().map(|e| json!({"range": e["range"], "text": e["newText"]})).collect::<Vec<_>>()}),
    );
    let after = c.diagnostics(uri).await;
    assert!(
        races(&after).is_empty(),
        "the fix removes the race: {after:#}"
    );
    assert!(
        diags_of(&after)
            .iter()
            .all(|d| d["code"] != "barrier-divergence"),
        "{after:#}"
    );
    c.shutdown().await;
}

/// Ten stores that race pairwise: the server reports 32 races on the array and does not ask
/// the solver about the array's other pairs (the command line reports the same).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn racy_pairs_past_the_cap_are_not_asked() {
    let text = include_str!(
        "../../../../tests/fixtures/global/racy_pairs_past_the_cap_are_not_checked.cu"
    );
    let uri = "file:///work/test/smear.cu";
    let mut c = Client::initialized(json!({})).await;
    c.open(uri, text);
    let published = c.diagnostics(uri).await;
    let stats = c.stats(uri).await;
    // 55 pairs in the plan (45 racy ones): 37 asked until the 32nd race, 18 left out.
    assert_eq!(stats["last"]["queriesSolved"], 37, "{stats:#}");
    let messages: Vec<String> = races(&published)
        .iter()
        .map(|d| d["message"].as_str().unwrap_or_default().to_string())
        .collect();
    assert!(
        !messages.is_empty() && messages.len() <= 2 * 32,
        "{published:#}"
    );
    c.shutdown().await;
}
