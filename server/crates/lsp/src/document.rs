//! An open document: its text, a line index that speaks LSP positions (UTF-16 code units), and
//! its tree-sitter tree, kept in step with incremental edits (`Tree::edit` + reparse).

use crate::pipeline::parse;
use crate::pipeline::tree_sitter::{InputEdit, Point, Tree};
use cudarace_ir::Span;
use std::sync::Arc;
use tower_lsp_server::ls_types::{Position, Range, TextDocumentContentChangeEvent};

/// Line starts of one text, to convert byte offsets to LSP positions and back.
///
/// Lines end at `\n`; a `\r` before it belongs to no line's content (so a position past the end
/// of a CRLF line lands before the `\r`).
#[derive(Debug, Clone)]
pub struct LineIndex16 {
    line_starts: Vec<usize>,
}

impl LineIndex16 {
    pub fn new(text: &str) -> Self {
        let mut line_starts = vec![0];
        line_starts.extend(
            text.bytes()
                .enumerate()
                .filter(|(_, b)| *b == b'\n')
                .map(|(i, _)| i + 1),
        );
        LineIndex16 { line_starts }
    }

    /// The byte range of a line's content (without its line break).
    fn line_content(&self, text: &str, line: usize) -> (usize, usize) {
        let start = self.line_starts[line];
        let mut end = match self.line_starts.get(line + 1) {
            Some(next) => next - 1,
            None => text.len(),
        };
        if end > start && text.as_bytes()[end - 1] == b'\r' && end < text.len() {
            end -= 1;
        }
        (start, end)
    }

    /// Byte offset of an LSP position. Out-of-range positions are clamped (past the last line →
    /// end of text; past a line's end → that line's end), and a position inside a surrogate pair
    /// rounds down to the character's start, so the result is always a char boundary.
    pub fn offset(&self, text: &str, pos: Position) -> usize {
        let line = pos.line as usize;
        if line >= self.line_starts.len() {
            return text.len();
        }
        let (start, end) = self.line_content(text, line);
        let mut units = 0u32;
        for (i, ch) in text[start..end].char_indices() {
            if units >= pos.character {
                return start + i;
            }
            units += ch.len_utf16() as u32;
            if units > pos.character {
                return start + i;
            }
        }
        end
    }

    /// The LSP position of a byte offset (clamped to the text, rounded down to a char boundary).
    pub fn position(&self, text: &str, offset: usize) -> Position {
        let mut offset = offset.min(text.len());
        while !text.is_char_boundary(offset) {
            offset -= 1;
        }
        let line = self.line_of(offset);
        let start = self.line_starts[line];
        let character = text[start..offset].encode_utf16().count() as u32;
        Position {
            line: line as u32,
            character,
        }
    }

    fn line_of(&self, offset: usize) -> usize {
        match self.line_starts.binary_search(&offset) {
            Ok(l) => l,
            Err(l) => l - 1,
        }
    }

    /// The tree-sitter point (row, byte column) of a byte offset.
    pub fn point(&self, offset: usize) -> Point {
        let line = self.line_of(offset);
        Point {
            row: line,
            column: offset - self.line_starts[line],
        }
    }

    pub fn range(&self, text: &str, start: usize, end: usize) -> Range {
        Range {
            start: self.position(text, start),
            end: self.position(text, end.max(start)),
        }
    }
}

/// One text change in bytes: `start..old_end` of the old text became `start..new_end`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ByteEdit {
    pub start: usize,
    pub old_end: usize,
    pub new_end: usize,
}

impl ByteEdit {
    /// Where an old offset is after the edit; offsets inside the replaced text go to `inside`.
    fn map(&self, offset: usize, inside: usize) -> usize {
        if offset <= self.start {
            offset
        } else if offset >= self.old_end {
            offset - self.old_end + self.new_end
        } else {
            inside
        }
    }

    /// Maps a span of the old text to the new text (a span overlapping the replaced text keeps
    /// what is left of it; one inside it collapses to the edit's start). Spans of other files
    /// (includes) are not edited and stay.
    pub fn map_span(&self, span: Span) -> Span {
        if span.file.0 != 0 {
            return span;
        }
        let start = self.map(span.start as usize, self.start);
        let end = self.map(span.end as usize, self.new_end).max(start);
        Span::new(span.file, start, end)
    }
}

/// An open document.
pub struct Document {
    pub version: i32,
    pub language_id: String,
    text: String,
    index: LineIndex16,
    tree: Tree,
}

impl Document {
    pub fn new(language_id: String, version: i32, text: String) -> Self {
        let tree = parse(&text, None);
        let index = LineIndex16::new(&text);
        Document {
            version,
            language_id,
            text,
            index,
            tree,
        }
    }

    pub fn text(&self) -> &str {
        &self.text
    }

    pub fn snapshot(&self) -> Arc<str> {
        Arc::from(self.text.as_str())
    }

    pub fn tree(&self) -> &Tree {
        &self.tree
    }

    pub fn index(&self) -> &LineIndex16 {
        &self.index
    }

    pub fn offset(&self, pos: Position) -> usize {
        self.index.offset(&self.text, pos)
    }

    pub fn position(&self, offset: usize) -> Position {
        self.index.position(&self.text, offset)
    }

    /// The LSP range of a span of this document.
    pub fn range(&self, span: Span) -> Range {
        self.index
            .range(&self.text, span.start as usize, span.end as usize)
    }

