//! The launch index of each compilation database the server's documents use: the launch sites
//! of all the database's `.cu` files, so that a kernel (in a header, or in a `.cu` file another
//! unit includes) is checked under the launches written in the project's other files, as
//! `cudarace check` does.
//!
//! - The index of a database is built once, on a blocking thread (never on the main loop), the
//!   first time a document that uses the database is checked. Until it is ready, documents are
//!   checked without it; when it is ready, every open document of that database is checked again.
//! - Saving (`didSave`) one of the database's `.cu` files reads that one unit's sites again (on a
//!   blocking thread) and then re-checks every open document of that database: the simple rule;
//!   cached kernel reports keep this cheap, since a kernel whose sites did not change keeps its
//!   fingerprint.
//! - Keystrokes (`didChange`) never rebuild or re-read anything: the index follows files as saved.
//! - A database read again because it changed on disk, or a change of the settings or of a
//!   `cudarace.toml`, drops the index; the next check builds it again.
//!
//! - Once the index is built, a header that no entry compiles is checked with the flags of the
//!   first unit that includes it (before that, with those of the nearest entry), as on the
//!   command line.
//!
//! Each unit is read with the flags its entry gives it, the settings and the configuration of the
//! document that asked for the index first. A missing or malformed database is a warning of
//! [`cudarace_analysis::db_cache::DbCache`]; a unit that cannot be read has no sites.

use crate::pipeline::{FrontendOptions, Options};
use cudarace_analysis::compile_db::{CompileDb, Flags, Match};
use cudarace_analysis::launch_index::{unit_sites, LaunchIndex, UnitSites};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// How one unit is read: its path and the options its flags give.
#[derive(Clone)]
struct UnitJob {
    path: PathBuf,
    frontend: FrontendOptions,
    max_bytes: u64,
}

impl UnitJob {
    fn read(&self) -> UnitSites {
        unit_sites(&self.path, &self.frontend, self.max_bytes)
    }
}

/// What a background read reports to the main loop (through [`Projects::finished`]).
pub enum ProjectEvent {
    /// The whole index of the database at `db` (every unit's sites, in the database's order).
    Built {
        db: PathBuf,
        generation: u64,
        units: Vec<UnitSites>,
        index: Arc<LaunchIndex>,
    },
    /// One unit (the `unit`-th of the database) read again after a save.
    UnitRead {
        db: PathBuf,
        generation: u64,
        unit: usize,
        sites: UnitSites,
    },
    /// The sites of the files beside a document no database covers (see [`crate::siblings`]).
    SiblingsRead {
        path: PathBuf,
        generation: u64,
        index: Option<Arc<LaunchIndex>>,
    },
}

struct Project {
    /// The database the index was built from: another `Arc` (read again) means a new build.
    db: Arc<CompileDb>,
    generation: u64,
    jobs: Arc<Vec<UnitJob>>,
    /// Every unit's sites, once built.
    units: Option<Vec<UnitSites>>,
    index: Option<Arc<LaunchIndex>>,
    /// Units saved while the index was being built, to read again once it is.
    saved_while_building: HashSet<usize>,
}

/// The projects (compilation databases) met so far, by database path.
#[derive(Default)]
pub struct Projects {
    by_db: HashMap<PathBuf, Project>,
    next_generation: u64,
    /// Whole-index builds started since the server started (reported by `cudarace/stats`, so
    /// that tests can tell that keystrokes build nothing).
    builds: usize,
    /// Single units read again after a save.
    unit_reads: usize,
}

/// Runs a read on a blocking thread and hands its event to `done`.
pub type Spawn<'a> = &'a dyn Fn(Box<dyn FnOnce() -> ProjectEvent + Send>);

impl Projects {
    pub fn builds(&self) -> usize {
        self.builds
    }

    pub fn unit_reads(&self) -> usize {
        self.unit_reads
    }

    /// Forgets every index (settings or configuration changed); the next check builds again.
    pub fn clear(&mut self) {
        self.by_db.clear();
    }

    /// The index of `db` for a document's check: the one built, or `None` while it is built (the
    /// first call, or the first since `db` was read again, starts the build through `spawn`).
    /// `options` gives the options of a unit compiled with the given flags.
    pub fn index_for(
        &mut self,
        db: &Arc<CompileDb>,
        options: &dyn Fn(&Flags) -> Options,
        spawn: Spawn,
    ) -> Option<Arc<LaunchIndex>> {
        if let Some(p) = self.by_db.get(&db.path) {
            if Arc::ptr_eq(&p.db, db) {
                return p.index.clone();
            }
        }
        let jobs: Vec<UnitJob> = db
            .cuda_units()
            .into_iter()
            .filter(|unit| unit.is_file())
            .filter_map(|unit| {
                let (entry, _) = db.lookup(&unit)?;
                let opts = options(&entry.flags);
                Some(UnitJob {
                    path: unit,
                    frontend: opts.frontend,
                    max_bytes: opts.budget.max_file_bytes,
                })
            })
            .collect();
        self.next_generation += 1;
        self.builds += 1;
        let generation = self.next_generation;
        let jobs = Arc::new(jobs);
        tracing::info!(
            "building the launch index of {} ({} units)",
            db.path.display(),
            jobs.len()
        );
        let (path, build) = (db.path.clone(), jobs.clone());
        spawn(Box::new(move || {
            let units: Vec<UnitSites> = build.iter().map(UnitJob::read).collect();
            let index = Arc::new(LaunchIndex::from_units(units.clone()));
            ProjectEvent::Built {
                db: path,
                generation,
                units,
                index,
            }
        }));
        self.by_db.insert(
            db.path.clone(),
            Project {
                db: db.clone(),
                generation,
                jobs,
                units: None,
                index: None,
                saved_while_building: HashSet::new(),
            },
        );
        None
    }

