//! Pointer members of objects the front end does not model member by member:
//!
//! - a kernel parameter of a type it does not know (a struct from a missing header, a template
//!   type parameter): `param.input_ids[i]`, `const T *xp = p.x + off`;
//! - a `__device__` or `__constant__` struct variable the host fills (`cudaMemcpyToSymbol`):
//!   `devSim.gridx[i]`, for a struct of the file (its member is declared a pointer) or of a
//!   missing header.
//!
//! Such a member `obj.f` is a pointer to an array of its own, `obj.f`, in global memory, like a
//! pointer member of a by-value struct parameter of a class of the file (`lower/objects.rs`).
//! Before, the member's value was unknown and every access through it an opaque access through
//! a pointer with an unknown target.
//!
//! When: the object is not changed by the kernel (a parameter the kernel neither assigns nor
//! takes the address of; a global no function of the file assigns), the member is used as a
//! pointer somewhere in the file (subscripted, dereferenced, initializing a pointer variable;
//! for a struct of the file: declared a pointer), and no function of the file changes a member
//! of that name or takes its address (`collect/members.rs`). Its value is then the one the
//! host set, the same for every thread.
//!
//! Assumption (as for pointer parameters, tests/fixtures/README.md): the arrays such members
//! point to do not overlap each other, nor the arrays of pointer parameters.

use super::*;
use crate::collect::{FieldKind, GlobalSpace};
use crate::consteval::node_text;

impl Lowerer<'_, '_> {
    /// `obj.f` (with `obj` the identifier `arg`) as a pointer into the member's own array, when
    /// `obj` is such an object (see the module docs).
    pub(super) fn member_pointer(&mut self, arg: Node, fname: &str, span: Span) -> Option<Val> {
        if arg.kind() != "identifier" || self.tab.member_uses.written.contains(fname) {
            return None;
        }
        let name = self.text(arg);
        // Keyed by the object, not by the name: a copy (`Params q = p;`) or a reference
        // bound to the parameter is the same object, whose member points to the same array.
        let (key, shown, origin, elem_ty) = match self.lookup(&name)? {
            Binding::Value(Expr::Param(pid)) => {
                let p = self.k.params.get(pid.0 as usize)?;
                if p.ty != ScalarType::Other || !self.tab.member_uses.pointer.contains(fname) {
                    return None;
                }
                let shown = format!("{}.{fname}", p.name);
                (
                    format!("param {}.{fname}", pid.0),
                    shown,
                    ArrayOrigin::Param(pid.0),
                    None,
                )
            }
            Binding::Array(id) => {
                let ty = self.global_member(id, &name, fname)?;
                let shown = format!("{name}.{fname}");
                (
                    format!("global {}.{fname}", id.0),
                    shown,
                    ArrayOrigin::DeviceGlobal,
                    ty,
                )
            }
            _ => return None,
        };
        if let Some(id) = self.member_arrays.get(&key) {
            return Some(Val::P(self.array_ptr(*id, span)));
        }
        let (elem, size) = match &elem_ty {
            Some(t) => (typenames::scalar_type(t), typenames::elem_size(t)),
            None => (ScalarType::Other, None),
        };
        let owner = self.object_array(arg)?;
        let id = self.new_array(
            &shown,
            MemSpace::Global,
            origin,
            elem,
            size,
            vec![None],
            span,
        );
        self.member_arrays.insert(key, id);
        self.member_owners.push((owner, id));
        Some(Val::P(self.array_ptr(id, span)))
    }

