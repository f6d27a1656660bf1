#pragma once
#include "common/operations.hpp"

namespace gpubench {
// Shared-memory tiling with register blocking: each block stages 128x8 tiles of A and
// 8x128 tiles of B in shared memory and each thread accumulates an 8x8 block of C in
// registers, so every operand loaded from global memory is reused 128 times.
void matmul_tiled_kernel(const float* a, const float* b, float* c, MatmulShape shape);
}  // namespace gpubench
