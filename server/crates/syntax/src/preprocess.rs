//! The preprocessor pass: directives are read line by line, then blanked (replaced by spaces, line
//! breaks kept) together with every inactive conditional branch, so that tree-sitter parses plain
//! C++ with the original byte offsets. Object-like and function-like macros are recorded and
//! expanded later, at their use sites, by the lowering.

use crate::consteval::{eval_text, MacroEnv};
use crate::headers;
use crate::text::{is_ident_char, is_ident_start, strip_comments, tokens, LexState};
use crate::FrontendOptions;
use cudarace_ir::{FileId, Span};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

const NVCC_PREDEFINED: &[(&str, &str)] = &[
    ("__CUDACC__", "1"),
    ("__NVCC__", "1"),
    ("__CUDA_ARCH__", "800"),
    ("__CUDACC_VER_MAJOR__", "12"),
    ("__CUDACC_VER_MINOR__", "0"),
    ("__cplusplus", "201703L"),
];

const MAX_INCLUDE_DEPTH: usize = 16;
const MAX_INCLUDED_FILES: usize = 64;
const MAX_INCLUDE_BYTES: u64 = 4 << 20;

#[derive(Clone, Debug)]
pub(crate) struct Macro {
    /// `Some` for function-like macros.
    pub params: Option<Vec<String>>,
    pub body: String,
    /// The `#define` line (for future go-to-definition; kept so spans survive).
    #[allow(dead_code)]
    pub span: Span,
    /// The library file whose fallback definition this is (the file and its includes do not
    /// define the macro); `None` for the file's own macros.
    pub fallback: Option<Arc<str>>,
}

pub(crate) type MacroTable = HashMap<String, Macro>;

impl Macro {
    /// The body with parameters replaced by the (parenthesized) argument texts. `None` when the
    /// argument count does not match.
    pub fn expand(&self, args: Option<&[String]>) -> Option<String> {
        let params = match (&self.params, args) {
            (None, _) => return Some(self.body.clone()),
            (Some(p), Some(a)) => {
                let variadic = p.last().is_some_and(|l| l == "...");
                if !(a.len() == p.len()
                    || (variadic && a.len() + 1 >= p.len())
                    || (p.is_empty() && a.len() == 1 && a[0].trim().is_empty()))
                {
                    return None;
                }
                p
            }
            (Some(_), None) => return None,
        };
        let args = args.unwrap_or(&[]);
        let mut out = String::with_capacity(self.body.len() + 16);
        let toks = tokens(&self.body);
        let mut i = 0;
        while i < toks.len() {
            let (is_id, t) = toks[i];
            if is_id {
                if let Some(k) = params.iter().position(|p| p == t) {
                    // Parenthesized for precedence; a lone name or number needs none, and a
                    // name in declarator position must stay bare (`for (int i = …` in
                    // `CUDA_KERNEL_LOOP(i, n)`: `int (i) = …` reads as a cast).
                    let arg = args.get(k).map(|s| s.trim()).unwrap_or("");
                    let atom = !arg.is_empty()
                        && arg
                            .chars()
                            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.');
                    if atom {
                        out.push_str(arg);
                    } else {
                        out.push('(');
                        out.push_str(args.get(k).map(|s| s.as_str()).unwrap_or(""));
                        out.push(')');
                    }
                    i += 1;
                    continue;
                }
                if t == "__VA_ARGS__" {
                    let start = params.len().saturating_sub(1);
                    out.push_str(&args.get(start..).unwrap_or(&[]).join(", "));
                    i += 1;
                    continue;
                }
            }
            if t == "#" {
                // `##` pastes; `#x` stringifies: neither yields something we evaluate, keep text.
                if toks.get(i + 1).map(|x| x.1) == Some("#") {
                    while out.ends_with(' ') {
                        out.pop();
                    }
                    i += 2;
                    while toks.get(i).is_some_and(|x| x.1.trim().is_empty()) {
                        i += 1;
                    }
                    // Paste the raw argument text (not parenthesized).
                    if let Some((true, n)) = toks.get(i) {
                        if let Some(k) = params.iter().position(|p| p == n) {
                            out.push_str(args.get(k).map(|s| s.trim()).unwrap_or(""));
                            i += 1;
                        }
                    }
                    continue;
                }
                out.push_str("\"\"");
                i += 1;
                if let Some((true, _)) = toks.get(i) {
                    i += 1;
                }
                continue;
            }
            out.push_str(t);
            i += 1;
        }
        Some(out)
    }
}

