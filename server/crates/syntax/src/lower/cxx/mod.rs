//! Modern C++ in kernels (issue 15), one file per idea.
//!
//! - `lambdas.rs`: lambdas and function objects (`operator()`) are inlined at their calls.
//! - `vectors.rs`: vector types (`float4`) as consecutive cells, and pointer casts to wider
//!   elements (`reinterpret_cast<float4 *>(p)[i]`) as accesses to the cells they cover.
//! - `pointer_bumps.rs`: a pointer bumped once per iteration of a counted loop is tied to the
//!   loop counter.
//! - `choice.rs`: a pointer chosen with `?:` between two arrays accesses the one chosen.
//! - `collectives.rs`: library collective classes (CUB's `BlockReduce(temp).Sum(x)`) as
//!   what they do to their shared storage: write own slot, barrier, read every slot.
//! - `temporaries.rs`: a reference parameter bound to a temporary (`f(a - b)`, `f(P(1, 2))`)
//!   is a by-value parameter: the temporary is the calling thread's own.
//! - `launch_lambdas.rs`: a lambda a launch passes to a kernel template (`apply<<<g, b>>>(n,
//!   [=] __device__ (int i) { … })`) is the kernel's callable parameter, its captures the
//!   host's values.
//! - `overloads.rs`: a call to overloads the front end cannot tell apart inlines each in a
//!   branch of its own, one taken (the same for every thread).
//! - `fn_refs.rs`: device functions passed by name (or taken from a `const` table of them)
//!   and called through a parameter or variable.
//! - `ranges.rs`: a range-based `for` over a library index range (`grid_stride_range(n)`)
//!   is the counted loop the range stands for.
//! - `type_traits.rs`: `if (std::is_same<T, char>::value)` (and `if constexpr`) with `T`
//!   bound by the call or the instantiation lowers only the branch the types choose.
//! - `type_params.rs`: template type parameters bound to classes of the file (`reduce<Add>`).
//! - `element_objects.rs`: methods of objects in memory (`ps[i].step(dt)` on an array of a class
//!   of the file) are inlined on a copy of the element, read before the call, each assigned
//!   member's cell written where it is assigned.

pub(crate) mod choice;
pub(crate) mod collectives;
pub(crate) mod element_objects;
pub(crate) mod fn_refs;
pub(crate) mod lambdas;
pub(crate) mod launch_lambdas;
pub(crate) mod overloads;
pub(crate) mod pointer_bumps;
pub(crate) mod ranges;
pub(crate) mod temporaries;
pub(crate) mod type_params;
pub(crate) mod type_traits;
pub(crate) mod vectors;
