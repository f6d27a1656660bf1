// Rung 7: vectorised loads. Rung 6's tiling, with every global load a float4 (a quarter of the load
// instructions, each a whole 16 bytes) and A transposed on its way into shared memory, so that a
// thread's 8 rows of A at one k, like its 8 columns of B, are two float4 reads from shared memory
// instead of 8 scalar ones. Needs n % 4 == 0 and k % 4 == 0 (float4 rows of A, B and C); any m.
#include "core/cuda_check.hpp"
#include "gemm_ladder.cuh"
#include "sgemm_blocktile.cuh"
#include "sgemm_rung.cuh"
#include "vector_access.cuh"

namespace gpubench {
namespace {

using sgemm_blocked::BlockTile;
using sgemm_blocked::PatchLayout;
using Tile = BlockTile<128, 128, 8, 8, 8, 256, 1>;

// Loads the A and B slices at k0 into `stage` through registers; zeros outside the matrices (k % 4 ==
// 0 and n % 4 == 0: a float4 is wholly inside or wholly outside).
__device__ void load_stage(float* stage, const float* a, const float* b, MatmulShape s, int row0, int col0, int k0) {
  constexpr int kVectorsAlongK = Tile::kBK / 4;
  const float4 zeros = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll
  for (int i = 0; i < Tile::kBM * kVectorsAlongK / Tile::kThreads; ++i) {
    const int index = threadIdx.x + i * Tile::kThreads;
    const int r = index / kVectorsAlongK, p = index % kVectorsAlongK * 4;
    const int row = row0 + r, col = k0 + p;
    const float4 v = row < s.m && col < s.k
                         ? *reinterpret_cast<const float4*>(a + static_cast<std::size_t>(row) * s.k + col)
                         : zeros;
    stage[(p + 0) * Tile::kAPitch + r] = v.x;  // transposed: k-major
    stage[(p + 1) * Tile::kAPitch + r] = v.y;
    stage[(p + 2) * Tile::kAPitch + r] = v.z;
    stage[(p + 3) * Tile::kAPitch + r] = v.w;
  }
  float* b_tile = stage + Tile::kAFloats;
#pragma unroll
  for (int i = 0; i < Tile::kBK * Tile::kBN / 4 / Tile::kThreads; ++i) {
    const int index = threadIdx.x + i * Tile::kThreads;
    const int p = index / (Tile::kBN / 4), c = index % (Tile::kBN / 4) * 4;
    const int row = k0 + p, col = col0 + c;
    *reinterpret_cast<float4*>(b_tile + p * Tile::kBN + c) =
        row < s.k && col < s.n ? *reinterpret_cast<const float4*>(b + static_cast<std::size_t>(row) * s.n + col)
                               : zeros;
  }
}

__global__ void __launch_bounds__(Tile::kThreads, Tile::kMinBlocksPerSm)
    sgemm_vectorized(const float* a, const float* b, float* c, MatmulShape s) {
  __shared__ float4 stage_vectors[Tile::kStageFloats / 4];  // float4: 16-byte aligned
  float* const stage = reinterpret_cast<float*>(stage_vectors);
  const int row0 = blockIdx.y * Tile::kBM, col0 = blockIdx.x * Tile::kBN;
  const PatchLayout<Tile> layout(threadIdx.x);
  sgemm_blocked::Accumulators<Tile> acc = {};
  for (int k0 = 0; k0 < s.k; k0 += Tile::kBK) {
    load_stage(stage, a, b, s, row0, col0, k0);
    __syncthreads();
    sgemm_blocked::multiply_stage<Tile>(stage, layout, acc);
    __syncthreads();  // the next load overwrites what other threads may still read
  }
  sgemm_blocked::store_tile<Tile>(c, s, row0, col0, layout, acc);
}

void run(const void* a, const void* b, void* c, MatmulShape s) {
  require_vector_alignment("sgemm_07_vectorized", a, b, c);
  sgemm_vectorized<<<tile_grid(s, Tile::kBM, Tile::kBN), Tile::kThreads>>>(
      static_cast<const float*>(a), static_cast<const float*>(b), static_cast<float*>(c), s);
  CUDA_CHECK_LAUNCH();
}

GemmLaunch launch(MatmulShape s) {
  return {reinterpret_cast<const void*>(&sgemm_vectorized), Tile::kThreads, 0,
          grid_blocks(tile_grid(s, Tile::kBM, Tile::kBN)),
          sgemm_blocked::tile_words<Tile, PatchLayout<Tile>>() + ", float4 loads"};
}

std::string unsupported(MatmulShape s) { return float4_rows_unsupported(s, true); }

}  // namespace

GemmRung sgemm_07_vectorized() { return {run, launch, unsupported}; }

}  // namespace gpubench
