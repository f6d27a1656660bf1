// Rung 4: shared-memory tiles. A block of 32 x 32 threads computes a 32 x 32 tile of C, walking k in
// steps of 32: it copies a 32 x 32 slice of A and of B into shared memory once (coalesced), then every
// thread reads its 32 products' operands from there. Each element loaded from global memory now
// serves 32 threads instead of one.
#include "core/cuda_check.hpp"
#include "gemm_ladder.cuh"
#include "sgemm_rung.cuh"

namespace gpubench {
namespace {

constexpr int kTile = 32;  // C tile kTile x kTile, k steps of kTile
constexpr int kThreads = kTile * kTile;

__global__ void __launch_bounds__(kThreads) sgemm_shared_tiles(const float* a, const float* b, float* c,
                                                               MatmulShape s) {
  __shared__ float a_tile[kTile][kTile];
  __shared__ float b_tile[kTile][kTile];
  const int tx = threadIdx.x % kTile, ty = threadIdx.x / kTile;  // a warp along a row of C
  const int row0 = blockIdx.y * kTile, col0 = blockIdx.x * kTile;
  float sum = 0.0f;
  for (int k0 = 0; k0 < s.k; k0 += kTile) {
    load_tile_zero_padded<kTile, kTile, kThreads>(&a_tile[0][0], a, s.m, s.k, row0, k0);
    load_tile_zero_padded<kTile, kTile, kThreads>(&b_tile[0][0], b, s.k, s.n, k0, col0);
    __syncthreads();
#pragma unroll
    for (int p = 0; p < kTile; ++p) sum += a_tile[ty][p] * b_tile[p][tx];  // A: broadcast; B: 32 banks
    __syncthreads();  // the next copy overwrites what other threads may still read
  }
  const int row = row0 + ty, col = col0 + tx;
  if (row < s.m && col < s.n) c[static_cast<std::size_t>(row) * s.n + col] = sum;
}

void run(const void* a, const void* b, void* c, MatmulShape s) {
  sgemm_shared_tiles<<<tile_grid(s, kTile, kTile), kThreads>>>(static_cast<const float*>(a),
                                                               static_cast<const float*>(b), static_cast<float*>(c), s);
  CUDA_CHECK_LAUNCH();
}

GemmLaunch launch(MatmulShape s) {
  return {reinterpret_cast<const void*>(&sgemm_shared_tiles), kThreads, 0, grid_blocks(tile_grid(s, kTile, kTile)),
          "block 32x32x32 in shared memory, 1 element per thread, 1024 threads"};
}

std::string unsupported(MatmulShape) { return {}; }

}  // namespace

GemmRung sgemm_04_shared_tiles() { return {run, launch, unsupported}; }

}  // namespace gpubench
