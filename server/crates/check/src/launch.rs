//! The launch configuration a verdict assumes (NOTES.md "Launch configuration").
//!
//! Per dimension, the strongest source that fixes it wins: the CLI / editor override, the
//! `// cudarace:` annotation, the constant `<<<grid, block>>>` launch sites of the file (when every
//! launch of the kernel there is constant), the GPUVerify-style header. `__launch_bounds__(N)`
//! bounds the block size. A dimension the kernel never mentions is 1. Otherwise symbolic:
//! `1 ≤ blockDim.x·y·z ≤ 1024`, `blockDim.z ≤ 64`, `gridDim.x < 2^31`, `gridDim.y,z ≤ 65535`.

use crate::terms::*;
use cudarace_ir::{BinOp, FileIr, Kernel, LaunchConfig, ScalarType, SiteValue};
use cudarace_solver::Term;
use std::collections::BTreeMap;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DimSpec {
    Fixed(u64),
    /// One of several constant launches.
    OneOf(Vec<u64>),
    Symbolic,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launch {
    pub block: [DimSpec; 3],
    pub grid: [DimSpec; 3],
    /// Upper bound on threads per block.
    pub max_threads: u64,
    /// The launch sites' arguments: per site, the integer parameters whose value it gives
    /// (`param.n` → `1024`, `param.m` → `gridDim.x`). A kernel is launched by one of its sites,
    /// so the parameters satisfy one site's bindings (see [`Launch::param_facts`]). Empty when
    /// the file does not launch the kernel.
    pub param_sites: Vec<Vec<(String, Term)>>,
    /// Per site (as [`Launch::param_sites`]), conditions that hold when it launches: the `if`s
    /// around it (`numImages % 128 == 0`) and the sizes it may take (`blockDim.y == 4 ||
    /// blockDim.y == 8`).
    pub site_conditions: Vec<Vec<Term>>,
    /// `__launch_bounds__(T)` with a template parameter `T` (its query variable): the block has
    /// at most `T` threads (see [`Launch::param_facts`]).
    pub threads_bound_param: Option<String>,
    /// Set when the fixed block size is over CUDA's limits (1024 threads, x and y ≤ 1024,
    /// z ≤ 64): the check goes on with it; this says so and names where the size came from.
    pub warning: Option<String>,
}

/// Where a launch dimension came from, for messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Source {
    Override,
    Annotation,
    Sites,
    Header,
    Default,
}

impl Source {
    fn describe(self) -> &'static str {
        match self {
            Source::Override => "the command line (--block-dim) or the editor's blockDim setting",
            Source::Annotation => "the `// cudarace:` annotation",
            Source::Sites => "the launch sites",
            Source::Header => "the GPUVerify header line",
            Source::Default => "the default",
        }
    }
}

/// The warning for a block over CUDA's limits (largest size per dimension), naming `sources`.
fn over_limit_warning(sizes: [u64; 3], sources: &[Source]) -> Option<String> {
    let threads = sizes.iter().fold(1u64, |a, b| a.saturating_mul(*b));
    let problem = if threads > 1024 {
        format!("{threads} threads, over CUDA's limit of 1024 per block")
    } else if sizes[0] > 1024 || sizes[1] > 1024 || sizes[2] > 64 {
        "over CUDA's limit of 1024 × 1024 × 64 per block".to_string()
    } else {
        return None;
    };
    let from: Vec<&str> = sources.iter().map(|s| s.describe()).collect();
    Some(format!(
        "warning: blockDim=({}, {}, {}) from {} is {problem}; checked with it anyway",
        sizes[0],
        sizes[1],
        sizes[2],
        from.join(" and ")
    ))
}

const DIM_NAMES: [&str; 3] = ["x", "y", "z"];

fn from_config(c: &LaunchConfig, block: bool, d: usize) -> Option<DimSpec> {
    let v = if block { c.block_dim[d] } else { c.grid_dim[d] };
    v.map(DimSpec::Fixed)
}

/// The launch sites of `kernel`: the names match, the site reaches this definition of an
/// explicitly specialized template (see [`cudarace_ir::LaunchSite::definitions`]), and, among
/// overloads of the name (`k(char4 *, …11 params)` and `k(int8_t *, …10 params)`), the site's
/// argument count is this kernel's, or no overload's (default arguments). A site of another
/// overload would bind none of this kernel's parameters and so erase every other site's
/// bindings; nor does it launch this kernel.
pub fn sites_of<'f>(file: &'f FileIr, kernel: &Kernel) -> Vec<&'f cudarace_ir::LaunchSite> {
    let call_arity = |k: &Kernel| {
        k.params
            .iter()
            .filter(|p| !p.is_template && !p.member)
            .count()
    };
    let arities: Vec<usize> = file
        .kernels
        .iter()
        .filter(|k| k.base_name() == kernel.base_name())
        .map(call_arity)
        .collect();
    let mine = call_arity(kernel);
    file.launch_sites
        .iter()
        .filter(|s| s.kernel == kernel.base_name())
        .filter(|s| s.args.is_empty() || s.args.len() == mine || !arities.contains(&s.args.len()))
        // A site that launches another explicit specialization of the template.
        .filter(|s| {
            s.definitions
                .as_ref()
                .is_none_or(|d| d.contains(&kernel.span))
        })
        .collect()
}

