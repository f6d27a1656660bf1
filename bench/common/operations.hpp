// The operations a study measures, as one signature each. A CPU baseline (baselines/)
// and its GPU counterparts (kernels/) share the signature, so one verification routine
// serves every implementation. GPU implementations take device pointers and enqueue
// their work on the legacy default stream.
#pragma once

#include <cstddef>

namespace gpubench {

// C[m x n] = A[m x k] * B[k x n], all row-major and contiguous.
struct MatmulShape {
  int m;
  int n;
  int k;

  double flop() const { return 2.0 * m * n * k; }
  std::size_t a_elements() const { return static_cast<std::size_t>(m) * k; }
  std::size_t b_elements() const { return static_cast<std::size_t>(k) * n; }
  std::size_t c_elements() const { return static_cast<std::size_t>(m) * n; }
};

using MatmulFp32Fn = void (*)(const float* a, const float* b, float* c, MatmulShape shape);

// `batch` independent products C_i = A_i * B_i of square n x n row-major matrices, stored
// back to back (matrix i starts at i * n * n), as strided-batched GEMMs take them.
struct BatchedGemmShape {
  int n = 0;
  int batch = 0;
  std::size_t stride() const { return static_cast<std::size_t>(n) * n; }
  std::size_t elements() const { return stride() * batch; }
  double flop() const { return 2.0 * n * n * static_cast<double>(n) * batch; }
};

using BatchedGemmFn = void (*)(const float* a, const float* b, float* c, BatchedGemmShape shape);

}  // namespace gpubench
