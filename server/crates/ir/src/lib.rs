//! The kernel IR: what the front end (`cudarace-syntax`) produces and the checker
//! (`cudarace-check`) consumes, plus the findings the checker reports.
//!
//! The IR is a structured, imperative program per kernel, after macro expansion, `__device__`
//! inlining and pointer-alias resolution. Every memory access is an explicit [`Stmt::Access`],
//! in evaluation order; locals keep their assignments (the checker symbolically executes them).
//! Everything the front end could not model is explicit too ([`Expr::Unknown`], [`Stmt::Opaque`]),
//! so that the checker can never call a kernel race-free by ignoring it.

pub mod finding;
pub mod kernel;
pub mod span;

pub use finding::*;
pub use kernel::*;
pub use span::*;