pub fn resolve(
    file: &FileIr,
    kernel: &Kernel,
    override_cfg: &LaunchConfig,
    block_used: [bool; 3],
    grid_used: [bool; 3],
) -> Launch {
    let sites = sites_of(file, kernel);
    // Block and grid sizes are taken from the sites separately: `<<<(n + 127) / 128, 128>>>`
    // fixes the block even though the grid is computed.
    // A site's values of one dimension: its constant, or the few constants it may be.
    let site_values = |s: &cudarace_ir::LaunchSite, block: bool, d: usize| -> Option<Vec<u64>> {
        let (fixed, values) = if block {
            (s.block_dim, &s.block_values)
        } else {
            (s.grid_dim, &s.grid_values)
        };
        match fixed {
            Some(v) => Some(vec![v[d]]),
            None => values.as_ref().map(|v| v[d].clone()),
        }
    };
    let all_const_block = !sites.is_empty()
        && sites
            .iter()
            .all(|s| s.block_dim.is_some() || s.block_values.is_some());
    let all_const_grid = !sites.is_empty()
        && sites
            .iter()
            .all(|s| s.grid_dim.is_some() || s.grid_values.is_some());
    let site_dim = |block: bool, d: usize| -> Option<DimSpec> {
        if !(if block {
            all_const_block
        } else {
            all_const_grid
        }) {
            return None;
        }
        let per_site: Vec<Option<Vec<u64>>> =
            sites.iter().map(|s| site_values(s, block, d)).collect();
        // A site that does not fix this dimension leaves it open.
        if per_site.iter().any(|v| {
            v.as_ref()
                .is_none_or(|v| v.contains(&cudarace_ir::ANY_SIZE))
        }) {
            return None;
        }
        let mut vals: Vec<u64> = per_site.into_iter().flatten().flatten().collect();
        vals.sort_unstable();
        vals.dedup();
        match vals.len() {
            0 => None,
            1 => Some(DimSpec::Fixed(vals[0])),
            _ => Some(DimSpec::OneOf(vals)),
        }
    };
    let pick = |block: bool, d: usize, used: bool| -> (DimSpec, Source) {
        from_config(override_cfg, block, d)
            .map(|s| (s, Source::Override))
            .or_else(|| {
                from_config(&kernel.annotated_launch, block, d).map(|s| (s, Source::Annotation))
            })
            .or_else(|| site_dim(block, d).map(|s| (s, Source::Sites)))
            .or_else(|| from_config(&file.header_launch, block, d).map(|s| (s, Source::Header)))
            .unwrap_or(if used {
                (DimSpec::Symbolic, Source::Default)
            } else {
                (DimSpec::Fixed(1), Source::Default)
            })
    };
    let block_picked = [0, 1, 2].map(|d| pick(true, d, block_used[d]));
    let block = block_picked.clone().map(|(s, _)| s);
    let grid_picked = [0, 1, 2].map(|d| pick(false, d, grid_used[d]));
    let grid = grid_picked.clone().map(|(s, _)| s);
    // Sizes that differ between sites are tied to their site below: the block of one site
    // goes with that site's arguments, not with another's.
    let varies = |picked: &[(DimSpec, Source); 3], d: usize| {
        picked[d].1 == Source::Sites && matches!(picked[d].0, DimSpec::OneOf(_))
    };
    // The size of each dimension (1 for symbolic ones), and where the sizes came from. A
    // dimension with several values keeps the bound on the block's threads, so only its
    // smallest value can make the block over the limits (`dim3(256, 1)` in one branch and
    // `dim3(4, 32)` in the other is not a block of 256 × 32 threads).
    let sizes = block.clone().map(|s| match s {
        DimSpec::Fixed(n) => n,
        DimSpec::OneOf(ns) => ns.into_iter().min().unwrap_or(1),
        DimSpec::Symbolic => 1,
    });
    let mut sources: Vec<Source> = Vec::new();
    for (d, (_, src)) in block_picked.iter().enumerate() {
        if *src != Source::Default && sizes[d] > 1 && !sources.contains(src) {
            sources.push(*src);
        }
    }
    let warning = over_limit_warning(sizes, &sources);
    let max_threads = kernel
        .launch_bounds
        .filter(|n| *n >= 1)
        .unwrap_or(1024)
        .min(1024);
    // Arguments bind parameters by position (template parameters are not call arguments).
    let call_params: Vec<&cudarace_ir::Param> = kernel
        .params
        .iter()
        .filter(|p| !p.is_template && !p.member)
        .collect();
    // Template arguments bind the non-type template parameters.
    let template_params: Vec<&cudarace_ir::Param> =
        kernel.params.iter().filter(|p| p.is_template).collect();
    // The parameter a call argument binds (in terms of another argument: `k(x, n, n)`).
    let arg_param = |j: u32| {
        let p = call_params.get(j as usize)?;
        (p.value.is_none() && matches!(p.ty, ScalarType::Int { .. }))
            .then(|| Term::var(format!("param.{}", p.name)))
    };
    let bind = |params: &[&cudarace_ir::Param], args: &[Option<SiteValue>]| {
        params
            .iter()
            .zip(args)
            .filter_map(|(p, a)| {
                let a = a.as_ref()?;
                if p.value.is_some() || !matches!(p.ty, ScalarType::Int { .. }) {
                    return None;
                }
                Some((format!("param.{}", p.name), site_term_with(a, &arg_param)?))
            })
            .collect::<Vec<_>>()
    };
    let param_sites = sites
        .iter()
        .map(|s| {
            let mut out = Vec::new();
            if s.args.len() == call_params.len() {
                out.extend(bind(&call_params, &s.args));
            }
            // By position in the template's list (type parameters take positions too).
            for p in &template_params {
                let Some(Some(a)) = p
                    .template_index
                    .and_then(|i| s.template_args.get(i as usize))
                else {
                    continue;
                };
                out.extend(bind(&[*p], std::slice::from_ref(&Some(a.clone()))));
            }
            for (d, dim) in DIM_NAMES.iter().enumerate() {
                for (block, picked, name) in [
                    (true, &block_picked, "blockDim"),
                    (false, &grid_picked, "gridDim"),
                ] {
                    if let (true, Some([v])) =
                        (varies(picked, d), site_values(s, block, d).as_deref())
                    {
                        out.push((format!("{name}.{dim}"), int(*v as i64)));
                    }
                }
            }
            // The grid computed from passed values (`dim3 grid(DIVUP(n, 64))`): `gridDim.x` is
            // that function of the parameter.
            if s.args.len() == call_params.len() {
                let arg = |j: u32| {
                    let p = call_params.get(j as usize)?;
                    (p.value.is_none() && matches!(p.ty, ScalarType::Int { .. }))
                        .then(|| Term::var(format!("param.{}", p.name)))
                };
                for (d, rel) in s.grid_relations.iter().enumerate() {
                    if let Some(t) = rel.as_ref().and_then(|r| site_term_with(r, &arg)) {
                        out.push((format!("gridDim.{}", DIM_NAMES[d]), t));
                    }
                }
                // Likewise a block computed from passed values (`k<<<rows, n / 4>>>(out, n)`).
                for (d, rel) in s.block_relations.iter().enumerate() {
                    if let Some(t) = rel.as_ref().and_then(|r| site_term_with(r, &arg)) {
                        out.push((format!("blockDim.{}", DIM_NAMES[d]), t));
                    }
                }
            }
            out
        })
        .collect();
    // What holds when a site launches: the conditions around it, and the sizes it may take
    // where it may take several.
    let site_conditions = sites
        .iter()
        .map(|s| {
            let mut out = Vec::new();
            for (d, dim) in DIM_NAMES.iter().enumerate() {
                for (block, picked, name) in [
                    (true, &block_picked, "blockDim"),
                    (false, &grid_picked, "gridDim"),
                ] {
                    match site_values(s, block, d) {
                        Some(vs) if varies(picked, d) && vs.len() > 1 => {
                            let v = Term::var(format!("{name}.{dim}"));
                            out.push(or(vs
                                .iter()
                                .map(|n| eq(v.clone(), int(*n as i64)))
                                .collect()));
                        }
                        _ => {}
                    }
                }
            }
            // A `bool` parameter the site passes a constant to (`k<4, false>`): a condition
            // on its (boolean) variable.
            let mut flags: Vec<(&cudarace_ir::Param, &SiteValue)> = Vec::new();
            if s.args.len() == call_params.len() {
                flags.extend(
                    call_params
                        .iter()
                        .copied()
                        .zip(&s.args)
                        .filter_map(|(p, a)| Some((p, a.as_ref()?))),
                );
            }
            for p in &template_params {
                if let Some(Some(a)) = p
                    .template_index
                    .and_then(|i| s.template_args.get(i as usize))
                {
                    flags.push((p, a));
                }
            }
            for (p, a) in flags {
                if p.value.is_some() || p.ty != ScalarType::Bool {
                    continue;
                }
                if let Some(k) = site_term_with(a, &|_| None).as_ref().and_then(as_int) {
                    let v = Term::var(format!("param.{}", p.name));
                    out.push(if k != 0 { v } else { not(v) });
                }
            }
            if s.args.len() == call_params.len() {
                out.extend(
                    s.conditions
                        .iter()
                        .filter_map(|c| site_term_with(c, &arg_param))
                        .map(truth),
                );
            }
            out
        })
        .collect();
    let mut param_sites: Vec<Vec<(String, Term)>> = param_sites;
    let mut site_conditions: Vec<Vec<Term>> = site_conditions;
    for (b, c) in param_sites.iter_mut().zip(site_conditions.iter_mut()) {
        simplify_site(b, c);
    }
    let threads_bound_param = kernel
        .launch_bounds_param
        .and_then(|p| kernel.params.get(p.0 as usize))
        .map(|p| format!("param.{}", p.name));
    Launch {
        block,
        grid,
        max_threads,
        param_sites,
        site_conditions,
        threads_bound_param,
        warning,
    }
}

