//! Expressions: values, operators, assignments, macro expansion.

use super::*;
use crate::consteval::snippet_expr;
use crate::text::{parse_float_literal, parse_int_literal};

fn binop_of(op: &str) -> Option<BinOp> {
    Some(match op {
        "+" => BinOp::Add,
        "-" => BinOp::Sub,
        "*" => BinOp::Mul,
        "/" => BinOp::Div,
        "%" => BinOp::Rem,
        "<<" => BinOp::Shl,
        ">>" => BinOp::Shr,
        "&" | "bitand" => BinOp::BitAnd,
        "|" | "bitor" => BinOp::BitOr,
        "^" | "xor" => BinOp::BitXor,
        "<" => BinOp::Lt,
        "<=" => BinOp::Le,
        ">" => BinOp::Gt,
        ">=" => BinOp::Ge,
        "==" => BinOp::Eq,
        "!=" | "not_eq" => BinOp::Ne,
        "&&" | "and" => BinOp::And,
        "||" | "or" => BinOp::Or,
        _ => return None,
    })
}

/// Whether `e` is already a truth value.
pub(crate) fn is_boolish(e: &Expr) -> bool {
    match e {
        Expr::Bool(_) => true,
        Expr::Unary(UnOp::Not, _) => true,
        Expr::Binary(op, _, _) => matches!(
            op,
            BinOp::Lt
                | BinOp::Le
                | BinOp::Gt
                | BinOp::Ge
                | BinOp::Eq
                | BinOp::Ne
                | BinOp::And
                | BinOp::Or
        ),
        _ => false,
    }
}

pub(crate) fn truthy(e: Expr) -> Expr {
    if is_boolish(&e) {
        e
    } else {
        match e {
            Expr::Int(v) => Expr::Bool(v != 0),
            e => Expr::bin(BinOp::Ne, e, Expr::Int(0)),
        }
    }
}

impl<'a, 't> Lowerer<'a, 't> {
    pub fn scalar_expr(&mut self, n: Node) -> Expr {
        let v = self.expr(n);
        let span = self.span(n);
        self.scalar_of(v, span)
    }

    pub fn scalar_of(&mut self, v: Val, span: Span) -> Expr {
        match v {
            Val::S(e) => e,
            // A pointer used as a number (null checks, comparisons): parameters are uniform.
            Val::P(p) => {
                let uniform = matches!(p.base, Base::Arr(id) if matches!(self.k.arrays.get(id.0 as usize).map(|a| &a.origin), Some(ArrayOrigin::Param(_))))
                    && p.off == Expr::Int(0);
                self.unknown("pointer value", span, uniform)
            }
            Val::Group(_) => self.unknown("thread group object", span, true),
            Val::Void => self.unknown("void value", span, true),
        }
    }

    pub fn cond_expr(&mut self, n: Node) -> Expr {
        let e = self.scalar_expr(n);
        self.truthy_typed(fold(&e))
    }

    /// GPUVerify's `__implies(a, b)` (in `__requires`, `__assume`, ...): `!a || b`.
    pub fn implies(&mut self, a: Node, b: Node) -> Val {
        let a = self.cond_expr(a);
        let b = self.cond_expr(b);
        Val::S(Expr::bin(BinOp::Or, Expr::un(UnOp::Not, a), b))
    }

    /// [`truthy`], knowing that `bool` locals are truth values already.
    pub fn truthy_typed(&self, e: Expr) -> Expr {
        if self.is_bool_local(&e) {
            return e;
        }
        truthy(e)
    }

    /// Keeps the IR well-typed: truth values used as numbers become `c ? 1 : 0`, numbers
    /// stored in `bool` locals become `x != 0`.
    pub fn coerce(&self, ty: ScalarType, e: Expr) -> Expr {
        match ty {
            ScalarType::Bool => self.truthy_typed(e),
            _ if is_boolish(&e) => Expr::ite(e, Expr::Int(1), Expr::Int(0)),
            _ => e,
        }
    }

    /// The C integer type of a lowered expression after promotion, where the front end knows it
    /// (as the checker's `ty_of` computes it). `auto` declarations take it; `None` for floats,
    /// unknowns and loads.
    pub fn c_type_of(&self, e: &Expr) -> Option<ScalarType> {
        let int = |bits: u8, signed: bool| Some(ScalarType::Int { bits, signed });
        let promoted = |t: Option<ScalarType>| match t {
            Some(ScalarType::Int { bits, .. }) if bits < 32 => int(32, true),
            Some(ScalarType::Bool) => int(32, true),
            Some(t @ ScalarType::Int { .. }) => Some(t),
            _ => None,
        };
        let common = |a: Option<ScalarType>, b: Option<ScalarType>| match (promoted(a), promoted(b))
        {
            (
                Some(ScalarType::Int {
                    bits: ab,
                    signed: asg,
                }),
                Some(ScalarType::Int {
                    bits: bb,
                    signed: bsg,
                }),
            ) => {
                if asg == bsg {
                    int(ab.max(bb), asg)
                } else {
                    let (sb, ub) = if asg { (ab, bb) } else { (bb, ab) };
                    if ub >= sb {
                        int(ub, false)
                    } else {
                        int(sb, true)
                    }
                }
            }
            _ => None,
        };
        match e {
            Expr::Int(v) => int(if i32::try_from(*v).is_ok() { 32 } else { 64 }, true),
            Expr::Bool(_) => int(32, true),
            Expr::Float(_) | Expr::Unknown(_) | Expr::Load(_) => None,
            Expr::Builtin(Builtin::WarpSize) => int(32, true),
            Expr::Builtin(_) => int(32, false),
            Expr::Param(p) => promoted(self.k.params.get(p.0 as usize).map(|p| p.ty)),
            Expr::Local(l) => promoted(self.k.locals.get(l.0 as usize).map(|l| l.ty)),
            Expr::Unary(UnOp::Not, _) => int(32, true),
            Expr::Unary(_, a) => promoted(self.c_type_of(a)),
            Expr::Binary(op, a, b) => match op {
                BinOp::Lt
                | BinOp::Le
                | BinOp::Gt
                | BinOp::Ge
                | BinOp::Eq
                | BinOp::Ne
                | BinOp::And
                | BinOp::Or => int(32, true),
                BinOp::Shl | BinOp::Shr => promoted(self.c_type_of(a)),
                _ => common(self.c_type_of(a), self.c_type_of(b)),
            },
            Expr::Ite(_, a, b) => common(self.c_type_of(a), self.c_type_of(b)),
            Expr::Cast(ty, _) => promoted(Some(*ty)),
        }
    }

