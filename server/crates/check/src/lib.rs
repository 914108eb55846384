//! Kernel IR → memory access protocols → barrier intervals → solver queries → findings.
//!
//! Pipeline: [`protocol`] symbolically executes the kernel for one symbolic thread; [`align`]
//! summarizes it into barrier-free segments (Faial's barrier aligning); [`split`] lists the
//! conflicting pairs of every barrier interval; [`encode`] turns each pair into ONE query over
//! two threads A and B (so every finding names both accesses); [`divergence`] asks, for each
//! barrier, whether two threads of a block can disagree on reaching it; [`witness`] reads models
//! back; [`launch`] decides the launch configuration assumed.
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
pub mod divergence;
pub mod encode;
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
        roles
            .iter()
            .filter(|(_, r)| **r == assumptions::Role::Stride)
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
        let kept: Vec<(Core, Vec<Term>)> = cores
            .into_iter()
            .zip(cells)
            .zip(keep)
            .filter(|(_, k)| *k)
            .map(|(c, _)| c)
            .collect();
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
        let reach: Vec<Term> = extra.split_off(reach_start.min(extra.len()));
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
            }
        }
        // Only assumptions about values the query has (a parameter the pair never mentions
        // cannot be what makes it racy).
        let mut assumed = Vec::new();
        for (t, a) in renamed_assumptions.into_iter().zip(pair_assumptions) {
            let mut names = std::collections::BTreeSet::new();
            terms::collect_vars(&t, &mut names);
            if names.iter().all(|n| q.vars.contains_key(n)) {
                if matches!(a.broken, assumptions::Broken::Layout { .. }) {
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
    for s in &p.syncs {
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
            meta.items.push(Item::Divergence {
                assumed,
                span: s.span,
                kind: s.kind,
                barrier: barrier_name(s.kind),
                cause: s.cause.clone(),
                reasons: f.reasons,
                question: f.extra.into_iter().next().unwrap_or(Term::Bool(false)),
                unknowns: f.unknowns,
            });
        }
    }
    KernelPlan {
        kernel: kernel.name.clone(),
        queries,
        meta: Arc::new(meta),
    }
}

fn thread_text(t: &ThreadWitness, with_block: bool) -> String {
    let [x, y, z] = t.thread_idx;
    if with_block {
        let [bx, by, bz] = t.block_idx;
        format!("thread ({x},{y},{z}) of block ({bx},{by},{bz})")
    } else {
        format!("thread ({x},{y},{z})")
    }
}

fn verb(mode: AccessMode) -> &'static str {
    match mode {
        AccessMode::Read => "reads",
        AccessMode::Write => "writes",
        AccessMode::Atomic => "atomically updates",
    }
}

fn cell_text(array: &str, w: &Witness) -> String {
    let mut s = array.to_string();
    for c in &w.cell {
        s.push_str(&format!("[{c}]"));
    }
    s
}

fn confidence(reasons: &[String], may_sync: &Option<String>) -> (Confidence, String) {
    let mut why: Vec<String> = reasons.to_vec();
    if let Some(n) = may_sync {
        why.push(n.clone());
    }
    if why.is_empty() {
        (
            Confidence::Definite,
            "the witness depends on no unknown value".into(),
        )
    } else {
        (
            Confidence::Possible,
            format!("the witness depends on {}", why.join("; ")),
        )
    }
}

/// The witness's two threads are in different blocks.
fn cross_block(model: &BTreeMap<String, i64>) -> bool {
    let w = witness::extract(model, 0);
    w.thread_a.block_idx != w.thread_b.block_idx
}

