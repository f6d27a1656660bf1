// Rung 3: rung 2 with the threads of a warp along a row of C: they share one element of A (a
// broadcast) and read 32 consecutive elements of B and write 32 consecutive elements of C (128 bytes,
// four sectors: coalesced).
#include "core/cuda_check.hpp"
#include "gemm_ladder.cuh"
#include "gemm_naive_element.cuh"
#include "sgemm_rung.cuh"

namespace gpubench {
namespace {

constexpr int kSide = 32;  // threads per block: kSide x kSide, one per element

__global__ void __launch_bounds__(kSide * kSide)
    sgemm_naive_row_warps(const float* a, const float* b, float* c, MatmulShape s) {
  const int row = blockIdx.y * kSide + threadIdx.y;
  const int col = blockIdx.x * kSide + threadIdx.x;
  if (row < s.m && col < s.n) c[static_cast<std::size_t>(row) * s.n + col] = naive_element(a, b, s, row, col);
}

void run(const void* a, const void* b, void* c, MatmulShape s) {
  sgemm_naive_row_warps<<<tile_grid(s, kSide, kSide), dim3(kSide, kSide)>>>(
      static_cast<const float*>(a), static_cast<const float*>(b), static_cast<float*>(c), s);
  CUDA_CHECK_LAUNCH();
}

GemmLaunch launch(MatmulShape s) {
  return {reinterpret_cast<const void*>(&sgemm_naive_row_warps), kSide * kSide, 0,
          grid_blocks(tile_grid(s, kSide, kSide)),
          "1 element per thread, 1024 threads per block (32x32), a warp along a row of C"};
}

std::string unsupported(MatmulShape) { return {}; }

}  // namespace

GemmRung sgemm_03_coalesced() { return {run, launch, unsupported}; }

}  // namespace gpubench
