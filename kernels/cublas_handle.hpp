#pragma once
#include <cublasLt.h>
#include <cublas_v2.h>

#include <cstddef>

namespace gpubench {
// The one cuBLAS handle every GPU implementation uses: created on first use (outside any
// timed region: studies warm up first) and kept, since creating one costs far more than a
// small GEMM. It is given its workspace up front, so cuBLAS never allocates while a CUDA
// graph is captured; its stream is the legacy default stream, and code that sets another
// one sets it back.
cublasHandle_t cublas_handle();

// The one cuBLASLt handle, created on first use and kept like cublas_handle().
cublasLtHandle_t cublaslt_handle();

// The device memory cublas_handle() is given (kGemmWorkspaceBytes, PyTorch's cuBLAS workspace on
// Hopper), which the cuBLASLt GEMMs share as PyTorch's cuBLASLt calls share their handle's. Both use
// it on the default stream only (cublasSetStream puts the handle back on cuBLAS's own pool), where
// work runs in order, so it is never in use twice at once.
inline constexpr std::size_t kGemmWorkspaceBytes = 32u << 20;
void* gemm_workspace();
}  // namespace gpubench
