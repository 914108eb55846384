//! Modern C++ in kernels (issue 15), one file per idea.
//!
//! - `lambdas.rs`: lambdas and function objects (`operator()`) are inlined at their calls.
//! - `pointer_bumps.rs`: a pointer bumped once per iteration of a counted loop is tied to the
//!   loop counter.
//! - `type_params.rs`: template type parameters bound to classes of the file (`reduce<Add>`).

pub(crate) mod lambdas;
pub(crate) mod pointer_bumps;
pub(crate) mod type_params;
