//! Launch sites across a project's translation units: a kernel defined in a header and launched
//! from several `.cu` files is checked under every site, in whichever file it is checked.
//!
//! The command line builds the index from the `.cu` files of a compilation database (each
//! lowered with its own flags) and hands it to the driver in [`crate::Options::launch_index`];
//! the driver then adds, to the sites the checked file sees itself, the sites written in other
//! files that launch the same kernel (same name, defined in the same file). A site's span points
//! into its own file, which the checked file's report does not hold: an added site carries the
//! kernel's span instead (nothing reports a site's place today; the verdict's assumed launch
//! names the sizes and arguments it used). Sites whose kernel the launching file cannot see
//! (declared only, defined in another translation unit with `-rdc`) are not indexed.
//!
//! The index also records the first unit that includes each header, so that a header no entry
//! compiles can be checked with the flags of a unit that includes it.

use crate::compile_db::{absolute, CompileDb, Flags, Match};
use cudarace_ir::{FileIr, LaunchSite, SourceFile};
use cudarace_syntax::{index_source, FrontendOptions};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

/// A kernel: the file that defines it and its name.
type KernelKey = (PathBuf, String);

/// One site and the place it is written at (canonical file, byte offset).
#[derive(Debug, Clone)]
struct Indexed {
    origin: (PathBuf, u32),
    site: LaunchSite,
}

/// The sites of one translation unit, by kernel.
#[derive(Debug, Default, Clone)]
pub struct UnitSites {
    sites: Vec<(KernelKey, Indexed)>,
    /// Sites of kernels the unit only declares (`__global__ void k(int *);` in a header, the
    /// definition in another `.cu` file, linked): by name.
    declared: Vec<(String, Indexed)>,
    /// The unit's path as given, and the files it includes (canonical).
    unit: PathBuf,
    includes: Vec<PathBuf>,
}

/// The launch sites of a project, by kernel.
#[derive(Debug, Default)]
pub struct LaunchIndex {
    by_kernel: HashMap<KernelKey, Vec<Indexed>>,
    /// Sites of kernels their unit only declares, by name (see [`UnitSites`]).
    by_name: HashMap<String, Vec<Indexed>>,
    /// Each included file (canonical) and the first unit that includes it.
    includers: HashMap<PathBuf, PathBuf>,
}

/// Reads the launch sites of one translation unit (`max_bytes`: the driver's file limit). A
/// file that cannot be read or lowered has none.
pub fn unit_sites(path: &Path, frontend: &FrontendOptions, max_bytes: u64) -> UnitSites {
    let Ok(text) = crate::read_source(path, max_bytes) else {
        return UnitSites::default();
    };
    // Only what the file declares: no kernel is lowered.
    let indexed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        index_source(Some(path), &text, frontend)
    }));
    let Ok(ir) = indexed else {
        tracing::warn!(path = %path.display(), "no launch sites: the front end failed");
        return UnitSites::default();
    };
    let files = file_keys(&ir.files);
    let mut out = UnitSites {
        unit: path.to_path_buf(),
        includes: files.iter().skip(1).flatten().cloned().collect(),
        ..UnitSites::default()
    };
    for site in &ir.launch_sites {
        let Some(kernel) = ir.kernels.iter().find(|k| k.name == site.kernel) else {
            if let Some(Some(origin)) = files.get(site.span.file.0 as usize) {
                out.declared.push((
                    site.kernel.clone(),
                    Indexed {
                        origin: (origin.clone(), site.span.start),
                        site: site.clone(),
                    },
                ));
            }
            continue;
        };
        let (Some(defined_in), Some(origin)) = (
            files.get(kernel.span.file.0 as usize).cloned().flatten(),
            files.get(site.span.file.0 as usize).cloned().flatten(),
        ) else {
            continue;
        };
        out.sites.push((
            (defined_in, kernel.name.clone()),
            Indexed {
                origin: (origin, site.span.start),
                site: site.clone(),
            },
        ));
    }
    out
}

impl LaunchIndex {
    pub fn from_units(units: impl IntoIterator<Item = UnitSites>) -> LaunchIndex {
        let mut index = LaunchIndex::default();
        let mut seen: HashSet<(PathBuf, u32)> = HashSet::new();
        for unit in units {
            for file in unit.includes {
                index
                    .includers
                    .entry(file)
                    .or_insert_with(|| unit.unit.clone());
            }
            for (key, site) in unit.sites {
                // A site in a header that several units include is indexed once.
                if seen.insert(site.origin.clone()) {
                    index.by_kernel.entry(key).or_default().push(site);
                }
            }
            for (name, site) in unit.declared {
                if seen.insert(site.origin.clone()) {
                    index.by_name.entry(name).or_default().push(site);
                }
            }
        }
        index
    }

    /// The first unit (in the order given) that includes `file` (a header), if one does.
    pub fn includer_of(&self, file: &Path) -> Option<&Path> {
        let key = std::fs::canonicalize(file).unwrap_or_else(|_| absolute(file));
        self.includers.get(&key).map(PathBuf::as_path)
    }

    /// Keeps, of the sites by kernel, those of kernels defined in `file` (a `.cu` file checked
    /// with the sites of its siblings: not those of the headers it includes, which the
    /// siblings may launch for another program). Sites by name stay.
    pub fn retain_defined_in(&mut self, file: &Path) {
        let key = std::fs::canonicalize(file).unwrap_or_else(|_| absolute(file));
        self.by_kernel
            .retain(|(defined_in, _), _| *defined_in == key);
    }

