//! `cudarace check …` and `cudarace lsp`.

mod args;
mod project;

use args::{CheckArgs, Cli, ColorChoice, Command, Format};
use clap::Parser;
use cudarace_analysis::compile_db::{CompileDb, Flags};
use cudarace_analysis::config::set_timeout;
use cudarace_analysis::layers::{layered_options, UserFlags};
use cudarace_analysis::render::{self, HumanOptions};
use cudarace_analysis::{
    analyze_path, collect_paths, exit_process, system_includes, Config, FileReport, Options,
    SolverPool,
};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use rayon::prelude::*;
use std::collections::HashMap;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// Files checked at the same time unless `--file-jobs` says otherwise: the cores the solver
/// threads leave free, at least one. Measured on tests/fixtures (169 files, 2 cores, `-j 2`,
/// debug build, two runs each): one file at a time took 9.6–10.0 s with 3–4 kernels timing out,
/// two at a time 7.8–8.6 s with 5–6 (four: 8.1 s, 5). The solver's wall-clock limit is what
/// suffers when front-end and planning threads compete with the solver threads for the cores,
/// and verdicts should not depend on how many files are checked together; so files run in
/// parallel only on cores the solver pool does not use.
fn default_file_jobs(solver_threads: usize) -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    cores.saturating_sub(solver_threads).max(1)
}

/// Nothing reported at the failing level (every kernel race-free and convergent by default).
const EXIT_CLEAN: u8 = 0;
/// Something reported at the failing level: a finding, an undecided kernel, an unused
/// suppression, or a file not analysed.
const EXIT_FINDINGS: u8 = 1;
/// Usage or I/O error.
const EXIT_USAGE: u8 = 2;

/// How long the end of the process waits for solver threads still inside Z3 (interrupted).
const SOLVER_EXIT_WAIT: Duration = Duration::from_secs(2);

fn main() {
    // clap exits with 2 on usage errors and 0 for --help/--version.
    let cli = Cli::parse();
    // A crash (a panic, or an abort in Z3) names the file and kernel being checked.
    cudarace_analysis::install_crash_reports();
    let code = match cli.command {
        Command::Check(args) => {
            init_logging(cli.log_level.as_deref());
            check(args)
        }
        // The server sets up its own logging (its level follows the editor's settings); it reads
        // `CUDARACE_LOG`, so the flag is passed on through it. No other thread runs yet.
        // `--stdio` is the only transport there is: accepted for clients that pass it.
        Command::Lsp(_) => {
            if let Some(level) = &cli.log_level {
                std::env::set_var("CUDARACE_LOG", level);
            }
            lsp()
        }
    };
    // Not a plain return from `main`: the process must not run libz3's static destructors while
    // a solver thread is still inside Z3 (issue 14: SIGABRT at exit under load).
    exit_process(code.into(), SOLVER_EXIT_WAIT)
}

fn lsp() -> u8 {
    match cudarace_lsp::run_stdio() {
        Ok(()) => EXIT_CLEAN,
        Err(e) => {
            eprintln!("cudarace: error: {e:#}");
            EXIT_USAGE
        }
    }
}

/// Logs go to stderr (stdout carries the report, or the LSP protocol).
fn init_logging(flag: Option<&str>) {
    let filter = flag
        .map(str::to_string)
        .or_else(|| std::env::var("CUDARACE_LOG").ok())
        // The pool's warning about a solver thread overrunning its deadline repeats for every
        // timed-out query; the report already says which kernels timed out.
        .unwrap_or_else(|| "warn,cudarace_solver::pool=error".to_string());
    let filter = match tracing_subscriber::EnvFilter::try_new(&filter) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("cudarace: warning: bad log filter `{filter}` ({e}); using `warn`");
            tracing_subscriber::EnvFilter::new("warn")
        }
    };
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .try_init();
}

/// The options of a file checked with `config` and `flags` (from a compilation database): the
/// command line's flags over the configuration's over the database's (see
/// `cudarace_analysis::layers`), and the toolkit's include folders last when asked for.
fn options(args: &CheckArgs, config: &Arc<Config>, flags: Option<&Flags>) -> Options {
    // One header cache for the whole run: the units of a project read and parse each header
    // once per set of flags.
    static HEADERS: std::sync::OnceLock<Arc<cudarace_analysis::HeaderCache>> =
        std::sync::OnceLock::new();
    let user = UserFlags {
        include_dirs: &args.include_dirs,
        defines: &args.defines,
    };
    let mut opts = layered_options(config, flags, user);
    opts.frontend.headers = Some(
        HEADERS
            .get_or_init(cudarace_analysis::HeaderCache::new)
            .clone(),
    );
    if args.system_includes || config.system_includes {
        system_includes::add_to(&mut opts);
    }
    opts.kernel = args.kernel.clone();
    if let Some(b) = args.block_dim {
        opts.check.launch_override.block_dim = b.map(Some);
    }
    if let Some(g) = args.grid_dim {
        opts.check.launch_override.grid_dim = g.map(Some);
    }
    if args.no_grid_checks {
        opts.check.grid_checks = false;
    }
    if let Some(ms) = args.timeout_ms {
        set_timeout(&mut opts.check.limits, ms);
    }
    if let Some(ms) = args.kernel_timeout_ms {
        opts.budget.kernel_time = Duration::from_millis(ms);
    }
    if let Some(ms) = args.file_timeout_ms {
        opts.budget.file_time = Duration::from_millis(ms);
    }
    opts
}

