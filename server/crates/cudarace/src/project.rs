//! Compilation databases in `cudarace check`: which database applies to each file (the
//! `--compile-commands` flag, `[frontend] compile-commands`, else one found next to the file),
//! the translation units to check when no file is named, and the launch index of each database
//! (the launch sites of all its `.cu` files, so a kernel in a header is checked under the sites
//! of every file that launches it, and a header is checked with the flags of the first unit
//! that includes it, else those of the nearest entry).
//!
//! A database that cannot be read, or whose entries are malformed, is a warning on stderr (once
//! per database); the files are then checked without its flags.

use cudarace_analysis::compile_db::{CompileDb, Flags, Match};
use cudarace_analysis::launch_index::{unit_sites, LaunchIndex, UnitSites};
use cudarace_analysis::Config;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The databases met so far, each read once.
pub struct Databases {
    explicit: Option<PathBuf>,
    disabled: bool,
    loaded: HashMap<PathBuf, Option<Arc<CompileDb>>>,
}

impl Databases {
    pub fn new(explicit: Option<&Path>, disabled: bool) -> Databases {
        Databases {
            explicit: explicit.map(db_file),
            disabled,
            loaded: HashMap::new(),
        }
    }

    /// The `.cu` files of the `--compile-commands` database, when no file was named. Files it
    /// names that do not exist are skipped with a warning.
    pub fn units(&mut self) -> Result<Vec<PathBuf>, String> {
        let Some(path) = self.explicit.clone() else {
            return Err("no files to check".into());
        };
        let db = CompileDb::load(&path)?;
        report_warnings(&db);
        let all = db.cuda_units();
        let (units, missing): (Vec<PathBuf>, Vec<PathBuf>) =
            all.iter().cloned().partition(|p| p.is_file());
        if !missing.is_empty() && db.stale_warning().is_none() {
            eprintln!(
                "cudarace: warning: {}: {} of its .cu files do not exist (first: {}); not checked",
                path.display(),
                missing.len(),
                missing[0].display()
            );
        }
        self.loaded.insert(path.clone(), Some(Arc::new(db)));
        if units.is_empty() {
            return Err(format!(
                "{}: no CUDA translation unit (.cu file) to check",
                path.display()
            ));
        }
        Ok(units)
    }

    /// The database that applies to `file` checked with `config`.
    pub fn for_file(&mut self, file: &Path, config: &Config) -> Option<Arc<CompileDb>> {
        if self.disabled {
            return None;
        }
        let path = match (&self.explicit, &config.compile_commands) {
            (Some(p), _) => p.clone(),
            (None, Some(p)) => db_file(p),
            (None, None) => CompileDb::discover(file)?,
        };
        if let Some(db) = self.loaded.get(&path) {
            return db.clone();
        }
        let db = match CompileDb::load(&path) {
            Ok(db) => {
                report_warnings(&db);
                Some(Arc::new(db))
            }
            Err(e) => {
                eprintln!("cudarace: warning: {e}; files are checked without its flags");
                None
            }
        };
        self.loaded.insert(path, db.clone());
        db
    }
}

/// The flags `db` gives `file` (none when it has no entry near it).
pub fn flags_for<'d>(db: Option<&'d CompileDb>, file: &Path) -> Option<&'d Flags> {
    let (entry, how) = db?.lookup(file)?;
    if how == Match::Nearest {
        tracing::info!(
            file = %file.display(),
            entry = %entry.file.display(),
            "no entry compiles this file; using the flags of the nearest entry"
        );
    }
    Some(&entry.flags)
}

/// The launch index of a database: the sites of its `.cu` files (`units`, each with the options
/// it is compiled with), `jobs` files at a time.
pub fn launch_index(units: &[(PathBuf, cudarace_analysis::Options)], jobs: usize) -> LaunchIndex {
    use rayon::prelude::*;
    let one = |(unit, opts): &(PathBuf, cudarace_analysis::Options)| -> UnitSites {
        unit_sites(unit, &opts.frontend, opts.budget.max_file_bytes)
    };
    let sites: Vec<UnitSites> = match rayon::ThreadPoolBuilder::new()
        .num_threads(jobs.max(1))
        .build()
    {
        Ok(pool) => pool.install(|| units.par_iter().map(one).collect()),
        Err(_) => units.iter().map(one).collect(),
    };
    LaunchIndex::from_units(sites)
}

fn report_warnings(db: &CompileDb) {
    for w in &db.warnings {
        eprintln!("cudarace: warning: {w}");
    }
    if let Some(w) = db.stale_warning() {
        eprintln!("cudarace: warning: {w}");
    }
}

/// `PATH` itself, or `PATH/compile_commands.json` for a folder.
fn db_file(path: &Path) -> PathBuf {
    let path = cudarace_analysis::compile_db::absolute(path);
    if path.is_dir() {
        path.join(cudarace_analysis::compile_db::DB_FILE_NAME)
    } else {
        path
    }
}
