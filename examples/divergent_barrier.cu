// A 1-D smoothing kernel with an innocent-looking bounds check: threads past the end of the
// array return early -- and then never reach the __syncthreads() that the others wait at.
// That is barrier divergence (undefined behaviour: a hang or silently wrong results).
//
// cudarace reports: kernel `smooth` divergent, pointing at the barrier and at the `return`
// condition, with a witness: one thread that reaches the barrier and one that does not.
// The fix: keep every thread alive to the barrier and guard only the accesses, e.g.
//     float v = gid < n ? in[gid] : 0.0f;  s[threadIdx.x] = v;  __syncthreads();  if (gid < n) ...
//
// expect: divergent

__global__ void smooth(const float *in, float *out, int n) {
    __shared__ float s[1024];
    int gid = blockIdx.x * blockDim.x + threadIdx.x;
    if (gid >= n)
        return;

    s[threadIdx.x] = in[gid];
    __syncthreads(); // DIVERGENT

    float left = threadIdx.x > 0 ? s[threadIdx.x - 1] : s[threadIdx.x];
    out[gid] = 0.5f * (left + s[threadIdx.x]);
}
