//! File → [`FileReport`]: reading with limits, the front end, and per kernel planning, solving
//! (on a [`SolverPool`], under a time budget) and finishing. A panic while analysing one kernel
//! makes that kernel `unsupported` ("internal error: …"); the other kernels go on.

use crate::config::{kernel_check_options, Config};
use crate::crash;
use crate::report::FileReport;
use crate::suppress;
use cudarace_check::race_cap::{RaceGate, Step, NOT_ASKED};
use cudarace_check::{finish_kernel, plan_kernel_until, CheckOptions};
use cudarace_ir::{FileIr, Kernel, KernelReport, SourceFile, Span, Verdict};
use cudarace_solver::{Answer, CancelToken, Query, SolverPool};
use cudarace_syntax::{lower_source, FrontendOptions};
use std::any::Any;
use std::collections::{BTreeSet, VecDeque};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::mpsc::RecvTimeoutError;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Resource bounds of the driver itself (the solver's per-query bounds are in
/// [`CheckOptions::limits`]).
#[derive(Clone, Debug)]
pub struct Budget {
    /// Wall-clock time for all solver queries of one kernel; queries still unanswered then are
    /// cancelled and answered `unknown` (so the kernel's verdict becomes `unknown`, never clean).
    pub kernel_time: Duration,
    /// Wall-clock time for all kernels of one file: a kernel still being checked then is
    /// `unknown` ("the file's time budget ran out"), and every kernel after it gets 100 ms
    /// (1.5 s past the budget in all), so that no file holds its user hostage. Counted from the
    /// start of the file's analysis (reading it included); planning a kernel counts too.
    pub file_time: Duration,
    /// What each kernel checked after the file's budget is spent still gets.
    pub late_kernel_slice: Duration,
    /// Files larger than this are not read.
    pub max_file_bytes: u64,
}

pub const DEFAULT_MAX_FILE_BYTES: u64 = 4 * 1024 * 1024;
pub const DEFAULT_KERNEL_TIME: Duration = Duration::from_secs(60);
/// Keeps a file under ~10 s on two cores (the solver's per-query timeout may overrun it by one
/// query's budget at most).
pub const DEFAULT_FILE_TIME: Duration = Duration::from_secs(8);
/// What a kernel checked after the file's budget is spent still gets, and how far past the
/// budget those slices may go in all (on the real-world corpus, 8 s + 100 ms slices left 139
/// kernels unknown where 8 s alone left 273, and no file passed 9.3 s). The cap is 1.5 s: with
/// 2 s, files of 19 and 27 kernels took 10.0–10.1 s with two checks side by side.
pub const LATE_KERNEL_SLICE: Duration = Duration::from_millis(100);
const LATE_KERNELS_CAP: Duration = Duration::from_millis(1500);

impl Default for Budget {
    fn default() -> Self {
        Budget {
            kernel_time: DEFAULT_KERNEL_TIME,
            file_time: DEFAULT_FILE_TIME,
            late_kernel_slice: LATE_KERNEL_SLICE,
            max_file_bytes: DEFAULT_MAX_FILE_BYTES,
        }
    }
}

#[derive(Clone, Debug, Default)]
pub struct Options {
    pub frontend: FrontendOptions,
    pub check: CheckOptions,
    /// Analyse only the kernel(s) with this name.
    pub kernel: Option<String>,
    pub budget: Budget,
    /// The project configuration (per-kernel launch sizes, severities, suppression settings);
    /// its front-end and solver options are applied to the fields above by [`Config::apply`].
    pub config: Arc<Config>,
    /// Launch sites of the project's other files (from a compilation database): added to the
    /// sites each checked file has of its own kernels.
    pub launch_index: Option<Arc<crate::launch_index::LaunchIndex>>,
}

/// Analyses `text` (the content of `path`, if it has one; `path` is used for `#include` lookup
/// and in reports).
pub fn analyze_source(
    path: Option<&Path>,
    text: &str,
    opts: &Options,
    pool: &SolverPool,
) -> FileReport {
    let _checking = crash::checking_file(path);
    // The file's budget counts from here: reading host code (launch sites) is part of it.
    let file_deadline = Instant::now() + opts.budget.file_time;
    let mut ir = match guarded(|| lower_source(path, text, &opts.frontend)) {
        Ok(ir) => ir,
        Err(message) => {
            return FileReport {
                path: path.map(Path::to_path_buf),
                files: vec![SourceFile {
                    path: path.map(Path::to_path_buf),
                    text: Arc::from(text),
                }],
                error: Some(format!("internal error in the front end: {message}")),
                config: opts.config.clone(),
                ..FileReport::default()
            };
        }
    };
    if let Some(index) = &opts.launch_index {
        index.add_sites_from_other_files(&mut ir);
    }
    let kernels = analyze_ir_until(&ir, opts, pool, file_deadline);
    let assessment = suppress::assess(&ir.files, &kernels, &opts.config, opts.kernel.is_none());
    FileReport {
        path: path.map(Path::to_path_buf),
        files: ir.files,
        kernels,
        syntax_errors: ir.syntax_errors,
        error: None,
        suppressed: assessment.suppressed,
        notices: assessment.notices,
        config: opts.config.clone(),
    }
}

/// Checks the kernels of a lowered file (those selected by [`Options::kernel`]), in file order.
pub fn analyze_ir(ir: &FileIr, opts: &Options, pool: &SolverPool) -> Vec<KernelReport> {
    analyze_ir_until(ir, opts, pool, Instant::now() + opts.budget.file_time)
}

/// [`analyze_ir`] with the file's deadline given (see [`Budget::file_time`]).
///
/// Two passes, so that a few slow kernels do not leave the fast ones after them to the file's
/// budget: first every kernel with each query limited to [`FIRST_PASS_QUERY_TIME`]; then the
/// queries of the kernels that this limit stopped, again with the full limit, as long as the
/// budget lasts: kernel by kernel, those with the fewest such queries first (the reports stay
/// in file order). An answer the first limit did not shape is final (the checks
/// are the same, only the clock differs), so a kernel decided in the first pass has the
/// verdict one full pass would give it.
fn analyze_ir_until(
    ir: &FileIr,
    opts: &Options,
    pool: &SolverPool,
    file_deadline: Instant,
) -> Vec<KernelReport> {
    let kernels: Vec<&Kernel> = ir
        .kernels
        .iter()
        .filter(|k| {
            opts.kernel
                .as_ref()
                .is_none_or(|name| k.name == *name || k.base_name() == name)
        })
        .collect();
    let count = kernels.len();
    let stages: Vec<Stage> = kernels
        .into_iter()
        .enumerate()
        .map(|(i, k)| {
            let slice = first_pass_kernel_time(file_deadline, count - i);
            first_pass(ir, k, opts, pool, Some(file_deadline), slice)
        })
        .collect();
    let order = second_pass_order(&stages);
    let mut reports: Vec<Option<KernelReport>> = (0..stages.len()).map(|_| None).collect();
    let mut pending: Vec<Option<Pending>> = Vec::new();
    for (i, stage) in stages.into_iter().enumerate() {
        pending.push(match stage {
            Stage::Done(report) => {
                reports[i] = Some(report);
                None
            }
            Stage::Pending(p) => Some(p),
        });
    }
    for i in order {
        if let Some(p) = pending[i].take() {
            reports[i] = Some(second_pass(p, opts, pool, Some(file_deadline)));
        }
    }
    reports.into_iter().flatten().collect()
}

/// The order of the second pass over the pending kernels (indices into `stages`): those with
/// the fewest queries left first, then in file order. The budget then decides as many kernels
/// as it can, instead of going to a kernel of hundreds of queries early in the file while the
/// one-query kernels after it starve (LBPM's `Color.cu`: 613 queries in its twelfth kernel,
/// single queries in its last ones; 14 of its kernels unknown in file order, 8 in this one).
fn second_pass_order(stages: &[Stage]) -> Vec<usize> {
    let mut order: Vec<(usize, usize)> = stages
        .iter()
        .enumerate()
        .filter_map(|(i, s)| match s {
            Stage::Pending(p) => Some((p.left(), i)),
            Stage::Done(_) => None,
        })
        .collect();
    order.sort();
    order.into_iter().map(|(_, i)| i).collect()
}

/// Plans, solves and finishes one kernel; never panics.
pub fn analyze_kernel(
    ir: &FileIr,
    kernel: &Kernel,
    opts: &Options,
    pool: &SolverPool,
) -> KernelReport {
    analyze_kernel_until(ir, kernel, opts, pool, None)
}

/// [`analyze_kernel`] that also stops at the file's deadline (see [`Budget::file_time`]).
pub fn analyze_kernel_until(
    ir: &FileIr,
    kernel: &Kernel,
    opts: &Options,
    pool: &SolverPool,
    file_deadline: Option<Instant>,
) -> KernelReport {
    match first_pass(
        ir,
        kernel,
        opts,
        pool,
        file_deadline,
        FIRST_PASS_KERNEL_TIME,
    ) {
        Stage::Done(report) => report,
        Stage::Pending(p) => second_pass(p, opts, pool, file_deadline),
    }
}

/// The limit of one query in the first pass over a file's kernels (see [`analyze_ir_until`]):
/// on the real-world corpus most queries are answered in a few milliseconds, and those that
/// are not mostly run to the full limit.
pub const FIRST_PASS_QUERY_TIME: Duration = Duration::from_millis(250);

/// The time one kernel's queries get in the first pass (planning aside), at most.
pub const FIRST_PASS_KERNEL_TIME: Duration = Duration::from_millis(500);

/// The first pass's time for each of `left` kernels still to plan (this one included), from
/// what is left of the file's budget: at most [`FIRST_PASS_KERNEL_TIME`], and no more than half
/// of the budget shared among them, so that the second pass gets the other half. Twenty kernels
/// of slow queries (cuda-convnet2's `conv_util.cu`) spent the whole budget in the first pass at
/// 500 ms each, and the one-query kernels the full limit decides in 0.2 s never got it.
fn first_pass_kernel_time(file_deadline: Instant, left: usize) -> Duration {
    let remaining = file_deadline.saturating_duration_since(Instant::now());
    let share = remaining / (2 * left.max(1)) as u32;
    share.clamp(MIN_FIRST_PASS_KERNEL_TIME, FIRST_PASS_KERNEL_TIME)
}

/// The first pass's time for a kernel however many kernels share the budget: most kernels of
/// real code are decided in a few milliseconds.
const MIN_FIRST_PASS_KERNEL_TIME: Duration = Duration::from_millis(100);

/// With a second pass to come, the first gives a kernel's queries a slice of time from the
/// end of its planning (`planned`), within its `deadline`: what is not answered by then is
/// asked again in the second pass (as a query the short limit stopped). From the end of the
/// planning, because a kernel of hundreds of pairs can spend 0.5 s encoding them: it then got
/// no answer in the first pass and came last in the second (LBPM's lattice kernels under the
/// file's budget).
fn first_pass_slice(
    planned: Instant,
    slice: Duration,
    deadline: Instant,
    spent: Spent,
) -> (Instant, Spent) {
    match planned + slice {
        slice if slice < deadline => (slice, Spent::FirstPass),
        _ => (deadline, spent),
    }
}

/// A kernel after the first pass.
enum Stage<'k> {
    Done(KernelReport),
    /// Some answers were shaped by the first pass's short limit.
    Pending(Pending<'k>),
}

struct Pending<'k> {
    kernel: &'k Kernel,
    plan: cudarace_check::KernelPlan,
    answers: Vec<Answer>,
    /// The kernel's full limit of one query.
    limits: cudarace_solver::Limits,
    /// Time spent on the kernel in the first pass.
    spent: Duration,
}