/// One source file after preprocessing.
#[derive(Clone)]
pub(crate) struct Unit {
    pub file: FileId,
    pub path: Option<PathBuf>,
    pub text: Arc<str>,
    /// The text with directives and inactive branches blanked (same length and line breaks).
    pub clean: Arc<str>,
    /// Offsets where a macro standing for `__global__` was blanked (the function after it is a
    /// kernel although the parsed text no longer says so).
    pub kernel_marks: Vec<usize>,
}

pub(crate) struct Preprocessed {
    pub units: Vec<Unit>,
    pub macros: MacroTable,
    pub library: Arc<cudarace_library::Library>,
    /// The units that are the library's fallback class sources (after the file's own units).
    pub fallbacks: Vec<crate::fallback_classes::FallbackUnit>,
}

struct Cond {
    /// The enclosing region is active.
    parent_active: bool,
    /// Some branch of this conditional was taken (so later `#elif`/`#else` are inactive).
    taken: bool,
    active: bool,
}

pub(crate) fn preprocess(path: Option<&Path>, text: &str, opts: &FrontendOptions) -> Preprocessed {
    let mut macros = MacroTable::new();
    // What nvcc defines in the device compilation pass (the one whose code we analyse).
    for (name, value) in NVCC_PREDEFINED {
        macros.insert(
            name.to_string(),
            Macro {
                params: None,
                body: value.to_string(),
                span: Span::default(),
                fallback: None,
            },
        );
    }
    // The file's GPUVerify header line (`//--blockDim=64 -DN=32`) is its command line; the
    // options' definitions come after it, so the user's `-D` wins.
    let header = crate::annotations::header_defines(text);
    for (name, value) in header.iter().chain(&opts.defines) {
        let (name, params) = split_macro_name(name);
        let body = if value.is_empty() {
            "1".to_string()
        } else {
            value.clone()
        };
        macros.insert(
            name,
            Macro {
                params,
                body,
                span: Span::default(),
                fallback: None,
            },
        );
    }
    for name in &opts.undefines {
        macros.remove(name.trim());
    }
    let macro_fingerprint = macros
        .iter()
        .fold(0, |fp, (name, m)| fp ^ headers::macro_fingerprint(name, m));
    let mut pp = Pre {
        opts,
        units: Vec::new(),
        macros,
        macro_fingerprint,
        touched: Vec::new(),
        seen: Vec::new(),
        seen_asked: Vec::new(),
        stamps: Vec::new(),
        include_dirs: headers::hash_of(&opts.include_dirs),
    };
    pp.pre_include();
    pp.run(path.map(|p| p.to_path_buf()), Arc::from(text), 0);
    // Framework macros whose header is not there: the library's fallback definitions.
    let library = opts.library();
    for m in library.macros() {
        if !pp.macros.contains_key(&m.name) {
            pp.macros.insert(
                m.name.clone(),
                Macro {
                    params: m.params.clone(),
                    body: m.body.clone(),
                    span: Span::default(),
                    fallback: Some(m.library.clone()),
                },
            );
        }
    }
    let mut units = pp.units;
    for u in &mut units {
        blank_qualifier_macros(u, &pp.macros);
        blank_attributes(u);
    }
    let fallbacks = crate::fallback_classes::add_units(&mut units, &library);
    Preprocessed {
        units,
        macros: pp.macros,
        library,
        fallbacks,
    }
}

