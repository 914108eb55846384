//! `divisible-sizes` (see `assumptions/divisible.rs`): which sizes the kernels' indices cut into
//! packs of a constant, read from CUDA text. (The verdict it makes conditional is in the
//! fixture `witnesses/bit_rows_in_words_of_32_is_conditional.cu`; a pack of channels over a
//! symbolic count, `(x * 32) % c`, is a nonlinear query the solver rarely decides within its
//! time limit, so that shape is checked here, where it is found.)

use cudarace_check::assumptions::{divisible_size_assumptions, Broken};

fn conditions(src: &str) -> Vec<String> {
    let ir = cudarace_syntax::lower_source(None, src, &Default::default());
    let k = ir.kernels.first().expect("a kernel");
    divisible_size_assumptions(k)
        .into_iter()
        .map(|a| match a.broken {
            Broken::Layout { text, .. } => text,
            other => format!("{other:?}"),
        })
        .collect()
}

#[test]
fn packs_of_channels_over_a_parameter() {
    let src = r#"
__global__ void repack(const float *in, float *out, int items, int c) {
    int index = blockIdx.x * blockDim.x + threadIdx.x;
    int pack = index / 32;
    int chan = (pack * 32) % c;
    int item = (pack * 32) / c;
    if (item < items) out[chan * items + item * 32 + index % 32] = in[index];
}
"#;
    assert_eq!(conditions(src), vec!["c % 32 != 0".to_string()]);
}

#[test]
fn rows_counted_in_words_through_a_helper() {
    let src = r#"
__device__ void fill(unsigned *row, int words, int r) {
    for (int w = threadIdx.x; w < words; w += blockDim.x) row[r * words + w] = 0;
}
__global__ void fill_rows(unsigned *bits, int ld) {
    fill(bits, ld / 32, blockIdx.x);
}
"#;
    assert_eq!(conditions(src), vec!["ld % 32 != 0".to_string()]);
}

#[test]
fn nothing_without_a_pack_in_an_index() {
    // A quotient that is not in an index (a loop bound), a pack by a launch size, and a
    // parameter halved without being a row are no sizes cut into packs.
    let src = r#"
__global__ void k(float *out, int n, int c) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    for (int i = 0; i < n / 32; i++) out[t] += 1.0f;
    out[(t * 32) % blockDim.x] = 0.0f;
    out[t + c / 2] = 1.0f;
}
"#;
    assert_eq!(conditions(src), Vec::<String>::new());
}
