//! What a file declares that other files need, read without lowering a kernel: its files (the
//! file and the headers it includes), its kernels' names and places, its launch sites. This is
//! what a project index keeps of a file it does not check, and what the lowering starts from.
//!
//! The layers of the front end, each reading only those before it:
//! preprocess → parse → collect (the declaration tables) → launch sites → this index →
//! lowering.

use crate::collect::{collect, kernel_name, Tables};
use crate::parse::ParsedFile;
use crate::FrontendOptions;
use cudarace_ir::{LaunchConfig, LaunchSite, SourceFile, Span, SyntaxError};
use std::path::Path;
use std::sync::Arc;

/// A kernel a file defines (or a header it includes does).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexedKernel {
    pub name: String,
    /// The whole definition.
    pub span: Span,
    pub name_span: Span,
}

/// See the module documentation.
#[derive(Debug, Clone, Default)]
pub struct FileIndex {
    /// The file (index 0) and the files it includes: spans index into these.
    pub files: Vec<SourceFile>,
    pub kernels: Vec<IndexedKernel>,
    /// The launch sites written in the file and its headers.
    pub launch_sites: Vec<LaunchSite>,
    /// The launch a GPUVerify-style header line (`//--blockDim=…`) gives.
    pub header_launch: LaunchConfig,
    pub syntax_errors: Vec<SyntaxError>,
}

/// The index of a parsed file whose tables are `tables` (`text`: the file's own text).
pub(crate) fn index_of(parsed: &ParsedFile, tables: &Tables, text: &str) -> FileIndex {
    FileIndex {
        files: parsed.files.clone(),
        kernels: tables
            .kernels
            .iter()
            .map(|def| {
                let (name, name_span) = kernel_name(tables, def);
                IndexedKernel {
                    name,
                    span: Span::new(def.file, def.outer.start_byte(), def.outer.end_byte()),
                    name_span,
                }
            })
            .collect(),
        launch_sites: crate::launch::launch_sites(tables, &parsed.trees),
        header_launch: crate::annotations::header_launch(text),
        syntax_errors: parsed.syntax_errors.clone(),
    }
}

/// Reads the index of `text` (read from `path`).
pub(crate) fn index_file(path: Option<&Path>, text: &str, opts: &FrontendOptions) -> FileIndex {
    crate::on_big_stack(|| {
        let parsed = crate::parse::parse_file(path, text, None, opts);
        let tables = collect(&parsed.pre, &parsed.trees);
        index_of(&parsed, &tables, text)
    })
    .unwrap_or_else(|| FileIndex {
        files: vec![SourceFile {
            path: path.map(|p| p.to_path_buf()),
            text: Arc::from(text),
        }],
        syntax_errors: vec![SyntaxError {
            span: Span::default(),
            message: "internal error in the CUDA front end; the file was not indexed".into(),
        }],
        ..FileIndex::default()
    })
}
