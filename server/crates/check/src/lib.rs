//! Kernel IR → memory access protocols → barrier intervals → solver queries → findings.
//!
//! Pipeline: [`protocol`] symbolically executes the kernel for one symbolic thread; [`align`]
//! summarizes it into barrier-free segments (Faial's barrier aligning); [`split`] lists the
//! conflicting pairs of every barrier interval; [`encode`] turns each pair into ONE query over
//! two threads A and B (so every finding names both accesses); [`divergence`] asks, for each
//! barrier, whether two threads of a block can disagree on reaching it; [`witness`] reads models
//! back, and `findings` turns the answers into findings and the verdict ([`finish_kernel`]);
//! [`race_cap`] stops asking about an array once enough of its pairs race; [`launch`] decides
//! the launch configuration assumed.
//!
//! Known approximations (all on the sound side: more pairs, never fewer):
//! - threads that `break`/`return` inside a loop are assumed to possibly run later iterations
//!   (for races); for divergence, barriers of later iterations get an unknown "still in the
//!   loop" condition (a possible finding);
//! - a loop whose iterations may cross no barrier while accessing memory is analysed with
//!   unaligned (per-thread) iterations;
//! - unmodelled code that may synchronize is treated as no barrier (findings become possible,
//!   a race-free result becomes unknown);
//! - beyond `MAX_RACE_QUERIES` queried access pairs a kernel is at best `unknown`;
//! - integer values are mathematical, with C's unsigned wraparound below zero modelled
//!   (`threadIdx.x - 1`, `tid < blockDim.x - 3`, see [`protocol::ctype`]); overflow past the top
//!   of a type is not.
//!
//! Barriers under thread-dependent conditions: two threads that both reach a barrier are ordered
//! by it; two threads on different sides of a thread-dependent branch that holds barriers meet
//! on the barrier-free paths of both sides (see [`align`]); a pair that disagrees on reaching a
//! `__syncthreads()` (or a full-mask `__syncwarp()`, within a warp) is a divergence, which has
//! its own query. So a race is never hidden by a barrier that not both threads execute.
//!
//! Verdicts: unsupported > racy > divergent > unknown > race-free. A question the solver could
//! not decide never disappears: the verdict is `unknown` when nothing else was found, and when
//! a race or a divergence was found (which outranks it), every undecided question is still
//! listed in the report's reason (e.g. "the solver could not decide the divergence of a
//! __syncthreads() (timeout)"). A racy verdict with an undecided divergence question is thus
//! sound: the kernel is flagged, and the reason says that its divergence was not decided.

pub mod align;
pub mod assumptions;
pub mod bound_params;
pub mod divergence;
pub mod encode;
mod findings;
pub mod launch;
pub mod layout;
mod lemmas;
pub mod protocol;
pub mod race_cap;
pub mod separable;
pub mod split;
pub mod terms;
mod truth;
pub mod uniformity;
pub mod witness;

use cudarace_ir::{
    AccessMode, BarrierScope, Confidence, FileIr, Finding, FindingKind, Kernel, KernelReport,
    LaunchConfig, MemSpace, Related, Span, ThreadWitness, Verdict, Witness,
};
use cudarace_solver::{Answer, Limits, Query, Term};
use encode::{Encoder, Scope};
pub use findings::finish_kernel;
use protocol::SyncKind;
use std::collections::BTreeMap;
use std::sync::Arc;

#[derive(Clone, Debug)]
pub struct CheckOptions {
    /// From the CLI / editor settings; the strongest launch information.
    pub launch_override: LaunchConfig,
    pub limits: Limits,
    /// Check pairs of threads in different blocks on global memory.
    pub grid_checks: bool,
    /// Plausibility assumptions (see [`assumptions`]); a race that breaks one is conditional.
    pub assumptions: assumptions::AssumptionSwitches,
}

impl Default for CheckOptions {
    fn default() -> Self {
        CheckOptions {
            launch_override: LaunchConfig::default(),
            limits: Limits::default(),
            grid_checks: true,
            assumptions: assumptions::AssumptionSwitches::default(),
        }
    }
}

/// The questions for one kernel, and (privately) what each one means.
#[derive(Clone, Debug)]
pub struct KernelPlan {
    pub kernel: String,
    pub queries: Vec<Query>,
    meta: Arc<PlanMeta>,
}

impl KernelPlan {
    /// The order to solve the queries in: barrier divergence first (a kernel cut by a time
    /// budget then still reports the divergence it found), then the races, each in plan order.
    pub fn solve_order(&self) -> Vec<usize> {
        let divergence =
            |i: &usize| matches!(self.meta.items.get(*i), Some(Item::Divergence { .. }));
        let (mut first, rest): (Vec<usize>, Vec<usize>) =
            (0..self.queries.len()).partition(divergence);
        first.extend(rest);
        first
    }
}

