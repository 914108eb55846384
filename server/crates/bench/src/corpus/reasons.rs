//! The reasons of undecided kernels, split into parts and grouped into classes (names and
//! numbers taken out) so that the tables can count them.

use super::*;

/// Splits a compound reason at the `; ` that separate its parts (not inside parentheses or
/// backquotes, and not before a clause that continues the previous one: `…; it was treated as
/// no barrier`, `…; so …`).
pub(super) fn split_reason(reason: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut quoted, mut start) = (0i32, false, 0);
    let bytes = reason.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        match b {
            b'`' => quoted = !quoted,
            b'(' if !quoted => depth += 1,
            b')' if !quoted => depth -= 1,
            b';' if !quoted
                && depth <= 0
                && bytes.get(i + 1) == Some(&b' ')
                && !CONTINUATIONS.iter().any(|c| reason[i + 2..].starts_with(c)) =>
            {
                parts.push(reason[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(reason[start..].trim());
    parts.retain(|p| !p.is_empty());
    parts
}

/// One reason part with its names and numbers taken out: quoted text (`` `…` ``, `'…'`, `"…"`)
/// becomes `…`, a number (`64`, `0x1f`, `2.5f`) becomes `N`, runs of white space one space.
pub fn normalise_reason_part(part: &str) -> String {
    let chars: Vec<char> = part.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    let word = |c: char| c.is_alphanumeric() || c == '_';
    while i < chars.len() {
        let c = chars[i];
        let prev_word = i > 0 && word(chars[i - 1]);
        let closing = |q: char| chars[i + 1..].iter().position(|&d| d == q);
        match c {
            '`' | '"' | '\'' if !(c == '\'' && prev_word) => {
                if let Some(len) = closing(c) {
                    out.push(c);
                    out.push('…');
                    out.push(c);
                    i += len + 2;
                    continue;
                }
                out.push(c);
            }
            d if d.is_ascii_digit() && !prev_word => {
                while i < chars.len() && (word(chars[i]) || chars[i] == '.') {
                    // A sentence-ending dot is not part of the number.
                    if chars[i] == '.' && !chars.get(i + 1).is_some_and(|n| n.is_ascii_digit()) {
                        break;
                    }
                    i += 1;
                }
                out.push('N');
                continue;
            }
            w if w.is_whitespace() => {
                if !out.ends_with(' ') {
                    out.push(' ');
                }
            }
            other => out.push(other),
        }
        i += 1;
    }
    out.trim().to_string()
}

/// Words that start a clause continuing the one before a `; `.
pub(super) const CONTINUATIONS: [&str; 4] = ["it ", "so ", "which ", "that "];

/// The distinct classes of a (compound) reason, each with the first part of the reason that has
/// it.
pub fn reason_classes(reason: &str) -> BTreeMap<String, String> {
    let mut classes = BTreeMap::new();
    for part in split_reason(reason) {
        // One undecided item is the singular of a counted group ("a pair of accesses" and
        // "N pairs of accesses"): one class.
        let class = normalise_reason_part(part)
            .replace("decide a pair of accesses", "decide N pairs of accesses")
            .replace("the divergence of a ", "the divergence of N calls to ");
        if !class.is_empty() {
            classes.entry(class).or_insert_with(|| part.to_string());
        }
    }
    classes
}
