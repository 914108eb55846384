//! `cudarace.toml`: project configuration, found by walking up from the checked file.
//!
//! ```toml
//! exclude = ["third_party/**"]          # globs relative to this file's folder
//! fail-on = "warning"                   # lowest level that makes `cudarace check` exit 1
//! allow-same-value-writes = false       # races where both threads store the same constant
//!
//! [launch]                              # every kernel (weaker than the CLI / editor settings)
//! block-dim = [256]
//! grid-dim = [64]
//!
//! [[kernel]]                            # kernels by name or glob; the exact name wins, else the first glob
//! name = "reduce_*"
//! block-dim = [128]
//!
//! [frontend]
//! include = ["include"]                 # like -I, relative to this file's folder
//! define = ["TILE=16", "DEBUG"]         # like -D
//! compile-commands = "build/compile_commands.json"   # each file's -I/-D/… (a file or its folder)
//! system-includes = false               # the CUDA toolkit's headers for #include <…>
//!
//! [solver]
//! timeout-ms = 2000
//! kernel-timeout-ms = 60000
//! grid-checks = true
//!
//! [severity]                            # error | warning | info | off
//! data-race = { definite = "error", possible = "warning" }
//! barrier-divergence = "error"          # both confidences
//! unverified = "warning"                # kernels whose verdict is unknown or unsupported
//! unused-suppression = "warning"
//! ```
//!
//! Precedence of launch sizes, strongest first: the CLI flags / editor settings, the kernel's
//! `[[kernel]]` entry, `[launch]`, then what the source says (annotations, `__launch_bounds__`,
//! launch sites). Each dimension is taken from the strongest source that sets it.
//!
//! Unknown keys and bad values are errors ([`ConfigError`]) with the place in the file and what
//! is allowed; this module only parses and resolves (no I/O beyond reading the file).

use crate::driver::Options;
use cudarace_ir::{Confidence, FindingKind, Kernel, LaunchConfig};
use globset::{Glob, GlobBuilder, GlobMatcher, GlobSet, GlobSetBuilder};
use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::Deserialize;
use std::borrow::Cow;
use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use toml::Spanned;

/// The name of the configuration file.
pub const CONFIG_FILE_NAME: &str = "cudarace.toml";

/// How a finding (or another problem) is reported. Ordered from weakest to strongest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    /// Not reported at all (still in the JSON output, with `"severity": "off"`).
    Off,
    Info,
    Warning,
    Error,
}

impl Level {
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Off => "off",
            Level::Info => "info",
            Level::Warning => "warning",
            Level::Error => "error",
        }
    }

    pub fn parse(s: &str) -> Option<Level> {
        match s {
            "off" => Some(Level::Off),
            "info" => Some(Level::Info),
            "warning" => Some(Level::Warning),
            "error" => Some(Level::Error),
            _ => None,
        }
    }
}

/// The level of each confidence of one finding kind; `None` where the file says nothing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KindLevels {
    pub definite: Option<Level>,
    pub possible: Option<Level>,
    pub conditional: Option<Level>,
}

/// The `[severity]` table. `None` where the file says nothing, so that each front end keeps its
/// own default there (the CLI's are in [`Severities::level`]; the editor's are its settings).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Severities {
    pub data_race: KindLevels,
    pub barrier_divergence: KindLevels,
    /// Kernels whose verdict is `unknown` or `unsupported`.
    pub unverified: Option<Level>,
    pub unused_suppression: Option<Level>,
}

impl Severities {
    /// What the file sets for a finding kind and confidence.
    pub fn configured(&self, kind: FindingKind, confidence: Confidence) -> Option<Level> {
        let levels = match kind {
            FindingKind::DataRace => &self.data_race,
            FindingKind::BarrierDivergence => &self.barrier_divergence,
        };
        match confidence {
            Confidence::Definite => levels.definite,
            Confidence::Possible => levels.possible,
            Confidence::Conditional => levels.conditional,
        }
    }