#[derive(Debug)]
struct PlanMeta {
    span: Span,
    name_span: Span,
    assumed_launch: String,
    unsupported: Option<String>,
    /// One per query, same order.
    items: Vec<Item>,
    /// Reasons the verdict can at best be `unknown` (arrays touched by unmodelled code, …).
    unknown_notes: Vec<String>,
    /// Where the unmodelled code of those notes is (see [`KernelReport::unmodelled`]).
    unmodelled: Vec<cudarace_ir::Unmodelled>,
    /// Unmodelled code that may synchronize (findings become possible).
    may_sync_note: Option<String>,
    /// Library knowledge the kernel relied on (fallback macros), said in the verdict's reason.
    library_notes: Vec<String>,
    /// What the launch made irrelevant (unmodelled code in a kernel of one thread), said in the
    /// verdict's reason.
    launch_notes: Vec<String>,
    /// The block size is over CUDA's limits (see [`launch::Launch::warning`]): a note that does
    /// not change the verdict.
    launch_warning: Option<String>,
}

#[derive(Debug)]
struct Side {
    span: Span,
    mode: AccessMode,
}

#[derive(Debug)]
enum Item {
    Race {
        array: String,
        a: Side,
        b: Side,
        /// Why a finding may not happen: the unknown values of the query…
        reasons: Vec<String>,
        /// … and reasons that are not values (kept even when the witness needs no unknown).
        structural: Vec<String>,
        /// The query's unknown values (canonical names).
        unknowns: std::collections::BTreeSet<String>,
        /// Per disjunct of the query: the disjunct and thread A's cell in it (for the witness).
        cells: Vec<(Term, Vec<Term>)>,
        /// Per disjunct (same order): loop counters whose value at a thread's access is not
        /// their variable's (see [`align::Inst::loop_at`]): the thread, the variable as the
        /// query names it, its value there.
        loops: Vec<Vec<(char, Term, Term)>>,
        same_value: Option<i64>,
        /// What breaking each plausibility assumption of the query means (same order as the
        /// query's `assumptions`).
        assumed: Vec<(Term, assumptions::Broken)>,
        /// The query's candidate preconditions (same order).
        preconditions: Vec<assumptions::Precondition>,
        /// When the kernel is never launched in the file and `launch-shape-without-launch` is
        /// on: its shape parameters (strides, steps, divisors: not mere bounds), a precondition
        /// on one of which that ties it to the launch makes the race conditional.
        shape_params: Vec<String>,
        /// The array is accessed as `volatile` in a kernel without `__syncwarp()`: a race
        /// between two threads of one warp is legacy warp-synchronous code.
        warp_synchronous: bool,
        /// Unmodelled calls that may synchronize sit between the two accesses: the finding is
        /// possible, for this reason.
        may_sync: Option<String>,
        /// The kernel's launch, when the query left out a launch-site binding (it names a
        /// parameter the query lacks): a witness must be checked against it.
        launch: Option<Arc<launch::Launch>>,
    },
    Divergence {
        span: Span,
        /// The later barriers on the same path (the same guard, so the same question): one
        /// answer, one finding, which names them.
        also: Vec<Span>,
        kind: SyncKind,
        barrier: &'static str,
        cause: Option<(Span, String)>,
        reasons: Vec<String>,
        /// The query's formula (canonical names) and its unknown values.
        question: Term,
        unknowns: std::collections::BTreeSet<String>,
        /// What breaking each plausibility assumption of the query means (same order as the
        /// query's `assumptions`).
        assumed: Vec<(Term, assumptions::Broken)>,
    },
}

/// Beyond this many access pairs a kernel is not checked further (its verdict is at best
/// `unknown`), so that a huge unrolled kernel cannot stall the editor.
const MAX_RACE_QUERIES: usize = 3000;

/// Race queries of one array that also search a precondition (each search costs up to
/// [`assumptions::MAX_PRECONDITIONS`] small solver checks, and only when the pair races): per
/// array, so that the pairs of one busy buffer do not leave another array's races without
/// theirs (cusignal's `sosfilt`: 16 pairs of the shared buffer, then none for `x_in`, whose
/// precondition `n_sections == blockDim.x` makes its races conditional).
const MAX_PRECONDITION_QUERIES_PER_ARRAY: usize = 16;

/// Race queries of a kernel that also search a precondition, over all its arrays.
const MAX_PRECONDITION_QUERIES: usize = 48;

fn barrier_name(kind: SyncKind) -> &'static str {
    match kind {
        SyncKind::Block => "__syncthreads()",
        SyncKind::Warp => "__syncwarp()",
        SyncKind::Grid => "grid.sync()",
    }
}

/// Build every question for `kernel` (no solving).
pub fn plan_kernel(file: &FileIr, kernel: &Kernel, opts: &CheckOptions) -> KernelPlan {
    plan_kernel_until(file, kernel, opts, &|| None)
}

