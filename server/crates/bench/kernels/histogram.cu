// 256-bin histograms: per-block shared-memory privatization with atomics, then a global merge.
#define BINS 256

__global__ void histogram_shared(const unsigned char *data, unsigned *hist, int n) {
    __shared__ unsigned local[BINS];
    for (int b = threadIdx.x; b < BINS; b += blockDim.x)
        local[b] = 0;
    __syncthreads();
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        atomicAdd(&local[data[i]], 1u);
    __syncthreads();
    for (int b = threadIdx.x; b < BINS; b += blockDim.x)
        atomicAdd(&hist[b], local[b]);
}

__global__ void histogram_global(const unsigned char *data, unsigned *hist, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        atomicAdd(&hist[data[i]], 1u);
}

void launch(const unsigned char *d, unsigned *h, int n) {
    histogram_shared<<<120, 256>>>(d, h, n);
    histogram_global<<<(n + 255) / 256, 256>>>(d, h, n);
}