/// Finds and loads the configuration of each file (`--config` for all of them), each file
/// read once. Errors are rendered for stderr.
struct Configs {
    fixed: Option<Arc<Config>>,
    none: bool,
    loaded: HashMap<PathBuf, Arc<Config>>,
    empty: Arc<Config>,
}

impl Configs {
    fn new(args: &CheckArgs, color: bool) -> Result<Configs, String> {
        let fixed = match &args.config {
            Some(path) => Some(Arc::new(
                Config::load(path).map_err(|e| render_config_error(&e, color))?,
            )),
            None => None,
        };
        Ok(Configs {
            fixed,
            none: args.no_config,
            loaded: HashMap::new(),
            empty: Arc::new(Config::default()),
        })
    }

    fn for_file(&mut self, file: &Path, color: bool) -> Result<Arc<Config>, String> {
        if let Some(c) = &self.fixed {
            return Ok(c.clone());
        }
        if self.none {
            return Ok(self.empty.clone());
        }
        let Some(path) = Config::discover(file) else {
            return Ok(self.empty.clone());
        };
        if let Some(c) = self.loaded.get(&path) {
            return Ok(c.clone());
        }
        let config = Arc::new(Config::load(&path).map_err(|e| render_config_error(&e, color))?);
        self.loaded.insert(path, config.clone());
        Ok(config)
    }
}

fn render_config_error(e: &cudarace_analysis::ConfigError, color: bool) -> String {
    render::config_error(e, &HumanOptions { color })
}