    /// The level with the command line's defaults: definite findings are errors, possible ones
    /// warnings.
    pub fn level(&self, kind: FindingKind, confidence: Confidence) -> Level {
        self.configured(kind, confidence)
            .unwrap_or(match confidence {
                Confidence::Definite => Level::Error,
                Confidence::Possible => Level::Warning,
                // Races that need values a caller would not pass: reported, not failing.
                Confidence::Conditional => Level::Info,
            })
    }

    /// Unverified kernels are warnings by default (and so fail the default `fail-on`).
    pub fn unverified_level(&self) -> Level {
        self.unverified.unwrap_or(Level::Warning)
    }

    pub fn unused_suppression_level(&self) -> Level {
        self.unused_suppression.unwrap_or(Level::Warning)
    }
}

/// A `[[kernel]]` entry.
#[derive(Debug, Clone)]
pub struct KernelEntry {
    /// The name or glob as written.
    pub pattern: String,
    matcher: GlobMatcher,
    pub launch: LaunchConfig,
}

/// A parsed `cudarace.toml` (or the empty configuration: [`Config::default`]).
#[derive(Debug, Clone, Default)]
pub struct Config {
    /// The file it was read from (`None` for the empty configuration).
    pub path: Option<PathBuf>,
    /// `[launch]`: the default launch sizes of every kernel.
    pub launch: LaunchConfig,
    pub kernels: Vec<KernelEntry>,
    /// `[frontend] include`, made absolute against the file's folder.
    pub include_dirs: Vec<PathBuf>,
    /// `[frontend] define`: `NAME=VALUE`, or `NAME` (value `1`).
    pub defines: Vec<(String, String)>,
    /// `[frontend] compile-commands`: the compilation database (a file or a folder holding
    /// one), made absolute against the file's folder; `None`: looked for from each checked file.
    pub compile_commands: Option<PathBuf>,
    /// `[frontend] system-includes`: the CUDA toolkit's folders searched for `#include <…>`.
    pub system_includes: bool,
    pub severity: Severities,
    /// The lowest level that fails `cudarace check` (default: warning).
    pub fail_on: Option<Level>,
    pub allow_same_value_writes: bool,
    pub timeout_ms: Option<u64>,
    pub kernel_timeout_ms: Option<u64>,
    /// `[solver] file-timeout-ms`: the time budget of all kernels of one file.
    pub file_timeout_ms: Option<u64>,
    pub grid_checks: Option<bool>,
    /// `[assumptions]`: which plausibility assumptions are made (all by default).
    pub assumptions: cudarace_check::assumptions::AssumptionSwitches,
    /// `[library] files`: the bundled library files and the user's (`None`: the bundled ones).
    pub library: Option<Arc<cudarace_library::Library>>,
    /// `exclude` as written.
    pub exclude: Vec<String>,
    exclude_set: Option<GlobSet>,
}

/// A configuration file that could not be used: where and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    pub path: PathBuf,
    /// The file's text (empty when it could not be read).
    pub text: Arc<str>,
    /// Byte range of the offending part, when known.
    pub span: Option<Range<usize>>,
    pub message: String,
    /// What is allowed there.
    pub help: Option<String>,
}

impl ConfigError {
    /// 1-based line of the error (1 when the place is unknown).
    pub fn line(&self) -> usize {
        let at = self
            .span
            .as_ref()
            .map_or(0, |s| s.start.min(self.text.len()));
        self.text[..at].matches('\n').count() + 1
    }
}

impl fmt::Display for ConfigError {
    /// One line: `path:line: message (help)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}: {}",
            self.path.display(),
            self.line(),
            self.message
        )?;
        if let Some(help) = &self.help {
            write!(f, " ({help})")?;
        }
        Ok(())
    }
}

