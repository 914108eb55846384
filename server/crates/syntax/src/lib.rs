//! The CUDA front end: source text → [`cudarace_ir::FileIr`].
//!
//! The layers, each reading only those above it in this list:
//! - [`annotations`]: launch sizes written in comments (the GPUVerify header line is also the
//!   file's own command line); `typenames`: what a type's name says (scalar and vector types,
//!   sizes, declarator shapes).
//! - `preprocess` scans directives (defines, `#if` families, `#include "…"`) and blanks every
//!   directive line and every inactive conditional branch with spaces, so byte offsets are kept
//!   and tree-sitter never sees a directive in the middle of a statement; headers come from the
//!   shared [`HeaderCache`] when one is given.
//! - `parse` parses every unit (the file and its headers) with tree-sitter-cuda.
//! - `collect` gathers the declaration tables (functions, classes, `__device__` globals, enums,
//!   template instantiations); `launch` reads the launch sites of the host code.
//! - [`FileIndex`] ([`index_source`]) is what a file declares for other files: its kernels,
//!   launch sites and headers, read without lowering (what a project index keeps).
//! - `lower` turns every `__global__` function into an IR [`cudarace_ir::Kernel`] (macros
//!   expanded, device functions inlined, pointer aliases resolved).

pub use tree_sitter;

pub mod annotations;
mod collect;
mod commas;
mod comparisons;
mod consteval;
mod errors;
mod fallback_classes;
mod file_index;
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
mod typenames;

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

pub use file_index::{FileIndex, IndexedKernel};
pub use parse::parse;

/// Reads what `text` declares for other files (its kernels, its launch sites, the headers it
/// includes) without lowering a kernel: what a project index keeps (see [`FileIndex`]).
pub fn index_source(path: Option<&Path>, text: &str, opts: &FrontendOptions) -> FileIndex {
    file_index::index_file(path, text, opts)
}

/// Runs `f` on a thread with a big stack (virtual memory only), so that on deeply nested input
/// the front end's depth guards, not the stack, are the limit; here when no thread can be
/// made (the guards keep the recursion moderate). `None` when `f` panicked.
pub(crate) fn on_big_stack<T: Send>(f: impl Fn() -> T + Sync) -> Option<T> {
    let spawned = std::thread::scope(|s| {
        match std::thread::Builder::new()
            .name("cudarace-front-end".into())
            .stack_size(512 << 20)
            .spawn_scoped(s, &f)
        {
            Ok(h) => Some(h.join().ok()),
            Err(_) => None,
        }
    });
    match spawned {
        Some(result) => result,
        None => std::panic::catch_unwind(std::panic::AssertUnwindSafe(&f)).ok(),
    }
}

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
