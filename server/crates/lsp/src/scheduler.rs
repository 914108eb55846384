//! Background checking: one job per document version, on a blocking thread, never on the LSP
//! main loop. A job lowers the text, takes unchanged kernels from the report cache, plans the
//! others, answers their queries from the answer cache or the solver pool, and reports each
//! kernel as soon as it is finished. A newer version cancels the older job's token: the job stops
//! waiting and publishes nothing, and its queries are cancelled (dropped from the pool's queue or
//! interrupted) unless the newer version's check still needs them (see [`crate::inflight`]).

use crate::cache::{kernel_fingerprint, AnswerCache, Fingerprint, ReportCache};
use crate::hover::kernel_barriers;
use crate::inflight::{Inflight, Slot};
use crate::pipeline::race_cap::{RaceGate, Step, NOT_ASKED};
use crate::pipeline::tree_sitter::Tree;
use crate::pipeline::{
    finish_kernel, kernel_check_options, lower, plan_kernel_until, Answer, CancelToken, KernelPlan,
    Limits, Options, Query, SolverPool,
};
use cudarace_ir::{Barrier, FileIr, Kernel, KernelReport, SourceFile, Verdict};
use std::collections::HashMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// State shared by all jobs: the solver pool and the caches.
pub struct Engine {
    pool: Mutex<Arc<SolverPool>>,
    workers: Mutex<usize>,
    pub answers: AnswerCache,
    pub reports: ReportCache,
    pub inflight: Inflight,
}

impl Engine {
    pub fn new(workers: usize) -> Self {
        Engine {
            pool: Mutex::new(Arc::new(SolverPool::new(workers))),
            workers: Mutex::new(workers),
            answers: AnswerCache::new(50_000),
            reports: ReportCache::new(5_000),
            inflight: Inflight::new(),
        }
    }

    pub fn pool(&self) -> Arc<SolverPool> {
        self.pool.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Replaces the pool when the worker count changed; running jobs finish on the old one.
    pub fn set_workers(&self, workers: usize) {
        let mut current = self.workers.lock().unwrap_or_else(|p| p.into_inner());
        if *current != workers {
            *current = workers;
            *self.pool.lock().unwrap_or_else(|p| p.into_inner()) =
                Arc::new(SolverPool::new(workers));
        }
    }
}

/// What a job checks.
#[derive(Clone)]
pub struct CheckInput {
    pub path: Option<PathBuf>,
    pub text: Arc<str>,
    pub tree: Tree,
    pub options: Options,
}

/// A kernel of the checked version, in file order, with its stable key.
#[derive(Debug, Clone)]
pub struct KernelEntry {
    /// The kernel's name, with `#n` appended for the n-th (n ≥ 2) kernel of the same name.
    pub key: String,
    /// Its report, when the report cache already had it.
    pub cached: Option<KernelReport>,
    /// Its barriers in this version (for hover on barriers without a finding).
    pub barriers: Vec<Barrier>,
}

pub enum CheckEvent {
    /// The version was lowered: which kernels it has, and the files its spans refer to.
    Lowered {
        kernels: Vec<KernelEntry>,
        files: Arc<Vec<SourceFile>>,
    },
    /// A kernel that was not cached is finished.
    Kernel { key: String, report: KernelReport },
}

#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CheckTotals {
    pub kernels_analysed: usize,
    pub kernels_from_cache: usize,
    pub queries_solved: usize,
    pub queries_from_cache: usize,
    pub time_ms: f64,
}

fn kernel_keys(file: &FileIr) -> Vec<String> {
    let mut seen: HashMap<&str, usize> = HashMap::new();
    file.kernels
        .iter()
        .map(|k| {
            let n = seen.entry(k.name.as_str()).or_insert(0);
            *n += 1;
            if *n == 1 {
                k.name.clone()
            } else {
                format!("{}#{}", k.name, n)
            }
        })
        .collect()
}

/// A report for a kernel the pipeline failed on (a bug in the core, not the user's fault):
/// unknown, never race-free.
fn internal_error_report(kernel: &Kernel, what: &str) -> KernelReport {
    KernelReport {
        name: kernel.name.clone(),
        span: kernel.span,
        name_span: kernel.name_span,
        verdict: Verdict::Unknown,
        reason: Some(format!(
            "internal error in cudarace while {what}; please report it"
        )),
        findings: vec![],
        assumed_launch: String::new(),
        time_ms: 0.0,
        queries: 0,
        unmodelled: vec![],
    }
}

#[derive(Clone)]
enum Pending {
    Ready(Answer),
    /// Index into the job's held slots.
    Solving(usize),
}

/// How a job asks for answers: the slots it holds in the pool, which query of the job each
/// one answers, and its counts.
struct Asker<'e, 'p> {
    engine: &'e Engine,
    pool: Arc<SolverPool>,
    limits: Limits,
    held: Vec<Arc<Slot>>,
    /// Borrowed from the job's plans: no query is copied to find it again.
    in_job: HashMap<&'p Query, usize>,
    totals: CheckTotals,
}

