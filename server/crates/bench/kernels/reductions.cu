// Block reductions: interleaved addressing, sequential addressing, and a grid-stride
// accumulation followed by a tree with a final warp-synchronous stage using __syncwarp.
#define BLOCK 256

__global__ void reduce_interleaved(const int *in, int *out, int n) {
    __shared__ int sdata[BLOCK];
    unsigned tid = threadIdx.x;
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    sdata[tid] = (i < n) ? in[i] : 0;
    __syncthreads();
    for (unsigned s = 1; s < blockDim.x; s *= 2) {
        if (tid % (2 * s) == 0)
            sdata[tid] += sdata[tid + s];
        __syncthreads();
    }
    if (tid == 0)
        out[blockIdx.x] = sdata[0];
}

__global__ void reduce_sequential(const float *in, float *out, int n) {
    __shared__ float sdata[BLOCK];
    unsigned tid = threadIdx.x;
    unsigned i = blockIdx.x * (blockDim.x * 2) + threadIdx.x;
    float v = 0.0f;
    if (i < n) v += in[i];
    if (i + blockDim.x < n) v += in[i + blockDim.x];
    sdata[tid] = v;
    __syncthreads();
    for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s)
            sdata[tid] += sdata[tid + s];
        __syncthreads();
    }
    if (tid == 0)
        out[blockIdx.x] = sdata[0];
}

__global__ void reduce_grid_stride(const float *in, float *out, int n) {
    __shared__ float sdata[BLOCK];
    unsigned tid = threadIdx.x;
    float sum = 0.0f;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        sum += in[i];
    sdata[tid] = sum;
    __syncthreads();
    for (unsigned s = blockDim.x / 2; s > 32; s >>= 1) {
        if (tid < s)
            sdata[tid] += sdata[tid + s];
        __syncthreads();
    }
    if (tid < 32) {
        float w = sdata[tid] + sdata[tid + 32];
        for (int offset = 16; offset > 0; offset /= 2)
            w += __shfl_down_sync(0xffffffff, w, offset);
        if (tid == 0)
            out[blockIdx.x] = w;
    }
}

void launch(const int *a, int *b, const float *c, float *d, int n) {
    reduce_interleaved<<<(n + BLOCK - 1) / BLOCK, BLOCK>>>(a, b, n);
    reduce_sequential<<<(n + 2 * BLOCK - 1) / (2 * BLOCK), BLOCK>>>(c, d, n);
    reduce_grid_stride<<<64, BLOCK>>>(c, d, n);
}