/// `a == b`; for a `?:` of constants and a constant (`(c ? 4 : d ? 2 : 1) == 4`), the
/// conditions of the cases that give it (`c`).
fn equal(a: Term, b: Term) -> Term {
    fn cases(t: &Term, k: i64) -> Term {
        match t {
            Term::Ite(c, x, y) => or(vec![
                and(vec![(**c).clone(), cases(x, k)]),
                and(vec![not((**c).clone()), cases(y, k)]),
            ]),
            t => Term::Bool(as_int(t) == Some(k)),
        }
    }
    let (t, k) = match (as_int(&a), as_int(&b)) {
        (None, Some(k)) => (&a, k),
        (Some(k), None) => (&b, k),
        _ => return eq(a, b),
    };
    match int_cases(t, 0) {
        Some(tree @ Term::Ite(..)) => cases(&tree, k),
        _ => eq(a, b),
    }
}

/// `t` where the conditions `known` hold: each of them (`c`, or `!c`) is replaced by its
/// truth, and the `?:` and connectives around it fold (`c ? a : b` is `a`).
fn assuming(t: &Term, known: &[Term], depth: u32) -> Term {
    if depth > 64 {
        return t.clone();
    }
    for k in known {
        if k == t {
            return tru();
        }
        if let Term::Not(inner) = k {
            if **inner == *t {
                return Term::Bool(false);
            }
        }
    }
    rebuild(t, &mut |x| assuming(x, known, depth + 1))
}

/// A site's conditions and bindings with each condition assumed in the others (the host's
/// `imgsPerThread == 4` makes its `numImages % 128 == 0 ? 4 : …` the 4 case), so that
/// the query does not carry the cases the site rules out.
fn simplify_site(binds: &mut [(String, Term)], conditions: &mut Vec<Term>) {
    for _ in 0..2 {
        for i in 0..conditions.len() {
            let others: Vec<Term> = conditions
                .iter()
                .enumerate()
                .filter(|(j, _)| *j != i)
                .flat_map(|(_, c)| match c {
                    Term::And(ts) => ts.to_vec(),
                    c => vec![c.clone()],
                })
                .collect();
            conditions[i] = assuming(&conditions[i], &others, 0);
        }
    }
    let known: Vec<Term> = conditions
        .iter()
        .flat_map(|c| match c {
            Term::And(ts) => ts.to_vec(),
            c => vec![c.clone()],
        })
        .collect();
    for (_, t) in binds.iter_mut() {
        *t = assuming(t, &known, 0);
    }
    conditions.retain(|c| *c != tru());
}

/// `t != 0`, as a condition (a comparison's 0/1 flag is its comparison).
fn truth(t: Term) -> Term {
    if let Term::Ite(c, a, b) = &t {
        if as_int(a) == Some(1) && as_int(b) == Some(0) {
            return (**c).clone();
        }
    }
    not(eq(t, int(0)))
}

