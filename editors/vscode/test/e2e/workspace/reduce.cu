// A shared-memory tree reduction that lost the barrier inside its loop: in iteration s, thread tid
// reads sdata[tid + s], which thread tid + s wrote in an earlier iteration, with nothing ordering
// the two. The fix is a __syncthreads() at the end of the loop body (outside the if).
__global__ void reduce(const float *in, float *out) {
    __shared__ float sdata[256];
    unsigned int tid = threadIdx.x;
    sdata[tid] = in[blockIdx.x * blockDim.x + tid];
    __syncthreads();
    for (unsigned int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s) {
            sdata[tid] += sdata[tid + s];
        }
    }
    if (tid == 0) {
        out[blockIdx.x] = sdata[0];
    }
}