    /// `value` as a value of the declared type `ty` (a `const int tid = threadIdx.x` is an `int`:
    /// `tid < n` compares signed). Only integer conversions that change the type are written.
    pub fn converted(&self, ty: ScalarType, value: Expr) -> Expr {
        match ty {
            ScalarType::Int { .. } => {
                let promoted_ty = match ty {
                    ScalarType::Int { bits, .. } if bits < 32 => ScalarType::INT,
                    t => t,
                };
                match self.c_type_of(&value) {
                    Some(t) if t == ty || (t == promoted_ty && ty == promoted_ty) => value,
                    Some(_) => Expr::Cast(ty, Box::new(value)),
                    // Unknown type (loads, floats): the checker converts by the declared type
                    // only where it knows the source type, so nothing is lost by the cast.
                    None => value,
                }
            }
            _ => value,
        }
    }

    fn is_bool_local(&self, e: &Expr) -> bool {
        match e {
            Expr::Local(l) => self
                .k
                .locals
                .get(l.0 as usize)
                .is_some_and(|x| x.ty == ScalarType::Bool),
            Expr::Param(p) => self
                .k
                .params
                .get(p.0 as usize)
                .is_some_and(|x| x.ty == ScalarType::Bool),
            _ => false,
        }
    }

    pub fn as_number(&self, e: Expr) -> Expr {
        if is_boolish(&e) || self.is_bool_local(&e) {
            Expr::ite(e, Expr::Int(1), Expr::Int(0))
        } else {
            e
        }
    }

    /// An expression evaluated for its effects only.
    pub fn expr_discard(&mut self, n: Node) {
        self.expr(n);
    }

    pub fn expr(&mut self, n: Node) -> Val {
        if !self.tick() {
            return Val::S(Expr::Int(0));
        }
        self.depth += 1;
        let v = if self.depth > MAX_DEPTH {
            self.set_unsupported("expressions or statements are nested too deeply");
            Val::S(Expr::Int(0))
        } else {
            self.expr_inner(n)
        };
        self.depth -= 1;
        v
    }

