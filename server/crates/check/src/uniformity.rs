//! Which values can differ between threads of one block, and between blocks (NOTES.md).
//!
//! Symbolic execution names every value it creates by its variance, so variance is read off the
//! variables of a term: `threadIdx`, per-thread data and per-thread loop values are `$…`;
//! `blockIdx` and values derived from block-uniform inputs are `%…`; `blockDim`, `gridDim`,
//! parameters and literals are plain. Loop-carried locals are classified by a fixpoint in
//! [`crate::protocol`]: uniform when their first value and every update are uniform and no update
//! sits under thread-dependent control (`cur = 1 - cur`, `stride *= 2`). A loaded value is
//! block-uniform only when its index is and no thread writes the array.

use cudarace_solver::Term;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Variance {
    /// The same for every thread of the grid.
    Grid,
    /// The same for every thread of one block.
    Block,
    /// May differ between two threads of one block.
    Thread,
}

pub fn variance(t: &Term) -> Variance {
    let mut v = Variance::Grid;
    crate::terms::visit_vars(t, &mut |name| {
        let this = if name.starts_with('$') {
            Variance::Thread
        } else if name.starts_with('%') {
            Variance::Block
        } else {
            Variance::Grid
        };
        v = v.max(this);
    });
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::terms::*;

    #[test]
    fn classification_by_inputs() {
        assert_eq!(
            variance(&add(Term::var("blockDim.x"), Term::var("param.n"))),
            Variance::Grid
        );
        assert_eq!(
            variance(&mul(Term::var("%bid.x"), Term::var("blockDim.x"))),
            Variance::Block
        );
        assert_eq!(
            variance(&add(Term::var("%bid.x"), Term::var("$tid.x"))),
            Variance::Thread
        );
        assert_eq!(variance(&int(3)), Variance::Grid);
    }
}
