//! tree-sitter-cuda parsing: one text, or every unit of a preprocessed file (the file and the
//! headers it includes, headers taken from the shared [`crate::HeaderCache`] when one is given).

use crate::headers::ParsedUnit;
use crate::preprocess::{preprocess, Preprocessed};
use crate::FrontendOptions;
use cudarace_ir::{FileId, SourceFile, SyntaxError};
use std::path::Path;
use std::sync::Arc;
use tree_sitter::Tree;

/// A file preprocessed and parsed: its units (index 0 is the file itself), their trees, and
/// what the reader is shown of them.
pub(crate) struct ParsedFile {
    pub pre: Preprocessed,
    /// One tree per unit, of the unit's (blanked, repaired) text.
    pub trees: Vec<Tree>,
    pub files: Vec<SourceFile>,
    /// Sorted by place.
    pub syntax_errors: Vec<SyntaxError>,
    /// Why a fallback class source of the library was not used (it does not parse).
    pub library_errors: Vec<String>,
}

/// Preprocesses and parses `text` (read from `path`). `tree`: the file's own tree when the
/// caller keeps one (reused when the file has no directive and parses without error).
pub(crate) fn parse_file(
    path: Option<&Path>,
    text: &str,
    tree: Option<&Tree>,
    opts: &FrontendOptions,
) -> ParsedFile {
    let mut pre = preprocess(path, text, opts);
    let mut files = Vec::new();
    let mut syntax_errors = Vec::new();
    let mut trees = Vec::new();
    let mut library_errors = Vec::new();
    for (i, u) in pre.units.iter_mut().enumerate() {
        if let Some(fb) = pre.fallbacks.iter().find(|f| f.file.0 as usize == i) {
            let mut parsed = crate::fallback_classes::parse(&u.clean);
            if let Some(e) = parsed.errors.first() {
                let line = u.clean[..(e.span.start as usize).min(u.clean.len())]
                    .matches('\n')
                    .count()
                    + 1;
                library_errors.push(format!(
                    "the fallback class source of library `{}` does not parse (line {line} of its `source`: {}); it is not used",
                    fb.library, e.message
                ));
                let blank: Arc<str> = Arc::from("");
                parsed = crate::fallback_classes::parse(&blank);
                u.text = blank.clone();
            }
            files.push(SourceFile {
                path: u.path.clone(),
                text: u.text.clone(),
            });
            u.clean = parsed.clean.clone();
            trees.push(parsed.tree.clone());
            continue;
        }
        files.push(SourceFile {
            path: u.path.clone(),
            text: u.text.clone(),
        });
        // Headers (every unit after the file's own) are parsed once per blanked text.
        let cache = opts.headers.as_ref().filter(|_| i > 0);
        let parsed = match cache.and_then(|c| c.parse(&u.clean)) {
            Some(p) => p,
            None => {
                let reuse = tree.filter(|_| i == 0);
                let p = Arc::new(parse_unit(&u.clean, reuse, u.text.as_ref()));
                if let Some(c) = cache {
                    c.count_parse();
                    c.keep_parse((*p).clone());
                }
                p
            }
        };
        u.clean = parsed.clean.clone();
        syntax_errors.extend(parsed.errors_of(u.file));
        trees.push(parsed.tree.clone());
    }
    syntax_errors.sort_by_key(|e| e.span);
    ParsedFile {
        pre,
        trees,
        files,
        syntax_errors,
        library_errors,
    }
}

/// Parses CUDA source. `old_tree` (already `.edit()`ed by the caller) enables incremental
/// reparsing.
pub fn parse(text: &str, old_tree: Option<&tree_sitter::Tree>) -> tree_sitter::Tree {
    let mut parser = tree_sitter::Parser::new();
    // Loading the grammar only fails on an ABI mismatch between tree-sitter and the grammar
    // crate, which the pinned versions rule out at build time (and the tests exercise).
    parser
        .set_language(&tree_sitter_cuda::LANGUAGE.into())
        .expect("tree-sitter-cuda grammar matches the tree-sitter ABI");
    // `parse` returns None only when a timeout or cancellation flag is set; we set neither.
    parser
        .parse(text, old_tree)
        .or_else(|| parser.parse(text, None))
        .expect("tree-sitter parses without timeout")
}

/// Parses a snippet wrapped in a function body (used for macro bodies and `#if` conditions).
pub(crate) fn parse_snippet_body(body: &str) -> (String, tree_sitter::Tree) {
    let text = format!("void __cudarace_snippet() {{\n{body}\n;}}\n");
    let tree = parse(&text, None);
    (text, tree)
}

/// Parses one unit's blanked text `clean` (`tree`: the file's own tree, reused when `clean` is
/// its unchanged text `text`), with the repairs; the errors are given as errors of file 0.
pub(crate) fn parse_unit(clean: &Arc<str>, tree: Option<&Tree>, text: &str) -> ParsedUnit {
    let source = clean.clone();
    let mut clean = clean.clone();
    let mut errors = Vec::new();
    let mut t = match tree {
        // A tree with errors is not reused: tree-sitter's error recovery after incremental
        // edits may differ from a fresh parse, and the IR must not depend on edit history.
        Some(t) if *clean == *text && !t.root_node().has_error() => t.clone(),
        _ => parse(&clean, None),
    };
    // Bounds checks read as template arguments (see comparisons.rs); a repair can reveal
    // another misread comparison further on, hence a few rounds.
    for _ in 0..4 {
        let Some(fixed) = crate::comparisons::repair(&t, &clean) else {
            break;
        };
        t = parse(&fixed, None);
        clean = Arc::from(fixed);
    }
    let file = FileId(0);
    if t.root_node().has_error() {
        // Keep broken host code from swallowing kernels (see repair.rs).
        let (fixed, mut errs) = crate::repair::repair(&clean, file);
        if let Some(fixed) = fixed {
            t = parse(&fixed, None);
            clean = Arc::from(fixed);
            errors.append(&mut errs);
        }
    }
    crate::errors::collect(&t, &clean, file, &mut errors);
    ParsedUnit {
        source,
        tree: t,
        clean,
        errors,
    }
}