// ------------------------------------------------------------------------------------------
// The file's shape.

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct RawConfig {
    #[serde(default)]
    exclude: Vec<Spanned<String>>,
    fail_on: Option<Level>,
    allow_same_value_writes: Option<bool>,
    launch: Option<RawLaunch>,
    #[serde(default)]
    kernel: Vec<RawKernel>,
    frontend: Option<RawFrontend>,
    solver: Option<RawSolver>,
    severity: Option<RawSeverity>,
    assumptions: Option<RawAssumptions>,
    library: Option<RawLibrary>,
}

/// `[library]`: library files of the user's own (see `docs/library.md`).
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct RawLibrary {
    #[serde(default)]
    files: Vec<Spanned<PathBuf>>,
}

/// `[assumptions]`: each plausibility assumption can be turned off (see
/// `cudarace_check::assumptions`).
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct RawAssumptions {
    positive_sizes: Option<bool>,
    non_negative_indices: Option<bool>,
    shared_in_bounds: Option<bool>,
    single_block_without_launch: Option<bool>,
    leading_dimensions: Option<bool>,
    launch_shape_without_launch: Option<bool>,
    constant_block_shape: Option<bool>,
    unread_block_dimensions: Option<bool>,
    warp_sized_blocks: Option<bool>,
    one_to_one_thread_ids: Option<bool>,
    whole_stretches: Option<bool>,
    divisible_sizes: Option<bool>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct RawLaunch {
    block_dim: Option<Spanned<Vec<u64>>>,
    grid_dim: Option<Spanned<Vec<u64>>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct RawKernel {
    name: Spanned<String>,
    block_dim: Option<Spanned<Vec<u64>>>,
    grid_dim: Option<Spanned<Vec<u64>>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct RawFrontend {
    #[serde(default)]
    include: Vec<PathBuf>,
    #[serde(default)]
    define: Vec<Spanned<String>>,
    compile_commands: Option<PathBuf>,
    system_includes: Option<bool>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct RawSolver {
    timeout_ms: Option<Spanned<u64>>,
    kernel_timeout_ms: Option<Spanned<u64>>,
    file_timeout_ms: Option<Spanned<u64>>,
    grid_checks: Option<bool>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct RawSeverity {
    data_race: Option<KindLevels>,
    barrier_divergence: Option<KindLevels>,
    unverified: Option<Level>,
    unused_suppression: Option<Level>,
}

/// A kind's severity: one level for both confidences (`"error"`), or a table
/// (`{ definite = "error", possible = "warning" }`).
impl<'de> Deserialize<'de> for KindLevels {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = KindLevels;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str(
                    "a level (\"error\", \"warning\", \"info\", \"off\") or a table with `definite` and `possible`",
                )
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<KindLevels, E> {
                let level = Level::parse(s)
                    .ok_or_else(|| E::unknown_variant(s, &["error", "warning", "info", "off"]))?;
                Ok(KindLevels {
                    definite: Some(level),
                    possible: Some(level),
                    conditional: Some(level),
                })
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<KindLevels, A::Error> {
                let mut out = KindLevels::default();
                while let Some(key) = map.next_key::<String>()? {
                    match key.as_str() {
                        "definite" => out.definite = Some(map.next_value()?),
                        "possible" => out.possible = Some(map.next_value()?),
                        "conditional" => out.conditional = Some(map.next_value()?),
                        other => {
                            return Err(de::Error::unknown_field(
                                other,
                                &["definite", "possible", "conditional"],
                            ))
                        }
                    }
                }
                Ok(out)
            }
        }
        deserializer.deserialize_any(V)
    }
}

// ------------------------------------------------------------------------------------------

impl Config {
    /// Parses a configuration file's text. `path` names the file in errors and anchors its
    /// relative paths (its folder).
    pub fn parse(path: &Path, text: &str) -> Result<Config, ConfigError> {
        let error = |span: Option<Range<usize>>, message: String, help: Option<&str>| ConfigError {
            path: path.to_path_buf(),
            text: Arc::from(text),
            span,
            message,
            help: help.map(str::to_string),
        };
        let raw: RawConfig = toml::from_str(text).map_err(|e| {
            let message = e.message().trim().to_string();
            let help = allowed_here(&message);
            error(e.span(), message, help)
        })?;
        let dir = path.parent().unwrap_or(Path::new(""));
        let mut config = Config {
            path: Some(path.to_path_buf()),
            fail_on: raw.fail_on,
            allow_same_value_writes: raw.allow_same_value_writes.unwrap_or(false),
            ..Config::default()
        };
        if let Some(launch) = raw.launch {
            config.launch = launch_of(&launch.block_dim, &launch.grid_dim)
                .map_err(|(span, m)| error(Some(span), m, Some(DIMS_HELP)))?;
        }
        for k in raw.kernel {
            let pattern = k.name.get_ref().clone();
            let matcher = kernel_glob(&pattern)
                .map_err(|m| error(Some(k.name.span()), m, Some(KERNEL_HELP)))?;
            let launch = launch_of(&k.block_dim, &k.grid_dim)
                .map_err(|(span, m)| error(Some(span), m, Some(DIMS_HELP)))?;
            config.kernels.push(KernelEntry {
                pattern,
                matcher,
                launch,
            });
        }
        if let Some(frontend) = raw.frontend {
            config.include_dirs = frontend.include.iter().map(|p| dir.join(p)).collect();
            config.compile_commands = frontend.compile_commands.map(|p| dir.join(p));
            config.system_includes = frontend.system_includes.unwrap_or(false);
            for d in &frontend.define {
                let define = parse_define(d.get_ref())
                    .map_err(|m| error(Some(d.span()), m, Some(DEFINE_HELP)))?;
                config.defines.push(define);
            }
        }
        if let Some(solver) = raw.solver {
            for (value, name) in [
                (&solver.timeout_ms, "timeout-ms"),
                (&solver.kernel_timeout_ms, "kernel-timeout-ms"),
                (&solver.file_timeout_ms, "file-timeout-ms"),
            ] {
                if let Some(v) = value {
                    if *v.get_ref() == 0 || *v.get_ref() > 86_400_000 {
                        return Err(error(
                            Some(v.span()),
                            format!("`{name}` must be between 1 and 86400000 milliseconds"),
                            None,
                        ));
                    }
                }
            }
            config.timeout_ms = solver.timeout_ms.map(|v| *v.get_ref());
            config.kernel_timeout_ms = solver.kernel_timeout_ms.map(|v| *v.get_ref());
            config.file_timeout_ms = solver.file_timeout_ms.map(|v| *v.get_ref());
            config.grid_checks = solver.grid_checks;
        }
        if let Some(a) = raw.assumptions {
            let d = cudarace_check::assumptions::AssumptionSwitches::default();
            config.assumptions = cudarace_check::assumptions::AssumptionSwitches {
                positive_sizes: a.positive_sizes.unwrap_or(d.positive_sizes),
                non_negative_indices: a.non_negative_indices.unwrap_or(d.non_negative_indices),
                shared_in_bounds: a.shared_in_bounds.unwrap_or(d.shared_in_bounds),
                single_block_without_launch: a
                    .single_block_without_launch
                    .unwrap_or(d.single_block_without_launch),
                leading_dimensions: a.leading_dimensions.unwrap_or(d.leading_dimensions),
                launch_shape_without_launch: a
                    .launch_shape_without_launch
                    .unwrap_or(d.launch_shape_without_launch),
                constant_block_shape: a.constant_block_shape.unwrap_or(d.constant_block_shape),
                unread_block_dimensions: a
                    .unread_block_dimensions
                    .unwrap_or(d.unread_block_dimensions),
                warp_sized_blocks: a.warp_sized_blocks.unwrap_or(d.warp_sized_blocks),
                one_to_one_thread_ids: a.one_to_one_thread_ids.unwrap_or(d.one_to_one_thread_ids),
                whole_stretches: a.whole_stretches.unwrap_or(d.whole_stretches),
                divisible_sizes: a.divisible_sizes.unwrap_or(d.divisible_sizes),
            };
        }
        if let Some(l) = raw.library {
            let paths: Vec<PathBuf> = l.files.iter().map(|p| dir.join(p.get_ref())).collect();
            for (p, raw_path) in paths.iter().zip(&l.files) {
                if !p.is_file() {
                    return Err(error(
                        Some(raw_path.span()),
                        format!("library file `{}` not found", p.display()),
                        Some("paths are relative to the folder of cudarace.toml"),
                    ));
                }
            }
            // An error inside a library file names that file and its line.
            let lib =
                cudarace_library::Library::with_user_files(&paths).map_err(|e| ConfigError {
                    path: e.path.clone(),
                    text: e.text.clone(),
                    span: e.span.clone(),
                    message: e.message.clone(),
                    help: Some("see docs/library.md for the format".into()),
                })?;
            config.library = Some(Arc::new(lib));
        }
        if let Some(s) = raw.severity {
            config.severity = Severities {
                data_race: s.data_race.unwrap_or_default(),
                barrier_divergence: s.barrier_divergence.unwrap_or_default(),
                unverified: s.unverified,
                unused_suppression: s.unused_suppression,
            };
        }
        let mut set = GlobSetBuilder::new();
        for g in &raw.exclude {
            let glob = Glob::new(g.get_ref()).map_err(|e| {
                error(
                    Some(g.span()),
                    format!("invalid glob `{}`: {}", g.get_ref(), e.kind()),
                    Some(EXCLUDE_HELP),
                )
            })?;
            set.add(glob);
            config.exclude.push(g.get_ref().clone());
        }
        if !config.exclude.is_empty() {
            config.exclude_set = set.build().ok();
        }
        Ok(config)
    }

    /// Reads and parses a configuration file.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError {
            path: path.to_path_buf(),
            text: Arc::from(""),
            span: None,
            message: format!("cannot read the configuration file: {e}"),
            help: None,
        })?;
        Config::parse(path, &text)
    }

    /// The `cudarace.toml` that applies to `file`: in its folder or the nearest folder above.
    pub fn discover(file: &Path) -> Option<PathBuf> {
        let absolute = if file.is_absolute() {
            file.to_path_buf()
        } else {
            std::env::current_dir().ok()?.join(file)
        };
        let start = if absolute.is_dir() {
            absolute.as_path()
        } else {
            absolute.parent()?
        };
        start
            .ancestors()
            .map(|dir| dir.join(CONFIG_FILE_NAME))
            .find(|candidate| candidate.is_file())
    }

    /// The launch sizes this file gives a kernel: its `[[kernel]]` entry (the one naming it
    /// exactly, else the first glob matching it) over `[launch]`, per dimension.
    pub fn launch_for(&self, kernel: &str) -> LaunchConfig {
        let entry = self
            .kernels
            .iter()
            .find(|k| k.pattern == kernel)
            .or_else(|| self.kernels.iter().find(|k| k.matcher.is_match(kernel)));
        match entry {
            Some(k) => layer(k.launch, self.launch),
            None => self.launch,
        }
    }

    /// Whether `file` matches an `exclude` glob (relative to the configuration file's folder;
    /// a glob also matches the path as given).
    pub fn is_excluded(&self, file: &Path) -> bool {
        let Some(set) = &self.exclude_set else {
            return false;
        };
        if set.is_match(file) {
            return true;
        }
        let dir = self.path.as_deref().and_then(Path::parent);
        let absolute = match (file.is_absolute(), std::env::current_dir()) {
            (true, _) => file.to_path_buf(),
            (false, Ok(cwd)) => cwd.join(file),
            (false, Err(_)) => return false,
        };
        let dir_abs = dir.map(|d| match (d.is_absolute(), std::env::current_dir()) {
            (false, Ok(cwd)) => cwd.join(d),
            _ => d.to_path_buf(),
        });
        match dir_abs.and_then(|d| {
            absolute
                .strip_prefix(normalize(&d))
                .ok()
                .map(Path::to_path_buf)
        }) {
            Some(rel) => set.is_match(rel),
            None => false,
        }
    }

    /// Applies the file's front-end options, solver limits and same-value setting to `opts`,
    /// over what a compilation database gave (apply that first) and under the command line's
    /// flags (apply those after; see [`crate::layers`]). The launch sizes are applied per kernel
    /// by the driver ([`kernel_check_options`]).
    pub fn apply(self: &Arc<Self>, opts: &mut Options) {
        // Include folders are searched in order (first found wins): these before the
        // database's. Definitions: the last one wins, so these after the database's, and a
        // database's `-U` does not remove them.
        let mut include_dirs = self.include_dirs.clone();
        include_dirs.append(&mut opts.frontend.include_dirs);
        opts.frontend.include_dirs = include_dirs;
        opts.frontend.defines.extend(self.defines.iter().cloned());
        opts.frontend
            .undefines
            .retain(|u| !self.defines.iter().any(|(name, _)| name == u));
        if self.library.is_some() {
            opts.frontend.library = self.library.clone();
        }
        if let Some(ms) = self.timeout_ms {
            set_timeout(&mut opts.check.limits, ms);
        }
        if let Some(ms) = self.kernel_timeout_ms {
            opts.budget.kernel_time = Duration::from_millis(ms);
        }
        if let Some(ms) = self.file_timeout_ms {
            opts.budget.file_time = Duration::from_millis(ms);
        }
        if let Some(g) = self.grid_checks {
            opts.check.grid_checks = g;
        }
        opts.check.assumptions = self.assumptions;
        opts.config = self.clone();
    }
}

/// Sets a solver time limit and keeps the resource limit proportional to it (the default pair
/// is 2000 ms and 10M): with Debian's Z3 4.8.12 the rlimit is the bound that is always honoured.
pub fn set_timeout(limits: &mut cudarace_solver::Limits, timeout_ms: u64) {
    let default = cudarace_solver::Limits::default();
    limits.timeout_ms = timeout_ms;
    limits.rlimit = (default.rlimit as u128 * timeout_ms as u128
        / default.timeout_ms.max(1) as u128)
        .clamp(1, u64::MAX as u128) as u64;
}

/// `.` and `..` removed lexically (paths from the command line may contain them).
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// Each dimension from `strong` where it is set, else from `weak`.
pub fn layer(strong: LaunchConfig, weak: LaunchConfig) -> LaunchConfig {
    let pick =
        |s: [Option<u64>; 3], w: [Option<u64>; 3]| [s[0].or(w[0]), s[1].or(w[1]), s[2].or(w[2])];
    LaunchConfig {
        block_dim: pick(strong.block_dim, weak.block_dim),
        grid_dim: pick(strong.grid_dim, weak.grid_dim),
    }
}

/// The check options of one kernel: the launch override of `opts` (command line / editor
/// settings) over the configuration's sizes for that kernel. The driver and the language
/// server both plan kernels with these.
pub fn kernel_check_options<'a>(
    opts: &'a Options,
    kernel: &Kernel,
) -> Cow<'a, cudarace_check::CheckOptions> {
    let from_config = opts.config.launch_for(kernel.base_name());
    if from_config.is_empty() {
        return Cow::Borrowed(&opts.check);
    }
    let mut check = opts.check.clone();
    check.launch_override = layer(opts.check.launch_override, from_config);
    Cow::Owned(check)
}

