#include "matmul_blocked.hpp"

#include <algorithm>
#include <cstddef>

namespace gpubench {
namespace {

// A block of C (kRows x kCols floats = 64 KiB) stays in L2 while panels of A and B stream
// through; the innermost loop runs along contiguous rows of B and C so it vectorises.
constexpr int kRows = 64;
constexpr int kCols = 256;
constexpr int kDepth = 256;

void multiply_block(const float* a, const float* b, float* c, MatmulShape s, int i0, int j0) {
  const int i_end = std::min(i0 + kRows, s.m);
  const int j_end = std::min(j0 + kCols, s.n);
  for (int i = i0; i < i_end; ++i) {
    std::fill(c + static_cast<std::size_t>(i) * s.n + j0, c + static_cast<std::size_t>(i) * s.n + j_end, 0.0f);
  }
  for (int p0 = 0; p0 < s.k; p0 += kDepth) {
    const int p_end = std::min(p0 + kDepth, s.k);
    for (int i = i0; i < i_end; ++i) {
      float* __restrict c_row = c + static_cast<std::size_t>(i) * s.n;
      const float* a_row = a + static_cast<std::size_t>(i) * s.k;
      for (int p = p0; p < p_end; ++p) {
        const float a_ip = a_row[p];
        const float* __restrict b_row = b + static_cast<std::size_t>(p) * s.n;
        for (int j = j0; j < j_end; ++j) c_row[j] += a_ip * b_row[j];
      }
    }
  }
}

}  // namespace

void matmul_blocked_loop(const float* a, const float* b, float* c, MatmulShape s) {
  const int row_blocks = (s.m + kRows - 1) / kRows;
  const int col_blocks = (s.n + kCols - 1) / kCols;
#pragma omp parallel for schedule(dynamic)
  for (int block = 0; block < row_blocks * col_blocks; ++block) {
    multiply_block(a, b, c, s, (block / col_blocks) * kRows, (block % col_blocks) * kCols);
  }
}

}  // namespace gpubench
