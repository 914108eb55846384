//! `compile_commands.json`: the compiler flags of each translation unit of a project (what CMake
//! writes with `-DCMAKE_EXPORT_COMPILE_COMMANDS=ON`, Bear, or Meson).
//!
//! Each entry has a `file`, a `directory` (the compiler's working folder: relative paths in the
//! entry are relative to it; a relative `directory` is relative to the database's folder) and
//! either `arguments` (a list) or `command` (one shell-quoted string). Of the flags only those
//! that change what the front end sees are read, in gcc/clang and nvcc spellings:
//!
//! | meaning | spellings |
//! | --- | --- |
//! | include folder | `-I DIR`, `-IDIR`, `--include-path DIR`/`=DIR`, `-iquote DIR`, `-isystem DIR`, `--system-include DIR` |
//! | definition | `-D NAME[=V]`, `-DNAME`, `--define-macro NAME`/`=NAME` |
//! | undefinition | `-U NAME`, `--undefine-macro NAME` |
//! | pre-include | `-include FILE`, `--pre-include FILE` |
//! | language standard | `-std=c++17`, `--std c++17` (sets `__cplusplus`) |
//! | host compiler pass-through | `-Xcompiler A,B`, `--compiler-options A,B` (read like the other flags) |
//! | options file | `--options-file FILE`, `-optf FILE`, `@FILE` (its words read in place) |
//!
//! `-iquote`, `-I` and `-isystem` folders all become include folders (for `"…"` and `<…>` alike),
//! in the order written. Everything else on the command line is ignored.
//!
//! A header no entry compiles takes the flags of the entry nearest to it: one in its folder,
//! else below its parent folder, and so on up (preferring `.cu` files, then the shortest and
//! first path). A database that cannot be read or parsed is an error the caller reports as a
//! warning; a malformed entry is skipped with a warning.
//!
//! The nearest entry is looked for no higher than the project's root: the deepest folder that
//! holds every entry's file and `directory`. So a database made in another checkout (whose files
//! do not exist here) gives no flags, and [`CompileDb::stale_warning`] says why.

use cudarace_syntax::FrontendOptions;
use serde_json::Value;
use std::path::{Component, Path, PathBuf};

/// The file name looked for.
pub const DB_FILE_NAME: &str = "compile_commands.json";

/// Options files nested deeper than this are not read.
const MAX_OPTIONS_FILE_DEPTH: usize = 8;

/// The flags of one translation unit that matter to the front end.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Flags {
    pub include_dirs: Vec<PathBuf>,
    /// `-D`, in order (a later one wins); an empty value means `1`.
    pub defines: Vec<(String, String)>,
    /// `-U` not followed by a `-D` of the same name.
    pub undefines: Vec<String>,
    pub pre_includes: Vec<PathBuf>,
    /// `__cplusplus` of the `-std=` given (`201703L`), if one was.
    pub cplusplus: Option<&'static str>,
}

impl Flags {
    /// Adds these flags to `opts` after what is there (a later `-D` wins in the front end).
    pub fn apply(&self, opts: &mut FrontendOptions) {
        opts.include_dirs.extend(self.include_dirs.iter().cloned());
        if let Some(v) = self.cplusplus {
            opts.defines.push(("__cplusplus".into(), v.into()));
        }
        opts.defines.retain(|(n, _)| !self.undefines.contains(n));
        opts.defines.extend(self.defines.iter().cloned());
        opts.undefines.extend(self.undefines.iter().cloned());
        opts.pre_includes.extend(self.pre_includes.iter().cloned());
    }
}

/// One entry of the database.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Absolute (when the database's folder is), `.` and `..` removed.
    pub file: PathBuf,
    pub directory: PathBuf,
    pub flags: Flags,
    /// The file's canonical path when the database was read (what lookups compare).
    key: PathBuf,
}

/// A read database.
#[derive(Debug, Clone, Default)]
pub struct CompileDb {
    pub path: PathBuf,
    pub entries: Vec<Entry>,
    /// Problems with single entries or flags (the entry or flag was skipped), one line each.
    pub warnings: Vec<String>,
    /// The deepest folder holding every entry's file and directory (canonical where they exist).
    root: Option<PathBuf>,
}

/// How the flags of a file were found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Match {
    /// An entry compiles the file.
    Exact,
    /// No entry compiles it; the flags are those of the nearest entry.
    Nearest,
}

