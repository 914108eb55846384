//! Block-wide collectives described by the library (`[[collective]]`, `docs/library.md`):
//! `BlockReduce(temp).Sum(x)`, with the class written directly
//! (`cub::BlockReduce<float, 256>(temp)`) or named through a `typedef`/`using` alias.
//!
//! The collective's code is not there, so one call is modelled by what it does to its
//! `__shared__` storage, which is what matters for the bug it invites (reusing the storage for a
//! second collective without a `__syncthreads()` in between):
//!
//! 1. every thread writes its own slot, `temp[threadIdx.z][threadIdx.y][threadIdx.x]`;
//! 2. a block barrier (the collective's own `__syncthreads()`): every thread of the block must
//!    get there, so a call under a thread-dependent condition is divergent;
//! 3. every thread reads every slot (three counted loops over the block).
//!
//! Inside one call the writes and reads are separated by the barrier, so a call alone is
//! race-free; the reads of one call and the writes of the next call on the same storage meet
//! in one barrier interval unless a `__syncthreads()` separates them, and a witness names the
//! slot. The storage is indexed per dimension of the block (rather than by a flat thread id) so
//! that two threads' slots are equal exactly when the threads are, without a product of sizes.
//!
//! The result is an unknown value per thread; locals passed where the description says the
//! method writes (`writes = { ExclusiveSum = [1, 2] }`) hold an unknown value afterwards.
//! Thread-private arrays passed in (a thread's items, sorted in place) need no more: their
//! contents are not tracked. Anything the model does not cover (an argument pointing to shared
//! or global memory, a lambda argument, a
//! storage that is not a `__shared__` variable, a constructor without exactly one argument)
//! returns `None`: the caller lowers the call as the unknown method call it was before.

use super::super::*;
use crate::consteval::node_text;

/// Alias chains longer than this are not followed (`typedef A B; typedef B A;`).
const MAX_ALIAS_DEPTH: usize = 8;

/// The class name a type text names: the last `::` component before the template arguments
/// (`cub::BlockReduce<float, 256>` → `BlockReduce`).
fn bare_class_name(ty: &str) -> &str {
    let before_targs = ty.split('<').next().unwrap_or(ty);
    let last = before_targs.rsplit("::").next().unwrap_or(before_targs);
    last.trim()
}

/// The names a `typedef T A, B;` or `using A = T;` introduces, each with the text of `T`
/// (`typename` dropped). Pointer or array typedefs (`typedef T *P;`) are not aliases of `T`.
pub(crate) fn type_aliases_of(n: Node, text: &str) -> Vec<(String, String)> {
    let Some(ty) = n.child_by_field_name("type") else {
        return vec![];
    };
    let aliased = node_text(ty, text);
    let aliased = aliased.strip_prefix("typename").unwrap_or(aliased).trim();
    let aliased = aliased.to_string();
    match n.kind() {
        "alias_declaration" => n
            .child_by_field_name("name")
            .map(|name| vec![(node_text(name, text).to_string(), aliased)])
            .unwrap_or_default(),
        _ => {
            let mut c = n.walk();
            n.children_by_field_name("declarator", &mut c)
                .filter(|d| d.kind() == "type_identifier")
                .map(|d| (node_text(d, text).to_string(), aliased.clone()))
                .collect()
        }
    }
}

/// `(e)` → `e`.
fn without_parens(mut n: Node) -> Node {
    while n.kind() == "parenthesized_expression" && n.named_child_count() == 1 {
        match n.named_child(0) {
            Some(inner) => n = inner,
            None => break,
        }
    }
    n
}

/// The top-level template arguments of a type text (`BlockReduce<float, 256>` → `float`,
/// `256`); empty without `<…>`.
fn template_args(ty: &str) -> Vec<String> {
    let Some(open) = ty.find('<') else {
        return vec![];
    };
    let mut args = Vec::new();
    // Nested template arguments, and brackets (inside which `<` and `>` are comparisons).
    let (mut angles, mut brackets) = (0usize, 0usize);
    let mut current = String::new();
    for ch in ty[open + 1..].chars() {
        match ch {
            '(' | '[' => brackets += 1,
            ')' | ']' => brackets = brackets.saturating_sub(1),
            _ if brackets > 0 => {}
            '<' => angles += 1,
            '>' if angles == 0 => break,
            '>' => angles -= 1,
            ',' if angles == 0 => {
                args.push(std::mem::take(&mut current).trim().to_string());
                continue;
            }
            _ => {}
        }
        current.push(ch);
    }
    if !current.trim().is_empty() {
        args.push(current.trim().to_string());
    }
    args
}