/// [`plan_kernel`] that gives up when `stop()` names the budget that is spent (`"file's"`,
/// `"kernel's"`; also when the check was cancelled): the kernel is then `unknown`, with the reason,
/// never race-free. Symbolic execution and the encoding of each pair of accesses ask; a large
/// kernel (thousands of accesses under guards merged from many branches) can spend seconds
/// there before any query is asked.
pub fn plan_kernel_until(
    file: &FileIr,
    kernel: &Kernel,
    opts: &CheckOptions,
    stop: &dyn Fn() -> Option<&'static str>,
) -> KernelPlan {
    let mut meta = PlanMeta {
        span: kernel.span,
        name_span: kernel.name_span,
        assumed_launch: String::new(),
        unsupported: kernel.unsupported.clone(),
        items: Vec::new(),
        unknown_notes: Vec::new(),
        unmodelled: Vec::new(),
        may_sync_note: None,
        library_notes: kernel.library_notes.clone(),
        launch_notes: Vec::new(),
        launch_warning: None,
    };
    let mut queries = Vec::new();
    if kernel.unsupported.is_some() {
        return KernelPlan {
            kernel: kernel.name.clone(),
            queries,
            meta: Arc::new(meta),
        };
    }
    // Parameters every launch site binds to a launch size are that size (see `bound_params`).
    let bound = bound_params::with_bound_params(file, kernel);
    let kernel = bound.as_ref().unwrap_or(kernel);
    let spent = std::cell::Cell::new(None);
    let stop = || {
        let whose = stop();
        if whose.is_some() {
            spent.set(whose);
        }
        whose.is_some()
    };
    let p = protocol::build_until(kernel, &stop);
    let out_of_time = |meta: &mut PlanMeta, when: &str| {
        let whose = spent.get().unwrap_or("");
        meta.unknown_notes.push(format!(
            "timeout: the {whose} time budget ran out while {when}"
        ));
    };
    if p.out_of_time {
        out_of_time(&mut meta, "executing the kernel symbolically");
        return KernelPlan {
            kernel: kernel.name.clone(),
            queries,
            meta: Arc::new(meta),
        };
    }
    // The x dimension is always symbolic: a kernel that never names threadIdx is still launched
    // with many threads; only unnamed y and z dimensions are taken to be 1.
    let (mut block_used, mut grid_used) = (p.block_dims_used, p.grid_dims_used);
    block_used[0] = true;
    grid_used[0] = true;
    // Shared with the race items whose witnesses are checked against the sites.
    let launch = Arc::new(launch::resolve(
        file,
        kernel,
        &opts.launch_override,
        block_used,
        grid_used,
    ));
    meta.assumed_launch = launch.describe();
    meta.launch_warning = launch.warning.clone();
    let roles = assumptions::param_roles(kernel);
    let mut kernel_assumptions = assumptions::param_assumptions(kernel, &roles, &opts.assumptions);
    let fixed_dims = |dims: &[launch::DimSpec; 3]| {
        dims.clone()
            .map(|d| !matches!(d, launch::DimSpec::Symbolic))
    };
    let leading = assumptions::leading_dimension_assumptions(
        kernel,
        (fixed_dims(&launch.block), fixed_dims(&launch.grid)),
        &opts.assumptions,
    );
    kernel_assumptions.extend(leading.iter().cloned());
    if opts.assumptions.whole_stretches {
        kernel_assumptions.extend(assumptions::whole_stretch_assumptions(kernel));
    }
    if opts.assumptions.divisible_sizes {
        kernel_assumptions.extend(assumptions::divisible_size_assumptions(kernel));
    }
    if opts.assumptions.leading_dimensions {
        let known: Vec<(String, String)> = leading
            .iter()
            .filter_map(|a| match &a.broken {
                assumptions::Broken::LeadingDimension { ld, scale: 1, row } => {
                    Some((ld.clone(), row.clone()))
                }
                _ => None,
            })
            .collect();
        kernel_assumptions.extend(layout::layout_assumptions(
            kernel,
            (fixed_dims(&launch.block), fixed_dims(&launch.grid)),
            &known,
        ));
    }
    let launched = !launch::sites_of(file, kernel).is_empty();
    let shape_params: Vec<String> = if launched || !opts.assumptions.launch_shape_without_launch {
        Vec::new()
    } else {
        let bounds = assumptions::thread_bounds(kernel);
        roles
            .iter()
            .filter(|(p, r)| **r == assumptions::Role::Stride && !bounds.contains(p))
            .filter_map(|(p, _)| kernel.params.get(p.0 as usize).map(|p| p.name.clone()))
            .collect()
    };
    let fixed =
        |dims: &[launch::DimSpec; 3]| dims.iter().all(|d| matches!(d, launch::DimSpec::Fixed(_)));
    kernel_assumptions.extend(assumptions::shared_slot_assumptions(
        kernel,
        launch
            .block
            .clone()
            .map(|d| !matches!(d, launch::DimSpec::Symbolic)),
        &opts.assumptions,
    ));
    kernel_assumptions.extend(assumptions::unread_dimension_assumptions(
        p.block_dims_used,
        &launch.block,
        &opts.assumptions,
    ));
    // A block shape the kernel's constant block-stride loops name, when it fits the other
    // assumptions about the block and its launch bounds (an assumption no witness can keep
    // would make every race conditional).
    for (d, c) in
        assumptions::constant_shape_candidates(kernel, fixed_dims(&launch.block), &opts.assumptions)
    {
        let var = format!("blockDim.{}", cudarace_ir::Dim::ALL[d].name());
        let at_c: BTreeMap<String, i64> = [(var.clone(), c)].into_iter().collect();
        let fits = u64::try_from(c).is_ok_and(|c| c <= launch.max_threads)
            && kernel_assumptions.iter().all(|a| {
                let mut names = std::collections::BTreeSet::new();
                terms::collect_vars(&a.term, &mut names);
                !(names.len() == 1 && names.contains(&var))
                    || witness::eval_bool(&a.term, &at_c) != Some(false)
            });
        if fits {
            kernel_assumptions.push(assumptions::constant_shape_assumption(d, c));
        }
    }
    // The halo a guarded last thread fills past its tile, when it fits the assumptions so far
    // (a block-stride loop wider than the tile says the block is wider).
    for a in assumptions::halo_assumptions(kernel, fixed_dims(&launch.block), &opts.assumptions) {
        let mut names = std::collections::BTreeSet::new();
        terms::collect_vars(&a.term, &mut names);
        let contradicts = kernel_assumptions.iter().any(|b| {
            let mut theirs = std::collections::BTreeSet::new();
            terms::collect_vars(&b.term, &mut theirs);
            let cudarace_solver::Term::Eq(_, c) = &b.term else {
                return false;
            };
            let Some(c) = terms::as_int(c) else {
                return false;
            };
            let at_c: BTreeMap<String, i64> = names.iter().map(|v| (v.to_string(), c)).collect();
            theirs == names && names.len() == 1 && witness::eval_bool(&a.term, &at_c) == Some(false)
        });
        if !contradicts {
            kernel_assumptions.push(a);
        }
    }
    // Whole warps per block, when some block the other block assumptions (and the launch
    // bounds) allow is one: else the assumption would make every race conditional.
    let warp_multiple = assumptions::warp_multiple_assumption(
        kernel,
        p.block_dims_used,
        launch
            .block
            .clone()
            .map(|d| matches!(d, launch::DimSpec::Symbolic)),
        &opts.assumptions,
    )
    .filter(|w| assumptions::fits_block_assumptions(w, &kernel_assumptions, launch.max_threads));
    kernel_assumptions.extend(warp_multiple.iter().cloned());
    // Linearised thread ids are one-to-one, when some block the other assumptions allow keeps
    // it (`blockDim.x <= 16` with `blockDim.y <= blockDim.x` still allows 16 × 16).
    for a in assumptions::one_to_one_thread_id_assumptions(
        kernel,
        launch
            .block
            .clone()
            .map(|d| matches!(d, launch::DimSpec::Symbolic)),
        &opts.assumptions,
    ) {
        if assumptions::fits_block_assumptions(&a, &kernel_assumptions, launch.max_threads) {
            kernel_assumptions.push(a);
        }
    }
    kernel_assumptions.extend(assumptions::launch_assumptions(
        p.block_dims_used,
        p.grid_dims_used,
        launched,
        (fixed(&launch.block), fixed(&launch.grid)),
        &opts.assumptions,
    ));
    // Plausibility assumptions stand in for what the file does not say. Where every launch
    // site gives a parameter a value (a constant, launch sizes), the sites say what it is; a
    // leading dimension that every site relates to other values (`k(x, n, n / 2)`) is what
    // the sites make it. A size bound only to another parameter (`k(dst, w, w)`) keeps its
    // assumption: the sites say nothing of its sign.
    kernel_assumptions.retain(|a| match &a.broken {
        assumptions::Broken::Param { name, .. } => !launch.binds_everywhere(name, true),
        assumptions::Broken::LeadingDimension { ld, .. } => !launch.binds_everywhere(ld, false),
        assumptions::Broken::Layout { subjects, .. } => {
            subjects.is_empty() || !subjects.iter().all(|p| launch.binds_everywhere(p, false))
        }
        _ => true,
    });
    if std::env::var("CUDARACE_DEBUG_ASSUMPTIONS").is_ok() {
        for a in &kernel_assumptions {
            eprintln!(
                "ASSUME {} :: {}",
                a.broken.describe(&BTreeMap::new()),
                terms::show(&a.term)
            );
        }
    }
    let enc = Encoder {
        p: &p,
        kernel,
        launch: &launch,
    };
    let array_name = |id: cudarace_ir::ArrayId| {
        kernel
            .arrays
            .get(id.0 as usize)
            .map(|a| a.name.clone())
            .unwrap_or_default()
    };
    // One thread in all (every launch is `<<<1, 1>>>`): there is no second thread of the kernel
    // for unmodelled code to race with or to diverge from, whatever it does, unless it starts
    // threads of its own.
    let one_thread = !p.starts_threads
        && launch
            .block
            .iter()
            .chain(launch.grid.iter())
            .all(|d| *d == launch::DimSpec::Fixed(1));
    if one_thread && (!p.opaque_arrays.is_empty() || !p.may_sync_calls.is_empty()) {
        meta.launch_notes.push(
            "launched with one thread in all: the unmodelled code has no other thread of this kernel to race with".into(),
        );
    }
    // An unmodelled load races only with a write: an array that no statement of the kernel
    // writes (`Protocol::written`: stores, atomics, unmodelled code that may write) cannot be
    // raced on by it.
    for o in p
        .opaque_arrays
        .iter()
        .filter(|_| !one_thread)
        .filter(|o| !o.reads_only || p.written.contains(&o.array))
    {
        let note = format!(
            "`{}` may be accessed by unmodelled code ({})",
            array_name(o.array),
            o.why
        );
        if !meta.unknown_notes.contains(&note) {
            meta.unknown_notes.push(note);
        }
        if meta.unmodelled.len() < cudarace_ir::MAX_UNMODELLED_PLACES
            && !meta.unmodelled.iter().any(|u| u.what == o.why)
        {
            meta.unmodelled.push(cudarace_ir::Unmodelled {
                span: o.span,
                what: o.why.clone(),
            });
        }
    }
    if !p.may_sync.is_empty() && !one_thread {
        meta.may_sync_note =
            Some("unmodelled code may synchronize; it was treated as no barrier, so races it might prevent are reported as possible".into());
    }
    // Calls without a body may synchronize: the pairs they cannot separate keep their
    // confidence (see `separable`).
    let meeting = if p.may_sync_calls.is_empty() || meta.may_sync_note.is_some() {
        None
    } else {
        Some(separable::pairs_meeting_across_calls(&p, &stop))
    };
    if stop() {
        out_of_time(&mut meta, "aligning the barrier intervals");
        return KernelPlan {
            kernel: kernel.name.clone(),
            queries,
            meta: Arc::new(meta),
        };
    }
    let calls_note = {
        let mut names: Vec<&str> = Vec::new();
        for (_, why) in &p.may_sync_calls {
            if !names.contains(&why.as_str()) {
                names.push(why);
            }
        }
        let shown: Vec<&str> = names.iter().take(3).copied().collect();
        let more = names.len().saturating_sub(3);
        format!(
            "no barrier in the unmodelled code between the two accesses ({}{})",
            shown.join("; "),
            if more > 0 {
                format!("; {more} more")
            } else {
                String::new()
            }
        )
    };

    // Races.
    let mut scopes: Vec<Scope> = if p.has_warp_sync {
        vec![
            Scope::SameBlock { warp: Some(false) },
            Scope::SameBlock { warp: Some(true) },
        ]
    } else {
        vec![Scope::SameBlock { warp: None }]
    };
    if opts.grid_checks {
        scopes.push(Scope::CrossBlock);
    }
    let is_global = |acc: usize| {
        p.accs
            .get(acc)
            .and_then(|a| kernel.arrays.get(a.array.0 as usize))
            .is_some_and(|arr| arr.space == MemSpace::Global)
    };
    let mut groups: BTreeMap<(usize, usize), Vec<(Scope, split::AccessPair)>> = BTreeMap::new();
    for scope in scopes {
        let counts = move |k: SyncKind| match scope {
            Scope::SameBlock { warp } => k != SyncKind::Warp || warp == Some(true),
            Scope::CrossBlock => k == SyncKind::Grid,
        };
        let segs = split::intervals(&p, &counts, &stop);
        if stop() {
            out_of_time(&mut meta, "aligning the barrier intervals");
            return KernelPlan {
                kernel: kernel.name.clone(),
                queries,
                meta: Arc::new(meta),
            };
        }
        let keep = |acc: usize| scope != Scope::CrossBlock || is_global(acc);
        let never_race = |a: &align::Inst, b: &align::Inst| enc.never_race(scope, a, b);
        for (key, m) in split::access_pairs(&p, &segs, &keep, &never_race) {
            groups.entry(key).or_default().push((scope, m));
        }
    }
    // The cap counts queries, not pairs: pairs decided without a query (see
    // `Encoder::race_core`) cost no solving.
    let n_groups = groups.len();
    let mut with_preconditions = 0;
    let mut with_preconditions_of: BTreeMap<cudarace_ir::ArrayId, usize> = BTreeMap::new();
    for (done, ((ia, ib), ms)) in groups.into_iter().enumerate() {
        if stop() {
            out_of_time(
                &mut meta,
                &format!("encoding the pairs of accesses ({done} of {n_groups} done)"),
            );
            break;
        }
        if queries.len() >= MAX_RACE_QUERIES {
            meta.unknown_notes.push(format!(
                "{n_groups} pairs of accesses to check; only the first {done} were"
            ));
            break;
        }
        let (Some(xa), Some(xb)) = (p.accs.get(ia), p.accs.get(ib)) else {
            continue;
        };
        let mut unrelated = false;
        // Identical cores from several scopes share one disjunct whose thread constraints are
        // the disjunction of the scopes' (e.g. "same block, other thread" or "other block").
        let mut cores: Vec<(Term, Vec<Scope>)> = Vec::new();
        let mut cells: Vec<Vec<Term>> = Vec::new();
        let mut loops: Vec<Vec<(char, Term, Term)>> = Vec::new();
        for (scope, m) in &ms {
            let (core, cell) = enc.race_core(*scope, m, &mut unrelated);
            if core == Term::Bool(false) {
                continue;
            }
            match cores.iter_mut().find(|(c, _)| *c == core) {
                Some((_, scopes)) => {
                    if !scopes.contains(scope) {
                        scopes.push(*scope)
                    }
                }
                None => {
                    cores.push((core, vec![*scope]));
                    cells.push(cell);
                    let mut at = Vec::new();
                    for (th, inst) in [('A', &m.a), ('B', &m.b)] {
                        for (head, value) in &inst.loop_at {
                            let var = Term::Var(head.clone().into());
                            at.push((
                                th,
                                encode::rename(*scope, th, &var),
                                encode::rename(*scope, th, value),
                            ));
                        }
                    }
                    loops.push(at);
                }
            }
        }
        if cores.is_empty() {
            continue;
        }
        // A core that has every conjunct of another (and more) adds no solution: drop it.
        let conj = |t: &Term| -> Vec<Term> {
            match t {
                Term::And(ts) => ts.to_vec(),
                other => vec![other.clone()],
            }
        };
        let parts: Vec<Vec<Term>> = cores.iter().map(|(c, _)| conj(c)).collect();
        let mut keep = vec![true; cores.len()];
        for i in 0..cores.len() {
            for j in 0..cores.len() {
                if i != j
                    && keep[j]
                    && cores[i].1 == cores[j].1
                    && parts[j].iter().all(|p| parts[i].contains(p))
                    && (parts[i].len() > parts[j].len() || i > j)
                {
                    keep[i] = false;
                    break;
                }
            }
        }
        type Core = (Term, Vec<Scope>);
        /// A thread, a loop counter as the query names it, its value at the thread's access.
        type LoopAt = Vec<(char, Term, Term)>;
        type Kept = ((Core, Vec<Term>), LoopAt);
        let kept: Vec<Kept> = cores
            .into_iter()
            .zip(cells)
            .zip(loops)
            .zip(keep)
            .filter(|(_, k)| *k)
            .map(|(c, _)| c)
            .collect();
        let (kept, loops): (Vec<(Core, Vec<Term>)>, Vec<LoopAt>) = kept.into_iter().unzip();
        let (cores, cells): (Vec<Core>, Vec<Vec<Term>>) = kept.into_iter().unzip();
        let disjuncts: Vec<Term> = cores
            .into_iter()
            .map(|(core, scopes)| {
                let threads = terms::or(
                    scopes
                        .iter()
                        .map(|s| terms::and(enc.scope_constraints(*s)))
                        .collect(),
                );
                terms::and(vec![core, threads])
            })
            .collect();
        // Extra terms renamed like the query: each disjunct, then its cell coordinates.
        let arity = cells.first().map(|c| c.len()).unwrap_or(0);
        let mut extra = disjuncts.clone();
        for c in &cells {
            extra.extend(c.iter().cloned());
            extra.extend(std::iter::repeat_n(
                Term::Int(0),
                arity.saturating_sub(c.len()),
            ));
        }
        let n_disj = disjuncts.len();
        // Then each disjunct's loop counters (variable, value), renamed like the query.
        let loops_start = extra.len();
        for at in &loops {
            for (_, var, value) in at {
                extra.push(var.clone());
                extra.push(value.clone());
            }
        }
        // Plausibility assumptions of this pair: the kernel's (parameters, launch) and the
        // cell's, renamed like the query after the disjuncts and cells.
        let ways: Vec<(Term, Vec<Term>)> = disjuncts.iter().cloned().zip(cells.clone()).collect();
        let mut pair_assumptions: Vec<assumptions::Assumption> = kernel_assumptions.clone();
        pair_assumptions.extend(assumptions::cell_assumptions(
            &enc,
            kernel,
            xa.array,
            &ways,
            &opts.assumptions,
        ));
        // What each side needs to execute (for the precondition search), renamed like the
        // query, before the assumptions.
        let reach_start = extra.len();
        if let Some((scope, m)) = ms.first() {
            extra.push(enc.side_reach(*scope, m, 'A'));
            extra.push(enc.side_reach(*scope, m, 'B'));
            extra.push(enc.threads_differ());
        }
        let extra_len = extra.len();
        extra.extend(pair_assumptions.iter().map(|a| a.term.clone()));
        let encode::Finished {
            query: mut q,
            reasons,
            mut extra,
            unknowns,
        } = enc.finish_full(vec![terms::or(disjuncts)], extra);
        let renamed_assumptions: Vec<Term> = extra.split_off(extra_len.min(extra.len()));
        let mut reach: Vec<Term> = extra.split_off(reach_start.min(extra.len()));
        let together: Vec<Term> = reach.split_off(2.min(reach.len()));
        // Candidate preconditions for a race that depends on no unknown value (a possible one
        // would not be removed by a relation between parameters).
        let mut preconditions = Vec::new();
        let of_array = with_preconditions_of.entry(xa.array).or_default();
        if unknowns.is_empty()
            && with_preconditions < MAX_PRECONDITION_QUERIES
            && *of_array < MAX_PRECONDITION_QUERIES_PER_ARRAY
        {
            with_preconditions += 1;
            *of_array += 1;
            // A parameter every launch site gives a value is not free to relate: a
            // precondition on it would contradict the sites and hold vacuously.
            let free = |name: &str| !launch.binds_everywhere(name, true);
            for (t, pre) in assumptions::precondition_candidates(kernel, &q.vars, &free) {
                q.preconditions.push(t);
                preconditions.push(pre);
            }
            if !q.preconditions.is_empty() {
                // The race formula is the last assertion; the ranges and facts come first.
                q.reach_base = q.assertions.len().saturating_sub(1);
                // The code's own values the query does not have (a loop's counter, which the
                // aligned instances name per thread and iteration) are free values of that
                // side: `lo <= j < hi` asks for some iteration.
                for (side, t) in ['A', 'B'].into_iter().zip(reach) {
                    let t = terms::map_vars(&t, &mut |x| {
                        if q.vars.contains_key(x) {
                            return None;
                        }
                        let name = format!("{side}.reach.{x}");
                        q.vars
                            .entry(name.clone())
                            .or_insert(cudarace_solver::Sort::Int);
                        Some(Term::Var(name.into()))
                    });
                    q.reach.push(t);
                }
                q.together = together;
            }
        }
        // Only assumptions about values the query has (a parameter the pair never mentions
        // cannot be what makes it racy).
        let mut assumed = Vec::new();
        for (t, a) in renamed_assumptions.into_iter().zip(pair_assumptions) {
            let mut names = std::collections::BTreeSet::new();
            terms::collect_vars(&t, &mut names);
            if names.iter().all(|n| q.vars.contains_key(n)) {
                // A layout's digit or a leading dimension is what small probe values (every
                // size 2) break first, and what the race then needs: its witness is kept.
                if matches!(
                    a.broken,
                    assumptions::Broken::Layout { .. }
                        | assumptions::Broken::LeadingDimension { .. }
                ) {
                    q.fallback_assumptions.push(q.assumptions.len());
                }
                q.assumptions.push(t.clone());
                assumed.push((t, a.broken));
            }
        }
        let witness_cells: Vec<(Term, Vec<Term>)> = (0..n_disj)
            .map(|i| {
                let start = n_disj + i * arity;
                (
                    extra[i].clone(),
                    extra
                        .get(start..start + arity)
                        .map(|x| x.to_vec())
                        .unwrap_or_default(),
                )
            })
            .collect();
        let mut next = loops_start;
        let witness_loops: Vec<Vec<(char, Term, Term)>> = loops
            .iter()
            .map(|at| {
                at.iter()
                    .filter_map(|(th, _, _)| {
                        let (var, value) = (extra.get(next)?, extra.get(next + 1)?);
                        next += 2;
                        Some((*th, var.clone(), value.clone()))
                    })
                    .collect()
            })
            .collect();
        let mut structural = Vec::new();
        if unrelated {
            structural.push(
                "a flat and a per-dimension index of the array that could not be related".into(),
            );
        }
        let same_value = match (xa.mode, xb.mode, &xa.value, &xb.value) {
            (AccessMode::Write, AccessMode::Write, Some(Term::Int(x)), Some(Term::Int(y)))
                if x == y =>
            {
                Some(*x)
            }
            _ => None,
        };
        let checked_launch = launch
            .drops_bindings(&|v| q.vars.contains_key(v))
            .then(|| launch.clone());
        queries.push(q);
        meta.items.push(Item::Race {
            array: array_name(xa.array),
            a: Side {
                span: xa.span,
                mode: xa.mode,
            },
            b: Side {
                span: xb.span,
                mode: xb.mode,
            },
            reasons,
            structural,
            unknowns,
            cells: witness_cells,
            loops: witness_loops,
            same_value,
            assumed,
            preconditions,
            shape_params: shape_params.clone(),
            warp_synchronous: !p.has_warp_sync && kernel.volatile_arrays.contains(&xa.array),
            launch: checked_launch,
            may_sync: match &meeting {
                Some(Some(m)) if m.contains(&(ia.min(ib), ia.max(ib))) => None,
                Some(_) => Some(calls_note.clone()),
                None => None,
            },
        });
    }

    // Divergence.
    // Whole warps (its term also names the two threads' blocks, as the query does), and the
    // assumptions that name launch sizes and parameters only.
    let divergence_assumptions: Vec<&assumptions::Assumption> = warp_multiple
        .iter()
        .chain(kernel_assumptions.iter().filter(|a| {
            let mut names = std::collections::BTreeSet::new();
            terms::collect_vars(&a.term, &mut names);
            Some(&a.term) != warp_multiple.as_ref().map(|w| &w.term)
                && names.iter().all(|v| {
                    v.starts_with("blockDim.")
                        || v.starts_with("gridDim.")
                        || v.starts_with("param.")
                })
        }))
        .collect();
    // Barriers reached under the same condition (`__syncthreads()` after `__syncthreads()` in one
    // loop body, with no exit between them: the same guard, facts and iteration) are reached
    // by the same threads, so their questions are one question: asked once, for the first, and
    // its finding names the others. A loop of sixteen barriers whose trip count differs
    // between threads is one divergence, not sixteen.
    let mut groups: Vec<(&protocol::SyncInfo, Vec<usize>)> = Vec::new();
    for s in &p.syncs {
        let same = |(first, _): &&mut (&protocol::SyncInfo, Vec<usize>)| {
            first.kind == s.kind
                && first.guard == s.guard
                && first.facts == s.facts
                && first.same_iteration == s.same_iteration
                && first.not_exited == s.not_exited
                && first.cause == s.cause
        };
        if let Some((_, items)) = groups.iter_mut().find(same) {
            for &i in items.iter() {
                if let Some(Item::Divergence { also, .. }) = meta.items.get_mut(i) {
                    also.push(s.span);
                }
            }
            continue;
        }
        let mut items = Vec::new();
        for f in divergence::divergence_queries(&enc, s) {
            let mut query = f.query;
            // The assumptions about the launch and the parameters (the block a constant
            // block-stride loop names, whole warps, sizes of at least 1, …): they name launch
            // sizes and parameters only, which the query has under their own names. A
            // divergence that needs one broken is conditional, as a race is.
            let mut assumed = Vec::new();
            for a in &divergence_assumptions {
                // Only about values the query has (a parameter it never mentions cannot be what
                // makes the barrier diverge, and the solver would drop the term as malformed).
                let mut names = std::collections::BTreeSet::new();
                terms::collect_vars(&a.term, &mut names);
                if !names.iter().all(|n| query.vars.contains_key(n)) {
                    continue;
                }
                query.assumptions.push(a.term.clone());
                assumed.push((a.term.clone(), a.broken.clone()));
            }
            queries.push(query);
            items.push(meta.items.len());
            meta.items.push(Item::Divergence {
                assumed,
                span: s.span,
                also: Vec::new(),
                kind: s.kind,
                barrier: barrier_name(s.kind),
                cause: s.cause.clone(),
                reasons: f.reasons,
                question: f.extra.into_iter().next().unwrap_or(Term::Bool(false)),
                unknowns: f.unknowns,
            });
        }
        groups.push((s, items));
    }
    KernelPlan {
        kernel: kernel.name.clone(),
        queries,
        meta: Arc::new(meta),
    }
}

/// Plan, solve every query with `solve`, and report.
pub fn check_kernel(
    file: &FileIr,
    kernel: &Kernel,
    opts: &CheckOptions,
    solve: &mut dyn FnMut(&Query) -> Answer,
) -> KernelReport {
    let t0 = std::time::Instant::now();
    let plan = plan_kernel(file, kernel, opts);
    let answers: Vec<Answer> = plan.queries.iter().map(&mut *solve).collect();
    finish_kernel(&plan, answers, t0.elapsed().as_secs_f64() * 1000.0)
}

#[cfg(test)]
mod tests;