fn race_finding(
    kernel: &str,
    item: &Item,
    model: &BTreeMap<String, i64>,
    may_sync: &Option<String>,
) -> Option<Finding> {
    let Item::Race {
        array,
        a,
        b,
        reasons,
        structural,
        unknowns,
        cells,
        same_value,
        assumed,
        preconditions,
        shape_params,
        warp_synchronous,
        may_sync: call_note,
        launch,
    } = item
    else {
        return None;
    };
    let chosen = cells
        .iter()
        .find(|(d, _)| witness::eval_bool(d, model) == Some(true))
        .or(cells.first());
    // The witness needs no unknown value when its way of meeting holds whatever they are (an
    // unknown only on a branch the witness does not take, e.g. an index table's "no thread
    // wrote this slot").
    let independent = chosen.is_some_and(|(d, _)| witness::holds_for_any(d, model, unknowns));
    let mut reasons: Vec<String> = if independent { vec![] } else { reasons.clone() };
    reasons.extend(structural.iter().cloned());
    // A launch-site binding the query left out (`hs = m * n` without `m`) may rule the
    // witness out: unless it fits a site, the race is only possible.
    match launch.as_ref().map(|l| l.witness_fits_a_site(model)) {
        Some(Some(false)) => reasons.push("values no launch site of the file passes".into()),
        Some(None) => reasons.push(
            "values not checked against the launch sites' arguments (a relation to a parameter the race does not name)"
                .into(),
        ),
        _ => {}
    }
    // Loop variables only from the way the pair meets (other disjuncts' variables are
    // unconstrained in the model and would show values outside their loops).
    let mut in_disjunct = std::collections::BTreeSet::new();
    if let Some((d, _)) = chosen {
        terms::collect_vars(d, &mut in_disjunct);
    }
    let shown: BTreeMap<String, i64> = model
        .iter()
        .filter(|(n, _)| chosen.is_none() || !n.contains("loop.") || in_disjunct.contains(*n))
        .map(|(n, v)| (n.clone(), *v))
        .collect();
    let mut w = witness::extract(&shown, 0);
    w.cell = chosen
        .map(|(_, c)| {
            c.iter()
                .map(|t| witness::eval_int(t, model).unwrap_or(0))
                .collect()
        })
        .unwrap_or_default();
    let cross = w.thread_a.block_idx != w.thread_b.block_idx;
    let cell = cell_text(array, &w);
    let ta = thread_text(&w.thread_a, cross);
    let tb = thread_text(&w.thread_b, cross);
    let mut message = format!(
        "data race on `{array}`: {ta} {} {cell} while {tb} {} {cell}",
        verb(a.mode),
        verb(b.mode)
    );
    if cross {
        message.push_str("; the threads are in different blocks, which no __syncthreads() orders");
    } else {
        message.push_str(" in the same barrier interval");
    }
    if let Some(v) = same_value {
        message.push_str(&format!(
            " (both store the same value {v}; still a race in the CUDA memory model)"
        ));
    }
    if *warp_synchronous && !cross && same_warp(&w) {
        message.push_str(
            "; warp-synchronous code: racy since Volta's independent thread scheduling (order the warp with __syncwarp())",
        );
    }
    // A call may hold a `__syncthreads()`, which orders nothing between blocks.
    let may_sync = match (may_sync, call_note) {
        (Some(n), _) => Some(n.clone()),
        (None, Some(n)) if !cross => Some(n.clone()),
        _ => None,
    };
    let (mut confidence, mut confidence_reason) = confidence(&reasons, &may_sync);
    // The solver returns a witness that breaks an assumption only when none keeps them all.
    let broken: Vec<String> = assumed
        .iter()
        .filter(|(t, _)| witness::eval_bool(t, model) == Some(false))
        .map(|(_, b)| b.describe(model))
        .fold(Vec::new(), |mut out, d| {
            // Two assumptions may say the same (`padw >= 0` as a size and as a digit).
            if !out.contains(&d) {
                out.push(d);
            }
            out
        });
    let condition = (!broken.is_empty()).then(|| format!("only if {}", broken.join(" and ")));
    if let Some(c) = &condition {
        confidence_reason = match confidence {
            Confidence::Definite => format!("the race needs values a caller would not pass: {c}"),
            _ => format!("the race needs values a caller would not pass: {c}; {confidence_reason}"),
        };
        confidence = Confidence::Conditional;
        message.push_str(&format!(" ({c})"));
    }
    let precondition = model
        .get(cudarace_solver::PRECONDITION_KEY)
        .and_then(|i| preconditions.get(usize::try_from(*i).ok()?));
    // A kernel launched elsewhere (another file, Python) is launched in the shape its race-free
    // precondition names when that ties a parameter to the launch: the host sizes both from
    // the same values.
    let mut condition = condition;
    // Only for a shape parameter: `n == blockDim.x` for a mere bound `i < n` holds by
    // shrinking the data to one block, not by launching the kernel as it is written for.
    let on_shape = precondition.is_some_and(|p| shape_params.contains(&p.subject));
    if let (true, Confidence::Definite, Some(c)) = (
        on_shape,
        confidence,
        precondition.and_then(|p| p.unless_launch.as_ref()),
    ) {
        let c = format!("only if {c}");
        confidence = Confidence::Conditional;
        confidence_reason = format!(
            "the race needs a launch that does not fit the kernel's parameters, and the file never launches the kernel: {c}"
        );
        message.push_str(&format!(" ({c})"));
        condition = Some(c);
    }
    let precondition = precondition.map(|p| p.text.clone());
    if let Some(p) = &precondition {
        message.push_str(&format!("; race-free if {p}"));
    }
    Some(Finding {
        kind: FindingKind::DataRace,
        array: Some(array.clone()),
        confidence,
        confidence_reason,
        kernel: kernel.to_string(),
        span: a.span,
        message,
        related: vec![Related {
            span: b.span,
            message: format!("{tb} {} {cell} here", verb(b.mode)),
        }],
        witness: w,
        same_value_write: same_value.is_some(),
        barrier: None,
        condition,
        precondition,
    })
}