/// `t` (integers, `?:` and `+ - *` of them) as a `?:` tree with integer leaves: a divisor
/// `32 * (c ? 4 : 1)` is `c ? 128 : 32`.
fn int_cases(t: &Term, depth: u32) -> Option<Term> {
    if depth > 8 {
        return None;
    }
    let two = |a: &Term, b: &Term, f: &dyn Fn(Term, Term) -> Term| -> Option<Term> {
        if let Term::Ite(c, x, y) = a {
            return Some(ite(
                (**c).clone(),
                int_cases(&f((**x).clone(), b.clone()), depth + 1)?,
                int_cases(&f((**y).clone(), b.clone()), depth + 1)?,
            ));
        }
        if let Term::Ite(c, x, y) = b {
            return Some(ite(
                (**c).clone(),
                int_cases(&f(a.clone(), (**x).clone()), depth + 1)?,
                int_cases(&f(a.clone(), (**y).clone()), depth + 1)?,
            ));
        }
        None
    };
    match t {
        Term::Int(_) => Some(t.clone()),
        Term::Ite(c, x, y) => Some(ite(
            (**c).clone(),
            int_cases(x, depth + 1)?,
            int_cases(y, depth + 1)?,
        )),
        Term::Mul(ts) if ts.len() == 2 => two(&ts[0], &ts[1], &mul),
        Term::Add(ts) if ts.len() == 2 => two(&ts[0], &ts[1], &add),
        Term::Sub(a, b) => two(a, b, &sub),
        _ => None,
    }
}

/// `a / b` or `a % b` (C) for a divisor that is a positive constant in every case of
/// [`int_cases`]; `None` for a divisor that may be 0 or is not known.
fn divide(a: Term, b: &Term, is_div: bool) -> Option<Term> {
    match &int_cases(b, 0)? {
        Term::Int(k) if *k > 0 => Some(if is_div {
            div(a, int(*k))
        } else {
            rem(a, int(*k))
        }),
        Term::Ite(c, x, y) => Some(ite(
            (**c).clone(),
            divide(a.clone(), x, is_div)?,
            divide(a, y, is_div)?,
        )),
        _ => None,
    }
}

/// `v` as a term; `arg(j)` names the parameter the call's argument `j` binds (`None`: the
/// relation cannot be used).
fn site_term_with(v: &SiteValue, arg: &dyn Fn(u32) -> Option<Term>) -> Option<Term> {
    Some(match v {
        SiteValue::Int(n) => int(*n),
        SiteValue::GridDim(d) => Term::var(format!("gridDim.{}", d.name())),
        SiteValue::BlockDim(d) => Term::var(format!("blockDim.{}", d.name())),
        SiteValue::Mul(a, b) => mul(site_term_with(a, arg)?, site_term_with(b, arg)?),
        SiteValue::Arg(j) => arg(*j)?,
        SiteValue::Select(c, a, b) => ite(
            truth(site_term_with(c, arg)?),
            site_term_with(a, arg)?,
            site_term_with(b, arg)?,
        ),
        SiteValue::Op(op, a, b) => {
            let (a, b) = (site_term_with(a, arg)?, site_term_with(b, arg)?);
            let flag = |c: Term| ite(c, int(1), int(0));
            match op {
                BinOp::Add => add(a, b),
                BinOp::Sub => sub(a, b),
                BinOp::Mul => mul(a, b),
                // C division and remainder; a divisor that may be 0 is not a relation.
                BinOp::Div | BinOp::Rem => divide(a, &b, *op == BinOp::Div)?,
                BinOp::And => flag(and(vec![truth(a), truth(b)])),
                BinOp::Or => flag(or(vec![truth(a), truth(b)])),
                BinOp::Lt => flag(lt(a, b)),
                BinOp::Le => flag(le(a, b)),
                BinOp::Gt => flag(lt(b, a)),
                BinOp::Ge => flag(le(b, a)),
                BinOp::Eq => flag(equal(a, b)),
                BinOp::Ne => flag(not(equal(a, b))),
                _ => return None,
            }
        }
    })
}

impl Launch {
    /// Constraints on `blockDim.*` and `gridDim.*`.
    pub fn constraints(&self) -> Vec<Term> {
        let mut out = Vec::new();
        let mut fixed_product: i64 = 1;
        let mut symbolic = Vec::new();
        for (d, spec) in self.block.iter().enumerate() {
            let v = Term::var(format!("blockDim.{}", DIM_NAMES[d]));
            let cap = if d == 2 {
                64.min(self.max_threads)
            } else {
                self.max_threads
            } as i64;
            match spec {
                DimSpec::Fixed(n) => {
                    out.push(eq(v, int(*n as i64)));
                    fixed_product = fixed_product.saturating_mul(*n as i64);
                }
                DimSpec::OneOf(ns) => {
                    out.push(or(ns
                        .iter()
                        .map(|n| eq(v.clone(), int(*n as i64)))
                        .collect()));
                    symbolic.push(v);
                }
                DimSpec::Symbolic => {
                    out.push(le(int(1), v.clone()));
                    out.push(le(v.clone(), int(cap)));
                    symbolic.push(v);
                }
            }
        }
        // The block-size bound: linear with one non-constant dimension; a product with more
        // (needed e.g. for "a 2-D block has at most 1024 linear ids").
        // (A fixed part already over the limit, given on purpose: the symbolic dimensions may
        // still be 1, never no launch at all.)
        if !symbolic.is_empty() {
            let prod = symbolic.iter().cloned().fold(int(fixed_product), mul);
            out.push(le(prod, int((self.max_threads as i64).max(fixed_product))));
        }
        for (d, spec) in self.grid.iter().enumerate() {
            let v = Term::var(format!("gridDim.{}", DIM_NAMES[d]));
            match spec {
                DimSpec::Fixed(n) => out.push(eq(v, int(*n as i64))),
                DimSpec::OneOf(ns) => out.push(or(ns
                    .iter()
                    .map(|n| eq(v.clone(), int(*n as i64)))
                    .collect())),
                DimSpec::Symbolic => {
                    out.push(le(int(1), v.clone()));
                    out.push(le(v, int(if d == 0 { (1i64 << 31) - 1 } else { 65535 })));
                }
            }
        }
        out
    }

