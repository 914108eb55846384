//! Pointers chosen with `?:` between two arrays (`float *t = c ? a : b; t[i] = v;`).
//!
//! The condition is stored in a fresh local when the pointer is chosen (the value `c` had
//! then, whatever happens to its operands later), and the pointer's base is
//! [`Base::Choice`]. An access through it is the access to `a` where the local holds and the one
//! to `b` elsewhere: an `if` in the IR, so a race on either array is found with the condition
//! as part of the witness, and a condition the front end does not know (a value read from
//! memory) leaves both accesses possible, with the confidence rules of any unknown value.
//!
//! A pointer whose targets are not two arrays with the same element layout, or whose target set
//! grows later (reassigned to another array), stays as before: its accesses are opaque for every
//! array it may point into.

use super::super::*;

/// The base a later lowering pass may rely on: the choice's local belongs to this pass, so only
/// its arrays are kept.
pub(crate) fn without_choice(b: &Base) -> Base {
    match b {
        Base::Choice(_, a, b) => Base::Many(vec![*a, *b]),
        other => other.clone(),
    }
}

impl Lowerer<'_, '_> {
    /// `c ? p : q` for two pointers into different arrays with the same element layout.
    pub(crate) fn choose_ptr(
        &mut self,
        c: &Expr,
        p: &PtrVal,
        q: &PtrVal,
        span: Span,
    ) -> Option<PtrVal> {
        let (Base::Arr(a), Base::Arr(b)) = (&p.base, &q.base) else {
            return None;
        };
        if a == b || p.stride != q.stride || p.elem_size != q.elem_size || p.comp != q.comp {
            return None;
        }
        let sel = self.new_local("pointer.choice", ScalarType::Bool, span);
        self.emit(Stmt::Assign {
            local: sel,
            value: c.clone(),
            span,
        });
        let base = Base::Choice(sel, *a, *b);
        let sel = Expr::Local(sel);
        Some(PtrVal {
            base,
            off: if p.off == q.off {
                p.off.clone()
            } else {
                fold(&Expr::ite(sel, p.off.clone(), q.off.clone()))
            },
            stride: p.stride.clone(),
            elem_size: p.elem_size,
            comp: p.comp,
        })
    }

    /// `p[i]` through a chosen pointer: the place in each array.
    pub(crate) fn deref_choice(
        &mut self,
        p: &PtrVal,
        sel: Expr,
        a: ArrayId,
        b: ArrayId,
        i: Expr,
    ) -> Place {
        let (off_a, off_b) = match &p.off {
            Expr::Ite(c, x, y) if **c == sel => ((**x).clone(), (**y).clone()),
            off => (off.clone(), off.clone()),
        };
        let in_a = PtrVal {
            base: Base::Arr(a),
            off: off_a,
            ..p.clone()
        };
        let in_b = PtrVal {
            base: Base::Arr(b),
            off: off_b,
            ..p.clone()
        };
        let pa = self.deref(&in_a, i.clone());
        let pb = self.deref(&in_b, i);
        Place::Choice {
            sel,
            a: Box::new(pa),
            b: Box::new(pb),
        }
    }

    /// Reads the chosen place: an `if` on the choice, each branch reading its array.
    pub(crate) fn read_choice(&mut self, sel: Expr, a: Place, b: Place, span: Span) -> Expr {
        let t = self.new_local("choice.value", ScalarType::Other, span);
        let ((), then) = self.capture(|s| {
            let v = s.read(a, span);
            s.emit(Stmt::Assign {
                local: t,
                value: v,
                span,
            });
        });
        let ((), els) = self.capture(|s| {
            let v = s.read(b, span);
            s.emit(Stmt::Assign {
                local: t,
                value: v,
                span,
            });
        });
        self.emit(Stmt::If {
            cond: sel,
            then_branch: then,
            else_branch: els,
            span,
        });
        Expr::Local(t)
    }

    /// Writes the chosen place.
    pub(crate) fn write_choice(&mut self, sel: Expr, a: Place, b: Place, value: Expr, span: Span) {
        let v = value.clone();
        let ((), then) = self.capture(|s| s.write(a, v, span));
        let ((), els) = self.capture(|s| s.write(b, value, span));
        self.emit(Stmt::If {
            cond: sel,
            then_branch: then,
            else_branch: els,
            span,
        });
    }

    /// `&place` for a chosen place: a chosen pointer again when both are array cells.
    pub(crate) fn choice_ptr(&mut self, sel: Expr, a: Place, b: Place, span: Span) -> PtrVal {
        let pa = self.place_to_ptr(a, span);
        let pb = self.place_to_ptr(b, span);
        match (&pa.base, &pb.base, &sel) {
            (Base::Arr(x), Base::Arr(y), Expr::Local(l))
                if x != y && pa.stride == pb.stride && pa.elem_size == pb.elem_size =>
            {
                PtrVal {
                    base: Base::Choice(*l, *x, *y),
                    off: fold(&Expr::ite(sel.clone(), pa.off.clone(), pb.off.clone())),
                    ..pa
                }
            }
            _ => PtrVal {
                base: pa.base.join(&pb.base),
                off: self.unknown("pointer to a place chosen by a conditional", span, false),
                ..pa
            },
        }
    }

    /// `place.member` on a chosen place: the member in each.
    pub(crate) fn select_in_choice(
        &mut self,
        sel: Expr,
        a: Place,
        b: Place,
        member: &str,
        span: Span,
    ) -> Place {
        let a = self.select_member(a, member, span);
        let b = self.select_member(b, member, span);
        Place::Choice {
            sel,
            a: Box::new(a),
            b: Box::new(b),
        }
    }
}