impl Pending<'_> {
    /// How many queries the second pass asks again.
    fn left(&self) -> usize {
        self.answers.iter().filter(|a| needs_full_limit(a)).count()
    }
}

/// What a pair left undecided by the first pass's short limit answers when its array is racy
/// already (see [`second_pass`]).
pub const NOT_ASKED_AGAIN: &str =
    "timeout of the first pass; not asked again, both accesses are racy already";

/// A witness no clock shaped (see [`needs_full_limit`]).
fn is_complete_witness(answer: &Answer) -> bool {
    matches!(answer, Answer::Sat(_)) && !needs_full_limit(answer)
}

/// Whether `answer` was given under a first-pass limit that stopped it (a query timeout, or a
/// witness the clock may have shaped): it is asked again with the full limit.
fn needs_full_limit(answer: &Answer) -> bool {
    match answer {
        Answer::Unknown(reason) => {
            reason == "timeout" || reason == cudarace_solver::TIMEOUT_PLAUSIBLY_RACE_FREE
        }
        Answer::Sat(model) => model.contains_key(cudarace_solver::INCOMPLETE_KEY),
        Answer::Unsat => false,
    }
}

/// Plans the kernel and solves its queries, each under at most [`FIRST_PASS_QUERY_TIME`]; the
/// kernel is finished unless some answer needs the full limit.
fn first_pass<'k>(
    ir: &FileIr,
    kernel: &'k Kernel,
    opts: &Options,
    pool: &SolverPool,
    file_deadline: Option<Instant>,
    slice: Duration,
) -> Stage<'k> {
    let started = Instant::now();
    let elapsed_ms = || started.elapsed().as_secs_f64() * 1000.0;
    let _span = tracing::debug_span!("kernel", name = %kernel.name).entered();
    let _checking = crash::checking_kernel(&kernel.name);
    let check = kernel_check_options(opts, kernel);
    let (deadline, spent) = kernel_deadline(opts, started, file_deadline, true);
    // Planning (symbolic execution, encoding) counts against the same budget as solving.
    let plan = match guarded(|| {
        crash::debug_crash(&kernel.name);
        plan_kernel_until(ir, kernel, &check, &|| {
            (Instant::now() >= deadline).then_some(spent.whose())
        })
    }) {
        Ok(plan) => plan,
        Err(message) => return Stage::Done(internal_error(kernel, message, elapsed_ms(), 0)),
    };
    let queries = plan.queries.len();
    tracing::debug!(
        queries,
        plan_ms = started.elapsed().as_millis() as u64,
        "planned"
    );
    let full = check.limits;
    let first = cudarace_solver::Limits {
        timeout_ms: full
            .timeout_ms
            .min(FIRST_PASS_QUERY_TIME.as_millis() as u64),
        ..full
    };
    let two_passes = first.timeout_ms < full.timeout_ms;
    let (deadline, spent) = if two_passes {
        first_pass_slice(Instant::now(), slice, deadline, spent)
    } else {
        (deadline, spent)
    };
    // Every query in the order is answered below; one that were not would stay undecided,
    // never race-free.
    let mut answers: Vec<Answer> =
        vec![Answer::Unknown("the query was not asked".to_string()); queries];
    let order = plan.solve_order();
    solve_before(
        &plan.queries,
        &|i| plan.race_array(i),
        &order,
        &mut answers,
        first,
        opts,
        pool,
        deadline,
        spent,
    );
    if two_passes && answers.iter().any(needs_full_limit) {
        return Stage::Pending(Pending {
            kernel,
            plan,
            answers,
            limits: full,
            spent: started.elapsed(),
        });
    }
    Stage::Done(finish(kernel, &plan, answers, elapsed_ms()))
}

