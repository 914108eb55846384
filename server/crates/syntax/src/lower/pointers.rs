//! Places (assignable locations), subscripts, pointer values and pointer variables.

use super::*;

impl<'a, 't> Lowerer<'a, 't> {
    /// `a[i][j]…` → the innermost base and the index nodes, outermost first.
    pub fn subscript_chain<'n>(&self, n: Node<'n>) -> (Node<'n>, Vec<Node<'n>>) {
        let mut idx = Vec::new();
        let mut cur = n;
        while cur.kind() == "subscript_expression" && idx.len() < 64 {
            match (
                cur.child_by_field_name("indices")
                    .and_then(|l| l.named_child(0)),
                cur.child_by_field_name("argument"),
            ) {
                (Some(i), Some(a)) => {
                    idx.push(i);
                    cur = a;
                }
                _ => break,
            }
        }
        idx.reverse();
        (cur, idx)
    }

    /// Flat element offset of `idx` (a prefix of the indices) in array `id`, row-major.
    pub fn flat_offset(&mut self, id: ArrayId, idx: &[Expr], span: Span) -> Expr {
        let dims: Vec<Option<Expr>> = self.k.arrays[id.0 as usize].dims.clone();
        let mut total = Expr::Int(0);
        for (j, i) in idx.iter().enumerate() {
            let mut term = i.clone();
            for d in dims.iter().skip(j + 1) {
                match d {
                    Some(d) => term = Expr::bin(BinOp::Mul, term, d.clone()),
                    None => {
                        return self.unknown(
                            "flat offset into an array with an unknown inner dimension",
                            span,
                            false,
                        )
                    }
                }
            }
            total = Expr::bin(BinOp::Add, total, term);
        }
        fold(&total)
    }

    /// Elements one step of arithmetic on the decayed array moves (product of inner dims).
    fn row_stride(&mut self, id: ArrayId, span: Span) -> Expr {
        let dims: Vec<Option<Expr>> = self.k.arrays[id.0 as usize].dims.clone();
        let mut s = Expr::Int(1);
        for d in dims.iter().skip(1) {
            match d {
                Some(d) => s = Expr::bin(BinOp::Mul, s, d.clone()),
                None => {
                    return self.unknown(
                        "row size of an array with an unknown inner dimension",
                        span,
                        true,
                    )
                }
            }
        }
        fold(&s)
    }

    pub fn array_ptr(&mut self, id: ArrayId, span: Span) -> PtrVal {
        if self.struct_members.contains_key(&id) {
            return self.struct_array_ptr(id, span);
        }
        let stride = self.row_stride(id, span);
        PtrVal {
            base: Base::Arr(id),
            off: Expr::Int(0),
            stride,
            elem_size: self.elem_size(id),
            comp: None,
        }
    }

    /// A pointer into an array of structs: its offset is unknown, because pointer arithmetic
    /// counts elements while the IR array counts members.
    fn struct_array_ptr(&mut self, id: ArrayId, span: Span) -> PtrVal {
        let off = self.unknown("pointer into an array of structs", span, false);
        PtrVal {
            base: Base::Arr(id),
            off,
            stride: Expr::Int(1),
            elem_size: self.elem_size(id),
            comp: None,
        }
    }

    pub fn slot_value(&mut self, slot: usize) -> PtrVal {
        let s = &mut self.slots[slot];
        s.used = true;
        let off = match s.off_local {
            Some(l) => Expr::Local(l),
            None => s.off_expr.clone(),
        };
        let (base, elem_size, comp) = (s.base.clone(), s.elem_size, s.comp);
        // A pointer whose element is several cells of its array steps over that many.
        let stride = Expr::Int(self.slot_stride(slot));
        PtrVal {
            base,
            off,
            stride,
            elem_size,
            comp,
        }
    }

    /// The place `p[i]` denotes.
    pub fn deref(&mut self, p: &PtrVal, i: Expr) -> Place {
        // A pointer's target set can come from the previous lowering pass (see `lower_kernel`)
        // and name an array this pass has not declared yet at this point: the target is then
        // not known here, so the access may touch any array.
        let declared = self.k.arrays.len();
        if p.base
            .arrays()
            .iter()
            .any(|a| *a != ALL_ARRAYS && a.0 as usize >= declared)
        {
            return Place::Unknown;
        }
        match &p.base {
            Base::Arr(id)
                if !(self.view_changed.contains(id) && p.elem_size != self.elem_size(*id)) =>
            {
                match self.wide_deref(p, *id, i.clone()) {
                    Some(place) => place,
                    None => self.deref_cell(p, *id, i),
                }
            }
            Base::Arr(id) => self.deref_cell(p, *id, i),
            Base::Choice(sel, a, b) => self.deref_choice(p, Expr::Local(*sel), *a, *b, i),
            Base::Many(v) => Place::Many(v.clone()),
            Base::Private => Place::Private,
            Base::Unknown | Base::Null => Place::Unknown,
        }
    }

    /// `p[i]` for a pointer whose elements are cells of its array `id`.
    pub fn deref_cell(&mut self, p: &PtrVal, id: ArrayId, i: Expr) -> Place {
        let mut off = fold(&Expr::bin(
            BinOp::Add,
            p.off.clone(),
            Expr::bin(BinOp::Mul, i, p.stride.clone()),
        ));
        if self.view_changed.contains(&id) && p.elem_size != self.elem_size(id) {
            // Another pointer re-viewed this array with a different element type: this
            // pointer's indices are in other units.
            let span = self.src.at.unwrap_or_default();
            off = self.unknown(
                "index through a pointer whose element type differs from another view of the array",
                span,
                false,
            );
        }
        let ndims = self.k.arrays.get(id.0 as usize).map_or(0, |a| a.dims.len());
        if ndims == 0 && off == Expr::Int(0) {
            // `*p` with `p = &x` for a shared scalar `x`.
            return Place::Cell {
                array: id,
                index: vec![],
                flat: false,
            };
        }
        Place::Cell {
            array: id,
            index: vec![off],
            flat: ndims != 1,
        }
    }

    /// A subscript expression: either an element (place) or, for a partial subscript of a
    /// multi-dimensional array, a pointer into it.
    pub fn subscript(&mut self, n: Node) -> Result<Place, PtrVal> {
        let (base, idxs) = self.subscript_chain(n);
        let span = self.span(n);
        if base.kind() == "identifier" {
            let name = self.text(base);
            let is_macro = self
                .tab
                .macros
                .get(&name)
                .is_some_and(|m| m.params.is_none())
                && !self.expanding.contains(&name);
            if !is_macro {
                match self.lookup(&name) {
                    Some(Binding::Array(id)) if self.struct_elem_dims(id).is_some() => {
                        let d0 = self.struct_elem_dims(id).unwrap_or(0);
                        let mut exprs: Vec<Expr> =
                            idxs.iter().map(|i| self.scalar_expr(*i)).collect();
                        if self.view_changed.contains(&id) {
                            for e in exprs.iter_mut() {
                                *e = self.unknown("index into an array also accessed through a pointer of another element type", span, false);
                            }
                        }
                        if exprs.len() < d0 {
                            // A pointer to a row of structs: its arithmetic counts elements.
                            let p = self.array_ptr(id, span);
                            return Err(p);
                        }
                        if exprs.len() > d0 {
                            // `a[i][j]` past the element (an `operator[]` of the struct): some
                            // member.
                            exprs.truncate(d0);
                            exprs.push(self.unknown("subscript of a struct element", span, false));
                        }
                        return Ok(Place::Cell {
                            array: id,
                            index: exprs,
                            flat: false,
                        });
                    }
                    Some(Binding::Array(id)) => {
                        let d = self.k.arrays[id.0 as usize].dims.len();
                        if idxs.len() <= d && d > 0 {
                            let mut exprs: Vec<Expr> =
                                idxs.iter().map(|i| self.scalar_expr(*i)).collect();
                            if self.view_changed.contains(&id) {
                                // The array is also used through a pointer of another element
                                // type: indices by name are in different units.
                                for e in exprs.iter_mut() {
                                    *e = self.unknown("index into an array also accessed through a pointer of another element type", span, false);
                                }
                            }
                            if exprs.len() == d {
                                return Ok(Place::Cell {
                                    array: id,
                                    index: exprs,
                                    flat: false,
                                });
                            }
                            let off = self.flat_offset(id, &exprs, span);
                            return Err(PtrVal {
                                base: Base::Arr(id),
                                off,
                                stride: Expr::Int(1),
                                elem_size: self.elem_size(id),
                                comp: None,
                            });
                        }
                    }
                    Some(Binding::Ptr(slot))
                        if !self.slots[slot].inner.is_empty()
                            && idxs.len() <= 1 + self.slots[slot].inner.len() =>
                    {
                        // A parameter declared as an array of rows (`float t[][32]`).
                        let inner = self.slots[slot].inner.clone();
                        let exprs: Vec<Expr> = idxs.iter().map(|i| self.scalar_expr(*i)).collect();
                        let mut total = Expr::Int(0);
                        for (j, e) in exprs.iter().enumerate() {
                            let mut term = e.clone();
                            for d in inner.iter().skip(j) {
                                match d {
                                    Some(d) => term = Expr::bin(BinOp::Mul, term, d.clone()),
                                    None => term = self.unknown("index into an array parameter with an unknown inner dimension", span, false),
                                }
                            }
                            total = Expr::bin(BinOp::Add, total, term);
                        }
                        let total = fold(&total);
                        let p = self.slot_value(slot);
                        if exprs.len() == 1 + inner.len() {
                            return Ok(self.deref(&p, total));
                        }
                        let off = fold(&Expr::bin(BinOp::Add, p.off.clone(), total));
                        return Err(PtrVal { off, ..p });
                    }
                    Some(Binding::Private | Binding::PrivateObjects(_)) => {
                        for i in idxs {
                            self.scalar_expr(i);
                        }
                        return Ok(Place::Private);
                    }
                    Some(Binding::Object(o))
                        if self.class_has_method(&o.class, OPERATOR_SUBSCRIPT) =>
                    {
                        return self.object_subscript(o, n, &idxs, span);
                    }
                    Some(Binding::Object(o)) => {
                        // `obj[i]` on a class without an `operator[]` the file defines.
                        for i in idxs {
                            self.scalar_expr(i);
                        }
                        self.opaque(
                            format!("operator `[]` of `{}` (operators are not inlined)", o.class),
                            span,
                            vec![ALL_ARRAYS],
                            o.locals(),
                            true,
                        );
                        return Ok(Place::Private);
                    }
                    Some(Binding::PtrArray(b)) if !idxs.is_empty() => {
                        let _ = self.scalar_expr(idxs[0]);
                        let off = self.unknown(
                            "offset of a pointer taken from a pointer array",
                            span,
                            false,
                        );
                        let p = PtrVal {
                            base: b,
                            off,
                            stride: Expr::Int(1),
                            elem_size: None,
                            comp: None,
                        };
                        return match idxs.len() {
                            1 => Err(p),
                            2 => {
                                let i = self.scalar_expr(idxs[1]);
                                Ok(self.deref(&p, i))
                            }
                            _ => {
                                for i in &idxs[1..] {
                                    self.scalar_expr(*i);
                                }
                                Ok(Place::Unknown)
                            }
                        };
                    }
                    _ => {}
                }
            }
        }
        let (Some(arg), Some(index)) = (
            n.child_by_field_name("argument"),
            n.child_by_field_name("indices")
                .and_then(|l| l.named_child(0)),
        ) else {
            return Ok(Place::Unknown);
        };
        let bv = self.expr(arg);
        let i = self.scalar_expr(index);
        match bv {
            Val::P(p) => Ok(self.deref(&p, i)),
            // Subscripting something that is not a known pointer (a pointer loaded from memory,
            // a struct member, an unknown name): the target is unknown.
            _ => Ok(Place::Unknown),
        }
    }

    /// The place an lvalue expression denotes (index effects are emitted).
    pub fn place_of(&mut self, n: Node) -> Place {
        if !self.tick() {
            return Place::Unknown;
        }
        match n.kind() {
            "identifier" => {
                let name = self.text(n);
                if let Some(m) = self.tab.macros.get(&name) {
                    if m.params.is_none() && !self.expanding.contains(&name) {
                        return self.macro_place(&name, n);
                    }
                }
                match self.lookup(&name) {
                    Some(Binding::Local(l)) => Place::Local(l),
                    Some(Binding::Array(id)) => {
                        if self.k.arrays[id.0 as usize].dims.is_empty()
                            || self.struct_elem_dims(id) == Some(0)
                        {
                            Place::Cell {
                                array: id,
                                index: vec![],
                                flat: false,
                            }
                        } else {
                            Place::Unknown
                        }
                    }
                    Some(Binding::Ptr(s)) => Place::Ptr(s),
                    Some(Binding::Cell(p)) => p,
                    Some(Binding::Object(o)) => Place::Object(o),
                    Some(Binding::Private)
                    | Some(Binding::PrivateObjects(_))
                    | Some(Binding::Group(_))
                    | Some(Binding::PtrArray(_))
                    | Some(Binding::Lambda(_))
                    | Some(Binding::Functions(_)) => Place::Private,
                    Some(Binding::Value(_)) | None => {
                        // Assigned although not seen as assigned (e.g. through a macro): give it
                        // a local from here on. Names we do not know are thread-private.
                        let span = self.span(n);
                        let ty = ScalarType::Other;
                        let l = self.new_local(&name, ty, span);
                        self.bind(&name, Binding::Local(l));
                        Place::Local(l)
                    }
                }
            }
            "parenthesized_expression" => match n.named_child(0) {
                Some(x) => self.place_of(x),
                None => Place::Unknown,
            },
            "subscript_expression" => match self.subscript(n) {
                Ok(p) => p,
                Err(_) => Place::Unknown,
            },
            "pointer_expression" => {
                let op = n
                    .child_by_field_name("operator")
                    .map(|o| self.text(o))
                    .unwrap_or_default();
                let Some(arg) = n.child_by_field_name("argument") else {
                    return Place::Unknown;
                };
                if op != "*" {
                    return Place::Unknown;
                }
                if objects::is_this(arg) {
                    if let Some(o) = self.this_object() {
                        return Place::Object(o);
                    }
                }
                match self.expr(arg) {
                    Val::P(p) => self.deref(&p, Expr::Int(0)),
                    _ => Place::Unknown,
                }
            }
            "field_expression" => {
                // A member of an object of a class defined in the file.
                if let Some(b) = self.member_of_field(n) {
                    return Self::member_place(b);
                }
                let Some(arg) = n.child_by_field_name("argument") else {
                    return Place::Unknown;
                };
                let op = n
                    .child_by_field_name("operator")
                    .map(|o| self.text(o))
                    .unwrap_or_default();
                if op == "->" {
                    return match self.expr(arg) {
                        Val::P(p) => match self.deref(&p, Expr::Int(0)) {
                            // `v->y` through a vector pointer: that component's cells.
                            c @ Place::Cells { .. } => self.field_of_place(n, c),
                            other => other,
                        },
                        _ => Place::Unknown,
                    };
                }
                // A member of an array element is (part of) that element; a member of a local
                // struct is thread-private.
                match self.place_of(arg) {
                    c @ (Place::Cell { .. } | Place::Cells { .. } | Place::Choice { .. }) => {
                        self.field_of_place(n, c)
                    }
                    Place::Many(v) => Place::Many(v),
                    Place::Unknown => Place::Unknown,
                    _ => Place::Private,
                }
            }
            "cast_expression" => match n.child_by_field_name("value") {
                Some(v) => self.place_of(v),
                None => Place::Unknown,
            },
            // `obj.at(i)` returning a reference: the place it refers to.
            "call_expression" => self.call_ref(n).unwrap_or(Place::Unknown),
            _ => {
                self.expr(n);
                Place::Unknown
            }
        }
    }

    pub fn place_to_ptr(&mut self, p: Place, span: Span) -> PtrVal {
        let one = Expr::Int(1);
        match p {
            Place::Cell { array, .. } if self.struct_members.contains_key(&array) => {
                self.struct_array_ptr(array, span)
            }
            Place::Cell { array, index, flat } => {
                let off = if flat || index.len() <= 1 {
                    index.first().cloned().unwrap_or(Expr::Int(0))
                } else {
                    self.flat_offset(array, &index, span)
                };
                PtrVal {
                    base: Base::Arr(array),
                    off,
                    stride: one,
                    elem_size: self.elem_size(array),
                    comp: None,
                }
            }
            Place::Cells {
                array,
                start,
                width,
                ..
            } => self.cells_ptr(array, start, width),
            Place::Choice { sel, a, b } => self.choice_ptr(sel, *a, *b, span),
            Place::Many(v) => PtrVal {
                base: Base::Many(v),
                off: Expr::Int(0),
                stride: one,
                elem_size: None,
                comp: None,
            },
            Place::Local(_) | Place::Private => PtrVal {
                base: Base::Private,
                off: Expr::Int(0),
                stride: one,
                elem_size: None,
                comp: None,
            },
            Place::Unknown | Place::Ptr(_) | Place::Object(_) => PtrVal {
                base: Base::Unknown,
                off: Expr::Int(0),
                stride: one,
                elem_size: None,
                comp: None,
            },
        }
    }

    /// `&x`.
    pub fn address_of(&mut self, arg: Node) -> Val {
        let span = self.span(arg);
        match arg.kind() {
            "subscript_expression" => match self.subscript(arg) {
                Ok(p) => Val::P(self.place_to_ptr(p, span)),
                Err(p) => Val::P(p),
            },
            "identifier" => {
                let name = self.text(arg);
                match self.lookup(&name) {
                    Some(Binding::Array(id)) => Val::P(self.array_ptr(id, span)),
                    _ => {
                        let p = self.place_of(arg);
                        Val::P(self.place_to_ptr(p, span))
                    }
                }
            }
            "pointer_expression"
                if arg
                    .child_by_field_name("operator")
                    .is_some_and(|o| self.text(o) == "*") =>
            {
                match arg.child_by_field_name("argument") {
                    Some(a) => self.expr(a),
                    None => Val::P(PtrVal {
                        base: Base::Unknown,
                        off: Expr::Int(0),
                        stride: Expr::Int(1),
                        elem_size: None,
                        comp: None,
                    }),
                }
            }
            "field_expression" => {
                let p = self.place_of(arg);
                let mut v = self.place_to_ptr(p, span);
                if matches!(v.base, Base::Arr(_)) {
                    // A member inside an element: the element offset is not a member offset.
                    v.off = self.unknown("address of a struct member", span, false);
                    v.elem_size = None;
                }
                Val::P(v)
            }
            _ => {
                let p = self.place_of(arg);
                Val::P(self.place_to_ptr(p, span))
            }
        }
    }

    pub fn read(&mut self, p: Place, span: Span) -> Expr {
        match p {
            Place::Cell { array, index, flat } if self.is_whole_struct(array, &index, flat) => {
                // All members are read; the value (a struct) is not a scalar.
                self.access(array, index, flat, AccessMode::Read, None, span);
                self.unknown("value of a whole struct", span, false)
            }
            Place::Cell { array, index, flat } => {
                Expr::Load(self.access(array, index, flat, AccessMode::Read, None, span))
            }
            Place::Cells {
                array,
                start,
                width,
                ..
            } => self.read_cells(array, &start, width, span),
            Place::Choice { sel, a, b } => self.read_choice(sel, *a, *b, span),
            Place::Local(l) => Expr::Local(l),
            Place::Many(v) => {
                self.opaque_read(
                    "read through a pointer that may point into different arrays",
                    span,
                    v,
                );
                self.unknown("value read through an ambiguous pointer", span, false)
            }
            Place::Unknown => {
                self.opaque_read(
                    "read through a pointer with an unknown target",
                    span,
                    vec![ALL_ARRAYS],
                );
                self.unknown("value read through an unknown pointer", span, false)
            }
            Place::Private => self.unknown("thread-private memory", span, false),
            Place::Ptr(_) => self.unknown("pointer value", span, false),
            Place::Object(_) => self.unknown("value of an object", span, false),
        }
    }

    pub fn write(&mut self, p: Place, value: Expr, span: Span) {
        match p {
            Place::Cell { array, index, flat } => {
                self.access(array, index, flat, AccessMode::Write, Some(value), span);
            }
            Place::Cells {
                array,
                start,
                width,
                ..
            } => self.write_cells(array, &start, width, span),
            Place::Choice { sel, a, b } => self.write_choice(sel, *a, *b, value, span),
            Place::Local(l) => {
                let ty = self
                    .k
                    .locals
                    .get(l.0 as usize)
                    .map(|x| x.ty)
                    .unwrap_or(ScalarType::Other);
                let value = self.coerce(ty, value);
                self.emit(Stmt::Assign {
                    local: l,
                    value,
                    span,
                })
            }
            Place::Many(v) => self.opaque(
                "write through a pointer that may point into different arrays",
                span,
                v,
                vec![],
                false,
            ),
            Place::Unknown => self.opaque(
                "write through a pointer with an unknown target",
                span,
                vec![ALL_ARRAYS],
                vec![],
                false,
            ),
            Place::Private => {}
            Place::Ptr(s) => self.ptr_assign(s, Val::S(value), span),
            Place::Object(o) => self.havoc_object(&o, span),
        }
    }

    fn ensure_off_local(&mut self, slot: usize, span: Span) -> LocalId {
        if let Some(l) = self.slots[slot].off_local {
            return l;
        }
        // Reassigned although the pre-scan did not see it (a pointer member changed by a
        // method, a pointer changed through a reference): a local from here on, and a new pass
        // that creates the local at the declaration. Without it, earlier uses would not see the
        // local, and a local first created inside a branch or a loop body would be initialized
        // only there (reset on every iteration).
        self.widened = true;
        let l = self.new_local(
            "pointer.offset",
            ScalarType::Int {
                bits: 64,
                signed: true,
            },
            span,
        );
        let off = self.slots[slot].off_expr.clone();
        self.emit(Stmt::Assign {
            local: l,
            value: off,
            span,
        });
        self.slots[slot].off_local = Some(l);
        l
    }

    pub fn ptr_assign(&mut self, slot: usize, v: Val, span: Span) {
        let (base, off) = match v {
            Val::P(p) => (p.base, p.off),
            Val::S(Expr::Int(0)) => (Base::Null, Expr::Int(0)),
            _ => (Base::Unknown, Expr::Int(0)),
        };
        let joined = self.slots[slot].base.join(&base);
        if joined != self.slots[slot].base {
            if self.slots[slot].used {
                self.widened = true;
            }
            self.slots[slot].base = joined;
        }
        let l = self.ensure_off_local(slot, span);
        self.emit(Stmt::Assign {
            local: l,
            value: off,
            span,
        });
    }

    pub fn ptr_add(&mut self, slot: usize, delta: Expr, span: Span) {
        let l = self.ensure_off_local(slot, span);
        // The offset counts cells: a step of a pointer to wider elements is several.
        let delta = match self.slot_stride(slot) {
            1 => delta,
            r => Expr::bin(BinOp::Mul, delta, Expr::Int(r)),
        };
        self.emit(Stmt::Assign {
            local: l,
            value: fold(&Expr::bin(BinOp::Add, Expr::Local(l), delta)),
            span,
        });
    }
}

