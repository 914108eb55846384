//! The compilation database of a file for a long-running caller (the language server): which
//! database applies (the editor's setting, else `[frontend] compile-commands`, else one found
//! next to the file, as on the command line), each read once and again when it changes on disk.
//! Problems with a database are logged as warnings (once per read); the file is then checked
//! without its flags.

use crate::compile_db::{absolute, CompileDb, Flags, DB_FILE_NAME};
use crate::Config;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

#[derive(Debug, Default)]
pub struct DbCache {
    loaded: HashMap<PathBuf, (Option<SystemTime>, Option<Arc<CompileDb>>)>,
}

impl DbCache {
    /// The flags of `file`: from `explicit` (a database or its folder), else the configuration's
    /// database, else one found from the file.
    pub fn flags(
        &mut self,
        explicit: Option<&Path>,
        config: &Config,
        file: &Path,
    ) -> Option<Flags> {
        let db = self.database(explicit, config, file)?;
        db.lookup(file).map(|(entry, _)| entry.flags.clone())
    }

    /// The database that applies to `file` (chosen as for [`DbCache::flags`]), if it can be
    /// read. The same `Arc` is returned until the database changes on disk.
    pub fn database(
        &mut self,
        explicit: Option<&Path>,
        config: &Config,
        file: &Path,
    ) -> Option<Arc<CompileDb>> {
        let path = match explicit.or(config.compile_commands.as_deref()) {
            Some(p) => {
                let p = absolute(p);
                if p.is_dir() {
                    p.join(DB_FILE_NAME)
                } else {
                    p
                }
            }
            None => CompileDb::discover(file)?,
        };
        self.load(&path)
    }

    fn load(&mut self, path: &Path) -> Option<Arc<CompileDb>> {
        let modified = std::fs::metadata(path).and_then(|m| m.modified()).ok();
        if let Some((when, db)) = self.loaded.get(path) {
            if *when == modified {
                return db.clone();
            }
        }
        let db = match CompileDb::load(path) {
            Ok(db) => {
                for w in db.warnings.iter().chain(db.stale_warning().as_ref()) {
                    tracing::warn!("{w}");
                }
                Some(Arc::new(db))
            }
            Err(e) => {
                tracing::warn!("{e}; files are checked without its flags");
                None
            }
        };
        self.loaded
            .insert(path.to_path_buf(), (modified, db.clone()));
        db
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn explicit_then_configured_then_found_and_reread_when_changed() {
        let dir = std::env::temp_dir().join(format!("cudarace-dbcache-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("build")).expect("temp dir");
        let file = dir.join("k.cu");
        let db = |path: &Path, flag: &str| {
            let text = format!(
                r#"[{{"directory": "{}", "file": "k.cu", "arguments": ["nvcc", "{flag}"]}}]"#,
                dir.display()
            );
            std::fs::write(path, text).expect("write");
        };
        db(&dir.join("build").join(DB_FILE_NAME), "-DFOUND");
        db(&dir.join("other.json"), "-DEXPLICIT");
        let mut cache = DbCache::default();
        let names = |f: Option<Flags>| -> Vec<String> {
            f.map(|f| f.defines.into_iter().map(|(n, _)| n).collect())
                .unwrap_or_default()
        };
        let config = Config::default();
        assert_eq!(names(cache.flags(None, &config, &file)), ["FOUND"]);
        let other = dir.join("other.json");
        assert_eq!(
            names(cache.flags(Some(&other), &config, &file)),
            ["EXPLICIT"]
        );
        let mut configured = Config::default();
        configured.compile_commands = Some(other.clone());
        assert_eq!(names(cache.flags(None, &configured, &file)), ["EXPLICIT"]);
        // Changed on disk: read again (the modification time moves forward).
        std::thread::sleep(std::time::Duration::from_millis(20));
        db(&dir.join("build").join(DB_FILE_NAME), "-DCHANGED");
        let later = SystemTime::now() + std::time::Duration::from_secs(5);
        let f = std::fs::File::options()
            .write(true)
            .open(dir.join("build").join(DB_FILE_NAME))
            .expect("open");
        f.set_modified(later).expect("set mtime");
        assert_eq!(names(cache.flags(None, &config, &file)), ["CHANGED"]);
        // A broken database: no flags, no panic.
        std::fs::write(&other, "{").expect("write");
        std::fs::File::options()
            .write(true)
            .open(&other)
            .and_then(|f| f.set_modified(later))
            .expect("set mtime");
        assert!(cache.flags(Some(&other), &config, &file).is_none());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
