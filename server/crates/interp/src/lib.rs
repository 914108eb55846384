//! An independent soundness oracle for cudarace.
//!
//! - [`exec`]: a concrete interpreter of [`cudarace_ir::Kernel`] for a tiny, fully concrete launch.
//!   It runs every thread of every block, barrier interval by barrier interval, logs every
//!   shared/global access and decides *exactly* (for that one execution) whether two threads race
//!   and whether the threads of a block reach different barriers. Whatever it does not fully
//!   understand (opaque statements, unknown values steering control flow or indices, undefined
//!   behaviour such as division by zero or out-of-bounds indices, budget exhaustion) makes the run
//!   [`exec::Outcome::Inconclusive`] instead of guessing.
//! - [`gen`]: a seeded, deterministic generator of random small CUDA kernels as source text.
//!
//! The differential test (`tests/differential.rs`) lowers generated kernels with the real front
//! end, runs them here and through the static checker with the same launch, and fails whenever the
//! interpreter observes a race or a divergent barrier that the checker calls race-free.

pub mod exec;
pub mod gen;
pub mod value;

pub use exec::{
    run, Budget, DivergenceObs, EventInfo, Launch, LoggedAccess, Outcome, RaceObs, RunReport,
    ThreadEnd,
};
pub use gen::{generate, generate_with, GenOptions, GeneratedKernel};
