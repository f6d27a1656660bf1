#pragma once
#include "core/operations.hpp"

namespace gpubench {
// FP32 GEMM (no TF32) through cuBLASLt as PyTorch's cuBLASLt path runs it (cublaslt_gemm.hpp):
// the matmul study's cuBLAS path. Device pointers, default stream.
void matmul_cublaslt(const float* a, const float* b, float* c, MatmulShape shape);

// cuBLAS SGEMM in its default math mode (true FP32, no TF32) on the shared handle, which runs on
// whatever stream and workspace the caller set on it (the overlap pipeline's lanes).
void matmul_cublas(const float* a, const float* b, float* c, MatmulShape shape);
}  // namespace gpubench