    fn expr_inner(&mut self, n: Node) -> Val {
        let span = self.span(n);
        if n.is_error() || n.is_missing() {
            let (arrays, locals) = self.mentions(n);
            self.opaque("syntax error", span, arrays, locals, true);
            return Val::S(self.unknown("syntax error", span, false));
        }
        match n.kind() {
            "number_literal" => {
                let t = self.text(n);
                let lower = t.to_ascii_lowercase();
                let is_hex = lower.starts_with("0x");
                let is_float =
                    !is_hex && (t.contains('.') || lower.contains('e') || lower.ends_with('f'));
                if is_float {
                    match parse_float_literal(&t) {
                        Some(f) => Val::S(Expr::Float(f)),
                        None => Val::S(self.unknown("float literal", span, true)),
                    }
                } else {
                    match parse_int_literal(&t) {
                        Some(v) => Val::S(Expr::Int(v)),
                        None => Val::S(self.unknown("integer literal out of range", span, true)),
                    }
                }
            }
            "char_literal" => {
                match crate::consteval::eval(n, &self.src.text.clone(), self.tab, 0) {
                    Some(v) => Val::S(Expr::Int(v)),
                    None => Val::S(self.unknown("character literal", span, true)),
                }
            }
            "true" => Val::S(Expr::Bool(true)),
            "false" => Val::S(Expr::Bool(false)),
            "null" | "nullptr" => Val::S(Expr::Int(0)),
            "string_literal" | "concatenated_string" | "raw_string_literal" => {
                Val::S(self.unknown("string", span, true))
            }
            // (`type_identifier`: an argument of `Acc b(a);`, parsed as a prototype.)
            "identifier" | "type_identifier" => self.identifier(n),
            "parenthesized_expression" if n.has_error() => {
                // `(f = e, r)`, misread by the grammar: its re-parse (commas.rs).
                let text = self.src.text.clone();
                match crate::commas::reparse(n, &text) {
                    Some(tree) => match crate::commas::comma_node(&tree, n, &text) {
                        Some(comma) => self.expr(comma),
                        None => Val::S(self.unknown("syntax error", span, false)),
                    },
                    None => match n.named_child(n.named_child_count().saturating_sub(1) as u32) {
                        Some(x) => self.expr(x),
                        None => Val::Void,
                    },
                }
            }
            "parenthesized_expression" | "condition_clause" => {
                match n.named_child(n.named_child_count().saturating_sub(1) as u32) {
                    Some(x) => self.expr(x),
                    None => Val::Void,
                }
            }
            "comma_expression" => {
                if let Some(l) = n.child_by_field_name("left") {
                    self.expr_discard(l);
                }
                match n.child_by_field_name("right") {
                    Some(r) => self.expr(r),
                    None => Val::Void,
                }
            }
            "field_expression" => self.field(n),
            "qualified_identifier" => {
                let name = n
                    .child_by_field_name("name")
                    .map(|x| self.text(x))
                    .unwrap_or_default();
                match self.tab.enums.get(&name) {
                    Some(v) => Val::S(Expr::Int(*v)),
                    None => Val::S(self.unknown(
                        format!("unknown name `{}`", self.text(n)),
                        span,
                        false,
                    )),
                }
            }
            "unary_expression" => {
                let op = n
                    .child_by_field_name("operator")
                    .map(|o| self.text(o))
                    .unwrap_or_default();
                let Some(arg) = n.child_by_field_name("argument") else {
                    return Val::Void;
                };
                let a = self.scalar_expr(arg);
                Val::S(fold(&match op.as_str() {
                    "-" => Expr::un(UnOp::Neg, self.as_number(a)),
                    "!" | "not" => Expr::un(UnOp::Not, self.truthy_typed(a)),
                    "~" | "compl" => Expr::un(UnOp::BitNot, self.as_number(a)),
                    _ => self.as_number(a),
                }))
            }
            "binary_expression" => self.binary(n),
            "conditional_expression" => self.conditional(n),
            "assignment_expression" => self.assign(n),
            "update_expression" => self.update(n),
            "call_expression" => self.call(n),
            "subscript_expression" => match self.subscript(n) {
                Ok(p) => {
                    // A pointer loaded from a `T **` parameter's array (ptr_rows.rs).
                    let rows = self.rows_of(&p);
                    let v = self.read(p, span);
                    match rows {
                        Some(outer) => Val::P(self.row_pointer(outer, span)),
                        None => Val::S(v),
                    }
                }
                Err(p) => Val::P(p),
            },
            "pointer_expression" => {
                let op = n
                    .child_by_field_name("operator")
                    .map(|o| self.text(o))
                    .unwrap_or_default();
                let Some(arg) = n.child_by_field_name("argument") else {
                    return Val::Void;
                };
                if op == "&" {
                    return self.address_of(arg);
                }
                match self.expr(arg) {
                    Val::P(p) => {
                        let place = self.deref(&p, Expr::Int(0));
                        Val::S(self.read(place, span))
                    }
                    _ => Val::S(self.unknown("dereference of a non-pointer", span, false)),
                }
            }
            "cast_expression" => {
                let ty = n.child_by_field_name("type");
                let Some(value) = n.child_by_field_name("value") else {
                    return Val::Void;
                };
                self.cast(ty, value, span)
            }
            "sizeof_expression" => {
                if let Some(t) = n.child_by_field_name("type") {
                    let t = self.type_text(t);
                    if let Some(v) = crate::typenames::sizeof_type(&t) {
                        return Val::S(Expr::Int(v));
                    }
                }
                Val::S(self.unknown("sizeof of a non-basic type", span, true))
            }
            "alignof_expression" | "offsetof_expression" => {
                Val::S(self.unknown("alignof/offsetof", span, true))
            }
            "initializer_list" => {
                let mut c = n.walk();
                let kids: Vec<Node> = n.named_children(&mut c).collect();
                for k in kids {
                    self.expr_discard(k);
                }
                Val::S(self.unknown("initializer list", span, false))
            }
            "lambda_expression" => {
                self.lambda_escapes(n);
                Val::S(self.unknown("lambda", span, false))
            }
            "this" => Val::S(self.unknown("this", span, false)),
            "compound_literal_expression" => Val::S(self.unknown("compound literal", span, false)),
            "gnu_asm_expression" => {
                let (arrays, mut locals) = self.mentions(n);
                // Output operands (`: "=r"(lane)`) are assigned by the assembly.
                if let Some(outs) = n.child_by_field_name("output_operands") {
                    let (_, all) = self.all_mentioned_locals(outs);
                    locals.extend(all);
                }
                self.opaque("inline assembly", span, arrays, locals, true);
                Val::Void
            }
            "template_function" => Val::S(self.unknown("template function name", span, false)),
            _ => {
                let kind = n.kind().to_string();
                let (arrays, locals) = self.mentions(n);
                if !arrays.is_empty() {
                    self.opaque(
                        format!("unsupported expression ({kind})"),
                        span,
                        arrays,
                        locals,
                        false,
                    );
                }
                Val::S(self.unknown(format!("unsupported expression ({kind})"), span, false))
            }
        }
    }

    /// Type text with object-like type macros (`#define REAL float`) expanded.
    pub fn type_text(&mut self, t: Node) -> String {
        let s = self.text(t);
        if let Some(m) = self.tab.macros.get(s.trim()) {
            if m.params.is_none() {
                return m.body.clone();
            }
        }
        s
    }

