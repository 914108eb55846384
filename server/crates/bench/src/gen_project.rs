//! A generated CMake-like CUDA project for section (e): `include/` with a configuration header
//! (macros, overridable by `-D`), device helpers and four headers of kernels; `src/unitNNN.cu`
//! translation units that include some of the headers, define kernels of their own and launch
//! header kernels with constant sizes; and `build/compile_commands.json` in CMake's `command` form
//! (nvcc command lines with absolute paths, `directory` = the build folder). Deterministic: the
//! same `units` give the same files.

use std::path::{Path, PathBuf};

/// The `-D` flags every unit is compiled with (the no-project comparison passes the same ones
/// through the server's `defines` setting).
pub const DEFINES: [&str; 3] = ["WIDTH=256", "USE_FAST_MATH", "NDEBUG"];

/// The header the LSP measurement opens.
pub const EDITED_HEADER: &str = "include/reduce.cuh";
/// The kernel of [`EDITED_HEADER`] the edits change.
pub const EDITED_KERNEL: &str = "block_reduce";
/// The edits, each a digit of `block_reduce`: (name, a line's text, the digit's offset in it).
/// The literal changes no access (the kernel's answers come from the cache); the first step of
/// the reduction's loop does (its queries are solved again, until the digits repeat).
pub const EDITS: [(&str, &str, usize); 2] = [
    ("float literal", "float scale = 0.5f;", 16),
    ("loop step", "for (unsigned s = blockDim.x / 2;", 31),
];

const CONFIG: &str = "#pragma once
// Build configuration: WIDTH comes from the build system (-DWIDTH=…).
#ifndef WIDTH
#define WIDTH 128
#endif
#define TILE 32
#define TILE_ROWS 8
#define RADIUS 3
#define BINS 256
#ifdef USE_FAST_MATH
#define SCALE_OF(x) ((x) * 0.5f)
#else
#define SCALE_OF(x) ((x) / 2.0f)
#endif
";

const DEVICE_UTILS: &str = "#pragma once
#include \"config.cuh\"

// Small device helpers shared by the kernels.
__device__ inline float clampf(float v, float lo, float hi) {
    return v < lo ? lo : (v > hi ? hi : v);
}

__device__ inline int global_index() {
    return blockIdx.x * blockDim.x + threadIdx.x;
}

__device__ inline float lerpf(float a, float b, float t) {
    return a + t * (b - a);
}
";

const REDUCE: &str = "#pragma once
#include \"config.cuh\"
#include \"device_utils.cuh\"

// Tree reduction in shared memory: one partial sum per block.
__global__ void block_reduce(const float *in, float *out, int n) {
    __shared__ float sdata[WIDTH];
    float scale = 0.5f;
    unsigned tid = threadIdx.x;
    int i = global_index();
    sdata[tid] = (i < n) ? in[i] * scale : 0.0f;
    __syncthreads();
    for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s)
            sdata[tid] += sdata[tid + s];
        __syncthreads();
    }
    if (tid == 0)
        out[blockIdx.x] = sdata[0];
}

// Maximum of each block, same shape.
__global__ void block_max(const float *in, float *out, int n) {
    __shared__ float smax[WIDTH];
    unsigned tid = threadIdx.x;
    int i = global_index();
    smax[tid] = (i < n) ? in[i] : -1.0e30f;
    __syncthreads();
    for (unsigned s = blockDim.x >> 1; s > 0; s >>= 1) {
        if (tid < s && smax[tid + s] > smax[tid])
            smax[tid] = smax[tid + s];
        __syncthreads();
    }
    if (tid == 0)
        out[blockIdx.x] = smax[0];
}
";

const STENCIL: &str = "#pragma once
#include \"config.cuh\"
#include \"device_utils.cuh\"

// 1-D stencil of radius RADIUS with a shared tile and halo.
__global__ void stencil_1d(const float *in, float *out, int n) {
    __shared__ float temp[WIDTH + 2 * RADIUS];
    int g = global_index();
    int l = threadIdx.x + RADIUS;
    temp[l] = (g < n) ? in[g] : 0.0f;
    if (threadIdx.x < RADIUS) {
        temp[l - RADIUS] = (g >= RADIUS) ? in[g - RADIUS] : 0.0f;
        temp[l + WIDTH] = (g + WIDTH < n) ? in[g + WIDTH] : 0.0f;
    }
    __syncthreads();
    float r = 0.0f;
    for (int o = -RADIUS; o <= RADIUS; o++)
        r += temp[l + o];
    if (g < n)
        out[g] = clampf(r, -1.0e6f, 1.0e6f);
}
";

const TRANSPOSE: &str = "#pragma once
#include \"config.cuh\"

// Tiled transpose with a padded tile (no bank conflicts).
__global__ void transpose_tiled(float *odata, const float *idata, int width, int height) {
    __shared__ float tile[TILE][TILE + 1];
    int x = blockIdx.x * TILE + threadIdx.x;
    int y = blockIdx.y * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += TILE_ROWS)
        if (x < width && y + j < height)
            tile[threadIdx.y + j][threadIdx.x] = idata[(y + j) * width + x];
    __syncthreads();
    x = blockIdx.y * TILE + threadIdx.x;
    y = blockIdx.x * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += TILE_ROWS)
        if (x < height && y + j < width)
            odata[(y + j) * height + x] = tile[threadIdx.x][threadIdx.y + j];
}
";

