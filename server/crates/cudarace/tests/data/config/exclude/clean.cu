__global__ void copy(int *out, const int *in) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    out[i] = in[i];
}
