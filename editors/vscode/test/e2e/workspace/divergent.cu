// A barrier only the first half of the block reaches.
__global__ void partial_barrier(float *data) {
    __shared__ float tile[256];
    if (threadIdx.x < 128) {
        tile[threadIdx.x] = data[threadIdx.x];
        __syncthreads();
    }
}
