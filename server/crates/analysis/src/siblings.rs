//! Launch sites from the files beside a checked file, when no compilation database covers it.
//!
//! A program's kernel is often defined in one `.cu` file and launched from another, through a
//! header that declares it (`__global__ void sum(float *, int);`), or from a `.cu` file that
//! includes the kernel's file. Without a database nothing says which files belong together; the
//! `.cu` files of the same folder are the nearest guess, for the kernels the checked file itself
//! defines (a kernel of an included header keeps the sites the file sees: the siblings may be
//! other programs that share the header). Only those whose text names one of the
//! checked file's kernels and holds a `<<<` are read by the front end (at most
//! [`MAX_SIBLINGS`] per file), and each folder is listed and read once per run.

use crate::launch_index::{unit_sites, LaunchIndex, UnitSites};
use crate::Options;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// Siblings read by the front end for one checked file, at most.
const MAX_SIBLINGS: usize = 16;
/// `.cu` files of one folder looked at, at most (the others are ignored).
const MAX_FOLDER_FILES: usize = 256;

/// What was read of each folder and sibling so far.
#[derive(Default)]
pub struct Siblings {
    /// Each folder's `.cu` files and their texts (those that could be read, not too large).
    folders: HashMap<PathBuf, Vec<(PathBuf, String)>>,
    /// The launch sites of each sibling read by the front end.
    sites: HashMap<PathBuf, UnitSites>,
}

impl Siblings {
    /// The launch index of the siblings of `path` that launch one of its kernels; `None` when
    /// none does.
    pub fn index(&mut self, path: &Path, opts: &Options) -> Option<LaunchIndex> {
        let max = opts.budget.max_file_bytes;
        let text = crate::read_source(path, max).ok()?;
        let names = kernel_names(&text);
        if names.is_empty() {
            return None;
        }
        let folder = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let files = self
            .folders
            .entry(folder.clone())
            .or_insert_with(|| read_folder(&folder, max));
        // The folder's files are listed from `path`'s own folder: the name tells it apart.
        let launching: Vec<PathBuf> = files
            .iter()
            .filter(|(p, _)| p.file_name() != path.file_name())
            .filter(|(_, t)| t.contains("<<<") && names.iter().any(|n| t.contains(n.as_str())))
            .map(|(p, _)| p.clone())
            .take(MAX_SIBLINGS)
            .collect();
        if launching.is_empty() {
            return None;
        }
        let units: Vec<UnitSites> = launching
            .into_iter()
            .map(|p| {
                self.sites
                    .entry(p.clone())
                    .or_insert_with(|| unit_sites(&p, &opts.frontend, max))
                    .clone()
            })
            .collect();
        let mut index = LaunchIndex::from_units(units);
        index.retain_defined_in(path);
        tracing::debug!(path = %path.display(), sites = index.len(), "launch sites of siblings");
        (!index.is_empty()).then_some(index)
    }
}

/// The `.cu` files of a folder, sorted, with their texts.
fn read_folder(folder: &Path, max_bytes: u64) -> Vec<(PathBuf, String)> {
    let Ok(entries) = std::fs::read_dir(folder) else {
        return vec![];
    };
    let mut paths: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "cu") && p.is_file())
        .collect();
    paths.sort();
    paths.truncate(MAX_FOLDER_FILES);
    paths
        .into_iter()
        .filter_map(|p| {
            let text = crate::read_source(&p, max_bytes).ok()?;
            Some((p, text))
        })
        .collect()
}

/// The names of the kernels a text defines or declares, by their spelling: the identifier
/// before the first `(` after each `__global__` (past `__launch_bounds__(…)` and the like).
fn kernel_names(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for (i, _) in text.match_indices("__global__") {
        let head: String = text[i + "__global__".len()..].chars().take(400).collect();
        let mut ident = String::new();
        let mut last = String::new();
        let mut chars = head.chars().peekable();
        while let Some(c) = chars.next() {
            if c.is_ascii_alphanumeric() || c == '_' {
                ident.push(c);
                continue;
            }
            if !ident.is_empty() {
                last = std::mem::take(&mut ident);
            }
            if c == '(' {
                if matches!(
                    last.as_str(),
                    "__launch_bounds__" | "__attribute__" | "__declspec" | "alignas"
                ) {
                    // Skip the attribute's parenthesized arguments.
                    let mut depth = 1;
                    for d in chars.by_ref() {
                        match d {
                            '(' => depth += 1,
                            ')' => depth -= 1,
                            _ => {}
                        }
                        if depth == 0 {
                            break;
                        }
                    }
                    last.clear();
                    continue;
                }
                break;
            }
            if c == ';' || c == '{' {
                last.clear();
                break;
            }
        }
        let starts_well = last
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
        if starts_well && !out.contains(&last) {
            out.push(last);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_names_by_their_spelling() {
        let text = "__global__ void a(int *p) {}\n\
                    template <int N> __global__ void __launch_bounds__(N * 2) b(float *q);\n\
                    extern \"C\" __global__ void\nc (int n) {}\n__global__ int;";
        assert_eq!(kernel_names(text), vec!["a", "b", "c"]);
    }
}
