// A 3x3 box blur over a 2-D image, written the way C++ CUDA code often is: a small `Image`
// struct with an accessor method that returns a reference, and a shared tile with a one-pixel
// halo loaded under the usual bounds check `(x >= 0 && x < w && …) ? … : 0`.
//
// cudarace inlines the methods (the struct's pointer member is the kernel's image) and reads the
// bounds check as the comparisons it is, so the kernel is checked, not left `unknown`.
// cudarace reports: kernel `blur` race-free.
//
// expect: race-free
//--blockDim=[16,16] --gridDim=[32,32]
#define TILE 16

struct Image {
    float *pixels;
    int width, height;
    __device__ float &at(int x, int y) { return pixels[y * width + x]; }
    __device__ bool inside(int x, int y) const { return x >= 0 && x < width && y >= 0 && y < height; }
};

__global__ void blur(Image src, Image dst) {
    __shared__ float tile[TILE + 2][TILE + 2];
    int x0 = blockIdx.x * TILE, y0 = blockIdx.y * TILE;
    for (int ty = threadIdx.y; ty < TILE + 2; ty += TILE)
        for (int tx = threadIdx.x; tx < TILE + 2; tx += TILE) {
            int x = x0 + tx - 1, y = y0 + ty - 1;
            tile[ty][tx] = (x >= 0 && x < src.width && y >= 0 && y < src.height) ? src.at(x, y) : 0.0f;
        }
    __syncthreads();
    int x = x0 + threadIdx.x, y = y0 + threadIdx.y;
    if (dst.inside(x, y)) {
        float sum = 0.0f;
        for (int dy = 0; dy < 3; dy++)
            for (int dx = 0; dx < 3; dx++)
                sum += tile[threadIdx.y + dy][threadIdx.x + dx];
        dst.at(x, y) = sum / 9.0f;
    }
}
