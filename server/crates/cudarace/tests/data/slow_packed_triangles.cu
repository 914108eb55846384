// Lower triangles of a batch of n x n matrices packed column by column: one cell per thread,
// but the triangular numbers make the query nonlinear, and the solver takes seconds (the CLI
// tests use it as a kernel no small time budget decides).
__global__ void pack_lower_triangles(float *out, const float *in, int n, int batches) {
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (col <= row % n && row < n * batches) {
        int k = n * col - (col * (col + 1)) / 2 + row % n + (row / n) * ((n + 1) * n / 2);
        out[k] = in[row * n + col];
    }
}