fn split_macro_name(s: &str) -> (String, Option<Vec<String>>) {
    match s.find('(') {
        Some(i) => {
            let params = s[i + 1..]
                .trim_end_matches(')')
                .split(',')
                .map(|p| p.trim().to_string())
                .filter(|p| !p.is_empty())
                .collect();
            (s[..i].trim().to_string(), Some(params))
        }
        None => (s.trim().to_string(), None),
    }
}

struct Pre<'o> {
    opts: &'o FrontendOptions,
    units: Vec<Unit>,
    macros: MacroTable,
    /// The fingerprint of `macros` (see [`headers::macro_fingerprint`]).
    macro_fingerprint: u64,
    /// The names of the macros defined or undefined so far, in order (repeats kept): what an
    /// included run changed is the part after its start.
    touched: Vec<String>,
    seen: Vec<PathBuf>,
    /// The size and modification time of every header read so far, as found before reading.
    stamps: Vec<(PathBuf, Option<headers::Stamp>)>,
    /// Every "was this file read before?" asked so far, in order (see [`Pre::run_header`]).
    seen_asked: Vec<PathBuf>,
    /// The fingerprint of the include folders.
    include_dirs: u64,
}

impl Pre<'_> {
    /// `-include FILE`: each file is preprocessed before the checked file, like nvcc's
    /// `--pre-include`, but only its macros (and the files it has read, which a later
    /// `#include` then skips) are kept: its units are dropped so that file 0 stays the checked
    /// file. A file that cannot be read is skipped (the compile-database reader warns).
    fn pre_include(&mut self) {
        let opts = self.opts;
        for file in &opts.pre_includes {
            let Ok(meta) = std::fs::metadata(file) else {
                continue;
            };
            if !meta.is_file() || meta.len() > MAX_INCLUDE_BYTES {
                continue;
            }
            let canon = std::fs::canonicalize(file).unwrap_or_else(|_| file.clone());
            self.run_header(file.clone(), canon, &meta, 1);
        }
        self.units.clear();
    }

    /// Defines (`Some`) or undefines `name`, keeping the fingerprint and the journal.
    fn set_macro(&mut self, name: String, value: Option<Macro>) {
        if let Some(old) = self.macros.remove(&name) {
            self.macro_fingerprint ^= headers::macro_fingerprint(&name, &old);
        }
        if let Some(m) = value {
            self.macro_fingerprint ^= headers::macro_fingerprint(&name, &m);
            self.macros.insert(name.clone(), m);
        }
        self.touched.push(name);
    }

    /// Runs the header at `path` (`canon` once resolved; `meta` its metadata), or replays what
    /// an earlier run of it did in the same state (see [`crate::headers`]). Returns false when
    /// the file could not be read as UTF-8 text.
    fn run_header(
        &mut self,
        path: PathBuf,
        canon: PathBuf,
        meta: &std::fs::Metadata,
        depth: usize,
    ) -> bool {
        let cache = self.opts.headers.clone();
        let key = cache.as_ref().map(|_| headers::RunKey {
            path: canon,
            len: meta.len(),
            modified: meta.modified().ok(),
            depth,
            first_unit: self.units.len() as u32,
            macros: self.macro_fingerprint,
            include_dirs: self.include_dirs,
        });
        if let (Some(cache), Some(key)) = (&cache, &key) {
            if let Some(run) = cache.run(key).filter(|r| r.fits(&self.seen)) {
                self.units.extend(run.units.iter().cloned());
                for (name, value) in &run.macros {
                    self.set_macro(name.clone(), value.clone());
                }
                self.seen.extend(run.seen.iter().cloned());
                // What an enclosing run being recorded must know of this one.
                self.stamps
                    .push((path.clone(), Some((meta.len(), meta.modified().ok()))));
                self.stamps.extend(run.stamps.iter().cloned());
                self.seen_asked
                    .extend(run.seen_before.iter().map(|(p, _)| p.clone()));
                return true;
            }
            cache.count_read();
        }
        let Ok(bytes) = std::fs::read(&path) else {
            return false;
        };
        let Ok(text) = String::from_utf8(bytes) else {
            return false;
        };
        let (units, touched, seen) = (self.units.len(), self.touched.len(), self.seen.len());
        let asked = self.seen_asked.len();
        let stamps = self.stamps.len();
        // Stamped as found, before the read: a change after it makes the entry stale.
        self.stamps
            .push((path.clone(), Some((meta.len(), meta.modified().ok()))));
        self.run(Some(path), Arc::from(text), depth);
        if let (Some(cache), Some(key)) = (cache, key) {
            let mut names: Vec<&String> = self.touched[touched..].iter().collect();
            names.sort();
            names.dedup();
            let macros = names
                .into_iter()
                .map(|n| (n.clone(), self.macros.get(n).cloned()))
                .collect();
            cache.keep_run(
                key,
                headers::IncludedRun {
                    units: self.units[units..].to_vec(),
                    macros,
                    seen: self.seen[seen..].to_vec(),
                    stamps: self.stamps[stamps + 1..].to_vec(),
                    seen_before: self.seen_asked[asked..]
                        .iter()
                        .map(|p| (p.clone(), self.seen[..seen].contains(p)))
                        .collect(),
                },
            );
        }
        true
    }

    fn run(&mut self, path: Option<PathBuf>, text: Arc<str>, depth: usize) {
        let file = FileId(self.units.len() as u32);
        if let Some(p) = &path {
            self.seen
                .push(std::fs::canonicalize(p).unwrap_or_else(|_| p.clone()));
        }
        // Reserve the slot so included files get later ids.
        self.units.push(Unit {
            file,
            path: path.clone(),
            text: text.clone(),
            clean: text.clone(),
            kernel_marks: Vec::new(),
        });
        let mut clean: Vec<u8> = text.as_bytes().to_vec();
        let mut conds: Vec<Cond> = Vec::new();
        let mut lex = LexState::default();
        let mut offset = 0usize;
        let lines: Vec<&str> = text.split_inclusive('\n').collect();
        let mut li = 0;
        while li < lines.len() {
            let line = lines[li];
            let line_start = offset;
            let active = conds.last().map(|c| c.active).unwrap_or(true);
            let started_in_comment = lex.in_block_comment;
            let stripped = strip_comments(line, &mut lex);
            let is_directive = !started_in_comment
                && stripped
                    .trim_start_matches(|c: char| c.is_whitespace() || c == '\u{feff}')
                    .starts_with('#');
            if !is_directive {
                if !active {
                    blank(&mut clean, line_start, line.len());
                }
                offset += line.len();
                li += 1;
                continue;
            }
            // Join continuation lines.
            let mut directive = stripped.trim_end_matches(['\n', '\r']).to_string();
            let mut total = line.len();
            li += 1;
            while directive.ends_with('\\') && li < lines.len() {
                directive.pop();
                directive.push(' ');
                let next = strip_comments(lines[li], &mut lex);
                directive.push_str(next.trim_end_matches(['\n', '\r']));
                total += lines[li].len();
                li += 1;
            }
            blank(&mut clean, line_start, total);
            offset += total;
            let d = directive
                .trim_start_matches(|c: char| c.is_whitespace() || c == '\u{feff}')
                .trim_start_matches('#')
                .trim_start();
            let (kw, rest) = split_word(d);
            match kw {
                "if" | "ifdef" | "ifndef" => {
                    let value = if !active {
                        Some(false)
                    } else {
                        match kw {
                            "if" => self.eval_if(rest),
                            "ifdef" => self.defined(rest.trim()),
                            _ => self.defined(rest.trim()).map(|v| !v),
                        }
                    };
                    // Unknown condition: take the first branch (documented in grammars/NOTES.md).
                    let take = active && value.unwrap_or(true);
                    conds.push(Cond {
                        parent_active: active,
                        taken: take,
                        active: take,
                    });
                }
                "elif" | "elifdef" | "elifndef" => {
                    if let Some(c) = conds.last_mut() {
                        if !c.parent_active || c.taken {
                            c.active = false;
                        } else {
                            let v = match kw {
                                "elif" => self.eval_if(rest),
                                "elifdef" => self.defined(rest.trim()),
                                _ => self.defined(rest.trim()).map(|v| !v),
                            };
                            // An unknown `#elif` after a false first branch: take it (first live branch).
                            let take = v.unwrap_or(true);
                            c.active = take;
                            c.taken = take;
                        }
                    }
                }
                "else" => {
                    if let Some(c) = conds.last_mut() {
                        c.active = c.parent_active && !c.taken;
                        c.taken = true;
                    }
                }
                "endif" => {
                    conds.pop();
                }
                _ if !active => {}
                "define" => self.define(rest, Span::new(file, line_start, line_start + total)),
                "undef" => {
                    let name = rest.trim();
                    if self.macros.contains_key(name) {
                        self.set_macro(name.to_string(), None);
                    }
                }
                "include" => self.include(rest.trim(), path.as_deref(), depth),
                _ => {}
            }
        }
        let clean = String::from_utf8(clean).unwrap_or_else(|_| text.to_string());
        self.units[file.0 as usize].clean = Arc::from(clean);
    }

    fn defined(&self, name: &str) -> Option<bool> {
        let name: String = name.chars().take_while(|c| is_ident_char(*c)).collect();
        if name.is_empty() {
            return None;
        }
        // C semantics: what neither the file, the options nor nvcc defines is undefined (this is
        // what `nvcc file.cu` compiles; pass `-D` to analyse another configuration).
        Some(self.macros.contains_key(&name))
    }

    fn eval_if(&self, cond: &str) -> Option<bool> {
        // Replace `defined X` / `defined(X)` before evaluating; unknown names make it unknown.
        let toks = tokens(cond);
        let mut s = String::new();
        let mut i = 0;
        while i < toks.len() {
            let (is_id, t) = toks[i];
            if is_id && t == "defined" {
                let mut j = i + 1;
                while toks.get(j).is_some_and(|x| x.1.trim().is_empty()) {
                    j += 1;
                }
                let paren = toks.get(j).map(|x| x.1) == Some("(");
                if paren {
                    j += 1;
                    while toks.get(j).is_some_and(|x| x.1.trim().is_empty()) {
                        j += 1;
                    }
                }
                let name = toks.get(j).map(|x| x.1).unwrap_or("");
                j += 1;
                if paren {
                    while toks.get(j).is_some_and(|x| x.1 != ")") {
                        j += 1;
                    }
                    j += 1;
                }
                match self.defined(name) {
                    Some(true) => s.push_str(" 1 "),
                    Some(false) => s.push_str(" 0 "),
                    None => return None,
                }
                i = j;
                continue;
            }
            s.push_str(t);
            i += 1;
        }
        // Remaining identifiers that are not macros are 0 in `#if` (C rule); function-like uses
        // of unknown macros and anything else unevaluable make the condition unknown.
        let toks = tokens(&s);
        let mut t = String::new();
        for (i, (is_id, w)) in toks.iter().enumerate() {
            let next_is_paren = toks[i + 1..]
                .iter()
                .find(|x| !x.1.trim().is_empty())
                .is_some_and(|x| x.1 == "(");
            if *is_id
                && !self.macros.contains_key(*w)
                && !next_is_paren
                && *w != "true"
                && *w != "false"
            {
                t.push_str(" 0 ");
            } else {
                t.push_str(w);
            }
        }
        eval_text(&t, &MacroEnv(&self.macros), 0).map(|v| v != 0)
    }

    fn define(&mut self, rest: &str, span: Span) {
        let rest = rest.trim_start();
        let name_len = rest
            .char_indices()
            .find(|(i, c)| {
                !(if *i == 0 {
                    is_ident_start(*c)
                } else {
                    is_ident_char(*c)
                })
            })
            .map(|(i, _)| i)
            .unwrap_or(rest.len());
        if name_len == 0 {
            return;
        }
        let name = rest[..name_len].to_string();
        let after = &rest[name_len..];
        let (params, body) = if let Some(p) = after.strip_prefix('(') {
            match p.find(')') {
                Some(close) => {
                    let params = p[..close]
                        .split(',')
                        .map(|x| x.trim().to_string())
                        .filter(|x| !x.is_empty())
                        .collect();
                    (Some(params), p[close + 1..].trim().to_string())
                }
                None => return,
            }
        } else {
            (None, after.trim().to_string())
        };
        // `_Pragma("unroll")` and attributes in the body: blanked as in the file's text.
        let body = blanked_attributes(&body).unwrap_or(body);
        self.set_macro(
            name,
            Some(Macro {
                params,
                body,
                span,
                fallback: None,
            }),
        );
    }

    fn include(&mut self, spec: &str, from: Option<&Path>, depth: usize) {
        // `"name"`: the including file's folder, then the include folders. `<name>`: only the
        // include folders the user gave (like a compiler's `-I`), so system headers are not
        // read unless asked for. Macro-named includes are not read.
        let (name, quoted) = if let Some(s) = spec.strip_prefix('"') {
            (s.split('"').next(), true)
        } else if let Some(s) = spec.strip_prefix('<') {
            (s.split('>').next(), false)
        } else {
            (None, false)
        };
        let Some(name) = name.filter(|n| !n.is_empty()) else {
            return;
        };
        if depth >= MAX_INCLUDE_DEPTH || self.units.len() >= MAX_INCLUDED_FILES {
            return;
        }
        let mut candidates = Vec::new();
        if let Some(dir) = from.and_then(|p| p.parent()).filter(|_| quoted) {
            candidates.push(dir.join(name));
        }
        for d in &self.opts.include_dirs {
            candidates.push(d.join(name));
        }
        for c in candidates {
            let Ok(meta) = std::fs::metadata(&c) else {
                continue;
            };
            if !meta.is_file() || meta.len() > MAX_INCLUDE_BYTES {
                continue;
            }
            let canon = std::fs::canonicalize(&c).unwrap_or_else(|_| c.clone());
            self.seen_asked.push(canon.clone());
            if self.seen.contains(&canon) {
                return; // included once: include guards and `#pragma once` have that effect
            }
            if self.run_header(c, canon, &meta, depth + 1) {
                return;
            }
        }
    }
}

