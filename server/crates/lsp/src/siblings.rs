//! The launch sites of the `.cu` files beside a document that no compilation database covers,
//! as `cudarace check` reads them ([`cudarace_analysis::siblings`]): a kernel launched from the
//! file next to it is checked in the editor under that launch, as on the command line.
//!
//! - A document's siblings are read once, on a blocking thread (never on the main loop), the
//!   first time it is checked; until the read is done it is checked without them, and it is
//!   checked again when they bring sites (or take away the ones it had).
//! - Saving a `.cu` file of the document's folder, or the document itself (its kernels name the
//!   siblings that matter), reads them again, keeping the old sites until the new ones are in.
//! - Keystrokes (`didChange`) never read anything: like the project index, the siblings follow
//!   the files as saved.

use crate::pipeline::Options;
use crate::project::{ProjectEvent, Spawn};
use cudarace_analysis::launch_index::LaunchIndex;
use cudarace_analysis::siblings::Siblings;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

struct Entry {
    /// The sites last read (`None`: no sibling launches one of the document's kernels, or the
    /// first read is still running).
    index: Option<Arc<LaunchIndex>>,
    /// The read that is running (its generation), if any.
    reading: Option<u64>,
    /// A save since the running read started: read again when it is done.
    stale: bool,
    /// The options the document was first checked with (the front end's, for reading the
    /// siblings again after a save).
    options: Options,
}

/// The sibling launch sites of each open document that no database covers, by path.
#[derive(Default)]
pub struct SiblingIndexes {
    by_path: HashMap<PathBuf, Entry>,
    next_generation: u64,
    /// Reads started since the server started (reported by `cudarace/stats`, so that tests can
    /// tell that keystrokes read nothing).
    reads: usize,
}

impl SiblingIndexes {
    pub fn reads(&self) -> usize {
        self.reads
    }

    /// Forgets every index (settings or configuration changed); the next check reads again.
    pub fn clear(&mut self) {
        self.by_path.clear();
    }

    /// The sibling sites for a check of the document at `path` with `options`: the last read
    /// (the first call starts it through `spawn` and returns `None`).
    pub fn index_for(
        &mut self,
        path: &Path,
        options: &Options,
        spawn: Spawn,
    ) -> Option<Arc<LaunchIndex>> {
        // Per keystroke: a lookup only (the options change only with the settings or a
        // `cudarace.toml`, which clear every entry).
        if let Some(e) = self.by_path.get(path) {
            return e.index.clone();
        }
        let mut entry = Entry {
            index: None,
            reading: None,
            stale: false,
            options: options.clone(),
        };
        self.start_read(path, &mut entry, spawn);
        self.by_path.insert(path.to_path_buf(), entry);
        None
    }

    fn start_read(&mut self, path: &Path, entry: &mut Entry, spawn: Spawn) {
        self.next_generation += 1;
        self.reads += 1;
        let generation = self.next_generation;
        entry.reading = Some(generation);
        entry.stale = false;
        let (path, options) = (path.to_path_buf(), entry.options.clone());
        spawn(Box::new(move || {
            let index = Siblings::default().index(&path, &options).map(Arc::new);
            ProjectEvent::SiblingsRead {
                path,
                generation,
                index,
            }
        }));
    }

    /// `file` was saved: the documents whose siblings it may change (those of its folder when
    /// it is a `.cu` file, and the document itself) read them again.
    pub fn saved(&mut self, file: &Path, spawn: Spawn) {
        let is_unit = file.extension().is_some_and(|e| e == "cu");
        let affected: Vec<PathBuf> = self
            .by_path
            .keys()
            .filter(|p| p.as_path() == file || (is_unit && p.parent() == file.parent()))
            .cloned()
            .collect();
        for path in affected {
            let Some(mut entry) = self.by_path.remove(&path) else {
                continue;
            };
            if entry.reading.is_some() {
                entry.stale = true;
            } else {
                self.start_read(&path, &mut entry, spawn);
            }
            self.by_path.insert(path, entry);
        }
    }

    /// A read finished: whether the document at `path` is to be checked again (its sites came
    /// or went). A read superseded by a later one changes nothing.
    pub fn finished(
        &mut self,
        path: &Path,
        generation: u64,
        index: Option<Arc<LaunchIndex>>,
        spawn: Spawn,
    ) -> bool {
        let Some(mut entry) = self.by_path.remove(path) else {
            return false;
        };
        if entry.reading != Some(generation) {
            self.by_path.insert(path.to_path_buf(), entry);
            return false;
        }
        entry.reading = None;
        let check_again = entry.index.is_some() || index.is_some();
        if let Some(index) = &index {
            tracing::info!("launch sites beside {}: {}", path.display(), index.len());
        }
        entry.index = index;
        if entry.stale {
            self.start_read(path, &mut entry, spawn);
        }
        self.by_path.insert(path.to_path_buf(), entry);
        check_again
    }
}
