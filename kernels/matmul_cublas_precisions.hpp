#pragma once
#include "core/precision.hpp"

namespace gpubench {
// cuBLAS GEMM in every GPU precision of the study, through cuBLASLt as PyTorch's cuBLASLt path calls it
// (cublaslt_gemm.hpp): FP32, TF32, FP16 (FP32 or FP16 accumulate), BF16, FP8 E4M3 (per-tensor
// scales) and INT8 (INT32 accumulate). Device pointers, default stream; the plan of each problem
// is made on the first call and kept.
void gemm_cublas_precision(Precision precision, const void* a, const void* b, void* c, MatmulShape shape,
                           const float* dequant);
}  // namespace gpubench