/// Both threads of a witness are in one warp (same block, same linear thread id / 32).
fn same_warp(w: &Witness) -> bool {
    let linear = |t: &ThreadWitness| {
        let [x, y, z] = t.thread_idx;
        x + y * w.block_dim[0] + z * w.block_dim[0] * w.block_dim[1]
    };
    w.thread_a.block_idx == w.thread_b.block_idx
        && linear(&w.thread_a) / 32 == linear(&w.thread_b) / 32
}

fn divergence_finding(kernel: &str, item: &Item, model: &BTreeMap<String, i64>) -> Option<Finding> {
    let Item::Divergence {
        span,
        kind,
        barrier,
        cause,
        reasons,
        question,
        unknowns,
        assumed,
    } = item
    else {
        return None;
    };
    let mut w = witness::extract(model, 0);
    w.cell.clear();
    // A grid sync is also asked about threads of different blocks: name the blocks then.
    let cross_block = w.thread_a.block_idx != w.thread_b.block_idx;
    let ta = thread_text(&w.thread_a, cross_block);
    let tb = thread_text(&w.thread_b, cross_block);
    let scope = match kind {
        SyncKind::Block => BarrierScope::Block,
        SyncKind::Warp => BarrierScope::Warp,
        SyncKind::Grid => BarrierScope::Grid,
    };
    let group = if scope == BarrierScope::Warp {
        "warp"
    } else {
        "block"
    };
    let mut message = if cross_block {
        format!("barrier divergence: {ta} reaches this {barrier} but {tb} does not")
    } else {
        format!(
            "barrier divergence: {ta} reaches this {barrier} but {tb} of the same {group} does not"
        )
    };
    let related = match cause {
        Some((s, m)) => Related {
            span: *s,
            message: m.clone(),
        },
        None => Related {
            span: *span,
            message: if cross_block {
                "the path to this barrier depends on the block".into()
            } else {
                "the path to this barrier depends on the thread".into()
            },
        },
    };
    let reasons: &[String] = if witness::holds_for_any(question, model, unknowns) {
        &[]
    } else {
        reasons
    };
    let (mut confidence, mut confidence_reason) = confidence(reasons, &None);
    // The solver returns a witness that breaks an assumption only when none keeps them all.
    let broken: Vec<String> = assumed
        .iter()
        .filter(|(t, _)| witness::eval_bool(t, model) == Some(false))
        .map(|(_, b)| b.describe(model))
        .collect();
    let condition = (!broken.is_empty()).then(|| format!("only if {}", broken.join(" and ")));
    if let Some(c) = &condition {
        confidence_reason = match confidence {
            Confidence::Definite => {
                format!("the divergence needs a launch the kernel is not written for: {c}")
            }
            _ => format!(
                "the divergence needs a launch the kernel is not written for: {c}; {confidence_reason}"
            ),
        };
        confidence = Confidence::Conditional;
        message.push_str(&format!(" ({c})"));
    }
    Some(Finding {
        kind: FindingKind::BarrierDivergence,
        array: None,
        confidence,
        confidence_reason,
        kernel: kernel.to_string(),
        span: *span,
        message,
        related: vec![related],
        witness: w,
        same_value_write: false,
        barrier: Some(scope),
        condition,
        precondition: None,
    })
}

/// [`describe_item`] for `n` items of the same kind and array ("3 pairs of accesses to `a`").
fn describe_items(item: &Item, n: usize) -> String {
    match (item, n) {
        (Item::Race { array, .. }, 1) => format!("a pair of accesses to `{array}`"),
        (Item::Race { array, .. }, n) => format!("{n} pairs of accesses to `{array}`"),
        (Item::Divergence { barrier, .. }, 1) => format!("the divergence of a {barrier}"),
        (Item::Divergence { barrier, .. }, n) => {
            format!("the divergence of {n} calls to {barrier}")
        }
    }
}

/// The undecided items of a kernel, one line per kind of item, array and reason, in the order
/// of their first item: a kernel of 600 pairs that ran out of time says so once, with the count,
/// not 600 times (the reason is shown in hovers and diagnostics).
fn undecided_notes(undecided: &[(&Item, Option<&str>)]) -> Vec<String> {
    let mut groups: Vec<(&Item, Option<&str>, usize)> = Vec::new();
    for &(item, reason) in undecided {
        let same = |(other, r, _): &&mut (&Item, Option<&str>, usize)| {
            *r == reason
                && match (item, other) {
                    (Item::Race { array: a, .. }, Item::Race { array: b, .. }) => a == b,
                    (Item::Divergence { barrier: a, .. }, Item::Divergence { barrier: b, .. }) => {
                        a == b
                    }
                    _ => false,
                }
        };
        match groups.iter_mut().find(same) {
            Some(g) => g.2 += 1,
            None => groups.push((item, reason, 1)),
        }
    }
    groups
        .into_iter()
        .map(|(item, reason, n)| match reason {
            None => format!("no answer for {}", describe_items(item, n)),
            Some(r) => format!(
                "the solver could not decide {} ({r})",
                describe_items(item, n)
            ),
        })
        .collect()
}

