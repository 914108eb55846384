// Bitonic sort of one block's worth of keys in shared memory.
#define N 1024

__global__ void bitonic_sort(int *keys) {
    __shared__ int s[N];
    unsigned tid = threadIdx.x;
    s[tid] = keys[blockIdx.x * N + tid];
    __syncthreads();
    for (unsigned k = 2; k <= N; k <<= 1) {
        for (unsigned j = k >> 1; j > 0; j >>= 1) {
            unsigned ixj = tid ^ j;
            if (ixj > tid) {
                bool up = (tid & k) == 0;
                int a = s[tid], b = s[ixj];
                if ((a > b) == up) {
                    s[tid] = b;
                    s[ixj] = a;
                }
            }
            __syncthreads();
        }
    }
    keys[blockIdx.x * N + tid] = s[tid];
}

void launch(int *keys, int blocks) {
    bitonic_sort<<<blocks, N>>>(keys);
}
