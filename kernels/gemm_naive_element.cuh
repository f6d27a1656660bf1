// The naive element of C = A*B, shared by kernels/matmul_naive.cu and the SGEMM ladder's naive rungs
// (which differ only in how threads map onto C).
#pragma once

#include <cstddef>

#include "core/operations.hpp"

namespace gpubench {

// Element (row, col) of C: the dot product of A's row and B's column, from global memory.
__device__ inline float naive_element(const float* a, const float* b, MatmulShape s, int row, int col) {
  float sum = 0.0f;
  for (int p = 0; p < s.k; ++p) {
    sum += a[static_cast<std::size_t>(row) * s.k + p] * b[static_cast<std::size_t>(p) * s.n + col];
  }
  return sum;
}

}  // namespace gpubench
