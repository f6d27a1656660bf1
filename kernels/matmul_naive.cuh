#pragma once
#include "core/operations.hpp"

namespace gpubench {
// One thread per element of C, threads of a warp along a row of C so that loads of B and
// stores of C are coalesced; every operand is read from global memory (caches only).
void matmul_naive_kernel(const float* a, const float* b, float* c, MatmulShape shape);
}  // namespace gpubench