    fn identifier(&mut self, n: Node) -> Val {
        let name = self.text(n);
        let span = self.span(n);
        if let Some(m) = self.tab.macros.get(&name) {
            if m.params.is_none() && !self.expanding.contains(&name) {
                return self.expand_macro(&name, None, n);
            }
        }
        match self.lookup(&name) {
            Some(Binding::Local(l)) => Val::S(Expr::Local(l)),
            Some(Binding::Value(e)) => Val::S(e),
            Some(Binding::Array(id)) => {
                if self.k.arrays[id.0 as usize].dims.is_empty()
                    || self.struct_elem_dims(id) == Some(0)
                {
                    let p = Place::Cell {
                        array: id,
                        index: vec![],
                        flat: false,
                    };
                    Val::S(self.read(p, span))
                } else {
                    Val::P(self.array_ptr(id, span))
                }
            }
            Some(Binding::Ptr(s)) => Val::P(self.slot_value(s)),
            Some(Binding::Private | Binding::PrivateObjects(_)) => Val::P(PtrVal {
                base: Base::Private,
                off: Expr::Int(0),
                stride: Expr::Int(1),
                elem_size: None,
                comp: None,
            }),
            Some(Binding::Cell(p)) => Val::S(self.read(p, span)),
            // The array decays to a pointer to its first pointer element.
            Some(Binding::PtrArray(_)) => Val::P(PtrVal {
                base: Base::Private,
                off: Expr::Int(0),
                stride: Expr::Int(1),
                elem_size: None,
                comp: None,
            }),
            Some(Binding::Group(g)) => Val::Group(g),
            Some(Binding::Object(_)) => {
                Val::S(self.unknown(format!("value of the object `{name}`"), span, false))
            }
            Some(Binding::Lambda(l)) => {
                let locals = cxx::lambdas::lambda_locals(&l);
                self.escaped_locals.extend(locals);
                Val::S(self.unknown(format!("value of the lambda `{name}`"), span, false))
            }
            Some(Binding::Functions(_)) => {
                Val::S(self.unknown(format!("address of the function `{name}`"), span, false))
            }
            None => match name.as_str() {
                "warpSize" => Val::S(Expr::Builtin(Builtin::WarpSize)),
                "NULL" | "nullptr" => Val::S(Expr::Int(0)),
                "INT_MAX" => Val::S(Expr::Int(i32::MAX as i64)),
                "INT_MIN" => Val::S(Expr::Int(i32::MIN as i64)),
                "UINT_MAX" => Val::S(Expr::Int(u32::MAX as i64)),
                "FLT_MAX" | "INFINITY" | "NAN" | "FLT_MIN" | "DBL_MAX" => {
                    Val::S(Expr::Float(f64::MAX))
                }
                _ => Val::S(self.unknown(format!("unknown name `{name}`"), span, false)),
            },
        }
    }

    fn field(&mut self, n: Node) -> Val {
        let span = self.span(n);
        let (Some(arg), Some(field)) = (
            n.child_by_field_name("argument"),
            n.child_by_field_name("field"),
        ) else {
            return Val::S(self.unknown("member access", span, false));
        };
        let fname = self.text(field);
        let dim = match fname.as_str() {
            "x" => Some(Dim::X),
            "y" => Some(Dim::Y),
            "z" => Some(Dim::Z),
            _ => None,
        };
        if let Some(dim) = dim {
            let mut base = self.text(arg);
            // cooperative groups: block.thread_index().x / block.group_index().x
            if arg.kind() == "call_expression" {
                if let Some(f) = arg
                    .child_by_field_name("function")
                    .filter(|f| f.kind() == "field_expression")
                {
                    let m = f
                        .child_by_field_name("field")
                        .map(|x| self.text(x))
                        .unwrap_or_default();
                    let obj = f.child_by_field_name("argument");
                    let is_block = obj.is_some_and(|o| {
                        let t = self.text(o);
                        t.ends_with("this_thread_block()")
                            || matches!(self.lookup(&t), Some(Binding::Group(GroupKind::Block)))
                    });
                    if is_block {
                        base = match m.as_str() {
                            "thread_index" => "threadIdx".into(),
                            "group_index" => "blockIdx".into(),
                            "group_dim" | "dim_threads" => "blockDim".into(),
                            _ => base,
                        };
                    }
                }
            }
            let b = match base.as_str() {
                "threadIdx" => Some(Builtin::ThreadIdx(dim)),
                "blockIdx" => Some(Builtin::BlockIdx(dim)),
                "blockDim" => Some(Builtin::BlockDim(dim)),
                "gridDim" => Some(Builtin::GridDim(dim)),
                _ => None,
            };
            if let Some(b) = b {
                if self.lookup(&base).is_none() {
                    return Val::S(Expr::Builtin(b));
                }
            }
        }
        // A member of an object of a class defined in the file (`obj.n`, `this->data`).
        if let Some(b) = self.member_of_field(n) {
            return self.member_value(b, span);
        }
        let op = n
            .child_by_field_name("operator")
            .map(|o| self.text(o))
            .unwrap_or_default();
        if op == "->" {
            return match self.expr(arg) {
                Val::P(p) => {
                    let place = self.deref(&p, Expr::Int(0));
                    Val::S(self.read(place, span))
                }
                _ => Val::S(self.unknown("member of a non-pointer", span, false)),
            };
        }
        let struct_name = arg.kind() == "identifier"
            && match self.lookup(&self.text(arg)) {
                Some(Binding::Array(id)) => self.struct_members.contains_key(&id),
                Some(Binding::Cell(Place::Cell { array, .. })) => {
                    self.struct_members.contains_key(&array)
                }
                _ => false,
            };
        if struct_name {
            // A member of a shared struct (or a reference to an element of a struct array).
            let p = self.place_of(n);
            return Val::S(self.read(p, span));
        }
        // A pointer member of a parameter of an unknown type or of a struct global the host
        // fills: a pointer to an array of its own (member_pointers.rs).
        if let Some(v) = self.member_pointer(arg, &fname, span) {
            return v;
        }
        match arg.kind() {
            "subscript_expression" | "pointer_expression" | "parenthesized_expression" => {
                let p = self.place_of(arg);
                let p = self.select_member(p, &fname, span);
                Val::S(self.read(p, span))
            }
            _ => match self.expr(arg) {
                Val::S(Expr::Load(id)) => Val::S(Expr::Load(id)),
                // A member of a by-value kernel parameter (a struct of sizes, …) is the same in
                // every thread.
                Val::S(Expr::Param(_)) => {
                    Val::S(self.unknown(format!("member `{fname}` of a parameter"), span, true))
                }
                _ => Val::S(self.unknown(format!("member `{fname}`"), span, false)),
            },
        }
    }

