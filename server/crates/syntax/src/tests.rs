//! Lowering tests: each lowers a small CUDA source and compares the IR's compact text form
//! (see [`crate::pretty`]).

use crate::*;
use cudarace_ir::*;

fn lower_str(src: &str) -> FileIr {
    lower_source(None, src, &FrontendOptions::default())
}

fn kernel<'f>(f: &'f FileIr, name: &str) -> &'f Kernel {
    f.kernels
        .iter()
        .find(|k| k.name == name)
        .unwrap_or_else(|| {
            panic!(
                "kernel {name} not found; have {:?}",
                f.kernels.iter().map(|k| &k.name).collect::<Vec<_>>()
            )
        })
}

fn body(src: &str, name: &str) -> String {
    let f = lower_str(src);
    let k = kernel(&f, name);
    assert!(
        k.unsupported.is_none(),
        "unexpected unsupported: {:?}",
        k.unsupported
    );
    pretty::body(k)
}

fn lines(s: &str) -> String {
    // Expected texts are written indented in the test source; strip the common indent.
    let ls: Vec<&str> = s.lines().filter(|l| !l.trim().is_empty()).collect();
    let ind = ls
        .iter()
        .map(|l| l.len() - l.trim_start().len())
        .min()
        .unwrap_or(0);
    ls.iter().map(|l| format!("{}\n", &l[ind..])).collect()
}

#[track_caller]
fn check(src: &str, name: &str, expected: &str) {
    let got = body(src, name);
    let exp = lines(expected);
    assert_eq!(got, exp, "\n--- got ---\n{got}\n--- expected ---\n{exp}");
}

#[test]
fn shared_array_reads_writes_and_barrier() {
    check(
        r#"
__global__ void k(int *out) {
  __shared__ int s[64];
  int tid = threadIdx.x;
  s[tid] = tid;
  __syncthreads();
  out[tid] = s[tid + 1];
}"#,
        "k",
        "
        tid := threadIdx.x
        write#0 s[tid] = tid
        sync
        read#1 s[(tid + 1)]
        write#2 out[tid] = @1
        ",
    );
}

#[test]
fn arrays_params_and_dims() {
    let f = lower_str(
        r#"
#define T 16
template <int B>
__global__ void k(const float* __restrict__ a, float *b, int n, unsigned m) {
  __shared__ float tile[T][T + 1];
  __shared__ int flag;
  extern __shared__ double dyn[];
}"#,
    );
    let k = kernel(&f, "k");
    let text = pretty::kernel(k);
    assert_eq!(
        text,
        lines(
            "
            kernel k
              param a: ptr
              param b: ptr
              param n: i32
              param m: u32
              param B: i32 template
              array a: Global Param(0) float [?]
              array b: Global Param(1) float [?]
              array tile: Shared SharedDecl float [16, 17]
              array flag: Shared SharedDecl i32 []
              array dyn: Shared ExternShared float [?]
            "
        )
    );
    assert_eq!(
        &f.files[0].text[k.name_span.start as usize..k.name_span.end as usize],
        "k"
    );
}

#[test]
fn access_span_covers_the_subscript() {
    let src =
        "__global__ void k(int *a) {\n  __shared__ int s[8];\n  a[0] = s[threadIdx.x + 1];\n}\n";
    let f = lower_str(src);
    let k = kernel(&f, "k");
    let Stmt::Access(acc) = &k.body[0] else {
        panic!("{:?}", k.body)
    };
    assert_eq!(
        &src[acc.span.start as usize..acc.span.end as usize],
        "s[threadIdx.x + 1]"
    );
}

