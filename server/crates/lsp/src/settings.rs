//! Editor settings, from `initializationOptions` and `workspace/didChangeConfiguration`.
//!
//! Accepted either bare or under a `cudarace` key (VS Code sends `{"cudarace": {...}}`):
//! ```json
//! { "blockDim": [256], "gridDim": [64, 1, 1], "possibleSeverity": "information",
//!   "timeoutMs": 2000, "workers": 2, "gridChecks": true, "logLevel": "info",
//!   "includeDirs": ["/path/include"], "defines": ["TILE=16", "DEBUG"],
//!   "compileCommands": "/path/build/compile_commands.json", "systemIncludes": false }
//! ```

use crate::pipeline::{CheckOptions, Options};
use cudarace_analysis::compile_db::Flags;
use cudarace_analysis::config::{set_timeout, Config};
use cudarace_analysis::db_cache::DbCache;
use cudarace_analysis::layers::{layered_options, UserFlags};
use cudarace_ir::LaunchConfig;
use serde::Deserialize;
use serde_json::Value;
use std::path::PathBuf;
use std::sync::Arc;
use tower_lsp_server::ls_types::DiagnosticSeverity;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum SeverityName {
    Error,
    Warning,
    #[default]
    Information,
    Hint,
}

impl SeverityName {
    pub fn lsp(self) -> DiagnosticSeverity {
        match self {
            SeverityName::Error => DiagnosticSeverity::ERROR,
            SeverityName::Warning => DiagnosticSeverity::WARNING,
            SeverityName::Information => DiagnosticSeverity::INFORMATION,
            SeverityName::Hint => DiagnosticSeverity::HINT,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Settings {
    /// Launch sizes assumed for every kernel (strongest source); up to 3 dims, missing ones stay
    /// symbolic. `null`/absent: symbolic (narrowed by annotations and launch sites in the file).
    pub block_dim: Option<Vec<u64>>,
    pub grid_dim: Option<Vec<u64>>,
    /// Severity of findings that depend on an unknown value.
    pub possible_severity: SeverityName,
    /// Per solver call; absent: cudarace.toml's `[solver] timeout-ms`, else 2000.
    pub timeout_ms: Option<u64>,
    /// Solver worker threads; default: available cores.
    pub workers: Option<usize>,
    /// Cross-block checks of global memory; absent: cudarace.toml's, else on.
    pub grid_checks: Option<bool>,
    /// `tracing` filter for the server's stderr log (e.g. `info`, `cudarace_lsp=debug`).
    pub log_level: Option<String>,
    /// Like a compiler's `-I`: searched for `#include "…"` after the file's own directory.
    pub include_dirs: Vec<PathBuf>,
    /// Like a compiler's `-D`: `NAME=VALUE` or `NAME` (which defines it as `1`).
    pub defines: Vec<String>,
    /// The compilation database (`compile_commands.json` or its folder) whose flags each file
    /// gets; absent: cudarace.toml's `[frontend] compile-commands`, else one found from the file.
    pub compile_commands: Option<PathBuf>,
    /// The CUDA toolkit's include folders for `#include <…>`; absent: cudarace.toml's
    /// `[frontend] system-includes`, else off.
    pub system_includes: Option<bool>,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            block_dim: None,
            grid_dim: None,
            possible_severity: SeverityName::Information,
            timeout_ms: None,
            workers: None,
            grid_checks: None,
            log_level: None,
            include_dirs: vec![],
            defines: vec![],
            compile_commands: None,
            system_includes: None,
        }
    }
}

impl Settings {
    /// Reads settings from a JSON value (bare or under `cudarace`). `null` gives the defaults.
    pub fn from_json(value: &Value) -> Result<Settings, String> {
        let value = match value.get("cudarace") {
            Some(inner) => inner,
            None => value,
        };
        if value.is_null() {
            return Ok(Settings::default());
        }
        let settings: Settings = serde_json::from_value(value.clone())
            .map_err(|e| format!("invalid cudarace settings: {e}"))?;
        settings.validate()?;
        Ok(settings)
    }

    fn validate(&self) -> Result<(), String> {
        for (name, dims) in [("blockDim", &self.block_dim), ("gridDim", &self.grid_dim)] {
            if let Some(dims) = dims {
                if dims.is_empty() || dims.len() > 3 || dims.contains(&0) {
                    return Err(format!(
                        "invalid cudarace settings: {name} must have 1 to 3 positive sizes"
                    ));
                }
            }
        }
        if self.workers == Some(0) {
            return Err("invalid cudarace settings: workers must be at least 1".into());
        }
        if self
            .defines
            .iter()
            .any(|d| d.split('=').next().is_none_or(|n| n.trim().is_empty()))
        {
            return Err("invalid cudarace settings: a define needs a name".into());
        }
        if self.timeout_ms == Some(0) {
            return Err("invalid cudarace settings: timeoutMs must be positive".into());
        }
        Ok(())
    }

