// A 1-D stencil (radius 3) that stages its input in shared memory: every thread loads its own
// element, the first RADIUS threads also load the halo on both sides -- and then everyone reads
// seven neighbours. The __syncthreads() between loading and reading is missing, so a thread can
// read a neighbour's element (or a halo cell) before it has been written.
//
// cudarace reports: kernel `stencil_1d` racy: races on `temp` between the neighbour reads and
// the writes of the element and of both halos. Adding __syncthreads() before the loop fixes it.
//
// expect: racy

#define RADIUS 3
#define BLOCK 256

__global__ void __launch_bounds__(BLOCK) stencil_1d(const float *in, float *out) {
    __shared__ float temp[BLOCK + 2 * RADIUS];
    int g = blockIdx.x * blockDim.x + threadIdx.x;
    int l = threadIdx.x + RADIUS;

    temp[l] = in[g]; // RACE
    if (threadIdx.x < RADIUS) {
        temp[l - RADIUS] = in[g - RADIUS]; // RACE
        temp[l + BLOCK] = in[g + BLOCK]; // RACE
    }
    // missing: __syncthreads();

    float result = 0.0f;
    for (int off = -RADIUS; off <= RADIUS; ++off)
        result += temp[l + off]; // RACE
    out[g] = result;
}
