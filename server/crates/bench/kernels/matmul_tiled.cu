// Tiled matrix multiplication C = A * B (row-major, n x n), TILE x TILE thread blocks.
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

// Rectangular variant: C (m x p) = A (m x n) * B (n x p), with a register-blocked inner loop.
__global__ void matmul_rect(const float *A, const float *B, float *C, int m, int n, int p) {
    __shared__ float As[TILE][TILE + 1];
    __shared__ float Bs[TILE][TILE + 1];
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * TILE + ty;
    int col = blockIdx.x * TILE + tx;
    float acc = 0.0f;
    for (int k0 = 0; k0 < n; k0 += TILE) {
        As[ty][tx] = (row < m && k0 + tx < n) ? A[row * n + k0 + tx] : 0.0f;
        Bs[ty][tx] = (k0 + ty < n && col < p) ? B[(k0 + ty) * p + col] : 0.0f;
        __syncthreads();
#pragma unroll
        for (int k = 0; k < TILE; k += 4) {
            acc += As[ty][k] * Bs[k][tx];
            acc += As[ty][k + 1] * Bs[k + 1][tx];
            acc += As[ty][k + 2] * Bs[k + 2][tx];
            acc += As[ty][k + 3] * Bs[k + 3][tx];
        }
        __syncthreads();
    }
    if (row < m && col < p)
        C[row * p + col] = acc;
}

void launch(const float *A, const float *B, float *C, int n) {
    dim3 grid((n + TILE - 1) / TILE, (n + TILE - 1) / TILE);
    matmul_tiled<<<grid, dim3(TILE, TILE)>>>(A, B, C, n);
    matmul_rect<<<grid, dim3(TILE, TILE)>>>(A, B, C, n, n, n);
}
