#include "matmul_naive.hpp"

#include <cstddef>

namespace gpubench {

void matmul_naive_loop(const float* a, const float* b, float* c, MatmulShape s) {
  for (int i = 0; i < s.m; ++i) {
    for (int j = 0; j < s.n; ++j) {
      float sum = 0.0f;
      for (int p = 0; p < s.k; ++p) {
        sum += a[static_cast<std::size_t>(i) * s.k + p] * b[static_cast<std::size_t>(p) * s.n + j];
      }
      c[static_cast<std::size_t>(i) * s.n + j] = sum;
    }
  }
}

}  // namespace gpubench
