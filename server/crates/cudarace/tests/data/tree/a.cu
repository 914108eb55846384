__global__ void count_blocks(int *counts) {
    if (threadIdx.x == 0) {
        counts[blockIdx.x] = counts[blockIdx.x] + 1;
    }
}
