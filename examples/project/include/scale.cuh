#pragma once

#include "index.cuh"

// Scales the rows of a matrix of WIDTH columns (WIDTH comes from CMakeLists.txt): one block per
// row, one thread per column. Race-free when a block has at most WIDTH threads; a block with
// more has two threads per column, which both read and write the same element.
__global__ void scale_rows(float *data, float factor)
{
    unsigned int col = column_of(threadIdx.x);
    data[blockIdx.x * WIDTH + col] *= factor;
}