impl<'p> Asker<'_, 'p> {
    /// Asks for one query's answer: from the answer cache, from this job (the same query in
    /// another kernel), or from the pool (joining an earlier check that is solving it).
    fn submit(&mut self, q: &'p Query) -> Pending {
        if let Some(answer) = self.engine.answers.get(q, self.limits) {
            self.totals.queries_from_cache += 1;
            return Pending::Ready(answer);
        }
        if let Some(&i) = self.in_job.get(q) {
            self.totals.queries_from_cache += 1;
            return Pending::Solving(i);
        }
        // Joining a query that an earlier check is solving counts as answered from the cache:
        // this check does not ask the solver.
        let (slot, submitted) = self.engine.inflight.acquire(&self.pool, q, self.limits);
        if submitted {
            self.totals.queries_solved += 1;
        } else {
            self.totals.queries_from_cache += 1;
        }
        self.in_job.insert(q, self.held.len());
        self.held.push(slot);
        Pending::Solving(self.held.len() - 1)
    }
}

/// A planned kernel waiting for its answers.
struct Waiting<'a> {
    kernel: &'a Kernel,
    key: &'a String,
    fingerprint: Fingerprint,
    plan: &'a KernelPlan,
    plan_time: std::time::Duration,
    gate: RaceGate,
    /// Per query: how its answer comes (`None`: not handed out yet).
    pending: Vec<Option<Pending>>,
    answers: Vec<Option<Answer>>,
}

