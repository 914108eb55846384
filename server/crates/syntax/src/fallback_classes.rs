//! The library's fallback class sources (`[[class]]` in a library file, see docs/library.md):
//! when the file or its includes use a name one of them defines and none of them defines any
//! of its names, the source becomes one more unit, as if a header holding it were included.
//!
//! "Use" and "define" are read from the units' tokens (`cudarace_library::defined_names`): a
//! file that defines its own `PtrStep` keeps it and no fallback is added. A source is parsed
//! once per process (the parse depends on its text alone); a source that does not parse is
//! not used, and every kernel of the file says so in its library notes.

use crate::headers::ParsedUnit;
use crate::preprocess::Unit;
use cudarace_ir::FileId;
use cudarace_library::{defined_names, Library};
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

/// A fallback class source added as a unit.
#[derive(Clone, Debug)]
pub(crate) struct FallbackUnit {
    pub file: FileId,
    /// The library file it comes from.
    pub library: Arc<str>,
}

/// Adds a unit for every fallback class source the units need (see the module's
/// documentation).
pub(crate) fn add_units(units: &mut Vec<Unit>, library: &Library) -> Vec<FallbackUnit> {
    let sources = library.class_sources();
    if sources.is_empty() {
        return Vec::new();
    }
    let mut used: HashSet<&str> = HashSet::new();
    let mut defined: HashSet<String> = HashSet::new();
    for u in units.iter() {
        used.extend(
            cudarace_library::classes::tokens(&u.clean)
                .into_iter()
                .filter(|w| sources.iter().any(|s| s.names.iter().any(|n| n == w))),
        );
    }
    if used.is_empty() {
        return Vec::new();
    }
    for u in units.iter() {
        defined.extend(defined_names(&u.clean));
    }
    let wanted: Vec<_> = sources
        .into_iter()
        .filter(|s| {
            s.names.iter().any(|n| used.contains(n.as_str()))
                && !s.names.iter().any(|n| defined.contains(n))
        })
        .cloned()
        .collect();
    let mut out = Vec::new();
    for s in wanted {
        let file = FileId(units.len() as u32);
        let text: Arc<str> = Arc::from(s.source.as_str());
        units.push(Unit {
            file,
            path: Some(PathBuf::from(format!(
                "<library {}: {}>",
                s.library,
                s.names.join(", ")
            ))),
            text: text.clone(),
            clean: text,
            kernel_marks: Vec::new(),
        });
        out.push(FallbackUnit {
            file,
            library: s.library.clone(),
        });
    }
    out
}

/// The parse of a fallback source, once per process.
pub(crate) fn parse(source: &Arc<str>) -> Arc<ParsedUnit> {
    static PARSES: OnceLock<Mutex<HashMap<Arc<str>, Arc<ParsedUnit>>>> = OnceLock::new();
    let parses = PARSES.get_or_init(Default::default);
    if let Some(p) = parses.lock().ok().and_then(|m| m.get(source).cloned()) {
        return p;
    }
    let p = Arc::new(crate::parse::parse_unit(source, None, source));
    if let Ok(mut m) = parses.lock() {
        m.insert(source.clone(), p.clone());
    }
    p
}

#[cfg(test)]
mod tests {
    use crate::{lower_source, FrontendOptions};
    use cudarace_library::{parse_file, Library};
    use std::path::Path;
    use std::sync::Arc;

    const KERNEL: &str = "__global__ void k(Row<float> r, float *out) {\n    out[threadIdx.x] = r.get(threadIdx.x);\n}\n";

    fn with_source(source: &str) -> FrontendOptions {
        let text = format!(
            "[library]\nname = \"rows\"\ndescription = \"d\"\n\n[[class]]\nnames = [\"Row\"]\nsource = \"\"\"\n{source}\n\"\"\"\n"
        );
        let mut lib = Library::default();
        lib.add(parse_file(Path::new("rows.toml"), &text).unwrap_or_else(|e| panic!("{e}")));
        FrontendOptions {
            library: Some(Arc::new(lib)),
            ..FrontendOptions::default()
        }
    }

    #[test]
    fn every_bundled_class_source_parses_without_error() {
        for s in Library::bundled().class_sources() {
            let p = super::parse(&Arc::from(s.source.as_str()));
            assert!(
                p.errors.is_empty(),
                "{}: {:?}",
                s.library,
                p.errors.first().map(|e| &e.message)
            );
        }
    }

    #[test]
    fn a_used_fallback_class_is_parsed_as_if_included_and_named_in_the_report() {
        let opts = with_source(
            "template <typename T> struct Row { T *p; __device__ T get(int i) const { return p[i]; } };",
        );
        let f = lower_source(None, KERNEL, &opts);
        assert!(f.syntax_errors.is_empty(), "{:?}", f.syntax_errors);
        let k = &f.kernels[0];
        assert!(
            k.library_notes
                .iter()
                .any(|n| n.contains("`Row` is the library's fallback definition (`rows`)")),
            "{:?}",
            k.library_notes
        );
        // Not added to a file that does not use it.
        let f = lower_source(None, "__global__ void g(float *a) { a[0] = 1; }", &opts);
        assert_eq!(f.files.len(), 1);
    }

    #[test]
    fn a_fallback_source_that_does_not_parse_is_not_used_and_said_so() {
        let opts = with_source(
            "template <typename T> struct Row { T *p; int get(int i) const { return p[i] +; } };",
        );
        let f = lower_source(None, KERNEL, &opts);
        assert!(f.syntax_errors.is_empty(), "{:?}", f.syntax_errors);
        let k = &f.kernels[0];
        assert!(
            k.library_notes
                .iter()
                .any(|n| n.contains("the fallback class source of library `rows` does not parse")),
            "{:?}",
            k.library_notes
        );
        assert!(!k
            .library_notes
            .iter()
            .any(|n| n.contains("is the library's fallback")));
    }
}
