//! The CUDA front end: source text → [`cudarace_ir::FileIr`].
//!
//! Pipeline: [`preprocess`] scans directives (defines, `#if` families, `#include "…"`) and blanks
//! every directive line and every inactive conditional branch with spaces, so byte offsets are
//! kept and tree-sitter never sees a directive in the middle of a statement; [`parse`] parses the
//! blanked text with tree-sitter-cuda; [`collect`] gathers the file-level tables (functions,
//! `__device__` globals, enums, template instantiations); [`lower`] turns every `__global__`
//! function into an IR [`cudarace_ir::Kernel`] (macros expanded, device functions inlined,
//! pointer aliases resolved); [`launch`] reads launch sites and launch annotations.

pub use tree_sitter;

mod collect;
mod commas;
mod comparisons;
mod consteval;
mod errors;
#[doc(hidden)]
pub mod fuzzing;
mod headers;
pub mod launch;
mod lower;
mod parse;
mod preprocess;
pub mod pretty;
mod repair;
mod text;

#[cfg(test)]
mod tests;

use cudarace_ir as ir;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Options that change what the front end sees (like a compiler's `-I` and `-D`).
#[derive(Clone, Debug, Default)]
pub struct FrontendOptions {
    /// Directories searched for `#include "…"` after the including file's own directory, and
    /// the only directories searched for `#include <…>`.
    pub include_dirs: Vec<PathBuf>,
    /// `-D NAME=VALUE` definitions; an empty value means `1`.
    pub defines: Vec<(String, String)>,
    /// `-U NAME`: macros undefined after the definitions above (and nvcc's predefined ones).
    pub undefines: Vec<String>,
    /// `-include FILE`: files whose macros are read before the file (in order; their kernels and
    /// functions are not part of the file: only the preprocessor state carries over).
    pub pre_includes: Vec<PathBuf>,
    /// What is known about functions without a body and framework macros; `None` means the
    /// bundled library files alone.
    pub library: Option<Arc<cudarace_library::Library>>,
    /// Headers already read and parsed, shared between checks (`None`: every check reads its
    /// headers anew).
    pub headers: Option<Arc<HeaderCache>>,
}

pub use headers::HeaderCache;

impl FrontendOptions {
    pub fn library(&self) -> Arc<cudarace_library::Library> {
        self.library
            .clone()
            .unwrap_or_else(cudarace_library::Library::bundled)
    }
}

pub use parse::parse;

/// Lowers an already parsed file. `tree` must be the parse of `text` (the LSP passes its
/// incrementally maintained tree); it is reused when the file has no preprocessor directive.
pub fn lower(
    path: Option<&Path>,
    text: &str,
    tree: &tree_sitter::Tree,
    opts: &FrontendOptions,
) -> ir::FileIr {
    lower::lower_file(path, text, Some(tree), opts)
}

/// Parses and lowers `text`.
pub fn lower_source(path: Option<&Path>, text: &str, opts: &FrontendOptions) -> ir::FileIr {
    lower::lower_file(path, text, None, opts)
}
