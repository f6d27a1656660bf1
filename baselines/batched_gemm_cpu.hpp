#pragma once
#include "core/operations.hpp"

namespace gpubench {
// One OpenBLAS SGEMM after another: all cores work inside each product, which for small
// matrices leaves them mostly waiting on each other.
void batched_gemm_openblas_loop(const float* a, const float* b, float* c, BatchedGemmShape shape);

// The batch spread over OpenMP threads, each product a single-threaded OpenBLAS SGEMM: no
// synchronisation inside a product. OpenBLAS's own thread count is set to 1 for the call
// and restored after it.
void batched_gemm_threads_over_batch(const float* a, const float* b, float* c, BatchedGemmShape shape);
}  // namespace gpubench
