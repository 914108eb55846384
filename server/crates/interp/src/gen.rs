//! A seeded, deterministic generator of random small CUDA kernels (as source text) for the
//! differential test.
//!
//! The kernels are built to be *judgeable* by the interpreter on tiny launches (blockDim.x ≤ 8,
//! blockDim.y ≤ 2, gridDim.x ≤ 2, the scalar parameter `n` ≤ 16): shared indices stay inside the
//! declared sizes for such launches, loops have small constant or `n`-bounded trip counts, and the
//! only value that can steer control flow from memory is `v`, which the interpreter knows exactly
//! unless it came from an atomic. They mix the shapes the checker must handle: affine, xor,
//! modular and reversed indices; thread-dependent, block-dependent, parameter and data
//! conditions; loops with and without barriers (constant, strided and power-of-two); barriers at
//! top level, under conditions and in loops; early returns; `__syncwarp`; atomics on shared and
//! global memory; global writes at the thread's own index or colliding ones.

use std::fmt::Write;

/// One generated kernel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GeneratedKernel {
    pub seed: u64,
    pub name: String,
    pub text: String,
    /// The kernel uses `threadIdx.y` (launch it with `blockDim.y` in 1..=2).
    pub uses_y: bool,
    /// The same kernel with some accesses written in C++ (see [`GenOptions::cxx`]): what the
    /// checker is given, while the interpreter runs `text`. `None` when nothing was rewritten.
    pub cxx_text: Option<String>,
}

/// The launch sizes the generated kernels are designed for (indices stay in bounds).
pub const MAX_BLOCK_X: u64 = 8;
pub const MAX_BLOCK_Y: u64 = 2;
pub const MAX_PARAM_N: i64 = 16;

/// A small deterministic PRNG (SplitMix64), so that a seed names the same kernel forever.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed ^ 0x5851_f42d_4c95_7f2d)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// Uniform in `lo..=hi`.
    pub fn range(&mut self, lo: i64, hi: i64) -> i64 {
        lo + (self.next_u64() % ((hi - lo + 1) as u64)) as i64
    }
    pub fn chance(&mut self, percent: u64) -> bool {
        self.next_u64() % 100 < percent
    }
    pub fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[(self.next_u64() % xs.len() as u64) as usize]
    }
    /// An index into `weights`, chosen with probability proportional to its weight.
    pub fn weighted(&mut self, weights: &[u64]) -> usize {
        let total: u64 = weights.iter().sum();
        let mut r = self.next_u64() % total.max(1);
        for (i, w) in weights.iter().enumerate() {
            if r < *w {
                return i;
            }
            r -= w;
        }
        0
    }
}

struct Gen {
    options: GenOptions,
    rng: Rng,
    /// A disciplined kernel writes shared memory at per-thread (injective) indices, writes global
    /// memory at `gid` and synchronizes often: mostly race-free, with subtle races left.
    disciplined: bool,
    out: String,
    uses_y: bool,
    /// Loop variables in scope, each with its largest value.
    /// Loop variables in scope: name, largest value, and whether the loop is a `for` (where
    /// `continue` is safe: the step still runs).
    loop_vars: Vec<(String, i64, bool)>,
    next_var: usize,
    /// Statements emitted so far (bounds the kernel size).
    budget: usize,
}

/// Generates the kernel for `seed`.
/// Grammar switches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GenOptions {
    /// Conditions whose unsigned arithmetic wraps around for some threads or block sizes
    /// (`threadIdx.x - 1 > 5` holds at thread 0; `tid < blockDim.x - 3` holds for every thread
    /// when blockDim.x < 3). Off, the same seeds produce signed, non-wrapping forms instead.
    pub unsigned_wrap: bool,
    /// Statements on a two-dimensional shared tile, also through a row pointer.
    pub tiles: bool,
    /// A shared index table `p[threadIdx.x] = f(threadIdx.x)` used later as an index.
    pub tables: bool,
    /// A second text of the kernel ([`GeneratedKernel::cxx_text`]) where some accesses are
    /// written through C++: a lambda that stores (`[&](int k, int x) { s[k] = x; }`), a function
    /// object's `operator()`, a small accessor class (`View{s}[i]`, `View{s}.get(i)`, its member
    /// template `View{s}.template put<1>(i, x)`), a macro that expands to the subscript
    /// (`CX_AT(s, i) = x`) and an `int2` view of the array (`reinterpret_cast<int2 *>(s)[k / 2].x`). Same semantics, so a
    /// race the interpreter sees in the plain kernel must not be missed in the C++ one: the
    /// lowering of these constructs is checked against the interpreter. Also the same kernel
    /// with the shared array `t` or the parameter `g` an array of objects whose accesses are
    /// method calls on its elements (`t[i].set(x)`, `v += t[i].get()`; see `object_rewrite`).
    pub cxx: bool,
}

impl Default for GenOptions {
    fn default() -> Self {
        GenOptions {
            unsigned_wrap: true,
            tiles: true,
            tables: true,
            cxx: true,
        }
    }
}

/// Generates the kernel for `seed` with the full grammar.
pub fn generate(seed: u64) -> GeneratedKernel {
    generate_with(seed, &GenOptions::default())
}

