// Block-wide sum with a tree reduction in shared memory -- and a classic bug: the barrier
// inside the loop is missing, so a thread may read sdata[tid + s] before the thread that owns
// that cell has added its partner from the previous level.
//
// cudarace reports: kernel `block_sum` racy, one data race on `sdata` (the read of
// sdata[tid + s] by one thread against the write of sdata[tid] by another, in two different
// iterations), with a witness: the two threads, the cell, and both threads' values of `s`.
// The fix is reduction.cu.
//
// expect: racy

__global__ void block_sum(const float *in, float *out, int n) {
    extern __shared__ float sdata[];
    unsigned int tid = threadIdx.x;
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    sdata[tid] = i < n ? in[i] : 0.0f;
    __syncthreads();

    for (unsigned int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s)
            sdata[tid] += sdata[tid + s]; // RACE
        // missing: __syncthreads();
    }

    __syncthreads();
    if (tid == 0)
        out[blockIdx.x] = sdata[0];
}