    fn binary(&mut self, n: Node) -> Val {
        let span = self.span(n);
        let op = n
            .child_by_field_name("operator")
            .map(|o| self.text(o))
            .unwrap_or_default();
        let (Some(l), Some(r)) = (
            n.child_by_field_name("left"),
            n.child_by_field_name("right"),
        ) else {
            return Val::S(self.unknown("incomplete expression", span, false));
        };
        if op == "&&" || op == "||" || op == "and" || op == "or" {
            let is_and = op == "&&" || op == "and";
            let a = self.cond_expr(l);
            let (b, effects) = self.capture(|s| s.cond_expr(r));
            if effects.is_empty() {
                return Val::S(Expr::bin(if is_and { BinOp::And } else { BinOp::Or }, a, b));
            }
            // The right operand has memory effects that only happen when it is evaluated.
            let t = self.new_local("logical.tmp", ScalarType::Bool, span);
            self.emit(Stmt::Assign {
                local: t,
                value: a.clone(),
                span,
            });
            let mut then = effects;
            then.push(Stmt::Assign {
                local: t,
                value: b,
                span,
            });
            let cond = if is_and { a } else { Expr::un(UnOp::Not, a) };
            self.emit(Stmt::If {
                cond,
                then_branch: then,
                else_branch: vec![],
                span,
            });
            return Val::S(Expr::Local(t));
        }
        let a = self.expr(l);
        let b = self.expr(r);
        match (op.as_str(), a, b) {
            ("+", Val::P(p), Val::S(i)) | ("+", Val::S(i), Val::P(p)) => {
                let off = fold(&Expr::bin(
                    BinOp::Add,
                    p.off,
                    Expr::bin(BinOp::Mul, i, p.stride.clone()),
                ));
                Val::P(PtrVal { off, ..p })
            }
            ("-", Val::P(p), Val::S(i)) => {
                let off = fold(&Expr::bin(
                    BinOp::Sub,
                    p.off,
                    Expr::bin(BinOp::Mul, i, p.stride.clone()),
                ));
                Val::P(PtrVal { off, ..p })
            }
            ("-", Val::P(p), Val::P(q)) if p.base == q.base => {
                let cells = fold(&Expr::bin(BinOp::Sub, p.off, q.off));
                // Offsets count cells; the difference counts elements.
                match p.stride {
                    Expr::Int(r) if r > 1 && p.stride == q.stride => {
                        Val::S(fold(&Expr::bin(BinOp::Div, cells, Expr::Int(r))))
                    }
                    _ => Val::S(cells),
                }
            }
            (o, a, b) => {
                let a = self.scalar_of(a, span);
                let b = self.scalar_of(b, span);
                let a = self.as_number(a);
                let b = self.as_number(b);
                match binop_of(o) {
                    Some(bop) => Val::S(fold(&Expr::bin(bop, a, b))),
                    None => Val::S(self.unknown(format!("operator `{o}`"), span, false)),
                }
            }
        }
    }

