// Rung 2: the naive element computation on a full grid, one thread per element of C, the threads of a
// warp down a column of C: each of them reads its own row of A (32 rows, 32 memory sectors per load)
// and writes C 4 n bytes apart. Rung 3 turns the warp along a row.
#include "core/cuda_check.hpp"
#include "gemm_ladder.cuh"
#include "gemm_naive_element.cuh"
#include "sgemm_rung.cuh"

namespace gpubench {
namespace {

constexpr int kSide = 32;  // threads per block: kSide x kSide, one per element

// threadIdx.x (consecutive within a warp) runs down the rows, so grid.x counts blocks of rows.
__global__ void __launch_bounds__(kSide * kSide)
    sgemm_naive_column_warps(const float* a, const float* b, float* c, MatmulShape s) {
  const int row = blockIdx.x * kSide + threadIdx.x;
  const int col = blockIdx.y * kSide + threadIdx.y;
  if (row < s.m && col < s.n) c[static_cast<std::size_t>(row) * s.n + col] = naive_element(a, b, s, row, col);
}

dim3 grid_for(MatmulShape s) {
  const dim3 tiles = tile_grid(s, kSide, kSide);
  return dim3(tiles.y, tiles.x);  // rows along x
}

void run(const void* a, const void* b, void* c, MatmulShape s) {
  sgemm_naive_column_warps<<<grid_for(s), dim3(kSide, kSide)>>>(
      static_cast<const float*>(a), static_cast<const float*>(b), static_cast<float*>(c), s);
  CUDA_CHECK_LAUNCH();
}

GemmLaunch launch(MatmulShape s) {
  return {reinterpret_cast<const void*>(&sgemm_naive_column_warps), kSide * kSide, 0, grid_blocks(grid_for(s)),
          "1 element per thread, 1024 threads per block (32x32), a warp down a column of C"};
}

std::string unsupported(MatmulShape) { return {}; }

}  // namespace

GemmRung sgemm_02_naive_full_grid() { return {run, launch, unsupported}; }

}  // namespace gpubench
