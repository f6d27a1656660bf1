#pragma once
#include "core/operations.hpp"

namespace gpubench {
// cuBLAS SGEMM in its default math mode (true FP32, no TF32), on a handle created once
// per process. Library path, wrapped in the shared signature.
void matmul_cublas(const float* a, const float* b, float* c, MatmulShape shape);
}  // namespace gpubench
