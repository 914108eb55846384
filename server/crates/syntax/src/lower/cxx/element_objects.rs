//! Methods of objects that live in memory: `ps[i].step(dt)` on an array of a class of the file
//! (a pointer parameter, a `__shared__`, `__device__` or `__constant__` array), `p->step(dt)`
//! on a pointer into one, `r.energy()` on a reference to an element.
//!
//! The method is inlined on a copy of the element: the members the method reads are read from
//! the element's cells before the call (copy-in), it runs on the copy as on a local object,
//! and each assignment of a member is followed by the write of its cell (on the paths that
//! assign it). Without a barrier in the method, no access of another thread can tell the
//! reads at the call's start from reads where the method makes them, so the same pairs of
//! accesses race (reported at the call's span).
//!
//! What this cannot follow stays an opaque method call (the object may hold pointers to any
//! array, the method may synchronize): a class with pointer or array members (their writes
//! would be to the copy only), a method that returns a reference or a pointer (into the copy),
//! takes a member's address (an atomic on `&count` would be on the copy), or runs a barrier.

use super::super::objects::ObjInit;
use super::super::*;
use crate::collect::{ClassDef, FieldKind, FuncDef};
use ir::assigned_locals;

/// The element's class and array, for an object expression `o` of a method call through the
/// operator `op` (`.` or `->`).
pub(crate) struct ElementObject {
    class: String,
    array: ArrayId,
}

impl<'a, 't> Lowerer<'a, 't> {
    /// Whether `o` (with `op`) names an element of an array of a class whose method `method`
    /// can be inlined on a copy (see the module's documentation); nothing is lowered.
    pub(crate) fn element_object(
        &mut self,
        o: Node,
        op: &str,
        method: &str,
        nargs: usize,
    ) -> Option<ElementObject> {
        let array = match op {
            "." => self.element_array(o)?,
            "->" => self.pointer_array(o)?,
            _ => return None,
        };
        if self.view_changed.contains(&array) {
            return None;
        }
        let class = self.elem_classes.get(&array)?.clone();
        let def = self.tab.classes.get(&class)?.as_ref()?;
        if def.unmodelled.is_some()
            || def
                .fields
                .iter()
                .any(|f| !matches!(f.kind, FieldKind::Scalar))
        {
            return None;
        }
        let picked = super::super::objects::pick_method(def.methods.get(method), nargs, &|a, b| {
            self.const_twins(a, b)
        })
        .ok()?;
        let body = picked
            .def
            .filter(|_| !picked.is_static && !picked.is_template)?;
        let returns_address = body
            .node
            .child_by_field_name("declarator")
            .is_some_and(|d| matches!(d.kind(), "pointer_declarator" | "reference_declarator"));
        let members: HashSet<String> = def
            .fields
            .iter()
            .map(|f| node_text(f.name, &self.tab.texts[def.file.0 as usize]).to_string())
            .collect();
        if returns_address || self.may_take_member_address(body, def, &members) {
            return None;
        }
        Some(ElementObject { class, array })
    }

    /// The array whose element `o` is: `a[i]`, `(*p)`, or a reference bound to an element.
    fn element_array(&mut self, o: Node) -> Option<ArrayId> {
        match o.kind() {
            "parenthesized_expression" => self.element_array(o.named_child(0)?),
            "subscript_expression" => {
                let (base, _) = self.subscript_chain(o);
                if base.kind() != "identifier" {
                    return None;
                }
                let name = self.text(base);
                self.named_array(&name)
            }
            "pointer_expression" => {
                let op = o.child_by_field_name("operator")?;
                if self.text(op) != "*" {
                    return None;
                }
                self.pointer_array(o.child_by_field_name("argument")?)
            }
            "identifier" => match self.lookup(&self.text(o).clone())? {
                Binding::Cell(Place::Cell { array, .. }) => Some(array),
                _ => None,
            },
            _ => None,
        }
    }

    /// The one array the pointer variable `p` points into.
    fn pointer_array(&mut self, p: Node) -> Option<ArrayId> {
        if p.kind() != "identifier" {
            return None;
        }
        let name = self.text(p);
        match self.lookup(&name)? {
            Binding::Ptr(slot) => match self.slots.get(slot)?.base {
                Base::Arr(id) => Some(id),
                _ => None,
            },
            _ => None,
        }
    }

    /// An array variable or a pointer variable into one array.
    fn named_array(&mut self, name: &str) -> Option<ArrayId> {
        match self.lookup(name)? {
            Binding::Array(id) => Some(id),
            Binding::Ptr(slot) => match self.slots.get(slot)?.base {
                Base::Arr(id) => Some(id),
                _ => None,
            },
            _ => None,
        }
    }

