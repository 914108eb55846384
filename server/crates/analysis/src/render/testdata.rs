//! Hand-made reports for the renderer tests (the pipeline is not involved).

use crate::report::FileReport;
use cudarace_ir::*;
use std::collections::BTreeMap;
use std::sync::Arc;

pub const KERNEL_TEXT: &str = "\
// expect: racy
__global__ void reduce(float *out, int n) {
    __shared__ float s[64];
    int tid = threadIdx.x;
    s[tid] = out[tid];
    s[tid + 1] = 0.0f; // é
    if (tid < n) {
        __syncthreads();
    }
}

__global__ void copy(float *out, const float *in) {
    out[threadIdx.x] = in[threadIdx.x];
}
";

/// The span of the `nth` (0-based) occurrence of `needle` in `text`.
pub fn span_of(text: &str, needle: &str, nth: usize) -> Span {
    let start = text
        .match_indices(needle)
        .nth(nth)
        .map(|(i, _)| i)
        .unwrap_or_else(|| panic!("{needle:?} not in test text"));
    Span::new(FileId(0), start, start + needle.len())
}

fn thread(tid: i64, loop_vars: &[(&str, i64)]) -> ThreadWitness {
    ThreadWitness {
        thread_idx: [tid, 0, 0],
        block_idx: [0, 0, 0],
        loop_vars: loop_vars.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
    }
}

/// One file with a racy and divergent kernel and a race-free one.
pub fn racy_file() -> FileReport {
    let t = KERNEL_TEXT;
    let race = Finding {
        kind: FindingKind::DataRace,
        array: Some("s".into()),
        confidence: Confidence::Definite,
        confidence_reason: "the witness depends on no value read from memory".into(),
        kernel: "reduce".into(),
        span: span_of(t, "s[tid + 1]", 0),
        message: "data race on `s`: a write by one thread and a write by another".into(),
        related: vec![Related {
            span: span_of(t, "s[tid]", 0),
            message: "the other write".into(),
        }],
        witness: Witness {
            thread_a: thread(0, &[("k", 2)]),
            thread_b: thread(1, &[]),
            cell: vec![1],
            params: BTreeMap::from([("n".to_string(), 5)]),
            block_dim: [64, 1, 1],
            grid_dim: [1, 1, 1],
        },
        same_value_write: false,
        barrier: None,
        condition: None,
        precondition: None,
    };
    let divergence = Finding {
        kind: FindingKind::BarrierDivergence,
        array: None,
        confidence: Confidence::Possible,
        confidence_reason: "the condition depends on the parameter `n` only through the launch"
            .into(),
        kernel: "reduce".into(),
        span: span_of(t, "__syncthreads()", 0),
        message: "barrier divergence: `__syncthreads()` is reached by some threads of a block only"
            .into(),
        related: vec![Related {
            span: span_of(t, "tid < n", 0),
            message: "this condition depends on threadIdx".into(),
        }],
        witness: Witness {
            thread_a: thread(4, &[]),
            thread_b: thread(5, &[]),
            cell: vec![],
            params: BTreeMap::from([("n".to_string(), 5)]),
            block_dim: [64, 1, 1],
            grid_dim: [1, 1, 1],
        },
        same_value_write: false,
        barrier: Some(BarrierScope::Block),
        condition: None,
        precondition: None,
    };
    let reduce_start = t.find("__global__ void reduce").unwrap();
    let copy_start = t.find("__global__ void copy").unwrap();
    file_of(
        "kernels/reduce.cu",
        t,
        vec![
            kernel_of(
                t,
                "reduce",
                Span::new(FileId(0), reduce_start, copy_start - 2),
                Verdict::Racy,
                vec![race, divergence],
                (12.5, 7),
            ),
            kernel_of(
                t,
                "copy",
                Span::new(FileId(0), copy_start, t.len() - 1),
                Verdict::RaceFree,
                vec![],
                (3.25, 2),
            ),
        ],
    )
}

/// A file whose only kernel could not be decided, with a syntax error.
pub fn unknown_file() -> FileReport {
    let t = "__global__ void k(int *a) {\n    a[0] = f(;\n}\n";
    let kernel = KernelReport {
        reason: Some(
            "a solver query timed out (2000 ms); `a` may be accessed by unmodelled code (call to `f` whose body is not available)"
                .into(),
        ),
        unmodelled: vec![Unmodelled {
            span: span_of(t, "f(;", 0),
            what: "call to `f` whose body is not available".into(),
        }],
        ..kernel_of(
            t,
            "k",
            Span::new(FileId(0), 0, t.len() - 1),
            Verdict::Unknown,
            vec![],
            (2001.0, 1),
        )
    };
    FileReport {
        syntax_errors: vec![SyntaxError {
            span: span_of(t, "(;", 0),
            message: "syntax error".into(),
        }],
        ..file_of("kernels/unknown.cu", t, vec![kernel])
    }
}