#[test]
fn broken_host_code_does_not_stop_kernels() {
    let src = r#"
int main( { this is not C++ at all ;;; }}
__global__ void k(int *a) { a[threadIdx.x] = 1; }
void host() { for (int i = 0; i < ; }
__global__ void k2(int *a) { a[0] = 2; }
"#;
    let f = lower_str(src);
    assert!(!f.syntax_errors.is_empty());
    check(src, "k", "write#0 a[threadIdx.x] = 1");
    check(src, "k2", "write#0 a[0] = 2");
}

#[test]
fn error_inside_kernel_is_opaque_only_there() {
    let src = r#"
__global__ void k(int *a) {
  __shared__ int s[32];
  s[threadIdx.x] = 1;
  s[0] = = 3 @@;
  int y = 1, z = 2;
  y = z @@ 4;
  __syncthreads();
  a[threadIdx.x] = s[threadIdx.x];
}"#;
    let f = lower_str(src);
    assert!(!f.syntax_errors.is_empty());
    let k = kernel(&f, "k");
    let b = pretty::body(k);
    assert!(
        b.starts_with("write#0 s[threadIdx.x] = 1\nopaque(syntax error; arrays=[s]; locals=[]"),
        "{b}"
    );
    assert!(b.contains("may_sync"), "{b}");
    // Only the assigned local is havocked, not the ones merely read.
    assert!(
        b.contains("opaque(syntax error; arrays=[]; locals=[y]; may_sync)"),
        "{b}"
    );
    assert!(
        b.ends_with("sync\nread#1 s[threadIdx.x]\nwrite#2 a[threadIdx.x] = @1\n"),
        "{b}"
    );
}

#[test]
fn locals_arithmetic_and_control() {
    check(
        r#"
__global__ void k(int *a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  unsigned u = (unsigned)i >> 1;
  int x;
  if (i < n && (i & 1) == 0) { a[i] = u ^ 3; } else a[i] = -1;
  while (n > 0) { n /= 2; }
  do { i--; } while (i % 4 != 0);
  for (int j = 0; j < 4; j++) { if (j == 2) continue; if (j == 3) break; }
}"#,
        "k",
        "
        n := $n
        i := ((blockIdx.x * blockDim.x) + threadIdx.x)
        u := ((u32)(i) >> 1)
        x := ?0
        if ((i < n) && ((i & 1) == 0)) {
          write#0 a[i] = (u ^ 3)
        } else {
          write#1 a[i] = -1
        }
        while (n > 0) {
          body:
            n := (n / 2)
        }
        do ((i % 4) != 0) {
          body:
            i := (i - 1)
        }
        for (j < 4) {
          init:
            j := 0
          step:
            j := (j + 1)
          body:
            if (j == 2) {
              continue
            }
            if (j == 3) {
              break
            }
        }
        ",
    );
}

#[test]
fn reassigned_param_becomes_local() {
    let f = lower_str("__global__ void k(int *a, int n) { while (n > 0) { n /= 2; } }");
    let k = kernel(&f, "k");
    assert_eq!(pretty::body(k).lines().next(), Some("n := $n"));
}

#[test]
fn compound_assignment_and_increment_order() {
    check(
        r#"
__global__ void k(int *a, int *b) {
  a[threadIdx.x] += b[threadIdx.x];
  a[1]++;
  a[2] = b[3];
}"#,
        "k",
        "
        read#0 b[threadIdx.x]
        read#1 a[threadIdx.x]
        write#2 a[threadIdx.x] = (@1 + @0)
        read#3 a[1]
        write#4 a[1] = (@3 + 1)
        read#5 b[3]
        write#6 a[2] = @5
        ",
    );
}

#[test]
fn atomics_are_atomic_accesses() {
    check(
        r#"
__global__ void k(int *a, unsigned *c) {
  __shared__ int cnt;
  int old = atomicAdd(&a[threadIdx.x], 1);
  atomicAdd(a + 4, 2);
  atomicCAS_block(&cnt, 0, 1);
  atomicInc(c, 10u);
}"#,
        "k",
        "
        atomic#0 a[threadIdx.x]
        old := ?0
        atomic#1 a[4]
        atomic#2 cnt
        atomic#3 c[0]
        ",
    );
}

#[test]
fn pointer_aliases_resolve_to_flat_offsets() {
    check(
        r#"
#define W 32
__global__ void k(float *p, int k0) {
  __shared__ float tile[8][W + 1];
  float *row = &tile[threadIdx.y][0];
  row[threadIdx.x] = 1.0f;
  float *q = p + k0;
  q[threadIdx.x] = 2;
  *(p + threadIdx.x) = 3;
  float *r = tile[2];
  r[1] = 4;
}"#,
        "k",
        "
        write#0 tile{((threadIdx.y * 33) + threadIdx.x)} = 1.0
        write#1 p[($k0 + threadIdx.x)] = 2
        write#2 p[threadIdx.x] = 3
        write#3 tile{67} = 4
        ",
    );
}

#[test]
fn pointer_reassigned_between_arrays_is_opaque_even_before_the_assignment() {
    // The loop body reads through `in` before `in` is swapped: the first lowering pass saw
    // only `a`; the re-lowering makes both accesses ambiguous.
    let b = body(
        r#"
__global__ void k(float *a, float *b, int n) {
  float *in = a, *out = b;
  for (int i = 0; i < n; i++) {
    out[threadIdx.x] = in[threadIdx.x];
    float *t = in; in = out; out = t;
  }
}"#,
        "k",
    );
    assert!(
        b.contains(
            "opaque(read through a pointer that may point into different arrays; arrays=[a,b]"
        ),
        "{b}"
    );
    assert!(
        b.contains(
            "opaque(write through a pointer that may point into different arrays; arrays=[b,a]"
        ) || b.contains(
            "opaque(write through a pointer that may point into different arrays; arrays=[a,b]"
        ),
        "{b}"
    );
    assert!(!b.contains("write#"), "{b}");
}

#[test]
fn pointer_ternary_between_arrays_accesses_the_chosen_one() {
    // The condition is kept in a local when the pointer is chosen (cxx/choice.rs).
    check(
        "__global__ void k(float *a, float *b, int c) { float *p = c ? a : b; p[threadIdx.x] = 0; }",
        "k",
        "
        pointer.choice := ($c != 0)
        if pointer.choice {
          write#0 a[threadIdx.x] = 0
        } else {
          write#1 b[threadIdx.x] = 0
        }
        ",
    );
}

#[test]
fn pointer_ternary_reassigned_to_a_third_array_is_opaque() {
    let b = body(
        "__global__ void k(float *a, float *b, float *d, int c) { float *p = c ? a : b; if (threadIdx.x == 0) p = d; p[threadIdx.x] = 0; }",
        "k",
    );
    assert!(
        b.contains("opaque(write through a pointer that may point into different arrays"),
        "{b}"
    );
}

#[test]
fn pointer_offset_advanced_in_loop() {
    check(
        "__global__ void k(float *p, int n) { for (int i = 0; i < n; i++) { p[threadIdx.x] = 0; p += blockDim.x; } }",
        "k",
        "
        p.offset := 0
        for (i < $n) {
          init:
            i := 0
            loop.counter.entry := i
            pointer.offset.entry := p.offset
          step:
            i := (i + 1)
          body:
            p.offset := (pointer.offset.entry + ((i - loop.counter.entry) * blockDim.x))
            write#0 p[(p.offset + threadIdx.x)] = 0
            p.offset := (p.offset + blockDim.x)
        }
        ",
    );
}

#[test]
fn device_function_inlined_with_pointer_and_early_return() {
    check(
        r#"
__device__ void store(float *dst, int i, float v) {
  if (i >= 32) return;
  dst[i] = v;
}
__device__ int twice(int x) { return 2 * x; }
__global__ void k(float *a) {
  __shared__ float s[32];
  store(s, threadIdx.x, 1.0f);
  a[twice(threadIdx.x)] = s[0];
}"#,
        "k",
        "
        store.returned := false
        if (threadIdx.x >= 32) {
          store.returned := true
        }
        if !store.returned {
          write#0 s[threadIdx.x] = 1.0
        }
        read#1 s[0]
        write#2 a[(2 * threadIdx.x)] = @1
        ",
    );
}

#[test]
fn device_return_inside_loop_breaks() {
    check(
        r#"
__device__ int find(const int *v, int n) {
  for (int i = 0; i < n; i++) { if (v[i] == 0) return i; }
  return -1;
}
__global__ void k(int *a, int n) { a[threadIdx.x] = find(a, n); }"#,
        "k",
        "
        find.returned := false
        find.result := ?0
        for (i < $n) {
          init:
            i := 0
          step:
            i := (i + 1)
          body:
            read#0 a[i]
            if (@0 == 0) {
              find.result := i
              find.returned := true
              break
            }
            if find.returned {
              break
            }
        }
        if !find.returned {
          find.result := -1
          find.returned := true
        }
        write#1 a[threadIdx.x] = find.result
        ",
    );
}

#[test]
fn recursion_is_unsupported() {
    let f = lower_str(
        r#"
__device__ int fact(int n) { return n <= 1 ? 1 : n * fact(n - 1); }
__global__ void k(int *a) { a[0] = fact(threadIdx.x); }"#,
    );
    let k = kernel(&f, "k");
    assert!(
        k.unsupported.as_deref().unwrap_or("").contains("recursive"),
        "{:?}",
        k.unsupported
    );
}

#[test]
fn object_and_function_macros_expand_at_use_site() {
    let src = r#"
#define BS 128
#define IDX(r, c) ((r) * BS + (c))
#define SYNC() __syncthreads()
#define STORE(arr, i, v) do { arr[i] = v; } while (0)
__global__ void k(int *a) {
  a[IDX(threadIdx.y, threadIdx.x)] = BS;
  SYNC();
  STORE(a, threadIdx.x, 7);
}"#;
    check(
        src,
        "k",
        "
        write#0 a[((threadIdx.y * 128) + threadIdx.x)] = 128
        sync
        do false {
          body:
            write#1 a[threadIdx.x] = 7
        }
        ",
    );
    let f = lower_str(src);
    let k = kernel(&f, "k");
    let Stmt::Loop(l) = &k.body[2] else { panic!() };
    let Stmt::Access(acc) = &l.body[0] else {
        panic!()
    };
    assert_eq!(
        &src[acc.span.start as usize..acc.span.end as usize],
        "STORE(a, threadIdx.x, 7)"
    );
}

#[test]
fn conditional_compilation() {
    let src = r#"
#define USE_SHARED 1
#if USE_SHARED && BLOCK > 0
#define MODE 1
#elif USE_SHARED
#define MODE 2
#else
#define MODE 3
#endif
#ifdef NOT_DEFINED_ANYWHERE
#define OTHER 10
#else
#define OTHER 20
#endif
__global__ void k(int *a) {
#if USE_SHARED == 0
  a[0] = 1;
#else
  a[1] = MODE;
#endif
  a[2] = OTHER;
#pragma unroll
  for (int i = 0; i < 2; i++) a[i] = 0;
}"#;
    // C semantics: `BLOCK` and NOT_DEFINED_ANYWHERE are undefined (0 / false).
    check(
        src,
        "k",
        "
        write#0 a[1] = 2
        write#1 a[2] = 20
        for (i < 2) {
          init:
            i := 0
          step:
            i := (i + 1)
          body:
            write#2 a[i] = 0
        }
        ",
    );
    let opts = FrontendOptions {
        defines: vec![
            ("BLOCK".into(), "4".into()),
            ("NOT_DEFINED_ANYWHERE".into(), String::new()),
        ],
        ..Default::default()
    };
    let f = lower_source(None, src, &opts);
    assert!(pretty::body(kernel(&f, "k")).starts_with("write#0 a[1] = 1\nwrite#1 a[2] = 10\n"));
    // A condition that cannot be evaluated takes the first branch; nvcc's macros are defined.
    let src2 = "#if __has_include(<foo.h>)\n#define A 1\n#else\n#define A 2\n#endif\n#if defined(__CUDACC__) && __CUDA_ARCH__ >= 700\n#define B 3\n#endif\n__global__ void k(int *a) { a[A] = B; }";
    check(src2, "k", "write#0 a[1] = 3");
}

#[test]
fn if_split_across_statement_keeps_kernel() {
    check(
        r#"
__global__ void k(int *a, int n) {
#ifdef FAST
  for (int i = threadIdx.x; i < n; i += 32) {
#else
  for (int i = threadIdx.x; i < n; i += 64) {
#endif
    a[i] = 0;
  }
}"#,
        "k",
        "
        for (i < $n) {
          init:
            i := threadIdx.x
          step:
            i := (i + 64)
          body:
            write#0 a[i] = 0
        }
        ",
    );
}

#[test]
fn include_files_are_read() {
    let dir = std::env::temp_dir().join(format!("cudarace-syntax-inc-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("common.cuh"), "#pragma once\n#define TILE 8\n__device__ int lane(int t) { return t % 32; }\n__global__ void inc_kernel(int *p) { p[0] = 1; }\n").unwrap();
    let main = dir.join("main.cu");
    let src = "#include \"common.cuh\"\n#include <cstdio>\n__global__ void k(int *a) { __shared__ int s[TILE]; s[lane(threadIdx.x)] = a[0]; }\n";
    std::fs::write(&main, src).unwrap();
    let f = lower_source(Some(&main), src, &FrontendOptions::default());
    assert_eq!(f.files.len(), 2);
    let k = kernel(&f, "k");
    assert_eq!(
        pretty::kernel(k).lines().find(|l| l.contains("array s")),
        Some("  array s: Shared SharedDecl i32 [8]")
    );
    assert_eq!(
        pretty::body(k),
        "read#0 a[0]\nwrite#1 s[(threadIdx.x % 32)] = @0\n"
    );
    let inc = kernel(&f, "inc_kernel");
    assert_eq!(inc.span.file, FileId(1));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn templates_bind_values_from_instantiation_or_launch() {
    let f = lower_str(
        r#"
template <int B, typename T> __global__ void red(T *a) { __shared__ T s[B]; s[threadIdx.x] = a[threadIdx.x]; }
template __global__ void red<256, float>(float *);
template <unsigned N> __global__ void k2(int *a) { a[threadIdx.x] = N; }
template <int M> __global__ void k3(int *a) { a[0] = M; }
void host(int *d) { k2<64><<<1, 64>>>(d); k3<1><<<1,1>>>(d); k3<2><<<1,1>>>(d); }
"#,
    );
    let red = kernel(&f, "red");
    assert_eq!(red.params[1].name, "B");
    assert!(red.params[1].is_template);
    assert_eq!(red.params[1].value, Some(256));
    assert_eq!(red.arrays[1].dims, vec![Some(Expr::Param(ParamId(1)))]);
    assert_eq!(kernel(&f, "k2").params[1].value, Some(64));
    // Two different instantiations: the parameter stays symbolic.
    assert_eq!(kernel(&f, "k3").params[1].value, None);
}

#[test]
fn header_line_defines() {
    use crate::annotations::header_defines;
    let text = "// --blockDim=64 -DN=32 -D M -D K=4 -DX=\n//--gridDim=1 -DBAD-NAME -D\nint x;\n";
    assert_eq!(
        header_defines(text),
        vec![
            ("N".to_string(), "32".to_string()),
            ("M".to_string(), String::new()),
            ("K".to_string(), "4".to_string()),
            ("X".to_string(), String::new()),
        ]
    );
    // Not a header line: no definitions.
    assert!(header_defines("// see -DN=3\nint x;\n").is_empty());
    // The options' `-D` wins over the header's.
    let src = "//--blockDim=64 -DN=32\n__global__ void k(int *a) { a[0] = N; }\n";
    let opts = FrontendOptions {
        defines: vec![("N".into(), "7".into())],
        ..Default::default()
    };
    let f = crate::lower_source(None, src, &opts);
    let text = crate::pretty::kernel(&f.kernels[0]);
    assert!(text.contains("= 7"), "{text}");
    let f = crate::lower_source(None, src, &FrontendOptions::default());
    let text = crate::pretty::kernel(&f.kernels[0]);
    assert!(text.contains("= 32"), "{text}");
}

#[test]
fn launch_sites_header_and_annotation() {
    let f = lower_str(
        r#"//--blockDim=[16,16] --gridDim=64
#define THREADS 128
// cudarace: blockDim=(32,8) gridDim=(4)
__global__ void __launch_bounds__(THREADS, 2) k(int *a) { a[0] = 1; }
extern "C" __global__ void k2(int *a) {}
int main() {
  dim3 block(16, 16);
  dim3 grid = dim3(4, 4);
  int n = 1000;
  k<<<grid, block>>>(0);
  k2<<<(n + THREADS - 1) / THREADS, THREADS, 0>>>(0);
  int m = 5; m = 6;
  k2<<<m, 32>>>(0);
}"#,
    );
    assert_eq!(f.header_launch.block_dim, [Some(16), Some(16), Some(1)]);
    assert_eq!(f.header_launch.grid_dim, [Some(64), Some(1), Some(1)]);
    let k = kernel(&f, "k");
    assert_eq!(k.launch_bounds, Some(128));
    assert_eq!(k.annotated_launch.block_dim, [Some(32), Some(8), Some(1)]);
    assert_eq!(k.annotated_launch.grid_dim, [Some(4), Some(1), Some(1)]);
    assert!(kernel(&f, "k2").annotated_launch.is_empty());
    let sites: Vec<_> = f
        .launch_sites
        .iter()
        .map(|s| (s.kernel.as_str(), s.grid_dim, s.block_dim))
        .collect();
    assert_eq!(
        sites,
        vec![
            ("k", Some([4, 4, 1]), Some([16, 16, 1])),
            ("k2", Some([8, 1, 1]), Some([128, 1, 1])),
            ("k2", None, Some([32, 1, 1]))
        ]
    );
}

#[test]
fn barriers_of_every_kind() {
    check(
        r#"
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
__global__ void k(int *a) {
  cg::thread_block block = cg::this_thread_block();
  auto grid = cg::this_grid();
  __syncwarp();
  __syncwarp(0xffffffff);
  __syncwarp(0x0000ffff);
  int c = __syncthreads_count(a[0] > 0);
  block.sync();
  cg::this_thread_block().sync();
  grid.sync();
  cg::sync(block);
  __threadfence();
  int v = __shfl_down_sync(0xffffffff, c, 1);
}"#,
        "k",
        "
        syncwarp
        syncwarp
        syncwarp(65535)
        read#0 a[0]
        sync
        c := ?0
        sync
        sync
        grid.sync
        sync
        v := ?1
        ",
    );
}

#[test]
fn short_circuit_and_ternary_with_accesses_become_ifs() {
    check(
        r#"
__global__ void k(int *a, int n) {
  int t = threadIdx.x;
  if (t < n && a[t] > 0) a[t] = 0;
  int v = t > 0 ? a[t - 1] : 0;
}"#,
        "k",
        "
        t := threadIdx.x
        logical.tmp := (t < $n)
        if (t < $n) {
          read#0 a[t]
          logical.tmp := (@0 > 0)
        }
        if logical.tmp {
          write#1 a[t] = 0
        }
        if (t > 0) {
          read#2 a[(t - 1)]
          conditional.tmp := @2
        } else {
          conditional.tmp := 0
        }
        v := conditional.tmp
        ",
    );
}

#[test]
fn min_max_casts_and_constants() {
    check(
        r#"
enum { RADIUS = 3, WIDTH = RADIUS * 2 + 1 };
__global__ void k(int *a, int n) {
  const int c = WIDTH;
  constexpr unsigned m = 0x10u;
  int i = min(threadIdx.x, n - 1);
  a[i] = static_cast<int>(sizeof(float)) + c + m;
  a[max(i, 0)] = 1;
}"#,
        "k",
        "
        i := ((threadIdx.x < ($n - 1)) ? threadIdx.x : ($n - 1))
        write#0 a[i] = 27
        write#1 a[((i > 0) ? i : 0)] = 1
        ",
    );
}

#[test]
fn switch_becomes_if_chain() {
    check(
        r#"
__global__ void k(int *a, int m) {
  switch (m) {
    case 0:
    case 1: a[0] = 1; break;
    case 2: a[1] = 2; break;
    default: a[2] = 3;
  }
}"#,
        "k",
        "
        if (($m == 0) || ($m == 1)) {
          write#0 a[0] = 1
        } else {
          if ($m == 2) {
            write#1 a[1] = 2
          } else {
            write#2 a[2] = 3
          }
        }
        ",
    );
    check(
        "__global__ void k(int *a, int m) { switch (m) { case 0: a[0] = 1; case 1: a[1] = 2; break; } }",
        "k",
        "
        if ($m == 0) {
          write#0 a[0] = 1
          write#1 a[1] = 2
        } else {
          if ($m == 1) {
            write#2 a[1] = 2
          }
        }
        ",
    );
    let b = body(
        "__global__ void k(int *a, int m) { switch (m) { case 2: if (a[0]) break; a[1] = 0; } }",
        "k",
    );
    assert_eq!(
        b,
        "opaque(switch with a break inside a nested statement; arrays=[a]; locals=[]; may_sync)\n"
    );
}

#[test]
fn calls_without_body() {
    check(
        r#"
__device__ void ext(float *p);
__global__ void k(float *a) {
  __shared__ float s[4];
  float r = sqrtf(a[0]);
  ext(s);
  memcpy(a, s, 16);
  memcpy(a, a + 4, 16);
}"#,
        "k",
        // A function without a body or library entry may synchronize; `memcpy` is described by
        // the library: it writes its destination and reads its source, 16 bytes of floats.
        "
        read#0 a[0]
        r := ?0
        opaque(call to `ext` whose body is not available; arrays=[s]; locals=[]; may_sync)
        for (memcpy.element < 4) {
          init:
            memcpy.element := 0
          step:
            memcpy.element := (memcpy.element + 1)
          body:
            write#1 a[memcpy.element] = ?2
        }
        for (memcpy.element < 4) {
          init:
            memcpy.element := 0
          step:
            memcpy.element := (memcpy.element + 1)
          body:
            read#2 s[memcpy.element]
        }
        for (memcpy.element < 4) {
          init:
            memcpy.element := 0
          step:
            memcpy.element := (memcpy.element + 1)
          body:
            write#3 a[memcpy.element] = ?3
        }
        for (memcpy.element < 4) {
          init:
            memcpy.element := 0
          step:
            memcpy.element := (memcpy.element + 1)
          body:
            read#4 a[(4 + memcpy.element)]
        }
        ",
    );
}

#[test]
fn device_globals_and_goto() {
    check(
        r#"
__device__ int counter[16];
__constant__ int coef[4];
__global__ void k(int *a) {
  counter[threadIdx.x] = coef[1];
  goto end;
end:
  a[0] = 1;
}"#,
        "k",
        "
        read#0 coef[1]
        write#1 counter[threadIdx.x] = @0
        opaque(goto; arrays=[]; locals=[]; may_sync)
        write#2 a[0] = 1
        ",
    );
}

#[test]
fn dynamic_shared_memory_carving() {
    check(
        r#"
__global__ void k(int n) {
  extern __shared__ float smem[];
  float *a = smem;
  float *b = (float*)&smem[n];
  int *c = (int*)&b[n];
  a[threadIdx.x] = 1;
  b[threadIdx.x] = 2;
  c[threadIdx.x] = 3;
}"#,
        "k",
        "
        write#0 smem[threadIdx.x] = 1
        write#1 smem[($n + threadIdx.x)] = 2
        write#2 smem[(($n + $n) + threadIdx.x)] = 3
        ",
    );
}

#[test]
fn binary_junk_does_not_panic() {
    let mut junk = String::new();
    for i in 0..20000u32 {
        junk.push(char::from_u32((i.wrapping_mul(2654435761) >> 7) % 0x2FF + 1).unwrap_or('x'));
    }
    let f = lower_str(&junk);
    assert!(f.kernels.is_empty() || f.kernels.iter().all(|k| !k.name.is_empty()));
    let f = lower_str("__global__ void k(int *a) { a[ \u{0}\u{1} ] = }}}} {{{{ ((((( ");
    assert!(!f.syntax_errors.is_empty());
    let _ = lower_str(
        "#define A(x) A(x) + A(x)\n#define B B\n__global__ void k(int *a) { a[A(1)] = B; }",
    );
    let _ = lower_str("#if\n#elif\n#else\n#endif\n#endif\n#define\n#include \"\n__global__");
}

#[test]
fn deep_nesting_is_unsupported_not_a_crash() {
    let mut src = String::from("__global__ void k(int *a) { int x = ");
    for _ in 0..3000 {
        src.push('(');
    }
    src.push('1');
    for _ in 0..3000 {
        src.push(')');
    }
    src.push_str("; a[0] = x; }");
    let f = lower_str(&src);
    let k = kernel(&f, "k");
    assert!(k.unsupported.is_some());
    let mut src2 = String::from("__global__ void k(int *a) {");
    for _ in 0..2000 {
        src2.push_str("if (a[0]) {");
    }
    for _ in 0..2000 {
        src2.push('}');
    }
    src2.push('}');
    let f = lower_str(&src2);
    assert!(kernel(&f, "k").unsupported.is_some());
}

#[test]
fn incremental_tree_is_accepted() {
    let src = "__global__ void k(int *a) { a[threadIdx.x] = 0; }";
    let tree = parse(src, None);
    let f = lower(None, src, &tree, &FrontendOptions::default());
    assert_eq!(
        pretty::body(kernel(&f, "k")),
        "write#0 a[threadIdx.x] = 0\n"
    );
}

#[test]
fn qualifier_macros_static_and_namespaced_kernels() {
    let src = r#"
#define HD __host__ __device__
#define KERNEL_ENTRY_POINT __global__
#define GLB __global__
#define NOTHING
HD inline int sq(int x) { return x * x; }
KERNEL_ENTRY_POINT void k1(int *a) { a[0] = sq(threadIdx.x); }
GLB void k2(int *a) { a[1] = 0; }
static __global__ void k3(int *a) { a[2] = 0; }
namespace ns { NOTHING __global__ void k4(int *a) { a[3] = 0; } }
"#;
    let f = lower_str(src);
    let names: Vec<&str> = f.kernels.iter().map(|k| k.name.as_str()).collect();
    assert_eq!(names, vec!["k1", "k2", "k3", "k4"]);
    assert!(f.syntax_errors.is_empty(), "{:?}", f.syntax_errors);
    check(src, "k1", "write#0 a[0] = (threadIdx.x * threadIdx.x)");
}

#[test]
fn shared_in_device_function_is_one_array() {
    let f = lower_str(
        r#"
__device__ void put(int v) { __shared__ int buf[32]; buf[threadIdx.x] = v; }
__global__ void k() { put(1); put(2); }"#,
    );
    let k = kernel(&f, "k");
    assert_eq!(k.arrays.len(), 1);
    assert_eq!(
        pretty::body(k),
        "write#0 buf[threadIdx.x] = 1\nwrite#1 buf[threadIdx.x] = 2\n"
    );
}

#[test]
fn unknown_pointer_targets_are_opaque_over_all_arrays() {
    check(
        r#"
struct Args : BaseFromMissingHeader { float *data; };
__global__ void k(Args args, float ***rows) {
  __shared__ float s[4];
  args.data[threadIdx.x] = 1;
  rows[1][2][threadIdx.x] = 2;
  args.next->data[threadIdx.x] = 3;
}"#,
        "k",
        // `args.data`, a member used as a pointer of a parameter of a class the front end does
        // not model, points to an array of its own (lower/member_pointers.rs); `args.next`,
        // dereferenced, too, but the pointer its element holds is unknown. The pointers two
        // levels down a `float ***` are rows of rows (lower/ptr_rows.rs).
        "
        write#0 args.data[threadIdx.x] = 1
        read#1 rows[1]
        read#2 rows[…][(?0 + 2)]
        write#3 rows[…][…][(?1 + threadIdx.x)] = 2
        read#4 args.next[0]
        opaque(write through a pointer with an unknown target; arrays=[args,rows,s,args.data,rows[…],rows[…][…],args.next]; locals=[])
        ",
    );
}

#[test]
fn truth_values_and_numbers_are_kept_apart() {
    check(
        r#"
__global__ void k(int *a, int n) {
  bool odd = threadIdx.x & 1;
  int c = threadIdx.x < n;
  a[c + (n > 2)] = !odd;
  while (odd) { odd = false; }
}"#,
        "k",
        "
        odd := ((threadIdx.x & 1) != 0)
        c := ((threadIdx.x < $n) ? 1 : 0)
        write#0 a[(c + (($n > 2) ? 1 : 0))] = !odd
        while odd {
          body:
            odd := false
        }
        ",
    );
}

#[test]
fn array_of_rows_parameter() {
    check(
        r#"
#define N 32
__device__ void put(float t[][N + 1], int r, int c) { t[r][c] = 1; float *row = t[r]; row[0] = 2; }
__global__ void k() {
  __shared__ float tile[N][N + 1];
  put(tile, threadIdx.y, threadIdx.x);
}"#,
        "k",
        "
        write#0 tile{((threadIdx.y * 33) + threadIdx.x)} = 1
        write#1 tile{(threadIdx.y * 33)} = 2
        ",
    );
}

#[test]
fn shared_memory_struct_and_reinterpreted_dynamic_shared() {
    check(
        r#"
template <class T> struct SharedMemory {
  __device__ inline operator T *() { extern __shared__ int __smem[]; return (T *)__smem; }
};
template <class T> __global__ void k(T *g) {
  T *s = SharedMemory<T>();
  s[threadIdx.x] = g[threadIdx.x];
}"#,
        "k",
        "
        read#0 g[threadIdx.x]
        write#1 __smem[threadIdx.x] = @0
        ",
    );
    // A char buffer viewed as float from offset 0 before any other use: exact in float units;
    // a later byte access by name is in other units, so its index is unknown.
    check(
        r#"
__global__ void k2(int n) {
  extern __shared__ char buf[];
  float *f = (float *)buf;
  double *d = (double *)&f[n];
  f[threadIdx.x] = 1;
  d[0] = 2;
  buf[3] = 0;
}"#,
        "k2",
        "
        write#0 buf[threadIdx.x] = 1
        write#1 buf[?0] = 2
        write#2 buf[?1] = 0
        ",
    );
}

#[test]
fn vector_view_of_a_parameter_covers_its_cells() {
    // A float4 through a cast float pointer is float cells 4i..4i+3 (cxx/vectors.rs); the
    // parameter's own indices stay exact.
    check(
        r#"
__global__ void k(float *p) {
  float4 v = reinterpret_cast<float4 *>(p)[threadIdx.x];
  p[threadIdx.x] = v.x;
}"#,
        "k",
        "
        for (vector.cell < 4) {
          init:
            vector.cell := 0
          step:
            vector.cell := (vector.cell + 1)
          body:
            read#0 p[((threadIdx.x * 4) + vector.cell)]
        }
        v := ?0
        write#1 p[threadIdx.x] = ?1
        ",
    );
}

#[test]
fn lambdas_are_inlined_with_their_captures() {
    // `put` captures `v` by reference (it sees 2), `get` by value (a copy of 1, taken when it is
    // made).
    check(
        r#"
__global__ void k(int *a) {
  __shared__ int s[32];
  int v = 1;
  auto put = [&](int i) { s[i] = v; };
  auto get = [=](int i) { return s[i] + v; };
  v = 2;
  put(threadIdx.x);
  a[threadIdx.x] = get(threadIdx.x);
}"#,
        "k",
        "
        v := 1
        get.v := v
        v := 2
        write#0 s[threadIdx.x] = v
        read#1 s[threadIdx.x]
        write#2 a[threadIdx.x] = (@1 + get.v)
        ",
    );
}

#[test]
fn function_objects_inline_their_call_operator() {
    check(
        r#"
struct Twice {
  int k;
  __device__ int operator()(int i) const { return k * i; }
};
template <class F> __device__ void each(int *a, F f) { a[f(threadIdx.x)] = 1; }
__global__ void k(int *a) {
  Twice t{2};
  each(a, t);
  each(a, [](int i) { return i + 1; });
}"#,
        "k",
        "
        t.k := 2
        t.k := t.k
        write#0 a[(t.k * threadIdx.x)] = 1
        write#1 a[(threadIdx.x + 1)] = 1
        ",
    );
}

#[test]
fn temporary_function_objects_and_lambdas_called_on_the_spot() {
    check(
        r#"
struct Add {
  __device__ int operator()(int a, int b) const { return a + b; }
};
__global__ void k(int *a) {
  a[Add{}(threadIdx.x, 1)] = 1;
  a[Add()(threadIdx.x, 2)] = 2;
  [&](int i) { a[i] = 3; }(threadIdx.x + 3);
}"#,
        "k",
        "
        write#0 a[(threadIdx.x + 1)] = 1
        write#1 a[(threadIdx.x + 2)] = 2
        write#2 a[(threadIdx.x + 3)] = 3
        ",
    );
}

#[test]
fn lambdas_copy_pointers_captured_by_value() {
    // `[=]` copies `p` (its offset) when the lambda is made; what a pointer variable points to
    // is one set for the whole kernel, so both writes may go to `s` or `t` (opaque, as for `p`
    // itself).
    check(
        r#"
__global__ void k(float *a) {
  __shared__ float s[64];
  __shared__ float t[64];
  float *p = s;
  auto put = [=](int i) { p[i] = 1; };
  auto ref = [&](int i) { p[i] = 2; };
  p = t;
  put(threadIdx.x);
  ref(threadIdx.x);
}"#,
        "k",
        "
        p.offset := 0
        put.p.offset := p.offset
        p.offset := 0
        opaque(write through a pointer that may point into different arrays; arrays=[s,t]; locals=[])
        opaque(write through a pointer that may point into different arrays; arrays=[s,t]; locals=[])
        ",
    );
}

#[test]
fn callable_kernel_parameters_stay_opaque() {
    check(
        r#"
template <class F>
__global__ void k(F f, int *a) {
  f(threadIdx.x);
}"#,
        "k",
        "
        opaque(call through the variable `f` (lambda or function object); arrays=[f,a]; locals=[]; may_sync)
        ",
    );
}

#[test]
fn atomic_on_two_dimensional_cell_keeps_indices() {
    check(
        r#"
__global__ void k(float *v) {
  __shared__ float h[8][9];
  atomicAdd(&h[threadIdx.y][threadIdx.x % 9], v[threadIdx.x]);
  float x = __ldg(&v[threadIdx.x + 1]);
}"#,
        "k",
        "
        read#0 v[threadIdx.x]
        atomic#1 h[threadIdx.y][(threadIdx.x % 9)]
        read#2 v[(threadIdx.x + 1)]
        x := @2
        ",
    );
}

#[test]
fn inline_assembly_is_opaque_and_assigns_its_outputs() {
    check(
        r#"
__global__ void k(int *a) {
  unsigned lane = 0;
  asm volatile("mov.u32 %0, %%laneid;" : "=r"(lane));
  a[lane] = 1;
}"#,
        "k",
        "
        lane := 0
        opaque(inline assembly; arrays=[]; locals=[lane]; may_sync)
        write#0 a[lane] = 1
        ",
    );
}

#[test]
fn unusual_valid_cuda_has_no_syntax_errors() {
    let src = r####"#include <cuda_runtime.h>
#define CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s\n", cudaGetErrorString(e)); exit(1); } } while (0)
struct __align__(16) Pair { float a, b; };
typedef unsigned long long int u64;
using idx_t = int;
template <typename T, int N = 4>
__device__ __forceinline__ T ld(const T* __restrict__ p, idx_t i) { return __ldg(p + i); }
__device__ __noinline__ int noinl(int x) { return x + 1; }
__global__ void __launch_bounds__(256, 4) k(const float4 *__restrict__ in, u64 *out, const __grid_constant__ Pair prm) {
  __shared__ __align__(16) float s[256];
  volatile float *vs = s;
  static_assert(sizeof(float) == 4, "float");
  alignas(16) float reg[4];
  constexpr int W = 32;
  auto lane = threadIdx.x & (W - 1);
  decltype(lane) l2 = lane;
  #pragma unroll 4
  for (int i = 0; i < 4; ++i) reg[i] = 0.f;
  if (__builtin_expect(lane == 0, 0)) vs[lane] = 1.0f;
  s[threadIdx.x] = ld<float>(&in[0].x, threadIdx.x);
  unsigned long long int v = 1ull << 40;
  out[threadIdx.x] = v + noinl(l2);
}
int main() {
  cudaStream_t stream; cudaStreamCreate(&stream);
  float4 *d_in; u64 *d_out;
  CHECK(cudaMalloc(&d_in, 1024));
  k<<<dim3(4), dim3(256), 0, stream>>>(d_in, d_out, Pair{1, 2});
  auto f = [=] __device__ (int i) { return i * 2; };
  CHECK(cudaDeviceSynchronize());
  return 0;
}
"####;
    let f = lower_str(src);
    assert!(f.syntax_errors.is_empty(), "{:?}", f.syntax_errors);
    let b = pretty::body(kernel(&f, "k"));
    assert!(
        b.contains("if (lane == 0) {\n  write#0 s[lane] = 1.0\n}"),
        "{b}"
    );
    assert!(!b.contains("opaque"), "{b}");
}

#[test]
fn arrays_of_pointers() {
    check(
        r#"
__global__ void k(float *a, float *b, int c) {
  float *bufs[2] = {a, b};
  bufs[c][threadIdx.x] = 1;
  float *one[1] = {a};
  one[0][threadIdx.x] = 2;
}"#,
        "k",
        "
        opaque(write through a pointer that may point into different arrays; arrays=[a,b]; locals=[])
        write#0 a[(?1 + threadIdx.x)] = 2
        ",
    );
}

#[test]
fn runtime_api_launches_are_launch_sites() {
    let f = lower_str(
        r#"
__global__ void k(int *a) { a[0] = 1; }
void host(int *d) {
  void *args[] = {&d};
  cudaLaunchCooperativeKernel((void *)k, dim3(2), dim3(64), args, 0, 0);
  cudaLaunchKernel(reinterpret_cast<void *>(k), 4, 32, args, 0, 0);
}"#,
    );
    let sites: Vec<_> = f
        .launch_sites
        .iter()
        .map(|s| (s.kernel.as_str(), s.grid_dim, s.block_dim))
        .collect();
    assert_eq!(
        sites,
        vec![
            ("k", Some([2, 1, 1]), Some([64, 1, 1])),
            ("k", Some([4, 1, 1]), Some([32, 1, 1]))
        ]
    );
}

#[test]
fn launchers_bind_sizes_and_arguments_only_where_they_read_them() {
    let f = lower_str(
        r#"
__global__ void k(int *a, int n) { a[n] = 1; }
void host(Stream *s, int *d, hipStream_t st) {
  s->LaunchKernel(k, ep::CudaLaunchConfig(3, 128, 0), d, 7);
  s->LaunchKernel(k, make_config(9), d, 7);
  hipLaunchKernelGGL(HIP_KERNEL_NAME(k), dim3(2), dim3(64), 0, st, d, 5);
  void *args[] = {&d};
  cudaLaunchKernel((void *)&k, 4, 32, args, 0, 0);
}"#,
    );
    let sites: Vec<_> = f
        .launch_sites
        .iter()
        .map(|s| {
            (
                s.kernel.as_str(),
                s.grid_dim,
                s.block_dim,
                s.args.get(1).cloned().flatten(),
                s.args.len(),
            )
        })
        .collect();
    assert_eq!(
        sites,
        vec![
            (
                "k",
                Some([3, 1, 1]),
                Some([128, 1, 1]),
                Some(SiteValue::Int(7)),
                2
            ),
            // A configuration of no described constructor: no sizes, no arguments.
            ("k", None, None, None, 0),
            (
                "k",
                Some([2, 1, 1]),
                Some([64, 1, 1]),
                Some(SiteValue::Int(5)),
                2
            ),
            // An argument array: the sizes only.
            ("k", Some([4, 1, 1]), Some([32, 1, 1]), None, 0),
        ]
    );
}

#[test]
fn crlf_and_byte_order_mark() {
    let src = "\u{feff}#define N 4\r\n#if N > 2 \\\r\n  && 1\r\n#define M 1\r\n#else\r\n#define M 2\r\n#endif\r\n__global__ void k(int *a) {\r\n  a[N] = M;\r\n}\r\n";
    let f = lower_str(src);
    assert!(f.syntax_errors.is_empty(), "{:?}", f.syntax_errors);
    assert_eq!(pretty::body(kernel(&f, "k")), "write#0 a[4] = 1\n");
}

// ---- objects and methods of classes defined in the file --------------------------------------

#[test]
fn accessor_methods_returning_references_are_inlined_as_places() {
    check(
        r#"
struct Tile {
  float *data; int stride;
  __device__ float &at(int r, int c) { return data[r * stride + c]; }
};
__global__ void k(const float *in) {
  __shared__ float buf[1024];
  Tile t = {buf, 32};
  t.at(threadIdx.y, threadIdx.x) = in[0];
  t.at(1, 2) += 1.0f;
  float *p = &t.at(threadIdx.x, 0);
  *p = 2.0f;
  float v = t.at(2, 3);
}"#,
        "k",
        "
        t.data.offset := 0
        t.stride := 32
        read#0 in[0]
        at.ref := (t.data.offset + ((threadIdx.y * t.stride) + threadIdx.x))
        write#1 buf[at.ref] = @0
        at.ref := (t.data.offset + (t.stride + 2))
        read#2 buf[at.ref]
        write#3 buf[at.ref] = (@2 + 1.0)
        at.ref := (t.data.offset + (threadIdx.x * t.stride))
        p.offset := at.ref
        write#4 buf[p.offset] = 2.0
        read#5 buf[(t.data.offset + ((2 * t.stride) + 3))]
        v := @5
        ",
    );
}

#[test]
fn references_returned_by_methods_survive_later_calls() {
    // `a` must keep naming row 0 although the second call reassigns `at`'s parameter locals.
    check(
        r#"
struct Tile {
  float *data; int stride;
  __device__ float &at(int r, int c) { return data[r * stride + c]; }
};
__global__ void k() {
  __shared__ float buf[64];
  Tile t = {buf, 8};
  float &a = t.at(0, threadIdx.x);
  float &b = t.at(1, threadIdx.x);
  a = b;
}"#,
        "k",
        "
        t.data.offset := 0
        t.stride := 8
        at.ref := (t.data.offset + ((0 * t.stride) + threadIdx.x))
        at.ref := (t.data.offset + (t.stride + threadIdx.x))
        read#0 buf[at.ref]
        write#1 buf[at.ref] = @0
        ",
    );
    let f = lower_str(
        r#"
struct Tile {
  float *data; int stride;
  __device__ float &at(int r, int c) { return data[r * stride + c]; }
};
__global__ void k() {
  __shared__ float buf[64];
  Tile t = {buf, 8};
  float &a = t.at(0, threadIdx.x);
  float &b = t.at(1, threadIdx.x);
  a = b;
}"#,
    );
    let k = kernel(&f, "k");
    let accesses: Vec<&Access> = k
        .body
        .iter()
        .filter_map(|s| match s {
            Stmt::Access(a) => Some(a),
            _ => None,
        })
        .collect();
    assert_eq!(accesses.len(), 2);
    assert_ne!(accesses[0].index, accesses[1].index, "two different cells");
}

#[test]
fn struct_parameters_get_parameter_members_and_arrays_of_their_own() {
    let f = lower_str(
        r#"
struct Vec { float *data; const int *idx; int n; };
__global__ void k(Vec v) {
  if (threadIdx.x < v.n) v.data[threadIdx.x] = v.idx[0];
}"#,
    );
    let k = kernel(&f, "k");
    let text = pretty::kernel(k);
    assert!(text.contains("param v: other"), "{text}");
    assert!(
        text.contains("array v.data: Global Param(0) float [?]"),
        "{text}"
    );
    assert!(
        text.contains("array v.idx: Global Param(0) i32 [?]"),
        "{text}"
    );
    // The integer member is a parameter of its own (grid-uniform, named in witnesses).
    assert!(text.contains("param v.n: i32"), "{text}");
    assert_eq!(
        pretty::body(k),
        lines(
            "
            v.data.offset := 0
            v.idx.offset := 0
            v.n := $v.n
            if (threadIdx.x < v.n) {
              read#0 v.idx[v.idx.offset]
              write#1 v.data[(v.data.offset + threadIdx.x)] = @0
            }
            "
        )
    );
}

#[test]
fn methods_see_members_through_this_and_call_each_other() {
    check(
        r#"
struct Acc {
  float *data; int n;
  __device__ void put(int i, float v);
  __device__ float &at(int i) { return data[i]; }
  static __device__ int twice(int x) { return 2 * x; }
  __device__ void store(int i) { this->put(i, (*this).n); }
};
__device__ void Acc::put(int i, float v) { at(i) = v; this->n = Acc::twice(i); }
__global__ void k(float *q) {
  Acc a = {q};
  a.store(threadIdx.x);
  q[1] = a.n;
}"#,
        "k",
        "
        a.data.offset := 0
        a.n := 0
        put.v := a.n
        at.ref := (a.data.offset + threadIdx.x)
        write#0 q[at.ref] = put.v
        a.n := (2 * threadIdx.x)
        write#1 q[1] = a.n
        ",
    );
}

#[test]
fn objects_are_copied_by_value_and_aliased_by_reference() {
    check(
        r#"
struct Acc { float *data; int n; };
__device__ void by_value(Acc a) { a.n = 1; a.data[0] = 0; }
__device__ void by_ref(Acc &a) { a.n = 2; }
__global__ void k(float *q) {
  Acc a = {q, 5};
  by_value(a);
  by_ref(a);
  q[1] = a.n;
}"#,
        "k",
        "
        a.data.offset := 0
        a.n := 5
        by_value.a.data.offset := a.data.offset
        by_value.a.n := a.n
        by_value.a.n := 1
        write#0 q[by_value.a.data.offset] = 0
        a.n := 2
        write#1 q[1] = a.n
        ",
    );
}

#[test]
fn whole_object_assignment_copies_members() {
    check(
        r#"
struct Acc { float *data; int n; };
__global__ void k(float *p, float *q) {
  Acc a = {p, 1};
  Acc b = {q, 2};
  Acc c;
  if (threadIdx.x == 0) b = a;
  c = b;
  c.data[c.n] = 1;
}"#,
        "k",
        "
        a.data.offset := 0
        a.n := 1
        b.data.offset := 0
        b.n := 2
        c.data.offset := 0
        c.n := ?0
        if (threadIdx.x == 0) {
          b.data.offset := a.data.offset
          b.n := a.n
        }
        c.data.offset := b.data.offset
        c.n := b.n
        opaque(write through a pointer that may point into different arrays; arrays=[q,p]; locals=[])
        ",
    );
}

#[test]
fn unmodelled_methods_stay_opaque_with_a_reason() {
    let src = r#"
struct Acc {
  float *p;
  virtual __device__ void v() { p[0] = 1; }
  template <int N> __device__ void t();
  __device__ float operator[](int i) const;
  __device__ void decl_only();
  __device__ void ov(int i, int j = 0) { p[i] = 1; }
  __device__ void ov(float f) { p[0] = f; }
};
__global__ void kv(float *a) { Acc x = {a}; x.v(); }
__global__ void kov(float *a) { Acc x = {a}; x.ov(1); }
__global__ void kt(float *a) { Acc x = {a}; x.t<2>(); }
__global__ void ko(float *a) { Acc x = {a}; float v = x[1]; }
__global__ void kd(float *a) { Acc x = {a}; x.decl_only(); }
"#;
    let f = lower_str(src);
    for (k, why) in [
        ("kv", "method call `.v()` (virtual methods are not inlined)"),
        (
            "kt",
            "method call `.t()` (method templates are not inlined)",
        ),
        (
            "ko",
            "method call `.operator[]()` (its body is not available)",
        ),
        (
            "kd",
            "method call `.decl_only()` (its body is not available)",
        ),
        (
            "kov",
            "method call `.ov()` (overloaded methods are not told apart)",
        ),
    ] {
        let k = kernel(&f, k);
        let Some(Stmt::Opaque(o)) = k.body.iter().find(|s| matches!(s, Stmt::Opaque(_))) else {
            panic!("{}: no opaque statement:\n{}", k.name, pretty::body(k))
        };
        assert_eq!(o.reason, why);
        assert!(o.may_sync);
        assert_eq!(o.arrays, vec![ArrayId(0)], "every array of the kernel");
        assert!(
            !k.body
                .iter()
                .any(|s| matches!(s, Stmt::Access(a) if a.mode == AccessMode::Write)),
            "{}: the method body must not be inlined:\n{}",
            k.name,
            pretty::body(k)
        );
    }
}

#[test]
fn overloads_not_told_apart_are_inlined_one_of_them() {
    // Two overloads of one arity: each inlined in a branch, chosen by one unknown for the grid.
    let src = r#"
struct Acc {
  float *p;
  __device__ void ov(int i) { p[i] = 1; }
  __device__ void ov(float f) { p[0] = f; }
};
__global__ void k(float *a) { Acc x = {a}; x.ov(threadIdx.x); }
"#;
    let f = lower_str(src);
    let k = kernel(&f, "k");
    assert!(
        !k.body.iter().any(|s| matches!(s, Stmt::Opaque(_))),
        "{}",
        pretty::body(k)
    );
    let Some(Stmt::If {
        cond: Expr::Unknown(u),
        then_branch,
        else_branch,
        ..
    }) = k.body.iter().find(|s| matches!(s, Stmt::If { .. }))
    else {
        panic!("no choice:\n{}", pretty::body(k))
    };
    let writes = |b: &Block| {
        b.iter()
            .any(|s| matches!(s, Stmt::Access(a) if a.mode == AccessMode::Write))
    };
    assert!(
        writes(then_branch) && writes(else_branch),
        "{}",
        pretty::body(k)
    );
    let u = &k.unknowns[u.0 as usize];
    assert!(u.grid && u.uniform, "{u:?}");
}

#[test]
fn functions_passed_by_name_or_from_a_const_table_are_inlined() {
    let src = r#"
__device__ void one(float *p, int i) { p[i] = 1; }
__device__ void two(float *p, int i) { p[0] = 2; }
typedef void (*fn_t)(float *, int);
__device__ fn_t const table[2] = {one, two};
__device__ fn_t mutable_table[2] = {one, two};
template <typename F> __device__ void call(F f, float *p) { f(p, threadIdx.x); }
__global__ void by_name(float *a) { call(one, a); }
__global__ void by_table(float *a, int m) { call(table[m], a); }
__global__ void by_mutable_table(float *a, int m) { call(mutable_table[m], a); }
"#;
    let f = lower_str(src);
    let opaque = |k: &Kernel| k.body.iter().any(|s| matches!(s, Stmt::Opaque(_)));
    let k = kernel(&f, "by_name");
    assert!(!opaque(k), "{}", pretty::body(k));
    let k = kernel(&f, "by_table");
    assert!(!opaque(k), "{}", pretty::body(k));
    // `m == 0`: `one`, `m == 1`: `two`, nothing else.
    let ifs = k
        .body
        .iter()
        .filter(|s| matches!(s, Stmt::If { .. }))
        .count();
    assert_eq!(ifs, 1, "{}", pretty::body(k));
    let k = kernel(&f, "by_mutable_table");
    assert!(opaque(k), "{}", pretty::body(k));
}

#[test]
fn methods_of_unmodelled_classes_stay_opaque() {
    // A base class, a class template with a parameter pack, a constructor: objects are not
    // modelled member by member.
    for (def, decl) in [
        (
            "struct Acc : BaseFromMissingHeader { float *p; __device__ void add(int i) { p[i] += 1; } };",
            "Acc acc;",
        ),
        (
            "template <int... N> struct Acc { float *p; __device__ void add(int i) { p[i] += 1; } };",
            "Acc<4> acc;",
        ),
    ] {
        let src =
            format!("{def}\n__global__ void k(float *a) {{\n  {decl}\n  acc.add(threadIdx.x);\n}}");
        let f = lower_str(&src);
        let body = pretty::body(kernel(&f, "k"));
        assert!(
            body.contains("opaque(method call `.add()` (methods are not inlined); arrays=[a]"),
            "{def}\n{body}"
        );
        assert!(!body.contains("write#"), "{def}\n{body}");
    }
    check(
        r#"
struct Acc { float *p; __device__ Acc(float *q) : p(q) { q[0] = 0; } __device__ void add(int i) { p[i] += 1; } };
__global__ void k(float *a) {
  Acc acc(a);
  acc.add(threadIdx.x);
}"#,
        "k",
        // A constructor with statements is inlined (its initializers, then its body).
        "
        acc.p.offset := 0
        acc.p.offset := 0
        write#0 a[0] = 0
        read#1 a[(acc.p.offset + threadIdx.x)]
        write#2 a[(acc.p.offset + threadIdx.x)] = (@1 + 1)
        ",
    );
}

#[test]
fn recursive_methods_are_unsupported() {
    let f = lower_str(
        r#"
struct T { int *p; __device__ int f(int n) { return n > 0 ? f(n - 1) : p[0]; } };
__global__ void k(int *a) { T t = {a}; a[1] = t.f(3); }"#,
    );
    assert_eq!(
        kernel(&f, "k").unsupported.as_deref(),
        Some("recursive method `f` cannot be inlined")
    );
}

#[test]
fn objects_reach_opaque_calls_and_statements() {
    check(
        r#"
struct Acc { float *data; int n; };
__device__ void ext(Acc &a);
__global__ void k(float *p) {
  Acc a = {p, 1};
  ext(a);
  asm volatile("" :: "l"(a));
}"#,
        "k",
        "
        a.data.offset := 0
        a.n := 1
        opaque(call to `ext` whose body is not available; arrays=[p]; locals=[a.n]; may_sync)
        opaque(inline assembly; arrays=[p]; locals=[a.n]; may_sync)
        ",
    );
}

#[test]
fn objects_whose_address_is_taken_are_not_modelled() {
    check(
        r#"
struct Acc { float *data; int n; __device__ void put(int i) { data[i] = 0; } };
__global__ void k(float *p) {
  Acc a = {p, 1};
  Acc *q = &a;
  a.put(threadIdx.x);
}"#,
        "k",
        "
        a := ?0
        opaque(method call `.put()` (methods are not inlined); arrays=[p]; locals=[a]; may_sync)
        ",
    );
}

#[test]
fn pointer_members_changed_by_methods_are_followed() {
    check(
        r#"
struct Row { float *data; int stride; __device__ void next() { data += stride; } };
__global__ void k(float *p) {
  Row r = {p, 16};
  r.data[threadIdx.x] = 1;
  r.next();
  r.data[threadIdx.x] = 2;
}"#,
        "k",
        "
        r.data.offset := 0
        r.stride := 16
        write#0 p[(r.data.offset + threadIdx.x)] = 1
        r.data.offset := (r.data.offset + r.stride)
        write#1 p[(r.data.offset + threadIdx.x)] = 2
        ",
    );
}

#[test]
fn pointer_members_changed_in_a_loop_start_before_the_loop() {
    // The offset local of `r.data` is first needed inside the loop: it must be initialized at
    // the declaration, not reset on every iteration.
    check(
        r#"
struct Row { float *data; int stride; __device__ void next() { data += stride; } };
__global__ void k(float *p, int n) {
  Row r = {p, 16};
  for (int i = 0; i < n; i++) { r.next(); r.data[threadIdx.x] = 1; }
}"#,
        "k",
        "
        r.data.offset := 0
        r.stride := 16
        for (i < $n) {
          init:
            i := 0
            loop.counter.entry := i
            pointer.offset.entry := r.data.offset
          step:
            i := (i + 1)
          body:
            r.data.offset := (pointer.offset.entry + ((i - loop.counter.entry) * r.stride))
            r.data.offset := (r.data.offset + r.stride)
            write#0 p[(r.data.offset + threadIdx.x)] = 1
        }
        ",
    );
}

#[test]
fn constructions_written_like_prototypes() {
    // `Acc b(a);` parses as a function prototype: a copy of `a` for an aggregate, the
    // constructor (inlined) for a class with constructors; a class template with type
    // parameters only is modelled.
    check(
        r#"
struct Acc { float *data; int n; };
template <typename T> struct Box { T *p; __device__ Box(T *q) : p(q) { q[0] = 1; } };
__global__ void k(float *q) {
  Acc a = {q, 3};
  Acc b(a);
  Box<float> x(q);
  b.data[b.n] = 2;
}"#,
        "k",
        "
        a.data.offset := 0
        a.n := 3
        b.data.offset := a.data.offset
        b.n := a.n
        x.p.offset := 0
        x.p.offset := 0
        write#0 q[0] = 1
        write#1 q[(b.data.offset + b.n)] = 2
        ",
    );
}

#[test]
fn objects_returned_by_value_are_copied() {
    check(
        r#"
struct Acc { float *p; int n; };
__device__ Acc make(float *q) { return Acc{q, 3}; }
__device__ Acc shifted(Acc a) { Acc b = a; b.p += 1; return b; }
__global__ void k(float *q) {
  Acc a = make(q);
  Acc b = shifted(a);
  b.p[threadIdx.x] = a.n;
}"#,
        "k",
        "
        return.p.offset := 0
        return.n := 3
        a.p.offset := return.p.offset
        a.n := return.n
        shifted.a.p.offset := a.p.offset
        shifted.a.n := a.n
        b.p.offset := shifted.a.p.offset
        b.n := shifted.a.n
        b.p.offset := (b.p.offset + 1)
        b.p.offset := b.p.offset
        b.n := b.n
        write#0 q[(b.p.offset + threadIdx.x)] = a.n
        ",
    );
}

#[test]
fn constructors_with_only_member_initializers_are_inlined() {
    check(
        r#"
struct Tile {
  float *data; int stride; int pad = 1;
  __device__ Tile(float *d, int s) : data(d), stride(s) {}
  __device__ Tile(float *d) : data(d), stride(32) { d[0] = 1; }
};
__global__ void k(float *q) {
  Tile a(q, 16);
  Tile b = Tile(q + 1, 8);
  Tile c{q, 4};
  q[a.stride + b.stride + c.pad] = 0;
}"#,
        "k",
        "
        a.data.offset := 0
        a.stride := ?0
        a.pad := 1
        a.data.offset := 0
        a.stride := 16
        b.data.offset := 0
        b.stride := ?2
        b.pad := 1
        b.data.offset := 1
        b.stride := 8
        c.data.offset := 0
        c.stride := ?4
        c.pad := 1
        c.data.offset := 0
        c.stride := 4
        write#0 q[((a.stride + b.stride) + c.pad)] = 0
        ",
    );
    // With a statement in its body, the constructor is inlined too: initializers, then body.
    let f = lower_str(
        r#"
struct Tile {
  float *data; int stride;
  __device__ Tile(float *d) : data(d), stride(32) { d[0] = 1; }
};
__global__ void k(float *q) { Tile a(q); }"#,
    );
    assert_eq!(
        pretty::body(kernel(&f, "k")),
        lines(
            "
            a.data.offset := 0
            a.stride := ?0
            a.data.offset := 0
            a.stride := 32
            write#0 q[0] = 1
            "
        )
    );
}

#[test]
fn vector_pointer_parameter_components_are_cells() {
    // A `float4 *` parameter is an array of float cells: `.y` of element i is cell 4i+1, the
    // whole element is cells 4i..4i+3, and a float view of it indexes the same cells.
    check(
        r#"
__global__ void k(float4 *v) {
  v[threadIdx.x].y = 1;
  float *f = (float *)v;
  f[threadIdx.x] = 2;
  v[threadIdx.x + 1] = make_float4(0, 0, 0, 0);
}"#,
        "k",
        "
        write#0 v[((threadIdx.x * 4) + 1)] = 1
        write#1 v[threadIdx.x] = 2
        for (vector.cell < 4) {
          init:
            vector.cell := 0
          step:
            vector.cell := (vector.cell + 1)
          body:
            write#2 v[(((threadIdx.x + 1) * 4) + vector.cell)]
        }
        ",
    );
}

#[test]
fn pointer_bump_not_tied_when_conditional() {
    // A bump under a condition is not once per iteration: the loop is left as it is.
    check(
        "__global__ void k(float *p, int n) { for (int i = 0; i < n; i++) { p[threadIdx.x] = 0; if (threadIdx.x < 4) p += 8; } }",
        "k",
        "
        p.offset := 0
        for (i < $n) {
          init:
            i := 0
          step:
            i := (i + 1)
          body:
            write#0 p[(p.offset + threadIdx.x)] = 0
            if (threadIdx.x < 4) {
              p.offset := (p.offset + 8)
            }
        }
        ",
    );
}

#[test]
fn reference_to_a_vector_element_keeps_its_cells() {
    // `float4 &r = v[i]` refers to the cells of element i as it was when bound.
    let b = body(
        "__global__ void k(float4 *v, int n) { int i = threadIdx.x; float4 &r = v[i]; i = i + n; r.y = 1; }",
        "k",
    );
    assert!(!b.contains("v[((i * 4)"), "{b}");
    assert!(b.contains("write#0 v[(reference.index + 1)] = 1"), "{b}");
}

#[test]
fn template_and_auto_pointers_to_vectors_step_over_their_cells() {
    // `T *` deduced from a `float4 *` argument, and `auto *`, take the argument's element size:
    // element i is cells 4i..4i+3, not cell i.
    let b = body(
        r#"
template <class T> __device__ void put(T *p, int i, T v) { p[i] = v; }
__global__ void k(float4 *v) {
  put(v, threadIdx.x, make_float4(0, 0, 0, 0));
  auto *w = v;
  w[threadIdx.x + 1].y = 1;
}"#,
        "k",
    );
    assert!(b.contains("v[((threadIdx.x * 4) + vector.cell)]"), "{b}");
    assert!(b.contains("v[(((threadIdx.x + 1) * 4) + 1)] = 1"), "{b}");
}

#[test]
fn launch_sites_take_the_values_a_local_may_have() {
    let f = lower_str(
        r#"__global__ void k(float *out, int n) { out[0] = 1; }
void run(float *out, int n, int colors, int rows) {
  int threadsX = 32, threadsY;
  if (colors <= 3) {
    threadsY = 4;
  } else {
    threadsY = colors % 8 == 0 ? 8 : 4;
  }
  dim3 threads(threadsX, threadsY);
  k<<<n, threads>>>(out, n);
  int other = 4;
  if (colors > 3) other = rows;
  k<<<n, other>>>(out, n);
}"#,
    );
    let sites: Vec<_> = f
        .launch_sites
        .iter()
        .map(|s| (s.block_dim, s.block_values.clone()))
        .collect();
    assert_eq!(
        sites,
        vec![(None, Some([vec![32], vec![4, 8], vec![1]])), (None, None),]
    );
}

#[test]
fn launch_sites_take_the_conditions_around_them() {
    let f = lower_str(
        r#"__global__ void k(float *out, int n) { out[0] = 1; }
void run(float *out, int n, int m, bool fast) {
  int ipt = n % 128 == 0 ? 4 : 1;
  if (m >= 512 && (n == 768 || n == 1024) && fast) {
    k<<<m, n / 8>>>(out, n);
  } else if (ipt == 4) {
    k<<<m, 32>>>(out, n);
  }
}"#,
    );
    let c = |s: &LaunchSite| s.conditions.len();
    let counts: Vec<usize> = f.launch_sites.iter().map(c).collect();
    // `m` and `fast` are not passed; `n == 768 || n == 1024` is. The second launch: not the
    // first condition (it mentions `fast`, so it cannot be negated), and `ipt == 4`.
    assert_eq!(counts, vec![1, 1], "{:?}", f.launch_sites);
    assert!(matches!(
        f.launch_sites[1].conditions[0],
        SiteValue::Op(BinOp::Eq, _, _)
    ));
}

#[test]
fn launch_grid_relation_through_a_local_chosen_by_a_condition() {
    let f = lower_str(
        r#"#define DIVUP(a, b) (((a) + (b) - 1) / (b))
__global__ void k(float *out, int n) { out[0] = 1; }
void run(float *out, int n, int pixels) {
  int ipt = n % 128 == 0 ? 4 : 1;
  dim3 blocks(DIVUP(n, 32 * ipt), pixels);
  k<<<blocks, 32>>>(out, n);
}"#,
    );
    let s = &f.launch_sites[0];
    assert!(
        matches!(s.grid_relations[0], Some(SiteValue::Op(BinOp::Div, _, _))),
        "{s:?}"
    );
}

#[test]
fn launch_grid_relation_through_a_library_ceil_div() {
    let f = lower_str(
        r#"__global__ void k(float *out, int n) { out[0] = 1; }
int divUp(int a, int b) { return (a + b) / b; }
void run(float *out, int n) {
  dim3 blocks(ATenCeilDiv(n, 32), DIVUP(n, 16));
  k<<<blocks, 32>>>(out, n);
  k<<<divUp(n, 32), 32>>>(out, n);
}"#,
    );
    let s = &f.launch_sites[0];
    assert!(
        matches!(s.grid_relations[0], Some(SiteValue::Op(BinOp::Div, _, _))),
        "{s:?}"
    );
    assert!(
        matches!(s.grid_relations[1], Some(SiteValue::Op(BinOp::Div, _, _))),
        "{s:?}"
    );
    // The file's own `divUp` wins (and is not read).
    assert_eq!(f.launch_sites[1].grid_relations[0], None);
}

#[test]
fn launch_grid_relation_through_static_cast_and_a_swap_before_it() {
    let f = lower_str(
        r#"__global__ void k(float *out, int n1, int n2) { out[0] = 1; }
void run(float *out, long n1, long n2) {
  if (n2 > n1) std::swap(n1, n2);
  const int bx = at::cuda::ATenCeilDiv(static_cast<int>(n1), 32);
  const int by = at::cuda::ATenCeilDiv(static_cast<int>(n2), 16);
  dim3 blocks(bx, by);
  k<<<blocks, 32>>>(out, n1, n2);
}"#,
    );
    let s = &f.launch_sites[0];
    assert!(
        matches!(s.grid_relations[0], Some(SiteValue::Op(BinOp::Div, _, _))),
        "{s:?}"
    );
    assert!(
        matches!(s.grid_relations[1], Some(SiteValue::Op(BinOp::Div, _, _))),
        "{s:?}"
    );
}