/// The block dimensions the collective numbers its threads by (see
/// `CollectiveModel::block_dim_args`): x always; y and z when the type gives them as anything
/// but `1`.
fn numbered_dims(model: &cudarace_library::CollectiveModel, ty: &str) -> Vec<Dim> {
    let Some([y_arg, z_arg]) = model.block_dim_args else {
        return vec![Dim::Z, Dim::Y, Dim::X];
    };
    let args = template_args(ty);
    let given = |i: usize| args.get(i).is_some_and(|a| a != "1");
    let mut dims = Vec::new();
    if given(z_arg) {
        dims.push(Dim::Z);
    }
    if given(y_arg) || given(z_arg) {
        dims.push(Dim::Y);
    }
    dims.push(Dim::X);
    dims
}

impl<'a, 't> Lowerer<'a, 't> {
    /// The library collective a constructor's type names, following `typedef`s and `using`
    /// aliases (the kernel's first, then the file's).
    /// Also returns the type text that names the class (with its template arguments).
    fn collective_class(&self, ty: &str) -> Option<(cudarace_library::CollectiveModel, String)> {
        let mut ty = ty.trim().to_string();
        for _ in 0..MAX_ALIAS_DEPTH {
            let ty_no_typename = ty.strip_prefix("typename").unwrap_or(&ty).trim();
            let name = bare_class_name(ty_no_typename);
            // A class of that name defined in the file is the file's, not the library's.
            if self.tab.classes.contains_key(name) {
                return None;
            }
            if let Some(c) = self.tab.library.collective(name) {
                return Some((c.clone(), ty_no_typename.to_string()));
            }
            // An alias is a plain name: `R` of `typedef cub::BlockReduce<…> R;`.
            let next = self
                .type_aliases
                .get(ty_no_typename)
                .or_else(|| self.tab.type_aliases.get(ty_no_typename))?;
            ty = next.clone();
        }
        None
    }

    /// The `__shared__` variable a collective is built on: `temp`, or `u.member` of a shared
    /// union (whose members all overlap: the whole variable is the storage).
    fn collective_storage(&mut self, node: Node) -> Option<ArrayId> {
        let node = without_parens(node);
        let (variable, in_union) = match node.kind() {
            "identifier" => (node, false),
            "field_expression"
                if node
                    .child_by_field_name("operator")
                    .is_some_and(|o| self.text(o) == ".")
                    && node
                        .child_by_field_name("argument")
                        .is_some_and(|a| a.kind() == "identifier") =>
            {
                (node.child_by_field_name("argument")?, true)
            }
            _ => return None,
        };
        match self.lookup(&self.text(variable)) {
            Some(Binding::Array(id))
                if self.k.arrays.get(id.0 as usize).is_some_and(|a| {
                    a.space == MemSpace::Shared && a.origin == ArrayOrigin::SharedDecl
                }) && (!in_union || self.shared_unions.contains(&id)) =>
            {
                Some(id)
            }
            _ => None,
        }
    }

