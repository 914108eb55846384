// 1-D and 2-D stencils with halos staged in shared memory.
#define RADIUS 3
#define BLOCK 128
#define BX 16
#define BY 16

__global__ void stencil_1d(const float *in, float *out, int n) {
    __shared__ float temp[BLOCK + 2 * RADIUS];
    int gindex = blockIdx.x * blockDim.x + threadIdx.x;
    int lindex = threadIdx.x + RADIUS;
    temp[lindex] = (gindex < n) ? in[gindex] : 0.0f;
    if (threadIdx.x < RADIUS) {
        temp[lindex - RADIUS] = (gindex >= RADIUS) ? in[gindex - RADIUS] : 0.0f;
        temp[lindex + BLOCK] = (gindex + BLOCK < n) ? in[gindex + BLOCK] : 0.0f;
    }
    __syncthreads();
    float result = 0.0f;
    for (int offset = -RADIUS; offset <= RADIUS; offset++)
        result += temp[lindex + offset];
    if (gindex < n)
        out[gindex] = result;
}

__global__ void stencil_2d(const float *in, float *out, int w, int h) {
    __shared__ float tile[BY + 2][BX + 2];
    int x = blockIdx.x * BX + threadIdx.x;
    int y = blockIdx.y * BY + threadIdx.y;
    int tx = threadIdx.x + 1, ty = threadIdx.y + 1;
    tile[ty][tx] = (x < w && y < h) ? in[y * w + x] : 0.0f;
    if (threadIdx.x == 0)
        tile[ty][0] = (x > 0 && y < h) ? in[y * w + x - 1] : 0.0f;
    if (threadIdx.x == BX - 1)
        tile[ty][BX + 1] = (x + 1 < w && y < h) ? in[y * w + x + 1] : 0.0f;
    if (threadIdx.y == 0)
        tile[0][tx] = (y > 0 && x < w) ? in[(y - 1) * w + x] : 0.0f;
    if (threadIdx.y == BY - 1)
        tile[BY + 1][tx] = (y + 1 < h && x < w) ? in[(y + 1) * w + x] : 0.0f;
    __syncthreads();
    if (x < w && y < h)
        out[y * w + x] = 0.2f * (tile[ty][tx] + tile[ty - 1][tx] + tile[ty + 1][tx] +
                                 tile[ty][tx - 1] + tile[ty][tx + 1]);
}

// Jacobi iterations in one block, ping-ponging between two shared buffers.
__global__ void jacobi_1d(float *u, int iters) {
    __shared__ float buf[2][BLOCK + 2];
    int t = threadIdx.x + 1;
    buf[0][t] = u[t];
    buf[1][t] = u[t];
    if (threadIdx.x == 0) {
        buf[0][0] = buf[1][0] = u[0];
        buf[0][BLOCK + 1] = buf[1][BLOCK + 1] = u[BLOCK + 1];
    }
    __syncthreads();
    int cur = 0;
    for (int it = 0; it < iters; ++it) {
        buf[1 - cur][t] = 0.5f * (buf[cur][t - 1] + buf[cur][t + 1]);
        __syncthreads();
        cur = 1 - cur;
    }
    u[t] = buf[cur][t];
}

void launch(const float *a, float *b, int n, int w, int h, float *u) {
    stencil_1d<<<(n + BLOCK - 1) / BLOCK, BLOCK>>>(a, b, n);
    stencil_2d<<<dim3((w + BX - 1) / BX, (h + BY - 1) / BY), dim3(BX, BY)>>>(a, b, w, h);
    jacobi_1d<<<1, BLOCK>>>(u, 100);
}
