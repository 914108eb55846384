//! File → [`FileReport`]: reading with limits, the front end, and per kernel planning, solving
//! (on a [`SolverPool`], under a time budget) and finishing. A panic while analysing one kernel
//! makes that kernel `unsupported` ("internal error: …"); the other kernels go on.

use crate::config::{kernel_check_options, Config};
use crate::crash;
use crate::report::FileReport;
use crate::suppress;
use cudarace_check::{finish_kernel, plan_kernel_until, CheckOptions};
use cudarace_ir::{FileIr, Kernel, KernelReport, SourceFile, Verdict};
use cudarace_solver::{Answer, CancelToken, Query, SolverPool};
use cudarace_syntax::{lower_source, FrontendOptions};
use std::any::Any;
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
    /// (2 s past the budget in all), so that no file holds its user hostage. Counted from the
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
/// kernels unknown where 8 s alone left 273, and no file passed 9.3 s).
pub const LATE_KERNEL_SLICE: Duration = Duration::from_millis(100);
const LATE_KERNELS_CAP: Duration = Duration::from_secs(2);

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
fn analyze_ir_until(
    ir: &FileIr,
    opts: &Options,
    pool: &SolverPool,
    file_deadline: Instant,
) -> Vec<KernelReport> {
    ir.kernels
        .iter()
        .filter(|k| {
            opts.kernel
                .as_ref()
                .is_none_or(|name| k.name == *name || k.base_name() == name)
        })
        .map(|k| analyze_kernel_until(ir, k, opts, pool, Some(file_deadline)))
        .collect()
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
    let started = Instant::now();
    let elapsed_ms = || started.elapsed().as_secs_f64() * 1000.0;
    let _span = tracing::debug_span!("kernel", name = %kernel.name).entered();
    let _checking = crash::checking_kernel(&kernel.name);
    let check = kernel_check_options(opts, kernel);
    let kernel_deadline = started + opts.budget.kernel_time;
    // Past the file's deadline a kernel still gets a short slice (most kernels are decided in
    // milliseconds: one slow kernel should not leave every later one unknown), up to a cap.
    let file_deadline = file_deadline.map(|f| {
        (started + opts.budget.late_kernel_slice)
            .max(f)
            .min(f + LATE_KERNELS_CAP)
    });
    let (deadline, spent) = match file_deadline {
        Some(f) if f < kernel_deadline => (f, Spent::File),
        _ => (kernel_deadline, Spent::Kernel),
    };
    // Planning (symbolic execution, encoding) counts against the same budget as solving.
    let plan = match guarded(|| {
        crash::debug_crash(&kernel.name);
        plan_kernel_until(ir, kernel, &check, &|| {
            (Instant::now() >= deadline).then_some(spent.whose())
        })
    }) {
        Ok(plan) => plan,
        Err(message) => return internal_error(kernel, message, elapsed_ms(), 0),
    };
    let queries = plan.queries.len();
    tracing::debug!(
        queries,
        plan_ms = started.elapsed().as_millis() as u64,
        "planned"
    );
    let answers = solve_before(
        &plan.queries,
        &plan.solve_order(),
        opts,
        pool,
        deadline,
        spent,
    );
    match guarded(|| finish_kernel(&plan, answers, elapsed_ms())) {
        Ok(report) => {
            tracing::debug!(
                verdict = report.verdict.as_str(),
                time_ms = report.time_ms,
                "finished"
            );
            report
        }
        Err(message) => internal_error(kernel, message, elapsed_ms(), queries),
    }
}

/// Runs `f`, turning a panic into its message.
fn guarded<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    catch_unwind(AssertUnwindSafe(f)).map_err(|payload| panic_message(&*payload))
}

/// Submits every query to the pool (in `order`, a permutation of their indices) and collects
/// the answers, returned in the queries' own order, waiting no longer than `deadline`; the
/// queries not answered by then are cancelled and answered `unknown` (those already answered
/// keep their answers).
fn solve_before(
    queries: &[Query],
    order: &[usize],
    opts: &Options,
    pool: &SolverPool,
    deadline: Instant,
    spent: Spent,
) -> Vec<Answer> {
    let cancel = CancelToken::new();
    // Past the deadline already (the file's budget went to earlier kernels): nothing is asked.
    if Instant::now() >= deadline && !queries.is_empty() {
        return queries.iter().map(|_| out_of_budget(opts, spent)).collect();
    }
    let receivers: Vec<(usize, _)> = order
        .iter()
        .filter_map(|&i| {
            let q = queries.get(i)?;
            Some((i, pool.submit(q.clone(), opts.check.limits, cancel.clone())))
        })
        .collect();
    let mut answers: Vec<Option<Answer>> = vec![None; queries.len()];
    for (i, rx) in receivers {
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
        answers[i] = Some(answer);
    }
    answers
        .into_iter()
        .map(|a| a.unwrap_or_else(|| out_of_budget(opts, spent)))
        .collect()
}

/// Which budget a deadline is.
#[derive(Clone, Copy)]
enum Spent {
    Kernel,
    File,
}

impl Spent {
    fn whose(self) -> &'static str {
        match self {
            Spent::Kernel => "kernel's",
            Spent::File => "file's",
        }
    }
}

fn out_of_budget(opts: &Options, spent: Spent) -> Answer {
    let budget = match spent {
        Spent::Kernel => opts.budget.kernel_time,
        Spent::File => opts.budget.file_time,
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
    use cudarace_solver::{Sort, Term};

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
        let answers = solve_before(
            &queries,
            &order,
            &Options::default(),
            &pool,
            deadline,
            Spent::Kernel,
        );
        for (i, a) in answers.iter().enumerate() {
            assert_eq!(a, &Answer::Sat([("x".to_string(), i as i64)].into()));
        }
        // Solved in another order (divergence first), answered in the queries' own.
        let answers = solve_before(
            &queries,
            &[5, 3, 0, 1, 2, 4],
            &Options::default(),
            &pool,
            deadline,
            Spent::Kernel,
        );
        for (i, a) in answers.iter().enumerate() {
            assert_eq!(a, &Answer::Sat([("x".to_string(), i as i64)].into()));
        }
    }

    #[test]
    fn queries_past_the_budget_are_unknown() {
        let pool = SolverPool::new(1);
        let queries: Vec<Query> = (0..50).map(query).collect();
        let order: Vec<usize> = (0..50).collect();
        let answers = solve_before(
            &queries,
            &order,
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
