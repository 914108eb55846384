//! The driver (source text → kernel reports, with file limits, a time budget per kernel and
//! isolation of internal errors) and the renderers of those reports (human, JSON, SARIF).

pub mod compile_db;
pub mod config;
mod crash;
pub mod db_cache;
mod driver;
pub mod launch_index;
pub mod layers;
pub mod render;
mod report;
pub mod siblings;
pub mod suppress;
pub mod system_includes;

pub use config::{kernel_check_options, Config, ConfigError, Level, CONFIG_FILE_NAME};
pub use crash::install_crash_reports;
pub use driver::{
    analyze_ir, analyze_kernel, analyze_path, analyze_source, collect_paths, decode_text,
    read_source, Budget, Options, DEFAULT_KERNEL_TIME, DEFAULT_MAX_FILE_BYTES,
};
pub use report::{drop_repeated_header_kernels, FileReport, Summary};

// The option types of the stages, so that users of this crate need not depend on them.
pub use cudarace_check::assumptions::AssumptionSwitches;
pub use cudarace_check::CheckOptions;
pub use cudarace_ir as ir;
pub use cudarace_solver::{exit_process, Limits, SolverPool};
pub use cudarace_syntax::{FrontendOptions, HeaderCache};
