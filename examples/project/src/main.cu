#include "scale.cuh"

// One thread per column: race-free.
void scale(float *rows, int n_rows)
{
    scale_rows<<<n_rows, WIDTH>>>(rows, 2.0f);
}