/// Generates the kernel for `seed`.
pub fn generate_with(seed: u64, options: &GenOptions) -> GeneratedKernel {
    let mut g = Gen {
        options: *options,
        rng: Rng::new(seed),
        disciplined: false,
        out: String::new(),
        uses_y: false,
        loop_vars: Vec::new(),
        next_var: 0,
        budget: 14,
    };
    g.uses_y = g.rng.chance(15);
    g.disciplined = g.rng.chance(50);
    let name = format!("k{seed}");
    let _ = writeln!(g.out, "__global__ void {name}(int *g, int *h, int n) {{");
    let _ = writeln!(g.out, "    __shared__ int s[64];");
    let _ = writeln!(g.out, "    __shared__ int t[128];");
    if g.uses_y {
        let _ = writeln!(
            g.out,
            "    int tid = threadIdx.y * blockDim.x + threadIdx.x;"
        );
        let _ = writeln!(
            g.out,
            "    int gid = blockIdx.x * (blockDim.x * blockDim.y) + tid;"
        );
    } else {
        let _ = writeln!(g.out, "    int tid = threadIdx.x;");
        let _ = writeln!(g.out, "    int gid = blockIdx.x * blockDim.x + tid;");
    }
    let _ = writeln!(g.out, "    int v = h[gid];");
    let count = g.rng.range(2, 7);
    for _ in 0..count {
        g.stmt(1, 0);
        if g.disciplined && g.rng.chance(60) {
            g.line(1, "__syncthreads();");
        }
    }
    g.out.push_str("}\n");
    let text = if options.tiles {
        add_tile_statements(seed, &g.out)
    } else {
        g.out
    };
    let text = if options.tables {
        add_table_statements(seed, &text)
    } else {
        text
    };
    let cxx_text = if options.cxx {
        // Only kernels in C++ form already: the plain ones keep the precision check, which
        // matches findings by span.
        cxx_rewrite(seed, &text).map(|r| object_rewrite(seed, &r).unwrap_or(r))
    } else {
        None
    };
    GeneratedKernel {
        seed,
        name,
        text,
        uses_y: g.uses_y,
        cxx_text,
    }
}

/// Definitions the C++ forms of [`cxx_rewrite`] use, put before the kernel.
const CXX_PRELUDE: &str = "\
#define CX_AT(arr, k) arr[(k)]
struct View {
    int *p;
    __device__ int &operator[](int i) const { return p[i]; }
    __device__ int get(int i) { return p[i]; }
    __device__ int get(int i) const { return p[i]; }
    template <int D>
    __device__ void put(int i, int x) const { p[i * D] = x; }
};
struct Store {
    __device__ void operator()(int *q, int k, int x) const { q[k] = x; }
};
";

/// Rewrites some plain stores `a[i] = x;` and loads `v = a[i];` / `v += a[i];` of the kernel
/// into equivalent C++ forms (see [`GenOptions::cxx`]). A separate random stream decides them.
/// `None` when no line was rewritten.
fn cxx_rewrite(seed: u64, text: &str) -> Option<String> {
    let mut rng = Rng::new(seed ^ 0x6378_7863_7878_6378);
    if !rng.chance(60) {
        return None;
    }
    let mut out = String::from(CXX_PRELUDE);
    let mut changed = false;
    for line in text.lines() {
        let indent = &line[..line.len() - line.trim_start().len()];
        let body = line.trim_start();
        let rewritten = cxx_store(body, &mut rng)
            .or_else(|| cxx_load(body, &mut rng))
            .filter(|_| rng.chance(50));
        match rewritten {
            Some(r) => {
                changed = true;
                let _ = writeln!(out, "{indent}{r}");
            }
            None => {
                let _ = writeln!(out, "{line}");
            }
        }
    }
    changed.then_some(out)
}

/// `a[i] = x;` for one of the kernel's `int` arrays (no nested `]` in `x`), as (a, i, x).
fn split_store(body: &str) -> Option<(&str, &str, &str)> {
    let (lhs, rhs) = body.strip_suffix(';')?.split_once(" = ")?;
    let (a, rest) = lhs.split_once('[')?;
    let i = rest.strip_suffix(']')?;
    if !matches!(a, "s" | "t" | "g" | "p") || i.contains(']') && !i.ends_with(']') {
        return None;
    }
    Some((a, i, rhs))
}

fn cxx_store(body: &str, rng: &mut Rng) -> Option<String> {
    let (a, i, x) = split_store(body)?;
    let shared = matches!(a, "s" | "t" | "p");
    Some(match rng.weighted(&[3, 2, 3, if shared { 3 } else { 0 }, 2, 2]) {
        0 => format!("{{ auto cx_put = [&](int k, int x) {{ {a}[k] = x; }}; cx_put({i}, {x}); }}"),
        1 => format!("Store{{}}({a}, {i}, {x});"),
        2 => format!("{{ View cx_w{{{a}}}; cx_w[{i}] = {x}; }}"),
        4 => format!("CX_AT({a}, {i}) = {x};"),
        5 => format!("View{{{a}}}.template put<1>({i}, {x});"),
        _ => format!(
            "{{ int cx_k = {i}; int cx_x = {x}; if (cx_k % 2 == 0) reinterpret_cast<int2 *>({a})[cx_k / 2].x = cx_x; else reinterpret_cast<int2 *>({a})[cx_k / 2].y = cx_x; }}"
        ),
    })
}

/// The class of [`object_rewrite`]'s arrays of objects: `val` is the element, `pad` a member
/// no method touches (in a `__shared__` array each member is a cell of its own).
const OBJECT_PRELUDE: &str = "\
struct Cell {
    int val;
    int pad;
    __device__ void set(int x) { val = x; }
    __device__ int get() const { return val; }
    __device__ void add(int x) { val += x; }
    __device__ void add_to(int &acc) const { acc += val; }
};
";