/// Turn the answers (one per query, in order) into the kernel's report.
pub fn finish_kernel(plan: &KernelPlan, answers: Vec<Answer>, time_ms: f64) -> KernelReport {
    let meta = &plan.meta;
    let mut report = KernelReport {
        name: plan.kernel.clone(),
        span: meta.span,
        name_span: meta.name_span,
        verdict: Verdict::RaceFree,
        reason: None,
        findings: Vec::new(),
        assumed_launch: meta.assumed_launch.clone(),
        time_ms,
        queries: plan.queries.len(),
        unmodelled: meta.unmodelled.clone(),
    };
    if let Some(why) = &meta.unsupported {
        report.verdict = Verdict::Unsupported;
        report.reason = Some(why.clone());
        return report;
    }
    // Items without a verdict and the solver's reason (`None`: no answer at all).
    let mut undecided: Vec<(&Item, Option<&str>)> = Vec::new();
    // Races found, and among them those an unmodelled call between the accesses could prevent.
    let (mut races_found, mut preventable) = (0usize, 0usize);
    // Pairs left out after enough races on their array (see `race_cap`), per array.
    let capped = plan.capped(&answers);
    let mut left_out: Vec<(&str, usize)> = Vec::new();
    for (i, item) in meta.items.iter().enumerate() {
        if capped.get(i).copied().unwrap_or(false) {
            if let Item::Race { array, .. } = item {
                match left_out.iter_mut().find(|(a, _)| a == array) {
                    Some((_, n)) => *n += 1,
                    None => left_out.push((array, 1)),
                }
            }
            continue;
        }
        match answers.get(i) {
            Some(Answer::Sat(model)) => {
                if let Item::Race { may_sync, .. } = item {
                    races_found += 1;
                    preventable += usize::from(may_sync.is_some() && !cross_block(model));
                }
                let f = match item {
                    Item::Race { .. } => {
                        race_finding(&plan.kernel, item, model, &meta.may_sync_note)
                    }
                    Item::Divergence { .. } => divergence_finding(&plan.kernel, item, model),
                };
                report.findings.extend(f);
            }
            Some(Answer::Unsat) => {}
            Some(Answer::Unknown(r)) => undecided.push((item, Some(r.as_str()))),
            None => undecided.push((item, None)),
        }
    }
    let unknowns = undecided_notes(&undecided);
    let races = report
        .findings
        .iter()
        .any(|f| f.kind == FindingKind::DataRace);
    let divergent = report
        .findings
        .iter()
        .any(|f| f.kind == FindingKind::BarrierDivergence);
    let mut notes: Vec<String> = meta.launch_warning.iter().cloned().collect();
    notes.extend(meta.unknown_notes.iter().cloned());
    notes.extend(meta.library_notes.iter().cloned());
    notes.extend(meta.launch_notes.iter().cloned());
    if let Some(n) = &meta.may_sync_note {
        notes.push(n.clone());
    }
    notes.extend(unknowns.iter().cloned());
    let not_checked: Vec<String> = left_out
        .iter()
        .map(|(array, n)| {
            format!(
                "{} races on `{array}` were found first: its other {n} pair{} of accesses {} not checked",
                race_cap::MAX_RACES_PER_ARRAY,
                if *n == 1 { "" } else { "s" },
                if *n == 1 { "was" } else { "were" },
            )
        })
        .collect();
    notes.extend(not_checked.iter().cloned());
    let only_preventable = races_found > 0 && preventable == races_found;
    if races && only_preventable {
        notes.push(
            "every race found needs the unmodelled calls between its accesses to contain no barrier"
                .into(),
        );
    }
    report.verdict = if races && !only_preventable {
        Verdict::Racy
    } else if divergent {
        Verdict::Divergent
    } else if !unknowns.is_empty()
        || !not_checked.is_empty()
        || !meta.unknown_notes.is_empty()
        || meta.may_sync_note.is_some()
        || only_preventable
    {
        Verdict::Unknown
    } else {
        Verdict::RaceFree
    };
    if !notes.is_empty() {
        report.reason = Some(notes.join("; "));
    }
    report
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