    /// What the launch sites say about the parameters a query mentions (`has`): one site's
    /// bindings hold. Nothing when a site binds none of them (any value is possible then).
    /// Whether every launch site binds parameter `name`; with `to_value`, to a value that names
    /// no parameter (constants and launch sizes).
    pub fn binds_everywhere(&self, name: &str, to_value: bool) -> bool {
        let key = format!("param.{name}");
        let is_value = |t: &Term| {
            let mut vars = std::collections::BTreeSet::new();
            collect_vars(t, &mut vars);
            !vars.iter().any(|v| v.starts_with("param."))
        };
        !self.param_sites.is_empty()
            && self.param_sites.iter().all(|site| {
                site.iter()
                    .any(|(n, t)| *n == key && (!to_value || is_value(t)))
            })
    }

    /// The parameters some site computes a launch size from (`blockDim.x == n / 8`).
    pub fn size_relation_params(&self) -> std::collections::BTreeSet<String> {
        let mut out = std::collections::BTreeSet::new();
        for (p, t) in self.param_sites.iter().flatten() {
            if p.starts_with("blockDim.") || p.starts_with("gridDim.") {
                visit_vars(t, &mut |v| {
                    if v.starts_with("param.") {
                        out.insert(v.to_string());
                    }
                });
            }
        }
        out
    }

    pub fn param_facts(&self, has: &dyn Fn(&str) -> bool) -> Vec<Term> {
        let mut facts = Vec::new();
        // `__launch_bounds__(T)`: a launch with more than `T` threads per block fails.
        if let Some(t) = self.threads_bound_param.as_ref().filter(|t| has(t)) {
            // Fixed dimensions as constants: the product stays linear in a 1-D launch.
            let threads = self
                .block
                .iter()
                .zip(DIM_NAMES)
                .map(|(spec, d)| match spec {
                    DimSpec::Fixed(n) => int(*n as i64),
                    _ => Term::var(format!("blockDim.{d}")),
                })
                .reduce(mul)
                .unwrap_or_else(|| int(1));
            facts.push(le(threads, Term::var(t.clone())));
        }
        facts.extend(self.site_facts(has));
        facts
    }

    /// Whether some launch site's arguments leave out a binding for a query with the values
    /// `has`: one whose subject it has but whose value names a parameter it lacks (`hs = m *
    /// n` in a query without `m`, see [`Launch::site_facts`]). A witness of such a query may
    /// not fit the site (see [`Launch::witness_fits_a_site`]).
    pub fn drops_bindings(&self, has: &dyn Fn(&str) -> bool) -> bool {
        self.param_sites
            .iter()
            .flatten()
            .any(|(p, t)| has(p) && !names_known(t, has))
    }

    /// Whether a witness (`model`) fits one launch site's arguments, the bindings its query
    /// left out included: a value naming parameters the witness does not give must be one
    /// those parameters can make (see [`reachable`]: `hs = m * n` needs `hs` a multiple of
    /// `n`); `None` when a binding's shape does not tell. `Some(true)` when the file does not
    /// launch the kernel.
    pub fn witness_fits_a_site(&self, model: &BTreeMap<String, i64>) -> Option<bool> {
        if self.param_sites.is_empty() {
            return Some(true);
        }
        any_fits(self.param_sites.iter().map(|site| {
            // Every binding the witness gives a value to: one that cannot be ends the site.
            let mut fits = Some(true);
            for (p, t) in site {
                let Some(value) = model.get(p) else { continue };
                match reachable(t, *value, model) {
                    Some(true) => {}
                    Some(false) => return Some(false),
                    None => fits = None,
                }
            }
            fits
        }))
    }

    /// One launch site's bindings hold (nothing when the file does not launch the kernel).
    fn site_facts(&self, has: &dyn Fn(&str) -> bool) -> Vec<Term> {
        if self.param_sites.is_empty() {
            return vec![];
        }
        let mut alternatives = Vec::new();
        let known = |t: &Term| names_known(t, has);
        for (i, site) in self.param_sites.iter().enumerate() {
            // Conditions that name only what the query has (or launch sizes).
            let conditions: Vec<Term> = self
                .site_conditions
                .get(i)
                .into_iter()
                .flatten()
                .filter(|c| known(c))
                .cloned()
                .collect();
            // A binding counts when the query mentions its subject, or, for a grid or block
            // relation, a parameter it relates the size to.
            // A launch size of the site always counts (sizes vary between sites only when
            // the site says so).
            let binds: Vec<Term> = site
                .iter()
                // A binding whose value names a parameter the query does not have would
                // declare nothing for it (`gridDim.y == H` in a query without `H`): left out,
                // which only weakens the fact.
                .filter(|(_, t)| known(t))
                .filter(|(p, t)| {
                    has(p)
                        || ((p.starts_with("gridDim.") || p.starts_with("blockDim."))
                            && mentions(t, has))
                        || (p.starts_with("blockDim.") || p.starts_with("gridDim."))
                            && as_int(t).is_some()
                })
                .map(|(p, t)| eq(Term::var(p.clone()), t.clone()))
                .chain(conditions)
                .collect();
            if binds.is_empty() {
                return vec![];
            }
            alternatives.push(and(binds));
        }
        vec![or(alternatives)]
    }

