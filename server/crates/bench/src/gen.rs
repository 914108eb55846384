//! Generated CUDA sources: the five race-free scaling families (after Faial, CAV'21 §6 Claim 2)
//! and the large editor file for the LSP measurements.

/// A family's name and its generator (size → CUDA source).
pub type Family = (&'static str, fn(usize) -> String);

/// The scaling families, each parameterised by how often its pattern is repeated / nested.
pub const FAMILIES: [Family; 5] = [
    ("read/write pairs", accesses),
    ("write + barrier", barriers),
    ("tid conditionals", conditionals),
    ("nested loops, no barrier", unsynchronized_loops),
    ("nested loops + barrier", synchronized_loops),
];

/// `n` read/write pairs: `rd[tid + r*T]; wr[tid + i*T]` with `T = blockDim.x`. A thread only
/// meets itself on a cell, so the kernel is race-free.
pub fn accesses(n: usize) -> String {
    let mut s = String::from(
        "__global__ void accesses(int *out) {\n    extern __shared__ int s[];\n    int tid = threadIdx.x;\n    int T = blockDim.x;\n    int acc = 0;\n",
    );
    for i in 1..=n {
        let r = (i * 7) % 53 + 1;
        s += &format!("    acc += s[tid + {r} * T];\n    s[tid + {i} * T] = acc;\n");
    }
    s += "}\n";
    s
}

/// `n` times: every thread writes its own cell, then a barrier.
pub fn barriers(n: usize) -> String {
    let mut s = String::from(
        "__global__ void barriers(int *out) {\n    extern __shared__ int s[];\n    int tid = threadIdx.x;\n",
    );
    for i in 1..=n {
        s += &format!("    s[tid] = {i};\n    __syncthreads();\n");
    }
    s += "}\n";
    s
}

/// `n` thread-id conditionals: `if (tid == i) wr[tid]`.
pub fn conditionals(n: usize) -> String {
    let mut s = String::from(
        "__global__ void conditionals(int *out) {\n    extern __shared__ int s[];\n    int tid = threadIdx.x;\n",
    );
    for i in 0..n {
        s += &format!("    if (tid == {i}) s[tid] = {i};\n");
    }
    s += "}\n";
    s
}

/// `n` nested loops with a uniform bound `N`, each writing `s[tid]`, no barrier.
pub fn unsynchronized_loops(n: usize) -> String {
    nested_loops("unsync_loops", n, false)
}

/// `n` nested loops, each writing `s[tid]` and then synchronizing.
pub fn synchronized_loops(n: usize) -> String {
    nested_loops("sync_loops", n, true)
}

fn nested_loops(name: &str, n: usize, sync: bool) -> String {
    let mut s = format!(
        "__global__ void {name}(int *out, int N) {{\n    extern __shared__ int s[];\n    int tid = threadIdx.x;\n"
    );
    for i in 1..=n {
        let pad = "    ".repeat(i);
        s += &format!("{pad}for (int i{i} = 0; i{i} < N; i{i}++) {{\n{pad}    s[tid] = i{i};\n");
        if sync {
            s += &format!("{pad}    __syncthreads();\n");
        }
    }
    for i in (1..=n).rev() {
        s += &format!("{}}}\n", "    ".repeat(i));
    }
    s += "}\n";
    s
}

/// Lines per kernel section of the editor file.
pub const SECTION_LINES: usize = 60;

/// Kernel templates for the editor file; `{K}` is replaced by the kernel's number. Each has a
/// line `float scale = 0.5f;` whose digit the edits change.
const TEMPLATES: [&str; 5] = [
    "__global__ void reduce_{K}(const float *in, float *out, int n) {
    __shared__ float sdata[256];
    float scale = 0.5f;
    unsigned tid = threadIdx.x;
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
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
",
    "__global__ void stencil_{K}(const float *in, float *out, int n) {
    __shared__ float temp[128 + 6];
    float scale = 0.5f;
    int g = blockIdx.x * blockDim.x + threadIdx.x;
    int l = threadIdx.x + 3;
    temp[l] = (g < n) ? in[g] : 0.0f;
    if (threadIdx.x < 3) {
        temp[l - 3] = (g >= 3) ? in[g - 3] : 0.0f;
        temp[l + 128] = (g + 128 < n) ? in[g + 128] : 0.0f;
    }
    __syncthreads();
    float r = 0.0f;
    for (int o = -3; o <= 3; o++)
        r += temp[l + o];
    if (g < n)
        out[g] = r * scale;
}
",
    "__global__ void saxpy_{K}(int n, float a, const float *x, float *y) {
    float scale = 0.5f;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        y[i] = a * x[i] + y[i] * scale;
}
",
    "__global__ void transpose_{K}(float *odata, const float *idata, int width, int height) {
    __shared__ float tile[32][33];
    float scale = 0.5f;
    int x = blockIdx.x * 32 + threadIdx.x;
    int y = blockIdx.y * 32 + threadIdx.y;
    for (int j = 0; j < 32; j += 8)
        if (x < width && y + j < height)
            tile[threadIdx.y + j][threadIdx.x] = idata[(y + j) * width + x] * scale;
    __syncthreads();
    x = blockIdx.y * 32 + threadIdx.x;
    y = blockIdx.x * 32 + threadIdx.y;
    for (int j = 0; j < 32; j += 8)
        if (x < height && y + j < width)
            odata[(y + j) * height + x] = tile[threadIdx.x][threadIdx.y + j];
}
",
    "__global__ void histogram_{K}(const unsigned char *data, unsigned *hist, int n) {
    __shared__ unsigned local[256];
    float scale = 0.5f;
    for (int b = threadIdx.x; b < 256; b += blockDim.x)
        local[b] = 0;
    __syncthreads();
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        atomicAdd(&local[data[i]], 1u);
    __syncthreads();
    for (int b = threadIdx.x; b < 256; b += blockDim.x)
        atomicAdd(&hist[b], local[b] * (unsigned)scale);
}
",
];

