//! What a launch says of its kernel's parameters beyond constants: arguments that are launch
//! sizes or expressions of them (`gridDim.x == m`, `step == gridDim.x * blockDim.x`), library
//! ceiling divisions, and the conditions of the branches around the launch.

use super::*;

impl<'t> HostEnv<'_, 't> {
    /// [`HostEnv::list_texts`] of a call's arguments (the items), with an argument that may have another
    /// value each time it is evaluated (`rand()`, `i++`) replaced by a text nothing matches.
    pub(super) fn pure_texts(&self, list: &[Node<'t>]) -> Vec<String> {
        list.iter()
            .map(|&a| match pure_expression(a, 0) {
                true => squash(node_text(a, self.text)),
                false => "\u{0}".to_string(),
            })
            .collect()
    }

    /// The texts of the items of an argument (or initializer) list, whitespace removed.
    pub(super) fn list_texts(&self, list: Node<'t>) -> Vec<String> {
        let mut c = list.walk();
        list.named_children(&mut c)
            .filter(|a| a.kind() != "comment")
            .map(|a| squash(node_text(a, self.text)))
            .collect()
    }

    /// The source text of each component of a launch size (`dim3 grid(m, 2)` → `m`, `2`; a
    /// plain `n` → `n`), whitespace removed, so that an argument written the same way is known
    /// to be that size.
    pub(super) fn dim_texts(&self, e: Node<'t>, depth: u32) -> Vec<String> {
        let squash = |n: Node| squash(node_text(n, self.text));
        let list = |args: Node<'t>| self.list_texts(args);
        if depth > 8 {
            return vec![];
        }
        match e.kind() {
            "call_expression" => {
                let is_dim3 = e
                    .child_by_field_name("function")
                    .is_some_and(|f| node_text(f, self.text) == "dim3");
                match (is_dim3, e.child_by_field_name("arguments")) {
                    (true, Some(a)) => list(a),
                    _ => vec![squash(e)],
                }
            }
            "initializer_list" => list(e),
            "parenthesized_expression" => match e.named_child(0) {
                Some(inner) => self.dim_texts(inner, depth + 1),
                None => vec![],
            },
            "identifier" => match self.local_init(node_text(e, self.text)) {
                Some((init, decl))
                    if self.declares_dim3(decl)
                        && !self.field_stores(node_text(e, self.text), decl).is_empty() =>
                {
                    // Components stored one by one: the texts stored over the initial ones.
                    let mut texts = match init.kind() {
                        "argument_list" | "initializer_list" | "parameter_list" => list(init),
                        _ => vec![],
                    };
                    if init.kind() != "declaration" && texts.is_empty() {
                        return vec![squash(e)];
                    }
                    texts.resize(3, "1".to_string());
                    for (d, v) in self.field_stores(node_text(e, self.text), decl) {
                        texts[d] = squash(v);
                    }
                    texts
                }
                Some((init, _)) if init.kind() == "declaration" => vec!["1".to_string(); 3],
                Some((init, decl))
                    if matches!(init.kind(), "argument_list" | "initializer_list") =>
                {
                    // `dim3 grid(m)` or `dim3 grid{m}`; an `int n(5)` is a scalar named `n`.
                    if self.declares_dim3(decl) {
                        list(init)
                    } else {
                        vec![squash(e)]
                    }
                }
                Some((init, _)) if init.kind() == "parameter_list" => list(init),
                Some((init, _)) if init.kind() == "call_expression" => {
                    let mut v = self.dim_texts(init, depth + 1);
                    if v.len() <= 1 {
                        v = vec![squash(e)];
                    }
                    v
                }
                _ => vec![squash(e)],
            },
            _ => vec![squash(e)],
        }
    }

    /// What a launch argument is worth in constants and launch sizes.
    ///
    /// `from`: where the texts of `grid` and `block` and the argument's are read, the earliest
    /// (a `dim3` local's declaration, a local's initializer, the launch): a text written the
    /// same way is the same value when nothing changes its names from there to the launch
    /// (`cudaOccupancyMaxPotentialBlockSize(&grid, &block, …)` before `int stride = grid *
    /// block;` does not stop `stride` from being `gridDim.x * blockDim.x`).
    pub(super) fn site_value(
        &self,
        e: Node<'t>,
        grid: &[String],
        block: &[String],
        from: usize,
        depth: u32,
    ) -> Option<SiteValue> {
        if depth > 8 {
            return None;
        }
        if let Some(v) = eval(e, self.text, self, 0) {
            return Some(SiteValue::Int(v));
        }
        let text: String = node_text(e, self.text)
            .chars()
            .filter(|c| !c.is_whitespace())
            .collect();
        const DIMS: [Dim; 3] = [Dim::X, Dim::Y, Dim::Z];
        // Written the same way is the same value only if nothing changes it in between.
        let same = |t: &String| *t == text && self.unchanged_from(&text, from);
        if let Some(d) = grid.iter().position(same) {
            return Some(SiteValue::GridDim(DIMS[d]));
        }
        if let Some(d) = block.iter().position(same) {
            return Some(SiteValue::BlockDim(DIMS[d]));
        }
        match e.kind() {
            "parenthesized_expression" => {
                self.site_value(e.named_child(0)?, grid, block, from, depth + 1)
            }
            "binary_expression" => {
                let op = e.child_by_field_name("operator")?;
                if node_text(op, self.text) != "*" {
                    return None;
                }
                let left = e.child_by_field_name("left")?;
                let right = e.child_by_field_name("right")?;
                let a = self.site_value(left, grid, block, from, depth + 1)?;
                let b = self.site_value(right, grid, block, from, depth + 1)?;
                Some(SiteValue::Mul(Box::new(a), Box::new(b)))
            }
            "identifier" => {
                let (init, decl) = self.local_init(node_text(e, self.text))?;
                if matches!(
                    init.kind(),
                    "argument_list" | "parameter_list" | "initializer_list"
                ) {
                    return None;
                }
                // Its initializer's names are read at the declaration.
                let from = from.min(decl.start_byte());
                self.site_value(init, grid, block, from, depth + 1)
            }
            // A component of a `dim3` local (`int block_x = block.x;` passed on): its constant,
            // or the launch size written the same way.
            "field_expression" => {
                let d = dim3_component(e, self.text)?;
                let v = e.child_by_field_name("argument")?;
                if v.kind() != "identifier" {
                    return None;
                }
                if let Some(dims) = self.dims(v, depth + 1) {
                    return Some(SiteValue::Int(dims[d] as i64));
                }
                let comp = self.dim_texts(v, depth + 1).get(d)?.clone();
                if let Some(g) = grid.iter().position(|t| *t == comp) {
                    return Some(SiteValue::GridDim(DIMS[g]));
                }
                block
                    .iter()
                    .position(|t| *t == comp)
                    .map(|b| SiteValue::BlockDim(DIMS[b]))
            }
            _ => None,
        }
    }

    /// The values of the arguments in `list` (a call's argument list, or the template argument
    /// list of `k<256, T>`, where a type is `None` and a constant may read as a type name).
    pub(super) fn arg_values(
        &self,
        list: Option<Node<'t>>,
        grid: Option<Node<'t>>,
        block: Option<Node<'t>>,
    ) -> Vec<Option<SiteValue>> {
        match list {
            Some(list) => self.item_values(&list_items(list), grid, block),
            None => vec![],
        }
    }

    /// [`HostEnv::arg_values`] of the items of a list.
    pub(super) fn item_values(
        &self,
        nodes: &[Node<'t>],
        grid: Option<Node<'t>>,
        block: Option<Node<'t>>,
    ) -> Vec<Option<SiteValue>> {
        // Where a launch size's texts are read: a `dim3` local's at its declaration (or
        // later, at a component's store), else at the launch.
        let read_at = |n: Option<Node<'t>>| {
            n.filter(|n| n.kind() == "identifier")
                .and_then(|n| self.local_init(node_text(n, self.text)))
                .map_or(self.at, |(_, decl)| decl.start_byte().min(self.at))
        };
        let from = read_at(grid).min(read_at(block));
        let grid = grid.map(|g| self.dim_texts(g, 0)).unwrap_or_default();
        let block = block.map(|b| self.dim_texts(b, 0)).unwrap_or_default();
        let mut values: Vec<Option<SiteValue>> = nodes
            .iter()
            .map(|&a| {
                if a.kind() == "type_descriptor" {
                    let t = node_text(a, self.text).trim().to_string();
                    return eval_text(&t, self, 0).map(SiteValue::Int);
                }
                self.site_value(a, &grid, &block, from, 0)
            })
            .collect();
        // An argument written in terms of the others (`k(dst, width, width)`,
        // `k(x, n, n / 2)`): its parameter is that function of theirs. Only arguments whose
        // value cannot change between their evaluations (no call, no assignment) are matched.
        let texts: Vec<String> = nodes
            .iter()
            .map(|&a| match pure_expression(a, 0) {
                true => squash(node_text(a, self.text)),
                false => String::new(),
            })
            .collect();
        for (j, &a) in nodes.iter().enumerate() {
            if values[j].is_some() || texts[j].is_empty() {
                continue;
            }
            let mut others = texts.clone();
            others[j] = String::new();
            let others: Vec<String> = others
                .into_iter()
                .map(|t| if t.is_empty() { "\u{0}".into() } else { t })
                .collect();
            if let Some(v) = self.relation(a, self.text, &others, 0) {
                if mentions_arg(&v) {
                    values[j] = Some(v);
                }
            }
        }
        values
    }

    /// Each dimension of a launch size (the grid or the block) in terms of the call's
    /// arguments: `dim3 grid(DIVUP(n, 64))` with `n` passed gives `gridDim.x == DIVUP(arg, 64)`
    /// (macros expanded), `<<<rows, n / 4>>>` gives `blockDim.x == arg / 4`. `None` for a
    /// dimension that is not computed from a passed value.
    pub(super) fn size_relations(
        &self,
        size: Option<Node<'t>>,
        call_args: Option<&[Node<'t>]>,
    ) -> [Option<SiteValue>; 3] {
        let mut out: [Option<SiteValue>; 3] = [None, None, None];
        let (Some(size), Some(list)) = (size, call_args) else {
            return out;
        };
        let args = self.pure_texts(list);
        // The size is computed at the launch, or where its `dim3` local is declared (its field
        // stores come later): a passed value it names needs to stay the same from there on. A
        // local reassigned on the way is read at the launch (its last assignment, see
        // `HostEnv::value_before`).
        let since = match size.kind() {
            "identifier" => self
                .local_init(node_text(size, self.text))
                .map_or(self.at, |(_, decl)| decl.start_byte()),
            _ => self.at,
        };
        for (d, comp) in self.dim_texts(size, 0).iter().enumerate().take(3) {
            // In parentheses: `w * w` alone would parse as a declaration of a pointer `w`.
            let (text, tree) = crate::parse::parse_snippet_body(&format!("({comp})"));
            let Some(e) = crate::consteval::snippet_expr(&tree) else {
                continue;
            };
            self.since.set(Some(since));
            let v = self.relation(e, &text, &args, 0);
            self.since.set(None);
            if let Some(v) = v.filter(mentions_arg) {
                out[d] = Some(v);
            }
        }
        out
    }

    /// `e` (in `text`) in constants and the call's arguments `args` (squashed texts).
    pub(super) fn relation(
        &self,
        e: Node,
        text: &str,
        args: &[String],
        depth: u32,
    ) -> Option<SiteValue> {
        if depth > 40 {
            return None;
        }
        let own = squash(node_text(e, text));
        if let Some(j) = args.iter().position(|a| *a == own) {
            // Written the same way is the same value only if nothing changes it in between.
            if !self.unchanged(&own) {
                return None;
            }
            return Some(SiteValue::Arg(j as u32));
        }
        if let Some(v) = eval_text(node_text(e, text), self, 0) {
            return Some(SiteValue::Int(v));
        }
        match e.kind() {
            "parenthesized_expression" => self.relation(e.named_child(0)?, text, args, depth + 1),
            "cast_expression" => {
                self.relation(e.child_by_field_name("value")?, text, args, depth + 1)
            }
            "binary_expression" => {
                let op = match node_text(e.child_by_field_name("operator")?, text) {
                    "+" => BinOp::Add,
                    "-" => BinOp::Sub,
                    "*" => BinOp::Mul,
                    "/" => BinOp::Div,
                    "%" => BinOp::Rem,
                    "<" => BinOp::Lt,
                    "<=" => BinOp::Le,
                    ">" => BinOp::Gt,
                    ">=" => BinOp::Ge,
                    "==" => BinOp::Eq,
                    "!=" => BinOp::Ne,
                    "&&" => BinOp::And,
                    "||" => BinOp::Or,
                    _ => return None,
                };
                let a = self.relation(e.child_by_field_name("left")?, text, args, depth + 1)?;
                let b = self.relation(e.child_by_field_name("right")?, text, args, depth + 1)?;
                Some(SiteValue::Op(op, Box::new(a), Box::new(b)))
            }
            "unary_expression" => {
                let a = self.relation(e.child_by_field_name("argument")?, text, args, depth + 1)?;
                match node_text(e.child_by_field_name("operator")?, text) {
                    "!" | "not" => Some(SiteValue::Op(
                        BinOp::Eq,
                        Box::new(a),
                        Box::new(SiteValue::Int(0)),
                    )),
                    "-" => Some(SiteValue::Op(
                        BinOp::Sub,
                        Box::new(SiteValue::Int(0)),
                        Box::new(a),
                    )),
                    "+" => Some(a),
                    _ => None,
                }
            }
            "conditional_expression" => {
                let c =
                    self.relation(e.child_by_field_name("condition")?, text, args, depth + 1)?;
                let a =
                    self.relation(e.child_by_field_name("consequence")?, text, args, depth + 1)?;
                let b =
                    self.relation(e.child_by_field_name("alternative")?, text, args, depth + 1)?;
                Some(SiteValue::Select(Box::new(c), Box::new(a), Box::new(b)))
            }
            // A component of a `dim3` local with one constant value (`threads.x`).
            "field_expression" => {
                let d = dim3_component(e, text)?;
                let v = e.child_by_field_name("argument")?;
                if v.kind() != "identifier" {
                    return None;
                }
                match self.local_dim_values(node_text(v, text), 0)?[d].as_slice() {
                    [one] if *one != ANY_SIZE => Some(SiteValue::Int(*one as i64)),
                    _ => None,
                }
            }
            // `static_cast<int>(n)`: like a C cast, its operand.
            "call_expression"
                if e.child_by_field_name("function").is_some_and(|f| {
                    f.kind() == "template_function"
                        && f.child_by_field_name("name")
                            .is_some_and(|n| node_text(n, text) == "static_cast")
                }) =>
            {
                let list = e.child_by_field_name("arguments")?;
                if list.named_child_count() != 1 {
                    return None;
                }
                self.relation(list.named_child(0)?, text, args, depth + 1)
            }
            // A ceiling division the library describes (`ATenCeilDiv(n, 16)`, `DIVUP(n, 64)`
            // without its header): `(a + b - 1) / b`. A function or macro of the file with the
            // name wins.
            "call_expression" if self.library_ceil_div(e, text) => {
                let list = e.child_by_field_name("arguments")?;
                let items: Vec<Node> = list_items(list);
                let [a, b] = items.as_slice() else {
                    return None;
                };
                let a = self.relation(*a, text, args, depth + 1)?;
                let b = self.relation(*b, text, args, depth + 1)?;
                Some(ceil_div(a, b))
            }
            // A macro (`DIVUP(n, 64)`, `BLOCKS`): its expansion.
            "call_expression" | "identifier" => {
                let (name, call_args) = if e.kind() == "identifier" {
                    (node_text(e, text).to_string(), None)
                } else {
                    let f = e.child_by_field_name("function")?;
                    let list = e.child_by_field_name("arguments")?;
                    let mut c = list.walk();
                    let v: Vec<String> = list
                        .named_children(&mut c)
                        .filter(|a| a.kind() != "comment")
                        .map(|a| node_text(a, text).to_string())
                        .collect();
                    (node_text(f, text).to_string(), Some(v))
                };
                let Some(m) = self.tables.macros.get(&name) else {
                    // A host local computed from passed values (`int blocks = DIVUP(n, 64);`),
                    // also named in a launch size's text or a macro's expansion (both read at
                    // the launch).
                    if call_args.is_none() {
                        if let Some((init, decl)) = self.local_init(&name) {
                            if init.kind().ends_with("_list") {
                                return None;
                            }
                            // Its initializer's values are those at the declaration.
                            let since = self.since.get();
                            if let Some(at) = since {
                                self.since.set(Some(at.min(decl.start_byte())));
                            }
                            let v = self.relation(init, self.text, args, depth + 1);
                            self.since.set(since);
                            return v;
                        }
                        // Reassigned on the way: the value the last assignment before this
                        // point gave it, read where that assignment is (the names in it must
                        // keep their values from there to the launch).
                        let (value, from) = self.value_before(&name)?;
                        let since = self.since.get();
                        self.since.set(Some(since.map_or(from, |s| s.min(from))));
                        let v = self.relation(value, self.text, args, depth + 1);
                        self.since.set(since);
                        return v;
                    }
                    return None;
                };
                let body = m.expand(call_args.as_deref())?;
                let (t, tree) = crate::parse::parse_snippet_body(&body);
                let inner = crate::consteval::snippet_expr(&tree)?;
                self.relation(inner, &t, args, depth + 1)
            }
            _ => None,
        }
    }

    /// Whether the call `e` (in `text`) is to a function the library describes as a ceiling
    /// division (`returns = "ceil-div"`) that the file does not define (as a function or a
    /// macro).
    pub(super) fn library_ceil_div(&self, e: Node, text: &str) -> bool {
        let Some(f) = e.child_by_field_name("function") else {
            return false;
        };
        let f = match f.kind() {
            "template_function" => f.child_by_field_name("name").unwrap_or(f),
            _ => f,
        };
        let full = node_text(f, text);
        // `cuda::ceil_div`, `raft::ceildiv<int>`: the library names the function, not its
        // namespace or template arguments.
        let plain = full.split('<').next().unwrap_or(full);
        let name = plain.rsplit("::").next().unwrap_or(plain).trim();
        if self
            .tables
            .macros
            .get(name)
            .is_some_and(|m| m.fallback.is_none())
            || self.tables.macros.contains_key(full)
            || self.tables.funcs.get(name).is_some_and(|d| !d.is_empty())
        {
            return false;
        }
        self.tables
            .library
            .function(name)
            .is_some_and(|m| m.returns == cudarace_library::Returns::CeilDiv)
    }

    /// The conditions that hold at the launch `call` (in the function), in terms of the call's
    /// arguments: the conjuncts of the condition of an `if` whose `then` branch holds the
    /// launch, the negation of the whole condition of one whose `else` branch does, and what the
    /// checks before it in the blocks around it establish (`asserts.rs`). A condition (or
    /// conjunct) not written exactly in those terms is left out.
    pub(super) fn path_conditions(
        &self,
        call: Node<'t>,
        call_args: Option<&[Node<'t>]>,
    ) -> Vec<SiteValue> {
        let Some(args) = self.condition_args(call_args) else {
            return vec![];
        };
        let mut out = Vec::new();
        let mut child = call;
        let mut p = call.parent();
        while let Some(a) = p {
            if a.kind() == "lambda_expression" {
                break;
            }
            if a.kind() == "compound_statement" {
                self.checks_before(a, child, &args, &mut out);
            }
            if Some(a) == self.func_body {
                break;
            }
            if a.kind() == "if_statement" {
                let value = super::if_condition(a);
                let then = a.child_by_field_name("consequence") == Some(child);
                let other = a.child_by_field_name("alternative") == Some(child);
                if let Some(v) = value.filter(|v| self.names_mean_the_same(*v)) {
                    if then {
                        for c in conjuncts(v, self.text) {
                            out.extend(self.condition(c, &args));
                        }
                    } else if other {
                        out.extend(self.condition(v, &args).map(|c| {
                            SiteValue::Op(BinOp::Eq, Box::new(c), Box::new(SiteValue::Int(0)))
                        }));
                    }
                }
            }
            child = a;
            p = a.parent();
        }
        out
    }

    /// The texts of the call's arguments, in whose terms conditions that hold at the launch are
    /// read; `None` without arguments, or when a `goto` may jump past a condition (into a
    /// branch, or past a check) to the launch.
    pub(super) fn condition_args(&self, call_args: Option<&[Node<'t>]>) -> Option<Vec<String>> {
        let list = call_args?;
        if self.func_body.is_none() || self.has_goto() {
            return None;
        }
        Some(self.pure_texts(list))
    }

    /// `c` in terms of the call's arguments, if it mentions one.
    pub(super) fn condition(&self, c: Node<'t>, args: &[String]) -> Option<SiteValue> {
        self.since.set(Some(c.start_byte()));
        let v = self.relation(c, self.text, args, 0);
        self.since.set(None);
        v.filter(mentions_arg)
    }

    /// Whether every name in `cond` means at the launch what it means at `cond`: no local of
    /// that name is declared between them (`if (k == 4) { int k = 8; … }`).
    pub(super) fn names_mean_the_same(&self, cond: Node<'t>) -> bool {
        crate::text::tokens(node_text(cond, self.text))
            .into_iter()
            .filter(|(is_id, _)| *is_id)
            .all(|(_, name)| {
                self.local_decl(name, true)
                    .is_none_or(|(_, decl)| decl.start_byte() < cond.start_byte())
            })
    }
}
