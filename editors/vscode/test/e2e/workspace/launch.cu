// Racy exactly when a block has more than 64 threads: threads t and t + 64 write the same cell.
// The cudarace.blockDim setting decides.
__global__ void wrap() {
    __shared__ int s[64];
    s[threadIdx.x % 64] = 1;
}