/// Where the one-character edits of the editor benchmark go: (line, column) of a digit, 0-based.
pub struct EditorFile {
    pub text: String,
    /// The digit of each kernel's `0.5f` literal (changes no access: the kernel's queries come
    /// from the server's cache).
    pub literal_digits: Vec<(usize, usize)>,
    /// A digit inside an index or a loop step of a shared-memory access (`sdata[0]`,
    /// `temp[l - 3]`, `j += 8`): the kernel's accesses change, its queries are solved again.
    pub index_digits: Vec<(usize, usize)>,
    /// A digit in the comment block above each kernel (no kernel changes: nothing to solve).
    pub comment_digits: Vec<(usize, usize)>,
}

/// Text of an index or step digit per template, and the digit's offset in it.
const INDEX_MARKS: [(&str, usize); 3] = [("sdata[0]", 6), ("temp[l - 3]", 9), ("j += 8", 5)];

/// The editor file: `kernels` sections of [`SECTION_LINES`] lines (a comment block, a kernel
/// from the templates, padding), with the positions of the digits the edits change.
pub fn editor_file(kernels: usize) -> EditorFile {
    let mut lines: Vec<String> = Vec::new();
    let (mut literal_digits, mut index_digits, mut comment_digits) =
        (Vec::new(), Vec::new(), Vec::new());
    for k in 0..kernels {
        let start = lines.len();
        lines.push(format!(
            "// ---- section {k} ----------------------------------------------"
        ));
        for c in 0..6 {
            let line =
                format!("// Notes for kernel {k}, line {c}: generated for the editor benchmark.");
            if c == 0 {
                if let Some(col) = line.find("line 0") {
                    comment_digits.push((lines.len(), col + 5));
                }
            }
            lines.push(line);
        }
        let body = TEMPLATES[k % TEMPLATES.len()].replace("{K}", &k.to_string());
        let mut marked = false;
        for l in body.lines() {
            if let Some(col) = l.find("0.5f") {
                literal_digits.push((lines.len(), col + 2));
            }
            for (mark, offset) in INDEX_MARKS {
                if let (false, Some(col)) = (marked, l.find(mark)) {
                    index_digits.push((lines.len(), col + offset));
                    marked = true;
                }
            }
            lines.push(l.to_string());
        }
        while lines.len() < start + SECTION_LINES {
            lines.push(format!(
                "// padding line {} of section {k}",
                lines.len() - start
            ));
        }
    }
    let mut text = lines.join("\n");
    text.push('\n');
    EditorFile {
        text,
        literal_digits,
        index_digits,
        comment_digits,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn editor_file_has_the_requested_shape() {
        let f = editor_file(50);
        assert_eq!(f.text.lines().count(), 50 * SECTION_LINES);
        let char_at =
            |(line, col): (usize, usize)| f.text.lines().nth(line).unwrap().as_bytes()[col];
        assert_eq!(f.literal_digits.len(), 50);
        for &at in &f.literal_digits {
            assert_eq!(char_at(at), b'5');
        }
        // Reduction, stencil and transpose: 3 of the 5 templates have an index digit.
        assert_eq!(f.index_digits.len(), 30);
        for &at in &f.index_digits {
            assert!(char_at(at).is_ascii_digit());
        }
        assert_eq!(f.comment_digits.len(), 50);
        for &at in &f.comment_digits {
            assert_eq!(char_at(at), b'0');
            assert!(f.text.lines().nth(at.0).unwrap().starts_with("//"));
        }
    }

    #[test]
    fn families_grow_with_the_size() {
        for (_, family) in FAMILIES {
            assert!(family(10).lines().count() > family(1).lines().count());
        }
        assert_eq!(synchronized_loops(3).matches("__syncthreads").count(), 3);
        assert_eq!(unsynchronized_loops(3).matches("for (").count(), 3);
    }
}

/// Edit positions in a real file (bench section c with `--lsp-file`): per kernel (`__global__`
/// function with a body), the first digit after the point of a float literal and the first
/// digit inside a `[…]` index; and one character after `//` in each of the file's first line
/// comments outside kernels (replaced by a digit: nothing to solve). Positions are (line, UTF-16
/// column), as LSP counts them.
pub fn real_file_edits(text: &str) -> EditorFile {
    let bytes = text.as_bytes();
    // Kernel bodies as byte ranges: the braces after each `__global__`, matched (comments and
    // string literals skipped).
    let mut bodies: Vec<(usize, usize)> = Vec::new();
    let mut from = 0;
    while let Some(at) = text[from..].find("__global__").map(|i| i + from) {
        from = at + 10;
        let Some(open) = text[from..].find(['{', ';']).map(|i| i + from) else {
            break;
        };
        if bytes[open] == b';' {
            continue;
        }
        let mut depth = 0usize;
        let mut i = open;
        let mut end = None;
        while i < bytes.len() {
            match bytes[i] {
                b'/' if bytes.get(i + 1) == Some(&b'/') => {
                    i = text[i..].find('\n').map_or(bytes.len(), |n| i + n);
                    continue;
                }
                b'/' if bytes.get(i + 1) == Some(&b'*') => {
                    i = text[i + 2..]
                        .find("*/")
                        .map_or(bytes.len(), |n| i + 2 + n + 2);
                    continue;
                }
                b'"' | b'\'' => {
                    let q = bytes[i];
                    i += 1;
                    while i < bytes.len() && bytes[i] != q {
                        i += if bytes[i] == b'\\' { 2 } else { 1 };
                    }
                }
                b'{' => depth += 1,
                b'}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = Some(i);
                        break;
                    }
                }
                _ => {}
            }
            i += 1;
        }
        let Some(end) = end else { break };
        bodies.push((open, end));
        from = end;
    }
    let position = |at: usize| {
        let line = text[..at].matches('\n').count();
        let start = text[..at].rfind('\n').map_or(0, |n| n + 1);
        (line, text[start..at].encode_utf16().count())
    };
    let in_comment = |at: usize| {
        let start = text[..at].rfind('\n').map_or(0, |n| n + 1);
        text[start..at].contains("//")
    };
    let (mut literal_digits, mut index_digits, mut comment_digits) =
        (Vec::new(), Vec::new(), Vec::new());
    for &(open, end) in &bodies {
        let body = &bytes[open..end];
        let literal = (1..body.len().saturating_sub(1)).find(|&i| {
            body[i] == b'.'
                && body[i - 1].is_ascii_digit()
                && body[i + 1].is_ascii_digit()
                && !in_comment(open + i)
        });
        if let Some(i) = literal {
            literal_digits.push(position(open + i + 1));
        }
        let mut index = None;
        let mut bracket = 0usize;
        for (i, &b) in body.iter().enumerate() {
            match b {
                b'[' => bracket += 1,
                b']' => bracket = bracket.saturating_sub(1),
                b if bracket > 0 && b.is_ascii_digit() && !in_comment(open + i) => {
                    index = Some(open + i);
                    break;
                }
                _ => {}
            }
        }
        if let Some(at) = index {
            index_digits.push(position(at));
        }
    }
    let inside = |at: usize| bodies.iter().any(|&(o, e)| o <= at && at <= e);
    let mut from = 0;
    while let Some(at) = text[from..].find("//").map(|i| i + from) {
        from = at + 2;
        let target = at + 3;
        if comment_digits.len() >= bodies.len().max(1) {
            break;
        }
        let ok = bytes
            .get(target)
            .is_some_and(|b| b.is_ascii_graphic() || *b == b' ');
        if ok && !inside(at) && text.is_char_boundary(target) {
            comment_digits.push(position(target));
        }
    }
    EditorFile {
        text: text.to_string(),
        literal_digits,
        index_digits,
        comment_digits,
    }
}

#[cfg(test)]
mod real_file_tests {
    use super::real_file_edits;

    #[test]
    fn real_file_edits_find_a_literal_an_index_and_a_comment_per_kernel() {
        let text = "// header comment\n\
                    __global__ void a(float *x) {\n\
                    \x20   // inside: ignored 9.9\n\
                    \x20   x[threadIdx.x + 1] = 0.5f;\n\
                    }\n\
                    __global__ void b(float *x);\n\
                    // second comment\n\
                    __global__ void c(float *x) { x[2] = 1.25f; }\n";
        let e = real_file_edits(text);
        assert_eq!(e.literal_digits, vec![(3, 27), (7, 39)]);
        assert_eq!(e.index_digits, vec![(3, 20), (7, 32)]);
        assert_eq!(e.comment_digits, vec![(0, 3), (6, 3)]);
        let lines: Vec<&str> = text.lines().collect();
        for &(l, c) in e.literal_digits.iter().chain(&e.index_digits) {
            assert!(lines[l].as_bytes()[c].is_ascii_digit(), "{l}:{c}");
        }
    }
}
