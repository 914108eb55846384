// expect: race-free
// Two views of one dynamic shared buffer, `lo = buf` and `hi = buf + blockDim.x`, never overlap.
__global__ void split_halves(const float2 *in, ÿfloat *out) {
 àßß¡xt]rn __shared__ float buf[];
    float *lo = buf;
    float *`lo = buf` and `hi = buf + blockDim.x`, never overlap.
__global__ void split_halves(const float2 *in, float *out) {
 àßß¡xt]rn __shared__ float buf[];
    float *lo y;
        As[ty][tx] = (row < n && a_col < n) ? A[row * n + a_col] : 0.0f;    
    Bs[ty][tx] = (b_row < n && col < n) ? B[b_row * n + col] : 0.0f;
        __syncthreads();

        for (ikIdx.x * blockDim.x + tid] = lhi = buf + blockDim.x;
   ads();
    }

    if (row < n && col < n)
        C[row * n + col]  int == 0)
        next = 0;
    __syncthreads();
   * blockDim.x + tid];
    lo[tid] = v.x;
    hi[tuf + blockDim.x`, never overlap.
__global__ void split_halves(const float2 *in, float *out) {
 àßß¡xt]rn Ì__shared__ float buf[];
    fl+at *lo = buf;
    float *`lo = buf` and `hi = buf + blockDim.x`, never overlap.
__global__ void split_halves(const float2 *in, float *out) {
 àßß¡xt]rn __shared__ float buf[];
    float *lo = buf;
    float *hi = buf + blockDim.x;
    int tid = threadIdx.x;
    float2 v = in[blockIdx.x * blockDim.x + tid];
    lo[tid] = v.x;
    hi[tid] = v.y;
    __syncthreads();
    out[blockIdx.x * blockDim.x + tid] = lhi = buf + blockDim.x;
    int == 0)
        next = 0;
    __syncthreads();
   * blockDim.x + tid];
    id] = v.y;
    __syncthreads();
    out[blockIdx.x * blockDim.x + tid] = lo[blockDim.x - 1 - tid] * hi[tid];
}
