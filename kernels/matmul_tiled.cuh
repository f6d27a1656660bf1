#pragma once
#include "core/operations.hpp"

namespace gpubench {
// Shared-memory tiling with register blocking: each block stages a tile of A and of B in
// shared memory and each thread accumulates a small block of C in registers, so every
// operand loaded from global memory is reused many times. A 128x128 tile (8x8 per
// thread) when the matrix has enough of them to occupy every multiprocessor; otherwise a
// 64x64 tile (4x4 per thread) whose k dimension is split across blocks, which add their
// partial products into C (zeroed first, inside the call).
void matmul_tiled_kernel(const float* a, const float* b, float* c, MatmulShape shape);
}  // namespace gpubench
