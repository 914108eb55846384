#include "scale.cuh"

// Twice as many threads as columns: threads col and col + WIDTH update the same element. Checked
// alone with main.cu's launch this file looks fine; cudarace finds the race through the
// compilation database, which gives every file the launch sites of the others.
void scale_wide(float *rows, int n_rows)
{
    scale_rows<<<n_rows, 2 * WIDTH>>>(rows, 0.5f);
}
