// `block_exchange` synchronizes the block (the project's library file says so): the write before
// it and the neighbour's read after it are ordered.
__global__ void exchange(float *data) {
    __shared__ float s[1024];
    s[threadIdx.x] = data[blockIdx.x * blockDim.x + threadIdx.x];
    block_exchange(data, 0);
    data[blockIdx.x * blockDim.x + threadIdx.x] = s[(threadIdx.x + 1) % blockDim.x];
}

// The library's macro: a block-stride loop over the tile.
__global__ void fill(float *out, int n) {
    __shared__ float tile[4096];
    FOR_EACH_THREAD(i, n) {
        tile[i] = 0.0f;
    }
    __syncthreads();
    out[blockIdx.x * blockDim.x + threadIdx.x] = tile[threadIdx.x];
}
