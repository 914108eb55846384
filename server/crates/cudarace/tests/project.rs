//! `cudarace check` on projects: compilation databases (`--compile-commands`, discovery,
//! `[frontend] compile-commands`), the launch sites of a project's other files, and the CUDA
//! toolkit's include folders (`--system-includes`).
//!
//! The example CMake project (examples/project) has its `build/compile_commands.json` committed
//! as CMake writes it: absolute paths, under `/home/user/cudarace/examples/project`. The tests copy
//! the project to a temporary folder and rewrite that prefix, as regenerating it there would.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Where the committed database says the project is.
const COMMITTED_ROOT: &str = "/home/user/cudarace/examples/project";

fn run_env(args: &[&str], env: &[(&str, &Path)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_cudarace"));
    cmd.args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env_remove("CUDARACE_LOG")
        .env_remove("CUDA_PATH")
        .env_remove("CUDA_HOME")
        .env("NO_COLOR", "1");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("the cudarace binary runs")
}

fn run(args: &[&str]) -> Output {
    run_env(args, &[])
}

fn code(out: &Output) -> i32 {
    out.status.code().expect("exited, not killed by a signal")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}):\n{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            stderr(out)
        )
    })
}

/// `(kernel name, verdict)` of every kernel reported, in order.
fn verdicts(out: &Output) -> Vec<(String, String)> {
    json(out)["kernels"]
        .as_array()
        .expect("kernels")
        .iter()
        .map(|k| {
            (
                k["name"].as_str().unwrap_or("").to_string(),
                k["verdict"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

fn temp_dir(name: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("cudarace-project-{}-{}", name, std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

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

fn example_project() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../examples/project")
}

/// The example project copied to a temporary folder, its database rewritten for that place.
fn project(name: &str) -> PathBuf {
    let dir = temp_dir(name);
    copy_dir(&example_project(), &dir);
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

fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

#[test]
fn no_paths_checks_every_unit_of_the_database_with_the_sites_of_all() {
    let dir = project("units");
    let db = dir.join("build/compile_commands.json");
    let out = run(&["check", "--format", "json", "--compile-commands", s(&db)]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    assert!(stderr(&out).is_empty(), "{}", stderr(&out));
    // main.cu and wide.cu each include the header's kernel (found through -I, with WIDTH from
    // -D): each is checked under both launch sites, so both see wide.cu's race, and the header's
    // kernel, the same in both, is reported once.
    let v = verdicts(&out);
    assert_eq!(v, [("scale_rows".to_string(), "racy".to_string())]);
    // Its read and its write of `data[…] *=` each race with the other thread's write: two
    // findings, once (not four).
    assert_eq!(json(&out)["findings"].as_array().map(Vec::len), Some(2));
    let report = json(&out);
    let finding = &report["findings"][0];
    assert!(
        finding["file"]
            .as_str()
            .unwrap_or("")
            .ends_with("scale.cuh"),
        "{finding}"
    );
    // The folder form of the flag.
    let out = run(&[
        "check",
        "--format",
        "json",
        "--compile-commands",
        s(&dir.join("build")),
    ]);
    assert_eq!(verdicts(&out).len(), 1, "{}", stderr(&out));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_file_is_checked_under_the_launch_sites_of_the_other_units() {
    let dir = project("sites");
    let main = dir.join("src/main.cu");
    let include = dir.join("include");
    // Alone, with the same flags by hand: its own launch (WIDTH threads) is race-free.
    let alone = run(&[
        "check",
        "--format",
        "json",
        "--no-compile-commands",
        "-I",
        s(&include),
        "-D",
        "WIDTH=256",
        s(&main),
    ]);
    assert_eq!(
        verdicts(&alone),
        [("scale_rows".to_string(), "race-free".to_string())],
        "{}",
        stderr(&alone)
    );
    // With the database (found in build/ above the file): wide.cu's launch makes it racy.
    let found = run(&["check", "--format", "json", s(&main)]);
    assert_eq!(
        verdicts(&found),
        [("scale_rows".to_string(), "racy".to_string())],
        "{}",
        stderr(&found)
    );
    let assumed = json(&found)["kernels"][0]["assumed_launch"].clone();
    assert!(assumed.to_string().contains("512"), "{assumed}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn without_the_database_the_header_is_not_found() {
    let dir = project("without");
    let out = run(&[
        "check",
        "--format",
        "json",
        "--no-compile-commands",
        s(&dir.join("src/main.cu")),
    ]);
    assert!(verdicts(&out).is_empty(), "{}", stderr(&out));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_header_takes_the_flags_of_the_nearest_unit() {
    let dir = project("header");
    let header = dir.join("include/scale.cuh");
    let db = dir.join("build");
    let out = run(&[
        "check",
        "--format",
        "json",
        "--compile-commands",
        s(&db),
        s(&header),
    ]);
    // WIDTH from main.cu's entry, the sites from both units.
    assert_eq!(
        verdicts(&out),
        [("scale_rows".to_string(), "racy".to_string())],
        "{}",
        stderr(&out)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_committed_database_is_stale_and_says_so() {
    // As committed, the database names files under /home/user: a warning, no flags, no crash.
    let main = example_project().join("src/main.cu");
    let out = run(&["check", "--format", "json", s(&main)]);
    let err = stderr(&out);
    assert!(err.contains("none of the 2 files it names exists"), "{err}");
    assert!(err.contains("regenerate it"), "{err}");
    assert_eq!(code(&out), 0, "{err}");
    assert!(verdicts(&out).is_empty());
}

#[test]
fn a_missing_database_is_a_warning_when_files_are_named() {
    let out = run(&[
        "check",
        "--compile-commands",
        "tests/data/no-such-folder/compile_commands.json",
        "tests/data/clean.cu",
    ]);
    let err = stderr(&out);
    assert_eq!(code(&out), 0, "{err}");
    assert!(err.contains("cudarace: warning: "), "{err}");
    assert!(
        err.contains("cannot read the compilation database"),
        "{err}"
    );
    assert!(err.contains("checked without its flags"), "{err}");
}

#[test]
fn a_missing_or_empty_database_without_files_is_a_usage_error() {
    let out = run(&["check", "--compile-commands", "tests/data/no-such.json"]);
    assert_eq!(code(&out), 2);
    assert!(
        stderr(&out).contains("error: ") && stderr(&out).contains("cannot read"),
        "{}",
        stderr(&out)
    );
    let dir = temp_dir("empty");
    std::fs::write(dir.join("compile_commands.json"), "[]").expect("write");
    let out = run(&["check", "--compile-commands", s(&dir)]);
    assert_eq!(code(&out), 2);
    assert!(
        stderr(&out).contains("no CUDA translation unit (.cu file) to check"),
        "{}",
        stderr(&out)
    );
    // Neither files nor a database.
    let out = run(&["check"]);
    assert_eq!(code(&out), 2);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_malformed_database_is_a_warning() {
    let dir = temp_dir("malformed");
    std::fs::write(dir.join("compile_commands.json"), "[{\"file\": ").expect("write");
    std::fs::write(
        dir.join("k.cu"),
        "__global__ void k(int *a) { a[blockIdx.x * blockDim.x + threadIdx.x] = 1; }\n",
    )
    .expect("write");
    let out = run(&["check", "--format", "json", s(&dir.join("k.cu"))]);
    let err = stderr(&out);
    assert!(
        err.contains("not a compilation database (invalid JSON"),
        "{err}"
    );
    assert_eq!(
        verdicts(&out),
        [("k".to_string(), "race-free".to_string())],
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

const PICK: &str = "#include <config.h>\n#if defined(FAST) && !defined(SLOW)\n__global__ void fast(int *a) { a[threadIdx.x] = 1; }\n#else\n__global__ void slow(int *a) { a[threadIdx.x] = 2; }\n#endif\n";

#[test]
fn the_configuration_names_the_database_and_nvcc_flags_apply() {
    let dir = temp_dir("config-key");
    std::fs::create_dir_all(dir.join("db")).expect("mkdir");
    std::fs::create_dir_all(dir.join("cfg")).expect("mkdir");
    std::fs::write(dir.join("cfg/config.h"), "#define FAST 1\n").expect("write");
    std::fs::write(dir.join("k.cu"), PICK).expect("write");
    let entry = format!(
        "[{{\"directory\": \"{}\", \"command\": \"nvcc --pre-include cfg/config.h -DSLOW -U SLOW -c k.cu\", \"file\": \"k.cu\"}}]",
        s(&dir)
    );
    std::fs::write(dir.join("db/cc.json"), entry).expect("write");
    // Not found without the key (not a standard place).
    let out = run(&["check", "--format", "json", s(&dir.join("k.cu"))]);
    assert_eq!(verdicts(&out)[0].0, "slow", "{}", stderr(&out));
    std::fs::write(
        dir.join("cudarace.toml"),
        "[frontend]\ncompile-commands = \"db/cc.json\"\n",
    )
    .expect("write");
    let out = run(&["check", "--format", "json", s(&dir.join("k.cu"))]);
    assert_eq!(verdicts(&out)[0].0, "fast", "{}", stderr(&out));
    // A -D on the command line wins over the database's -U.
    let out = run(&[
        "check",
        "--format",
        "json",
        "-D",
        "SLOW",
        s(&dir.join("k.cu")),
    ]);
    assert_eq!(verdicts(&out)[0].0, "slow", "{}", stderr(&out));
    // cudarace.toml is stronger than the database too: its `SLOW` survives the database's -U.
    std::fs::write(
        dir.join("cudarace.toml"),
        "[frontend]\ncompile-commands = \"db/cc.json\"\ndefine = [\"SLOW\"]\n",
    )
    .expect("write");
    let out = run(&["check", "--format", "json", s(&dir.join("k.cu"))]);
    assert_eq!(verdicts(&out)[0].0, "slow", "{}", stderr(&out));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn system_includes_are_opt_in() {
    let dir = temp_dir("system");
    let toolkit = dir.join("toolkit");
    std::fs::create_dir_all(toolkit.join("include")).expect("mkdir");
    std::fs::write(toolkit.join("include/config.h"), "#define FAST 1\n").expect("write");
    let src = dir.join("src");
    std::fs::create_dir_all(&src).expect("mkdir");
    std::fs::write(src.join("k.cu"), PICK).expect("write");
    let file = src.join("k.cu");
    let env = [("CUDA_PATH", toolkit.as_path())];
    let off = run_env(&["check", "--format", "json", s(&file)], &env);
    assert_eq!(verdicts(&off)[0].0, "slow", "{}", stderr(&off));
    let on = run_env(
        &["check", "--format", "json", "--system-includes", s(&file)],
        &env,
    );
    assert_eq!(verdicts(&on)[0].0, "fast", "{}", stderr(&on));
    std::fs::write(
        dir.join("cudarace.toml"),
        "[frontend]\nsystem-includes = true\n",
    )
    .expect("write");
    let by_config = run_env(&["check", "--format", "json", s(&file)], &env);
    assert_eq!(verdicts(&by_config)[0].0, "fast", "{}", stderr(&by_config));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_header_takes_the_flags_of_a_unit_that_includes_it() {
    let dir = temp_dir("includer");
    for sub in ["a", "b", "inc"] {
        std::fs::create_dir_all(dir.join(sub)).expect("mkdir");
    }
    std::fs::write(
        dir.join("a/a.cu"),
        "__global__ void a_kernel(int *p) { p[blockIdx.x * blockDim.x + threadIdx.x] = W; }\n",
    )
    .expect("write");
    std::fs::write(dir.join("b/b.cu"), "#include \"h.cuh\"\n").expect("write");
    std::fs::write(
        dir.join("inc/h.cuh"),
        "#if W == 2\n__global__ void included(int *p) { p[0] = 1; }\n#else\n__global__ void nearest(int *p) { p[0] = 1; }\n#endif\n",
    )
    .expect("write");
    let db = format!(
        r#"[{{"directory": "{d}", "file": "a/a.cu", "arguments": ["nvcc", "-DW=1", "-c", "a/a.cu"]}},
            {{"directory": "{d}", "file": "b/b.cu", "arguments": ["nvcc", "-Iinc", "-DW=2", "-c", "b/b.cu"]}}]"#,
        d = s(&dir)
    );
    std::fs::write(dir.join("compile_commands.json"), db).expect("write");
    // The nearest entry would be a/a.cu (W=1); b/b.cu includes the header (W=2).
    let out = run(&["check", "--format", "json", s(&dir.join("inc/h.cuh"))]);
    assert_eq!(verdicts(&out)[0].0, "included", "{}", stderr(&out));
    let _ = std::fs::remove_dir_all(&dir);
}

/// A kernel that races across blocks (thread 0 of each writes `r[0]`) and never reads
/// `blockIdx`: launched with one block it is race-free.
const TOTAL: &str = "__global__ void total(const float *a, float *r, int n) {\n\
    if (threadIdx.x == 0) {\n        float s = 0;\n\
        for (int i = 0; i < n; i++) s += a[i];\n        r[0] = s;\n    }\n}\n";

/// `main.cu` beside `total.cu`, launching `total` through its declaration with `blocks`
/// blocks; the report of checking `total.cu` alone.
fn total_launched_beside(dir: &Path, blocks: u32) -> Output {
    std::fs::write(
        dir.join("main.cu"),
        format!(
            "#include \"total.cuh\"\nvoid run(const float *a, float *r, int n) {{\n\
             total<<<{blocks}, 32>>>(a, r, n);\n}}\n"
        ),
    )
    .expect("write");
    run(&["check", "--format", "json", s(&dir.join("total.cu"))])
}

#[test]
fn without_a_database_a_kernel_takes_the_launch_sites_of_the_files_beside_it() {
    let dir = temp_dir("siblings");
    std::fs::write(dir.join("total.cu"), TOTAL).expect("write");
    std::fs::write(
        dir.join("total.cuh"),
        "__global__ void total(const float *a, float *r, int n);\n",
    )
    .expect("write");
    // Declared through a header and launched from a sibling: one block, then four.
    for (blocks, verdict) in [(1, "race-free"), (4, "racy")] {
        let out = total_launched_beside(&dir, blocks);
        assert_eq!(
            verdicts(&out),
            [("total".to_string(), verdict.to_string())],
            "{}",
            stderr(&out)
        );
        if blocks > 1 {
            assert_eq!(json(&out)["findings"][0]["confidence"], "definite");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_kernel_file_takes_the_launch_sites_of_a_sibling_that_includes_it() {
    let dir = temp_dir("includer");
    std::fs::write(dir.join("total_kernel.cu"), TOTAL).expect("write");
    std::fs::write(
        dir.join("total.cu"),
        "#include \"total_kernel.cu\"\nvoid run(const float *a, float *r, int n) {\n\
         total<<<1, 64>>>(a, r, n);\n}\n",
    )
    .expect("write");
    let out = run(&["check", "--format", "json", s(&dir.join("total_kernel.cu"))]);
    assert_eq!(
        verdicts(&out),
        [("total".to_string(), "race-free".to_string())],
        "{}",
        stderr(&out)
    );
    let _ = std::fs::remove_dir_all(&dir);
}
