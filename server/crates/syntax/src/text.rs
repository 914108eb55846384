//! Small text utilities shared by the preprocessor and the lowering.

/// Comment state carried from one line to the next.
#[derive(Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct LexState {
    pub in_block_comment: bool,
}

/// Scans one line, updating the block-comment state; returns the line with comments replaced by
/// spaces (strings are kept). Used to find directives and to clean macro bodies.
pub(crate) fn strip_comments(line: &str, st: &mut LexState) -> String {
    let b = line.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    let mut in_str: Option<u8> = None;
    while i < b.len() {
        let c = b[i];
        if st.in_block_comment {
            if c == b'*' && b.get(i + 1) == Some(&b'/') {
                st.in_block_comment = false;
                out.extend_from_slice(b"  ");
                i += 2;
            } else {
                out.push(if c == b'\n' { b'\n' } else { b' ' });
                i += 1;
            }
            continue;
        }
        if let Some(q) = in_str {
            out.push(c);
            if c == b'\\' && i + 1 < b.len() {
                out.push(b[i + 1]);
                i += 2;
                continue;
            }
            if c == q {
                in_str = None;
            }
            i += 1;
            continue;
        }
        match c {
            b'"' | b'\'' => {
                in_str = Some(c);
                out.push(c);
                i += 1;
            }
            b'/' if b.get(i + 1) == Some(&b'/') => {
                out.extend(std::iter::repeat_n(b' ', b.len() - i));
                break;
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                st.in_block_comment = true;
                out.extend_from_slice(b"  ");
                i += 2;
            }
            _ => {
                out.push(c);
                i += 1;
            }
        }
    }
    // Only ASCII bytes were replaced by ASCII bytes, so UTF-8 stays valid.
    String::from_utf8(out).unwrap_or_default()
}

pub(crate) fn is_ident_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_'
}

pub(crate) fn is_ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Splits text into identifier / number / other tokens, keeping everything (for macro
/// substitution): `(is_ident, text)`.
pub(crate) fn tokens(s: &str) -> Vec<(bool, &str)> {
    let mut out = Vec::new();
    let mut it = s.char_indices().peekable();
    while let Some((i, c)) = it.next() {
        if is_ident_start(c) {
            let mut end = i + c.len_utf8();
            while let Some(&(j, d)) = it.peek() {
                if is_ident_char(d) {
                    end = j + d.len_utf8();
                    it.next();
                } else {
                    break;
                }
            }
            out.push((true, &s[i..end]));
        } else if c.is_ascii_digit() {
            let mut end = i + 1;
            while let Some(&(j, d)) = it.peek() {
                if is_ident_char(d) || d == '.' {
                    end = j + d.len_utf8();
                    it.next();
                } else {
                    break;
                }
            }
            out.push((false, &s[i..end]));
        } else if c == '"' || c == '\'' {
            let mut end = i + 1;
            let mut esc = false;
            for (j, d) in it.by_ref() {
                end = j + d.len_utf8();
                if esc {
                    esc = false;
                } else if d == '\\' {
                    esc = true;
                } else if d == c {
                    break;
                }
            }
            out.push((false, &s[i..end]));
        } else {
            out.push((false, &s[i..i + c.len_utf8()]));
        }
    }
    out
}

/// Parses a C integer literal (`0x1F`, `017`, `0b101`, `10u`, `1'000`, `256UL`).
pub(crate) fn parse_int_literal(s: &str) -> Option<i64> {
    if let Some(rest) = s.trim().strip_prefix('-') {
        return parse_int_literal(rest).map(|v| v.wrapping_neg());
    }
    let t: String = s.chars().filter(|&c| c != '\'').collect();
    let t = t.trim_end_matches(['u', 'U', 'l', 'L', 'z', 'Z']);
    let (digits, radix) = if let Some(h) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        (h, 16)
    } else if let Some(b) = t.strip_prefix("0b").or_else(|| t.strip_prefix("0B")) {
        (b, 2)
    } else if t.len() > 1 && t.starts_with('0') {
        (&t[1..], 8)
    } else {
        (t, 10)
    };
    if digits.is_empty() {
        return if t == "0" { Some(0) } else { None };
    }
    u64::from_str_radix(digits, radix).ok().map(|v| v as i64)
}

/// Parses a floating literal (`1.0f`, `2e-3`, `.5`).
pub(crate) fn parse_float_literal(s: &str) -> Option<f64> {
    let t = s.trim_end_matches(['f', 'F', 'l', 'L']);
    t.parse::<f64>().ok()
}
