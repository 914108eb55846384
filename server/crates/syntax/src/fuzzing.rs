//! Checks shared by the fuzz targets (`fuzz/` at the repository root, cargo-fuzz) and the
//! stable-Rust property tests (`tests/fuzz_regressions.rs`), so both exercise the same oracles.
//! Not part of the front end's API.

use crate::{lower, lower_source, parse, pretty, FrontendOptions};
use cudarace_ir::FileIr;
use tree_sitter::{InputEdit, Point};

/// One text edit: replace `delete` bytes at `pos` with `insert` (positions are clamped to the
/// text and moved back to a char boundary when applied).
#[derive(Clone, Debug)]
pub struct Edit {
    pub pos: usize,
    pub delete: usize,
    pub insert: String,
}

/// Splits fuzz input `BASE \0 OPS` into the base text and edits. Each op is 4 bytes
/// (`pos` as u16 little-endian, `delete`, `insert_len`) followed by `insert_len` bytes of text.
/// Input without a `\0` is all base text and no edits.
pub fn decode_edits(data: &[u8]) -> (String, Vec<Edit>) {
    let split = data.iter().position(|&b| b == 0).unwrap_or(data.len());
    let base = String::from_utf8_lossy(&data[..split]).into_owned();
    let mut ops = data.get(split + 1..).unwrap_or(&[]);
    let mut edits = Vec::new();
    while ops.len() >= 4 && edits.len() < 64 {
        let pos = u16::from_le_bytes([ops[0], ops[1]]) as usize;
        let delete = ops[2] as usize;
        let n = (ops[3] as usize).min(ops.len() - 4);
        let insert = String::from_utf8_lossy(&ops[4..4 + n]).into_owned();
        edits.push(Edit {
            pos,
            delete,
            insert,
        });
        ops = &ops[4 + n..];
    }
    (base, edits)
}

fn floor_char_boundary(s: &str, mut i: usize) -> usize {
    i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn point_at(s: &str, byte: usize) -> Point {
    let before = &s.as_bytes()[..byte];
    let row = before.iter().filter(|&&b| b == b'\n').count();
    let col = before.iter().rev().take_while(|&&b| b != b'\n').count();
    Point::new(row, col)
}

/// Applies `e` to `text` and returns the tree-sitter description of the change.
pub fn apply_edit(text: &mut String, e: &Edit) -> InputEdit {
    let start = floor_char_boundary(
        text,
        if text.is_empty() {
            0
        } else {
            e.pos % (text.len() + 1)
        },
    );
    let old_end = floor_char_boundary(text, start.saturating_add(e.delete));
    let start_position = point_at(text, start);
    let old_end_position = point_at(text, old_end);
    text.replace_range(start..old_end, &e.insert);
    let new_end = start + e.insert.len();
    InputEdit {
        start_byte: start,
        old_end_byte: old_end,
        new_end_byte: new_end,
        start_position,
        old_end_position,
        new_end_position: point_at(text, new_end),
    }
}

/// Everything observable in a lowered file except the file texts: kernels (pretty-printed and
/// in full, spans included), syntax errors, launch sites.
pub fn ir_fingerprint(f: &FileIr) -> String {
    let mut s = String::new();
    for k in &f.kernels {
        s.push_str(&pretty::kernel(k));
        s.push_str(&format!("{k:?}\n"));
    }
    s.push_str(&format!("{:?}\n{:?}\n", f.syntax_errors, f.launch_sites));
    s
}

/// Err when lowering `text` hit an internal error (a panic caught by the front end).
pub fn check_lower(text: &str) -> Result<FileIr, String> {
    let f = lower_source(None, text, &FrontendOptions::default());
    if let Some(e) = f
        .syntax_errors
        .iter()
        .find(|e| e.message.contains("internal error"))
    {
        return Err(e.message.clone());
    }
    for k in &f.kernels {
        if let Some(r) = k
            .unsupported
            .as_deref()
            .filter(|r| r.contains("internal error"))
        {
            return Err(format!("kernel {}: {r}", k.name));
        }
    }
    Ok(f)
}

/// The incremental-reparse oracle on fuzz input `BASE \0 OPS` (see [`decode_edits`]): after every
/// edit, the incrementally reparsed tree equals a full parse, and lowering with it equals
/// `lower_source`.
pub fn check_incremental(data: &[u8]) -> Result<(), String> {
    let (mut text, edits) = decode_edits(data);
    let opts = FrontendOptions::default();
    let mut tree = parse(&text, None);
    for (i, e) in edits.iter().enumerate() {
        let ie = apply_edit(&mut text, e);
        tree.edit(&ie);
        let inc = parse(&text, Some(&tree));
        let full = parse(&text, None);
        let (a, b) = (inc.root_node().to_sexp(), full.root_node().to_sexp());
        // tree-sitter does not promise the same error recovery after incremental edits as in a
        // fresh parse, and the front end never reuses a tree with errors (`parse_unit` parses
        // the text afresh): an incremental tree must agree with a fresh parse whenever it is
        // free of errors itself. (An edit that leaves `x out[i] = in[i];` read as an error
        // incrementally and as a declaration afresh is re-parsed, not a difference.)
        let reused = !inc.root_node().has_error();
        if a != b && reused {
            return Err(format!(
                "edit {i} ({e:?}): incremental tree differs from a full parse\n\
                 text:\n{text}\nincremental: {a}\nfull:        {b}"
            ));
        }
        let li = lower(None, &text, &inc, &opts);
        let lf = lower_source(None, &text, &opts);
        let (fi, ff) = (ir_fingerprint(&li), ir_fingerprint(&lf));
        if fi != ff {
            return Err(format!(
                "edit {i} ({e:?}): lowering the incremental tree differs from lower_source\n\
                 text:\n{text}\nincremental:\n{fi}\nfull:\n{ff}"
            ));
        }
        tree = inc;
    }
    Ok(())
}
