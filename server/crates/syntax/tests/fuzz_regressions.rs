//! Fuzzing on stable Rust: (1) every input the coverage-guided fuzz targets (`fuzz/` at the
//! repository root) ever crashed on is kept in `tests/fuzz_regressions/` and replayed here;
//! (2) a bounded, fixed-seed mutation fuzzer over the fixtures and examples, and (3) random edit
//! sequences checked against the incremental-reparse oracle, so CI exercises the same oracles
//! without nightly. `CUDARACE_FUZZ_MUTANTS=N` runs N mutants instead of the default.
//!
//! Regression files named `incremental-*` are `BASE \0 OPS` inputs of the incremental target;
//! all others are source text for the parse-and-lower target.

use cudarace_syntax::fuzzing::{check_incremental, check_lower};
use std::path::{Path, PathBuf};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../..")
}

fn seeds() -> Vec<(PathBuf, String)> {
    let root = repo_root();
    let mut paths = Vec::new();
    for dir in ["tests/fixtures", "examples"] {
        let mut stack = vec![root.join(dir)];
        while let Some(d) = stack.pop() {
            let Ok(rd) = std::fs::read_dir(&d) else {
                continue;
            };
            for e in rd.flatten() {
                let p = e.path();
                if p.is_dir() {
                    stack.push(p);
                } else if p.extension().is_some_and(|x| x == "cu" || x == "cuh") {
                    paths.push(p);
                }
            }
        }
    }
    paths.sort();
    paths
        .into_iter()
        .filter_map(|p| std::fs::read_to_string(&p).ok().map(|t| (p, t)))
        .collect()
}

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        // xorshift64: deterministic, so a failure reproduces from the printed mutant.
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
}

const TOKENS: &[&str] = &[
    "{",
    "}",
    "(",
    ")",
    "[",
    "]",
    ";",
    "#",
    "<",
    ">",
    "*",
    "&",
    "\n",
    "__syncthreads();",
    "threadIdx.x",
    "#define M(x) x\n",
    "#if 1\n",
    "#endif\n",
    "for (;;)",
    "if (",
    "return;",
    "__device__ ",
    "__global__ ",
    "template <int N>",
    "struct S { int a; float b; };",
    "->",
    ".x",
    "<<<",
    ">>>",
    "\"",
    "'",
    "\\",
    "/*",
    "*/",
    "//",
    "0x7fffffffffffffff",
    "-1",
    "goto l;",
];

fn mutate(rng: &mut Rng, text: &str) -> String {
    let mut b = text.as_bytes().to_vec();
    for _ in 0..1 + rng.below(4) {
        if b.is_empty() {
            b.extend_from_slice(TOKENS[rng.below(TOKENS.len())].as_bytes());
            continue;
        }
        let i = rng.below(b.len());
        match rng.below(6) {
            0 => {
                let j = (i + rng.below(20)).min(b.len());
                b.drain(i..j);
            }
            1 => {
                let t = TOKENS[rng.below(TOKENS.len())].as_bytes();
                b.splice(i..i, t.iter().copied());
            }
            2 => {
                let j = (i + rng.below(40)).min(b.len());
                let chunk = b[i..j].to_vec();
                let k = rng.below(b.len());
                b.splice(k..k, chunk);
            }
            3 => {
                const BYTES: &[u8] = b"abcxyz_0123 \t\n\"'\\/{}()";
                b[i] = BYTES[rng.below(BYTES.len())];
            }
            4 => {
                // Duplicate a whole line range: nests loops/blocks and repeats code.
                let j = (i + rng.below(200)).min(b.len());
                let chunk = b[i..j].to_vec();
                b.splice(j..j, chunk);
            }
            _ => b.truncate(i),
        }
    }
    String::from_utf8_lossy(&b).into_owned()
}

#[test]
fn replay_fuzz_regressions() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz_regressions");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("tests/fuzz_regressions exists")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    assert!(
        !files.is_empty(),
        "no regression inputs in {}",
        dir.display()
    );
    let mut failures = Vec::new();
    for p in &files {
        let data = std::fs::read(p).expect("readable regression input");
        let name = p.file_name().unwrap_or_default().to_string_lossy();
        let r = if name.starts_with("incremental-") {
            check_incremental(&data)
        } else {
            check_lower(&String::from_utf8_lossy(&data)).map(|_| ())
        };
        if let Err(e) = r {
            failures.push(format!("{}: {e}", p.display()));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn bounded_mutation_fuzz() {
    let n: usize = std::env::var("CUDARACE_FUZZ_MUTANTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2000);
    let seeds = seeds();
    assert!(
        seeds.len() > 50,
        "fixtures not found ({} seeds)",
        seeds.len()
    );
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut kernels = 0;
    for i in 0..n {
        let (path, text) = &seeds[rng.below(seeds.len())];
        let m = mutate(&mut rng, text);
        match check_lower(&m) {
            Ok(f) => kernels += f.kernels.len(),
            Err(e) => {
                let out = std::env::temp_dir().join(format!("cudarace-mutant-{i}.cu"));
                let _ = std::fs::write(&out, &m);
                panic!(
                    "mutant {i} of {}: {e} (saved {})",
                    path.display(),
                    out.display()
                );
            }
        }
    }
    // Guards the test itself: mutants must still contain kernels most of the time.
    assert!(kernels > n / 2, "only {kernels} kernels in {n} mutants");
}

#[test]
fn bounded_incremental_fuzz() {
    let n: usize = std::env::var("CUDARACE_FUZZ_MUTANTS")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .map(|v| v / 10)
        .unwrap_or(150);
    let seeds = seeds();
    let mut rng = Rng(0x2545_F491_4F6C_DD1D);
    for i in 0..n {
        let (path, text) = &seeds[rng.below(seeds.len())];
        let mut data = text.as_bytes().to_vec();
        data.push(0);
        for _ in 0..1 + rng.below(4) {
            let pos = rng.below(text.len() + 1) as u16;
            let ins = TOKENS[rng.below(TOKENS.len())].as_bytes();
            data.extend_from_slice(&pos.to_le_bytes());
            data.push(rng.below(8) as u8);
            data.push(ins.len() as u8);
            data.extend_from_slice(ins);
        }
        if let Err(e) = check_incremental(&data) {
            let out = std::env::temp_dir().join(format!("incremental-{i}"));
            let _ = std::fs::write(&out, &data);
            panic!(
                "edit sequence {i} on {}: {e} (saved {})",
                path.display(),
                out.display()
            );
        }
    }
}