fn check(args: CheckArgs) -> u8 {
    let stderr_color = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    let stderr_color = match args.color {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => stderr_color,
    };
    let mut databases =
        project::Databases::new(args.compile_commands.as_deref(), args.no_compile_commands);
    // No PATH (only with --compile-commands): the database's .cu files.
    let paths = if args.paths.is_empty() {
        databases.units()
    } else {
        collect_paths(&args.paths)
    };
    let paths = match paths {
        Ok(paths) => paths,
        Err(e) => {
            eprintln!("cudarace: error: {e}");
            return EXIT_USAGE;
        }
    };
    let mut configs = match Configs::new(&args, stderr_color) {
        Ok(c) => c,
        Err(rendered) => {
            eprint!("{rendered}");
            return EXIT_USAGE;
        }
    };
    // Each file with its configuration; files found in folders may be excluded by it (files
    // named on the command line are always checked).
    let mut work: Vec<(PathBuf, Options)> = Vec::with_capacity(paths.len());
    // The database of each checked file (by address), to build each one's launch index once.
    let mut used: Vec<(Arc<CompileDb>, Vec<usize>)> = Vec::new();
    for path in paths {
        let config = match configs.for_file(&path, stderr_color) {
            Ok(c) => c,
            Err(rendered) => {
                eprint!("{rendered}");
                return EXIT_USAGE;
            }
        };
        let named = args.paths.iter().any(|p| p == &path);
        if !named && config.is_excluded(&path) {
            tracing::info!(path = %path.display(), "excluded by the configuration");
            continue;
        }
        let db = databases.for_file(&path, &config);
        let opts = options(&args, &config, project::flags_for(db.as_deref(), &path));
        if let Some(db) = db {
            match used.iter_mut().find(|(d, _)| Arc::ptr_eq(d, &db)) {
                Some((_, items)) => items.push(work.len()),
                None => used.push((db, vec![work.len()])),
            }
        }
        work.push((path, opts));
    }
    if work.is_empty() {
        eprintln!("cudarace: error: no CUDA files (.cu, .cuh) under the given paths");
        return EXIT_USAGE;
    }
    let workers = args.jobs.map(|j| j as usize).unwrap_or_else(|| {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    });
    let pool = SolverPool::new(workers);
    let file_jobs = args
        .file_jobs
        .map_or_else(|| default_file_jobs(pool.workers()), |j| j as usize);
    // Each database's .cu files are read for their launch sites, with their own options.
    for (db, items) in used {
        let mut units = Vec::new();
        for unit in db.cuda_units().into_iter().filter(|p| p.is_file()) {
            if let Ok(config) = configs.for_file(&unit, stderr_color) {
                let opts = options(&args, &config, project::flags_for(Some(&db), &unit));
                units.push((unit, opts));
            }
        }
        let index = Arc::new(project::launch_index(&units, file_jobs));
        tracing::info!(database = %db.path.display(), sites = index.len(), "launch index");
        for i in items {
            // A header: the flags of a unit that includes it, rather than of the nearest entry.
            if let Some(flags) =
                cudarace_analysis::launch_index::includer_flags(&db, &index, &work[i].0)
            {
                if let Ok(config) = configs.for_file(&work[i].0, stderr_color) {
                    work[i].1 = options(&args, &config, Some(flags));
                }
            }
            work[i].1.launch_index = Some(index.clone());
        }
    }
    // Files no database covers: the launch sites of the `.cu` files beside them.
    let mut siblings = cudarace_analysis::siblings::Siblings::default();
    for (path, opts) in work.iter_mut() {
        if opts.launch_index.is_none() {
            if let Some(index) = siblings.index(path, opts) {
                opts.launch_index = Some(Arc::new(index));
            }
        }
    }
    let mut reports = check_files(&args, &work, &pool, file_jobs);
    // A header kernel that several checked files include is shown once when it reads the same.
    cudarace_analysis::drop_repeated_header_kernels(&mut reports);
    // Interrupts what is still running (queries of a kernel whose time budget ran out, workers
    // abandoned by the watchdog); `main` waits for them before the process exits.
    drop(pool);

    let output = match args.format {
        Format::Human => {
            let color = match args.color {
                ColorChoice::Always => true,
                ColorChoice::Never => false,
                ColorChoice::Auto => {
                    std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none()
                }
            };
            render::human(&reports, &HumanOptions { color })
        }
        Format::Json => pretty(&render::json(&reports)),
        Format::Sarif => {
            let base = std::env::current_dir().ok();
            pretty(&render::sarif(&reports, base.as_deref()))
        }
    };
    let mut stdout = std::io::stdout().lock();
    if let Err(e) = stdout
        .write_all(output.as_bytes())
        .and_then(|()| stdout.flush())
    {
        if e.kind() != std::io::ErrorKind::BrokenPipe {
            eprintln!("cudarace: error: writing the report: {e}");
            return EXIT_USAGE;
        }
    }

    if let Some(name) = &args.kernel {
        if reports.iter().all(|r| r.kernels.is_empty()) {
            eprintln!("cudarace: error: no kernel named `{name}` in the checked files");
            return EXIT_USAGE;
        }
    }
    let fail_on = args.fail_on.map(|f| f.level());
    let failed = reports.iter().any(|r| r.fails(r.fail_on(fail_on)));
    if failed && !args.exit_zero {
        EXIT_FINDINGS
    } else {
        EXIT_CLEAN
    }
}

/// Checks the files, `--file-jobs` at a time, and returns their reports in the order given.
/// All files share the one solver pool, so the solver threads stay bounded by `--jobs`.
fn check_files(
    args: &CheckArgs,
    work: &[(PathBuf, Options)],
    pool: &SolverPool,
    file_jobs: usize,
) -> Vec<FileReport> {
    let progress = if !args.no_progress && work.len() > 1 && std::io::stderr().is_terminal() {
        let bar =
            ProgressBar::with_draw_target(Some(work.len() as u64), ProgressDrawTarget::stderr());
        if let Ok(style) = ProgressStyle::with_template(
            "{spinner} checking [{bar:30}] {pos}/{len} files, {elapsed} {wide_msg}",
        ) {
            bar.set_style(style.progress_chars("=> "));
        }
        bar
    } else {
        ProgressBar::hidden()
    };
    let check_one = |(path, opts): &(PathBuf, Options)| {
        tracing::info!(path = %path.display(), "checking");
        progress.set_message(path.display().to_string());
        let report = analyze_path(path, opts, pool);
        progress.inc(1);
        report
    };
    let reports = if file_jobs <= 1 {
        work.iter().map(check_one).collect()
    } else {
        match rayon::ThreadPoolBuilder::new()
            .num_threads(file_jobs)
            .build()
        {
            Ok(files_pool) => files_pool.install(|| work.par_iter().map(check_one).collect()),
            Err(e) => {
                tracing::warn!("no thread pool for files ({e}); checking one file at a time");
                work.iter().map(check_one).collect()
            }
        }
    };
    progress.finish_and_clear();
    reports
}

fn pretty(value: &serde_json::Value) -> String {
    // Serializing a Value cannot fail (all keys are strings).
    let mut s =
        serde_json::to_string_pretty(value).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"));
    s.push('\n');
    s
}
