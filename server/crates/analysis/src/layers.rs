//! Where a file's front-end options come from, strongest first: the command line's flags (in
//! the editor, its settings), `cudarace.toml`, the compilation database's flags for the file,
//! the defaults. The command line and the language server build their options here, so both
//! follow the same order.
//!
//! "Stronger" means: its include folders are searched first, its definition of a macro wins,
//! and a weaker layer's `-U` does not remove what it defines.

use crate::compile_db::Flags;
use crate::{Config, Options};
use std::path::PathBuf;
use std::sync::Arc;

/// The front-end flags given by the user directly (`-I`, `-D` on the command line; the
/// editor's `includeDirs` and `defines`).
#[derive(Debug, Clone, Copy, Default)]
pub struct UserFlags<'a> {
    pub include_dirs: &'a [PathBuf],
    pub defines: &'a [(String, String)],
}

/// The options of a file: the defaults, under the database's `flags`, under `config`, under
/// `user`'s flags.
pub fn layered_options(config: &Arc<Config>, flags: Option<&Flags>, user: UserFlags) -> Options {
    let mut opts = Options::default();
    if let Some(flags) = flags {
        flags.apply(&mut opts.frontend);
    }
    config.apply(&mut opts);
    let frontend = &mut opts.frontend;
    let mut include_dirs = user.include_dirs.to_vec();
    include_dirs.append(&mut frontend.include_dirs);
    frontend.include_dirs = include_dirs;
    frontend.defines.extend(user.defines.iter().cloned());
    frontend
        .undefines
        .retain(|u| !user.defines.iter().any(|(name, _)| name == u));
    opts
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compile_db::CompileDb;
    use std::path::Path;

    fn flags() -> Flags {
        let dir = std::env::temp_dir();
        let text = format!(
            r#"[{{"directory": "{}", "file": "k.cu", "command": "nvcc -Idb -DW=1 -DDB -UCFG -UCLI -c k.cu"}}]"#,
            dir.display()
        );
        let db = CompileDb::parse(&dir.join("compile_commands.json"), &text).expect("database");
        db.entries[0].flags.clone()
    }

    /// The value the preprocessor ends with for `name` (the last definition, unless undefined).
    fn value(opts: &Options, name: &str) -> Option<String> {
        if opts.frontend.undefines.iter().any(|u| u == name) {
            return None;
        }
        opts.frontend
            .defines
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
    }

    #[test]
    fn the_command_line_then_the_configuration_then_the_database_then_the_defaults() {
        let config = Arc::new(
            Config::parse(
                Path::new("/p/cudarace.toml"),
                "[frontend]\ninclude = [\"cfg\"]\ndefine = [\"W=2\", \"CFG\"]\n",
            )
            .expect("config"),
        );
        let cli_dirs = [PathBuf::from("/cli")];
        let cli_defines = [
            ("W".to_string(), "3".to_string()),
            ("CLI".into(), "1".into()),
        ];
        let user = UserFlags {
            include_dirs: &cli_dirs,
            defines: &cli_defines,
        };
        let flags = flags();
        let opts = layered_options(&config, Some(&flags), user);
        let dirs: Vec<String> = opts
            .frontend
            .include_dirs
            .iter()
            .map(|d| d.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(dirs, ["cli", "cfg", "db"]);
        assert_eq!(value(&opts, "W").as_deref(), Some("3"));
        assert_eq!(value(&opts, "DB").as_deref(), Some(""));
        // The database's -U removes neither the configuration's nor the command line's.
        assert!(value(&opts, "CFG").is_some());
        assert!(value(&opts, "CLI").is_some());
        // Without the command line: the configuration's value.
        let opts = layered_options(&config, Some(&flags), UserFlags::default());
        assert_eq!(value(&opts, "W").as_deref(), Some("2"));
        // Without the configuration either: the database's.
        let empty = Arc::new(Config::default());
        let opts = layered_options(&empty, Some(&flags), UserFlags::default());
        assert_eq!(value(&opts, "W").as_deref(), Some("1"));
        assert_eq!(value(&opts, "CFG"), None);
    }
}