    /// Worker threads for the solver pool: the setting, else the available cores, at least 1.
    pub fn worker_count(&self) -> usize {
        self.workers
            .unwrap_or_else(|| {
                std::thread::available_parallelism()
                    .map(|n| n.get())
                    .unwrap_or(1)
            })
            .max(1)
    }

    pub fn launch_override(&self) -> LaunchConfig {
        fn dims(v: &Option<Vec<u64>>) -> [Option<u64>; 3] {
            let mut out = [None; 3];
            if let Some(v) = v {
                for (slot, d) in out.iter_mut().zip(v) {
                    *slot = Some(*d);
                }
                // A dimension the setting leaves out of a given list is 1 (`[256]` is 1-D).
                for slot in out.iter_mut().skip(v.len()) {
                    *slot = Some(1);
                }
            }
            out
        }
        LaunchConfig {
            block_dim: dims(&self.block_dim),
            grid_dim: dims(&self.grid_dim),
        }
    }

    /// The check options from these settings alone (no configuration file).
    pub fn check_options(&self) -> CheckOptions {
        self.options().check
    }

    /// The options from these settings alone (no configuration file).
    pub fn options(&self) -> Options {
        self.options_with(&Arc::new(Config::default()))
    }

    /// The options of a document checked with `config` (its workspace's `cudarace.toml`): the
    /// configuration's, then these settings over them (the editor's settings are stronger,
    /// like the command line's flags).
    pub fn options_with(&self, config: &Arc<Config>) -> Options {
        self.options_with_flags(config, None)
    }

    /// The options of a document at `path` checked with `config`: these settings over the
    /// configuration over the flags its compilation database gives it (read through
    /// `databases`).
    pub fn options_for(
        &self,
        path: Option<&std::path::Path>,
        config: &Arc<Config>,
        databases: &mut DbCache,
    ) -> Options {
        let flags = path.and_then(|p| databases.flags(self.compile_commands.as_deref(), config, p));
        self.options_with_flags(config, flags.as_ref())
    }