impl Lowerer<'_, '_> {
    pub fn elem_size(&self, id: ArrayId) -> Option<i64> {
        self.elem_sizes.get(id.0 as usize).copied().flatten()
    }
}

/// `float *buf` (one level of pointer; initialized or not).
fn is_single_pointer(d: Node) -> bool {
    let mut cur = d;
    for _ in 0..8 {
        match cur.kind() {
            "init_declarator" | "attributed_declarator" | "parenthesized_declarator" => {
                match cur.child_by_field_name("declarator") {
                    Some(x) => cur = x,
                    None => return false,
                }
            }
            "pointer_declarator" => {
                return cur
                    .child_by_field_name("declarator")
                    .is_some_and(|x| x.kind() == "identifier")
            }
            _ => return false,
        }
    }
    false
}

impl<'t> Lowerer<'_, 't> {
    /// A `__device__ float *buf;` global that no function of the file assigns (the host sets
    /// it, with `cudaMemcpyToSymbol`): a pointer to an array of its own in global memory, like a
    /// pointer parameter. Reading the pointer itself cannot race, since nothing writes it.
    ///
    /// Assumption: two such pointer globals do not alias each other (nor a pointer parameter),
    /// as two pointer parameters are assumed not to (tests/fixtures/README.md).
    pub(super) fn device_pointer_global(
        &mut self,
        name: &str,
        g: crate::collect::GlobalVar<'t>,
        elem: ScalarType,
        ty: &str,
        span: Span,
    ) -> Option<Binding> {
        if !is_single_pointer(g.declarator) || self.global_assigned(name) {
            return None;
        }
        let size = typenames::elem_size(ty);
        // Like a `float4 *` parameter: an array of component cells (cxx/vectors.rs).
        let (elem, cell) = match typenames::vector_type(ty) {
            Some(v) => (v.comp, Some(v.comp_size)),
            None => (elem, size),
        };
        let id = self.new_array(
            name,
            MemSpace::Global,
            ArrayOrigin::DeviceGlobal,
            elem,
            cell,
            vec![None],
            span,
        );
        let slot = self.new_slot(
            (g.file, g.declarator.start_byte()),
            Base::Arr(id),
            Expr::Int(0),
            size,
            name,
        );
        self.slots[slot].comp = typenames::comp_size(ty);
        Some(Binding::Ptr(slot))
    }

    /// Whether some function of the file assigns `name` or takes its address (conservatively:
    /// a local of the same name counts too).
    pub(super) fn global_assigned(&self, name: &str) -> bool {
        self.tab
            .kernels
            .iter()
            .chain(self.tab.funcs.values().flatten())
            .any(|def| {
                let text = &self.tab.texts[def.file.0 as usize];
                def.node
                    .child_by_field_name("body")
                    .is_some_and(|b| assigned_names(b, text).contains(name))
            })
    }
}