fn split_word(s: &str) -> (&str, &str) {
    let end = s
        .find(|c: char| !c.is_ascii_alphanumeric() && c != '_')
        .unwrap_or(s.len());
    (&s[..end], &s[end..])
}

fn blank(buf: &mut [u8], start: usize, len: usize) {
    let end = (start + len).min(buf.len());
    for b in &mut buf[start..end] {
        // Keep line breaks (positions) and bytes of multi-byte characters would break UTF-8 if
        // partially replaced: replace every byte of a non-ASCII character too (all get spaces).
        if *b != b'\n' {
            *b = b' ';
        }
    }
}

const QUALIFIER_WORDS: &[&str] = &[
    "__device__",
    "__host__",
    "__forceinline__",
    "__noinline__",
    "inline",
    "__inline__",
    "static",
    "extern",
    "__global__",
    "__restrict__",
    "__inline",
];

/// When a macro body only opens and closes namespaces (`namespace a { inline namespace
/// N(x, y) {`, `} }`, `extern "C" {`, other such macros): the numbers of braces it leaves open
/// and closes.
fn namespace_braces(macros: &MacroTable, body: &str, depth: u32) -> Option<(u32, u32)> {
    if depth > 8 {
        return None;
    }
    let mut lex = LexState::default();
    let text: String = body
        .lines()
        .map(|l| strip_comments(l, &mut lex))
        .collect::<Vec<_>>()
        .join(" ");
    let b = text.as_bytes();
    let (mut open, mut close) = (0u32, 0u32);
    let mut i = 0;
    let mut after_namespace = false;
    while i < b.len() {
        let c = b[i] as char;
        if c.is_whitespace() {
            i += 1;
        } else if is_ident_start(c) {
            let s = i;
            while i < b.len() && is_ident_char(b[i] as char) {
                i += 1;
            }
            let word = &text[s..i];
            match word {
                "namespace" => after_namespace = true,
                "inline" | "extern" => {}
                _ if after_namespace => {
                    // The namespace's name, maybe computed by a function-like macro.
                    let mut j = i;
                    while j < b.len() && (b[j] as char).is_whitespace() {
                        j += 1;
                    }
                    if j < b.len() && b[j] == b'(' {
                        let mut level = 0i32;
                        while j < b.len() {
                            match b[j] {
                                b'(' => level += 1,
                                b')' => {
                                    level -= 1;
                                    if level == 0 {
                                        break;
                                    }
                                }
                                _ => {}
                            }
                            j += 1;
                        }
                        i = j + 1;
                    }
                }
                _ => {
                    let m = macros.get(word)?;
                    if m.params.is_some() {
                        return None;
                    }
                    let (o, c) = namespace_braces(macros, &m.body, depth + 1)?;
                    let closed_here = c.min(open);
                    open = open - closed_here + o;
                    close += c - closed_here;
                }
            }
        } else if c == '{' {
            open += 1;
            after_namespace = false;
        } else if c == '}' {
            if open > 0 {
                open -= 1;
            } else {
                close += 1;
            }
        } else if c == '"' && text[i..].starts_with("\"C\"") {
            i += 3;
        } else {
            return None;
        }
        if c == '{' || c == '}' {
            i += 1;
        }
    }
    Some((open, close))
}

