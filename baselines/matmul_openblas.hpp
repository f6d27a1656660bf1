#pragma once
#include "core/operations.hpp"

namespace gpubench {
// OpenBLAS SGEMM on all the threads OpenBLAS was started with: the honest CPU baseline.
void matmul_openblas(const float* a, const float* b, float* c, MatmulShape shape);
}  // namespace gpubench
