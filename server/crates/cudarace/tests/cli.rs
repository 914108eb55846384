//! The `cudarace` binary end to end: exit codes, output formats, options, and bad input.
//! Runs in the crate folder so that reported paths are `tests/data/…`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cudarace"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env_remove("CUDARACE_LOG")
        .env("NO_COLOR", "1")
        .output()
        .expect("the cudarace binary runs")
}

fn code(out: &Output) -> i32 {
    out.status.code().expect("exited, not killed by a signal")
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn json(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}):\n{}\n{}",
            stdout(out),
            stderr(out)
        )
    })
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("cudarace-cli-{}-{}", name, std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn race_free_file_exits_0() {
    let out = run(&["check", "tests/data/clean.cu"]);
    assert_eq!(code(&out), 0, "{}{}", stdout(&out), stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("kernel `last_of_block`: race-free"), "{text}");
    assert!(
        text.contains("summary: 1 kernel in 1 file: 1 race-free"),
        "{text}"
    );
}

#[test]
fn racy_file_exits_1_and_shows_both_accesses() {
    let out = run(&["check", "tests/data/racy.cu"]);
    assert_eq!(code(&out), 1, "{}{}", stdout(&out), stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("error[data-race]"), "{text}");
    assert!(text.contains("kernel `shift`: racy"), "{text}");
    assert!(text.contains("kernel `stage`: race-free"), "{text}");
    // Both source lines of the pair are shown.
    assert!(text.contains("s[t] = t;"), "{text}");
    assert!(text.contains("s[t + 1]"), "{text}");
    assert!(text.contains("thread A: threadIdx="), "{text}");
}

#[test]
fn divergent_barrier_exits_1() {
    let out = run(&["check", "--format", "json", "tests/data/divergent.cu"]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let v = json(&out);
    assert_eq!(v["kernels"][0]["verdict"], "divergent");
    assert_eq!(v["findings"][0]["kind"], "barrier-divergence");
    assert_eq!(v["findings"][0]["line"], 6);
    assert!(v["findings"][0].get("array").is_none());
}

#[test]
fn json_output_shape() {
    let out = run(&["check", "--format", "json", "tests/data/racy.cu"]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let v = json(&out);
    assert_eq!(v["version"], 1);
    let finding = &v["findings"][0];
    assert_eq!(finding["kind"], "data-race");
    assert_eq!(finding["array"], "s");
    assert_eq!(finding["file"], "tests/data/racy.cu");
    for key in [
        "thread_a", "thread_b", "cell", "params", "blockDim", "gridDim",
    ] {
        assert!(
            finding["witness"].get(key).is_some(),
            "witness lacks {key}: {finding}"
        );
    }
    insta::assert_json_snapshot!(v, {
        ".kernels[].time_ms" => "[time]",
        ".findings[].witness" => "[witness]",
    });
}

#[test]
fn kernel_filter() {
    let out = run(&[
        "check",
        "--format",
        "json",
        "--kernel",
        "stage",
        "tests/data/racy.cu",
    ]);
    assert_eq!(code(&out), 0, "{}{}", stdout(&out), stderr(&out));
    let v = json(&out);
    let names: Vec<&str> = v["kernels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["stage"]);

    let out = run(&["check", "--kernel", "no_such_kernel", "tests/data/racy.cu"]);
    assert_eq!(code(&out), 2);
    assert!(
        stderr(&out).contains("no kernel named `no_such_kernel`"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn launch_dimension_errors_are_usage_errors() {
    for bad in ["0", "abc", "1,2,3,4", "-4", ""] {
        let arg = format!("--block-dim={bad}");
        let out = run(&["check", &arg, "tests/data/clean.cu"]);
        assert_eq!(code(&out), 2, "--block-dim {bad:?}: {}", stderr(&out));
        assert!(stderr(&out).contains("--block-dim"), "{}", stderr(&out));
    }
    let out = run(&["check", "--grid-dim", "1,70000", "tests/data/clean.cu"]);
    assert_eq!(code(&out), 2);
    let out = run(&[
        "check",
        "--block-dim",
        "256",
        "--grid-dim",
        "64",
        "tests/data/clean.cu",
    ]);
    assert_eq!(code(&out), 0, "{}{}", stdout(&out), stderr(&out));
}

#[test]
fn block_over_cuda_limit_is_checked_with_a_warning_naming_the_flag() {
    for size in ["2048", "64,64", "1,1,65"] {
        let out = run(&[
            "check",
            "--format",
            "json",
            "--block-dim",
            size,
            "tests/data/clean.cu",
        ]);
        let v = json(&out);
        let kernel = &v["kernels"][0];
        if size == "2048" {
            // (With more than one row or layer, `s[threadIdx.x]` is shared between them.)
            assert_eq!(code(&out), 0, "{}{}", stdout(&out), stderr(&out));
            assert_eq!(kernel["verdict"], "race-free", "{v}");
        }
        let reason = kernel["reason"].as_str().unwrap_or_default();
        assert!(
            reason.contains("--block-dim") && reason.contains("over CUDA's limit"),
            "{v}"
        );
    }
}

#[test]
fn launch_override_reaches_the_report() {
    let out = run(&[
        "check",
        "--format",
        "json",
        "--block-dim",
        "32",
        "tests/data/racy.cu",
    ]);
    let v = json(&out);
    let witness = &v["findings"][0]["witness"];
    assert_eq!(witness["blockDim"], serde_json::json!([32, 1, 1]), "{v}");
}

#[test]
fn folder_argument_checks_cuda_files_below_it_in_order() {
    let out = run(&["check", "--format", "json", "tests/data/tree"]);
    assert_eq!(code(&out), 0, "{}{}", stdout(&out), stderr(&out));
    let v = json(&out);
    let files: Vec<&str> = v["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["file"].as_str().unwrap())
        .collect();
    assert_eq!(files, ["tests/data/tree/a.cu", "tests/data/tree/sub/b.cuh"]);
    assert_eq!(v["summary"]["race_free"], 2);
}

#[test]
fn missing_path_exits_2() {
    let out = run(&["check", "tests/data/does-not-exist.cu"]);
    assert_eq!(code(&out), 2);
    assert!(
        stderr(&out).contains("does-not-exist.cu: no such file or directory"),
        "{}",
        stderr(&out)
    );
    assert!(stdout(&out).is_empty());
}

#[test]
fn folder_without_cuda_files_exits_2() {
    let dir = temp_dir("empty");
    let out = run(&["check", dir.to_str().unwrap()]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn usage_errors_exit_2() {
    assert_eq!(code(&run(&["check"])), 2);
    assert_eq!(
        code(&run(&["check", "--format", "xml", "tests/data/clean.cu"])),
        2
    );
    assert_eq!(code(&run(&["frobnicate"])), 2);
    assert_eq!(
        code(&run(&["check", "--timeout-ms", "0", "tests/data/clean.cu"])),
        2
    );
    assert_eq!(code(&run(&["--help"])), 0);
}

#[test]
fn binary_file_is_a_clear_error_not_a_crash() {
    let dir = temp_dir("binary");
    let bin = dir.join("blob.cu");
    std::fs::write(&bin, b"\x7fELF\x02\x01\x01\0\0\0\0\0\0\0\0\0\x03\0>\0").unwrap();
    let out = run(&["check", bin.to_str().unwrap()]);
    assert_eq!(code(&out), 1, "{}{}", stdout(&out), stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("binary file"), "{text}");
    assert!(text.contains("1 file not analysed"), "{text}");
    assert!(!stderr(&out).contains("panicked"), "{}", stderr(&out));

    // With other files, the good ones are still checked.
    let out = run(&[
        "check",
        "--format",
        "json",
        bin.to_str().unwrap(),
        "tests/data/clean.cu",
    ]);
    assert_eq!(code(&out), 1);
    let v = json(&out);
    assert!(v["files"][0]["error"]
        .as_str()
        .unwrap()
        .contains("binary file"));
    assert_eq!(v["kernels"][0]["verdict"], "race-free");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn sarif_output_for_code_scanning() {
    let out = run(&["check", "--format", "sarif", "tests/data/racy.cu"]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let v = json(&out);
    assert_eq!(v["version"], "2.1.0");
    let run0 = &v["runs"][0];
    assert_eq!(run0["tool"]["driver"]["name"], "cudarace");
    let result = &run0["results"][0];
    assert_eq!(result["ruleId"], "data-race");
    let loc = &result["locations"][0]["physicalLocation"];
    // Relative to the working directory, with forward slashes.
    assert_eq!(loc["artifactLocation"]["uri"], "tests/data/racy.cu");
    let line = loc["region"]["startLine"].as_u64().unwrap();
    assert!(
        line == 6 || line == 8,
        "the race is on line 6 or 8, got {line}"
    );
    assert!(result["relatedLocations"]
        .as_array()
        .is_some_and(|r| !r.is_empty()));
    assert!(result["properties"]["witness"].is_object());
}

#[test]
fn data_files_exist() {
    // The fixtures above are part of this crate; fail clearly if they move.
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    for f in [
        "clean.cu",
        "racy.cu",
        "tree/a.cu",
        "tree/sub/b.cuh",
        "tree/notes.txt",
        "slow_packed_triangles.cu",
        "racy_array_with_a_slow_pair.cu",
    ] {
        assert!(data.join(f).is_file(), "missing {f}");
    }
}

/// One LSP message with its header.
fn lsp_message(body: &str) -> String {
    format!("Content-Length: {}\r\n\r\n{}", body.len(), body)
}

#[test]
fn lsp_subcommand_speaks_the_protocol_on_stdio() {
    let stderr = lsp_session(&["lsp"]);
    // `cudarace lsp --help` says the server logs at `info` by default.
    assert!(stderr.contains(" INFO "), "{stderr}");
}

/// vscode-languageclient (`TransportKind.stdio`) and other clients append `--stdio`.
#[test]
fn lsp_accepts_the_stdio_flag() {
    lsp_session(&["lsp", "--stdio"]);
}

#[test]
fn lsp_help_states_the_default_log_level() {
    let out = run(&["lsp", "--help"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let help = stdout(&out);
    assert!(help.contains("--stdio"), "{help}");
    assert!(
        help.contains("for `lsp` the `RUST_LOG` variable, else `info`"),
        "{help}"
    );
}

/// Starts the server with `args`, initializes it, opens a racy document, waits for its
/// diagnostics, shuts it down; returns its stderr.
fn lsp_session(args: &[&str]) -> String {
    use std::io::{Read, Write};
    use std::process::Stdio;
    use std::sync::mpsc;
    use std::time::{Duration, Instant};
    let mut child = Command::new(env!("CARGO_BIN_EXE_cudarace"))
        .args(args)
        .env_remove("CUDARACE_LOG")
        .env_remove("RUST_LOG")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the cudarace binary runs");
    let mut err = child.stderr.take().unwrap();
    let stderr_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    // Read on a thread so that a server that does not answer fails the test instead of hanging it.
    let mut stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel::<Vec<u8>>();
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n) = stdout.read(&mut buf) {
            if n == 0 || tx.send(buf[..n].to_vec()).is_err() {
                break;
            }
        }
    });
    let mut out = String::new();
    let read_until = |needle: &str, out: &mut String| {
        let deadline = Instant::now() + Duration::from_secs(30);
        while !out.contains(needle) {
            match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                Ok(chunk) => out.push_str(&String::from_utf8_lossy(&chunk)),
                Err(_) => return false,
            }
        }
        true
    };
    let mut stdin = child.stdin.take().unwrap();
    let initialize = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"processId":null,"rootUri":null,"capabilities":{}}}"#;
    // A closed pipe here means the server exited at once (a rejected argument, say).
    let written = stdin
        .write_all(lsp_message(initialize).as_bytes())
        .and_then(|()| stdin.flush());
    let answered = written.is_ok() && read_until("\"capabilities\"", &mut out);
    if !answered {
        let _ = child.kill();
        let _ = child.wait();
        panic!(
            "no answer to `initialize` from `cudarace {}`: {out}\nstderr: {}",
            args.join(" "),
            stderr_reader.join().unwrap()
        );
    }
    assert!(out.starts_with("Content-Length:"), "{out}");
    let mut rest = String::new();
    rest += &lsp_message(r#"{"jsonrpc":"2.0","method":"initialized","params":{}}"#);
    rest += &lsp_message(
        r#"{"jsonrpc":"2.0","method":"textDocument/didOpen","params":{"textDocument":{"uri":"file:///tmp/cli-lsp.cu","languageId":"cuda-cpp","version":1,"text":"__global__ void k(int *a) {\n  a[threadIdx.x % 2] = 1;\n}\n"}}}"#,
    );
    stdin.write_all(rest.as_bytes()).unwrap();
    stdin.flush().unwrap();
    let published = read_until("data-race", &mut out);
    stdin
        .write_all(lsp_message(r#"{"jsonrpc":"2.0","id":2,"method":"shutdown"}"#).as_bytes())
        .unwrap();
    stdin.flush().unwrap();
    let shut_down = read_until("\"id\":2", &mut out);
    stdin
        .write_all(lsp_message(r#"{"jsonrpc":"2.0","method":"exit"}"#).as_bytes())
        .unwrap();
    drop(stdin);
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("the language server did not exit after `exit`: {out}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let stderr = stderr_reader.join().unwrap();
    assert!(
        published,
        "no data-race diagnostic: {out}\nstderr: {stderr}"
    );
    assert!(shut_down, "no answer to `shutdown`: {out}");
    assert!(status.success(), "{status:?}: {out}");
    stderr
}

fn run_with_crash(spec: &str, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cudarace"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env_remove("CUDARACE_LOG")
        .env("NO_COLOR", "1")
        .env("CUDARACE_DEBUG_CRASH", spec)
        .output()
        .expect("the cudarace binary runs")
}

#[test]
fn a_panic_in_a_kernel_names_the_file_and_the_kernel() {
    let out = run_with_crash("panic:stage", &["check", "tests/data/racy.cu"]);
    let err = stderr(&out);
    assert!(
        err.contains(
            "cudarace: the panic above happened while checking tests/data/racy.cu, kernel `stage`"
        ),
        "{err}"
    );
    // The panic is caught: the kernel is unsupported, the other one is still checked.
    assert_eq!(code(&out), 1, "{err}");
    let text = stdout(&out);
    assert!(
        text.contains("internal error: CUDARACE_DEBUG_CRASH in `stage`"),
        "{text}"
    );
    assert!(text.contains("kernel `shift`"), "{text}");
}

#[test]
fn an_abort_in_a_kernel_names_the_file_and_the_kernel() {
    use std::os::unix::process::ExitStatusExt;
    let out = run_with_crash(
        "abort:shift",
        &["check", "tests/data/clean.cu", "tests/data/racy.cu"],
    );
    let err = stderr(&out);
    assert_eq!(out.status.signal(), Some(6), "{:?}: {err}", out.status);
    assert!(
        err.contains("cudarace: SIGABRT while checking tests/data/racy.cu, kernel `shift`"),
        "{err}"
    );
}

/// A pair the first pass's short query limit stops is asked again with the full limit, except
/// when the first pass found both of its accesses racy with others of the same array: the
/// kernel is racy either way, every access keeps a finding, and the kernel is reported without
/// waiting seconds for the pair (whose reason says so).
#[test]
fn slow_pairs_of_a_racy_array_are_not_asked_again() {
    let out = run(&[
        "check",
        "--format",
        "json",
        "tests/data/racy_array_with_a_slow_pair.cu",
    ]);
    assert_eq!(code(&out), 1, "{}{}", stdout(&out), stderr(&out));
    let v = json(&out);
    let k = v["kernels"][0].clone();
    assert_eq!(k["verdict"], "racy", "{k}");
    let reason = k["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains(
            "to `out` (timeout of the first pass; not asked again, both accesses are racy already)"
        ),
        "{reason}"
    );
}

/// `--file-timeout-ms`: the kernels of a file share one budget; past it a kernel gets a
/// 100 ms slice, and one still undecided then is `unknown` (exit 1), with the reason, never
/// race-free. The file's nonlinear query takes seconds (more than 2 s in a release build here).
#[test]
fn file_timeout_leaves_undecided_kernels_unknown() {
    let out = run(&[
        "check",
        "--format",
        "json",
        "--file-timeout-ms",
        "1",
        "tests/data/slow_packed_triangles.cu",
    ]);
    assert_eq!(code(&out), 1, "{}{}", stdout(&out), stderr(&out));
    let v = json(&out);
    let k = v["kernels"][0].clone();
    assert_eq!(k["verdict"], "unknown", "{k}");
    let reason = k["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("the file's time budget (1 ms) ran out"),
        "{reason}"
    );
}
