//! Headers read and parsed once per set of flags, and shared: between the files of a project
//! checked in one run, and, in the language server, across keystrokes (an edit in a `.cu` file
//! must not read its headers again).
//!
//! Two memories, both keyed by what decides their result, so a hit gives exactly what a fresh
//! run would:
//! - **Included runs.** What the preprocessor does with one `#include` (the units it adds, the
//!   macros it defines or undefines, the files it marks as read) depends on the header's bytes
//!   (its path, size and modification time stand for them), the macros defined at that point,
//!   the include folders, the nesting depth and the number of units so far (which numbers the
//!   new units): the key holds those. It also depends on which of the files it includes were
//!   read before it (those are skipped): the run records the answers it got and a hit must get
//!   the same ones.
//! - **Parses.** A unit's tree (after the comparison and host-code repairs) depends only on its
//!   blanked text, which is the key (compared in full on a hit, not only by hash).
//!
//! Both are bounded by the bytes they keep; when full, the oldest entries go first.

use crate::preprocess::{Macro, Unit};
use cudarace_ir::{FileId, SyntaxError};
use std::collections::{HashMap, VecDeque};
use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;
use tree_sitter::Tree;

/// Bytes of header text (and of parsed text) kept before the oldest entries are dropped.
const DEFAULT_CAPACITY_BYTES: usize = 256 << 20;

/// A file's size and modification time.
pub(crate) type Stamp = (u64, Option<SystemTime>);

/// What an `#include` is found by: the header and the preprocessor state it is read in.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct RunKey {
    /// The header as found (canonical), its size and modification time.
    pub path: PathBuf,
    pub len: u64,
    pub modified: Option<SystemTime>,
    /// The preprocessor state at the `#include`.
    pub depth: usize,
    pub first_unit: u32,
    pub macros: u64,
    pub include_dirs: u64,
}

/// The effect of one included run on the preprocessor state.
#[derive(Clone)]
pub(crate) struct IncludedRun {
    /// The units the run added (the header's, then those of the headers it included).
    pub units: Vec<Unit>,
    /// Every macro the run defined or undefined, with its value at the end of the run.
    pub macros: Vec<(String, Option<Macro>)>,
    /// The files the run read (canonical paths), in order.
    pub seen: Vec<PathBuf>,
    /// The size and modification time of every file the run read (the header's own are in the
    /// key; those of the headers it included must still be the same on a hit).
    pub stamps: Vec<(PathBuf, Option<Stamp>)>,
    /// The files the run asked about "read before?" that were not read by the run itself, with
    /// the answer.
    pub seen_before: Vec<(PathBuf, bool)>,
}

impl IncludedRun {
    /// Whether the run would do the same after the files `seen` were read.
    pub fn fits(&self, seen: &[PathBuf]) -> bool {
        self.seen_before
            .iter()
            .all(|(path, was)| seen.contains(path) == *was)
            && self
                .stamps
                .iter()
                .all(|(path, stamp)| stamp_of(path) == *stamp)
    }
}

impl IncludedRun {
    fn bytes(&self) -> usize {
        self.units.iter().map(|u| u.text.len() * 2).sum::<usize>() + 64
    }
}

/// A unit's parse: the blanked text it was made from, the tree, the text the tree is of (the
/// blanked text after repairs) and the syntax errors found in it (with file 0; the unit's own id
/// is put in when they are used).
#[derive(Clone)]
pub(crate) struct ParsedUnit {
    pub source: Arc<str>,
    pub tree: Tree,
    pub clean: Arc<str>,
    pub errors: Vec<SyntaxError>,
}

impl ParsedUnit {
    /// The errors, as errors of `file`.
    pub fn errors_of(&self, file: FileId) -> impl Iterator<Item = SyntaxError> + '_ {
        self.errors.iter().map(move |e| {
            let mut e = e.clone();
            e.span.file = file;
            e
        })
    }
}

/// Headers shared between checks (see the module's documentation). Put one in
/// [`crate::FrontendOptions::headers`]; checks running in parallel may share it.
pub struct HeaderCache {
    inner: Mutex<Inner>,
    capacity: usize,
    reads: AtomicUsize,
    parses: AtomicUsize,
}

#[derive(Default)]
struct Inner {
    runs: HashMap<RunKey, Arc<IncludedRun>>,
    /// Blanked text's hash → its parses (more than one only when hashes collide).
    parses: HashMap<u64, Vec<Arc<ParsedUnit>>>,
    /// Insertion order, for dropping the oldest entries.
    order: VecDeque<Entry>,
    bytes: usize,
}

enum Entry {
    Run(RunKey),
    Parse(u64, Arc<str>),
}