    fn conditional(&mut self, n: Node) -> Val {
        let span = self.span(n);
        let (Some(c), Some(a), Some(b)) = (
            n.child_by_field_name("condition"),
            n.child_by_field_name("consequence"),
            n.child_by_field_name("alternative"),
        ) else {
            return Val::S(self.unknown("incomplete conditional", span, false));
        };
        let c = self.cond_expr(c);
        let (va, ea) = self.capture(|s| s.expr(a));
        let (vb, eb) = self.capture(|s| s.expr(b));
        if ea.is_empty() && eb.is_empty() {
            if let (Val::P(p), Val::P(q)) = (&va, &vb) {
                if let Some(r) = self.choose_ptr(&c, p, q, span) {
                    return Val::P(r);
                }
            }
            return match (va, vb) {
                (Val::P(p), Val::P(q)) => {
                    let base = p.base.join(&q.base);
                    Val::P(PtrVal {
                        base,
                        off: Expr::ite(c, p.off, q.off),
                        stride: p.stride,
                        elem_size: p.elem_size,
                        comp: None,
                    })
                }
                (Val::P(p), Val::S(Expr::Int(0))) | (Val::S(Expr::Int(0)), Val::P(p)) => Val::P(p),
                (va, vb) => {
                    let a = self.scalar_of(va, span);
                    let b = self.scalar_of(vb, span);
                    let (a, b) = if is_boolish(&a) == is_boolish(&b) {
                        (a, b)
                    } else {
                        (self.as_number(a), self.as_number(b))
                    };
                    Val::S(fold(&Expr::ite(c, a, b)))
                }
            };
        }
        // Accesses in a branch happen only on that branch: lower to an If.
        match (va, vb) {
            (Val::P(p), Val::P(q)) => {
                self.emit(Stmt::If {
                    cond: c,
                    then_branch: ea,
                    else_branch: eb,
                    span,
                });
                let base = p.base.join(&q.base);
                let off = self.unknown("pointer chosen by a conditional with effects", span, false);
                Val::P(PtrVal {
                    base,
                    off,
                    stride: p.stride,
                    elem_size: p.elem_size,
                    comp: None,
                })
            }
            (va, vb) => {
                let t = self.new_local("conditional.tmp", ScalarType::Other, span);
                let a = self.scalar_of(va, span);
                let b = self.scalar_of(vb, span);
                let mut then = ea;
                then.push(Stmt::Assign {
                    local: t,
                    value: a,
                    span,
                });
                let mut els = eb;
                els.push(Stmt::Assign {
                    local: t,
                    value: b,
                    span,
                });
                self.emit(Stmt::If {
                    cond: c,
                    then_branch: then,
                    else_branch: els,
                    span,
                });
                Val::S(Expr::Local(t))
            }
        }
    }

    fn cast(&mut self, ty: Option<Node>, value: Node, span: Span) -> Val {
        let v = self.expr(value);
        self.cast_val(ty, v, span)
    }

    /// A pointer reinterpreted as pointing to elements of size `target`.
    pub fn ptr_cast(
        &mut self,
        mut p: PtrVal,
        target: Option<i64>,
        base_ty: &str,
        span: Span,
    ) -> PtrVal {
        if base_ty.trim() == "void" {
            return p;
        }
        if matches!(p.base, Base::Choice(..)) && p.elem_size != target {
            // Each target would need its own re-view: only the arrays are kept.
            p.base = cxx::choice::without_choice(&p.base);
        }
        if let Base::Arr(id) = p.base {
            // `(float*)smem` at offset 0 before any other access: the array is viewed with the
            // new element type from now on (direct accesses by its name become imprecise).
            // Vector types are not re-views: their elements are cells (`cxx/vectors.rs`).
            if p.off == Expr::Int(0)
                && p.stride == Expr::Int(1)
                && !self.accessed.contains(&id)
                && target.is_some()
                && p.elem_size != target
                && p.elem_size == self.elem_size(id)
                && typenames::vector_type(base_ty).is_none()
            {
                if let Some(sz) = self.elem_sizes.get_mut(id.0 as usize) {
                    *sz = target;
                }
                self.view_changed.insert(id);
                p.elem_size = target;
                return p;
            }
        }
        if let Some(w) = self.widen_ptr(&p, target, base_ty) {
            return w;
        }
        if !matches!(p.base, Base::Arr(_)) || p.elem_size == target {
            p.comp = typenames::comp_size(base_ty);
            return p;
        }
        p.off = self.unknown(
            "pointer cast between element types of different sizes",
            span,
            false,
        );
        p.stride = self.unknown(
            "pointer cast between element types of different sizes",
            span,
            false,
        );
        p.elem_size = target;
        p
    }

    pub fn assign(&mut self, n: Node) -> Val {
        let span = self.span(n);
        let op = n
            .child_by_field_name("operator")
            .map(|o| self.text(o))
            .unwrap_or_else(|| "=".into());
        let (Some(left), Some(right)) = (
            n.child_by_field_name("left"),
            n.child_by_field_name("right"),
        ) else {
            return Val::S(self.unknown("incomplete assignment", span, false));
        };
        // Pointer variables (and pointer members of objects): assignments change the target.
        let ptr_var = match left.kind() {
            "identifier" => {
                let name = self.text(left);
                self.lookup(&name)
            }
            "field_expression" => self.member_of_field(left),
            _ => None,
        };
        if let Some(Binding::Ptr(slot)) = ptr_var {
            let rv = self.expr(right);
            match op.as_str() {
                "=" => self.ptr_assign(slot, rv.clone(), span),
                "+=" | "-=" => {
                    let d = self.scalar_of(rv, span);
                    let d = if op == "-=" {
                        Expr::un(UnOp::Neg, d)
                    } else {
                        d
                    };
                    self.ptr_add(slot, d, span);
                }
                _ => self.ptr_assign(slot, Val::S(Expr::Int(1)), span),
            }
            return Val::P(self.slot_value(slot));
        }
        // A whole object: member by member.
        if let Some(dst) = self.object_expr(left) {
            if op == "=" {
                match self.object_expr(right) {
                    Some(src) => self.copy_object(&dst, &src, span),
                    None => {
                        self.expr_discard(right);
                        self.havoc_object(&dst, span);
                    }
                }
            } else {
                // A compound assignment operator of the class: not modelled.
                self.expr_discard(right);
                self.opaque(
                    format!("operator `{op}` on an object"),
                    span,
                    vec![ALL_ARRAYS],
                    dst.locals(),
                    true,
                );
                self.havoc_object(&dst, span);
            }
            return Val::S(self.unknown("value of an object assignment", span, false));
        }
        let rv = self.expr(right);
        if let (Val::Group(g), "identifier") = (&rv, left.kind()) {
            let name = self.text(left);
            self.bind(&name, Binding::Group(*g));
            return rv;
        }
        let rhs = self.scalar_of(rv, span);
        let place = self.place_of(left);
        let lspan = self.span(left);
        if op == "=" {
            let is_local = matches!(place, Place::Local(_));
            let local = if let Place::Local(l) = place {
                Some(l)
            } else {
                None
            };
            self.write(place, rhs.clone(), lspan);
            return Val::S(if is_local {
                Expr::Local(local.unwrap_or(LocalId(0)))
            } else {
                rhs
            });
        }
        let bop = binop_of(op.trim_end_matches('='));
        let old = self.read(place.clone(), lspan);
        let new = match bop {
            Some(b) => fold(&Expr::bin(b, old, rhs)),
            None => self.unknown(format!("operator `{op}`"), span, false),
        };
        let local = if let Place::Local(l) = place {
            Some(l)
        } else {
            None
        };
        self.write(place, new.clone(), lspan);
        Val::S(match local {
            Some(l) => Expr::Local(l),
            None => new,
        })
    }

