//! The command line.

use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

#[derive(Debug, Parser)]
#[command(
    name = "cudarace",
    version,
    about = "Finds data races and barrier divergence in CUDA kernels"
)]
pub struct Cli {
    /// Log filter for messages on stderr (`error`, `warn`, `info`, `debug`, `trace`, or
    /// tracing's `target=level` syntax). Default: the `CUDARACE_LOG` variable, else for `check`
    /// `warn` (without the solver pool's per-query timeout warnings), for `lsp` the `RUST_LOG`
    /// variable, else `info` (one line per checked document; the editor's `logLevel` setting
    /// changes it while the server runs).
    #[arg(long, global = true, value_name = "FILTER")]
    pub log_level: Option<String>,

    #[command(subcommand)]
    pub command: Command,
}

// Made once per run: the size difference between the variants does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Check CUDA files for data races and barrier divergence.
    ///
    /// Exit status: 0 when nothing at the `--fail-on` level (default: warning, or `fail-on` in
    /// cudarace.toml) or above was reported, 1 when something was (findings not suppressed,
    /// kernels that could not be decided, unused suppressions, files that could not be analysed),
    /// 2 on usage or I/O errors and invalid configuration files.
    Check(CheckArgs),
    /// Run the language server on stdin/stdout.
    Lsp(LspArgs),
}

#[derive(Debug, Args)]
pub struct LspArgs {
    /// Accepted and ignored: the server always speaks LSP on stdin/stdout. Many clients pass it
    /// (vscode-languageclient with `TransportKind.stdio`, among others).
    #[arg(long)]
    pub stdio: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Human,
    Json,
    Sarif,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FailOn {
    Error,
    Warning,
    Info,
}

impl FailOn {
    pub fn level(self) -> cudarace_analysis::Level {
        match self {
            FailOn::Error => cudarace_analysis::Level::Error,
            FailOn::Warning => cudarace_analysis::Level::Warning,
            FailOn::Info => cudarace_analysis::Level::Info,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ColorChoice {
    Auto,
    Always,
    Never,
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Human)]
    pub format: Format,

    /// Block size of every launch, `X[,Y[,Z]]` (missing dimensions are 1). Overrides annotations
    /// and launch sites in the files.
    #[arg(long, value_name = "X[,Y[,Z]]", value_parser = parse_block_dim)]
    pub block_dim: Option<[u64; 3]>,

    /// Grid size of every launch, `X[,Y[,Z]]` (missing dimensions are 1).
    #[arg(long, value_name = "X[,Y[,Z]]", value_parser = parse_grid_dim)]
    pub grid_dim: Option<[u64; 3]>,

    /// Check only the kernel(s) with this name.
    #[arg(long, value_name = "NAME")]
    pub kernel: Option<String>,

    /// Time limit of one solver query, in milliseconds [default: 2000, or cudarace.toml's].
    #[arg(long, value_name = "N",
          value_parser = clap::value_parser!(u64).range(1..=3_600_000))]
    pub timeout_ms: Option<u64>,

    /// Time limit for all solver queries of one kernel, in milliseconds [default: 60000, or
    /// cudarace.toml's].
    #[arg(long, value_name = "N",
          value_parser = clap::value_parser!(u64).range(1..=86_400_000))]
    pub kernel_timeout_ms: Option<u64>,

    /// Time limit for all kernels of one file, in milliseconds: kernels not decided by then are
    /// `unknown` [default: 8000, so that a file takes at most ~10 s; or cudarace.toml's].
    #[arg(long, value_name = "N",
          value_parser = clap::value_parser!(u64).range(1..=86_400_000))]
    pub file_timeout_ms: Option<u64>,

    /// The configuration file to use for every checked file, instead of the `cudarace.toml`
    /// found in each file's folder or the nearest folder above it.
    #[arg(long, value_name = "PATH")]
    pub config: Option<PathBuf>,

    /// Use no configuration file.
    #[arg(long, conflicts_with = "config")]
    pub no_config: bool,

    /// The lowest level that makes the exit status 1 [default: `fail-on` in cudarace.toml, else
    /// warning].
    #[arg(long, value_enum, value_name = "LEVEL")]
    pub fail_on: Option<FailOn>,

    /// Exit with status 0 even when something was found (usage and configuration errors still
    /// exit with 2).
    #[arg(long)]
    pub exit_zero: bool,

    /// Never show a progress bar (it is shown only on a terminal, for several files).
    #[arg(long)]
    pub no_progress: bool,

    /// Solver threads (default: the number of CPUs).
    #[arg(long, short = 'j', value_name = "N",
          value_parser = clap::value_parser!(u64).range(1..=256))]
    pub jobs: Option<u64>,

    /// Folder searched for `#include "…"` (after the including file's folder); repeatable.
    #[arg(long = "include", short = 'I', value_name = "DIR")]
    pub include_dirs: Vec<PathBuf>,

    /// Preprocessor definition `NAME[=VALUE]`; repeatable.
    #[arg(long = "define", short = 'D', value_name = "NAME[=VALUE]", value_parser = parse_define)]
    pub defines: Vec<(String, String)>,

    /// The compilation database (`compile_commands.json`, or a folder holding one): each file is
    /// checked with the `-I`, `-D`, `-U`, `-include` and `-std=` flags of its entry (a header
    /// with those of the nearest entry), and kernels get the launch sites of every `.cu` file it
    /// compiles. With no PATH, every `.cu` file it compiles is checked. [default: `[frontend]
    /// compile-commands` in cudarace.toml, else the first `compile_commands.json` found in the
    /// file's folder or a folder above it, or in their `build/` or `out/`]
    #[arg(long, value_name = "PATH")]
    pub compile_commands: Option<PathBuf>,

    /// Use no compilation database, not even one found next to the files.
    #[arg(long, conflicts_with = "compile_commands")]
    pub no_compile_commands: bool,

    /// Search the CUDA toolkit's include folders (`$CUDA_PATH`, `$CUDA_HOME`,
    /// `/usr/local/cuda`, Debian's `/usr/include`) for `#include <…>`, after the others. Off by
    /// default: reading the toolkit's headers slows every check and their macros can change
    /// what a file means [default: `[frontend] system-includes` in cudarace.toml].
    #[arg(long)]
    pub system_includes: bool,

    /// Do not check pairs of threads in different blocks (global memory).
    #[arg(long)]
    pub no_grid_checks: bool,

    /// Files checked at the same time [default: the cores not used by solver threads, at least
    /// 1]. All files share one pool of `--jobs` solver threads, so more files at once does not
    /// mean more solver threads; the output keeps the order of the files.
    #[arg(long, value_name = "N",
          value_parser = clap::value_parser!(u64).range(1..=256))]
    pub file_jobs: Option<u64>,

    /// Colors in human output.
    #[arg(long, value_enum, default_value_t = ColorChoice::Auto)]
    pub color: ColorChoice,

    /// Files and folders to check; folders are searched for `.cu` and `.cuh` files. None: the
    /// `.cu` files of `--compile-commands`.
    #[arg(required_unless_present = "compile_commands", value_name = "PATH")]
    pub paths: Vec<PathBuf>,
}