    /// How many sites bind arguments, and the constants they pass (`n = 1024`), for the
    /// description of the assumed launch.
    fn describe_args(&self) -> Option<String> {
        // The sizes tied to their site are said by the launch description already.
        let size = |(p, t): &(String, Term)| {
            (p.starts_with("blockDim.") || p.starts_with("gridDim.")) && as_int(t).is_some()
        };
        let args_of: Vec<Vec<(String, Term)>> = self
            .param_sites
            .iter()
            .map(|s| s.iter().filter(|b| !size(b)).cloned().collect())
            .collect();
        let binding: Vec<&Vec<(String, Term)>> = args_of.iter().filter(|s| !s.is_empty()).collect();
        if binding.is_empty() {
            return None;
        }
        let first: Vec<String> = binding[0]
            .iter()
            .map(|(p, t)| {
                let name = p.strip_prefix("param.").unwrap_or(p);
                match show_term(t) {
                    shown if shown.contains('…') => {
                        format!("{name} computed from the passed values")
                    }
                    shown => format!("{name} = {shown}"),
                }
            })
            .collect();
        // The conditions of a single site (`n == 768 || n == 1024`), as far as they read.
        let conditions: Vec<String> = match self.site_conditions.as_slice() {
            [one] if self.param_sites.len() == 1 => one
                .iter()
                .map(show_term)
                .filter(|c| !c.contains('…') && !c.contains("Dim."))
                .collect(),
            _ => vec![],
        };
        if binding.len() == 1 && !conditions.is_empty() {
            return Some(format!(
                "arguments from the launch site: {}; launched only if {}",
                first.join(", "),
                conditions.join(" && ")
            ));
        }
        Some(if binding.len() == 1 {
            format!("arguments from the launch site: {}", first.join(", "))
        } else {
            format!("arguments from {} launch sites", binding.len())
        })
    }

    /// Small sizes tried first for readable witnesses.
    pub fn preferred(&self) -> Vec<Term> {
        let mut out = Vec::new();
        for (d, spec) in self.block.iter().enumerate() {
            if *spec == DimSpec::Symbolic {
                out.push(le(
                    Term::var(format!("blockDim.{}", DIM_NAMES[d])),
                    int(if d == 0 { 64 } else { 8 }),
                ));
            }
        }
        for (d, spec) in self.grid.iter().enumerate() {
            if *spec == DimSpec::Symbolic {
                out.push(le(Term::var(format!("gridDim.{}", DIM_NAMES[d])), int(4)));
            }
        }
        out
    }

    pub fn describe(&self) -> String {
        let show = |s: &DimSpec, sym: &str| match s {
            DimSpec::Fixed(n) => n.to_string(),
            DimSpec::OneOf(ns) => ns
                .iter()
                .map(|n| n.to_string())
                .collect::<Vec<_>>()
                .join("|"),
            DimSpec::Symbolic => sym.to_string(),
        };
        let bsym = format!("1..{}", self.max_threads);
        let zsym = format!("1..{}", self.max_threads.min(64));
        let b: Vec<String> = self
            .block
            .iter()
            .enumerate()
            .map(|(d, s)| show(s, if d == 2 { &zsym } else { &bsym }))
            .collect();
        let g: Vec<String> = self.grid.iter().map(|s| show(s, "symbolic")).collect();
        let mut out = format!("blockDim=({}) gridDim=({})", b.join(", "), g.join(", "));
        // Each dimension's range is not the whole story when several vary: their product is
        // bounded (`__launch_bounds__(64)` allows 8 × 8, not 64 × 64).
        let varying = self
            .block
            .iter()
            .filter(|s| !matches!(s, DimSpec::Fixed(_)))
            .count();
        if varying >= 2 {
            out.push_str(&format!(
                "; blockDim.x * blockDim.y * blockDim.z <= {}",
                self.max_threads
            ));
        }
        if let Some(t) = &self.threads_bound_param {
            let name = t.strip_prefix("param.").unwrap_or(t);
            out.push_str(&format!("; at most {name} threads per block"));
        }
        if let Some(args) = self.describe_args() {
            out.push_str(&format!("; {args}"));
        }
        out
    }
}

/// `1024`, `gridDim.x`, `gridDim.x * blockDim.x`, `n / 4`, `(n + 63) / 64`: a site's value
/// as the reader would write it (parameters by name); anything else is `…`.
fn show_term(t: &Term) -> String {
    show_term_in(t, 0)
}

/// `t` inside an operator of precedence `outer` (0: none, `&&`, `||`; 1: `+ -` and
/// comparisons; 2: `* / %`).
fn show_term_in(t: &Term, outer: u8) -> String {
    let wrap = |s: String, own: u8| if own < outer { format!("({s})") } else { s };
    match t {
        Term::Int(n) => n.to_string(),
        Term::Var(v) => v.strip_prefix("param.").unwrap_or(v).to_string(),
        Term::Mul(ts) => wrap(
            ts.iter()
                .map(|x| show_term_in(x, 2))
                .collect::<Vec<_>>()
                .join(" * "),
            2,
        ),
        Term::Add(ts) => wrap(
            ts.iter()
                .map(|x| show_term_in(x, 1))
                .collect::<Vec<_>>()
                .join(" + "),
            1,
        ),
        Term::Sub(a, b) => wrap(
            format!("{} - {}", show_term_in(a, 1), show_term_in(b, 2)),
            1,
        ),
        Term::Div(a, b) => wrap(
            format!("{} / {}", show_term_in(a, 2), show_term_in(b, 3)),
            2,
        ),
        Term::Rem(a, b) => wrap(
            format!("{} % {}", show_term_in(a, 2), show_term_in(b, 3)),
            2,
        ),
        // Conditions: comparisons, then `&&`, `||` (parenthesized inside anything).
        Term::Eq(a, b) => wrap(
            format!("{} == {}", show_term_in(a, 1), show_term_in(b, 1)),
            1,
        ),
        Term::Lt(a, b) => wrap(
            format!("{} < {}", show_term_in(a, 1), show_term_in(b, 1)),
            1,
        ),
        Term::Le(a, b) => wrap(
            format!("{} <= {}", show_term_in(a, 1), show_term_in(b, 1)),
            1,
        ),
        Term::Not(a) => match &**a {
            Term::Eq(x, y) => wrap(
                format!("{} != {}", show_term_in(x, 1), show_term_in(y, 1)),
                1,
            ),
            Term::Var(_) => format!("!{}", show_term_in(a, 3)),
            _ => format!("!({})", show_term_in(a, 0)),
        },
        Term::And(ts) => wrap(
            ts.iter()
                .map(|x| show_term_in(x, 1))
                .collect::<Vec<_>>()
                .join(" && "),
            0,
        ),
        Term::Or(ts) => wrap(
            ts.iter()
                .map(|x| show_term_in(x, 1))
                .collect::<Vec<_>>()
                .join(" || "),
            0,
        ),
        _ => "…".into(),
    }
}

