#pragma once
#include "common/operations.hpp"

namespace gpubench {
// Shared-memory tiling with register blocking: each block stages T x 8 tiles of A and
// 8 x T tiles of B in shared memory and each thread accumulates a (T/16)^2 block of C in
// registers, so every operand loaded from global memory is reused T times. T is 128, or
// 64 or 32 when the matrix is too small to give every multiprocessor a 128-wide tile.
void matmul_tiled_kernel(const float* a, const float* b, float* c, MatmulShape shape);
}  // namespace gpubench
