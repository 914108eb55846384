//! Launch sizes written in comments: GPUVerify header lines (`//--blockDim=[16,16]
//! --gridDim=64 -DN=32`, the file's own command line) and `// cudarace: blockDim=(32,8)
//! gridDim=(64)` annotations above a kernel. They read text only, so the preprocessor can take
//! the header line's definitions before anything is parsed.

use cudarace_ir::LaunchConfig;

/// Parses a dimension list: `[16,16]`, `(32,8)`, `64`, `{1, 2, 3}`.
fn parse_dims(s: &str) -> Option<[Option<u64>; 3]> {
    let s = s.trim();
    let inner = s.trim_start_matches(['[', '(', '{']);
    let end = inner
        .find([']', ')', '}'])
        .unwrap_or_else(|| inner.find(char::is_whitespace).unwrap_or(inner.len()));
    let inner = &inner[..end];
    let mut out = [None; 3];
    let mut n = 0;
    for (i, part) in inner.split(',').enumerate() {
        if i >= 3 {
            return None;
        }
        let v = crate::text::parse_int_literal(part.trim())?;
        if v <= 0 {
            return None;
        }
        out[i] = Some(v as u64);
        n += 1;
    }
    if n == 0 {
        return None;
    }
    // Unlisted dimensions of an explicit list are 1.
    for d in out.iter_mut().skip(n) {
        *d = Some(1);
    }
    Some(out)
}

/// Reads `blockDim=…` and `gridDim=…` (with or without leading `--`) from a line.
fn parse_config_words(line: &str, cfg: &mut LaunchConfig) -> bool {
    let mut found = false;
    for key in ["blockDim", "gridDim"] {
        let mut search = line;
        while let Some(i) = search.find(key) {
            let rest = &search[i + key.len()..];
            let rest_trim = rest.trim_start();
            if let Some(v) = rest_trim.strip_prefix('=') {
                if let Some(d) = parse_dims(v) {
                    if key == "blockDim" {
                        cfg.block_dim = d;
                    } else {
                        cfg.grid_dim = d;
                    }
                    found = true;
                }
            }
            search = rest;
        }
    }
    found
}

/// GPUVerify-style header lines: comment lines starting with `//--` or `// --` among the first
/// 200 lines; the text after the `//`.
fn header_lines(text: &str) -> impl Iterator<Item = &str> {
    text.lines().take(200).filter_map(|line| {
        let rest = line.trim_start().strip_prefix("//")?;
        rest.trim_start().starts_with("--").then_some(rest)
    })
}

/// The launch sizes of the GPUVerify-style header lines (`--blockDim=[16,16] --gridDim=64`).
pub fn header_launch(text: &str) -> LaunchConfig {
    let mut cfg = LaunchConfig::default();
    for rest in header_lines(text) {
        parse_config_words(rest, &mut cfg);
    }
    cfg
}

/// The macro definitions of the GPUVerify-style header lines, in order: `-DNAME=VALUE`,
/// `-DNAME` and `-D NAME[=VALUE]` (an empty value means 1, as on a compiler's command line).
pub(crate) fn header_defines(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for rest in header_lines(text) {
        let mut words = rest.split_whitespace();
        while let Some(w) = words.next() {
            let Some(def) = w.strip_prefix("-D") else {
                continue;
            };
            let def = if def.is_empty() {
                match words.next() {
                    Some(d) => d,
                    None => break,
                }
            } else {
                def
            };
            let (name, value) = def.split_once('=').unwrap_or((def, ""));
            let valid = name
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            if valid {
                out.push((name.to_string(), value.to_string()));
            }
        }
    }
    out
}

/// A `// cudarace: blockDim=(32,8) gridDim=(64)` comment in the comment block directly above
/// byte offset `start` (blank lines and other comment lines may sit in between).
pub fn annotation_above(text: &str, start: usize) -> LaunchConfig {
    let mut cfg = LaunchConfig::default();
    let before = text.get(..start.min(text.len())).unwrap_or("");
    // The kernel may start mid-line (after `template<…>` on the same line): skip that line part.
    let before = match before.rfind('\n') {
        Some(i) => &before[..i],
        None => return cfg,
    };
    for line in before.lines().rev().take(50) {
        let l = line.trim();
        if l.is_empty() {
            continue;
        }
        let Some(body) = l
            .strip_prefix("//")
            .or_else(|| l.strip_prefix("/*"))
            .or_else(|| l.strip_prefix('*'))
        else {
            break;
        };
        // Stop at the first `cudarace:` comment that sets a launch size; other `cudarace:`
        // comments (suppressions such as `allow(data-race) kernel`) may sit in between.
        if let Some(i) = body.find("cudarace:") {
            if parse_config_words(&body[i + "cudarace:".len()..], &mut cfg) {
                break;
            }
        }
    }
    cfg
}
