//! The compilation-database reader against the fixture databases in `tests/data/compile_db`.

use super::*;

fn data(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/compile_db")
        .join(rel)
}

fn defines(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect()
}

#[test]
fn relative_directory_is_relative_to_the_database() {
    let db = CompileDb::load(&data("relative/build")).expect("reads");
    assert!(db.warnings.is_empty(), "{:?}", db.warnings);
    assert_eq!(db.entries.len(), 2);
    let main = data("relative/src/main.cu");
    let (entry, how) = db.lookup(&main).expect("an entry");
    assert_eq!(how, Match::Exact);
    assert_eq!(entry.file, main);
    assert_eq!(entry.directory, data("relative/build"));
    assert_eq!(entry.flags.include_dirs, [data("relative/include")]);
    assert_eq!(entry.flags.defines, defines(&[("TILE", "16")]));
    // Only the .cu file is a CUDA translation unit.
    assert_eq!(db.cuda_units(), [main]);
    assert_eq!(db.stale_warning(), None);
}

#[test]
fn a_header_takes_the_flags_of_the_nearest_entry() {
    let db = CompileDb::load(&data("relative/build/compile_commands.json")).expect("reads");
    // include/kernel.cuh: no entry in include/, the nearest is below the parent folder; the
    // .cu entry is preferred over the .cpp one.
    let (entry, how) = db
        .lookup(&data("relative/include/kernel.cuh"))
        .expect("an entry");
    assert_eq!(how, Match::Nearest);
    assert_eq!(entry.file, data("relative/src/main.cu"));
    // One in the same folder as the .cpp gets the .cu (same folder, preferred kind).
    let (entry, _) = db
        .lookup(&data("relative/src/other.cuh"))
        .expect("an entry");
    assert_eq!(entry.file, data("relative/src/main.cu"));
    // A file outside the project (above the folder of every entry's file and directory) gets
    // none.
    assert_eq!(db.lookup(&data("nvcc/k.cu")), None);
}

#[test]
fn a_relative_path_to_the_file_looked_up_is_found() {
    let db = CompileDb::load(&data("relative/build")).expect("reads");
    let cwd = std::env::current_dir().expect("cwd");
    let rel = data("relative/src/main.cu");
    let rel = rel.strip_prefix(&cwd).unwrap_or(&rel);
    assert_eq!(db.lookup(rel).map(|(_, m)| m), Some(Match::Exact));
}

#[test]
fn quoted_command_strings_are_split_like_a_shell() {
    let db = CompileDb::load(&data("quoted.json")).expect("reads");
    assert!(db.warnings.is_empty(), "{:?}", db.warnings);
    let flags = &db.entries[0].flags;
    assert_eq!(
        flags.defines,
        defines(&[("MSG", "hello world"), ("GREETING", "a b")])
    );
    assert_eq!(
        flags.include_dirs,
        [
            PathBuf::from("/project/dir with space"),
            PathBuf::from("/opt/sys"),
            PathBuf::from("/project/quoted"),
        ]
    );
    assert_eq!(flags.cplusplus, Some("201402L"));
    // Its files do not exist here: the database is stale, and gives a file here no flags.
    assert_eq!(db.lookup(&data("relative/src/main.cu")), None);
    let warning = db.stale_warning().expect("stale");
    assert!(warning.contains("none of the 1 files"), "{warning}");
}

#[test]
fn nvcc_spellings_pass_through_and_options_files() {
    let db = CompileDb::load(&data("nvcc")).expect("reads");
    assert!(db.warnings.is_empty(), "{:?}", db.warnings);
    let dir = data("nvcc");
    let flags = &db.entries[0].flags;
    assert_eq!(
        flags.include_dirs,
        [
            dir.join("inc"),
            dir.join("inc2"),
            dir.join("sys"),
            dir.join("host"),
            dir.join("from options"),
            dir.join("more"),
        ]
    );
    assert_eq!(
        flags.defines,
        defines(&[
            ("A", "1"),
            ("B", ""),
            ("HOST", "2"),
            ("HOST2", ""),
            ("FROM_FILE", "3"),
            ("NESTED", ""),
        ])
    );
    assert_eq!(flags.undefines, ["GONE", "NEVER"]);
    assert_eq!(
        flags.pre_includes,
        [dir.join("config.h"), dir.join("other.h")]
    );
    assert_eq!(flags.cplusplus, Some("201703L"));
}

