#pragma once
#include "core/precision.hpp"

namespace gpubench {
// cuBLAS GEMM in every GPU precision of the study: cublasGemmEx for FP32, TF32, FP16 (FP32
// or FP16 accumulate) and BF16; cuBLASLt for FP8 E4M3 (per-tensor scales) and INT8 (INT32
// accumulate), whose tensor-core kernels want B transposed. Device pointers, default stream.
void gemm_cublas_precision(Precision precision, const void* a, const void* b, void* c, MatmulShape shape,
                           const float* dequant);
}  // namespace gpubench