const HISTOGRAM: &str = "#pragma once
#include \"config.cuh\"
#include \"device_utils.cuh\"

// Histogram with a shared per-block copy and atomics.
__global__ void histogram_shared(const unsigned char *data, unsigned *hist, int n) {
    __shared__ unsigned local[BINS];
    for (int b = threadIdx.x; b < BINS; b += blockDim.x)
        local[b] = 0;
    __syncthreads();
    for (int i = global_index(); i < n; i += blockDim.x * gridDim.x)
        atomicAdd(&local[data[i]], 1u);
    __syncthreads();
    for (int b = threadIdx.x; b < BINS; b += blockDim.x)
        atomicAdd(&hist[b], local[b]);
}
";

/// The headers: (path under the project, text).
pub const HEADERS: [(&str, &str); 6] = [
    ("include/config.cuh", CONFIG),
    ("include/device_utils.cuh", DEVICE_UTILS),
    (EDITED_HEADER, REDUCE),
    ("include/stencil.cuh", STENCIL),
    ("include/transpose.cuh", TRANSPOSE),
    ("include/histogram.cuh", HISTOGRAM),
];

/// The text of unit `i`: the configuration and helpers, two of the four kernel headers (which
/// ones depends on `i`), a kernel of its own (every third unit: two), and a host function that
/// launches them and the headers' kernels with constant sizes.
pub fn unit_text(i: usize) -> String {
    // Two different kernel headers per unit; the reduction header is in half of them.
    let picks = [[0, 1], [0, 2], [0, 3], [1, 2], [1, 3], [2, 3]][i % 6];
    let grid = [32, 64, 128, 256][i % 4];
    let mut s = format!(
        "// Translation unit {i:03} of the generated project.\n\
         #include <cstdio>\n\
         #include <cuda_runtime.h>\n\
         #include \"config.cuh\"\n\
         #include \"device_utils.cuh\"\n"
    );
    for p in picks {
        s += &format!(
            "#include \"{}.cuh\"\n",
            ["reduce", "stencil", "transpose", "histogram"][p]
        );
    }
    s += &format!(
        "\n// Scales and clamps one element per thread.\n\
         __global__ void unit{i:03}_scale(const float *x, float *y, int n, float a) {{\n\
         \x20   int i = global_index();\n\
         \x20   if (i < n)\n\
         \x20       y[i] = clampf(SCALE_OF(a * x[i]) + {k}.0f, -1.0e3f, 1.0e3f);\n\
         }}\n",
        k = i % 10
    );
    if i.is_multiple_of(3) {
        s += &format!(
            "\n// Adjacent difference through shared memory.\n\
             __global__ void unit{i:03}_diff(const float *in, float *out, int n) {{\n\
             \x20   __shared__ float buf[WIDTH];\n\
             \x20   int g = global_index();\n\
             \x20   buf[threadIdx.x] = (g < n) ? in[g] : 0.0f;\n\
             \x20   __syncthreads();\n\
             \x20   if (threadIdx.x > 0 && g < n)\n\
             \x20       out[g] = buf[threadIdx.x] - buf[threadIdx.x - 1];\n\
             }}\n"
        );
    }
    s += &format!(
        "\nvoid run_unit{i:03}(const float *d_in, float *d_out, float *d_tmp, unsigned *d_hist,\n\
         \x20                 const unsigned char *d_bytes, int n) {{\n\
         \x20   unit{i:03}_scale<<<{grid}, 256>>>(d_in, d_tmp, n, 2.0f);\n"
    );
    if i.is_multiple_of(3) {
        s += &format!("    unit{i:03}_diff<<<{grid}, WIDTH>>>(d_tmp, d_out, n);\n");
    }
    for p in picks {
        s += match p {
            0 => "    block_reduce<<<64, WIDTH>>>(d_tmp, d_out, n);\n    block_max<<<64, WIDTH>>>(d_tmp, d_out, n);\n",
            1 => "    stencil_1d<<<128, WIDTH>>>(d_in, d_tmp, n);\n",
            2 => "    transpose_tiled<<<dim3(16, 16), dim3(TILE, TILE_ROWS)>>>(d_out, d_in, 512, 512);\n",
            _ => "    histogram_shared<<<32, 256>>>(d_bytes, d_hist, n);\n",
        };
    }
    s += "}\n";
    // Host code around it, as a unit of a real project has.
    s += &format!(
        "\nint main_unit{i:03}(int n) {{\n\
         \x20   float *d_in, *d_out, *d_tmp;\n\
         \x20   unsigned *d_hist;\n\
         \x20   unsigned char *d_bytes;\n\
         \x20   cudaMalloc(&d_in, n * sizeof(float));\n\
         \x20   cudaMalloc(&d_out, n * sizeof(float));\n\
         \x20   cudaMalloc(&d_tmp, n * sizeof(float));\n\
         \x20   cudaMalloc(&d_hist, BINS * sizeof(unsigned));\n\
         \x20   cudaMalloc(&d_bytes, n);\n\
         \x20   cudaMemset(d_hist, 0, BINS * sizeof(unsigned));\n\
         \x20   run_unit{i:03}(d_in, d_out, d_tmp, d_hist, d_bytes, n);\n\
         \x20   cudaError_t err = cudaDeviceSynchronize();\n\
         \x20   if (err != cudaSuccess) {{\n\
         \x20       fprintf(stderr, \"unit {i:03}: %s\\n\", cudaGetErrorString(err));\n\
         \x20       return 1;\n\
         \x20   }}\n\
         \x20   cudaFree(d_in);\n\
         \x20   cudaFree(d_out);\n\
         \x20   cudaFree(d_tmp);\n\
         \x20   cudaFree(d_hist);\n\
         \x20   cudaFree(d_bytes);\n\
         \x20   return 0;\n\
         }}\n"
    );
    s
}

