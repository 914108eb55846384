//! Device functions passed by name, and tables of them, called through a variable.
//!
//! `apply(x, twice)`, `apply(x, &twice)`, `apply(x, less<int>)` with `twice`/`less` a device
//! function of the file, or `auto f = twice;`: the parameter (variable) names the function, and
//! `f(a)` inlines it like a direct call. A `const` (or `__constant__`) device table of such
//! functions, `__device__ cmp_t const cmps[3] = {less, greater, equal};`, indexed where the
//! function is taken (`apply(x, cmps[k])`), names one of them: the call is an `if` on the index
//! (`k == 0`: `less`, `k == 1`: `greater`, `k == 2`: `equal`), each branch inlining its
//! function; the index is the value it had when the function was taken. An index outside the
//! table is undefined behaviour, assumed not to happen (no call).
//!
//! Anything else stays as before, an opaque call through the variable that may touch any array
//! and synchronize: a table that is not `const`, or with an entry that is not a function of the
//! file with a body; a function pointer read from memory or computed; a variable assigned
//! after its declaration or whose address is taken.

use super::super::*;
use crate::collect::{declarator_name, FuncDef};

/// The function(s) a callable variable names.
#[derive(Debug)]
pub(crate) struct FnRef {
    /// The candidates, in table order; one for a function passed by name.
    pub names: Vec<String>,
    /// Which entry (a table element), as it was when the function was taken.
    pub index: Option<Expr>,
}

/// The most entries of a function table that a call is split into.
const MAX_TABLE: usize = 16;

/// `f`, `&f`, `f<int>`, `(f)`: the name of the function an expression denotes syntactically.
fn function_name(n: Node, text: &str) -> Option<String> {
    let mut n = n;
    for _ in 0..8 {
        match n.kind() {
            "parenthesized_expression" => n = n.named_child(0)?,
            "pointer_expression" if n.child(0).is_some_and(|c| c.kind() == "&") => {
                n = n.child_by_field_name("argument")?
            }
            "template_function" => n = n.child_by_field_name("name")?,
            "qualified_identifier" => n = n.child_by_field_name("name")?,
            "identifier" => return Some(node_text(n, text).to_string()),
            _ => return None,
        }
    }
    None
}