/// Solves again, with the full limit, the queries of a kernel that the first pass's limit
/// stopped, within what is left of the kernel's and the file's budgets; then finishes it.
fn second_pass(
    p: Pending<'_>,
    opts: &Options,
    pool: &SolverPool,
    file_deadline: Option<Instant>,
) -> KernelReport {
    let resumed = Instant::now();
    let _span = tracing::debug_span!("kernel", name = %p.kernel.name).entered();
    let _checking = crash::checking_kernel(&p.kernel.name);
    // No late slice here: the kernel had its share of the budget in the first pass. Its own
    // budget counts the time it has spent, not the other kernels' first passes in between.
    let own_start = resumed.checked_sub(p.spent).unwrap_or(resumed);
    let (deadline, spent) = kernel_deadline(opts, own_start, file_deadline, false);
    // A pair the short limit stopped is not asked again when the first pass found both of its
    // accesses racy with others of the same array: the kernel is racy whatever it answers,
    // each of its accesses has a finding already, and its full limit (seconds) would only
    // delay the kernel's report (half of the corpus's racy kernels over 2 s spent them so).
    let racy: BTreeSet<(&str, Span)> = (0..p.answers.len())
        .filter(|&i| is_complete_witness(&p.answers[i]))
        .filter_map(|i| p.plan.race_sides(i))
        .flat_map(|(array, a, b)| [(array, a), (array, b)])
        .collect();
    let flagged = |i: usize| {
        p.plan
            .race_sides(i)
            .is_some_and(|(array, a, b)| racy.contains(&(array, a)) && racy.contains(&(array, b)))
    };
    let mut answers = p.answers.clone();
    let mut again = Vec::new();
    for i in p.plan.solve_order() {
        if !p.answers.get(i).is_some_and(needs_full_limit) {
            continue;
        }
        if matches!(p.answers[i], Answer::Unknown(_)) && flagged(i) {
            answers[i] = Answer::Unknown(NOT_ASKED_AGAIN.to_string());
        } else {
            again.push(i);
        }
    }
    solve_before(
        &p.plan.queries,
        &|i| p.plan.race_array(i),
        &again,
        &mut answers,
        p.limits,
        opts,
        pool,
        deadline,
        spent,
    );
    // A witness of the first pass is a real one: it stays when the second pass does not
    // decide more.
    for i in again {
        if let (Some(Answer::Sat(_)), Some(new @ Answer::Unknown(_))) =
            (p.answers.get(i), answers.get_mut(i))
        {
            *new = p.answers[i].clone();
        }
    }
    let time_ms = (p.spent + resumed.elapsed()).as_secs_f64() * 1000.0;
    finish(p.kernel, &p.plan, answers, time_ms)
}