/// Turns the shared array `t` or the parameter `g` (or both) into an array of `Cell` objects
/// whose every access is a method call on an element (`t[i].set(x)`, `v = t[i].get()`,
/// `t[i].add_to(v)`, `t[i].add(t[j].get())`) or the member (`atomicAdd(&g[i].val, 1)`), so
/// that the lowering of methods on objects in memory is checked against the interpreter
/// (which runs the plain kernel). An array with a use of another form (a pointer to it, an
/// access the C++ rewrite changed already) is left as it is. `None` when neither changed.
fn object_rewrite(seed: u64, text: &str) -> Option<String> {
    let mut rng = Rng::new(seed ^ 0x6f62_6a65_6374_7321);
    if !rng.chance(50) {
        return None;
    }
    let mut out = text.to_string();
    let mut changed = false;
    for arr in ["t", "g"] {
        if !rng.chance(60) {
            continue;
        }
        if let Some(r) = objects_of(&out, arr, &mut rng) {
            out = r;
            changed = true;
        }
    }
    changed.then(|| format!("{OBJECT_PRELUDE}{out}"))
}

/// Whether `line` names the identifier `name`.
fn mentions(line: &str, name: &str) -> bool {
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    line.match_indices(name).any(|(at, _)| {
        let before = line[..at].chars().next_back();
        let after = line[at + name.len()..].chars().next();
        !before.is_some_and(ident) && !after.is_some_and(ident)
    })
}

/// The text with every use of `arr` rewritten as a use of an array of `Cell`s (see
/// [`object_rewrite`]), or `None` when one of its uses has another form.
fn objects_of(text: &str, arr: &str, rng: &mut Rng) -> Option<String> {
    let mut out = String::new();
    for line in text.lines() {
        let indent = &line[..line.len() - line.trim_start().len()];
        let body = line.trim_start();
        let rewritten = if !mentions(body, arr) {
            body.to_string()
        } else if body.starts_with("__global__ void ") && arr == "g" {
            body.replacen("int *g", "Cell *g", 1)
        } else if body == "__shared__ int t[128];" && arr == "t" {
            "__shared__ Cell t[128];".to_string()
        } else {
            object_use(body, arr, rng)?
        };
        let _ = writeln!(out, "{indent}{rewritten}");
    }
    Some(out)
}

/// One statement on `arr` as a use of its objects: `a[i] = x;`, `v = a[i];`, `v += a[i];`,
/// `a[i] += a[j];`, `atomicAdd(&a[i], x);` (the index and value not naming `arr`).
fn object_use(body: &str, arr: &str, rng: &mut Rng) -> Option<String> {
    let own = |s: &str| !mentions(s, arr);
    if let Some(rest) = body.strip_prefix(&format!("atomicAdd(&{arr}[")) {
        let (i, x) = rest.strip_suffix(");")?.split_once("], ")?;
        return (own(i) && own(x)).then(|| format!("atomicAdd(&{arr}[{i}].val, {x});"));
    }
    if let Some((op, rest)) = body
        .strip_prefix("v = ")
        .map(|r| ("=", r))
        .or_else(|| body.strip_prefix("v += ").map(|r| ("+=", r)))
    {
        let i = rest.strip_prefix(&format!("{arr}["))?.strip_suffix("];")?;
        if !own(i) {
            return None;
        }
        return Some(match (op, rng.chance(50)) {
            ("+=", true) => format!("{arr}[{i}].add_to(v);"),
            _ => format!("v {op} {arr}[{i}].get();"),
        });
    }
    let stmt = body.strip_suffix(';')?;
    let (lhs, x, compound) = match stmt.split_once(" += ") {
        Some((l, r)) => (l, r, true),
        None => {
            let (l, r) = stmt.split_once(" = ")?;
            (l, r, false)
        }
    };
    let i = lhs.strip_prefix(&format!("{arr}["))?.strip_suffix(']')?;
    if !own(i) {
        return None;
    }
    // `a[i] += a[j];`
    let other = x
        .strip_prefix(&format!("{arr}["))
        .and_then(|r| r.strip_suffix(']'))
        .filter(|j| own(j));
    match (compound, other) {
        (true, Some(j)) => Some(format!("{arr}[{i}].add({arr}[{j}].get());")),
        (true, None) => own(x).then(|| format!("{arr}[{i}].add({x});")),
        (false, _) => own(x).then(|| format!("{arr}[{i}].set({x});")),
    }
}

/// `v = a[i];` or `v += a[i];`.
fn cxx_load(body: &str, rng: &mut Rng) -> Option<String> {
    let (op, rest) = if let Some(r) = body.strip_prefix("v = ") {
        ("=", r)
    } else {
        ("+=", body.strip_prefix("v += ")?)
    };
    let (a, rest) = rest.strip_suffix(';')?.split_once('[')?;
    let i = rest.strip_suffix(']')?;
    if !matches!(a, "s" | "t" | "g" | "h" | "p") || i.contains('[') {
        return None;
    }
    Some(match rng.weighted(&[1, 1, 1]) {
        0 => format!("v {op} [&](int k) {{ return {a}[k]; }}({i});"),
        1 => format!("v {op} View{{{a}}}.get({i});"),
        _ => format!("{{ const View cx_r{{{a}}}; v {op} cx_r[{i}]; }}"),
    })
}

