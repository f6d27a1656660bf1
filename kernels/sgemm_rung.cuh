// What the SGEMM ladder's rungs (kernels/sgemm_NN_*.cu) share: the grid of tiles over C, the guarded
// copy of a tile into shared memory, and the shape rule of the rungs that move float4 vectors.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <string>

#include "core/operations.hpp"

namespace gpubench {

// One block per tile_rows x tile_cols tile of C: x along its columns, y along its rows.
inline dim3 tile_grid(MatmulShape s, int tile_rows, int tile_cols) {
  return dim3((s.n + tile_cols - 1) / tile_cols, (s.m + tile_rows - 1) / tile_rows);
}

inline unsigned long long grid_blocks(dim3 grid) {
  return static_cast<unsigned long long>(grid.x) * grid.y * grid.z;
}

// Empty where float4 rows fit the shape: n % 4 == 0 (rows of B and C) and, where A's rows are read
// as vectors too, k % 4 == 0. A vector is then wholly inside a row or wholly past its end, and every
// row starts 16-byte aligned, so edge tiles need no element-wise path.
inline std::string float4_rows_unsupported(MatmulShape s, bool rows_of_a_too) {
  if (s.n % 4 != 0) return "n = " + std::to_string(s.n) + " is not a multiple of 4: rows of B and C move as float4";
  if (rows_of_a_too && s.k % 4 != 0)
    return "k = " + std::to_string(s.k) + " is not a multiple of 4: rows of A move as float4";
  return {};
}

// Copies the kRows x kCols tile at (row0, col0) of a row-major rows x cols matrix into `tile`
// (row-major, kCols floats a row), zeros where the tile overhangs the matrix. The kThreads threads
// of the block share the copy, consecutive threads along a row: coalesced reads.
template <int kRows, int kCols, int kThreads>
__device__ inline void load_tile_zero_padded(float* tile, const float* matrix, int rows, int cols, int row0,
                                             int col0) {
  static_assert((kRows * kCols) % kThreads == 0, "threads share the tile evenly");
#pragma unroll
  for (int i = 0; i < kRows * kCols / kThreads; ++i) {
    const int index = threadIdx.x + i * kThreads;
    const int r = index / kCols, c = index % kCols;
    const int row = row0 + r, col = col0 + c;
    tile[index] = row < rows && col < cols ? matrix[static_cast<std::size_t>(row) * cols + col] : 0.0f;
  }
}

}  // namespace gpubench
