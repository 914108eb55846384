//! Error isolation at file level. tree-sitter's error recovery can swallow a whole kernel into an
//! ERROR node when host code before it is broken. When a file has syntax errors, it is split
//! into top-level items by brace balance; every item is parsed alone, and items that do not parse
//! and declare no device code are blanked (spaces, line breaks kept) before the file is parsed
//! again. Offsets never change, so spans stay valid.

use cudarace_ir::{FileId, Span, SyntaxError};

/// Top-level item byte ranges of `text` (comments and strings skipped).
fn segments(text: &str) -> Vec<(usize, usize)> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut depth: i64 = 0;
    let mut start = 0usize;
    let mut i = 0usize;
    while i < b.len() {
        let c = b[i];
        match c {
            b'/' if b.get(i + 1) == Some(&b'/') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
                continue;
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                i += 2;
                while i + 1 < b.len() && !(b[i] == b'*' && b[i + 1] == b'/') {
                    i += 1;
                }
                i += 2;
                continue;
            }
            b'"' | b'\'' => {
                i += 1;
                while i < b.len() && b[i] != c && b[i] != b'\n' {
                    if b[i] == b'\\' {
                        i += 1;
                    }
                    i += 1;
                }
            }
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth <= 0 {
                    depth = 0;
                    out.push((start, i + 1));
                    start = i + 1;
                }
            }
            b';' if depth == 0 => {
                out.push((start, i + 1));
                start = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
    if start < b.len() {
        out.push((start, b.len()));
    }
    out
}

fn is_device_code(s: &str) -> bool {
    s.contains("__global__") || s.contains("__device__") || s.contains("__shared__")
}

/// How many leading identifiers a declaration may carry as unknown macros.
const MAX_LEADING_MACROS: usize = 3;

/// The length of the prefix of `seg` (an item that does not parse) made of up to
/// [`MAX_LEADING_MACROS`] identifiers, each followed by white space, whose blanking makes the
/// item parse without an error: the unknown macros before a declaration. `None` when there is
/// no such prefix.
fn leading_macros(parser: &mut tree_sitter::Parser, seg: &str) -> Option<usize> {
    let b = seg.as_bytes();
    let mut at = 0;
    for _ in 0..MAX_LEADING_MACROS {
        while at < b.len() && b[at].is_ascii_whitespace() {
            at += 1;
        }
        let start = at;
        if !b
            .get(at)
            .is_some_and(|c| c.is_ascii_alphabetic() || *c == b'_')
        {
            return None;
        }
        while at < b.len() && (b[at].is_ascii_alphanumeric() || b[at] == b'_') {
            at += 1;
        }
        let word = seg.get(start..at)?;
        // Only a name the grammar does not know: a keyword or a built-in type is the
        // declaration itself.
        if KEYWORDS.contains(&word) || !b.get(at).is_some_and(|c| c.is_ascii_whitespace()) {
            return None;
        }
        let mut blanked = b.to_vec();
        for c in &mut blanked[..at] {
            if *c != b'\n' {
                *c = b' ';
            }
        }
        let text = String::from_utf8(blanked).ok()?;
        let tree = parser.parse(&text, None)?;
        if !tree.root_node().has_error() {
            return Some(at);
        }
    }
    None
}

/// Words that begin declarations themselves (never taken for an unknown macro).
const KEYWORDS: &[&str] = &[
    "auto",
    "bool",
    "char",
    "class",
    "const",
    "constexpr",
    "double",
    "enum",
    "extern",
    "float",
    "inline",
    "int",
    "long",
    "namespace",
    "short",
    "signed",
    "static",
    "struct",
    "template",
    "typedef",
    "typename",
    "union",
    "unsigned",
    "using",
    "void",
    "volatile",
    "__global__",
    "__device__",
    "__host__",
    "__shared__",
    "__constant__",
    "__forceinline__",
    "size_t",
];

/// Returns the repaired text (None when nothing was blanked) and the syntax errors of the
/// blanked items (they are not in the repaired tree any more).
pub(crate) fn repair(text: &str, file: FileId) -> (Option<String>, Vec<SyntaxError>) {
    let mut parser = tree_sitter::Parser::new();
    if parser
        .set_language(&tree_sitter_cuda::LANGUAGE.into())
        .is_err()
    {
        return (None, vec![]);
    }
    let mut buf = text.as_bytes().to_vec();
    let mut errors = Vec::new();
    let mut changed = false;
    for (s, e) in segments(text) {
        let Some(seg) = text.get(s..e) else { continue };
        if seg.trim().is_empty() {
            continue;
        }
        let Some(tree) = parser.parse(seg, None) else {
            continue;
        };
        if !tree.root_node().has_error() {
            continue;
        }
        // An unknown macro before a declaration (`MY_API int run(int *e) { … }`, an export
        // attribute from a header that is not here): blanking it alone mends the item.
        if let Some(prefix) = leading_macros(&mut parser, seg) {
            for b in &mut buf[s..s + prefix] {
                if *b != b'\n' {
                    *b = b' ';
                }
            }
            changed = true;
            continue;
        }
        if is_device_code(seg) {
            continue;
        }
        let mut errs = Vec::new();
        crate::errors::collect(&tree, seg, file, &mut errs);
        for mut er in errs {
            er.span = Span::new(file, er.span.start as usize + s, er.span.end as usize + s);
            errors.push(er);
        }
        for b in &mut buf[s..e] {
            if *b != b'\n' {
                *b = b' ';
            }
        }
        changed = true;
    }
    if !changed {
        return (None, errors);
    }
    match String::from_utf8(buf) {
        Ok(s) => (Some(s), errors),
        Err(_) => (None, vec![]),
    }
}
