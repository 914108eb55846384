//! Renderers of [`FileReport`]s: compiler-style text ([`human`]), JSON ([`json`]) and SARIF 2.1.0
//! ([`sarif`]).
//!
//! Positions in every output are 1-based lines and 1-based **character** (Unicode scalar value)
//! columns. End positions are exclusive: `end_column` is the column just after the last character
//! of the range (as in SARIF and LSP).

mod human;
mod json;
mod sarif;

pub use human::{config_error, human, HumanOptions};
pub use json::{json, JSON_VERSION};
pub use sarif::{sarif, INFORMATION_URI};

use crate::report::FileReport;
use cudarace_ir::{FileId, LineIndex, Span, Witness};
use std::fmt::Write as _;

/// The name of the file a span of `report` lies in, as shown to users: the path as given.
pub(crate) fn file_name(report: &FileReport, file: FileId) -> String {
    let source_path = report
        .files
        .get(file.0 as usize)
        .and_then(|f| f.path.as_ref());
    match source_path {
        Some(p) => p.display().to_string(),
        None if file.0 == 0 => match &report.path {
            Some(p) => p.display().to_string(),
            None => "<input>".to_string(),
        },
        None => format!("<file {}>", file.0),
    }
}

/// The path of the checked file itself (file 0).
pub(crate) fn report_name(report: &FileReport) -> String {
    file_name(report, FileId(0))
}

/// A 1-based position range of a span.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Range1 {
    pub line: u32,
    pub column: u32,
    pub end_line: u32,
    pub end_column: u32,
}

/// Line tables of one report's files, built once per render.
pub(crate) struct Positions<'a> {
    report: &'a FileReport,
    indexes: Vec<LineIndex>,
}

impl<'a> Positions<'a> {
    pub fn new(report: &'a FileReport) -> Self {
        let indexes = report
            .files
            .iter()
            .map(|f| LineIndex::new(&f.text))
            .collect();
        Positions { report, indexes }
    }

    /// 1-based line and character column of a byte offset. A span pointing outside the known files
    /// (which would be a bug upstream) maps to 1:1 rather than failing the whole report.
    pub fn point(&self, file: FileId, offset: u32) -> (u32, u32) {
        let (Some(index), Some(source)) = (
            self.indexes.get(file.0 as usize),
            self.report.files.get(file.0 as usize),
        ) else {
            return (1, 1);
        };
        let lc = index.line_col(offset);
        let start = index.line_start(lc.line) as usize;
        let text: &str = &source.text;
        let end = (start + lc.col as usize).min(text.len());
        // Offsets inside a multi-byte character count that character as not yet reached.
        let column = match text.get(start..end) {
            Some(prefix) => prefix.chars().count(),
            None => text[start..]
                .char_indices()
                .take_while(|(i, c)| start + i + c.len_utf8() <= end)
                .count(),
        };
        (lc.line + 1, column as u32 + 1)
    }

    pub fn range(&self, span: Span) -> Range1 {
        let (line, column) = self.point(span.file, span.start);
        let (end_line, end_column) = self.point(span.file, span.end.max(span.start));
        Range1 {
            line,
            column,
            end_line,
            end_column,
        }
    }
}

pub(crate) fn dims(v: &[i64; 3]) -> String {
    format!("({},{},{})", v[0], v[1], v[2])
}

/// The witness as readable lines (no indentation, no trailing newline).
pub(crate) fn witness_lines(witness: &Witness, array: Option<&str>, is_race: bool) -> Vec<String> {
    let mut lines = Vec::new();
    for (name, thread) in [
        ("thread A", &witness.thread_a),
        ("thread B", &witness.thread_b),
    ] {
        let mut line = format!(
            "{name}: threadIdx={} blockIdx={}",
            dims(&thread.thread_idx),
            dims(&thread.block_idx)
        );
        if !thread.loop_vars.is_empty() {
            line.push_str(" loop");
            for (var, value) in &thread.loop_vars {
                let _ = write!(line, " {var}={value}");
            }
        }
        lines.push(line);
    }
    if is_race {
        let array = array.unwrap_or("?");
        let mut cell = format!("cell: {array}");
        for i in &witness.cell {
            let _ = write!(cell, "[{i}]");
        }
        lines.push(cell);
    }
    lines.push(format!(
        "launch: blockDim={} gridDim={}",
        dims(&witness.block_dim),
        dims(&witness.grid_dim)
    ));
    if !witness.params.is_empty() {
        let params: Vec<String> = witness
            .params
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        lines.push(format!("parameters: {}", params.join(" ")));
    }
    lines
}

#[cfg(test)]
pub(crate) mod testdata;

#[cfg(test)]
mod tests {
    use super::*;
    use cudarace_ir::SourceFile;
    use std::sync::Arc;

    fn report(text: &str) -> FileReport {
        FileReport {
            path: Some("k.cu".into()),
            files: vec![SourceFile {
                path: Some("k.cu".into()),
                text: Arc::from(text),
            }],
            ..FileReport::default()
        }
    }

    #[test]
    fn columns_count_characters_not_bytes() {
        // "é" is two bytes: the `x` after it is byte 6 of line 2 but character 5.
        let r = report("a\n/*é*/x = 1;\n");
        let p = Positions::new(&r);
        assert_eq!(p.point(FileId(0), 0), (1, 1));
        assert_eq!(p.point(FileId(0), 2), (2, 1));
        assert_eq!(p.point(FileId(0), 8), (2, 6));
        let range = p.range(Span::new(FileId(0), 8, 9));
        assert_eq!(
            range,
            Range1 {
                line: 2,
                column: 6,
                end_line: 2,
                end_column: 7
            }
        );
    }

    #[test]
    fn offset_inside_a_character_does_not_panic() {
        let r = report("é");
        let p = Positions::new(&r);
        assert_eq!(p.point(FileId(0), 1), (1, 1));
        assert_eq!(p.point(FileId(0), 2), (1, 2));
    }

    #[test]
    fn unknown_file_maps_to_start() {
        let r = report("x");
        let p = Positions::new(&r);
        assert_eq!(p.range(Span::new(FileId(7), 3, 4)).line, 1);
        assert_eq!(file_name(&r, FileId(7)), "<file 7>");
    }
}