#[test]
fn flags_apply_after_the_options_there() {
    let db = CompileDb::load(&data("nvcc")).expect("reads");
    let mut opts = FrontendOptions {
        defines: defines(&[("GONE", "1"), ("KEPT", "1")]),
        ..Default::default()
    };
    db.entries[0].flags.apply(&mut opts);
    assert_eq!(opts.include_dirs.len(), 6);
    assert_eq!(opts.defines[0], ("KEPT".to_string(), "1".to_string()));
    assert!(opts.defines.iter().all(|(n, _)| n != "GONE"));
    assert!(opts
        .defines
        .contains(&("__cplusplus".to_string(), "201703L".to_string())));
    assert_eq!(opts.undefines, ["GONE", "NEVER"]);
    assert_eq!(opts.pre_includes.len(), 2);
}

#[test]
fn a_missing_options_file_is_a_warning() {
    let text = r#"[{"directory": "/nowhere", "file": "a.cu",
                    "arguments": ["nvcc", "--options-file", "gone.txt", "-DSTILL", "-I"]}]"#;
    let db = CompileDb::parse(Path::new("/x/compile_commands.json"), text).expect("parses");
    assert_eq!(db.entries[0].flags.defines, defines(&[("STILL", "")]));
    assert_eq!(db.warnings.len(), 2, "{:?}", db.warnings);
    assert!(db.warnings[0].contains("/nowhere/gone.txt: cannot read the options file"));
    assert!(db.warnings[1].contains("`-I` at the end of a command has no value"));
}

#[test]
fn missing_and_malformed_databases_are_errors_not_panics() {
    let missing = CompileDb::load(&data("none/compile_commands.json")).unwrap_err();
    assert!(
        missing.contains("cannot read the compilation database"),
        "{missing}"
    );
    let malformed = CompileDb::load(&data("malformed.json")).unwrap_err();
    assert!(malformed.contains("invalid JSON"), "{malformed}");
    let not_array = CompileDb::load(&data("not_array.json")).unwrap_err();
    assert!(not_array.contains("expected a JSON array"), "{not_array}");
}

#[test]
fn malformed_entries_are_skipped_with_a_warning() {
    let db = CompileDb::load(&data("bad_entries.json")).expect("reads");
    assert_eq!(db.entries.len(), 1);
    assert_eq!(db.entries[0].file, PathBuf::from("/p/ok.cu"));
    let w = db.warnings.join("\n");
    assert!(w.contains("entry 1: no `file`; skipped"), "{w}");
    assert!(
        w.contains("entry 2: `command` cannot be split into words"),
        "{w}"
    );
    assert!(
        w.contains("entry 3: `arguments` holds something other"),
        "{w}"
    );
    assert!(
        w.contains("entry 4: neither `arguments` nor `command`"),
        "{w}"
    );
    assert!(w.contains("entry 5: not a JSON object"), "{w}");
    assert!(
        w.contains("`-I` at the end of a command has no value"),
        "{w}"
    );
}

#[test]
fn discovery_walks_up_and_looks_in_build_and_out() {
    // tests/data/compile_db/relative/src/main.cu: relative/build/compile_commands.json.
    assert_eq!(
        CompileDb::discover(&data("relative/src/main.cu")),
        Some(data("relative/build/compile_commands.json"))
    );
    assert_eq!(
        CompileDb::discover(&data("nvcc/k.cu")),
        Some(data("nvcc/compile_commands.json"))
    );
    let dir = std::env::temp_dir().join(format!("cudarace-db-discover-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("out")).expect("temp dir");
    std::fs::create_dir_all(dir.join("a/b")).expect("temp dir");
    std::fs::write(dir.join("out").join(DB_FILE_NAME), "[]").expect("write");
    assert_eq!(
        CompileDb::discover(&dir.join("a/b/k.cu")),
        Some(dir.join("out").join(DB_FILE_NAME))
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn standards() {
    assert_eq!(cplusplus("c++11"), Some("201103L"));
    assert_eq!(cplusplus("gnu++20"), Some("202002L"));
    assert_eq!(cplusplus("c11"), None);
    assert_eq!(cplusplus("c++42"), None);
}

#[test]
fn a_missing_pre_include_of_an_existing_file_is_a_warning() {
    let dir = data("nvcc");
    let text = format!(
        r#"[{{"directory": "{}", "file": "flags.txt", "arguments": ["nvcc", "-include", "gone.h", "-include", "more.txt"]}},
            {{"directory": "/nowhere", "file": "a.cu", "arguments": ["nvcc", "-include", "gone.h"]}}]"#,
        dir.display()
    );
    let db = CompileDb::parse(&dir.join(DB_FILE_NAME), &text).expect("parses");
    assert_eq!(db.warnings.len(), 1, "{:?}", db.warnings);
    assert!(
        db.warnings[0].ends_with(
            "`-include {}` not found; its macros are missing"
                .replace("{}", &dir.join("gone.h").display().to_string())
                .as_str()
        ),
        "{:?}",
        db.warnings
    );
    assert_eq!(db.entries[0].flags.pre_includes.len(), 2);
}
