// Only the first 16 threads of a block reach the barrier.
__global__ void guarded_sync(int *out) {
    __shared__ int s[1024];
    if (threadIdx.x < 16) {
        s[threadIdx.x] = 1;
        __syncthreads();
    }
}
