__global__ void fill_shared(int value) {
    __shared__ int s[1024];
    s[threadIdx.x] = value;
}