impl<'a> Waiting<'a> {
    /// Hands out every query the gate lets through now (`submit` asks the caches or the pool).
    fn hand_out(&mut self, submit: &mut dyn FnMut(&'a Query) -> Pending) {
        while let Some(step) = self.gate.next_step() {
            match step {
                Step::Ask(i) => {
                    let Some(q) = self.plan.queries.get(i) else {
                        continue;
                    };
                    let p = submit(q);
                    if let Pending::Ready(a) = &p {
                        self.gate.answered(i, a);
                        self.answers[i] = Some(a.clone());
                    }
                    self.pending[i] = Some(p);
                }
                Step::Skip(i) => {
                    let a = Answer::Unknown(NOT_ASKED.to_string());
                    self.pending[i] = Some(Pending::Ready(a.clone()));
                    self.answers[i] = Some(a);
                }
            }
        }
    }
}

/// Checks one version. `only` restricts the check to the kernel with that key (fix verification).
/// How long the check waits for one answer before it looks at every waiting kernel again.
const FINISH_POLL: std::time::Duration = std::time::Duration::from_millis(20);

/// Returns `None` when cancelled (nothing of a cancelled job is published or cached as final).
pub fn run_check(
    engine: &Engine,
    input: &CheckInput,
    only: Option<&str>,
    cancel: &CancelToken,
    emit: &mut dyn FnMut(CheckEvent),
) -> Option<CheckTotals> {
    let started = Instant::now();
    let opts = &input.options;
    let file = catch_unwind(AssertUnwindSafe(|| {
        lower(
            input.path.as_deref(),
            &input.text,
            &input.tree,
            &opts.frontend,
        )
    }));
    let mut file = match file {
        Ok(file) => file,
        Err(_) => {
            tracing::error!("the front end panicked on {:?}", input.path);
            emit(CheckEvent::Lowered {
                kernels: vec![],
                files: Arc::new(vec![]),
            });
            return Some(CheckTotals {
                time_ms: started.elapsed().as_secs_f64() * 1e3,
                ..Default::default()
            });
        }
    };
    if cancel.is_cancelled() {
        return None;
    }
    // The launch sites of the project's other files (see [`crate::project`]); they are part of
    // each kernel's fingerprint, so cached reports follow the index.
    if let Some(index) = &opts.launch_index {
        index.add_sites_from_other_files(&mut file);
    }
    let keys = kernel_keys(&file);
    let mut totals = CheckTotals::default();
    let mut entries = Vec::new();
    let mut todo = Vec::new();
    for (kernel, key) in file.kernels.iter().zip(&keys) {
        if only.is_some_and(|o| o != key) {
            continue;
        }
        // Per-kernel launch sizes from cudarace.toml are part of what the kernel is checked with.
        let fingerprint = kernel_fingerprint(&file, kernel, &kernel_check_options(opts, kernel));
        let cached = engine.reports.get(fingerprint, kernel.span.start);
        if let Some(report) = &cached {
            totals.kernels_from_cache += 1;
            totals.queries_from_cache += report.queries;
        } else {
            todo.push((kernel, key.clone(), fingerprint));
        }
        entries.push(KernelEntry {
            key: key.clone(),
            cached,
            barriers: kernel_barriers(kernel),
        });
    }
    totals.kernels_analysed = entries.len();
    emit(CheckEvent::Lowered {
        kernels: entries,
        files: Arc::new(file.files.clone()),
    });

    // Plan every changed kernel and submit all their unanswered queries at once (as far as
    // each kernel's gate lets them through), so that the pool works on all of them in
    // parallel; then finish the kernels as their answers arrive.
    let mut plans = Vec::new();
    for (kernel, key, fingerprint) in todo {
        let plan_started = Instant::now();
        let check = kernel_check_options(opts, kernel);
        // A newer version stops the planning too; so does the kernel's time budget (a huge
        // kernel is `unknown` by timeout, and the file's other kernels go on).
        let stop = || {
            (cancel.is_cancelled() || plan_started.elapsed() >= opts.budget.kernel_time)
                .then_some("kernel's")
        };
        match catch_unwind(AssertUnwindSafe(|| {
            plan_kernel_until(&file, kernel, &check, &stop)
        })) {
            Ok(plan) => plans.push((kernel, key, fingerprint, plan, plan_started.elapsed())),
            Err(_) => emit(CheckEvent::Kernel {
                key,
                report: internal_error_report(kernel, "planning the kernel"),
            }),
        }
        if cancel.is_cancelled() {
            return None;
        }
    }
    // Each kernel's queries go out through its gate (see `race_cap`): an array with enough
    // races found is not asked further.
    let mut waiting: Vec<Waiting> = plans
        .iter()
        .map(|(kernel, key, fingerprint, plan, plan_time)| Waiting {
            kernel,
            key,
            fingerprint: *fingerprint,
            plan,
            plan_time: *plan_time,
            gate: RaceGate::new(plan, &plan.solve_order(), &[]),
            pending: vec![None; plan.queries.len()],
            answers: vec![None; plan.queries.len()],
        })
        .collect();
    let mut asker = Asker {
        engine,
        pool: engine.pool(),
        limits: opts.check.limits,
        held: Vec::new(),
        in_job: HashMap::new(),
        totals,
    };
    for w in waiting.iter_mut() {
        w.hand_out(&mut |q| asker.submit(q));
    }

    // Kernels are finished as their answers arrive, not in file order: a kernel whose queries
    // are slow (a solver timeout) does not hold back the diagnostics of the kernels after it.
    let waited = Instant::now();
    while !waiting.is_empty() {
        let mut finished = Vec::new();
        for (n, w) in waiting.iter_mut().enumerate() {
            let mut arrived = false;
            for i in 0..w.pending.len() {
                if let (Some(Pending::Solving(h)), None) = (&w.pending[i], &w.answers[i]) {
                    if let Some(a) = engine.inflight.try_answer(&asker.held[*h], &engine.answers) {
                        w.gate.answered(i, &a);
                        w.answers[i] = Some(a);
                        arrived = true;
                    }
                }
            }
            if arrived {
                w.hand_out(&mut |q| asker.submit(q));
            }
            if w.answers.iter().all(Option::is_some) {
                finished.push(n);
            }
        }
        if finished.is_empty() {
            // Nothing new: wait for the first missing answer of the first waiting kernel (a
            // short wait; then every kernel is looked at again).
            let first = waiting.iter().find_map(|w| {
                w.pending
                    .iter()
                    .zip(&w.answers)
                    .find_map(|(p, a)| match (p, a) {
                        (Some(Pending::Solving(h)), None) => Some(*h),
                        _ => None,
                    })
            });
            if let Some(h) = first {
                if engine
                    .inflight
                    .wait_for(&asker.held[h], cancel, &engine.answers, FINISH_POLL)
                    .is_err()
                {
                    // Superseded: the next check may still need these queries.
                    engine.inflight.release_later(asker.held);
                    return None;
                }
            }
            continue;
        }
        let mut done: Vec<Waiting> = finished
            .into_iter()
            .rev()
            .map(|w| waiting.remove(w))
            .collect();
        done.reverse();
        for Waiting {
            kernel,
            key,
            fingerprint,
            plan,
            plan_time,
            answers,
            ..
        } in done
        {
            let answers: Vec<Answer> = answers.into_iter().flatten().collect();
            let complete = answers.iter().all(|a| match a {
                Answer::Unknown(reason) => {
                    let reason = reason.to_ascii_lowercase();
                    !(reason.contains("cancel") || reason.contains("interrupt"))
                }
                _ => true,
            });
            let time_ms = (plan_time + waited.elapsed()).as_secs_f64() * 1e3;
            let report =
                match catch_unwind(AssertUnwindSafe(|| finish_kernel(plan, answers, time_ms))) {
                    Ok(report) => report,
                    Err(_) => internal_error_report(kernel, "reading the solver's answers"),
                };
            if complete && !cancel.is_cancelled() {
                engine.reports.insert(fingerprint, report.clone());
            }
            emit(CheckEvent::Kernel {
                key: key.clone(),
                report,
            });
        }
    }
    engine.inflight.release(asker.held);
    let mut totals = asker.totals;
    totals.time_ms = started.elapsed().as_secs_f64() * 1e3;
    Some(totals)
}
