// Every thread writes `out[0]` (a race the solver finds at once), and so does the thread that
// packs cell 0 of the first triangle (a second race, on the packing line); the packing line
// with itself is a pair whose nonlinear query takes the solver seconds: the first pass's short
// limit stops it, and as both of its accesses are racy already it is not asked again.
__global__ void count_and_pack(float *out, const float *in, int n, int batches) {
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    out[0] = 1.0f;
    if (col <= row % n && row < n * batches) {
        int k = n * col - (col * (col + 1)) / 2 + row % n + (row / n) * ((n + 1) * n / 2);
        out[k] = in[row * n + col];
    }
}
