//! The analysis core this server drives, in one place: every call into the syntax, check, solver
//! and analysis crates goes through these names, so the server holds no analysis logic itself.

pub use cudarace_analysis::config::{Config, ConfigError, Level, CONFIG_FILE_NAME};
pub use cudarace_analysis::suppress::{assess, Assessment, Notice, Suppression};
pub use cudarace_analysis::{kernel_check_options, Options};
pub use cudarace_check::{
    finish_kernel, plan_kernel, plan_kernel_until, race_cap, CheckOptions, KernelPlan,
};
pub use cudarace_solver::{Answer, CancelToken, Limits, Query, SolverPool};
pub use cudarace_syntax::{lower, parse, tree_sitter, FrontendOptions};