impl CompileDb {
    /// Reads the database at `path` (a `compile_commands.json`, or a folder holding one).
    pub fn load(path: &Path) -> Result<CompileDb, String> {
        let path = if path.is_dir() {
            path.join(DB_FILE_NAME)
        } else {
            path.to_path_buf()
        };
        let text = std::fs::read_to_string(&path).map_err(|e| {
            format!(
                "{}: cannot read the compilation database: {e}",
                path.display()
            )
        })?;
        CompileDb::parse(&path, &text)
    }

    /// Parses a database's text; `path` anchors a relative `directory`.
    pub fn parse(path: &Path, text: &str) -> Result<CompileDb, String> {
        let value: Value = serde_json::from_str(text).map_err(|e| {
            format!(
                "{}: not a compilation database (invalid JSON: {e})",
                path.display()
            )
        })?;
        let Value::Array(items) = value else {
            return Err(format!(
                "{}: not a compilation database (expected a JSON array of entries)",
                path.display()
            ));
        };
        let base = absolute(path.parent().unwrap_or(Path::new("")));
        let mut db = CompileDb {
            path: path.to_path_buf(),
            ..CompileDb::default()
        };
        for (i, item) in items.iter().enumerate() {
            match entry(item, &base, &mut db.warnings) {
                Ok(e) => db.entries.push(e),
                Err(why) => db.warnings.push(format!(
                    "{}: entry {}: {why}; skipped",
                    path.display(),
                    i + 1
                )),
            }
        }
        db.root = CompileDb::find_root(&db.entries);
        Ok(db)
    }

    /// The database that applies to `file`: `compile_commands.json` in its folder or the nearest
    /// folder above, or in `build/` or `out/` of one of those folders.
    pub fn discover(file: &Path) -> Option<PathBuf> {
        let file = absolute(file);
        let start = if file.is_dir() {
            file.as_path()
        } else {
            file.parent()?
        };
        start.ancestors().find_map(|dir| {
            [dir.join(DB_FILE_NAME), dir.join("build").join(DB_FILE_NAME)]
                .into_iter()
                .chain([dir.join("out").join(DB_FILE_NAME)])
                .find(|p| p.is_file())
        })
    }

    /// The entry whose flags `file` is checked with, and how it was found.
    pub fn lookup(&self, file: &Path) -> Option<(&Entry, Match)> {
        let key = same_file_key(&absolute(file));
        if let Some(e) = self.entries.iter().find(|e| e.key == key) {
            return Some((e, Match::Exact));
        }
        // Not above the project: the folder that holds every entry's file and directory.
        let root = self.root.as_ref()?;
        let folder = key.parent()?;
        folder
            .ancestors()
            .take_while(|dir| dir.starts_with(root))
            .find_map(|dir| {
                self.entries
                    .iter()
                    .filter_map(|e| {
                        let rel = e.key.strip_prefix(dir).ok()?;
                        Some((!is_cu(&e.file), rel.components().count(), &e.key, e))
                    })
                    .min_by(|a, b| (a.0, a.1, &a.2).cmp(&(b.0, b.1, &b.2)))
                    .map(|(_, _, _, e)| (e, Match::Nearest))
            })
    }

    /// The deepest folder holding every entry's file and directory.
    fn find_root(entries: &[Entry]) -> Option<PathBuf> {
        let mut paths = entries.iter().flat_map(|e| {
            [
                e.key.parent().map(Path::to_path_buf),
                Some(same_file_key(&e.directory)),
            ]
        });
        let mut root = paths.next()??;
        for p in paths.flatten() {
            while !p.starts_with(&root) {
                if !root.pop() {
                    return Some(root);
                }
            }
        }
        Some(root)
    }

    /// The `.cu` files the database compiles, each once, in the database's order.
    pub fn cuda_units(&self) -> Vec<PathBuf> {
        let mut seen = std::collections::HashSet::new();
        self.entries
            .iter()
            .filter(|e| is_cu(&e.file))
            .filter(|e| seen.insert(&e.key))
            .map(|e| e.file.clone())
            .collect()
    }

