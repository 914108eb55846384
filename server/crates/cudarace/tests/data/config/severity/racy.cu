// `shift`: a definite race (a neighbour's cell, no barrier).
__global__ void shift(int *out) {
    __shared__ int s[1024];
    int t = threadIdx.x;
    s[t] = t;
    if (t == 0) {
        out[blockIdx.x] = s[t + 1];
    }
}
