// Matrix transpose through a padded shared-memory tile (the [TILE][TILE + 1] padding avoids
// bank conflicts): 32 x 8 threads move a 32 x 32 tile, each thread handling four rows.
//
// The kernel assumes 32 x 8 thread blocks; the launch below fixes them.
//
// cudarace reports: kernel `transpose` race-free -- the tile is written as tile[ty + j][tx] and
// read transposed as tile[tx][ty + j] only after the barrier, and every output element is
// written by exactly one thread.
//
// expect: race-free

#define TILE 32
#define ROWS 8

__global__ void transpose(float *out, const float *in, int width, int height) {
    __shared__ float tile[TILE][TILE + 1];

    int x = blockIdx.x * TILE + threadIdx.x;
    int y = blockIdx.y * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += ROWS)
        if (x < width && y + j < height)
            tile[threadIdx.y + j][threadIdx.x] = in[(y + j) * width + x];

    __syncthreads();

    x = blockIdx.y * TILE + threadIdx.x;
    y = blockIdx.x * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += ROWS)
        if (x < height && y + j < width)
            out[(y + j) * height + x] = tile[threadIdx.x][threadIdx.y + j];
}

void run_transpose(float *d_out, const float *d_in, int width, int height) {
    dim3 grid((width + TILE - 1) / TILE, (height + TILE - 1) / TILE);
    transpose<<<grid, dim3(TILE, ROWS)>>>(d_out, d_in, width, height);
}
