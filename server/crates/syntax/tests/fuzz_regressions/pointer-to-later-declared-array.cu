// Minimized from a parse_lower crash: in the second lowering pass `p` already points to `buf`
// (the first pass's target set) before `buf` is declared in that pass.
__global__ void k(float *out) {
    float *p = 0;
    for (int i = 0; i < 2; i++) {
        if (i > 0)
            out[threadIdx.x] = p[threadIdx.x];
        __shared__ float buf[64];
        buf[threadIdx.x] = i;
        p = buf;
    }
}