const DIMS_HELP: &str = "expected one to three positive sizes, like [256] or [16, 16]; a block has at most 1024 threads (x, y ≤ 1024, z ≤ 64), a grid at most (2^31 - 1) × 65535 × 65535";
const KERNEL_HELP: &str = "`name` is a kernel name or a glob over kernel names (`*`, `?`, `[abc]`)";
const DEFINE_HELP: &str = "expected `NAME` or `NAME=VALUE`, like \"TILE=16\"";
const EXCLUDE_HELP: &str =
    "globs are relative to the folder of cudarace.toml, like \"third_party/**\"";

/// What is allowed where toml/serde's own message does not say it.
fn allowed_here(message: &str) -> Option<&'static str> {
    if message.contains("unknown field") || message.contains("unknown variant") {
        // serde's message already lists what is allowed.
        None
    } else if message.contains("expected a sequence") || message.contains("u64") {
        Some(DIMS_HELP)
    } else if message.contains("wanted string or table") {
        Some("expected a level: \"error\", \"warning\", \"info\" or \"off\"")
    } else {
        None
    }
}

fn kernel_glob(pattern: &str) -> Result<GlobMatcher, String> {
    if pattern.is_empty() {
        return Err("a kernel `name` must not be empty".to_string());
    }
    GlobBuilder::new(pattern)
        .literal_separator(false)
        .build()
        .map(|g| g.compile_matcher())
        .map_err(|e| format!("invalid kernel name glob `{pattern}`: {}", e.kind()))
}