    /// `Class(temp).method(args…)` for a collective class of the library, or `None` when the
    /// call is not one (or one the model does not cover); see the module comment.
    pub(crate) fn collective_call(
        &mut self,
        object: Node,
        method: &str,
        n: Node,
        args: &[Node],
    ) -> Option<Val> {
        if object.kind() != "call_expression" {
            return None;
        }
        let constructor = object.child_by_field_name("function")?;
        let (model, class_type) = self.collective_class(&self.text(constructor))?;
        let ctor_args: Vec<Node> = object
            .child_by_field_name("arguments")
            .map(list_items)
            .unwrap_or_default();
        let [storage_node] = ctor_args.as_slice() else {
            return None;
        };
        let storage = self.collective_storage(*storage_node)?;
        if args.iter().any(|a| self.is_lambda_arg(*a)) {
            return None;
        }
        let span = self.span(n);
        // A method the library does not describe may write any argument it takes by reference:
        // an unknown call (decided before the arguments are lowered, which the caller does).
        let written = model.writes.get(method)?.clone();
        // The storage seen with another numbering of the threads before (one class indexing it
        // by x, another by y and x): slots that do not line up, an unknown call.
        let dims = numbered_dims(&model, &class_type);
        let seen_dims = self.k.arrays.get(storage.0 as usize).map(|a| a.dims.len());
        if seen_dims.is_some_and(|n| n != 0 && n != dims.len()) {
            return None;
        }
        let vals: Vec<Val> = args.iter().map(|a| self.expr(*a)).collect();
        // Thread-private arrays (a thread's items, sorted in place) cannot race: no effect.
        let private_or_value = |v: &Val| match v {
            Val::S(_) | Val::Void => true,
            Val::P(p) => p.base == Base::Private,
            Val::Group(_) => false,
        };
        // An output the method writes by reference must be a local or a thread-private array:
        // `ExclusiveSum(x, y, total)` with a `__shared__ total` writes it in every thread,
        // which the model below would not see.
        let followed_outputs = written.iter().all(|&i| {
            let Some(a) = args.get(i).map(|a| without_parens(*a)) else {
                return true;
            };
            match vals.get(i) {
                Some(Val::P(p)) => p.base == Base::Private,
                _ => {
                    a.kind() == "identifier"
                        && matches!(self.lookup(&self.text(a)), Some(Binding::Local(_)))
                }
            }
        });
        if !vals.iter().all(private_or_value) || !followed_outputs {
            // A pointer to memory (a histogram's counters, a tile in global memory), or an
            // output outside the thread: what the collective does there is not described. The
            // arguments were read already.
            let arrays = Self::arrays_of_vals_public(&vals);
            self.opaque(
                format!(
                    "`{}::{method}` with {} (library `{}` does not describe what it does there)",
                    model.class,
                    if followed_outputs {
                        "a pointer argument"
                    } else {
                        "an output that is not a local of the thread"
                    },
                    model.library
                ),
                span,
                arrays.into_iter().chain([storage]).collect(),
                vec![],
                true,
            );
            return Some(Val::S(self.unknown(
                format!("result of `{method}`"),
                span,
                false,
            )));
        }
        self.storage_round_trip(storage, &dims, span);
        // Outputs by reference: the locals named there change.
        for &i in &written {
            let Some(a) = args.get(i).map(|a| without_parens(*a)) else {
                continue;
            };
            if a.kind() != "identifier" {
                continue;
            }
            if let Some(Binding::Local(l)) = self.lookup(&self.text(a)) {
                let value = self.unknown(
                    format!("output of `{}::{method}`", model.class),
                    span,
                    false,
                );
                self.emit(Stmt::Assign {
                    local: l,
                    value,
                    span,
                });
            }
        }
        Some(Val::S(self.unknown(
            format!("result of `{}::{method}`", model.class),
            span,
            false,
        )))
    }

    /// One collective's traffic on `storage`: own slot written, block barrier, every slot read.
    /// `dims` (outermost first) number the threads, as the collective does.
    fn storage_round_trip(&mut self, storage: ArrayId, dims: &[Dim], span: Span) {
        // The storage is a struct of unknown layout: seen as one slot per thread of the block,
        // indexed by `dims`, of unknown size (so no bounds are assumed from it).
        if let Some(a) = self.k.arrays.get_mut(storage.0 as usize) {
            if a.dims.is_empty() {
                a.dims = vec![None; dims.len()];
            }
        }
        let own_slot: Vec<Expr> = dims
            .iter()
            .copied()
            .map(|d| Expr::Builtin(Builtin::ThreadIdx(d)))
            .collect();
        self.access(storage, own_slot, false, AccessMode::Write, None, span);
        self.emit(Stmt::Barrier(Barrier {
            kind: BarrierKind::Block,
            span,
        }));
        let counter_ty = ScalarType::Int {
            bits: 32,
            signed: true,
        };
        let counters: Vec<(Dim, LocalId)> = dims
            .iter()
            .copied()
            .map(|d| {
                let name = format!("collective.slot.{}", d.name());
                (d, self.new_local(&name, counter_ty, span))
            })
            .collect();
        let slot: Vec<Expr> = counters.iter().map(|(_, l)| Expr::Local(*l)).collect();
        let ((), mut body) = self.capture(|l| {
            l.access(storage, slot, false, AccessMode::Read, None, span);
        });
        for (d, counter) in counters.into_iter().rev() {
            let bound = Expr::Builtin(Builtin::BlockDim(d));
            body = vec![Stmt::Loop(Loop::counting(counter, bound, body, span))];
        }
        for s in body {
            self.emit(s);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn class_names_drop_namespaces_and_template_arguments() {
        assert_eq!(
            bare_class_name("cub::BlockReduce<float, 256>"),
            "BlockReduce"
        );
        assert_eq!(bare_class_name("BlockScan"), "BlockScan");
        assert_eq!(
            bare_class_name("::cub::BlockRadixSort<int, 128, 4, cub::NullType>"),
            "BlockRadixSort"
        );
    }

    #[test]
    fn template_arguments_split_at_top_level_commas() {
        assert_eq!(
            template_args("cub::BlockReduce<float, 16, cub::BLOCK_REDUCE_RAKING, 16>"),
            ["float", "16", "cub::BLOCK_REDUCE_RAKING", "16"]
        );
        assert_eq!(
            template_args("BlockScan<Pair<int, float>, (A > B ? 64 : 32), f(1, 2)>"),
            ["Pair<int, float>", "(A > B ? 64 : 32)", "f(1, 2)"]
        );
        assert!(template_args("BlockScan").is_empty());
    }
}
