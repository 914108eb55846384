//! `cudarace.toml`, suppressions and exit codes, end to end through the binary. The inputs are
//! in `tests/data/config/`; runs in the crate folder so that reported paths are `tests/data/…`.

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

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn json(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("stdout is not JSON ({e}):\n{}", text(out)))
}

fn launch_of(v: &serde_json::Value, kernel: &str) -> String {
    v["kernels"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["name"] == kernel)
        .unwrap_or_else(|| panic!("no kernel {kernel}: {v}"))["assumed_launch"]
        .as_str()
        .unwrap()
        .to_string()
}

const KERNELS: &str = "tests/data/config/launch/src/kernels.cu";

#[test]
fn config_is_discovered_and_layered_over_annotations() {
    let out = run(&["check", "--format", "json", KERNELS]);
    assert_eq!(code(&out), 0, "{}", text(&out));
    let v = json(&out);
    assert!(
        v["files"][0]["config"]
            .as_str()
            .is_some_and(|c| c.ends_with("launch/cudarace.toml")),
        "{v}"
    );
    // `plain`: blockDim from the annotation (the configuration does not set it), gridDim from
    // [launch] (stronger than the annotation).
    let plain = launch_of(&v, "plain");
    assert!(
        plain.contains("blockDim=(16") && plain.contains("gridDim=(8"),
        "{plain}"
    );
    // `tuned_copy`: its [[kernel]] entry's blockDim over the annotation's.
    let tuned = launch_of(&v, "tuned_copy");
    assert!(
        tuned.contains("blockDim=(32") && tuned.contains("gridDim=(8"),
        "{tuned}"
    );
}

#[test]
fn command_line_flags_beat_the_config() {
    let out = run(&[
        "check",
        "--format",
        "json",
        "--block-dim",
        "64",
        "--grid-dim",
        "4",
        KERNELS,
    ]);
    assert_eq!(code(&out), 0, "{}", text(&out));
    let v = json(&out);
    for kernel in ["plain", "tuned_copy"] {
        let launch = launch_of(&v, kernel);
        assert!(
            launch.contains("blockDim=(64") && launch.contains("gridDim=(4"),
            "{kernel}: {launch}"
        );
    }
    // Without the configuration, the annotation alone.
    let out = run(&["check", "--format", "json", "--no-config", KERNELS]);
    let v = json(&out);
    assert!(v["files"][0].get("config").is_none());
    let tuned = launch_of(&v, "tuned_copy");
    assert!(
        tuned.contains("blockDim=(16") && tuned.contains("gridDim=(2"),
        "{tuned}"
    );
}

#[test]
fn exit_codes_follow_severities() {
    let racy = "tests/data/config/severity/racy.cu";
    let cases: &[(&[&str], i32, &str)] = &[
        // Defaults: a definite race is an error, and warnings fail.
        (&["--no-config"], 1, "error[data-race]"),
        (
            &["--no-config", "--fail-on", "warning"],
            1,
            "error[data-race]",
        ),
        (&["--no-config", "--exit-zero"], 0, "error[data-race]"),
        // Races are warnings and only errors fail: exit 0, still shown.
        (
            &["--config", "tests/data/config/severity/warn-only.toml"],
            0,
            "warning[data-race]",
        ),
        // … unless the command line lowers the bar.
        (
            &[
                "--config",
                "tests/data/config/severity/warn-only.toml",
                "--fail-on",
                "warning",
            ],
            1,
            "warning[data-race]",
        ),
        // Only errors fail, and a definite race is one.
        (
            &["--config", "tests/data/config/severity/errors.toml"],
            1,
            "error[data-race]",
        ),
        // Races switched off: not shown, not failing.
        (
            &["--config", "tests/data/config/severity/off.toml"],
            0,
            "kernel `shift`: racy",
        ),
    ];
    for (flags, expected, shown) in cases {
        let mut args = vec!["check"];
        args.extend_from_slice(flags);
        args.push(racy);
        let out = run(&args);
        assert_eq!(code(&out), *expected, "{flags:?}: {}", text(&out));
        assert!(text(&out).contains(shown), "{flags:?}: {}", text(&out));
    }
    let out = run(&[
        "check",
        "--config",
        "tests/data/config/severity/off.toml",
        racy,
    ]);
    assert!(!text(&out).contains("[data-race]"), "{}", text(&out));
}