impl std::fmt::Debug for HeaderCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HeaderCache")
            .field("reads", &self.reads())
            .field("parses", &self.parses())
            .finish_non_exhaustive()
    }
}

impl Default for HeaderCache {
    fn default() -> Self {
        HeaderCache::with_capacity(DEFAULT_CAPACITY_BYTES)
    }
}

impl HeaderCache {
    pub fn new() -> Arc<HeaderCache> {
        Arc::new(HeaderCache::default())
    }

    /// A cache that keeps about `bytes` of header text.
    pub fn with_capacity(bytes: usize) -> HeaderCache {
        HeaderCache {
            inner: Mutex::new(Inner::default()),
            capacity: bytes,
            reads: AtomicUsize::new(0),
            parses: AtomicUsize::new(0),
        }
    }

    /// How many times a header was read from disk by checks using this cache.
    pub fn reads(&self) -> usize {
        self.reads.load(Ordering::Relaxed)
    }

    /// How many times a header's text was parsed by checks using this cache.
    pub fn parses(&self) -> usize {
        self.parses.load(Ordering::Relaxed)
    }

    pub(crate) fn count_read(&self) {
        self.reads.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn count_parse(&self) {
        self.parses.fetch_add(1, Ordering::Relaxed);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // A panic while holding the lock leaves consistent maps (every change is one insert).
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn run(&self, key: &RunKey) -> Option<Arc<IncludedRun>> {
        self.lock().runs.get(key).cloned()
    }

    pub(crate) fn keep_run(&self, key: RunKey, run: IncludedRun) {
        let bytes = run.bytes();
        if bytes > self.capacity {
            return;
        }
        let mut inner = self.lock();
        match inner.runs.insert(key.clone(), Arc::new(run)) {
            // The same include after other files were read: the newer run replaces it.
            Some(old) => inner.bytes = inner.bytes.saturating_sub(old.bytes()) + bytes,
            None => {
                inner.order.push_back(Entry::Run(key));
                inner.bytes += bytes;
            }
        }
        inner.evict(self.capacity);
    }

    pub(crate) fn parse(&self, clean: &str) -> Option<Arc<ParsedUnit>> {
        let h = text_hash(clean);
        let inner = self.lock();
        inner
            .parses
            .get(&h)?
            .iter()
            .find(|p| *p.source == *clean)
            .cloned()
    }

    pub(crate) fn keep_parse(&self, parsed: ParsedUnit) {
        let source = parsed.source.clone();
        let bytes = source.len() * 2 + 64;
        if bytes > self.capacity {
            return;
        }
        let h = text_hash(&source);
        let mut inner = self.lock();
        let slot = inner.parses.entry(h).or_default();
        if slot.iter().any(|p| *p.source == *source) {
            return;
        }
        slot.push(Arc::new(parsed));
        inner.order.push_back(Entry::Parse(h, source));
        inner.bytes += bytes;
        inner.evict(self.capacity);
    }
}

impl Inner {
    fn evict(&mut self, capacity: usize) {
        while self.bytes > capacity {
            let Some(entry) = self.order.pop_front() else {
                break;
            };
            match entry {
                Entry::Run(key) => {
                    if let Some(run) = self.runs.remove(&key) {
                        self.bytes = self.bytes.saturating_sub(run.bytes());
                    }
                }
                Entry::Parse(h, source) => {
                    if let Some(slot) = self.parses.get_mut(&h) {
                        slot.retain(|p| *p.source != *source);
                        if slot.is_empty() {
                            self.parses.remove(&h);
                        }
                    }
                    self.bytes = self.bytes.saturating_sub(source.len() * 2 + 64);
                }
            }
        }
    }
}

/// A file's size and modification time (`None` when it cannot be read).
pub(crate) fn stamp_of(path: &std::path::Path) -> Option<Stamp> {
    std::fs::metadata(path)
        .ok()
        .map(|m| (m.len(), m.modified().ok()))
}

fn text_hash(s: &str) -> u64 {
    let mut h = DefaultHasher::new();
    s.hash(&mut h);
    h.finish()
}

/// An order-independent fingerprint of one macro definition: a macro table's fingerprint is the
/// XOR of its entries', kept up to date as macros are defined and undefined.
pub(crate) fn macro_fingerprint(name: &str, m: &Macro) -> u64 {
    let mut h = DefaultHasher::new();
    name.hash(&mut h);
    m.params.hash(&mut h);
    m.body.hash(&mut h);
    m.fallback.as_deref().hash(&mut h);
    h.finish()
}

pub(crate) fn hash_of<T: Hash + ?Sized>(v: &T) -> u64 {
    let mut h = DefaultHasher::new();
    v.hash(&mut h);
    h.finish()
}
