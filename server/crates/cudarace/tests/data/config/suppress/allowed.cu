// The race in `shift` is allowed on the line of the read; `stage` is race-free, so the
// suppression inside it is unused.
__global__ void shift(int *out) {
    __shared__ int s[1024];
    int t = threadIdx.x;
    s[t] = t;
    if (t == 0) {
        // cudarace: allow(data-race) array=s reason=thread 0 may read either value
        out[blockIdx.x] = s[t + 1];
    }
}
