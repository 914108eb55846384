//! Calls described by a library file (`cudarace_library`): the barrier a call is, the memory it
//! reads and writes through its pointer arguments, and what its result is.

use super::*;
use cudarace_library::{Access, Count, FunctionModel, Returns, Sync, Unit};

/// Whether every thread of a block computes the same value for `e` (conservative: locals and
/// loaded data count as varying).
pub(crate) fn block_uniform(e: &Expr, unknowns: &[UnknownValue]) -> bool {
    match e {
        Expr::Int(_) | Expr::Bool(_) | Expr::Float(_) | Expr::Param(_) => true,
        Expr::Builtin(b) => !matches!(b, Builtin::ThreadIdx(_)),
        Expr::Local(_) | Expr::Load(_) => false,
        Expr::Unknown(u) => unknowns.get(u.0 as usize).is_some_and(|x| x.uniform),
        Expr::Unary(_, a) | Expr::Cast(_, a) => block_uniform(a, unknowns),
        Expr::Binary(_, a, b) => block_uniform(a, unknowns) && block_uniform(b, unknowns),
        Expr::Ite(c, a, b) => {
            block_uniform(c, unknowns) && block_uniform(a, unknowns) && block_uniform(b, unknowns)
        }
    }
}

impl<'a, 't> Lowerer<'a, 't> {
    /// A call to `name`, described by `model`.
    pub fn library_call(
        &mut self,
        name: &str,
        model: &FunctionModel,
        n: Node,
        args: &[Node],
    ) -> Val {
        let span = self.span(n);
        // A lambda handed to it may be called by it: unknown code (cxx/lambdas.rs).
        if args.iter().any(|a| self.is_lambda_arg(*a)) {
            self.lower_args_public(args);
            let (_, ol) = self.objects_in_args(args);
            let why = format!("call to `{name}` with a lambda argument, which its library description (`{}`) does not cover", model.library);
            self.opaque(why, span, vec![ALL_ARRAYS], ol, true);
            return Val::S(self.unknown(format!("result of `{name}`"), span, false));
        }
        // An overload the description does not fit (fewer arguments than it speaks of): an
        // unknown call, but one that synchronizes only if the description says so.
        let fits = model.effects.iter().all(|e| {
            e.arg < args.len()
                && match e.count {
                    Count::Arg(i) => i < args.len(),
                    _ => true,
                }
        });
        if !fits {
            let vals = self.lower_args_public(args);
            let mut arrays = Self::arrays_of_vals_public(&vals);
            let (oa, ol) = self.objects_in_args(args);
            arrays.extend(oa);
            self.opaque(
                format!(
                    "call to `{name}` with {} arguments, which its library description (`{}`) does not fit",
                    args.len(),
                    model.library
                ),
                span,
                arrays,
                ol,
                model.sync != Sync::None,
            );
            return Val::S(self.unknown(format!("result of `{name}`"), span, false));
        }
        // Arguments in order: one whose memory is touched one element at a time is taken as the
        // place it points to (`&a[i][j]` keeps its per-dimension index); the others as values.
        let pointed = |i: usize| {
            model
                .effects
                .iter()
                .any(|e| e.arg == i && e.count == Count::One)
                && !model
                    .effects
                    .iter()
                    .any(|e| e.arg == i && e.count != Count::One)
        };
        let mut vals: Vec<Option<Val>> = Vec::with_capacity(args.len());
        let mut places: Vec<Option<Place>> = Vec::with_capacity(args.len());
        for (i, a) in args.iter().enumerate() {
            if pointed(i) {
                places.push(Some(self.pointed_place(*a)));
                vals.push(None);
            } else {
                places.push(None);
                vals.push(Some(self.expr(*a)));
            }
        }
        let scalar = |l: &mut Self, vals: &[Option<Val>], i: usize| -> Option<Expr> {
            match vals.get(i) {
                Some(Some(v)) => Some(l.scalar_of(v.clone(), span)),
                _ => None,
            }
        };
        if let Some(c) = model.assume_arg.and_then(|i| scalar(self, &vals, i)) {
            self.emit(Stmt::Assume { cond: c, span });
        }
        // Memory effects.
        let mut first_read: Option<Expr> = None;
        let mut first_atomic: Option<(AccessId, ArrayId)> = None;
        for e in &model.effects {
            let Some(arg) = args.get(e.arg) else { continue };
            let aspan = self.span(*arg);
            match e.count {
                Count::One => {
                    let place = places
                        .get(e.arg)
                        .cloned()
                        .flatten()
                        .unwrap_or(Place::Unknown);
                    let (value, atomic) = self.effect_on_place(name, place, e.access, aspan);
                    if let Some((_, array)) = atomic {
                        // Every atomic on an array counts; a ticket call sets its sign below.
                        self.atomic_signs.entry(array).or_default().push(None);
                    }
                    if first_read.is_none() && e.access != Access::Write {
                        first_read = value;
                    }
                    if first_atomic.is_none() {
                        first_atomic = atomic;
                    }
                }
                Count::Const(_) | Count::Arg(_) => {
                    let count = match e.count {
                        Count::Const(k) => Some(Expr::Int(k.min(i64::MAX as u64) as i64)),
                        Count::Arg(i) => scalar(self, &vals, i),
                        Count::One => None,
                    };
                    let v = vals.get(e.arg).cloned().flatten();
                    self.effect_on_range(name, v, count, e.unit, e.access, aspan);
                }
            }
        }
        match model.sync {
            Sync::None => {}
            Sync::Block => self.emit(Stmt::Barrier(Barrier {
                kind: BarrierKind::Block,
                span,
            })),
            Sync::Grid => self.emit(Stmt::Barrier(Barrier {
                kind: BarrierKind::Grid,
                span,
            })),
            Sync::Warp { mask_arg } => {
                let mask = mask_arg.and_then(|i| scalar(self, &vals, i));
                let mask = match mask {
                    None => None,
                    Some(Expr::Int(m)) if (m as u64 & 0xffff_ffff) == 0xffff_ffff => None,
                    Some(m) => Some(m),
                };
                self.emit(Stmt::Barrier(Barrier {
                    kind: BarrierKind::Warp { mask },
                    span,
                }));
            }
            Sync::Group { group_arg } => match vals.get(group_arg).cloned().flatten() {
                Some(Val::Group(g)) => self.group_sync(g, span),
                // Not a group we know: the call may still synchronize.
                _ => self.opaque(
                    format!("`{name}` on a thread group the checker does not know"),
                    span,
                    vec![],
                    vec![],
                    true,
                ),
            },
        }
        let arg_scalar = |l: &mut Self, i: usize| scalar(l, &vals, i);
        let reason = format!("result of `{name}`");
        match model.returns {
            Returns::Void => Val::Void,
            Returns::Unknown => Val::S(self.unknown(reason, span, false)),
            Returns::Uniform => Val::S(self.unknown(reason, span, true)),
            Returns::Pure => {
                let uniform = places.iter().all(|p| p.is_none())
                    && vals.iter().flatten().all(|v| match v {
                        Val::S(e) => block_uniform(e, &self.k.unknowns),
                        Val::Void | Val::Group(_) => true,
                        _ => false,
                    });
                Val::S(self.unknown(reason, span, uniform))
            }
            Returns::Distinct => {
                let u = self.unknown(reason, span, false);
                self.mark_distinct(&u, Distinct::PerThread);
                Val::S(u)
            }
            Returns::Ticket { step_arg } => {
                let step = arg_scalar(self, step_arg).map(|e| fold(&e));
                let sign = match step {
                    Some(Expr::Int(k)) if k != 0 => Some(k.signum()),
                    _ => None,
                };
                if let Some((_, array)) = first_atomic {
                    let signs = self.atomic_signs.entry(array).or_default();
                    if let Some(last) = signs.iter_mut().rev().find(|s| s.is_none()) {
                        *last = sign;
                    }
                }
                let u = self.unknown(
                    match sign {
                        Some(_) => format!("ticket returned by `{name}`"),
                        None => reason,
                    },
                    span,
                    false,
                );
                if let (Some(_), Some((counter, array))) = (sign, first_atomic) {
                    self.mark_distinct(&u, Distinct::Ticket { counter });
                    if let Expr::Unknown(id) = u {
                        self.tickets.push((id, array));
                    }
                }
                Val::S(u)
            }
            Returns::Argument { arg } => match vals.get(arg).cloned().flatten() {
                Some(v) => v,
                None => Val::S(self.unknown(reason, span, false)),
            },
            Returns::Read => match first_read {
                Some(e) => Val::S(e),
                None => Val::S(self.unknown(reason, span, false)),
            },
            Returns::Min | Returns::Max => {
                match (arg_scalar(self, 0), arg_scalar(self, 1), args.len()) {
                    (Some(a), Some(b), 2) => {
                        let op = if model.returns == Returns::Min {
                            BinOp::Lt
                        } else {
                            BinOp::Gt
                        };
                        let c = Expr::bin(op, a.clone(), b.clone());
                        Val::S(fold(&Expr::ite(c, a, b)))
                    }
                    _ => Val::S(self.unknown(reason, span, false)),
                }
            }
            Returns::Abs => match (arg_scalar(self, 0), args.len()) {
                (Some(a), 1) => {
                    let c = Expr::bin(BinOp::Lt, a.clone(), Expr::Int(0));
                    Val::S(Expr::ite(c, Expr::un(UnOp::Neg, a.clone()), a))
                }
                _ => Val::S(self.unknown(reason, span, false)),
            },
            Returns::Product => match (arg_scalar(self, 0), arg_scalar(self, 1), args.len()) {
                (Some(a), Some(b), 2) => Val::S(fold(&Expr::bin(BinOp::Mul, a, b))),
                _ => Val::S(self.unknown(reason, span, false)),
            },
            Returns::CeilDiv => match (arg_scalar(self, 0), arg_scalar(self, 1), args.len()) {
                (Some(a), Some(b), 2) => {
                    let sum = Expr::bin(BinOp::Add, a, b.clone());
                    let less = Expr::bin(BinOp::Sub, sum, Expr::Int(1));
                    Val::S(fold(&Expr::bin(BinOp::Div, less, b)))
                }
                _ => Val::S(self.unknown(reason, span, false)),
            },
        }
    }

