//! `T **p` kernel parameters (an array of row pointers: `inputs[k][i]`,
//! `const T *in = inputs[seg];`), and deeper ones (`T ***p`: the rows `p[…]` are such arrays
//! of row pointers in turn, `p[…][…]` their rows).
//!
//! A pointer loaded from the parameter's array points into one array standing for all the rows,
//! `p[…]`, at an unknown offset: the rows may be anywhere in it, also overlapping each other,
//! so two accesses through loaded pointers may always touch the same cell (reads of the rows
//! never race; writes are checked against every access to any row). Before, the loaded pointer
//! had an unknown target and every access through it was opaque over all arrays.
//!
//! Assumption (as for pointer parameters, tests/fixtures/README.md): the rows do not overlap
//! the arrays of other parameters. A kernel that writes the parameter's array itself
//! (`p[k] = q`) may make a row any pointer: then an access through a loaded pointer may touch
//! any array, and the kernel gets an opaque effect over all arrays (`rows_written`); so does
//! a kernel handing the parameter to unmodelled code.

use super::*;

impl Lowerer<'_, '_> {
    /// The `T **` parameter array whose element (a row pointer) the place `p` is.
    pub(super) fn rows_of(&self, p: &Place) -> Option<ArrayId> {
        match p {
            Place::Cell { array, .. } if self.ptr_rows.contains_key(array) => Some(*array),
            _ => None,
        }
    }

    /// A row pointer loaded from the array `outer` of a `T **` parameter.
    pub(super) fn row_pointer(&mut self, outer: ArrayId, span: Span) -> PtrVal {
        let rows = match self.ptr_rows.get(&outer).cloned() {
            Some((_, _, Some(rows), _)) => rows,
            Some((pid, ty, None, levels)) => {
                let name = self
                    .k
                    .arrays
                    .get(outer.0 as usize)
                    .map(|a| format!("{}[…]", a.name))
                    .unwrap_or_default();
                // Vector elements are several cells (cxx/vectors.rs): their rows stay untyped.
                // Rows of a `T ***` parameter hold pointers (rows of their own, below).
                let size = match typenames::vector_type(&ty) {
                    _ if levels > 2 => None,
                    Some(_) => None,
                    None => typenames::elem_size(&ty),
                };
                let elem = if levels > 2 {
                    ScalarType::Pointer
                } else {
                    typenames::scalar_type(&ty)
                };
                let decl = self.k.params.get(pid.0 as usize).map(|p| p.span);
                let id = self.new_array(
                    &name,
                    MemSpace::Global,
                    ArrayOrigin::Param(pid.0),
                    elem,
                    size,
                    vec![None],
                    decl.unwrap_or(span),
                );
                if let Some(e) = self.ptr_rows.get_mut(&outer) {
                    e.2 = Some(id);
                }
                if levels > 2 {
                    self.ptr_rows.insert(id, (pid, ty, None, levels - 1));
                }
                id
            }
            None => return self.place_to_ptr(Place::Unknown, span),
        };
        let off = self.unknown(
            "offset of a row of a pointer-to-pointer parameter",
            span,
            false,
        );
        PtrVal {
            base: Base::Arr(rows),
            off,
            stride: Expr::Int(1),
            elem_size: self.elem_size(rows),
            comp: None,
        }
    }

    /// Whether the kernel writes a `T **` parameter's array whose rows it accesses: then an
    /// opaque effect over all arrays (see the module docs).
    pub(super) fn rows_written(&mut self) {
        let used: Vec<ArrayId> = self
            .ptr_rows
            .iter()
            .filter(|(_, v)| v.2.is_some())
            .map(|(k, _)| *k)
            .collect();
        if used.is_empty() {
            return;
        }
        let mut written = HashSet::new();
        writes_to(&self.out, &mut written);
        if let Some(span) = used
            .iter()
            .find(|a| written.contains(*a))
            .map(|_| self.k.span)
        {
            let o = Stmt::Opaque(Opaque {
                reason: "a row pointer of a pointer-to-pointer parameter changed by the kernel"
                    .into(),
                span,
                arrays: vec![ALL_ARRAYS],
                locals: vec![],
                may_sync: false,
                starts_threads: false,
                reads_only: false,
            });
            self.out.insert(0, o);
        }
    }
}

/// The arrays written, updated atomically or touched by unmodelled code anywhere in `b`.
fn writes_to(b: &Block, out: &mut HashSet<ArrayId>) {
    for s in b {
        match s {
            Stmt::Access(a) if a.mode != AccessMode::Read => {
                out.insert(a.array);
            }
            // Unmodelled code handed the parameter may change its row pointers (a load does
            // not).
            Stmt::Opaque(o) if !o.reads_only => out.extend(o.arrays.iter().copied()),
            Stmt::If {
                then_branch,
                else_branch,
                ..
            } => {
                writes_to(then_branch, out);
                writes_to(else_branch, out);
            }
            Stmt::Loop(l) => {
                for x in [&l.init, &l.cond_effects, &l.step, &l.body] {
                    writes_to(x, out);
                }
            }
            _ => {}
        }
    }
}

/// How many pointer levels a parameter declarator has down to its name (`T **p` → 2).
pub(super) fn pointer_levels(d: Node) -> usize {
    let mut cur = d;
    let mut n = 0;
    for _ in 0..16 {
        match cur.kind() {
            "pointer_declarator" => {
                n += 1;
                match cur.child_by_field_name("declarator") {
                    Some(x) => cur = x,
                    None => return 0,
                }
            }
            "identifier" => return n,
            "attributed_declarator" | "parenthesized_declarator" => {
                match cur
                    .child_by_field_name("declarator")
                    .or_else(|| cur.named_child(0))
                {
                    Some(x) => cur = x,
                    None => return 0,
                }
            }
            _ => return 0,
        }
    }
    0
}