    /// `o.method(args)` (or `o->method(args)`) on the element `e` names: inlined on a copy
    /// of the element (see the module's documentation).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn element_method_call(
        &mut self,
        e: ElementObject,
        o: Node,
        op: &str,
        method: &str,
        targs: Option<Vec<Node>>,
        n: Node,
        args: &[Node],
    ) -> Val {
        let span = self.span(n);
        let place = match op {
            "->" => match self.expr(o) {
                Val::P(p) => self.deref(&p, Expr::Int(0)),
                _ => Place::Unknown,
            },
            _ => self.place_of(o),
        };
        let place = match place {
            Place::Cell { array, .. } if array == e.array => {
                self.snapshot_place(place, "element.index", span)
            }
            _ => return self.opaque_method(None, method, "methods are not inlined", n, args),
        };
        let key = (self.src.file, n.start_byte());
        let name = self.text(o);
        let copy = self.new_object(
            &e.class,
            &format!("{name} (copy)"),
            key,
            ObjInit::Unknown,
            span,
        );
        let (value, body) =
            self.capture(|s| s.method_call_with(copy.clone(), method, targs, n, args, false));
        let mut assigned = std::collections::BTreeSet::new();
        assigned_locals(&body, &mut assigned);
        if synchronizes(&body) {
            // Opaque instead, and whatever the lowered call would have changed (a local passed
            // by reference, one an argument assigns) is unknown after it.
            self.opaque(
                format!("method call `.{method}()` (a method with a barrier is not inlined on an element in memory)"),
                span,
                vec![ALL_ARRAYS],
                assigned.into_iter().collect(),
                true,
            );
            return Val::S(self.unknown(format!("result of `{method}`"), span, false));
        }
        let mut read = HashSet::new();
        block_reads(&body, &mut read);
        if let Val::S(v) = &value {
            expr_reads(v, &mut read);
        }
        let members: Vec<(String, LocalId)> = copy
            .members
            .iter()
            .filter_map(|(m, b)| match b {
                Binding::Local(l) => Some((m.clone(), *l)),
                _ => None,
            })
            .collect();
        for (m, l) in &members {
            if read.contains(l) {
                let cell = self.select_member(place.clone(), m, span);
                let v = self.read(cell, span);
                self.emit(Stmt::Assign {
                    local: *l,
                    value: v,
                    span,
                });
            }
        }
        // Each assignment of a member is followed by the write of its cell, on the paths that
        // assign it (`if (tid == owner) val = v;` writes only there).
        let mut cells: Vec<(LocalId, Place)> = Vec::new();
        for (m, l) in &members {
            if assigned.contains(l) {
                cells.push((*l, self.select_member(place.clone(), m, span)));
            }
        }
        let body = self.with_writes_after_assignments(body, &cells, span);
        self.out.extend(body);
        value
    }
}

impl<'a, 't> Lowerer<'a, 't> {
    /// Whether the method `body` of `class`, or a function or method of the class it may call
    /// (by name, at any depth), takes the address of a member named like one of `members`
    /// (`&count`, `&this->count`, `&c.count` in a helper handed `*this`): on the copy, an
    /// atomic or a write through that address would not reach the element.
    fn may_take_member_address(
        &self,
        body: FuncDef<'t>,
        class: &ClassDef<'t>,
        members: &HashSet<String>,
    ) -> bool {
        let mut todo = vec![body];
        let mut seen: HashSet<(u32, usize)> = HashSet::new();
        while let Some(f) = todo.pop() {
            if !seen.insert((f.file.0, f.node.start_byte())) {
                continue;
            }
            if seen.len() > MAX_CALLEES {
                return true;
            }
            let text = &self.tab.texts[f.file.0 as usize];
            let mut callees = Vec::new();
            if takes_member_address(f.node, text, members, &mut callees) {
                return true;
            }
            for name in callees {
                let methods = class.methods.get(&name).into_iter().flatten();
                todo.extend(methods.filter_map(|m| m.def));
                todo.extend(self.tab.funcs.get(&name).into_iter().flatten().copied());
            }
        }
        false
    }
}

/// How many functions [`Lowerer::may_take_member_address`] looks into before it gives up
/// (and the method call stays opaque).
const MAX_CALLEES: usize = 64;