/// Parses `X[,Y[,Z]]` (also `XxY`); every size at least 1; missing dimensions are 1.
fn parse_dims(s: &str) -> Result<[u64; 3], String> {
    let parts: Vec<&str> = s.split([',', 'x']).map(str::trim).collect();
    if parts.is_empty() || parts.len() > 3 {
        return Err("expected one to three sizes, like 256 or 16,16".to_string());
    }
    let mut dims = [1u64; 3];
    for (i, part) in parts.iter().enumerate() {
        let v: u64 = part
            .parse()
            .map_err(|_| format!("`{part}` is not a positive integer (expected X[,Y[,Z]])"))?;
        if v == 0 {
            return Err("sizes must be at least 1".to_string());
        }
        dims[i] = v;
    }
    Ok(dims)
}

/// A block size. One over CUDA's limits (x, y ≤ 1024, z ≤ 64, at most 1024 threads) is
/// accepted, as from a GPUVerify header line: the check goes on with it, and every kernel's
/// report carries a warning naming the flag (cudarace-check's `launch::Launch::warning`).
pub fn parse_block_dim(s: &str) -> Result<[u64; 3], String> {
    let d = parse_dims(s)?;
    if d.iter()
        .try_fold(1u64, |a, b| a.checked_mul(*b))
        .is_none_or(|t| t > i64::MAX as u64)
    {
        return Err(format!("`{s}` is too many threads"));
    }
    Ok(d)
}

/// CUDA's limits on a grid: x < 2^31, y, z ≤ 65535.
pub fn parse_grid_dim(s: &str) -> Result<[u64; 3], String> {
    let d = parse_dims(s)?;
    if d[0] >= 1 << 31 || d[1] > 65535 || d[2] > 65535 {
        return Err("a grid is at most (2^31 - 1) × 65535 × 65535".to_string());
    }
    Ok(d)
}

/// `NAME=VALUE` or `NAME` (value empty, which the front end reads as 1).
fn parse_define(s: &str) -> Result<(String, String), String> {
    let (name, value) = s.split_once('=').unwrap_or((s, ""));
    let valid = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !valid {
        return Err(format!("`{name}` is not a macro name"));
    }
    Ok((name.to_string(), value.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dims() {
        assert_eq!(parse_block_dim("256"), Ok([256, 1, 1]));
        assert_eq!(parse_block_dim("16,16"), Ok([16, 16, 1]));
        assert_eq!(parse_block_dim("8x8x4"), Ok([8, 8, 4]));
        assert_eq!(parse_block_dim(" 4 , 4 "), Ok([4, 4, 1]));
        // Over CUDA's limits: accepted (the report warns).
        assert_eq!(parse_block_dim("2048"), Ok([2048, 1, 1]));
        assert_eq!(parse_block_dim("64,64"), Ok([64, 64, 1]));
        assert_eq!(parse_block_dim("1,1,128"), Ok([1, 1, 128]));
        assert!(parse_block_dim("4294967296,4294967296").is_err());
        assert!(parse_block_dim("0").is_err());
        assert!(parse_block_dim("1,2,3,4").is_err());
        assert!(parse_block_dim("a").is_err());
        assert!(parse_block_dim("").is_err());
        assert!(parse_block_dim("-1").is_err());
        assert_eq!(parse_grid_dim("2147483647"), Ok([2147483647, 1, 1]));
        assert!(parse_grid_dim("2147483648").is_err());
        assert!(parse_grid_dim("1,65536").is_err());
    }

    #[test]
    fn defines() {
        assert_eq!(parse_define("N=4"), Ok(("N".into(), "4".into())));
        assert_eq!(parse_define("DEBUG"), Ok(("DEBUG".into(), "".into())));
        assert_eq!(parse_define("A=x=y"), Ok(("A".into(), "x=y".into())));
        assert!(parse_define("=3").is_err());
        assert!(parse_define("1X").is_err());
    }

    #[test]
    fn cli_is_well_formed() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }
}