/// The deadline of a kernel started at `started`: its own budget, or the file's deadline when
/// that comes first. With `late_slice`, a kernel started past the file's deadline still gets a
/// short slice (most kernels are decided in milliseconds: one slow kernel should not leave
/// every later one unknown), up to a cap.
fn kernel_deadline(
    opts: &Options,
    started: Instant,
    file_deadline: Option<Instant>,
    late_slice: bool,
) -> (Instant, Spent) {
    let kernel_deadline = started + opts.budget.kernel_time;
    let file_deadline = file_deadline.map(|f| {
        if late_slice {
            (started + opts.budget.late_kernel_slice)
                .max(f)
                .min(f + LATE_KERNELS_CAP)
        } else {
            f
        }
    });
    match file_deadline {
        Some(f) if f < kernel_deadline => (f, Spent::File),
        _ => (kernel_deadline, Spent::Kernel),
    }
}

fn finish(
    kernel: &Kernel,
    plan: &cudarace_check::KernelPlan,
    answers: Vec<Answer>,
    time_ms: f64,
) -> KernelReport {
    let queries = plan.queries.len();
    match guarded(|| finish_kernel(plan, answers, time_ms)) {
        Ok(report) => {
            tracing::debug!(
                verdict = report.verdict.as_str(),
                time_ms = report.time_ms,
                "finished"
            );
            report
        }
        Err(message) => internal_error(kernel, message, time_ms, queries),
    }
}

/// Runs `f`, turning a panic into its message.
fn guarded<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    catch_unwind(AssertUnwindSafe(f)).map_err(|payload| panic_message(&*payload))
}

