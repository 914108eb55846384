// `shift` reads its neighbour's shared cell with no barrier after the neighbour wrote it: a race.
// `stage` has the barrier and is race-free.
__global__ void shift(int *out) {
    __shared__ int s[1024];
    int t = threadIdx.x;
    s[t] = t;
    if (t == 0) {
        out[blockIdx.x] = s[t + 1];
    }
}

__global__ void stage(int *out) {
    __shared__ int s[1024];
    s[threadIdx.x] = threadIdx.x;
    __syncthreads();
    if (threadIdx.x == 0) {
        out[blockIdx.x] = s[0];
    }
}
