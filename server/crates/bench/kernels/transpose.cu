// Matrix transpose through a padded shared tile (TILE_DIM+1 avoids bank conflicts), with
// BLOCK_ROWS x TILE_DIM threads each moving TILE_DIM / BLOCK_ROWS elements.
#define TILE_DIM 32
#define BLOCK_ROWS 8

__global__ void transpose_padded(float *odata, const float *idata, int width, int height) {
    __shared__ float tile[TILE_DIM][TILE_DIM + 1];
    int x = blockIdx.x * TILE_DIM + threadIdx.x;
    int y = blockIdx.y * TILE_DIM + threadIdx.y;
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
        if (x < width && y + j < height)
            tile[threadIdx.y + j][threadIdx.x] = idata[(y + j) * width + x];
    __syncthreads();
    x = blockIdx.y * TILE_DIM + threadIdx.x;
    y = blockIdx.x * TILE_DIM + threadIdx.y;
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
        if (x < height && y + j < width)
            odata[(y + j) * height + x] = tile[threadIdx.x][threadIdx.y + j];
}

// Naive transpose: every thread moves one element; no shared memory.
__global__ void transpose_naive(float *odata, const float *idata, int width, int height) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < width && y < height)
        odata[x * height + y] = idata[y * width + x];
}

void launch(float *o, const float *i, int w, int h) {
    dim3 grid((w + TILE_DIM - 1) / TILE_DIM, (h + TILE_DIM - 1) / TILE_DIM);
    transpose_padded<<<grid, dim3(TILE_DIM, BLOCK_ROWS)>>>(o, i, w, h);
    transpose_naive<<<grid, dim3(TILE_DIM, TILE_DIM)>>>(o, i, w, h);
}