/// Inserts statements on a two-dimensional shared tile `m[8][16]` (row-major indices, transposed
/// indices, and accesses through a row pointer `int *row = &m[threadIdx.y][0]`) at top-level
/// statement boundaries. A separate random stream decides them, so that the rest of a seed's
/// kernel is the same with and without tiles.
fn add_tile_statements(seed: u64, text: &str) -> String {
    let mut rng = Rng::new(seed ^ 0x7469_6c65_7469_6c65);
    let count = rng.weighted(&[5, 3, 2]);
    if count == 0 {
        return text.to_string();
    }
    const PAIRS: [(&str, &str); 6] = [
        ("threadIdx.y", "threadIdx.x"),
        ("threadIdx.x", "threadIdx.y"),
        ("threadIdx.y", "threadIdx.x ^ 1"),
        ("threadIdx.x / 2", "threadIdx.y"),
        ("0", "threadIdx.x"),
        ("threadIdx.x % 4", "threadIdx.x / 4"),
    ];
    let lines: Vec<&str> = text.lines().collect();
    let (_, boundaries) = top_level_boundaries(&lines);
    let mut inserts: Vec<(usize, Vec<String>)> = Vec::new();
    for k in 0..count {
        let at = *rng.pick(&boundaries);
        let mut stmt = Vec::new();
        match rng.weighted(&[4, 3, 3]) {
            0 => {
                let (a, b) = rng.pick(&PAIRS);
                let val = rng.pick(&["tid", "v", "v + 1"]);
                stmt.push(format!("    m[{a}][{b}] = {val};"));
            }
            1 => {
                let (a, b) = rng.pick(&PAIRS);
                stmt.push(format!("    v += m[{a}][{b}];"));
            }
            _ => {
                let row = format!("row{k}");
                stmt.push(format!("    int *{row} = &m[threadIdx.y][0];"));
                if rng.chance(50) {
                    stmt.push(format!("    {row}[threadIdx.x] = tid;"));
                } else {
                    let i = rng.pick(&[
                        "threadIdx.x ^ 1",
                        "threadIdx.x",
                        "(threadIdx.x + 1) % blockDim.x",
                    ]);
                    stmt.push(format!("    v += {row}[{i}];"));
                }
            }
        }
        if rng.chance(40) {
            stmt.push("    __syncthreads();".to_string());
        }
        inserts.push((at, stmt));
    }
    insert_statements(&lines, &inserts, "    __shared__ int m[8][16];")
}

/// Inserts an index table `p[threadIdx.x] = f(threadIdx.x)` right after the prologue (injective
/// or not, sometimes followed by a barrier) and statements that index `s` through it or read it
/// back at top-level boundaries further on. Cells no thread wrote hold the interpreter's initial
/// garbage; `& 63` keeps every index inside `s`. A separate random stream decides them.
fn add_table_statements(seed: u64, text: &str) -> String {
    let mut rng = Rng::new(seed ^ 0x7461_626c_6574_6162);
    if !rng.chance(40) {
        return text.to_string();
    }
    const TABLES: [&str; 5] = [
        "(int)threadIdx.x",
        "63 - (int)threadIdx.x",
        "(int)threadIdx.x * 5 % 64",
        "(int)threadIdx.x / 2",
        "(int)threadIdx.x + 1",
    ];
    const USES: [&str; 5] = [
        "    s[p[threadIdx.x] & 63] = tid;",
        "    v += s[p[threadIdx.x] & 63];",
        "    s[p[(threadIdx.x + 1) % blockDim.x] & 63] = v;",
        "    v += p[threadIdx.x ^ 1];",
        "    t[p[threadIdx.x] & 63] += 1;",
    ];
    let lines: Vec<&str> = text.lines().collect();
    let (prologue_end, boundaries) = top_level_boundaries(&lines);
    let mut table = vec![format!("    p[threadIdx.x] = {};", rng.pick(&TABLES))];
    if rng.chance(60) {
        table.push("    __syncthreads();".to_string());
    }
    let mut inserts: Vec<(usize, Vec<String>)> = vec![(prologue_end, table)];
    for _ in 0..rng.range(1, 4) {
        let mut stmt = vec![rng.pick(&USES).to_string()];
        if rng.chance(30) {
            stmt.push("    __syncthreads();".to_string());
        }
        inserts.push((*rng.pick(&boundaries), stmt));
    }
    insert_statements(&lines, &inserts, "    __shared__ int p[64];")
}

/// The line after the prologue (`int v = h[gid];`), and the lines where top-level statements
/// start after it (indentation exactly 4, not a closing brace) or the kernel ends.
fn top_level_boundaries(lines: &[&str]) -> (usize, Vec<usize>) {
    let prologue_end = lines
        .iter()
        .position(|l| l.trim_start().starts_with("int v = h[gid];"))
        .map_or(lines.len(), |p| p + 1);
    let boundaries = (prologue_end..lines.len())
        .filter(|&i| {
            let l = lines[i];
            (l.starts_with("    ") && !l.starts_with("     ") && !l.trim_start().starts_with('}'))
                || l == "}"
        })
        .collect();
    (prologue_end, boundaries)
}

/// The kernel with `inserts` (statements before line `at`) and `declaration` after the
/// `__shared__ int t[128];` line.
fn insert_statements(
    lines: &[&str],
    inserts: &[(usize, Vec<String>)],
    declaration: &str,
) -> String {
    let mut out = String::new();
    for (i, l) in lines.iter().enumerate() {
        for (at, stmt) in inserts {
            if *at == i {
                for s in stmt {
                    out.push_str(s);
                    out.push('\n');
                }
            }
        }
        out.push_str(l);
        out.push('\n');
        if l.trim_start().starts_with("__shared__ int t[128];") {
            out.push_str(declaration);
            out.push('\n');
        }
    }
    out
}

impl Gen {
    fn line(&mut self, indent: usize, s: &str) {
        for _ in 0..indent {
            self.out.push_str("    ");
        }
        self.out.push_str(s);
        self.out.push('\n');
    }

    fn fresh(&mut self, base: &str) -> String {
        self.next_var += 1;
        format!("{base}{}", self.next_var)
    }

