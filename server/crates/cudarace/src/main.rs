//! `cudarace check …` and `cudarace lsp`.

mod args;

use args::{CheckArgs, Cli, ColorChoice, Command, Format};
use clap::Parser;
use cudarace_analysis::render::{self, HumanOptions};
use cudarace_analysis::{analyze_path, collect_paths, Options, SolverPool, Summary};
use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::time::Duration;

/// Every kernel race-free and convergent.
const EXIT_CLEAN: u8 = 0;
/// Something found, undecided, or a file not analysed.
const EXIT_FINDINGS: u8 = 1;
/// Usage or I/O error.
const EXIT_USAGE: u8 = 2;

fn main() -> ExitCode {
    // clap exits with 2 on usage errors and 0 for --help/--version.
    let cli = Cli::parse();
    match cli.command {
        Command::Check(args) => {
            init_logging(cli.log_level.as_deref());
            check(args)
        }
        // The server sets up its own logging (its level follows the editor's settings); it reads
        // `CUDARACE_LOG`, so the flag is passed on through it. No other thread runs yet.
        Command::Lsp => {
            if let Some(level) = &cli.log_level {
                std::env::set_var("CUDARACE_LOG", level);
            }
            lsp()
        }
    }
}

fn lsp() -> ExitCode {
    match cudarace_lsp::run_stdio() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("cudarace: error: {e:#}");
            ExitCode::from(EXIT_USAGE)
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

fn options(args: &CheckArgs) -> Options {
    let mut opts = Options::default();
    opts.frontend.include_dirs = args.include_dirs.clone();
    opts.frontend.defines = args.defines.clone();
    opts.kernel = args.kernel.clone();
    if let Some(b) = args.block_dim {
        opts.check.launch_override.block_dim = b.map(Some);
    }
    if let Some(g) = args.grid_dim {
        opts.check.launch_override.grid_dim = g.map(Some);
    }
    opts.check.grid_checks = !args.no_grid_checks;
    // Keep the resource limit proportional to the time limit (the default pair is 2000 ms and
    // 10M): with Debian's Z3 4.8.12 the rlimit is the bound that is always honoured.
    let default = opts.check.limits;
    opts.check.limits.timeout_ms = args.timeout_ms;
    opts.check.limits.rlimit = (default.rlimit as u128 * args.timeout_ms as u128
        / default.timeout_ms.max(1) as u128)
        .clamp(1, u64::MAX as u128) as u64;
    opts.budget.kernel_time = Duration::from_millis(args.kernel_timeout_ms);
    opts
}

fn check(args: CheckArgs) -> ExitCode {
    let paths = match collect_paths(&args.paths) {
        Ok(paths) => paths,
        Err(e) => {
            eprintln!("cudarace: error: {e}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    if paths.is_empty() {
        eprintln!("cudarace: error: no CUDA files (.cu, .cuh) under the given paths");
        return ExitCode::from(EXIT_USAGE);
    }
    let opts = options(&args);
    let workers = args.jobs.map(|j| j as usize).unwrap_or_else(|| {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    });
    let pool = SolverPool::new(workers);
    // Files one after the other: each kernel's queries already run in parallel on the pool, and
    // analysing files concurrently too was measured slower to decide (more solver timeouts on
    // tests/fixtures with 2 cores: 39 unknown kernels instead of 23).
    let mut reports = Vec::with_capacity(paths.len());
    for path in &paths {
        tracing::info!(path = %path.display(), "checking");
        reports.push(analyze_path(path, &opts, &pool));
    }

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
            return ExitCode::from(EXIT_USAGE);
        }
    }

    if let Some(name) = &args.kernel {
        if reports.iter().all(|r| r.kernels.is_empty()) {
            eprintln!("cudarace: error: no kernel named `{name}` in the checked files");
            return ExitCode::from(EXIT_USAGE);
        }
    }
    let summary = Summary::of(&reports);
    if summary.all_clean() {
        ExitCode::from(EXIT_CLEAN)
    } else {
        ExitCode::from(EXIT_FINDINGS)
    }
}

fn pretty(value: &serde_json::Value) -> String {
    // Serializing a Value cannot fail (all keys are strings).
    let mut s =
        serde_json::to_string_pretty(value).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"));
    s.push('\n');
    s
}