    /// A file was saved: each database that compiles it (a `.cu` unit of its index) reads its
    /// sites again through `spawn`. Returns whether any does.
    pub fn saved(&mut self, file: &Path, spawn: Spawn) -> bool {
        let mut any = false;
        let mut reads = 0;
        for (db_path, p) in &mut self.by_db {
            let Some(unit) = unit_position(p, file) else {
                continue;
            };
            any = true;
            if p.units.is_none() {
                p.saved_while_building.insert(unit);
                continue;
            }
            reads += 1;
            spawn(read_unit(db_path.clone(), p, unit));
        }
        self.unit_reads += reads;
        any
    }

    /// A background read finished: returns the database whose open documents are to be checked
    /// again (`None` for a read that was superseded).
    pub fn finished(&mut self, event: ProjectEvent, spawn: Spawn) -> Option<PathBuf> {
        match event {
            ProjectEvent::Built {
                db,
                generation,
                units,
                index,
            } => {
                let p = self
                    .by_db
                    .get_mut(&db)
                    .filter(|p| p.generation == generation)?;
                tracing::info!("launch index of {}: {} sites", db.display(), index.len());
                p.units = Some(units);
                p.index = Some(index);
                let again: Vec<usize> = p.saved_while_building.drain().collect();
                self.unit_reads += again.len();
                for unit in again {
                    spawn(read_unit(db.clone(), p, unit));
                }
                Some(db)
            }
            ProjectEvent::UnitRead {
                db,
                generation,
                unit,
                sites,
            } => {
                let p = self
                    .by_db
                    .get_mut(&db)
                    .filter(|p| p.generation == generation)?;
                let units = p.units.as_mut()?;
                *units.get_mut(unit)? = sites;
                // Regrouping the sites by kernel is cheap (no file is read).
                p.index = Some(Arc::new(LaunchIndex::from_units(units.clone())));
                Some(db)
            }
            // Not a database's: see `crate::siblings`.
            ProjectEvent::SiblingsRead { .. } => None,
        }
    }
}

/// The position of `file` among the units of `p`, if it is one of them.
fn unit_position(p: &Project, file: &Path) -> Option<usize> {
    if !matches!(p.db.lookup(file), Some((_, Match::Exact))) {
        return None;
    }
    let (entry, _) = p.db.lookup(file)?;
    p.jobs.iter().position(
        |j| matches!(p.db.lookup(&j.path), Some((e, Match::Exact)) if std::ptr::eq(e, entry)),
    )
}

fn read_unit(db: PathBuf, p: &Project, unit: usize) -> Box<dyn FnOnce() -> ProjectEvent + Send> {
    let (jobs, generation) = (p.jobs.clone(), p.generation);
    Box::new(move || ProjectEvent::UnitRead {
        db,
        generation,
        unit,
        sites: jobs.get(unit).map(UnitJob::read).unwrap_or_default(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use cudarace_analysis::launch_index::includer_flags;

    #[test]
    fn a_header_gets_the_flags_of_the_unit_that_includes_it() {
        let dir =
            std::env::temp_dir().join(format!("cudarace-lsp-includer-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("inc")).expect("temp dir");
        std::fs::create_dir_all(dir.join("src")).expect("temp dir");
        std::fs::write(
            dir.join("inc/k.cuh"),
            "__global__ void k(int *a) { a[0] = 1; }\n",
        )
        .expect("write");
        std::fs::write(dir.join("src/a.cu"), "void a() {}\n").expect("write");
        std::fs::write(dir.join("src/b.cu"), "#include \"../inc/k.cuh\"\n").expect("write");
        let text = format!(
            r#"[{{"directory": "{d}", "file": "src/a.cu", "arguments": ["nvcc", "-DA"]}},
                {{"directory": "{d}", "file": "src/b.cu", "arguments": ["nvcc", "-DB"]}}]"#,
            d = dir.display()
        );
        let db = CompileDb::parse(&dir.join("compile_commands.json"), &text).expect("database");
        let units = ["src/a.cu", "src/b.cu"]
            .map(|u| unit_sites(&dir.join(u), &FrontendOptions::default(), 1 << 20));
        let index = LaunchIndex::from_units(units);
        let names = |f: Option<&Flags>| -> Vec<String> {
            f.map(|f| f.defines.iter().map(|(n, _)| n.clone()).collect())
                .unwrap_or_default()
        };
        assert_eq!(
            names(includer_flags(&db, &index, &dir.join("inc/k.cuh"))),
            ["B"]
        );
        // A unit has its own entry.
        assert!(includer_flags(&db, &index, &dir.join("src/a.cu")).is_none());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