    /// When the database names files but none of them exists (it was made in another checkout
    /// or before the project moved): the warning to show.
    pub fn stale_warning(&self) -> Option<String> {
        if self.entries.is_empty() || self.entries.iter().any(|e| e.file.is_file()) {
            return None;
        }
        Some(format!(
            "{}: none of the {} files it names exists (made in another checkout or before the \
             project moved?); regenerate it, e.g. with cmake -DCMAKE_EXPORT_COMPILE_COMMANDS=ON",
            self.path.display(),
            self.entries.len()
        ))
    }
}

fn is_cu(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "cu")
}

/// The path made absolute against the current folder, `.` and `..` removed lexically.
pub fn absolute(path: &Path) -> PathBuf {
    let joined = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir()
            .map(|d| d.join(path))
            .unwrap_or_else(|_| path.to_path_buf())
    };
    normalize(&joined)
}

fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// What two paths of the same file have in common: the canonical path when the file exists
/// (symbolic links resolved), else the path as given.
fn same_file_key(path: &Path) -> PathBuf {
    if let Ok(p) = std::fs::canonicalize(path) {
        return p;
    }
    // A file that does not exist (yet): its folder's canonical path.
    match (path.parent().map(std::fs::canonicalize), path.file_name()) {
        (Some(Ok(dir)), Some(name)) => dir.join(name),
        _ => path.to_path_buf(),
    }
}

fn entry(item: &Value, base: &Path, warnings: &mut Vec<String>) -> Result<Entry, String> {
    let obj = item.as_object().ok_or("not a JSON object")?;
    let text = |key: &str| -> Result<Option<&str>, String> {
        match obj.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(_) => Err(format!("`{key}` is not a string")),
        }
    };
    let file = text("file")?.ok_or("no `file`")?;
    let directory = normalize(&base.join(text("directory")?.unwrap_or(".")));
    let words: Vec<String> = match (obj.get("arguments"), text("command")?) {
        (Some(Value::Array(args)), _) => args
            .iter()
            .map(|a| a.as_str().map(str::to_string))
            .collect::<Option<_>>()
            .ok_or("`arguments` holds something other than strings")?,
        (Some(_), _) => return Err("`arguments` is not a list of strings".into()),
        (None, Some(command)) => shell_words::split(command)
            .map_err(|e| format!("`command` cannot be split into words ({e})"))?,
        (None, None) => return Err("neither `arguments` nor `command`".into()),
    };
    let mut flags = Flags::default();
    // The first word is the compiler.
    read_flags(
        words.get(1..).unwrap_or(&[]),
        &directory,
        &mut flags,
        warnings,
        0,
    );
    let file = normalize(&directory.join(file));
    // A pre-include that is not there changes what the file means; said when the file itself
    // is there (a database made elsewhere is reported once, as stale).
    if file.is_file() {
        for p in flags.pre_includes.iter().filter(|p| !p.is_file()) {
            warnings.push(format!(
                "{}: `-include {}` not found; its macros are missing",
                file.display(),
                p.display()
            ));
        }
    }
    Ok(Entry {
        key: same_file_key(&file),
        file,
        directory,
        flags,
    })
}

/// The flags this reader knows.
#[derive(Clone, Copy)]
enum Kind {
    Include,
    Define,
    Undefine,
    PreInclude,
    Std,
    HostOptions,
    OptionsFile,
}

/// `(spelling, kind)`. A one-letter flag (`-I`) may be joined to its value (`-Iinc`); the
/// others take it as the next word or after `=` (`--include-path=inc`); `-isystem` and
/// `-iquote` also joined, as gcc allows.
const SPELLINGS: &[(&str, Kind)] = &[
    ("-I", Kind::Include),
    ("--include-path", Kind::Include),
    ("-iquote", Kind::Include),
    ("-isystem", Kind::Include),
    ("--system-include", Kind::Include),
    ("-D", Kind::Define),
    ("--define-macro", Kind::Define),
    ("-U", Kind::Undefine),
    ("--undefine-macro", Kind::Undefine),
    ("-include", Kind::PreInclude),
    ("--pre-include", Kind::PreInclude),
    ("-std", Kind::Std),
    ("--std", Kind::Std),
    ("-Xcompiler", Kind::HostOptions),
    ("--compiler-options", Kind::HostOptions),
    ("--options-file", Kind::OptionsFile),
    ("-optf", Kind::OptionsFile),
];

