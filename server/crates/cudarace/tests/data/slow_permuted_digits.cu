// A linear id split into three digits by signed sizes and written back in another digit order:
// one thread per cell for every choice of signs, but the nonlinear query takes the solver
// seconds (the CLI tests use it as a kernel no small time budget decides).
__global__ void swap_outer_axes(float *out, const float *in, int d0, int d1, int d2) {
    int index = threadIdx.x + blockIdx.x * blockDim.x;
    if (index < d0 * d1 * d2) {
        const int c = index % d2;
        index = index / d2;
        const int b = index % d1;
        index = index / d1;
        const int a = index % d0;
        out[b * d0 * d2 + a * d2 + c] = in[a * d1 * d2 + b * d2 + c];
    }
}
