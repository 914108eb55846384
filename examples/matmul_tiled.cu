// Tiled matrix multiplication C = A * B (n x n, row-major) with TILE x TILE blocks: each
// iteration loads one tile of A and one of B into shared memory, waits, multiplies, and waits
// again before the next iteration overwrites the tiles.
//
// The kernel is only correct for TILE x TILE thread blocks; the launch below says so, and
// cudarace uses it (a launch site whose sizes are constants narrows the launch configuration).
//
// cudarace reports: kernel `matmul_tiled` race-free. Delete either __syncthreads() and it
// reports a race on `As`/`Bs`: the first one orders the loads before the reads, the second one
// orders this iteration's reads before the next iteration's loads.
//
// expect: race-free

#define TILE 16

__global__ void matmul_tiled(const float *A, const float *B, float *C, int n) {
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];

    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * TILE + ty;
    int col = blockIdx.x * TILE + tx;
    float acc = 0.0f;

    for (int t = 0; t < (n + TILE - 1) / TILE; ++t) {
        int a_col = t * TILE + tx;
        int b_row = t * TILE + ty;
        As[ty][tx] = (row < n && a_col < n) ? A[row * n + a_col] : 0.0f;
        Bs[ty][tx] = (b_row < n && col < n) ? B[b_row * n + col] : 0.0f;
        __syncthreads();

        for (int k = 0; k < TILE; ++k)
            acc += As[ty][k] * Bs[k][tx];
        __syncthreads();
    }

    if (row < n && col < n)
        C[row * n + col] = acc;
}

void matmul(const float *dA, const float *dB, float *dC, int n) {
    dim3 grid((n + TILE - 1) / TILE, (n + TILE - 1) / TILE);
    matmul_tiled<<<grid, dim3(TILE, TILE)>>>(dA, dB, dC, n);
}