/// The nvcc command line CMake writes for unit `file` (absolute) of the project at `root`.
fn command(root: &Path, rel: &str, file: &Path) -> String {
    let defines: String = DEFINES.iter().map(|d| format!(" -D{d}")).collect();
    format!(
        "/usr/local/cuda/bin/nvcc -forward-unknown-to-host-compiler{defines} -I{inc} \
         -isystem /usr/local/cuda/include -O3 -std=c++17 \
         \"--generate-code=arch=compute_80,code=[compute_80,sm_80]\" -Xcompiler=-fPIC -x cu \
         -c {file} -o CMakeFiles/app.dir/{rel}.o",
        inc = root.join("include").display(),
        file = file.display()
    )
}

/// What [`write_project`] made.
pub struct Project {
    pub root: PathBuf,
    pub database: PathBuf,
    pub units: Vec<PathBuf>,
}

/// Writes the project of `units` translation units into `root` (created; existing files of the
/// same names are overwritten).
pub fn write_project(root: &Path, units: usize) -> std::io::Result<Project> {
    let build = root.join("build");
    for dir in ["include", "src", "build"] {
        std::fs::create_dir_all(root.join(dir))?;
    }
    for (rel, text) in HEADERS {
        std::fs::write(root.join(rel), text)?;
    }
    let mut entries = Vec::with_capacity(units);
    let mut paths = Vec::with_capacity(units);
    for i in 0..units {
        let rel = format!("src/unit{i:03}.cu");
        let file = root.join(&rel);
        std::fs::write(&file, unit_text(i))?;
        entries.push(serde_json::json!({
            "directory": build.display().to_string(),
            "command": command(root, &rel, &file),
            "file": file.display().to_string(),
            "output": format!("CMakeFiles/app.dir/{rel}.o"),
        }));
        paths.push(file);
    }
    let database = build.join("compile_commands.json");
    let text = serde_json::to_string_pretty(&serde_json::Value::Array(entries))
        .map_err(std::io::Error::other)?;
    std::fs::write(&database, text)?;
    Ok(Project {
        root: root.to_path_buf(),
        database,
        units: paths,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn project_has_a_database_of_every_unit() {
        struct Removed(PathBuf);
        impl Drop for Removed {
            fn drop(&mut self) {
                let _ = std::fs::remove_dir_all(&self.0);
            }
        }
        let root =
            std::env::temp_dir().join(format!("cudarace-bench-genproject-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        // Removed however the test ends.
        let _removed = Removed(root.clone());
        let p = write_project(&root, 200).expect("write the project");
        let text = std::fs::read_to_string(&p.database).expect("read the database");
        let db: serde_json::Value = serde_json::from_str(&text).expect("the database is JSON");
        let entries = db.as_array().expect("an array");
        assert_eq!(entries.len(), 200);
        for e in entries {
            let file = Path::new(e["file"].as_str().expect("file"));
            assert!(file.is_absolute() && file.is_file(), "{}", file.display());
            let command = e["command"].as_str().expect("command");
            assert!(command.contains(&format!("-c {}", file.display())));
            assert!(command.contains(&format!("-I{}", root.join("include").display())));
            assert!(command.contains("-DWIDTH=256"));
            assert_eq!(
                Path::new(e["directory"].as_str().expect("directory")),
                root.join("build")
            );
        }
        for (rel, _) in HEADERS {
            assert!(root.join(rel).is_file());
        }
        // Every header kernel is launched from some unit, and the edited digits exist once.
        let units: String = (0..200).map(unit_text).collect();
        for k in [
            "block_reduce<<<",
            "stencil_1d<<<",
            "transpose_tiled<<<",
            "histogram_shared<<<",
        ] {
            assert!(units.contains(k), "{k}");
        }
        for (_, mark, offset) in EDITS {
            assert_eq!(REDUCE.matches(mark).count(), 1, "{mark}");
            assert!(mark.as_bytes()[offset].is_ascii_digit(), "{mark}");
        }
        // Deterministic.
        assert_eq!(unit_text(7), unit_text(7));
    }
}
