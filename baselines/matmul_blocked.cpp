#include "matmul_blocked.hpp"

#include <omp.h>

#include <algorithm>
#include <cstddef>
#include <memory>
#include <vector>

#include "core/first_touch.hpp"

namespace gpubench {
namespace {

// The loop nest of a BLAS GEMM, written as plain loops (Goto and van de Geijn's layering):
// C is computed in micro-tiles of kTileRows x kTileCols floats, each accumulated in registers
// over a depth block of kDepth; the compiler vectorises the micro-tile's inner loop
// (-march=native: two AVX-512 or four AVX2 registers per row of the tile, 12 or 24 in all).
// A and B are copied ("packed") into tile-shaped panels first, so the micro-tile reads both
// contiguously and a tile at the matrix edge reads zeros instead of testing bounds.
constexpr int kTileRows = 6;
constexpr int kTileCols = 32;
constexpr int kDepth = 256;             // a packed B panel (kDepth x kTileCols, 32 KiB) stays in L1/L2
constexpr int kMaxBlockRows = 16 * kTileRows;  // a packed A block (96 x kDepth, 96 KiB) stays in L2
constexpr int kBlockCols = 1024;        // a packed B block (kDepth x 1024, 1 MiB) stays in L2/L3

int ceil_div(int a, int b) { return (a + b - 1) / b; }

// B[p0 .. p0+depth) x [j0 .. j0+cols) as panels of kTileCols columns, row after row
// (depth x kTileCols each), zero past the last column. Each thread packs some panels.
void pack_b(const float* b, MatmulShape s, int p0, int depth, int j0, int cols, float* packed) {
  const int panels = ceil_div(cols, kTileCols);
#pragma omp for schedule(static)
  for (int panel = 0; panel < panels; ++panel) {
    const int j_begin = j0 + panel * kTileCols, width = std::min(kTileCols, j0 + cols - j_begin);
    float* out = packed + static_cast<std::size_t>(panel) * depth * kTileCols;
    for (int p = 0; p < depth; ++p, out += kTileCols) {
      const float* row = b + static_cast<std::size_t>(p0 + p) * s.n + j_begin;
      std::copy_n(row, width, out);
      std::fill(out + width, out + kTileCols, 0.0f);
    }
  }
}

// A[i0 .. i0+rows) x [p0 .. p0+depth) as panels of kTileRows rows, column after column
// (depth x kTileRows each), zero past the last row.
void pack_a(const float* a, MatmulShape s, int i0, int rows, int p0, int depth, float* packed) {
  for (int panel = 0; panel < ceil_div(rows, kTileRows); ++panel) {
    const int i_begin = i0 + panel * kTileRows, height = std::min(kTileRows, i0 + rows - i_begin);
    float* out = packed + static_cast<std::size_t>(panel) * depth * kTileRows;
    for (int p = 0; p < depth; ++p, out += kTileRows) {
      for (int r = 0; r < kTileRows; ++r)
        out[r] = r < height ? a[static_cast<std::size_t>(i_begin + r) * s.k + p0 + p] : 0.0f;
    }
  }
}

// One micro-tile: C[i, j] (+)= sum over the depth block of packed A and B panels. Only the
// `rows` x `cols` corner inside C is written; the first depth block overwrites C, the
// others add to it.
void micro_tile(const float* a_panel, const float* b_panel, int depth, float* c, int ldc, int rows, int cols,
                bool first_block) {
  float tile[kTileRows][kTileCols] = {};
  for (int p = 0; p < depth; ++p) {
    const float* a = a_panel + p * kTileRows;
    const float* b = b_panel + p * kTileCols;
    for (int r = 0; r < kTileRows; ++r)
      for (int j = 0; j < kTileCols; ++j) tile[r][j] += a[r] * b[j];
  }
  for (int r = 0; r < rows; ++r) {
    float* c_row = c + static_cast<std::size_t>(r) * ldc;
    for (int j = 0; j < cols; ++j) c_row[j] = first_block ? tile[r][j] : c_row[j] + tile[r][j];
  }
}

// Rows of C per block: at most kMaxBlockRows, and small enough that every thread gets one.
int block_rows(int m, int threads) {
  return std::clamp(ceil_div(ceil_div(m, threads), kTileRows) * kTileRows, kTileRows, kMaxBlockRows);
}


}  // namespace

// Threads own contiguous blocks of rows of C (a static schedule, as the studies' first touch
// of C and A assumes) and share the packed B block.
// Packing buffers are grown on first use and kept: allocating them in every call would time the
// allocator and the page faults. The shared B buffer (one per calling thread) is first written
// by all threads, as pack_b writes it; each thread's A buffer by that thread.
void matmul_blocked_loop(const float* a, const float* b, float* c, MatmulShape s) {
  thread_local std::unique_ptr<ThreadPlacedArray<float>> packed_b_buffer;
  float* packed_b = grown(packed_b_buffer, static_cast<std::size_t>(kDepth) * ceil_div(kBlockCols, kTileCols) *
                                               kTileCols);
  const int rows_per_block = block_rows(s.m, omp_get_max_threads());
  const int row_blocks = ceil_div(s.m, rows_per_block);
#pragma omp parallel
  {
    thread_local std::vector<float> packed_a_buffer;
    if (packed_a_buffer.size() < static_cast<std::size_t>(rows_per_block) * kDepth)
      packed_a_buffer.resize(static_cast<std::size_t>(rows_per_block) * kDepth);
    float* packed_a = packed_a_buffer.data();
    for (int j0 = 0; j0 < s.n; j0 += kBlockCols) {
      const int cols = std::min(kBlockCols, s.n - j0);
      for (int p0 = 0; p0 < s.k; p0 += kDepth) {
        const int depth = std::min(kDepth, s.k - p0);
        pack_b(b, s, p0, depth, j0, cols, packed_b);  // ends with the barrier of its omp for
#pragma omp for schedule(static)
        for (int block = 0; block < row_blocks; ++block) {
          const int i0 = block * rows_per_block, rows = std::min(rows_per_block, s.m - i0);
          pack_a(a, s, i0, rows, p0, depth, packed_a);
          for (int jt = 0; jt < cols; jt += kTileCols) {
            const float* b_panel = packed_b + static_cast<std::size_t>(jt) * depth;
            for (int it = 0; it < rows; it += kTileRows) {
              micro_tile(packed_a + static_cast<std::size_t>(it) * depth, b_panel, depth,
                         c + static_cast<std::size_t>(i0 + it) * s.n + j0 + jt, s.n,
                         std::min(kTileRows, rows - it), std::min(kTileCols, cols - jt), p0 == 0);
            }
          }
        }
      }
    }
  }
}

}  // namespace gpubench