/// Submits the queries `order` names (indices) to the pool under `limits` and writes their
/// answers into `answers`, waiting no longer than `deadline`; the queries not answered by then
/// are cancelled and answered `unknown` (those already answered keep their answers). The other
/// entries of `answers` are left as they are. Pairs of an array (`race_array` names each
/// query's) with enough races found before them are not asked (see
/// `cudarace_check::race_cap`): they are answered "not asked".
#[allow(clippy::too_many_arguments)]
fn solve_before<'a>(
    queries: &[Query],
    race_array: &dyn Fn(usize) -> Option<&'a str>,
    order: &[usize],
    answers: &mut [Answer],
    limits: cudarace_solver::Limits,
    opts: &Options,
    pool: &SolverPool,
    deadline: Instant,
    spent: Spent,
) {
    let cancel = CancelToken::new();
    // Past the deadline already (the file's budget went to earlier kernels): nothing is asked.
    if Instant::now() >= deadline {
        for &i in order {
            if let Some(a) = answers.get_mut(i) {
                *a = out_of_budget(opts, spent);
            }
        }
        return;
    }
    let mut gate = RaceGate::by_array(queries.len(), race_array, order, answers);
    let mut in_flight: VecDeque<(usize, _)> = VecDeque::new();
    let mut handed_out = vec![false; answers.len()];
    loop {
        // Everything the gate lets through now goes to the pool (which works in order).
        while !cancel.is_cancelled() {
            match gate.next_step() {
                Some(Step::Ask(i)) => {
                    let Some(q) = queries.get(i) else {
                        continue;
                    };
                    if let Some(h) = handed_out.get_mut(i) {
                        *h = true;
                    }
                    in_flight.push_back((i, pool.submit(q.clone(), limits, cancel.clone())));
                }
                Some(Step::Skip(i)) => {
                    if let Some(h) = handed_out.get_mut(i) {
                        *h = true;
                    }
                    if let Some(a) = answers.get_mut(i) {
                        *a = Answer::Unknown(NOT_ASKED.to_string());
                    }
                }
                None => break,
            }
        }
        let Some((i, rx)) = in_flight.pop_front() else {
            break;
        };
        let answer = if cancel.is_cancelled() {
            match rx.try_recv() {
                Ok(Answer::Unknown(r)) if r == "cancelled" => out_of_budget(opts, spent),
                Ok(answer) => answer,
                Err(_) => out_of_budget(opts, spent),
            }
        } else {
            match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                Ok(answer) => answer,
                Err(RecvTimeoutError::Timeout) => {
                    tracing::warn!("the {} time budget ran out", spent.whose());
                    cancel.cancel();
                    out_of_budget(opts, spent)
                }
                Err(RecvTimeoutError::Disconnected) => {
                    Answer::Unknown("solver error: the solver thread gave no answer".to_string())
                }
            }
        };
        gate.answered(i, &answer);
        if let Some(a) = answers.get_mut(i) {
            *a = answer;
        }
    }
    // Stopped by the deadline: what the gate had not handed out yet was not asked in time.
    for &i in order {
        if !handed_out.get(i).copied().unwrap_or(true) {
            if let Some(a) = answers.get_mut(i) {
                *a = out_of_budget(opts, spent);
            }
        }
    }
}

/// Which budget a deadline is.
#[derive(Clone, Copy)]
enum Spent {
    Kernel,
    File,
    /// A kernel's slice of the first pass ([`FIRST_PASS_KERNEL_TIME`]): its unanswered queries
    /// are asked again in the second pass.
    FirstPass,
}

impl Spent {
    fn whose(self) -> &'static str {
        match self {
            Spent::Kernel => "kernel's",
            Spent::File | Spent::FirstPass => "file's",
        }
    }
}

fn out_of_budget(opts: &Options, spent: Spent) -> Answer {
    let budget = match spent {
        Spent::Kernel => opts.budget.kernel_time,
        Spent::File => opts.budget.file_time,
        // Not an answer: the query is asked again (see `needs_full_limit`).
        Spent::FirstPass => return Answer::Unknown("timeout".to_string()),
    };
    Answer::Unknown(format!(
        "timeout: the {} time budget ({} ms) ran out",
        spent.whose(),
        budget.as_millis()
    ))
}

fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic without a message".to_string()
    }
}

fn internal_error(kernel: &Kernel, message: String, time_ms: f64, queries: usize) -> KernelReport {
    tracing::error!(kernel = %kernel.name, "internal error: {message}");
    KernelReport {
        name: kernel.name.clone(),
        span: kernel.span,
        name_span: kernel.name_span,
        verdict: Verdict::Unsupported,
        reason: Some(format!("internal error: {message}")),
        findings: Vec::new(),
        assumed_launch: String::new(),
        time_ms,
        queries,
        unmodelled: vec![],
    }
}

/// Reads and analyses a file. Unreadable, too large and binary files give a report with `error`.
pub fn analyze_path(path: &Path, opts: &Options, pool: &SolverPool) -> FileReport {
    match read_source(path, opts.budget.max_file_bytes) {
        Ok(text) => analyze_source(Some(path), &text, opts, pool),
        Err(error) => FileReport {
            path: Some(path.to_path_buf()),
            error: Some(error),
            config: opts.config.clone(),
            ..FileReport::default()
        },
    }
}

