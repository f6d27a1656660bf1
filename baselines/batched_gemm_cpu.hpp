#pragma once
#include "core/operations.hpp"

namespace gpubench {
// The OpenBLAS thread count at start-up (OPENBLAS_NUM_THREADS, or every core): what the loop
// below runs on.
int openblas_threads_at_start();

// One OpenBLAS SGEMM after another: all cores work inside each product, which for small
// matrices leaves them mostly waiting on each other.
void batched_gemm_openblas_loop(const float* a, const float* b, float* c, BatchedGemmShape shape);

// The batch spread over OpenMP threads, each product a single-threaded OpenBLAS SGEMM: no
// synchronisation inside a product. OpenBLAS runs on one thread here and on all of them in
// the loop above: each sets the count it needs when it differs (in its first call after the
// other ran, which warm-up absorbs), not in every call, and leaves it so.
void batched_gemm_threads_over_batch(const float* a, const float* b, float* c, BatchedGemmShape shape);
}  // namespace gpubench