/// Macros that stand for declaration qualifiers (`#define HD __host__ __device__`) or for
/// nothing: tree-sitter cannot parse `HD int f()`, so their uses are blanked. A macro containing
/// `__global__` becomes `__global__` in place when the name is long enough, else the offset is
/// remembered so the function is still recognized as a kernel.
fn blank_qualifier_macros(u: &mut Unit, macros: &MacroTable) {
    let kind = |name: &str| -> Option<bool> {
        let m = macros.get(name)?;
        if m.params.is_some() {
            return None;
        }
        let words: Vec<&str> = m.body.split_whitespace().collect();
        if !words.iter().all(|w| QUALIFIER_WORDS.contains(w)) {
            // Macros that only open or only close namespaces (`CUB_NAMESPACE_BEGIN`,
            // `THRUST_NAMESPACE_END`): blanked too, so the braces of a BEGIN/END pair vanish
            // together and the declarations between them are top-level items.
            return namespace_braces(macros, &m.body, 0)
                .and_then(|(open, close)| ((open > 0) != (close > 0)).then_some(false));
        }
        Some(words.contains(&"__global__"))
    };
    if !macros.keys().any(|k| kind(k).is_some()) {
        return;
    }
    let mut buf = u.clean.as_bytes().to_vec();
    let mut lex = LexState::default();
    let mut offset = 0usize;
    let mut marks = Vec::new();
    for line in u.clean.split_inclusive('\n') {
        let stripped = strip_comments(line, &mut lex);
        let mut in_str: Option<char> = None;
        let mut it = stripped.char_indices().peekable();
        while let Some((i, c)) = it.next() {
            if let Some(q) = in_str {
                if c == '\\' {
                    it.next();
                } else if c == q {
                    in_str = None;
                }
                continue;
            }
            if c == '"' || c == '\'' {
                in_str = Some(c);
                continue;
            }
            if !is_ident_start(c)
                || (i > 0 && stripped[..i].chars().next_back().is_some_and(is_ident_char))
            {
                continue;
            }
            let mut end = i + 1;
            while let Some(&(j, d)) = it.peek() {
                if is_ident_char(d) {
                    end = j + d.len_utf8();
                    it.next();
                } else {
                    break;
                }
            }
            let word = &stripped[i..end];
            let Some(is_kernel) = kind(word) else {
                continue;
            };
            let (s, e) = (offset + i, offset + end);
            for b in &mut buf[s..e] {
                *b = b' ';
            }
            if is_kernel {
                if e - s >= "__global__".len() {
                    buf[s..s + 10].copy_from_slice(b"__global__");
                } else {
                    marks.push(s);
                }
            }
        }
        offset += line.len();
    }
    if let Ok(t) = String::from_utf8(buf) {
        u.clean = Arc::from(t);
        u.kernel_marks = marks;
    }
}

