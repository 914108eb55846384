// The annotations ask for 16 threads and 2 blocks. cudarace.toml's [launch] gives every kernel
// 8 blocks (stronger than the annotation); its [[kernel]] entry gives `tuned_*` 32 threads.
// cudarace: blockDim=(16) gridDim=(2)
__global__ void plain(int *out) {
    out[blockIdx.x * blockDim.x + threadIdx.x] = 1;
}

// cudarace: blockDim=(16) gridDim=(2)
__global__ void tuned_copy(int *out, const int *in) {
    out[blockIdx.x * blockDim.x + threadIdx.x] = in[blockIdx.x * blockDim.x + threadIdx.x];
}
