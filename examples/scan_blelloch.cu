// Work-efficient exclusive prefix sum (Blelloch) of 2 * blockDim.x elements per block:
// an up-sweep builds partial sums in a tree, the last element is cleared, and a down-sweep
// distributes them back down. Every tree level is separated from the next by a barrier, and at
// each level the threads touch disjoint pairs of cells (i - stride, i) with
// i = 2 * stride * (tid + 1) - 1.
//
// cudarace reports: kernel `scan_blelloch` race-free.
//
// expect: race-free

__global__ void scan_blelloch(const float *in, float *out) {
    extern __shared__ float temp[];
    int tid = threadIdx.x;
    int n = 2 * blockDim.x;
    int base = blockIdx.x * n;

    temp[2 * tid] = in[base + 2 * tid];
    temp[2 * tid + 1] = in[base + 2 * tid + 1];

    // Up-sweep (reduce).
    for (int stride = 1; stride < n; stride *= 2) {
        __syncthreads();
        int i = 2 * stride * (tid + 1) - 1;
        if (i < n)
            temp[i] += temp[i - stride];
    }

    __syncthreads();
    if (tid == 0)
        temp[n - 1] = 0.0f;

    // Down-sweep.
    for (int stride = n / 2; stride > 0; stride /= 2) {
        __syncthreads();
        int i = 2 * stride * (tid + 1) - 1;
        if (i < n) {
            float t = temp[i - stride];
            temp[i - stride] = temp[i];
            temp[i] += t;
        }
    }

    __syncthreads();
    out[base + 2 * tid] = temp[2 * tid];
    out[base + 2 * tid + 1] = temp[2 * tid + 1];
}
