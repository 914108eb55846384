//! Formulas as plain Rust data ([`Term`], [`Query`]) and their solving with Z3 under a resource
//! limit and a deadline.
//!
//! Formulas are built without Z3 so that they are `Send + Hash`: the checker builds them on any
//! thread, caches answers by [`Query::key`], and the Z3 work happens on solver threads that each
//! own their Z3 context (z3 0.22 contexts are thread-local).

mod bits;
mod cases;
mod encode;
mod linear;
mod pool;
mod probes;
mod progress;
mod solve;
pub mod term;

pub use bits::fold_bits;
pub use pool::{exit_process, wait_for_solver_threads, CancelToken, SolverPool, GRACE};
pub use solve::solve;
pub use term::*;