    /// Applies the changes of one `didChange` in order (each range refers to the text after the
    /// previous change, as LSP specifies), edits the tree accordingly and reparses once with the
    /// edited tree. Returns the byte edits, for mapping spans computed on the old text.
    pub fn apply_changes(
        &mut self,
        version: i32,
        changes: Vec<TextDocumentContentChangeEvent>,
    ) -> Vec<ByteEdit> {
        let mut edits = Vec::with_capacity(changes.len());
        let mut incremental = true;
        for change in changes {
            let (start, old_end) = match change.range {
                Some(range) => {
                    let a = self.offset(range.start);
                    let b = self.offset(range.end);
                    (a.min(b), a.max(b))
                }
                None => {
                    incremental = false;
                    (0, self.text.len())
                }
            };
            let start_position = self.index.point(start);
            let old_end_position = self.index.point(old_end);
            self.text.replace_range(start..old_end, &change.text);
            self.index = LineIndex16::new(&self.text);
            let new_end = start + change.text.len();
            let new_end_position = self.index.point(new_end);
            if incremental {
                self.tree.edit(&InputEdit {
                    start_byte: start,
                    old_end_byte: old_end,
                    new_end_byte: new_end,
                    start_position,
                    old_end_position,
                    new_end_position,
                });
            }
            edits.push(ByteEdit {
                start,
                old_end,
                new_end,
            });
        }
        self.tree = if incremental {
            parse(&self.text, Some(&self.tree))
        } else {
            parse(&self.text, None)
        };
        self.version = version;
        edits
    }
}

/// Whether the server handles a document: CUDA language ids or `.cu`/`.cuh` files.
pub fn is_cuda(language_id: &str, uri_path: &str) -> bool {
    matches!(language_id, "cuda-cpp" | "cuda")
        || uri_path.ends_with(".cu")
        || uri_path.ends_with(".cuh")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pos(line: u32, character: u32) -> Position {
        Position { line, character }
    }

    fn change(range: Option<(Position, Position)>, text: &str) -> TextDocumentContentChangeEvent {
        TextDocumentContentChangeEvent {
            range: range.map(|(start, end)| Range { start, end }),
            range_length: None,
            text: text.to_string(),
        }
    }

    #[test]
    fn utf16_columns_count_surrogate_pairs_as_two() {
        // "é" is 2 bytes / 1 unit, "😀" is 4 bytes / 2 units.
        let text = "aé😀b\nx";
        let idx = LineIndex16::new(text);
        assert_eq!(idx.position(text, 1), pos(0, 1));
        assert_eq!(idx.position(text, 3), pos(0, 2));
        assert_eq!(idx.position(text, 7), pos(0, 4));
        assert_eq!(idx.offset(text, pos(0, 4)), 7);
        assert_eq!(idx.offset(text, pos(0, 2)), 3);
        // Inside the surrogate pair: rounds down to the emoji's start.
        assert_eq!(idx.offset(text, pos(0, 3)), 3);
        assert_eq!(idx.offset(text, pos(1, 1)), 10);
    }

    #[test]
    fn out_of_range_positions_are_clamped() {
        let text = "ab\r\ncd";
        let idx = LineIndex16::new(text);
        assert_eq!(
            idx.offset(text, pos(0, 99)),
            2,
            "past a CRLF line's end: before the \\r"
        );
        assert_eq!(idx.offset(text, pos(7, 0)), text.len());
        assert_eq!(idx.position(text, 999), pos(1, 2));
    }

    #[test]
    fn incremental_edits_equal_fresh_text_and_tree() {
        let mut doc = Document::new(
            "cuda-cpp".into(),
            1,
            "__global__ void k(int *a) {\n  a[0] = 1;\n}\n".into(),
        );
        let edits = doc.apply_changes(
            2,
            vec![
                change(Some((pos(1, 2), pos(1, 6))), "a[threadIdx.x]"),
                change(Some((pos(0, 0), pos(0, 0))), "// ü😀\n"),
            ],
        );
        let expected = "// ü😀\n__global__ void k(int *a) {\n  a[threadIdx.x] = 1;\n}\n";
        assert_eq!(doc.text(), expected);
        assert_eq!(doc.version, 2);
        assert_eq!(edits.len(), 2);
        let fresh = parse(expected, None);
        assert_eq!(
            doc.tree().root_node().to_sexp(),
            fresh.root_node().to_sexp()
        );
        assert!(!doc.tree().root_node().has_error());
    }

    #[test]
    fn full_replacement_resets_the_tree() {
        let mut doc = Document::new("cuda".into(), 1, "int x;".into());
        doc.apply_changes(5, vec![change(None, "__global__ void k() {}\n")]);
        assert_eq!(doc.text(), "__global__ void k() {}\n");
        assert_eq!(doc.tree().root_node().end_byte(), doc.text().len());
    }

    #[test]
    fn spans_follow_edits() {
        let edit = ByteEdit {
            start: 10,
            old_end: 12,
            new_end: 15,
        };
        let f0 = cudarace_ir::FileId(0);
        assert_eq!(edit.map_span(Span::new(f0, 2, 5)), Span::new(f0, 2, 5));
        assert_eq!(edit.map_span(Span::new(f0, 12, 14)), Span::new(f0, 15, 17));
        assert_eq!(edit.map_span(Span::new(f0, 8, 11)), Span::new(f0, 8, 15));
        assert_eq!(edit.map_span(Span::new(f0, 10, 10)), Span::new(f0, 10, 10));
        let other = Span::new(cudarace_ir::FileId(1), 12, 14);
        assert_eq!(edit.map_span(other), other);
    }

    #[test]
    fn language_filter() {
        assert!(is_cuda("cuda-cpp", "/x/a.txt"));
        assert!(is_cuda("cpp", "/x/a.cuh"));
        assert!(!is_cuda("cpp", "/x/a.cpp"));
    }
}