/// Whether `t` can be `value` for some values of the names `model` lacks (each taken as free:
/// the witness did not need them). `None` where the shape of `t` does not tell: a sum or
/// difference with one part that names them (`n / 4 + 1`), a division of it by a given
/// positive divisor, a product of given factors and names it lacks (`hs = m * n`: a multiple
/// of `n`); names that occur in several parts are taken as independent, which may accept a
/// witness that does not fit (never the other way round).
fn reachable(t: &Term, value: i64, model: &BTreeMap<String, i64>) -> Option<bool> {
    if all_given(t, model) {
        return crate::witness::eval_int(t, model).map(|v| v == value);
    }
    let given = |x: &Term| all_given(x, model);
    let eval = |x: &Term| crate::witness::eval_int(x, model);
    match t {
        Term::Var(_) => Some(true),
        Term::Add(ts) => {
            let (free, fixed): (Vec<&Term>, Vec<&Term>) = ts.iter().partition(|x| !given(x));
            let [free] = free.as_slice() else {
                return None;
            };
            let sum = fixed
                .iter()
                .try_fold(0i64, |acc, x| acc.checked_add(eval(x)?))?;
            reachable(free, value.checked_sub(sum)?, model)
        }
        Term::Sub(a, b) if given(b) => reachable(a, value.checked_add(eval(b)?)?, model),
        Term::Sub(a, b) if given(a) => reachable(b, eval(a)?.checked_sub(value)?, model),
        // C division truncates: `a / b == value` for every `a` of a range of `b` values
        // (`[value·b, value·b + b - 1]` for a positive quotient); some of them may be
        // reachable when `value·b` is not (`4 * k / 3 == 1` at `a = 4`).
        Term::Div(a, b) if given(b) && eval(b)? > 0 => {
            let b = eval(b)?;
            let q = value.checked_mul(b)?;
            let (lo, hi) = match value.signum() {
                1 => (q, q.checked_add(b - 1)?),
                -1 => (q.checked_sub(b - 1)?, q),
                _ => (1 - b, b - 1),
            };
            if matches!(&**a, Term::Var(_)) {
                return Some(true);
            }
            // Beyond this many candidates the shape does not tell.
            if hi - lo > 64 {
                return None;
            }
            any_fits((lo..=hi).map(|x| reachable(a, x, model)))
        }
        Term::Mul(ts) => {
            let (free, fixed): (Vec<&Term>, Vec<&Term>) = ts.iter().partition(|x| !given(x));
            let c = fixed
                .iter()
                .try_fold(1i64, |acc, x| acc.checked_mul(eval(x)?))?;
            if c == 0 {
                return Some(value == 0);
            }
            if value % c != 0 {
                return Some(false);
            }
            match free.as_slice() {
                [one] => reachable(one, value / c, model),
                // A product of several free names is any integer.
                more if more.iter().all(|x| matches!(x, Term::Var(_))) => Some(true),
                _ => None,
            }
        }
        _ => None,
    }
}

/// Some of the answers is yes (`Some(true)`); else `None` when one does not tell; else no.
/// Stops at the first yes.
fn any_fits(answers: impl Iterator<Item = Option<bool>>) -> Option<bool> {
    let mut unsure = false;
    for a in answers {
        match a {
            Some(true) => return Some(true),
            Some(false) => {}
            None => unsure = true,
        }
    }
    if unsure {
        None
    } else {
        Some(false)
    }
}

/// Every name of `t` is one the query has (`has`) or a launch size.
fn names_known(t: &Term, has: &dyn Fn(&str) -> bool) -> bool {
    let mut vars = std::collections::BTreeSet::new();
    collect_vars(t, &mut vars);
    vars.iter()
        .all(|v| has(v) || v.starts_with("blockDim.") || v.starts_with("gridDim."))
}

