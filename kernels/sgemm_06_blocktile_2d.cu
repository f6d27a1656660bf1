// Rung 6: 2D register blocking. Each of 256 threads computes an 8 x 8 patch of a 128 x 128 tile of C:
// per step of k it reads 8 elements of A and 8 of B from shared memory into registers and forms their
// 64 products, 4 products per shared-memory read instead of rung 5's one. The larger tile also halves
// the global loads per product again.
#include "core/cuda_check.hpp"
#include "gemm_ladder.cuh"
#include "sgemm_rung.cuh"

namespace gpubench {
namespace {

constexpr int kBM = 128, kBN = 128, kBK = 8;  // C tile kBM x kBN, k steps of kBK
constexpr int kTM = 8, kTN = 8;               // outputs per thread
constexpr int kThreads = kBM * kBN / (kTM * kTN);
constexpr int kThreadsAlongN = kBN / kTN;

__global__ void __launch_bounds__(kThreads) sgemm_blocktile_2d(const float* a, const float* b, float* c,
                                                               MatmulShape s) {
  __shared__ float a_tile[kBM][kBK];
  __shared__ float b_tile[kBK][kBN];
  const int ty = threadIdx.x / kThreadsAlongN * kTM;  // first row and column of the thread's patch
  const int tx = threadIdx.x % kThreadsAlongN * kTN;
  const int row0 = blockIdx.y * kBM, col0 = blockIdx.x * kBN;
  float acc[kTM][kTN] = {};
  for (int k0 = 0; k0 < s.k; k0 += kBK) {
    load_tile_zero_padded<kBM, kBK, kThreads>(&a_tile[0][0], a, s.m, s.k, row0, k0);
    load_tile_zero_padded<kBK, kBN, kThreads>(&b_tile[0][0], b, s.k, s.n, k0, col0);
    __syncthreads();
#pragma unroll
    for (int p = 0; p < kBK; ++p) {
      float a_frag[kTM], b_frag[kTN];
#pragma unroll
      for (int i = 0; i < kTM; ++i) a_frag[i] = a_tile[ty + i][p];
#pragma unroll
      for (int j = 0; j < kTN; ++j) b_frag[j] = b_tile[p][tx + j];
#pragma unroll
      for (int i = 0; i < kTM; ++i)
#pragma unroll
        for (int j = 0; j < kTN; ++j) acc[i][j] += a_frag[i] * b_frag[j];
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < kTM; ++i) {
    const int row = row0 + ty + i;
    if (row >= s.m) break;
#pragma unroll
    for (int j = 0; j < kTN; ++j) {
      const int col = col0 + tx + j;
      if (col < s.n) c[static_cast<std::size_t>(row) * s.n + col] = acc[i][j];
    }
  }
}

void run(const void* a, const void* b, void* c, MatmulShape s) {
  sgemm_blocktile_2d<<<tile_grid(s, kBM, kBN), kThreads>>>(static_cast<const float*>(a),
                                                           static_cast<const float*>(b), static_cast<float*>(c), s);
  CUDA_CHECK_LAUNCH();
}

GemmLaunch launch(MatmulShape s) {
  return {reinterpret_cast<const void*>(&sgemm_blocktile_2d), kThreads, 0, grid_blocks(tile_grid(s, kBM, kBN)),
          "block 128x128x8, thread 8x8, 256 threads"};
}

std::string unsupported(MatmulShape) { return {}; }

}  // namespace

GemmRung sgemm_06_blocktile_2d() { return {run, launch, unsupported}; }

}  // namespace gpubench