/// A file whose races hold only with a zero stride (conditional) or have a precondition
/// under which they are gone (the checker writes both into the message too).
pub fn conditional_file() -> FileReport {
    let t = "\
__global__ void scale(float *y, int stride, int m) {
    y[threadIdx.x * stride] = 1.0f;
    y[blockIdx.x * 64 + threadIdx.x] = 2.0f;
    y[(m + blockIdx.x) * 64 + threadIdx.x] = 3.0f;
}
";
    let first = span_of(t, "y[threadIdx.x * stride]", 0);
    let zero_stride = Finding {
        kind: FindingKind::DataRace,
        array: Some("y".into()),
        confidence: Confidence::Conditional,
        confidence_reason: "every witness breaks an assumption: stride == 0".into(),
        kernel: "scale".into(),
        span: first,
        message: "data race on `y`: thread (0,0,0) writes y[0] while thread (1,0,0) writes y[0] \
                  in the same barrier interval (only if stride == 0); race-free if stride >= 1"
            .into(),
        related: vec![Related {
            span: first,
            message: "thread (1,0,0) writes y[0] here".into(),
        }],
        witness: Witness {
            thread_a: thread(0, &[]),
            thread_b: thread(1, &[]),
            cell: vec![0],
            params: BTreeMap::from([("m".to_string(), 2), ("stride".to_string(), 0)]),
            block_dim: [2, 1, 1],
            grid_dim: [1, 1, 1],
        },
        same_value_write: true,
        barrier: None,
        condition: Some("only if stride == 0".into()),
        precondition: Some("stride >= 1".into()),
    };
    let other_block = ThreadWitness {
        thread_idx: [0, 0, 0],
        block_idx: [1, 0, 0],
        loop_vars: BTreeMap::new(),
    };
    let rows = Finding {
        kind: FindingKind::DataRace,
        array: Some("y".into()),
        confidence: Confidence::Definite,
        confidence_reason: "the witness depends on no unknown value".into(),
        kernel: "scale".into(),
        span: span_of(t, "y[(m + blockIdx.x) * 64 + threadIdx.x]", 0),
        message: "data race on `y`: thread (0,0,0) of block (0,0,0) writes y[64] while thread \
                  (0,0,0) of block (1,0,0) writes y[64]; the threads are in different blocks, \
                  which no __syncthreads() orders; race-free if m >= gridDim.x"
            .into(),
        related: vec![Related {
            span: span_of(t, "y[blockIdx.x * 64 + threadIdx.x]", 0),
            message: "thread (0,0,0) of block (1,0,0) writes y[64] here".into(),
        }],
        witness: Witness {
            thread_a: thread(0, &[]),
            thread_b: other_block,
            cell: vec![64],
            params: BTreeMap::from([("m".to_string(), 1), ("stride".to_string(), 1)]),
            block_dim: [1, 1, 1],
            grid_dim: [2, 1, 1],
        },
        same_value_write: false,
        barrier: None,
        condition: None,
        precondition: Some("m >= gridDim.x".into()),
    };
    file_of(
        "kernels/scale.cu",
        t,
        vec![kernel_of(
            t,
            "scale",
            Span::new(FileId(0), 0, t.len() - 1),
            Verdict::Racy,
            vec![zero_stride, rows],
            (4.5, 3),
        )],
    )
}

/// The report of the readable file `path` holding `text`, with `kernels` and no syntax error.
fn file_of(path: &str, text: &str, kernels: Vec<KernelReport>) -> FileReport {
    FileReport {
        path: Some(path.into()),
        files: vec![SourceFile {
            path: Some(path.into()),
            text: Arc::from(text),
        }],
        kernels,
        syntax_errors: vec![],
        error: None,
        ..FileReport::default()
    }
}

/// The report of kernel `name` of `text` over `span`, under the symbolic launch, that took
/// `(time_ms, queries)`.
fn kernel_of(
    text: &str,
    name: &str,
    span: Span,
    verdict: Verdict,
    findings: Vec<Finding>,
    (time_ms, queries): (f64, usize),
) -> KernelReport {
    KernelReport {
        name: name.into(),
        span,
        name_span: span_of(text, name, 0),
        verdict,
        reason: None,
        findings,
        assumed_launch: "blockDim=(1..1024,1,1) gridDim=(symbolic,1,1)".into(),
        time_ms,
        queries,
        unmodelled: vec![],
    }
}

/// A file that could not be read.
pub fn error_file() -> FileReport {
    FileReport {
        path: Some("kernels/blob.cu".into()),
        error: Some("binary file (contains NUL bytes)".into()),
        ..FileReport::default()
    }
}

pub fn all() -> Vec<FileReport> {
    vec![
        racy_file(),
        conditional_file(),
        unknown_file(),
        error_file(),
    ]
}
