#pragma once
#include "core/kernel_occupancy.hpp"
#include "core/operations.hpp"

namespace gpubench {
// One thread per element of C, threads of a warp along a row of C so that loads of B and
// stores of C are coalesced; every operand is read from global memory (caches only).
void matmul_naive_kernel(const float* a, const float* b, float* c, MatmulShape shape);
// The same element computation in a grid-stride loop over C (row-major) on the grid `launch`
// gives: any grid covers every element, so a walk-through's 16 blocks of 128 threads and a full
// GPU run the same kernel (the occupancy study). On the default stream.
void matmul_naive_grid_stride_kernel(const float* a, const float* b, float* c, MatmulShape shape, LaunchShape launch);
// Its __global__ function, for the occupancy API (core/kernel_occupancy.hpp).
const void* matmul_naive_grid_stride_function();
}  // namespace gpubench
