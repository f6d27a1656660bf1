#pragma once
#include "core/operations.hpp"

namespace gpubench {
// Cache-blocked loop spread over all cores with OpenMP: what careful plain C++ reaches
// without a BLAS library.
void matmul_blocked_loop(const float* a, const float* b, float* c, MatmulShape shape);
}  // namespace gpubench