    /// The options of a file compiled with `flags` (from a compilation database), checked with
    /// `config`.
    pub fn options_with_flags(&self, config: &Arc<Config>, flags: Option<&Flags>) -> Options {
        let defines: Vec<(String, String)> = self
            .defines
            .iter()
            .map(|d| match d.split_once('=') {
                Some((name, value)) => (name.trim().to_string(), value.trim().to_string()),
                None => (d.trim().to_string(), "1".to_string()),
            })
            .collect();
        // The editor's settings over the configuration's over the database's, as on the
        // command line.
        let user = UserFlags {
            include_dirs: &self.include_dirs,
            defines: &defines,
        };
        let mut opts = layered_options(config, flags, user);
        opts.check.launch_override = self.launch_override();
        if let Some(ms) = self.timeout_ms {
            set_timeout(&mut opts.check.limits, ms);
        }
        if let Some(g) = self.grid_checks {
            opts.check.grid_checks = g;
        }
        if self.system_includes.unwrap_or(config.system_includes) {
            cudarace_analysis::system_includes::add_to(&mut opts);
        }
        opts
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn defaults_when_absent() {
        let s = Settings::from_json(&Value::Null).unwrap();
        assert_eq!(s, Settings::default());
        assert!(s.worker_count() >= 1);
        assert!(s.launch_override().is_empty());
        assert!(s.check_options().grid_checks);
        assert_eq!(s.possible_severity.lsp(), DiagnosticSeverity::INFORMATION);
    }

    #[test]
    fn nested_and_bare_forms() {
        let v = json!({"cudarace": {"blockDim": [256], "possibleSeverity": "warning", "workers": 3,
                                     "gridChecks": false, "timeoutMs": 500}});
        let s = Settings::from_json(&v).unwrap();
        assert_eq!(s.launch_override().block_dim, [Some(256), Some(1), Some(1)]);
        assert_eq!(s.launch_override().grid_dim, [None, None, None]);
        assert_eq!(s.possible_severity, SeverityName::Warning);
        assert_eq!(s.worker_count(), 3);
        let opts = s.check_options();
        assert!(!opts.grid_checks);
        assert_eq!(opts.limits.timeout_ms, 500);
        let bare = Settings::from_json(&json!({"gridDim": [4, 2], "defines": ["TILE=16", "DEBUG"],
                                               "includeDirs": ["/inc"]}))
        .unwrap();
        let frontend = bare.options().frontend;
        assert_eq!(
            frontend.defines,
            vec![
                ("TILE".to_string(), "16".to_string()),
                ("DEBUG".to_string(), "1".to_string())
            ]
        );
        assert_eq!(frontend.include_dirs, vec![PathBuf::from("/inc")]);
        assert_eq!(bare.launch_override().grid_dim, [Some(4), Some(2), Some(1)]);
    }

    #[test]
    fn editor_settings_are_stronger_than_cudarace_toml() {
        let config = Arc::new(
            Config::parse(
                std::path::Path::new("/p/cudarace.toml"),
                "[launch]\nblock-dim = [128]\ngrid-dim = [8]\n[frontend]\ninclude = [\"inc\"]\ndefine = [\"A=1\"]\n[solver]\ntimeout-ms = 700\ngrid-checks = false\n",
            )
            .unwrap(),
        );
        // Nothing set in the editor: the file's values.
        let opts = Settings::default().options_with(&config);
        assert_eq!(opts.check.limits.timeout_ms, 700);
        assert!(!opts.check.grid_checks);
        assert_eq!(opts.frontend.include_dirs, vec![PathBuf::from("/p/inc")]);
        assert!(opts.config.launch_for("k").block_dim[0] == Some(128));
        // The launch sizes of the file are per kernel (applied when planning), not an override.
        assert!(opts.check.launch_override.is_empty());
        // Editor settings win where they are set, and add to the file's lists.
        let s = Settings::from_json(
            &json!({"timeoutMs": 300, "gridChecks": true, "blockDim": [32],
                                            "includeDirs": ["/e"], "defines": ["B"]}),
        )
        .unwrap();
        let opts = s.options_with(&config);
        assert_eq!(opts.check.limits.timeout_ms, 300);
        assert!(opts.check.grid_checks);
        assert_eq!(
            opts.check.launch_override.block_dim,
            [Some(32), Some(1), Some(1)]
        );
        // The editor's include folders are searched first.
        assert_eq!(
            opts.frontend.include_dirs,
            vec![PathBuf::from("/e"), PathBuf::from("/p/inc")]
        );
        assert_eq!(opts.frontend.defines.len(), 2);
    }

    #[test]
    fn invalid_values_are_rejected_with_a_message() {
        assert!(Settings::from_json(&json!({"workers": 0})).is_err());
        assert!(Settings::from_json(&json!({"blockDim": [0]})).is_err());
        assert!(Settings::from_json(&json!({"blockDim": [1, 2, 3, 4]})).is_err());
        assert!(Settings::from_json(&json!({"possibleSeverity": "loud"})).is_err());
        assert!(Settings::from_json(&json!({"timeoutMs": "fast"})).is_err());
        assert!(Settings::from_json(&json!({"defines": ["=3"]})).is_err());
    }

    #[test]
    fn compile_commands_setting_gives_each_file_its_flags() {
        let dir = std::env::temp_dir().join(format!("cudarace-lsp-db-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("temp dir");
        let db = dir.join("flags.json");
        let text = format!(
            r#"[{{"directory": "{}", "file": "k.cu", "command": "nvcc -I inc -DTILE=8 -c k.cu"}}]"#,
            dir.display()
        );
        std::fs::write(&db, text).expect("write");
        let s = Settings::from_json(&json!({"compileCommands": db, "defines": ["EDITOR"],
                                             "systemIncludes": false}))
        .unwrap();
        assert_eq!(s.compile_commands.as_deref(), Some(db.as_path()));
        assert_eq!(s.system_includes, Some(false));
        let mut databases = DbCache::default();
        let config = Arc::new(Config::default());
        let opts = s.options_for(Some(&dir.join("k.cu")), &config, &mut databases);
        assert_eq!(opts.frontend.include_dirs, [dir.join("inc")]);
        let names: Vec<&str> = opts
            .frontend
            .defines
            .iter()
            .map(|(n, _)| n.as_str())
            .collect();
        // The database's flags, then the editor's.
        assert_eq!(names, ["TILE", "EDITOR"]);
        // Without a path (an unsaved buffer): no database.
        let opts = s.options_for(None, &config, &mut databases);
        assert!(opts.frontend.include_dirs.is_empty());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