impl<'a, 't> Lowerer<'a, 't> {
    /// `b` with the write of a member's cell (`cells`) right after each statement that may
    /// change the member's local (an assignment, unmodelled code handed it), at any depth; each
    /// write is an access of its own.
    fn with_writes_after_assignments(
        &mut self,
        b: Block,
        cells: &[(LocalId, Place)],
        span: Span,
    ) -> Block {
        let mut out = Vec::with_capacity(b.len());
        for s in b {
            let changed: Vec<LocalId> = match &s {
                Stmt::Assign { local, .. } => vec![*local],
                Stmt::Opaque(o) => o.locals.clone(),
                _ => vec![],
            };
            let s = match s {
                Stmt::If {
                    cond,
                    then_branch,
                    else_branch,
                    span: if_span,
                } => Stmt::If {
                    cond,
                    then_branch: self.with_writes_after_assignments(then_branch, cells, span),
                    else_branch: self.with_writes_after_assignments(else_branch, cells, span),
                    span: if_span,
                },
                Stmt::Loop(mut l) => {
                    for blk in [&mut l.init, &mut l.cond_effects, &mut l.body, &mut l.step] {
                        let taken = std::mem::take(blk);
                        *blk = self.with_writes_after_assignments(taken, cells, span);
                    }
                    Stmt::Loop(l)
                }
                other => other,
            };
            out.push(s);
            for (l, cell) in cells {
                if changed.contains(l) {
                    let cell = cell.clone();
                    let ((), w) = self.capture(|s| s.write(cell, Expr::Local(*l), span));
                    out.extend(w);
                }
            }
        }
        out
    }
}

/// Whether `body` takes the address of one of `members` (`&count`, `&this->count`); adds the
/// names it calls (`f(…)`, `obj.f(…)`, `this->f(…)`) to `callees`.
fn takes_member_address(
    body: Node,
    text: &str,
    members: &HashSet<String>,
    callees: &mut Vec<String>,
) -> bool {
    let mut stack = vec![body];
    let mut count = 0u32;
    while let Some(n) = stack.pop() {
        count += 1;
        if count > 100_000 {
            return true;
        }
        if n.kind() == "call_expression" {
            let name = n
                .child_by_field_name("function")
                .and_then(|f| match f.kind() {
                    "identifier" => Some(f),
                    "field_expression" => f.child_by_field_name("field"),
                    "qualified_identifier" => f.child_by_field_name("name"),
                    "template_function" => f.child_by_field_name("name"),
                    _ => None,
                });
            if let Some(x) = name {
                callees.push(node_text(x, text).to_string());
            }
        }
        if n.kind() == "pointer_expression"
            && n.child_by_field_name("operator")
                .is_some_and(|op| node_text(op, text) == "&")
        {
            let mut a = n.child_by_field_name("argument");
            while let Some(x) = a.filter(|x| x.kind() == "parenthesized_expression") {
                a = x.named_child(0);
            }
            let named = match a {
                Some(x) if x.kind() == "identifier" => Some(node_text(x, text)),
                Some(x) if x.kind() == "field_expression" => {
                    x.child_by_field_name("field").map(|f| node_text(f, text))
                }
                Some(x) if x.kind() == "subscript_expression" => None,
                _ => None,
            };
            if named.is_some_and(|m| members.contains(m)) {
                return true;
            }
        }
        let mut c = n.walk();
        stack.extend(n.named_children(&mut c));
    }
    false
}

/// Whether a lowered block may synchronize (a barrier, or unmodelled code that may).
fn synchronizes(b: &[Stmt]) -> bool {
    b.iter().any(|s| match s {
        Stmt::Barrier(_) => true,
        Stmt::Opaque(o) => o.may_sync,
        Stmt::If {
            then_branch,
            else_branch,
            ..
        } => synchronizes(then_branch) || synchronizes(else_branch),
        Stmt::Loop(l) => [&l.init, &l.cond_effects, &l.body, &l.step]
            .into_iter()
            .any(|blk| synchronizes(blk)),
        _ => false,
    })
}

/// The locals a block's expressions read.
fn block_reads(b: &[Stmt], out: &mut HashSet<LocalId>) {
    for s in b {
        match s {
            Stmt::Assign { value, .. } => expr_reads(value, out),
            Stmt::Access(a) => {
                for e in a.index.iter().chain(&a.value) {
                    expr_reads(e, out);
                }
            }
            Stmt::If {
                cond,
                then_branch,
                else_branch,
                ..
            } => {
                expr_reads(cond, out);
                block_reads(then_branch, out);
                block_reads(else_branch, out);
            }
            Stmt::Loop(l) => {
                if let Some(c) = &l.cond {
                    expr_reads(c, out);
                }
                for blk in [&l.init, &l.cond_effects, &l.body, &l.step] {
                    block_reads(blk, out);
                }
            }
            Stmt::Assume { cond, .. } => expr_reads(cond, out),
            // Unmodelled code handed a local may read it.
            Stmt::Opaque(o) => out.extend(o.locals.iter().copied()),
            _ => {}
        }
    }
}

fn expr_reads(e: &Expr, out: &mut HashSet<LocalId>) {
    match e {
        Expr::Local(l) => {
            out.insert(*l);
        }
        Expr::Unary(_, a) | Expr::Cast(_, a) => expr_reads(a, out),
        Expr::Binary(_, a, b) => {
            expr_reads(a, out);
            expr_reads(b, out);
        }
        Expr::Ite(c, a, b) => {
            expr_reads(c, out);
            expr_reads(a, out);
            expr_reads(b, out);
        }
        _ => {}
    }
}
