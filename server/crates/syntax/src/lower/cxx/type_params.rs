//! Template type parameters bound to classes of the file.
//!
//! `reduce<Add>(s)` with `template <class Op> __device__ void reduce(float *s) { Op op; … }`,
//! or a kernel template `k<Add>` launched (or explicitly instantiated) with one class only:
//! inside the inlined function (the kernel), the type parameter `Op` names the class `Add`, so
//! `Op op;`, `Op{}(a, b)` and `Op()(a, b)` are objects of `Add` (their `operator()` is inlined,
//! see `lambdas.rs`). A type argument that is not a class of the file leaves the parameter
//! unknown, as before.

use crate::lower::*;

/// The name a type template parameter declares (`class Op`, `typename T = Add`).
fn type_param_name<'t>(p: Node<'t>, text: &str) -> Option<String> {
    match p.kind() {
        "type_parameter_declaration" => {
            let mut c = p.walk();
            let n = p
                .named_children(&mut c)
                .find(|x| x.kind() == "type_identifier");
            n.map(|n| node_text(n, text).to_string())
        }
        "optional_type_parameter_declaration" => p
            .child_by_field_name("name")
            .map(|n| node_text(n, text).to_string()),
        _ => None,
    }
}

impl<'a, 't> Lowerer<'a, 't> {
    /// The class a type template parameter of the current function names, if bound.
    pub(crate) fn type_param_class(&self, name: &str) -> Option<String> {
        let depth = self.frames.len();
        self.type_params
            .iter()
            .rev()
            .find(|(d, p, _)| *d == depth && p == name)
            .map(|(_, _, c)| c.clone())
    }

    /// The classes of the file that template arguments name (in the caller's context).
    pub(crate) fn template_arg_classes(&self, targs: Option<&Vec<Node>>) -> Vec<Option<String>> {
        targs
            .map(|v| v.iter().map(|t| self.class_of(&self.text(*t))).collect())
            .unwrap_or_default()
    }

    /// Binds the type parameters of `params` (a template parameter list, in the current
    /// source) to the classes `args` name, for the function just entered; a missing argument
    /// takes the parameter's default when `defaults` (a call, not a kernel the host may
    /// instantiate otherwise).
    pub(crate) fn bind_type_params(
        &mut self,
        params: Node,
        args: &[Option<String>],
        defaults: bool,
    ) {
        let depth = self.frames.len();
        let mut c = params.walk();
        let list: Vec<Node> = params.named_children(&mut c).collect();
        for (i, p) in list.iter().enumerate() {
            let Some(name) = type_param_name(*p, &self.src.text) else {
                continue;
            };
            let class = match args.get(i).cloned().flatten() {
                Some(c) => Some(c),
                // `typename Op = Add`
                None if defaults && args.get(i).is_none() => p
                    .child_by_field_name("default_type")
                    .and_then(|d| self.class_of(&self.text(d))),
                None => None,
            };
            if let Some(class) = class {
                self.type_params.push((depth, name, class));
            }
        }
    }

    /// Forgets the type parameters of functions that were left.
    pub(crate) fn drop_type_params(&mut self) {
        let depth = self.frames.len();
        self.type_params.retain(|(d, _, _)| *d <= depth);
    }
}
