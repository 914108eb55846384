//! `[[class]]` entries: C++ source of class templates (and their typedefs) from a framework
//! header that is often missing from the checked tree (OpenCV's `cv::cuda::PtrStep<T>`). The
//! front end parses the source as if it were included when the file uses one of the names and
//! neither the file nor its includes define any of them.
//!
//! The checks here need no C++ parser: the names are identifiers, each is defined by the source
//! (`struct NAME {`, `struct NAME :`, `class NAME …`, `typedef … NAME;`, `using NAME =`), the
//! source has no preprocessor directive and its brackets balance. That the source parses
//! without error is checked by the front end (a source that does not is not used, and the
//! kernel's report says so).

use crate::*;
use serde::Deserialize;
use std::collections::HashSet;
use std::ops::Range;
use toml::Spanned;

/// Fallback source of classes a framework header defines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClassSource {
    /// The names the source defines (classes and typedefs), in the entry's order.
    pub names: Vec<String>,
    pub library: Arc<str>,
    /// C++ source: class templates, their methods and typedefs (no directives).
    pub source: String,
}

/// `[[class]]`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawClass {
    names: Spanned<Vec<Spanned<String>>>,
    source: Spanned<String>,
}

/// The tokens of C++ text: identifiers, numbers and single punctuation characters, comments,
/// string and character literals left out.
pub fn tokens(text: &str) -> Vec<&str> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_whitespace() {
            i += 1;
        } else if text[i..].starts_with("//") {
            i = text[i..].find('\n').map_or(b.len(), |e| i + e);
        } else if text[i..].starts_with("/*") {
            i = text[i + 2..].find("*/").map_or(b.len(), |e| i + 2 + e + 2);
        } else if c == b'"' || c == b'\'' {
            i += 1;
            while i < b.len() && b[i] != c {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            i += 1;
        } else if c.is_ascii_alphanumeric() || c == b'_' {
            let s = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            out.push(&text[s..i]);
        } else {
            let w = text[i..].chars().next().map_or(1, |ch| ch.len_utf8());
            out.push(&text[i..i + w]);
            i += w;
        }
    }
    out
}

/// The names C++ text defines at any depth: classes with a body or a base clause
/// (`struct NAME {`, `class NAME : …`, `struct NAME final`), `typedef … NAME;` and
/// `using NAME = …`. Forward declarations (`struct NAME;`) define nothing.
pub fn defined_names(text: &str) -> HashSet<String> {
    let t = tokens(text);
    let mut out = HashSet::new();
    let mut typedef_at: Option<i32> = None;
    let mut depth = 0i32;
    for (i, w) in t.iter().enumerate() {
        match *w {
            "struct" | "class" | "union" => {
                if let (Some(n), Some(next)) = (t.get(i + 1), t.get(i + 2)) {
                    if is_ident(n) && matches!(*next, "{" | ":" | "final") {
                        out.insert(n.to_string());
                    }
                }
            }
            "using" => {
                if let (Some(n), Some(&"=")) = (t.get(i + 1), t.get(i + 2)) {
                    if is_ident(n) {
                        out.insert(n.to_string());
                    }
                }
            }
            "typedef" => typedef_at = Some(depth),
            "(" | "{" | "[" => depth += 1,
            ")" | "}" | "]" => depth -= 1,
            ";" if typedef_at == Some(depth) => {
                typedef_at = None;
                if let Some(n) = i.checked_sub(1).and_then(|p| t.get(p)) {
                    if is_ident(n) {
                        out.insert(n.to_string());
                    }
                }
            }
            _ => {}
        }
    }
    out
}

fn is_ident(s: &str) -> bool {
    s.chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
}

/// The `[[class]]` entries, checked.
pub(crate) fn classes_of(
    raw: Vec<Spanned<RawClass>>,
    library: &Arc<str>,
    error: &dyn Fn(Option<Range<usize>>, String) -> LibraryError,
) -> Result<Vec<ClassSource>, LibraryError> {
    let mut out = Vec::new();
    let mut seen = HashSet::new();
    for c in raw {
        let c = c.into_inner();
        let source_span = c.source.span();
        let source = c.source.into_inner();
        if source.trim().is_empty() {
            return Err(error(Some(source_span), "`source` is empty".into()));
        }
        if let Some(line) = source.lines().find(|l| l.trim_start().starts_with('#')) {
            return Err(error(
                Some(source_span),
                format!(
                    "a class source has no preprocessor directive (`{}`)",
                    line.trim()
                ),
            ));
        }
        if tokens(&source).contains(&"__global__") {
            return Err(error(
                Some(source_span),
                "a class source defines no kernel (`__global__`)".into(),
            ));
        }
        let mut stack = Vec::new();
        for w in tokens(&source) {
            match w {
                "(" | "{" | "[" => stack.push(w),
                ")" | "}" | "]" => {
                    let open = match w {
                        ")" => "(",
                        "}" => "{",
                        _ => "[",
                    };
                    if stack.pop() != Some(open) {
                        return Err(error(
                            Some(source_span),
                            format!("unbalanced `{w}` in the class source"),
                        ));
                    }
                }
                _ => {}
            }
        }
        if let Some(open) = stack.last() {
            return Err(error(
                Some(source_span),
                format!("unclosed `{open}` in the class source"),
            ));
        }
        let defined = defined_names(&source);
        let names = crate::file::entry_names(c.names, "class", &mut seen, error)?;
        if let Some(missing) = names.iter().find(|n| !defined.contains(*n)) {
            return Err(error(
                Some(source_span),
                format!("the class source does not define `{missing}` (`struct {missing} {{ … }}`, `typedef … {missing};` or `using {missing} = …`)"),
            ));
        }
        out.push(ClassSource {
            names,
            library: library.clone(),
            source,
        });
    }
    Ok(out)
}