impl<'a, 't> Lowerer<'a, 't> {
    /// The device function of the file with a body that `name` calls with `nargs` arguments.
    fn device_function(&self, name: &str, nargs: usize) -> Option<FuncDef<'t>> {
        let defs = self.tab.funcs.get(name)?;
        let with_body: Vec<&FuncDef<'t>> = defs
            .iter()
            .filter(|d| !d.is_kernel && d.node.child_by_field_name("body").is_some())
            .collect();
        let fitting: Vec<&&FuncDef<'t>> = with_body
            .iter()
            .filter(|d| super::super::calls::param_count(d) == nargs)
            .collect();
        match (fitting.as_slice(), with_body.as_slice()) {
            ([d], _) => Some(***d),
            ([], [d]) => Some(**d),
            _ => None,
        }
    }

    /// Whether `name` names a device function of the file here (no variable hides it).
    fn names_device_function(&mut self, name: &str) -> bool {
        self.lookup(name).is_none()
            && self.tab.funcs.get(name).is_some_and(|defs| {
                defs.iter()
                    .any(|d| !d.is_kernel && d.node.child_by_field_name("body").is_some())
            })
    }

    /// The entries of a `const` device table of functions (`{less, greater}`), by name.
    fn function_table(&mut self, name: &str) -> Option<Vec<String>> {
        if !matches!(self.lookup(name), None | Some(Binding::Array(_))) {
            return None;
        }
        let g = self.tab.globals.get(name)?;
        let text = self.tab.texts.get(g.file.0 as usize)?.clone();
        let quals = crate::collect::qualifiers(g.decl, &text);
        // Only a `const` table: a `__constant__` one the host may overwrite
        // (`cudaMemcpyToSymbol`, the usual way function pointers reach the device).
        let constant = quals.iter().any(|q| q == "const" || q == "constexpr");
        if !constant || g.declarator.kind() != "init_declarator" {
            return None;
        }
        let d = g.declarator.child_by_field_name("declarator")?;
        if d.kind() != "array_declarator"
            || declarator_name(d).map(|x| node_text(x, &text)) != Some(name)
        {
            return None;
        }
        let list = g.declarator.child_by_field_name("value")?;
        if list.kind() != "initializer_list" {
            return None;
        }
        let items: Vec<Node> = list_items(list);
        if items.is_empty() || items.len() > MAX_TABLE {
            return None;
        }
        let mut names = Vec::new();
        for it in items {
            let f = function_name(it, &text)?;
            if !self.names_device_function(&f) {
                return None;
            }
            names.push(f);
        }
        Some(names)
    }

    /// Whether `a` names a function of the file (`f`, `&f`, `f<int>`, a variable bound to
    /// functions), with or without a body: handed to code the front end does not see, it may
    /// be called there.
    pub(crate) fn names_functions(&mut self, a: Node) -> bool {
        let a = super::lambdas::strip_parens(a);
        if a.kind() == "identifier"
            && matches!(self.lookup(&self.text(a)), Some(Binding::Functions(_)))
        {
            return true;
        }
        function_name(a, &self.src.text)
            .is_some_and(|n| self.lookup(&n).is_none() && self.tab.funcs.contains_key(&n))
    }

    /// A function named or taken from a table (`twice`, `&twice`, `cmps[k]`), as an argument or
    /// an initializer; `None` for anything else.
    pub(crate) fn function_ref(&mut self, a: Node) -> Option<Rc<FnRef>> {
        let mut a = a;
        while a.kind() == "parenthesized_expression" {
            a = a.named_child(0)?;
        }
        if a.kind() == "subscript_expression" {
            let arr = a.child_by_field_name("argument")?;
            if arr.kind() != "identifier" {
                return None;
            }
            let names = self.function_table(&self.text(arr))?;
            let idx = a
                .child_by_field_name("indices")
                .and_then(|i| i.named_child(0))
                .or_else(|| a.child_by_field_name("index"))?;
            let span = self.span(a);
            let v = self.scalar_expr(idx);
            // The index as it is now, whatever happens to its variables later.
            let l = self.new_local("function.index", ScalarType::Other, span);
            self.emit(Stmt::Assign {
                local: l,
                value: v,
                span,
            });
            return Some(Rc::new(FnRef {
                names,
                index: Some(Expr::Local(l)),
            }));
        }
        let name = function_name(a, &self.src.text)?;
        if !self.names_device_function(&name) {
            return None;
        }
        Some(Rc::new(FnRef {
            names: vec![name],
            index: None,
        }))
    }

    /// `f(args)` for a variable naming a function (or one of a table's).
    pub(crate) fn call_fn_ref(
        &mut self,
        var: &str,
        f: &FnRef,
        call: Node,
        args: &[Node],
        want_place: bool,
    ) -> Val {
        let defs: Option<Vec<FuncDef<'t>>> = f
            .names
            .iter()
            .map(|n| self.device_function(n, args.len()))
            .collect();
        let Some(defs) = defs else {
            return self.opaque_callable(var, call, args, Vec::new());
        };
        match (defs.as_slice(), &f.index) {
            ([d], _) => self.inline(&f.names[0], d, None, call, args, None, want_place),
            (_, Some(index)) => {
                // An index outside the table is undefined behaviour: no call.
                let conds: Vec<Expr> = (0..defs.len())
                    .map(|i| {
                        Expr::Binary(
                            BinOp::Eq,
                            Box::new(index.clone()),
                            Box::new(Expr::Int(i as i64)),
                        )
                    })
                    .collect();
                let names = f.names.clone();
                self.inline_one_of(&names, &defs, conds, None, call, args)
            }
            _ => self.opaque_callable(var, call, args, Vec::new()),
        }
    }
}
