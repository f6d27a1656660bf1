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

}  // namespace gpubench