    /// For the `__device__`/`__constant__` struct variable `name` (array `id`, a scalar), the
    /// type of its pointer member `fname`: `Some(Some(type))` for a struct of the file whose
    /// member is declared a pointer, `Some(None)` for a type the front end does not know whose
    /// member the file uses as a pointer.
    fn global_member(&mut self, id: ArrayId, name: &str, fname: &str) -> Option<Option<String>> {
        let a = self.k.arrays.get(id.0 as usize)?;
        if a.origin != ArrayOrigin::DeviceGlobal || !a.dims.is_empty() {
            return None;
        }
        let g = *self.tab.globals.get(name)?;
        if g.space == GlobalSpace::Shared
            || g.declarator.kind() != "identifier"
            || self.global_assigned(name)
        {
            return None;
        }
        let text = self.tab.texts[g.file.0 as usize].clone();
        let ty = g
            .decl
            .child_by_field_name("type")
            .map(|t| node_text(t, &text).to_string())
            .unwrap_or_default();
        let words: Vec<&str> = ty
            .split_whitespace()
            .filter(|w| !matches!(*w, "const" | "volatile" | "struct" | "static"))
            .collect();
        let [tname] = words.as_slice() else {
            return None;
        };
        let tname = tname.split('<').next().unwrap_or(tname).trim();
        match self.tab.classes.get(tname) {
            Some(Some(c)) => {
                let ctext = self.tab.texts[c.file.0 as usize].clone();
                let f = c
                    .fields
                    .iter()
                    .find(|f| node_text(f.name, &ctext) == fname)?;
                let fty = node_text(f.ty, &ctext).to_string();
                // Vector elements are several cells (cxx/vectors.rs): not here.
                (f.kind == FieldKind::Pointer && typenames::vector_type(&fty).is_none())
                    .then_some(Some(fty))
            }
            // Two definitions of the name: not known which.
            Some(None) => None,
            None if typenames::scalar_type(&ty) == ScalarType::Other
                && typenames::vector_type(&ty).is_none()
                && !self.tab.struct_layouts.contains_key(tname)
                && self.tab.member_uses.pointer.contains(fname) =>
            {
                Some(None)
            }
            None => None,
        }
    }

    /// The memory a kernel parameter of a type the front end does not know may reach (the
    /// array made for it in `kernel_param`).
    pub(super) fn param_object_array(&self, pid: ParamId) -> Option<ArrayId> {
        let p = self.k.params.get(pid.0 as usize)?;
        if p.ty != ScalarType::Other {
            return None;
        }
        self.k
            .arrays
            .iter()
            .position(|a| a.origin == ArrayOrigin::Param(pid.0) && a.name == p.name)
            .map(|i| ArrayId(i as u32))
    }

    /// The array standing for the memory an object the members of which may be pointers
    /// reaches, for the identifier `n`: the array of a parameter of a type the front end does
    /// not know (see `kernel_param`), or a `__device__`/`__constant__` struct variable. Unknown
    /// code the object is handed to touches it, and with it every member array
    /// (`add_member_arrays`).
    pub(super) fn object_array(&mut self, n: Node) -> Option<ArrayId> {
        if n.kind() != "identifier" {
            return None;
        }
        let name = self.text(n);
        match self.lookup(&name)? {
            Binding::Value(Expr::Param(pid)) => self.param_object_array(pid),
            Binding::Array(id) => {
                let a = self.k.arrays.get(id.0 as usize)?;
                (a.origin == ArrayOrigin::DeviceGlobal && a.dims.is_empty()).then_some(id)
            }
            _ => None,
        }
    }
}

/// Unmodelled code that may touch an object's memory may touch its member arrays too, also
/// those made after it (a member first used after the call).
pub(super) fn add_member_arrays(b: &mut Block, owners: &[(ArrayId, ArrayId)]) {
    if owners.is_empty() {
        return;
    }
    for s in b.iter_mut() {
        match s {
            Stmt::Opaque(o) => {
                for (owner, member) in owners {
                    if o.arrays.contains(owner) && !o.arrays.contains(member) {
                        o.arrays.push(*member);
                    }
                }
            }
            Stmt::If {
                then_branch,
                else_branch,
                ..
            } => {
                add_member_arrays(then_branch, owners);
                add_member_arrays(else_branch, owners);
            }
            Stmt::Loop(l) => {
                add_member_arrays(&mut l.init, owners);
                add_member_arrays(&mut l.cond_effects, owners);
                add_member_arrays(&mut l.step, owners);
                add_member_arrays(&mut l.body, owners);
            }
            _ => {}
        }
    }
}
