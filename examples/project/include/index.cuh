#pragma once

// The column a thread of a row's block updates: threads past WIDTH wrap around to the first
// columns again.
__device__ inline unsigned int column_of(unsigned int thread)
{
    return thread % WIDTH;
}