    pub fn update(&mut self, n: Node) -> Val {
        let span = self.span(n);
        let Some(arg) = n.child_by_field_name("argument") else {
            return Val::Void;
        };
        let op = n
            .child_by_field_name("operator")
            .map(|o| self.text(o))
            .unwrap_or_default();
        let inc = op == "++";
        let prefix = n
            .child(0)
            .is_some_and(|c| c.kind() == "++" || c.kind() == "--");
        let ptr_var = match arg.kind() {
            "identifier" => {
                let name = self.text(arg);
                self.lookup(&name)
            }
            "field_expression" => self.member_of_field(arg),
            _ => None,
        };
        if let Some(Binding::Ptr(slot)) = ptr_var {
            self.ptr_add(slot, Expr::Int(if inc { 1 } else { -1 }), span);
            return Val::P(self.slot_value(slot));
        }
        let place = self.place_of(arg);
        let aspan = self.span(arg);
        let old = self.read(place.clone(), aspan);
        let new = fold(&Expr::bin(
            if inc { BinOp::Add } else { BinOp::Sub },
            old.clone(),
            Expr::Int(1),
        ));
        let local = if let Place::Local(l) = place {
            Some(l)
        } else {
            None
        };
        self.write(place, new.clone(), aspan);
        Val::S(match (local, prefix) {
            (Some(l), true) => Expr::Local(l),
            // x++ on a local: the old value is the new one minus one (no temporary needed).
            (Some(l), false) => Expr::bin(
                if inc { BinOp::Sub } else { BinOp::Add },
                Expr::Local(l),
                Expr::Int(1),
            ),
            (None, true) => new,
            (None, false) => old,
        })
    }

    /// Expands a macro use: the (substituted) body is parsed as an expression, or else as
    /// statements; everything in it gets the use-site span.
    pub fn expand_macro(&mut self, name: &str, args: Option<Vec<String>>, use_node: Node) -> Val {
        let span = self.span(use_node);
        let Some(m) = self.tab.macros.get(name) else {
            return Val::S(self.unknown("macro", span, false));
        };
        if self.expanding.len() > 32 {
            return Val::S(self.unknown(format!("macro `{name}` nested too deeply"), span, false));
        }
        let Some(body) = m.expand(args.as_deref()) else {
            return Val::S(self.unknown(
                format!("macro `{name}` used with the wrong number of arguments"),
                span,
                false,
            ));
        };
        if let Some(lib) = &m.fallback {
            self.fallback_macros
                .insert(name.to_string(), lib.to_string());
        }
        if body.trim().is_empty() {
            return Val::Void;
        }
        let (text, tree) = crate::parse::parse_snippet_body(&body);
        let file = self.src.file;
        let saved = std::mem::replace(
            &mut self.src,
            Src {
                file,
                text: Arc::from(text.as_str()),
                at: Some(span),
            },
        );
        self.expanding.push(name.to_string());
        let v = match snippet_expr(&tree) {
            Some(e) => self.expr(e),
            None => {
                let body_node = tree
                    .root_node()
                    .named_child(0)
                    .and_then(|f| f.child_by_field_name("body"));
                match body_node {
                    Some(b) => {
                        self.stmts_of(b);
                        Val::Void
                    }
                    None => Val::Void,
                }
            }
        };
        self.expanding.pop();
        self.src = saved;
        v
    }

    pub fn macro_place(&mut self, name: &str, use_node: Node) -> Place {
        self.macro_place_with(name, None, use_node)
            .unwrap_or(Place::Unknown)
    }

