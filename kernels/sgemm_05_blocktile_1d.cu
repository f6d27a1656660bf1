// Rung 5: 1D register blocking. Each thread computes kTM outputs down a column of a 64 x 64 tile of C:
// per step of k it reads one element of B from shared memory into a register and reuses it for all
// kTM products, so shared-memory reads per product fall from 2 to about 1 + 1/kTM.
#include "core/cuda_check.hpp"
#include "gemm_ladder.cuh"
#include "sgemm_rung.cuh"

namespace gpubench {
namespace {

constexpr int kBM = 64, kBN = 64, kBK = 8;  // C tile kBM x kBN, k steps of kBK
constexpr int kTM = 8;                      // outputs per thread, in one column
constexpr int kThreads = kBM * kBN / kTM;

__global__ void __launch_bounds__(kThreads) sgemm_blocktile_1d(const float* a, const float* b, float* c,
                                                               MatmulShape s) {
  __shared__ float a_tile[kBM][kBK];
  __shared__ float b_tile[kBK][kBN];
  const int tx = threadIdx.x % kBN;          // the column, consecutive within a warp
  const int ty = threadIdx.x / kBN * kTM;    // the first of its kTM rows
  const int row0 = blockIdx.y * kBM, col0 = blockIdx.x * kBN;
  float acc[kTM] = {};
  for (int k0 = 0; k0 < s.k; k0 += kBK) {
    load_tile_zero_padded<kBM, kBK, kThreads>(&a_tile[0][0], a, s.m, s.k, row0, k0);
    load_tile_zero_padded<kBK, kBN, kThreads>(&b_tile[0][0], b, s.k, s.n, k0, col0);
    __syncthreads();
#pragma unroll
    for (int p = 0; p < kBK; ++p) {
      const float b_value = b_tile[p][tx];
#pragma unroll
      for (int i = 0; i < kTM; ++i) acc[i] += a_tile[ty + i][p] * b_value;  // A: broadcast within a warp
    }
    __syncthreads();
  }
  const int col = col0 + tx;
  if (col >= s.n) return;
#pragma unroll
  for (int i = 0; i < kTM; ++i) {
    const int row = row0 + ty + i;
    if (row < s.m) c[static_cast<std::size_t>(row) * s.n + col] = acc[i];
  }
}

void run(const void* a, const void* b, void* c, MatmulShape s) {
  sgemm_blocktile_1d<<<tile_grid(s, kBM, kBN), kThreads>>>(static_cast<const float*>(a),
                                                           static_cast<const float*>(b), static_cast<float*>(c), s);
  CUDA_CHECK_LAUNCH();
}

GemmLaunch launch(MatmulShape s) {
  return {reinterpret_cast<const void*>(&sgemm_blocktile_1d), kThreads, 0, grid_blocks(tile_grid(s, kBM, kBN)),
          "block 64x64x8, thread 8x1, 512 threads"};
}

std::string unsupported(MatmulShape) { return {}; }

}  // namespace

GemmRung sgemm_05_blocktile_1d() { return {run, launch, unsupported}; }

}  // namespace gpubench