type SpannedError = (Range<usize>, String);

fn dims(v: &Spanned<Vec<u64>>, block: bool) -> Result<[Option<u64>; 3], SpannedError> {
    let d = v.get_ref();
    let what = if block { "block-dim" } else { "grid-dim" };
    let err = |m: String| (v.span(), m);
    if d.is_empty() || d.len() > 3 {
        return Err(err(format!(
            "`{what}` needs one to three sizes, not {}",
            d.len()
        )));
    }
    if d.contains(&0) {
        return Err(err(format!("`{what}` sizes must be at least 1")));
    }
    let mut out = [Some(1); 3];
    for (slot, v) in out.iter_mut().zip(d) {
        *slot = Some(*v);
    }
    let [x, y, z] = [
        out[0].unwrap_or(1),
        out[1].unwrap_or(1),
        out[2].unwrap_or(1),
    ];
    if block {
        if x > 1024 || y > 1024 || z > 64 {
            return Err(err("a block is at most 1024 × 1024 × 64".to_string()));
        }
        if x * y * z > 1024 {
            return Err(err(format!(
                "a block has at most 1024 threads, not {}",
                x * y * z
            )));
        }
    } else if x >= 1 << 31 || y > 65535 || z > 65535 {
        return Err(err(
            "a grid is at most (2^31 - 1) × 65535 × 65535".to_string()
        ));
    }
    Ok(out)
}