/// Attribute syntax tree-sitter-cuda does not know (`__align__(16)`, `__attribute__((…))`,
/// `__declspec(…)`), the pragma operator (`_Pragma("unroll")`, a `#pragma` a macro can hold;
/// the analysis reads no pragma) and `__device__`/`__host__` on lambdas (`[=] __device__ (int
/// i)`) are blanked: they carry nothing the analysis needs and would be parse errors.
fn blank_attributes(u: &mut Unit) {
    if let Some(t) = blanked_attributes(&u.clean) {
        u.clean = Arc::from(t);
    }
}

/// `text` with the syntax [`blank_attributes`] removes blanked (same length and line breaks);
/// `None` when there is none.
fn blanked_attributes(text: &str) -> Option<String> {
    const ATTRS: &[&str] = &["__align__", "__attribute__", "__declspec", "_Pragma"];
    if !ATTRS.iter().any(|a| text.contains(a)) && !text.contains(']') {
        return None;
    }
    // Comments blanked, so that the scan below only sees code (strings are skipped below).
    let mut lex = LexState::default();
    let code: String = text
        .split_inclusive('\n')
        .map(|l| strip_comments(l, &mut lex))
        .collect();
    if code.len() != text.len() {
        return None;
    }
    let b = code.as_bytes();
    let mut buf = text.as_bytes().to_vec();
    let mut changed = false;
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c == b'"' || c == b'\'' {
            i += 1;
            while i < b.len() && b[i] != c && b[i] != b'\n' {
                if b[i] == b'\\' {
                    i += 1;
                }
                i += 1;
            }
            i += 1;
            continue;
        }
        if !(c.is_ascii_alphabetic() || c == b'_')
            || (i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_'))
        {
            i += 1;
            continue;
        }
        let start = i;
        while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
            i += 1;
        }
        let word = &code[start..i];
        if ATTRS.contains(&word) {
            let mut j = i;
            while j < b.len() && (b[j] == b' ' || b[j] == b'\t' || b[j] == b'\n' || b[j] == b'\r') {
                j += 1;
            }
            if j < b.len() && b[j] == b'(' {
                let mut depth = 0i32;
                let mut k = j;
                while k < b.len() {
                    match b[k] {
                        b'(' => depth += 1,
                        b')' => {
                            depth -= 1;
                            if depth == 0 {
                                break;
                            }
                        }
                        _ => {}
                    }
                    k += 1;
                }
                if k < b.len() {
                    for x in &mut buf[start..=k] {
                        if *x != b'\n' {
                            *x = b' ';
                        }
                    }
                    changed = true;
                    i = k + 1;
                }
            }
        } else if word == "__device__" || word == "__host__" {
            // A lambda's execution-space specifier follows its capture list.
            let mut j = start;
            while j > 0 && matches!(b[j - 1], b' ' | b'\t' | b'\n' | b'\r') {
                j -= 1;
            }
            if j > 0 && b[j - 1] == b']' {
                for x in &mut buf[start..i] {
                    *x = b' ';
                }
                changed = true;
            }
        }
    }
    if changed {
        String::from_utf8(buf).ok()
    } else {
        None
    }
}