    fn mark_distinct(&mut self, u: &Expr, d: Distinct) {
        if let Expr::Unknown(id) = u {
            if let Some(uv) = self.k.unknowns.get_mut(id.0 as usize) {
                uv.distinct = Some(d);
            }
        }
    }

    /// One element read, written or updated atomically at `place`: the value read (reads and
    /// atomics) and, for an atomic on an array cell, the access and its array.
    fn effect_on_place(
        &mut self,
        name: &str,
        place: Place,
        access: Access,
        span: Span,
    ) -> (Option<Expr>, Option<(AccessId, ArrayId)>) {
        match (access, place) {
            (Access::Read, p) => (Some(self.read(p, span)), None),
            (Access::Write, p) => {
                let u = self.unknown(format!("value written by `{name}`"), span, false);
                self.write(p, u, span);
                (None, None)
            }
            (Access::Atomic, Place::Cell { array, index, flat }) => {
                let id = self.access(array, index, flat, AccessMode::Atomic, None, span);
                (Some(Expr::Load(id)), Some((id, array)))
            }
            (Access::Atomic, Place::Local(l)) => {
                let u = self.unknown(format!("`{name}` on thread-private memory"), span, false);
                self.emit(Stmt::Assign {
                    local: l,
                    value: u.clone(),
                    span,
                });
                (Some(u), None)
            }
            (Access::Atomic, Place::Private | Place::Ptr(_) | Place::Object(_)) => (
                Some(self.unknown(
                    format!("result of `{name}` on thread-private memory"),
                    span,
                    false,
                )),
                None,
            ),
            (Access::Atomic, Place::Cells { array, .. }) => {
                // A whole vector element: not modelled as an atomic.
                self.opaque(
                    format!("`{name}` on a vector element"),
                    span,
                    vec![array],
                    vec![],
                    false,
                );
                (None, None)
            }
            (Access::Atomic, Place::Choice { sel, a, b }) => {
                // The atomic on the array the pointer chose (cxx/choice.rs): an `if` on the
                // choice. Its old value is no ticket, and it counts as an atomic of unknown
                // step on each array (so neither hands out tickets).
                let old = self.new_local(&format!("{name}.old"), ScalarType::Other, span);
                let mut branches = Vec::new();
                for side in [*a, *b] {
                    let ((), block) = self.capture(|s| {
                        let (v, atomic) = s.effect_on_place(name, side, Access::Atomic, span);
                        if let Some((_, array)) = atomic {
                            s.atomic_signs.entry(array).or_default().push(None);
                        }
                        let v = v.unwrap_or_else(|| {
                            s.unknown(format!("old value of `{name}`"), span, false)
                        });
                        s.emit(Stmt::Assign {
                            local: old,
                            value: v,
                            span,
                        });
                    });
                    branches.push(block);
                }
                let else_branch = branches.pop().unwrap_or_default();
                let then_branch = branches.pop().unwrap_or_default();
                self.emit(Stmt::If {
                    cond: sel,
                    then_branch,
                    else_branch,
                    span,
                });
                (Some(Expr::Local(old)), None)
            }
            (Access::Atomic, Place::Many(v)) => {
                self.opaque(
                    format!("`{name}` through a pointer that may point into different arrays"),
                    span,
                    v,
                    vec![],
                    false,
                );
                (None, None)
            }
            (Access::Atomic, Place::Unknown) => {
                self.opaque(
                    format!("`{name}` through a pointer with an unknown target"),
                    span,
                    vec![ALL_ARRAYS],
                    vec![],
                    false,
                );
                (None, None)
            }
        }
    }