/// gcc flags that start like one of the above but are not (`-undef` is not `-U ndef`).
const NOT_FLAGS: &[&str] = &["-undef", "-include-pch"];

fn read_flags(
    words: &[String],
    directory: &Path,
    flags: &mut Flags,
    warnings: &mut Vec<String>,
    depth: usize,
) {
    let mut i = 0;
    while i < words.len() {
        let word = &words[i];
        i += 1;
        if let Some(file) = word.strip_prefix('@') {
            options_file(&directory.join(file), directory, flags, warnings, depth);
            continue;
        }
        if NOT_FLAGS.iter().any(|n| word.starts_with(n)) {
            continue;
        }
        let Some((kind, joined)) = SPELLINGS.iter().find_map(|(name, kind)| {
            if word == name {
                return Some((*kind, None));
            }
            let rest = word.strip_prefix(name)?;
            let short = name.len() == 2 || *name == "-isystem" || *name == "-iquote";
            if let Some(v) = rest.strip_prefix('=') {
                // `-D=X` would define `=X`: only long spellings take `=`.
                if name.len() != 2 {
                    return Some((*kind, Some(v.to_string())));
                }
            }
            (short && !rest.is_empty()).then(|| (*kind, Some(rest.to_string())))
        }) else {
            continue;
        };
        let value = match joined {
            Some(v) => v,
            None => match words.get(i) {
                Some(v) => {
                    i += 1;
                    v.clone()
                }
                None => {
                    warnings.push(format!("`{word}` at the end of a command has no value"));
                    continue;
                }
            },
        };
        match kind {
            Kind::Include => flags.include_dirs.push(normalize(&directory.join(&value))),
            Kind::Define => {
                let (name, v) = value.split_once('=').unwrap_or((&value, ""));
                flags.undefines.retain(|u| u != name);
                flags.defines.push((name.to_string(), v.to_string()));
            }
            Kind::Undefine => {
                flags.defines.retain(|(n, _)| n != &value);
                if !flags.undefines.contains(&value) {
                    flags.undefines.push(value);
                }
            }
            Kind::PreInclude => flags.pre_includes.push(normalize(&directory.join(&value))),
            Kind::Std => match cplusplus(&value) {
                Some(v) => flags.cplusplus = Some(v),
                None => {
                    if value.contains("++") {
                        warnings.push(format!("unknown language standard `{value}`; ignored"));
                    }
                }
            },
            Kind::HostOptions => {
                let host: Vec<String> = value
                    .split(',')
                    .filter(|w| !w.is_empty())
                    .map(str::to_string)
                    .collect();
                read_flags(&host, directory, flags, warnings, depth);
            }
            Kind::OptionsFile => {
                options_file(&directory.join(&value), directory, flags, warnings, depth)
            }
        }
    }
}

/// Reads the words of an options file (shell-quoted, any layout) as if they stood in place.
fn options_file(
    file: &Path,
    directory: &Path,
    flags: &mut Flags,
    warnings: &mut Vec<String>,
    depth: usize,
) {
    if depth >= MAX_OPTIONS_FILE_DEPTH {
        warnings.push(format!(
            "{}: options files nested too deep; not read",
            file.display()
        ));
        return;
    }
    let text = match std::fs::read_to_string(file) {
        Ok(t) => t,
        Err(e) => {
            warnings.push(format!(
                "{}: cannot read the options file: {e}; its flags are ignored",
                file.display()
            ));
            return;
        }
    };
    match shell_words::split(&text) {
        Ok(words) => read_flags(&words, directory, flags, warnings, depth + 1),
        Err(e) => warnings.push(format!(
            "{}: the options file cannot be split into words ({e}); ignored",
            file.display()
        )),
    }
}

/// `__cplusplus` of a C++ standard name.
fn cplusplus(std: &str) -> Option<&'static str> {
    let version = std
        .strip_prefix("c++")
        .or_else(|| std.strip_prefix("gnu++"))?;
    Some(match version {
        "98" | "03" => "199711L",
        "11" | "0x" => "201103L",
        "14" | "1y" => "201402L",
        "17" | "1z" => "201703L",
        "20" | "2a" => "202002L",
        "23" | "2b" => "202302L",
        _ => return None,
    })
}

#[cfg(test)]
#[path = "compile_db_tests.rs"]
mod tests;
