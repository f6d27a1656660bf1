#pragma once
#include <cublas_v2.h>

namespace gpubench {
// The one cuBLAS handle every GPU implementation uses: created on first use (outside any
// timed region: studies warm up first) and kept, since creating one costs far more than a
// small GEMM. It is given its workspace up front, so cuBLAS never allocates while a CUDA
// graph is captured; its stream is the legacy default stream, and code that sets another
// one sets it back.
cublasHandle_t cublas_handle();
}  // namespace gpubench