#[test]
fn suppressed_race_is_in_json_but_does_not_fail() {
    let out = run(&[
        "check",
        "--format",
        "json",
        "tests/data/config/suppress/allowed.cu",
    ]);
    assert_eq!(code(&out), 0, "{}", text(&out));
    let v = json(&out);
    let findings = v["findings"].as_array().unwrap();
    assert!(!findings.is_empty(), "{v}");
    for f in findings {
        assert_eq!(f["suppressed"], true, "{f}");
        assert_eq!(f["suppression"]["by"], "comment");
        assert_eq!(f["suppression"]["line"], 8);
        assert_eq!(f["suppression"]["reason"], "thread 0 may read either value");
    }
    assert_eq!(v["kernels"][0]["verdict"], "racy");
    assert_eq!(v["summary"]["findings"], 0);
    assert_eq!(v["summary"]["suppressed"], findings.len());
    // The human output leaves the finding out and counts it.
    let out = run(&["check", "tests/data/config/suppress/allowed.cu"]);
    assert_eq!(code(&out), 0, "{}", text(&out));
    assert!(!text(&out).contains("[data-race]"), "{}", text(&out));
    assert!(text(&out).contains("suppressed"), "{}", text(&out));
}

#[test]
fn unused_suppression_is_reported_and_fails_by_default() {
    let out = run(&["check", "tests/data/config/suppress/unused.cu"]);
    assert_eq!(code(&out), 1, "{}", text(&out));
    assert!(
        text(&out).contains("warning[unused-suppression]: unused suppression: `allow(data-race)` matches no finding on line 4"),
        "{}",
        text(&out)
    );
    let out = run(&[
        "check",
        "--format",
        "json",
        "--fail-on",
        "error",
        "tests/data/config/suppress/unused.cu",
    ]);
    assert_eq!(code(&out), 0, "{}", text(&out));
    let notice = &json(&out)["files"][0]["notices"][0];
    assert_eq!(notice["code"], "unused-suppression");
    assert_eq!(notice["line"], 4);
    assert_eq!(notice["severity"], "warning");
}

#[test]
fn bad_config_is_a_usage_error_with_the_place() {
    let out = run(&["check", "tests/data/config/bad/k.cu"]);
    assert_eq!(code(&out), 2, "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        err.contains("error[config]: invalid cudarace.toml: unknown field `blok-dim`"),
        "{err}"
    );
    assert!(
        err.contains("tests/data/config/bad/cudarace.toml:3:1"),
        "{err}"
    );
    assert!(err.contains("`block-dim`"), "what is allowed: {err}");
    assert!(out.stdout.is_empty());
    let out = run(&[
        "check",
        "--config",
        "tests/data/config/does-not-exist.toml",
        "tests/data/clean.cu",
    ]);
    assert_eq!(code(&out), 2, "{}", text(&out));
    assert!(text(&out).contains("cannot read the configuration file"));
}

#[test]
fn excluded_files_are_skipped_in_folders_but_not_when_named() {
    let out = run(&["check", "--format", "json", "tests/data/config/exclude"]);
    assert_eq!(code(&out), 0, "{}", text(&out));
    let v = json(&out);
    let files: Vec<&str> = v["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["file"].as_str().unwrap())
        .collect();
    assert_eq!(files, ["tests/data/config/exclude/clean.cu"]);
    let out = run(&["check", "tests/data/config/exclude/vendor/racy.cu"]);
    assert_eq!(code(&out), 1, "{}", text(&out));
}

#[test]
fn parallel_files_keep_their_order_and_no_progress_when_piped() {
    let out = run(&[
        "check",
        "--format",
        "json",
        "--file-jobs",
        "3",
        "--no-config",
        "tests/data/config",
    ]);
    let v = json(&out);
    let files: Vec<String> = v["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["file"].as_str().unwrap().to_string())
        .collect();
    let mut sorted = files.clone();
    sorted.sort();
    assert_eq!(files, sorted);
    assert!(files.len() >= 5, "{files:?}");
    // stderr is a pipe here: no progress bar drawn.
    assert!(
        !String::from_utf8_lossy(&out.stderr).contains("checking ["),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_user_library_file_describes_the_projects_own_functions_and_macros() {
    let dir = "tests/data/config/library/good/kernels.cu";
    let out = run(&["check", "--format", "json", dir]);
    assert_eq!(code(&out), 0, "{}", text(&out));
    let v = json(&out);
    for k in v["kernels"].as_array().unwrap() {
        assert_eq!(k["verdict"], "race-free", "{k}");
    }
    // Without the configuration, `block_exchange` is unknown: the race it would prevent is
    // possible and the kernel unknown; `FOR_EACH_THREAD` is not defined.
    let out = run(&[
        "check",
        "--no-config",
        "--format",
        "json",
        "tests/data/config/library/good/kernels.cu",
    ]);
    let v = json(&out);
    let exchange = v["kernels"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["name"] == "exchange")
        .unwrap();
    assert_eq!(exchange["verdict"], "unknown", "{v}");
}

#[test]
fn a_malformed_user_library_file_is_an_error_with_its_file_and_line() {
    let out = run(&["check", "tests/data/config/library/bad/kernels.cu"]);
    assert_eq!(code(&out), 2, "{}", text(&out));
    let t = text(&out);
    assert!(t.contains("broken.toml:7"), "{t}");
    assert!(t.contains("everywhere"), "{t}");
}
