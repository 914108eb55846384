//! Latency measurement (not a regular test): a 24-kernel file, open → diagnostics, then 50
//! keystroke-sized edits inside one kernel, each timed until its final diagnostics arrive.
//!
//! `cargo test --release -p cudarace-lsp --test bench -- --ignored --nocapture`

mod harness;

use harness::{position_of, Client};
use serde_json::json;
use std::time::Instant;

fn kernels() -> String {
    let mut text =
        String::from("// cudarace LSP benchmark: 24 kernels\n#include <cuda_runtime.h>\n\n");
    for i in 0..6 {
        // Each copy differs, so that no two kernels ask the solver the same question.
        let (off, pad) = (i + 1, 17 + i);
        text.push_str(&format!(
            "__global__ void reduce_{i}(const float *in, float *out, int n) {{
  __shared__ float sdata[256];
  unsigned tid = threadIdx.x;
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  sdata[tid] = (i < n) ? in[i + {i}] : 0.0f;
  __syncthreads();
  for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {{
    if (tid < s) sdata[tid] += sdata[tid + s];
    __syncthreads();
  }}
  if (tid == 0) out[blockIdx.x] = sdata[0];
}}

__global__ void saxpy_{i}(int n, float a, const float *x, float *y) {{
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
    y[i] = a * x[i + {i}] + y[i];
}}

__global__ void shift_{i}(int *out) {{
  __shared__ int s[256];
  int t = threadIdx.x;
  s[t] = t * {i};
  out[blockIdx.x * blockDim.x + t] = s[(t + {off}) % 256];
}}

// cudarace: blockDim=(16,16) gridDim=(8,8)
__global__ void transpose_{i}(float *odata, const float *idata, int width) {{
  __shared__ float tile[16][{pad}];
  int x = blockIdx.x * 16 + threadIdx.x;
  int y = blockIdx.y * 16 + threadIdx.y;
  tile[threadIdx.y][threadIdx.x] = idata[y * width + x];
  __syncthreads();
  x = blockIdx.y * 16 + threadIdx.x;
  y = blockIdx.x * 16 + threadIdx.y;
  odata[y * width + x] = tile[threadIdx.x][threadIdx.y];
}}

"
        ));
    }
    text
}

fn summary(name: &str, mut ms: Vec<f64>) {
    ms.sort_by(f64::total_cmp);
    let median = ms[ms.len() / 2];
    let worst = ms[ms.len() - 1];
    println!(
        "{name}: median {median:.1} ms, worst {worst:.1} ms over {} edits",
        ms.len()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement, run by hand"]
async fn latency_on_a_24_kernel_file() {
    let text = kernels();
    let uri = "file:///bench/kernels.cu";
    let mut c = Client::initialized(json!({})).await;
    let started = Instant::now();
    c.open(uri, &text);
    let first = c.diagnostics(uri).await;
    let open_ms = started.elapsed().as_secs_f64() * 1e3;
    let stats = c.stats(uri).await;
    println!(
        "open → diagnostics: {open_ms:.1} ms ({} diagnostics, {} kernels, {} queries solved)",
        first["diagnostics"].as_array().map_or(0, Vec::len),
        stats["last"]["kernelsAnalysed"],
        stats["last"]["queriesSolved"]
    );
    assert_eq!(stats["last"]["kernelsAnalysed"], 24);
    let mut codes = std::collections::BTreeMap::new();
    for d in first["diagnostics"].as_array().into_iter().flatten() {
        *codes
            .entry(format!(
                "{} {}",
                d["code"],
                d["message"]
                    .as_str()
                    .unwrap_or("")
                    .split(':')
                    .next()
                    .unwrap_or("")
            ))
            .or_insert(0) += 1;
    }
    println!("diagnostics: {codes:#?}");

    // Keystrokes in `shift_3`'s body: retype the offset of its read, a new value each time, so
    // that every edit asks new questions in that barrier interval.
    let (line, ch) = position_of(&text, "s[(t + 4) % 256]", 0);
    let col = ch + "s[(t + ".len() as u32;
    let mut width = 1;
    let mut inside = Vec::new();
    let mut solved = Vec::new();
    for v in 0..50 {
        let offset = (10 + v).to_string();
        let t = Instant::now();
        c.change(uri, v + 2, ((line, col), (line, col + width)), &offset);
        width = offset.len() as u32;
        c.diagnostics(uri).await;
        inside.push(t.elapsed().as_secs_f64() * 1e3);
        solved.push(
            c.stats(uri).await["last"]["queriesSolved"]
                .as_u64()
                .unwrap_or(0),
        );
    }
    summary("keystroke in a kernel → diagnostics", inside);
    println!("queries solved per kernel edit: {solved:?}");

    // Keystrokes in a comment.
    let mut comment = Vec::new();
    for v in 0..50 {
        let t = Instant::now();
        c.change(uri, v + 52, ((0, 3), (0, 3)), "x");
        c.diagnostics(uri).await;
        comment.push(t.elapsed().as_secs_f64() * 1e3);
        assert_eq!(c.stats(uri).await["last"]["queriesSolved"], 0);
    }
    summary("keystroke in a comment → diagnostics", comment);
    c.shutdown().await;
}
