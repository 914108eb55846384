//! CUDA vector types (`float4`, `int2`, `uint4`, `double2`, `half2`, `char4`, …) as structs of
//! consecutive scalar components, and pointer casts that change the element size
//! (`reinterpret_cast<float4 *>(p)[i]`, `((float2 *)p)[i]`, `(uint4 *)&s[4 * t]`).
//!
//! The model: a pointer's offset always counts cells of the array it points into; a pointer
//! whose element is `r` times wider than a cell (a `float4 *` into a `float` array) moves `r`
//! cells per step (its `stride`), and an element through it is the place
//! [`Place::Cells`]: the `r` consecutive cells from `r * i`. Reading or writing the element reads
//! or writes every cell; a component (`.x`, `.y`, `.z`, `.w`) is the cells of that component
//! only. A `float4 *` kernel parameter is an array of `float` cells seen through such a pointer,
//! so `p4[i].y` and `((float *)p4)[4 * i + 1]` are the same cell.
//!
//! Anything else stays as before: a pointer whose element is narrower than the array's cells
//! (a `char *` into a `float` array), or one into an array of structs with member cells, gets
//! unknown indices (see `ptr_cast` and `deref`).

use super::super::*;
use crate::typenames::comp_size;

/// At most this many cells per element are modelled one by one (a `uint4` over a `char`
/// array is 16); wider elements are an unknown place.
const MAX_CELLS: i64 = 32;

/// The element size and vector component size of a pointer variable declared with element type
/// `ty` and initialized from `init`. A type whose size is not known (a template parameter `T`,
/// `auto`) is the initializer's: a `T *` bound to a `float4 *` steps over four float cells.
pub(crate) fn slot_elem(ty: &str, init: Option<&PtrVal>) -> (Option<i64>, Option<i64>) {
    match (crate::typenames::elem_size(ty), init) {
        (Some(d), _) if d > 0 => (Some(d), comp_size(ty)),
        (_, Some(p)) => (p.elem_size, p.comp),
        (d, None) => (d, None),
    }
}

/// Cells per element when a pointer with elements of `elem` bytes views an array of `cell`
/// bytes: `Some(r)` when `elem` is `r > 1` whole cells.
fn ratio(elem: Option<i64>, cell: Option<i64>) -> Option<i64> {
    match (elem, cell) {
        (Some(e), Some(c)) if e > c && c > 0 && e % c == 0 => Some(e / c),
        _ => None,
    }
}

impl Lowerer<'_, '_> {
    /// Whether accesses through wider pointers are modelled for this array (a scalar array, not
    /// an array of structs with member cells).
    fn cells_array(&self, id: ArrayId) -> bool {
        !self.struct_members.contains_key(&id)
            && self
                .k
                .arrays
                .get(id.0 as usize)
                .is_some_and(|a| !a.dims.is_empty())
    }

    /// Cells one element of a pointer with elements of `elem` bytes covers in array `id`.
    pub(crate) fn cells_per_elem(&self, id: ArrayId, elem: Option<i64>) -> Option<i64> {
        if !self.cells_array(id) {
            return None;
        }
        ratio(elem, self.elem_size(id))
    }

    /// Steps of the pointer variable `slot` in cells of its array (1 unless its element is
    /// wider than a cell).
    pub(crate) fn slot_stride(&self, slot: usize) -> i64 {
        let s = &self.slots[slot];
        match s.base {
            Base::Arr(id) | Base::Choice(_, id, _) => {
                self.cells_per_elem(id, s.elem_size).unwrap_or(1)
            }
            _ => 1,
        }
    }

    /// `p[i]` when `p`'s element is several cells of the array `id`: those cells.
    pub(crate) fn wide_deref(&mut self, p: &PtrVal, id: ArrayId, i: Expr) -> Option<Place> {
        let width = self.cells_per_elem(id, p.elem_size)?;
        if width > MAX_CELLS {
            return None;
        }
        let start = fold(&Expr::bin(
            BinOp::Add,
            p.off.clone(),
            Expr::bin(BinOp::Mul, i, p.stride.clone()),
        ));
        let comp = p.comp.and_then(|c| {
            ratio(Some(c), self.elem_size(id)).or((Some(c) == self.elem_size(id)).then_some(1))
        });
        Some(Place::Cells {
            array: id,
            start,
            width,
            comp,
        })
    }