fn launch_of(
    block: &Option<Spanned<Vec<u64>>>,
    grid: &Option<Spanned<Vec<u64>>>,
) -> Result<LaunchConfig, SpannedError> {
    let mut launch = LaunchConfig::default();
    if let Some(b) = block {
        launch.block_dim = dims(b, true)?;
    }
    if let Some(g) = grid {
        launch.grid_dim = dims(g, false)?;
    }
    Ok(launch)
}

/// `NAME=VALUE` or `NAME` (defined as `1`).
fn parse_define(s: &str) -> Result<(String, String), String> {
    let (name, value) = match s.split_once('=') {
        Some((n, v)) => (n.trim(), v.trim()),
        None => (s.trim(), "1"),
    };
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

    fn parse(text: &str) -> Result<Config, ConfigError> {
        Config::parse(Path::new("proj/cudarace.toml"), text)
    }

    #[test]
    fn the_documented_example_parses() {
        let c = parse(
            r#"
exclude = ["third_party/**"]
fail-on = "error"
allow-same-value-writes = true

[launch]
block-dim = [256]
grid-dim = [64]

[[kernel]]
name = "reduce_*"
block-dim = [128]

[[kernel]]
name = "reduce_final"
grid-dim = [1]

[frontend]
include = ["include"]
define = ["TILE=16", "DEBUG"]
compile-commands = "build/compile_commands.json"
system-includes = true

[solver]
timeout-ms = 500
kernel-timeout-ms = 9000
grid-checks = false

[severity]
data-race = { definite = "error", possible = "info" }
barrier-divergence = "warning"
unverified = "off"
unused-suppression = "error"
"#,
        )
        .unwrap();
        assert_eq!(c.fail_on, Some(Level::Error));
        assert!(c.allow_same_value_writes);
        assert_eq!(c.launch.block_dim, [Some(256), Some(1), Some(1)]);
        // A glob entry layered over [launch].
        let r = c.launch_for("reduce_rows");
        assert_eq!(r.block_dim, [Some(128), Some(1), Some(1)]);
        assert_eq!(r.grid_dim, [Some(64), Some(1), Some(1)]);
        // The exact name wins over the glob listed before it.
        let f = c.launch_for("reduce_final");
        assert_eq!(f.block_dim, [Some(256), Some(1), Some(1)]);
        assert_eq!(f.grid_dim, [Some(1), Some(1), Some(1)]);
        assert_eq!(c.launch_for("other"), c.launch);
        assert_eq!(c.include_dirs, vec![PathBuf::from("proj/include")]);
        assert_eq!(
            c.compile_commands,
            Some(PathBuf::from("proj/build/compile_commands.json"))
        );
        assert!(c.system_includes);
        assert_eq!(
            c.defines,
            vec![("TILE".into(), "16".into()), ("DEBUG".into(), "1".into())]
        );
        assert_eq!(
            (c.timeout_ms, c.kernel_timeout_ms, c.grid_checks),
            (Some(500), Some(9000), Some(false))
        );
        let s = c.severity;
        assert_eq!(
            s.level(FindingKind::DataRace, Confidence::Possible),
            Level::Info
        );
        assert_eq!(
            s.level(FindingKind::BarrierDivergence, Confidence::Definite),
            Level::Warning
        );
        assert_eq!(s.unverified_level(), Level::Off);
        assert_eq!(s.unused_suppression_level(), Level::Error);
        assert!(c.is_excluded(Path::new("proj/third_party/x/k.cu")));
        assert!(!c.is_excluded(Path::new("proj/src/k.cu")));
    }

    #[test]
    fn empty_file_is_the_defaults() {
        let c = parse("").unwrap();
        assert!(c.launch.is_empty() && c.kernels.is_empty());
        assert!(!c.system_includes && c.compile_commands.is_none());
        assert_eq!(
            c.severity
                .level(FindingKind::DataRace, Confidence::Definite),
            Level::Error
        );
        assert_eq!(
            c.severity
                .level(FindingKind::BarrierDivergence, Confidence::Possible),
            Level::Warning
        );
        assert_eq!(c.severity.unverified_level(), Level::Warning);
        assert!(!c.is_excluded(Path::new("a.cu")));
    }

    #[test]
    fn layering_is_per_dimension() {
        let strong = LaunchConfig {
            block_dim: [Some(32), None, None],
            grid_dim: [None; 3],
        };
        let weak = LaunchConfig {
            block_dim: [Some(64), Some(2), None],
            grid_dim: [Some(8), None, None],
        };
        let l = layer(strong, weak);
        assert_eq!(l.block_dim, [Some(32), Some(2), None]);
        assert_eq!(l.grid_dim, [Some(8), None, None]);
    }

    #[test]
    fn errors_name_the_line() {
        let e = parse("[launch]\nblock-dim = [2048]\n").unwrap_err();
        assert_eq!(e.line(), 2);
        assert!(e
            .to_string()
            .starts_with("proj/cudarace.toml:2: a block is at most"));
    }
}