    /// `count` elements (or bytes) from pointer `v` on: a loop over the cells.
    fn effect_on_range(
        &mut self,
        name: &str,
        v: Option<Val>,
        count: Option<Expr>,
        unit: Unit,
        access: Access,
        span: Span,
    ) {
        let (Some(Val::P(p)), Some(count)) = (v, count) else {
            self.opaque(
                format!("`{name}` on memory the checker cannot follow"),
                span,
                vec![ALL_ARRAYS],
                vec![],
                false,
            );
            return;
        };
        // Bytes become elements of the pointer's type (rounded up); an unknown element size
        // counts bytes as elements: more cells, never fewer.
        let elems = match (unit, p.elem_size) {
            (Unit::Bytes, Some(es)) if es > 1 => fold(&Expr::bin(
                BinOp::Div,
                Expr::bin(BinOp::Add, count, Expr::Int(es - 1)),
                Expr::Int(es),
            )),
            _ => count,
        };
        let i64_ty = ScalarType::Int {
            bits: 64,
            signed: true,
        };
        let k = self.new_local(&format!("{name}.element"), i64_ty, span);
        let (_, body) = self.capture(|l| {
            let place = l.deref(&p, Expr::Local(k));
            l.effect_on_place(name, place, access, span);
        });
        self.emit(Stmt::Loop(Loop::counting(k, elems, body, span)));
    }
}