    /// A pointer cast to elements `target` bytes wide that are one or more whole cells of its
    /// array (`(float4 *)p` or `(float *)p4` over `float` cells): the offset stays (in cells),
    /// a step is now that many cells.
    pub(crate) fn widen_ptr(
        &mut self,
        p: &PtrVal,
        target: Option<i64>,
        ty: &str,
    ) -> Option<PtrVal> {
        let Base::Arr(id) = p.base else {
            return None;
        };
        let r = match self.cells_per_elem(id, target) {
            Some(r) => r,
            // Back to the cells themselves, from a wider view (`(float *)p4`).
            None if self.cells_array(id)
                && target.is_some()
                && target == self.elem_size(id)
                && p.elem_size != target =>
            {
                1
            }
            None => return None,
        };
        if self.view_changed.contains(&id) && p.elem_size != self.elem_size(id) {
            // The offset is in units of another view of the array.
            return None;
        }
        Some(PtrVal {
            base: p.base.clone(),
            off: p.off.clone(),
            stride: Expr::Int(r),
            elem_size: target,
            comp: comp_size(ty),
        })
    }

    /// `e.x` (`.y`, `.z`, `.w`) of an element made of cells.
    pub(crate) fn select_component(&mut self, p: Place, member: &str) -> Place {
        let Place::Cells {
            array,
            start,
            width,
            comp: Some(c),
        } = p
        else {
            return p;
        };
        let no = match member {
            "x" => 0,
            "y" => 1,
            "z" => 2,
            "w" => 3,
            _ => {
                return Place::Cells {
                    array,
                    start,
                    width,
                    comp: Some(c),
                }
            }
        };
        if (no + 1) * c > width {
            // Not a component of this vector: the whole element (a superset).
            return Place::Cells {
                array,
                start,
                width,
                comp: Some(c),
            };
        }
        let first = fold(&Expr::bin(BinOp::Add, start, Expr::Int(no * c)));
        if c == 1 {
            return self.cell_at(array, first);
        }
        Place::Cells {
            array,
            start: first,
            width: c,
            comp: None,
        }
    }

    /// The cell at flat offset `at` of a scalar array.
    fn cell_at(&self, array: ArrayId, at: Expr) -> Place {
        let ndims = self
            .k
            .arrays
            .get(array.0 as usize)
            .map_or(0, |a| a.dims.len());
        Place::Cell {
            array,
            index: vec![at],
            flat: ndims != 1,
        }
    }

    /// Reads every cell of an element; its value (a vector) is not a scalar.
    pub(crate) fn read_cells(
        &mut self,
        array: ArrayId,
        start: &Expr,
        width: i64,
        span: Span,
    ) -> Expr {
        self.cells_access(array, start, width, AccessMode::Read, span);
        self.unknown("value of a vector element", span, false)
    }

    /// Writes every cell of an element (`q[i] = make_float4(…)`).
    pub(crate) fn write_cells(&mut self, array: ArrayId, start: &Expr, width: i64, span: Span) {
        self.cells_access(array, start, width, AccessMode::Write, span);
    }

    /// One access per cell of an element, as a loop over the cells (like a `memcpy` range, see
    /// `library_calls.rs`): one access in the source is one access pair to report.
    fn cells_access(
        &mut self,
        array: ArrayId,
        start: &Expr,
        width: i64,
        mode: AccessMode,
        span: Span,
    ) {
        let i64_ty = ScalarType::Int {
            bits: 64,
            signed: true,
        };
        let k = self.new_local("vector.cell", i64_ty, span);
        let at = fold(&Expr::bin(BinOp::Add, start.clone(), Expr::Local(k)));
        let ((), body) = self.capture(|l| {
            if let Place::Cell { array, index, flat } = l.cell_at(array, at) {
                l.access(array, index, flat, mode, None, span);
            }
        });
        self.emit(Stmt::Loop(Loop::counting(k, Expr::Int(width), body, span)));
    }

    /// The pointer to the first cell of an element made of cells (`&p4[i]`).
    pub(crate) fn cells_ptr(&mut self, array: ArrayId, start: Expr, width: i64) -> PtrVal {
        let cell = self.elem_size(array);
        PtrVal {
            base: Base::Arr(array),
            off: start,
            stride: Expr::Int(width),
            elem_size: cell.map(|c| c * width),
            comp: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratios() {
        assert_eq!(ratio(Some(16), Some(4)), Some(4));
        assert_eq!(ratio(Some(4), Some(4)), None);
        assert_eq!(ratio(Some(4), Some(16)), None);
        assert_eq!(ratio(Some(12), Some(8)), None);
        assert_eq!(ratio(Some(-5), Some(4)), None);
    }
}