/// The name under which a class's `operator[]` is collected (`collect/classes.rs`).
pub(crate) const OPERATOR_SUBSCRIPT: &str = "operator[]";

impl Lowerer<'_, '_> {
    /// `obj[i]` (`obj[i][j]`, …) on an object whose class defines `operator[]`: the operator is
    /// inlined like any method (`obj.operator[](i)`). A reference it returns is the place; a
    /// pointer (a row) is indexed further by the next subscripts; a value is read into a fresh
    /// local (it cannot be assigned to).
    fn object_subscript(
        &mut self,
        o: Rc<Object>,
        n: Node,
        idxs: &[Node],
        span: Span,
    ) -> Result<Place, PtrVal> {
        let Some((first, rest)) = idxs.split_first() else {
            return Ok(Place::Unknown);
        };
        self.ref_result = None;
        let v = self.method_call(o, OPERATOR_SUBSCRIPT, n, &[*first], true);
        if let Some(place) = self.ref_result.take() {
            if rest.is_empty() {
                return Ok(place);
            }
            // A reference to a pointer or an object, subscripted again: not followed.
            for i in rest {
                self.scalar_expr(*i);
            }
            let u = self.unknown("subscript of what `operator[]` returns", span, false);
            return Err(PtrVal {
                base: Base::Unknown,
                off: u,
                stride: Expr::Int(1),
                elem_size: None,
                comp: None,
            });
        }
        match v {
            // A row: `acc[y][x]` with `T *operator[](int y)`.
            Val::P(p) if rest.len() <= 1 => match rest.first() {
                Some(i) => {
                    let e = self.scalar_expr(*i);
                    Ok(self.deref(&p, e))
                }
                None => Err(p),
            },
            Val::S(e) if rest.is_empty() => {
                Ok(Place::Local(self.local_holding("operator[]", e, span)))
            }
            _ => {
                for i in rest {
                    self.scalar_expr(*i);
                }
                Ok(Place::Unknown)
            }
        }
    }
}