/// Every name of `t` has a value in `model`.
fn all_given(t: &Term, model: &BTreeMap<String, i64>) -> bool {
    let mut vars = std::collections::BTreeSet::new();
    collect_vars(t, &mut vars);
    vars.iter().all(|v| model.contains_key(v.as_str()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_with_free_names_is_reachable_when_their_values_can_make_it() {
        let m: BTreeMap<String, i64> = [("n".to_string(), 64), ("hs".to_string(), 5)]
            .into_iter()
            .collect();
        let v = |s: &str| Term::var(s.to_string());
        // hs = heads * n: a multiple of n.
        assert_eq!(reachable(&mul(v("heads"), v("n")), 128, &m), Some(true));
        assert_eq!(reachable(&mul(v("heads"), v("n")), 65, &m), Some(false));
        // blockDim.x = w / 4 + 1, with w free: any value.
        let quarter = Term::Div(Arc::new(v("w")), Arc::new(int(4)));
        assert_eq!(reachable(&add(quarter, int(1)), 9, &m), Some(true));
        // n - k with k free, and a given sum.
        let diff = Term::Sub(Arc::new(v("n")), Arc::new(v("k")));
        assert_eq!(reachable(&diff, 3, &m), Some(true));
        assert_eq!(reachable(&add(v("n"), int(1)), 65, &m), Some(true));
        assert_eq!(reachable(&add(v("n"), int(1)), 64, &m), Some(false));
        // A remainder of a free name: not told.
        let rem = Term::Rem(Arc::new(v("w")), Arc::new(int(4)));
        assert_eq!(reachable(&rem, 9, &m), None);
        // C division truncates: 4 * k / 3 is 1 at k = 1 (4 / 3 == 1), though 1 * 3 is no
        // multiple of 4; 4 * k / 2 is never 1 nor -1 (2, 3 and -3, -2 are no multiples of 4),
        // and it is 0 at k = 0.
        let over = |d: i64| Term::Div(Arc::new(mul(int(4), v("k"))), Arc::new(int(d)));
        assert_eq!(reachable(&over(3), 1, &m), Some(true));
        assert_eq!(reachable(&over(2), 1, &m), Some(false));
        assert_eq!(reachable(&over(2), -1, &m), Some(false));
        assert_eq!(reachable(&over(2), 0, &m), Some(true));
    }
    use cudarace_ir::{LaunchSite, Span};
    use std::sync::Arc;

    fn kernel() -> Kernel {
        Kernel {
            name: "k".into(),
            span: Span::default(),
            name_span: Span::default(),
            params: vec![],
            arrays: vec![],
            locals: vec![],
            unknowns: vec![],
            body: vec![],
            launch_bounds: None,
            launch_bounds_param: None,
            annotated_launch: LaunchConfig::default(),
            unsupported: None,
            volatile_arrays: vec![],
            library_notes: vec![],
        }
    }

    #[test]
    fn site_values_read_as_written() {
        let n = Term::var("param.n");
        let t = Term::Div(
            Arc::new(Term::Add(vec![n.clone(), int(63)].into())),
            Arc::new(int(64)),
        );
        assert_eq!(show_term(&t), "(n + 63) / 64");
        let t = Term::Mul(vec![Term::var("gridDim.x"), Term::var("blockDim.x")].into());
        assert_eq!(show_term(&t), "gridDim.x * blockDim.x");
        let t = Term::Sub(
            Arc::new(n.clone()),
            Arc::new(Term::Rem(Arc::new(n), Arc::new(int(4)))),
        );
        assert_eq!(show_term(&t), "n - n % 4");
        assert_eq!(show_term(&Term::Bool(true)), "…");
        let n = Term::var("param.n");
        let c = and(vec![
            eq(rem(n.clone(), int(128)), int(0)),
            or(vec![eq(n.clone(), int(768)), eq(n.clone(), int(1024))]),
            not(Term::var("param.check")),
        ]);
        assert_eq!(
            show_term(&c),
            "n % 128 == 0 && (n == 768 || n == 1024) && !check"
        );
    }

    #[test]
    fn unmentioned_dimensions_are_one() {
        let l = resolve(
            &FileIr::default(),
            &kernel(),
            &LaunchConfig::default(),
            [true, false, false],
            [true, false, false],
        );
        assert_eq!(
            l.block,
            [DimSpec::Symbolic, DimSpec::Fixed(1), DimSpec::Fixed(1)]
        );
        assert_eq!(
            l.describe(),
            "blockDim=(1..1024, 1, 1) gridDim=(symbolic, 1, 1)"
        );
    }

    #[test]
    fn override_beats_annotation_beats_sites_beats_header() {
        let mut k = kernel();
        k.annotated_launch.block_dim = [Some(64), None, None];
        let mut file = FileIr::default();
        file.launch_sites.push(LaunchSite {
            kernel: "k".into(),
            span: Span::default(),
            grid_dim: Some([8, 1, 1]),
            block_dim: Some([128, 1, 1]),
            args: vec![],
            template_args: vec![],
            definitions: None,
            grid_relations: [None, None, None],
            block_relations: [None, None, None],
            grid_values: None,
            block_values: None,
            conditions: vec![],
        });
        file.header_launch.grid_dim = [Some(2), None, None];
        let mut ov = LaunchConfig::default();
        let l = resolve(&file, &k, &ov, [true; 3], [true; 3]);
        assert_eq!(l.block[0], DimSpec::Fixed(64));
        assert_eq!(l.grid[0], DimSpec::Fixed(8));
        ov.block_dim[0] = Some(32);
        let l = resolve(&file, &k, &ov, [true; 3], [true; 3]);
        assert_eq!(l.block[0], DimSpec::Fixed(32));
    }

    #[test]
    fn blocks_over_the_limit_are_checked_with_a_warning_naming_the_source() {
        let k = kernel();
        let mut file = FileIr::default();
        file.header_launch.block_dim = [Some(2048), Some(1), Some(1)];
        let l = resolve(&file, &k, &LaunchConfig::default(), [true; 3], [true; 3]);
        assert_eq!(l.block[0], DimSpec::Fixed(2048));
        let w = l.warning.clone().expect("a warning");
        assert!(w.contains("GPUVerify header line"), "{w}");
        assert!(w.contains("2048 threads"), "{w}");
        assert!(l
            .constraints()
            .contains(&eq(Term::var("blockDim.x"), int(2048))));
        let ov = LaunchConfig {
            block_dim: [Some(64), Some(64), Some(1)],
            ..Default::default()
        };
        let l = resolve(&file, &k, &ov, [true; 3], [true; 3]);
        let w = l.warning.expect("a warning");
        assert!(
            w.contains("--block-dim") && w.contains("4096 threads"),
            "{w}"
        );
        let mut k = kernel();
        k.annotated_launch.block_dim = [Some(1), Some(1), Some(128)];
        let l = resolve(
            &FileIr::default(),
            &k,
            &LaunchConfig::default(),
            [true; 3],
            [true; 3],
        );
        let w = l.warning.expect("a warning");
        assert!(
            w.contains("annotation") && w.contains("1024 × 1024 × 64"),
            "{w}"
        );
        // Within the limits: no warning.
        file.header_launch.block_dim = [Some(32), Some(32), Some(1)];
        let l = resolve(
            &file,
            &kernel(),
            &LaunchConfig::default(),
            [true; 3],
            [true; 3],
        );
        assert_eq!(l.warning, None);
    }

    #[test]
    fn launch_bounds_cap_the_block() {
        let mut k = kernel();
        k.launch_bounds = Some(256);
        let l = resolve(
            &FileIr::default(),
            &k,
            &LaunchConfig::default(),
            [true, false, false],
            [true, false, false],
        );
        assert!(l
            .constraints()
            .contains(&le(Term::var("blockDim.x"), int(256))));
        // Two dimensions under `__launch_bounds__(64)`: their product is bounded, and said so.
        let mut k = kernel();
        k.launch_bounds = Some(64);
        let l = resolve(
            &FileIr::default(),
            &k,
            &LaunchConfig::default(),
            [true, true, false],
            [true, false, false],
        );
        let product = Term::Mul(vec![Term::var("blockDim.x"), Term::var("blockDim.y")].into());
        assert!(l.constraints().contains(&le(product, int(64))));
        assert_eq!(
            l.describe(),
            "blockDim=(1..64, 1..64, 1) gridDim=(symbolic, 1, 1); \
             blockDim.x * blockDim.y * blockDim.z <= 64"
        );
    }
}
