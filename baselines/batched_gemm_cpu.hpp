#pragma once
#include <cstddef>

#include "common/operations.hpp"

namespace gpubench {
// `batch` independent products C_i = A_i * B_i of square n x n row-major matrices, stored
// back to back (matrix i starts at i * n * n), as strided-batched GEMMs take them.
struct BatchedGemmShape {
  int n = 0;
  int batch = 0;
  std::size_t stride() const { return static_cast<std::size_t>(n) * n; }
  std::size_t elements() const { return stride() * batch; }
  double flop() const { return 2.0 * n * n * static_cast<double>(n) * batch; }
};

// One signature for the CPU and (later) GPU implementations: host or device pointers.
using BatchedGemmFn = void (*)(const float* a, const float* b, float* c, BatchedGemmShape shape);

// One OpenBLAS SGEMM after another: all cores work inside each product, which for small
// matrices leaves them mostly waiting on each other.
void batched_gemm_openblas_loop(const float* a, const float* b, float* c, BatchedGemmShape shape);

// The batch spread over OpenMP threads, each product a single-threaded OpenBLAS SGEMM: no
// synchronisation inside a product. OpenBLAS's own thread count is set to 1 for the call
// and restored after it.
void batched_gemm_threads_over_batch(const float* a, const float* b, float* c, BatchedGemmShape shape);
}  // namespace gpubench
