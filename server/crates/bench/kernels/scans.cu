// Block-wide prefix sums: Hillis-Steele (double-buffered) and Blelloch (work-efficient).
#define N 512

__global__ void scan_hillis_steele(const float *in, float *out, int n) {
    __shared__ float temp[2 * N];
    int tid = threadIdx.x;
    int pout = 0, pin = 1;
    temp[pout * N + tid] = (tid > 0) ? in[tid - 1] : 0.0f;
    __syncthreads();
    for (int offset = 1; offset < n; offset *= 2) {
        pout = 1 - pout;
        pin = 1 - pout;
        if (tid >= offset)
            temp[pout * N + tid] = temp[pin * N + tid] + temp[pin * N + tid - offset];
        else
            temp[pout * N + tid] = temp[pin * N + tid];
        __syncthreads();
    }
    out[tid] = temp[pout * N + tid];
}

__global__ void scan_blelloch(const float *in, float *out, int n) {
    __shared__ float temp[N];
    int tid = threadIdx.x;
    int offset = 1;
    temp[2 * tid] = in[2 * tid];
    temp[2 * tid + 1] = in[2 * tid + 1];
    for (int d = n >> 1; d > 0; d >>= 1) {
        __syncthreads();
        if (tid < d) {
            int ai = offset * (2 * tid + 1) - 1;
            int bi = offset * (2 * tid + 2) - 1;
            temp[bi] += temp[ai];
        }
        offset *= 2;
    }
    if (tid == 0)
        temp[n - 1] = 0;
    for (int d = 1; d < n; d *= 2) {
        offset >>= 1;
        __syncthreads();
        if (tid < d) {
            int ai = offset * (2 * tid + 1) - 1;
            int bi = offset * (2 * tid + 2) - 1;
            float t = temp[ai];
            temp[ai] = temp[bi];
            temp[bi] += t;
        }
    }
    __syncthreads();
    out[2 * tid] = temp[2 * tid];
    out[2 * tid + 1] = temp[2 * tid + 1];
}

void launch(const float *in, float *out) {
    scan_hillis_steele<<<1, N>>>(in, out, N);
    scan_blelloch<<<1, N / 2>>>(in, out, N);
}