    /// How many sites the index holds.
    pub fn len(&self) -> usize {
        self.by_kernel.values().map(Vec::len).sum::<usize>()
            + self.by_name.values().map(Vec::len).sum::<usize>()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Adds to `ir` the sites of its kernels that are written in files `ir` does not contain.
    /// A kernel `ir` defines in a `.cu` file also gets the sites of other units that only
    /// declare a kernel of its name (one program's units launch each other's kernels through
    /// header declarations).
    pub fn add_sites_from_other_files(&self, ir: &mut FileIr) {
        if self.is_empty() {
            return;
        }
        let files = file_keys(&ir.files);
        let local: HashSet<&PathBuf> = files.iter().flatten().collect();
        let mut added = Vec::new();
        for kernel in &ir.kernels {
            let Some(Some(defined_in)) = files.get(kernel.span.file.0 as usize) else {
                continue;
            };
            let key = (defined_in.clone(), kernel.name.clone());
            let in_unit = defined_in.extension().is_some_and(|e| e == "cu");
            let declared = self.by_name.get(&kernel.name).filter(|_| in_unit);
            for s in self
                .by_kernel
                .get(&key)
                .into_iter()
                .chain(declared)
                .flatten()
            {
                if !local.contains(&s.origin.0) {
                    added.push(LaunchSite {
                        span: kernel.span,
                        // Spans of another file's definitions name nothing here.
                        definitions: None,
                        ..s.site.clone()
                    });
                }
            }
        }
        ir.launch_sites.extend(added);
    }
}

/// The flags of the first unit of `index` that includes `file`, when no entry of `db` compiles
/// `file` itself (a header): the rule of the command line and of the server.
pub fn includer_flags<'d>(
    db: &'d CompileDb,
    index: &LaunchIndex,
    file: &Path,
) -> Option<&'d Flags> {
    if matches!(db.lookup(file), Some((_, Match::Exact))) {
        return None;
    }
    let unit = index.includer_of(file)?;
    let (entry, _) = db.lookup(unit)?;
    // Debug, not info: the server asks on every check of a header.
    tracing::debug!(
        file = %file.display(),
        unit = %unit.display(),
        "no entry compiles this file; using the flags of a unit that includes it"
    );
    Some(&entry.flags)
}

/// Each file as a canonical path (`None` for a file without one).
fn file_keys(files: &[SourceFile]) -> Vec<Option<PathBuf>> {
    files
        .iter()
        .map(|f| {
            f.path
                .as_deref()
                .map(|p| std::fs::canonicalize(p).unwrap_or_else(|_| absolute(p)))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use cudarace_syntax::lower_source;

    fn project(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("cudarace-index-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("temp dir");
        std::fs::write(
            dir.join("k.cuh"),
            "#pragma once\n__global__ void k(int *a, int n) { a[threadIdx.x] = n; }\n",
        )
        .expect("write");
        for (file, block) in [("a.cu", 64), ("b.cu", 128)] {
            std::fs::write(
                dir.join(file),
                format!(
                    "#include \"k.cuh\"\nvoid go(int *a) {{ k<<<1, {block}>>>(a, {block}); }}\n"
                ),
            )
            .expect("write");
        }
        std::fs::write(dir.join("c.cu"), "#include \"k.cuh\"\n").expect("write");
        dir
    }

    fn blocks(ir: &FileIr) -> Vec<u64> {
        let mut b: Vec<u64> = ir
            .launch_sites
            .iter()
            .filter_map(|s| s.block_dim.map(|d| d[0]))
            .collect();
        b.sort_unstable();
        b
    }

    #[test]
    fn sites_of_other_units_are_added_once() {
        let dir = project("two");
        let opts = FrontendOptions::default();
        let units = ["a.cu", "b.cu", "c.cu"].map(|f| unit_sites(&dir.join(f), &opts, 1 << 20));
        let index = LaunchIndex::from_units(units);
        assert_eq!(index.len(), 2);
        let lower = |f: &str| {
            let path = dir.join(f);
            let text = std::fs::read_to_string(&path).expect("read");
            lower_source(Some(&path), &text, &opts)
        };
        // a.cu sees its own site and gets b.cu's.
        let mut a = lower("a.cu");
        assert_eq!(blocks(&a), [64]);
        index.add_sites_from_other_files(&mut a);
        assert_eq!(blocks(&a), [64, 128]);
        // c.cu launches nothing and gets both.
        let mut c = lower("c.cu");
        index.add_sites_from_other_files(&mut c);
        assert_eq!(blocks(&c), [64, 128]);
        // The added sites point at the kernel, in the checked file's own files.
        assert!(c.launch_sites.iter().all(|s| s.span == c.kernels[0].span));
        // The header's first includer, in the order the units were given.
        assert_eq!(
            index.includer_of(&dir.join("k.cuh")),
            Some(dir.join("a.cu").as_path())
        );
        assert_eq!(index.includer_of(&dir.join("a.cu")), None);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_kernel_of_the_same_name_defined_elsewhere_gets_nothing() {
        let dir = project("other");
        let opts = FrontendOptions::default();
        let index = LaunchIndex::from_units([unit_sites(&dir.join("a.cu"), &opts, 1 << 20)]);
        let path = dir.join("own.cu");
        let text = "__global__ void k(int *a, int n) { a[threadIdx.x] = n; }\n";
        let mut ir = lower_source(Some(&path), text, &opts);
        index.add_sites_from_other_files(&mut ir);
        assert!(ir.launch_sites.is_empty());
        // An unreadable unit has no sites.
        assert!(unit_sites(&dir.join("missing.cu"), &opts, 1 << 20)
            .sites
            .is_empty());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
