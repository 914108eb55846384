//! Modern C++ in kernels (issue 15), one file per idea.
//!
//! - `lambdas.rs`: lambdas and function objects (`operator()`) are inlined at their calls.

pub(crate) mod lambdas;