/// Reads a source file as text. Invalid UTF-8 in a few places (e.g. a Latin-1 comment) is
/// replaced; a file with NUL bytes or mostly invalid UTF-8 is taken to be binary.
pub fn read_source(path: &Path, max_bytes: u64) -> Result<String, String> {
    use std::io::Read;
    let too_large = |len: u64| {
        format!(
            "file too large ({len} bytes, limit {})",
            human_size(max_bytes)
        )
    };
    let meta = std::fs::metadata(path).map_err(|e| format!("cannot read file: {e}"))?;
    if meta.is_dir() {
        return Err("is a directory".to_string());
    }
    // Devices and pipes (e.g. /dev/zero) have no meaningful size and may never end.
    if !meta.is_file() {
        return Err("not a regular file".to_string());
    }
    if meta.len() > max_bytes {
        return Err(too_large(meta.len()));
    }
    let file = std::fs::File::open(path).map_err(|e| format!("cannot read file: {e}"))?;
    let mut bytes = Vec::new();
    // Bounded even if the file grows between the two calls.
    file.take(max_bytes.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read file: {e}"))?;
    if bytes.len() as u64 > max_bytes {
        return Err(too_large(bytes.len() as u64));
    }
    decode_text(&bytes)
}

/// Bytes → text, or why they are not text.
pub fn decode_text(bytes: &[u8]) -> Result<String, String> {
    if bytes.contains(&0) {
        return Err("binary file (contains NUL bytes), not CUDA source".to_string());
    }
    match std::str::from_utf8(bytes) {
        Ok(s) => Ok(s.to_string()),
        Err(_) => {
            let text = String::from_utf8_lossy(bytes);
            let replaced = text
                .chars()
                .filter(|&c| c == char::REPLACEMENT_CHARACTER)
                .count();
            // A few stray bytes (Latin-1 comments) are fine; data where more than one character
            // in 20 is invalid is not source.
            if replaced > 4 && replaced * 20 > text.chars().count() {
                Err(format!(
                    "binary file ({replaced} invalid UTF-8 sequences), not CUDA source"
                ))
            } else {
                tracing::warn!(replaced, "invalid UTF-8 replaced");
                Ok(text.into_owned())
            }
        }
    }
}

fn human_size(bytes: u64) -> String {
    if bytes.is_multiple_of(1024 * 1024) {
        format!("{} MiB", bytes / (1024 * 1024))
    } else if bytes.is_multiple_of(1024) {
        format!("{} KiB", bytes / 1024)
    } else {
        format!("{bytes} bytes")
    }
}

/// Expands the command-line paths: a file is taken as is (whatever its extension), a folder
/// gives every `.cu` and `.cuh` file below it (hidden folders skipped, symbolic links to folders
/// not followed), sorted. Files are listed once even if named twice. A path that does not exist
/// or a folder that cannot be read is an error.
pub fn collect_paths(paths: &[PathBuf]) -> Result<Vec<PathBuf>, String> {
    let mut out: Vec<PathBuf> = Vec::new();
    for path in paths {
        let meta = std::fs::metadata(path)
            .map_err(|e| format!("{}: {}", path.display(), io_error_text(&e)))?;
        if meta.is_dir() {
            let mut found = Vec::new();
            walk(path, &mut found)?;
            found.sort();
            out.extend(found);
        } else {
            out.push(path.clone());
        }
    }
    let mut seen = std::collections::HashSet::new();
    out.retain(|p| seen.insert(p.clone()));
    Ok(out)
}

fn io_error_text(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => "no such file or directory".to_string(),
        _ => e.to_string(),
    }
}

fn walk(dir: &Path, found: &mut Vec<PathBuf>) -> Result<(), String> {
    let entries =
        std::fs::read_dir(dir).map_err(|e| format!("{}: {}", dir.display(), io_error_text(&e)))?;
    for entry in entries {
        let entry = entry.map_err(|e| format!("{}: {}", dir.display(), io_error_text(&e)))?;
        let path = entry.path();
        let file_type = entry
            .file_type()
            .map_err(|e| format!("{}: {}", path.display(), io_error_text(&e)))?;
        let hidden = entry.file_name().to_string_lossy().starts_with('.');
        if file_type.is_dir() {
            if !hidden {
                walk(&path, found)?;
            }
        } else if is_cuda_file(&path) && (file_type.is_file() || path.is_file()) {
            found.push(path);
        }
    }
    Ok(())
}