    /// The place a macro use denotes when its expansion is an lvalue (`AT(i) += x` with
    /// `#define AT(i) a[(i) * 2]`); `None` when the expansion is not one (it is then a value,
    /// see [`Self::expand_macro`]), or when the arguments do not fit.
    pub fn macro_place_with(
        &mut self,
        name: &str,
        args: Option<Vec<String>>,
        use_node: Node,
    ) -> Option<Place> {
        if self.expanding.len() > 32 {
            // `expand_macro` says so.
            return None;
        }
        let span = self.span(use_node);
        let m = self.tab.macros.get(name)?;
        let fallback = m.fallback.clone();
        let function_like = args.is_some();
        let body = m.expand(args.as_deref())?;
        let (text, tree) = crate::parse::parse_snippet_body(&body);
        // An object-like macro used where a place is expected is lowered as one whatever its
        // shape (its effects are kept); a function-like one only when it expands to an lvalue.
        if function_like && !snippet_expr(&tree).is_some_and(is_lvalue_shape) {
            return None;
        }
        if let Some(lib) = fallback {
            self.fallback_macros
                .insert(name.to_string(), lib.to_string());
        }
        let file = self.src.file;
        let saved = std::mem::replace(
            &mut self.src,
            Src {
                file,
                text: Arc::from(text.as_str()),
                at: Some(span),
            },
        );
        self.expanding.push(name.to_string());
        let p = match snippet_expr(&tree) {
            Some(e) => self.place_of(e),
            None => Place::Unknown,
        };
        self.expanding.pop();
        self.src = saved;
        Some(p)
    }

    /// Every local an expression mentions (not only the assigned ones).
    pub fn all_mentioned_locals(&mut self, n: Node) -> (Vec<ArrayId>, Vec<LocalId>) {
        let text = self.text(n);
        let mut locals = Vec::new();
        let words: Vec<String> = crate::text::tokens(&text)
            .into_iter()
            .filter(|(id, _)| *id)
            .map(|(_, w)| w.to_string())
            .collect();
        for w in words {
            match self.lookup(&w) {
                Some(Binding::Local(l)) => locals.push(l),
                Some(Binding::Object(o)) => locals.extend(o.locals()),
                _ => {}
            }
        }
        (vec![], locals)
    }

    /// Arrays an unmodelled piece of syntax mentions (macros and unknown pointers count as
    /// "every array"), and the locals it may assign (written before an assignment operator,
    /// next to `++`/`--`, or with their address taken).
    pub fn mentions(&mut self, n: Node) -> (Vec<ArrayId>, Vec<LocalId>) {
        let mut arrays = Vec::new();
        let mut locals = Vec::new();
        let text = self.text(n);
        let toks: Vec<(bool, String)> = crate::text::tokens(&text)
            .into_iter()
            .filter(|(_, w)| !w.trim().is_empty())
            .map(|(i, w)| (i, w.to_string()))
            .collect();
        if toks.len() > 200_000 {
            return (vec![ALL_ARRAYS], vec![]);
        }
        let punct = |i: usize| {
            toks.get(i)
                .filter(|t| !t.0)
                .map(|t| t.1.as_str())
                .unwrap_or("")
        };
        for (i, (is_id, w)) in toks.iter().enumerate() {
            if !is_id {
                continue;
            }
            // A macro or a device function may touch any array (globals included).
            if self.tab.macros.contains_key(w) || self.tab.funcs.contains_key(w) {
                arrays.push(ALL_ARRAYS);
            }
            let (a, b, c) = (punct(i + 1), punct(i + 2), punct(i + 3));
            let before = if i > 0 { punct(i - 1) } else { "" };
            let before2 = if i > 1 { punct(i - 2) } else { "" };
            let assigned = (a == "=" && b != "=")
                || (matches!(a, "+" | "-" | "*" | "/" | "%" | "&" | "|" | "^") && b == "=")
                || (matches!(a, "<" | ">") && b == a && c == "=")
                || (a == "+" && b == "+")
                || (a == "-" && b == "-")
                || (before == "+" && before2 == "+")
                || (before == "-" && before2 == "-")
                || (before == "&" && before2 != "&");
            match self.lookup(w) {
                Some(Binding::Array(id)) => arrays.push(id),
                Some(Binding::Ptr(s)) => arrays.extend(self.slots[s].base.arrays()),
                Some(Binding::Cell(Place::Cell { array, .. })) => arrays.push(array),
                Some(Binding::Cell(_)) => arrays.push(ALL_ARRAYS),
                Some(Binding::Local(l)) if assigned => locals.push(l),
                // A parameter of a type the front end does not know (`Span<float> out` from a
                // missing header): the memory it reaches.
                Some(Binding::Value(Expr::Param(pid))) => {
                    arrays.extend(self.param_object_array(pid));
                }
                // An object: whatever its pointer members reach; any member may change.
                Some(Binding::Object(o)) => {
                    arrays.extend(self.object_arrays(&o));
                    locals.extend(o.locals());
                }
                Some(Binding::Lambda(l)) => {
                    arrays.push(ALL_ARRAYS);
                    locals.extend(cxx::lambdas::lambda_locals(&l));
                }
                _ => {}
            }
        }
        (arrays, locals)
    }
}

/// Whether an expression has the shape of an lvalue: a name, a subscript, a member, a
/// dereference (possibly parenthesized).
fn is_lvalue_shape(n: Node) -> bool {
    match n.kind() {
        "identifier" | "subscript_expression" | "field_expression" => true,
        "pointer_expression" => n
            .child_by_field_name("operator")
            .is_some_and(|o| o.kind() == "*"),
        "parenthesized_expression" => n.named_child(0).is_some_and(is_lvalue_shape),
        _ => false,
    }
}
