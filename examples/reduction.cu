// Block-wide sum with a tree reduction in shared memory (sequential addressing), done right:
// a barrier after loading and one after every level of the tree.
//
// cudarace reports: kernel `block_sum` race-free. Compare reduction_racy.cu.
//
// expect: race-free

__global__ void block_sum(const float *in, float *out, int n) {
    extern __shared__ float sdata[];
    unsigned int tid = threadIdx.x;
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    sdata[tid] = i < n ? in[i] : 0.0f;
    __syncthreads();

    for (unsigned int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s)
            sdata[tid] += sdata[tid + s];
        __syncthreads();
    }

    if (tid == 0)
        out[blockIdx.x] = sdata[0];
}