fn is_cuda_file(path: &Path) -> bool {
    matches!(
        path.extension().and_then(|e| e.to_str()),
        Some("cu" | "cuh")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use cudarace_solver::{Limits, Sort, Term};

    fn temp_dir(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("cudarace-driver-{}-{}", name, std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn kernel(name: &str) -> Kernel {
        Kernel {
            name: name.to_string(),
            span: Default::default(),
            name_span: Default::default(),
            params: vec![],
            arrays: vec![],
            locals: vec![],
            unknowns: vec![],
            body: vec![],
            launch_bounds: None,
            launch_bounds_param: None,
            annotated_launch: Default::default(),
            unsupported: None,
            volatile_arrays: vec![],
            library_notes: vec![],
        }
    }

    #[test]
    fn a_panic_becomes_an_unsupported_kernel() {
        let message = guarded(|| -> u32 { panic!("index out of bounds: {}", 7) }).unwrap_err();
        assert_eq!(message, "index out of bounds: 7");
        assert_eq!(
            guarded(|| -> u32 { std::panic::panic_any(5u8) }).unwrap_err(),
            "a panic without a message"
        );
        assert_eq!(guarded(|| 3).unwrap(), 3);
        let report = internal_error(&kernel("k"), message, 1.0, 2);
        assert_eq!(report.verdict, Verdict::Unsupported);
        assert_eq!(
            report.reason.as_deref(),
            Some("internal error: index out of bounds: 7")
        );
    }

    fn query(x: i64) -> Query {
        let mut q = Query::default();
        q.vars.insert("x".into(), Sort::Int);
        q.assertions.push(Term::eq(Term::var("x"), Term::Int(x)));
        q.report.push("x".into());
        q
    }

    #[test]
    fn answers_keep_their_order_within_the_budget() {
        let pool = SolverPool::new(2);
        let queries: Vec<Query> = (0..6).map(query).collect();
        let deadline = Instant::now() + Duration::from_secs(60);
        let order: Vec<usize> = (0..6).collect();
        let mut answers = vec![Answer::Unsat; 6];
        let limits = Limits::default();
        solve_before(
            &queries,
            &|_| None,
            &order,
            &mut answers,
            limits,
            &Options::default(),
            &pool,
            deadline,
            Spent::Kernel,
        );
        for (i, a) in answers.iter().enumerate() {
            assert_eq!(a, &Answer::Sat([("x".to_string(), i as i64)].into()));
        }
        // Solved in another order (divergence first), answered in the queries' own.
        let mut answers = vec![Answer::Unsat; 6];
        solve_before(
            &queries,
            &|_| None,
            &[5, 3, 0, 1, 2, 4],
            &mut answers,
            limits,
            &Options::default(),
            &pool,
            deadline,
            Spent::Kernel,
        );
        for (i, a) in answers.iter().enumerate() {
            assert_eq!(a, &Answer::Sat([("x".to_string(), i as i64)].into()));
        }
    }

    /// The second pass asks again what the first pass's short limit stopped, and keeps a
    /// first-pass witness when it cannot decide more (here: no time left at all).
    #[test]
    fn the_second_pass_keeps_first_pass_witnesses_and_asks_again_only_what_was_stopped() {
        let pool = SolverPool::new(1);
        let src =
            "__global__ void k(int *a) { a[0] = threadIdx.x; a[1] = 1; a[threadIdx.x + 2] = 3; }";
        let ir = lower_source(None, src, &FrontendOptions::default());
        let kernel = &ir.kernels[0];
        let opts = Options::default();
        let plan = plan_kernel_until(&ir, kernel, &opts.check, &|| None);
        let n = plan.queries.len();
        assert!(n >= 2, "{n} queries");
        let witness: Answer =
            Answer::Sat([(cudarace_solver::INCOMPLETE_KEY.to_string(), 1)].into());
        let mut first = vec![Answer::Unsat; n];
        first[0] = witness.clone();
        first[1] = Answer::Unknown("timeout".into());
        assert!(needs_full_limit(&first[0]) && needs_full_limit(&first[1]));
        assert!(!needs_full_limit(&Answer::Unsat));
        assert!(!needs_full_limit(&Answer::Unknown("resource limit".into())));
        let pending = Pending {
            kernel,
            plan,
            answers: first,
            limits: Limits::default(),
            spent: Duration::ZERO,
        };
        // The file's budget is spent: nothing is decided in the second pass.
        let report = second_pass(pending, &opts, &pool, Some(Instant::now()));
        assert_eq!(report.verdict, Verdict::Racy, "{report:?}");
        let reason = report.reason.unwrap_or_default();
        assert!(reason.contains("file's time budget"), "{reason}");
    }

    /// The second pass takes the kernels with the fewest queries left first (then file order),
    /// so that one slow kernel early in a file does not leave the small ones after it to the
    /// file's budget; finished kernels are not in it.
    #[test]
    fn the_second_pass_takes_the_kernels_with_fewest_queries_left_first() {
        let src = "__global__ void many(int *a) { a[0] = threadIdx.x; a[1] = 1; a[threadIdx.x + 2] = 3; }\n\
                   __global__ void done(int *a) { a[threadIdx.x] = 1; }\n\
                   __global__ void one(int *a) { a[0] = threadIdx.x; }\n\
                   __global__ void also_one(int *a) { a[1] = threadIdx.x; }";
        let ir = lower_source(None, src, &FrontendOptions::default());
        let opts = Options::default();
        let pending = |k: usize, left: usize| {
            let kernel = &ir.kernels[k];
            let plan = plan_kernel_until(&ir, kernel, &opts.check, &|| None);
            let n = plan.queries.len();
            assert!(n >= left, "{n} queries");
            let mut answers = vec![Answer::Unsat; n];
            for a in answers.iter_mut().take(left) {
                *a = Answer::Unknown("timeout".into());
            }
            Stage::Pending(Pending {
                kernel,
                plan,
                answers,
                limits: Limits::default(),
                spent: Duration::ZERO,
            })
        };
        let done = Stage::Done(internal_error(&ir.kernels[1], "finished".into(), 0.0, 0));
        let stages = vec![pending(0, 2), done, pending(2, 1), pending(3, 1)];
        assert_eq!(second_pass_order(&stages), vec![2, 3, 0]);
    }

    /// A kernel's own budget in the second pass counts the time it spent, not the first passes
    /// of the kernels checked in between: a kernel that waited longer than its budget is still
    /// asked again.
    #[test]
    fn the_second_pass_budget_does_not_count_the_wait_between_passes() {
        let pool = SolverPool::new(1);
        let src = "__global__ void k(int *a) { a[0] = threadIdx.x; a[1] = 1; }";
        let ir = lower_source(None, src, &FrontendOptions::default());
        let kernel = &ir.kernels[0];
        let mut opts = Options::default();
        opts.budget.kernel_time = Duration::from_millis(400);
        let plan = plan_kernel_until(&ir, kernel, &opts.check, &|| None);
        let n = plan.queries.len();
        let pending = Pending {
            kernel,
            plan,
            answers: vec![Answer::Unknown("timeout".into()); n],
            limits: Limits::default(),
            spent: Duration::from_millis(10),
        };
        // The other kernels' first passes take longer than this kernel's whole budget.
        std::thread::sleep(Duration::from_millis(450));
        let report = second_pass(pending, &opts, &pool, None);
        assert_eq!(report.verdict, Verdict::Racy, "{report:?}");
        assert!(
            !report.reason.as_deref().unwrap_or("").contains("budget"),
            "{:?}",
            report.reason
        );
    }

    /// The first pass's slice counts from the end of the kernel's planning, within its
    /// deadline.
    #[test]
    fn the_first_pass_slice_starts_after_planning() {
        let started = Instant::now();
        let planned = started + Duration::from_millis(900);
        let far = started + Duration::from_secs(60);
        let (until, spent) = first_pass_slice(planned, FIRST_PASS_KERNEL_TIME, far, Spent::Kernel);
        assert_eq!(until, planned + FIRST_PASS_KERNEL_TIME);
        assert!(matches!(spent, Spent::FirstPass));
        let near = planned + Duration::from_millis(100);
        let (until, spent) = first_pass_slice(planned, FIRST_PASS_KERNEL_TIME, near, Spent::File);
        assert_eq!(until, near);
        assert!(matches!(spent, Spent::File));
    }

    /// Many kernels share half of the file's budget in the first pass; a few get the full
    /// slice each, and none less than the minimum.
    #[test]
    fn the_first_pass_leaves_half_the_budget_to_the_second() {
        let deadline = Instant::now() + Duration::from_secs(8);
        let many = first_pass_kernel_time(deadline, 20);
        assert!(many <= Duration::from_millis(200), "{many:?}");
        assert!(many >= Duration::from_millis(150), "{many:?}");
        assert_eq!(first_pass_kernel_time(deadline, 2), FIRST_PASS_KERNEL_TIME);
        let late = Instant::now() + Duration::from_millis(10);
        assert_eq!(first_pass_kernel_time(late, 5), MIN_FIRST_PASS_KERNEL_TIME);
    }

    #[test]
    fn queries_past_the_budget_are_unknown() {
        let pool = SolverPool::new(1);
        let queries: Vec<Query> = (0..50).map(query).collect();
        let order: Vec<usize> = (0..50).collect();
        let mut answers = vec![Answer::Unsat; 50];
        solve_before(
            &queries,
            &|_| None,
            &order,
            &mut answers,
            Limits::default(),
            &Options::default(),
            &pool,
            Instant::now(),
            Spent::Kernel,
        );
        assert_eq!(answers.len(), 50);
        match answers.last() {
            Some(Answer::Unknown(reason)) => assert!(reason.contains("time budget"), "{reason}"),
            other => panic!("expected unknown, got {other:?}"),
        }
    }

    #[test]
    fn unreadable_and_binary_files_are_reported_not_analysed() {
        let pool = SolverPool::new(1);
        let dir = temp_dir("files");
        let bin = dir.join("blob.cu");
        std::fs::write(&bin, b"\x7fELF\0\0\x01").unwrap();
        let r = analyze_path(&bin, &Options::default(), &pool);
        assert!(
            r.error.as_deref().unwrap().contains("binary file"),
            "{:?}",
            r.error
        );
        assert!(r.kernels.is_empty());
        let r = analyze_path(&dir.join("missing.cu"), &Options::default(), &pool);
        assert!(
            r.error.as_deref().unwrap().starts_with("cannot read file"),
            "{:?}",
            r.error
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn binary_and_text_detection() {
        assert!(decode_text(b"int x;\0\0").unwrap_err().contains("NUL"));
        // One Latin-1 byte in a comment is tolerated.
        let mut latin = b"// caf\xe9\n__global__ void k() {}\n".to_vec();
        assert!(decode_text(&latin).unwrap().contains("__global__"));
        latin.extend(std::iter::repeat_n(0xffu8, 100));
        assert!(decode_text(&latin).unwrap_err().contains("binary"));
        assert_eq!(decode_text(b"").unwrap(), "");
    }

    #[test]
    fn file_limits() {
        let dir = temp_dir("limits");
        let big = dir.join("big.cu");
        std::fs::write(&big, vec![b' '; 2048]).unwrap();
        let err = read_source(&big, 1024).unwrap_err();
        assert_eq!(err, "file too large (2048 bytes, limit 1 KiB)");
        assert!(read_source(&big, 4096).is_ok());
        assert!(read_source(&dir.join("missing.cu"), 4096)
            .unwrap_err()
            .starts_with("cannot read"));
        assert_eq!(human_size(DEFAULT_MAX_FILE_BYTES), "4 MiB");
        assert_eq!(read_source(&dir, 4096).unwrap_err(), "is a directory");
        if Path::new("/dev/zero").exists() {
            assert_eq!(
                read_source(Path::new("/dev/zero"), 4096).unwrap_err(),
                "not a regular file"
            );
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn collecting_paths() {
        let dir = temp_dir("collect");
        std::fs::create_dir_all(dir.join("b/sub")).unwrap();
        std::fs::create_dir_all(dir.join(".hidden")).unwrap();
        for f in [
            "b/sub/z.cu",
            "b/a.cuh",
            "a.cu",
            "notes.txt",
            ".hidden/h.cu",
            "c.cpp",
        ] {
            std::fs::write(dir.join(f), "").unwrap();
        }
        let got = collect_paths(std::slice::from_ref(&dir)).unwrap();
        let rel: Vec<String> = got
            .iter()
            .map(|p| p.strip_prefix(&dir).unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(rel, ["a.cu", "b/a.cuh", "b/sub/z.cu"]);
        // An explicit file is taken whatever its extension, and only once.
        let txt = dir.join("notes.txt");
        let got = collect_paths(&[txt.clone(), txt.clone()]).unwrap();
        assert_eq!(got, vec![txt]);
        let err = collect_paths(&[dir.join("nope")]).unwrap_err();
        assert!(err.contains("no such file or directory"), "{err}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
