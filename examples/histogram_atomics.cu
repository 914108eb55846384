// A 256-bin histogram: each block builds a private histogram in shared memory with atomicAdd,
// then merges it into the global histogram, again with atomicAdd.
//
// Atomic operations never race with each other, even on data-dependent bins (`in[i]`); the
// barriers keep the zeroing, the counting and the merge apart (a plain access and an atomic
// on the same cell would race).
//
// cudarace reports: kernel `histogram_256` race-free.
//
// expect: race-free

#define BINS 256

__global__ void histogram_256(const unsigned char *in, unsigned int *hist, int n) {
    __shared__ unsigned int local[BINS];

    for (int b = threadIdx.x; b < BINS; b += blockDim.x)
        local[b] = 0;
    __syncthreads();

    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        atomicAdd(&local[in[i]], 1u);
    __syncthreads();

    for (int b = threadIdx.x; b < BINS; b += blockDim.x)
        atomicAdd(&hist[b], local[b]);
}