    /// Number of threads of a block, as an expression.
    fn block_size(&self) -> &'static str {
        if self.uses_y {
            "(blockDim.x * blockDim.y)"
        } else {
            "blockDim.x"
        }
    }

    /// A shared index in `0..64` for every launch the kernels are designed for.
    fn shared_index(&mut self) -> String {
        let mut choices: Vec<String> = vec![
            "tid".into(),
            format!("tid + {}", self.rng.range(1, 8)),
            format!("tid ^ {}", self.rng.range(1, 7)),
            format!("(tid * {}) % 64", self.rng.range(2, 3)),
            format!("{} - 1 - tid", self.block_size()),
            "tid / 2".into(),
            "tid % 4".into(),
            "2 * tid + 1".into(),
            format!("{}", self.rng.range(0, 8)),
            "(v & 63)".into(),
            "tid >> 1".into(),
            "(tid << 2) | 1".into(),
            "1 << (tid % 4)".into(),
            // A shift by a parameter (an integer case per amount): one cell per thread at
            // `n & 3 == 0`, threads meeting otherwise; a digit of a value by a shift.
            "(tid >> (n & 3))".into(),
            "((v >> (n & 7)) & 15)".into(),
            // Packed bit fields (disjoint: sums): the id rebuilt from two fields, a field
            // dropped (threads 4 apart meet), a flag next to a field.
            "((tid % 4) | ((tid / 4 % 16) << 2))".into(),
            "((tid % 4) | ((tid / 8 % 16) << 2))".into(),
            "((int)(v > 0) | ((tid % 16) << 1))".into(),
            // Masks with a constant (integer runs of bits): the id rebuilt, a pair's even cell.
            "((tid & 56) | (tid & 7))".into(),
            "(tid & ~1)".into(),
        ];
        if let Some((var, _, _)) = self.loop_vars.last().cloned() {
            choices.push(format!("tid + {var}"));
            choices.push(var.to_string());
            choices.push(format!("({var} * 16 + tid) % 64"));
        }
        self.rng.pick(&choices).clone()
    }

    /// An index for a write: in disciplined kernels one each thread owns (per statement).
    fn write_index(&mut self) -> String {
        if !self.disciplined || self.rng.chance(10) {
            return self.shared_index();
        }
        let mut choices: Vec<String> = vec![
            "tid".into(),
            "tid".into(),
            format!("tid + {}", self.rng.range(1, 8)),
            format!("tid ^ {}", self.rng.range(1, 7)),
            format!("{} - 1 - tid", self.block_size()),
            "2 * tid + 1".into(),
        ];
        if let Some((var, _, _)) = self.loop_vars.last().cloned() {
            choices.push(format!("({var} * 16 + tid) % 64"));
        }
        self.rng.pick(&choices).clone()
    }

    fn global_write_index(&mut self) -> String {
        if self.disciplined && self.rng.chance(85) {
            if self.rng.chance(20) {
                // The global id taken apart by a parameter and put back together (mixed radix:
                // one cell per thread).
                return self
                    .rng
                    .pick(&[
                        "gid / (n + 1) * (n + 1) + gid % (n + 1)",
                        "gid % (n + 1) + (n + 1) * (gid / (n + 1))",
                    ])
                    .to_string();
            }
            "gid".into()
        } else {
            self.global_index()
        }
    }

    fn global_index(&mut self) -> String {
        let mut choices: Vec<String> = vec![
            "gid".into(),
            "gid".into(),
            "tid".into(),
            "blockIdx.x".into(),
            format!("{}", self.rng.range(0, 3)),
            "gid + 1".into(),
            "gid ^ 1".into(),
            "gid / 2".into(),
            // Digits by a parameter: recomposed (one cell per thread), one dropped (threads
            // `n + 1` apart meet), or a row of width `n + 1` with the column from the id.
            "gid / (n + 1) * (n + 1) + gid % (n + 1)".into(),
            "gid / (n + 1) % 2 * (n + 1) + gid % (n + 1)".into(),
            "blockIdx.x * (n + 1) + threadIdx.x % (n + 1)".into(),
            // A strided digit (a remainder times a size): inside a row wide enough for it,
            // or past a row too narrow (rows meet).
            "gid / (n + 1) * ((n + 1) * (n + 1)) + gid % (n + 1) * (n + 1)".into(),
            "gid / (n + 1) * (n + 1) + gid % (n + 1) * (n + 1)".into(),
            // The low digit subtracted before the division (`(i - i % w) / w` is `i / w`), and
            // subtracted before a division by another divisor (no such identity: rows meet).
            "(gid - gid % (n + 1)) / (n + 1) * (n + 1) + gid % (n + 1)".into(),
            "(gid - gid % (n + 1)) / (n + 2) * (n + 1) + gid % (n + 1)".into(),
            // The leading digit by a remainder: the id itself under the guard
            // `gid < (n + 1) * (n + 2)` (see `condition`), ids `(n + 1) * (n + 2)` apart meet
            // without it.
            "gid / (n + 1) % (n + 2) * (n + 1) + gid % (n + 1)".into(),
            // Digits of a remainder by a coarser modulus put together again: the remainder
            // itself when the digit's radix divides the modulus (ids `2(n + 1)` apart meet),
            // no such identity when it does not.
            "gid % ((n + 1) * 2) / (n + 1) * (n + 1) + gid % (n + 1)".into(),
            "gid % ((n + 1) * 2 + 1) / (n + 1) * (n + 1) + gid % (n + 1)".into(),
            // The digits converted to unsigned first: the checker does not know the sign of
            // `n + 1` there, so each conversion may wrap in its terms; the number put together
            // again is the id where none wraps (always, for the `n` the interpreter runs).
            "(unsigned)(gid / (n + 1)) * (n + 1) + (unsigned)(gid % (n + 1))".into(),
        ];
        if let Some((var, _, _)) = self.loop_vars.last().cloned() {
            choices.push(format!("gid + {var}"));
            choices.push(format!("{var} * (n + 1) + gid % (n + 1)"));
        }
        self.rng.pick(&choices).clone()
    }

    fn value(&mut self) -> String {
        let choices: Vec<String> = vec![
            "tid".into(),
            format!("{}", self.rng.range(0, 9)),
            "v".into(),
            "v + 1".into(),
            "gid".into(),
            "n".into(),
        ];
        self.rng.pick(&choices).clone()
    }

    fn condition(&mut self) -> String {
        let mut choices: Vec<String> = vec![
            format!("tid < {}", self.rng.range(1, 8)),
            format!("tid == {}", self.rng.range(0, 7)),
            "tid % 2 == 0".into(),
            format!("(tid & {}) == 0", self.rng.range(1, 4)),
            "blockIdx.x == 0".into(),
            format!("n > {}", self.rng.range(0, 12)),
            "tid < n".into(),
            format!("v > {}", self.rng.range(0, 7)),
            format!("blockDim.x > {}", self.rng.range(1, 6)),
            "gid < (n + 1) * (n + 2)".into(),
        ];
        let (a, b, c) = (
            self.rng.range(1, 2),
            self.rng.range(3, 6),
            self.rng.range(1, 4),
        );
        if self.options.unsigned_wrap {
            // Unsigned arithmetic: wraps at thread 0 / for small blocks.
            choices.push(format!("threadIdx.x - {a} > {b}"));
            choices.push(format!("tid < blockDim.x - {c}"));
        } else {
            choices.push(format!("tid - {a} > {b}"));
            choices.push(format!("tid + {c} < blockDim.x"));
        }
        choices.extend([format!("(tid >> 1) == {}", self.rng.range(0, 3))]);
        // Comparisons combined with bitwise operators (`x < w & y < h`): the checker rewrites
        // them into logical ones.
        let (d, e) = (self.rng.range(1, 8), self.rng.range(0, 12));
        choices.push(format!("(tid < {d}) & (n > {e})"));
        choices.push(format!("(tid == {}) | (v > {})", d - 1, e % 7));
        choices.push(format!("(tid < {d}) ^ (blockIdx.x == 0)"));
        if self.uses_y {
            choices.push("threadIdx.y == 0".into());
        }
        if let Some((var, _, _)) = self.loop_vars.last().cloned() {
            choices.push(format!("{var} < tid"));
            choices.push(format!("{var} == 1"));
        }
        self.rng.pick(&choices).clone()
    }

    fn array(&mut self) -> &'static str {
        if self.rng.chance(75) {
            "s"
        } else {
            "t"
        }
    }

    fn stmt(&mut self, indent: usize, depth: usize) {
        if self.budget == 0 {
            return;
        }
        self.budget -= 1;
        let nested = depth < 2;
        // shared write, shared read, shared rmw, global write, global read, atomic, barrier,
        // if, if-else, for loop, strided loop, early return, tree reduction, syncwarp, while loop,
        // conditional break, conditional continue, ping-pong buffers, grid-stride loop
        let weights: [u64; 19] = [
            14,
            9,
            6,
            8,
            4,
            if self.disciplined { 2 } else { 5 },
            if depth == 0 { 10 } else { 4 },
            if nested { 8 } else { 0 },
            if nested { 4 } else { 0 },
            if nested { 6 } else { 0 },
            if nested { 3 } else { 0 },
            3,
            if depth == 0 { 3 } else { 0 },
            2,
            if nested { 3 } else { 0 },
            if self.loop_vars.is_empty() { 0 } else { 3 },
            if self.loop_vars.last().is_some_and(|l| l.2) {
                2
            } else {
                0
            },
            if depth == 0 { 3 } else { 0 },
            if nested { 3 } else { 0 },
        ];
        let choice = self.rng.weighted(&weights);
        match choice {
            0 => {
                let (a, i, v) = (self.array(), self.write_index(), self.value());
                self.line(indent, &format!("{a}[{i}] = {v};"));
            }
            1 => {
                let a = self.array();
                let i = if self.rng.chance(50) {
                    self.write_index()
                } else {
                    self.shared_index()
                };
                let op = if self.rng.chance(50) { "=" } else { "+=" };
                self.line(indent, &format!("v {op} {a}[{i}];"));
            }
            2 => {
                let (a, i, j) = (self.array(), self.write_index(), self.shared_index());
                self.line(indent, &format!("{a}[{i}] += {a}[{j}];"));
            }
            3 => {
                let (i, v) = (self.global_write_index(), self.value());
                self.line(indent, &format!("g[{i}] = {v};"));
            }
            4 => {
                let i = self.global_index();
                let arr = if self.rng.chance(50) { "g" } else { "h" };
                self.line(indent, &format!("v += {arr}[{i}];"));
            }
            5 => {
                if self.rng.chance(50) {
                    let (a, i) = (self.array(), self.shared_index());
                    self.line(indent, &format!("atomicAdd(&{a}[{i}], 1);"));
                } else {
                    let i = self.global_index();
                    self.line(indent, &format!("atomicAdd(&g[{i}], tid);"));
                }
            }
            6 => self.line(indent, "__syncthreads();"),
            7 | 8 => {
                let c = self.condition();
                self.line(indent, &format!("if ({c}) {{"));
                self.block(indent + 1, depth + 1);
                if choice == 8 {
                    self.line(indent, "} else {");
                    self.block(indent + 1, depth + 1);
                }
                self.line(indent, "}");
            }
            9 => {
                let var = self.fresh("i");
                let (bound, max) = if self.rng.chance(20) {
                    ("n".to_string(), MAX_PARAM_N - 1)
                } else {
                    let b = self.rng.range(1, 3);
                    (b.to_string(), b - 1)
                };
                self.line(
                    indent,
                    &format!("for (int {var} = 0; {var} < {bound}; {var}++) {{"),
                );
                self.loop_vars.push((var, max, true));
                if self.rng.chance(20) {
                    self.line(indent + 1, "__syncthreads();");
                }
                self.block(indent + 1, depth + 1);
                if self.rng.chance(40) {
                    self.line(indent + 1, "__syncthreads();");
                }
                self.loop_vars.pop();
                self.line(indent, "}");
            }
            10 => {
                // A block-stride loop over a small range: each thread owns the cells `j` with
                // `j % blockDim == tid`, unless the body touches other cells.
                let var = self.fresh("j");
                let limit = if self.rng.chance(50) {
                    "n".to_string()
                } else {
                    format!("{}", self.rng.range(4, 40))
                };
                let bs = self.block_size();
                self.line(
                    indent,
                    &format!("for (int {var} = tid; {var} < {limit}; {var} += {bs}) {{"),
                );
                let a = self.array();
                let target = if self.rng.chance(70) {
                    var.clone()
                } else {
                    format!("{var} + 1")
                };
                let v = self.value();
                self.line(indent + 1, &format!("{a}[{target}] = {v};"));
                if self.rng.chance(25) {
                    self.line(indent + 1, "__syncthreads();");
                }
                self.line(indent, "}");
            }
            11 => {
                let c = self.condition();
                self.line(indent, &format!("if ({c}) return;"));
            }
            12 => {
                let var = self.fresh("st");
                let bs = self.block_size();
                let a = self.array();
                self.line(
                    indent,
                    &format!("for (int {var} = 1; {var} < {bs}; {var} *= 2) {{"),
                );
                let cond = if self.rng.chance(60) {
                    format!("tid % (2 * {var}) == 0")
                } else {
                    format!("tid < {var}")
                };
                self.line(
                    indent + 1,
                    &format!("if ({cond}) {a}[tid] += {a}[tid + {var}];"),
                );
                if self.rng.chance(70) {
                    self.line(indent + 1, "__syncthreads();");
                }
                self.line(indent, "}");
            }
            13 => self.line(indent, "__syncwarp();"),
            14 => {
                // A count-down while loop (or do-while) with an optional barrier.
                let var = self.fresh("w");
                let start = self.rng.range(1, 3);
                self.line(indent, &format!("int {var} = {start};"));
                let do_while = self.rng.chance(30);
                self.line(
                    indent,
                    if do_while {
                        "do {".to_string()
                    } else {
                        format!("while ({var} > 0) {{")
                    }
                    .as_str(),
                );
                self.loop_vars.push((var.clone(), start, false));
                self.block(indent + 1, depth + 1);
                if self.rng.chance(40) {
                    self.line(indent + 1, "__syncthreads();");
                }
                self.loop_vars.pop();
                self.line(indent + 1, &format!("{var}--;"));
                if do_while {
                    self.line(indent, &format!("}} while ({var} > 0);"));
                } else {
                    self.line(indent, "}");
                }
            }
            15 => {
                let c = self.condition();
                self.line(indent, &format!("if ({c}) break;"));
            }
            16 => {
                let c = self.condition();
                self.line(indent, &format!("if ({c}) continue;"));
            }
            17 => {
                // Double buffering: correct only with a barrier after the reads too (the next
                // iteration overwrites what this one read).
                let (cur, it) = (self.fresh("c"), self.fresh("p"));
                let a = self.array();
                self.line(indent, &format!("int {cur} = 0;"));
                self.line(indent, &format!("for (int {it} = 0; {it} < 3; {it}++) {{"));
                self.line(indent + 1, &format!("{a}[{cur} * 32 + tid] = v + {it};"));
                if self.rng.chance(80) {
                    self.line(indent + 1, "__syncthreads();");
                }
                let other = if self.rng.chance(50) {
                    "tid ^ 1"
                } else {
                    "tid"
                };
                self.line(
                    indent + 1,
                    &format!("v += {a}[(1 - {cur}) * 32 + ({other})];"),
                );
                if self.rng.chance(50) {
                    self.line(indent + 1, "__syncthreads();");
                }
                self.line(indent + 1, &format!("{cur} = 1 - {cur};"));
                self.line(indent, "}");
            }
            _ => {
                // Grid-stride loop over global memory; with the block stride alone, blocks collide.
                let var = self.fresh("k");
                let bs = self.block_size();
                let stride = if self.rng.chance(70) {
                    format!("{bs} * gridDim.x")
                } else {
                    bs.to_string()
                };
                let v = self.value();
                if self.rng.chance(25) {
                    // A block's batch of `2 * (n + 1)` cells walked block-stride and cut into a
                    // channel `c / (n + 1)` (below 2 by the loop's guard) and a point: a cell per
                    // thread and iteration, unless the loop runs a channel too far (`3 * (n +
                    // 1)`: the next block's first channel).
                    let channels = if self.rng.chance(70) { 2 } else { 3 };
                    self.line(
                        indent,
                        &format!(
                            "for (int {var} = tid; {var} < {channels} * (n + 1); {var} += {bs}) {{"
                        ),
                    );
                    self.line(
                        indent + 1,
                        &format!(
                            "g[blockIdx.x * (2 * (n + 1)) + {var} / (n + 1) * (n + 1) + {var} % (n + 1)] = {v};"
                        ),
                    );
                    self.line(indent, "}");
                    return;
                }
                if self.rng.chance(40) {
                    // Two counters stepping together: a chunk count next to the index (the
                    // index is the count's linear function, `gid + c * stride`).
                    let count = self.fresh("c");
                    let chunks = self.rng.range(1, 4);
                    self.line(
                        indent,
                        &format!(
                            "for (int {count} = 0, {var} = gid; {count} < {chunks} && {var} < n; {count}++, {var} += {stride}) {{"
                        ),
                    );
                } else {
                    self.line(
                        indent,
                        &format!("for (int {var} = gid; {var} < n; {var} += {stride}) {{"),
                    );
                }
                self.line(indent + 1, &format!("g[{var}] = {v};"));
                self.line(indent, "}");
            }
        }
    }

    fn block(&mut self, indent: usize, depth: usize) {
        let count = self.rng.range(1, 3);
        for _ in 0..count {
            self.stmt(indent, depth);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generation_is_deterministic_per_seed() {
        assert_eq!(generate(42), generate(42));
        assert_ne!(generate(42).text, generate(43).text);
    }

    #[test]
    fn the_wrap_switch_only_changes_the_wrapping_forms() {
        let off = GenOptions {
            unsigned_wrap: false,
            tiles: false,
            tables: false,
            cxx: false,
        };
        let all_off: String = (0..300).map(|s| generate_with(s, &off).text).collect();
        assert!(!all_off.contains("threadIdx.x - ") && !all_off.contains("tid < blockDim.x - "));
        assert!(
            all_off.contains("tid + 1 < blockDim.x") || all_off.contains("tid + 2 < blockDim.x")
        );
        let wrap_only = GenOptions {
            unsigned_wrap: true,
            tiles: false,
            tables: false,
            cxx: false,
        };
        for seed in 0..300 {
            let (a, b) = (
                generate_with(seed, &wrap_only).text,
                generate_with(seed, &off).text,
            );
            assert_eq!(a.lines().count(), b.lines().count(), "seed {seed}");
        }
    }

    /// The C++ text differs from the plain one only in rewritten accesses (same line count after
    /// the prelude), and every form shows up over a few hundred seeds.
    #[test]
    fn cxx_forms_rewrite_accesses_only() {
        let mut rewritten = 0;
        let mut forms = [0usize; 15];
        let marks = [
            "cx_put(",
            "Store{}(",
            "cx_w[",
            "CX_AT(",
            ".template put<1>(",
            "reinterpret_cast<int2 *>",
            "[&](int k) { return",
            ".get(",
            "cx_r[",
            // Arrays of objects (`object_rewrite`).
            "].set(",
            "].get()",
            "].add_to(v)",
            "].add(",
            "].val, ",
            "Cell ",
        ];
        for seed in 0..300 {
            let g = generate(seed);
            let Some(cxx) = &g.cxx_text else { continue };
            rewritten += 1;
            let body = cxx.strip_prefix(OBJECT_PRELUDE).unwrap_or(cxx);
            let body = body
                .strip_prefix(CXX_PRELUDE)
                .expect("the prelude comes first");
            assert_eq!(body.lines().count(), g.text.lines().count(), "seed {seed}");
            for (plain, c) in g.text.lines().zip(body.lines()) {
                if plain != c {
                    assert!(marks.iter().any(|m| c.contains(m)), "seed {seed}: {c}");
                }
            }
            for (k, m) in marks.iter().enumerate() {
                forms[k] += usize::from(body.contains(m));
            }
        }
        assert!((100..=250).contains(&rewritten), "{rewritten} of 300");
        assert!(forms.iter().all(|&n| n > 0), "{forms:?}");
    }

    #[test]
    fn tables_only_insert_statements() {
        let plain = GenOptions {
            tables: false,
            ..GenOptions::default()
        };
        let mut with_tables = 0;
        for seed in 0..300 {
            let (a, b) = (generate(seed).text, generate_with(seed, &plain).text);
            let mut rest = a.lines();
            for line in b.lines() {
                assert!(rest.any(|l| l == line), "seed {seed}: `{line}` lost\n{a}");
            }
            if a != b {
                with_tables += 1;
                assert!(a.contains("__shared__ int p[64];") && a.contains("p[threadIdx.x] = "));
            }
        }
        assert!((60..=180).contains(&with_tables), "{with_tables} of 300");
    }

    #[test]
    fn tiles_only_insert_statements() {
        let plain = GenOptions {
            unsigned_wrap: true,
            tiles: false,
            tables: false,
            cxx: false,
        };
        let tiled = GenOptions {
            tables: false,
            ..GenOptions::default()
        };
        let mut with_tiles = 0;
        for seed in 0..300 {
            let (a, b) = (
                generate_with(seed, &tiled).text,
                generate_with(seed, &plain).text,
            );
            // Every line of the plain kernel appears, in order, in the tiled one.
            let mut rest = a.lines();
            for line in b.lines() {
                assert!(rest.any(|l| l == line), "seed {seed}: `{line}` lost\n{a}");
            }
            if a != b {
                with_tiles += 1;
                assert!(a.contains("__shared__ int m[8][16];"));
                assert_eq!(a.matches('{').count(), a.matches('}').count());
            }
        }
        assert!(with_tiles > 100, "{with_tiles}");
    }

    #[test]
    fn kernels_are_balanced_and_named() {
        for seed in 0..300 {
            let k = generate(seed);
            assert!(k.text.starts_with(&format!("__global__ void k{seed}(")));
            let opens = k.text.matches('{').count();
            let closes = k.text.matches('}').count();
            assert_eq!(opens, closes, "unbalanced braces in\n{}", k.text);
        }
    }

    #[test]
    fn the_grammar_is_covered() {
        let all: String = (0..300).map(|s| generate(s).text).collect();
        for needle in [
            "__syncthreads();",
            "__syncwarp();",
            "atomicAdd(&",
            "return;",
            "for (int i",
            "for (int j",
            "*= 2",
            "} else {",
            "while (w",
            "} while (w",
            "break;",
            "< n; i",
            "continue;",
            "threadIdx.x - ",
            "* gridDim.x",
            "(1 - c",
            "__shared__ int m[8][16];",
            "= &m[threadIdx.y][0];",
            "m[threadIdx.x][threadIdx.y]",
            "threadIdx.y",
            "tid ^ ",
            "(v & 63)",
            "(tid >> (n & 3))",
            "((tid % 4) | ((tid / 4 % 16) << 2))",
            "((tid & 56) | (tid & 7))",
            "g[gid] =",
            "gid / (n + 1) * (n + 1) + gid % (n + 1)",
            "% 2 * (n + 1)",
            "* (2 * (n + 1)) + k",
        ] {
            assert!(
                all.contains(needle),
                "no generated kernel contains `{needle}`"
            );
        }
    }
}
