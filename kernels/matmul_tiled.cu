#include "matmul_tiled.cuh"

#include <algorithm>

#include "core/gpu_runtime.hpp"

namespace gpubench {
namespace {

// A block computes a kRows x kCols tile of C, staging kRows x kDepth of A and kDepth x kCols
// of B in shared memory per step; each thread accumulates kPerRow x kPerCol outputs in
// registers, so every operand loaded from shared memory is reused kPerRow (kPerCol) times.
template <int kRows, int kCols, int kPerRow, int kPerCol, int kDepth>
struct TileShape {
  static constexpr int kThreadsX = kCols / kPerCol;  // threads along a row of the C tile
  static constexpr int kThreadsY = kRows / kPerRow;
  static constexpr int kThreads = kThreadsX * kThreadsY;
  static constexpr int kRowsC = kRows, kColsC = kCols, kRowBlock = kPerRow, kColBlock = kPerCol,
                       kDepthK = kDepth;
  // A is stored transposed; one float of padding per row keeps the transposing stores
  // free of bank conflicts.
  static constexpr int kAPitch = kRows + 1;
};

template <class T>
__device__ void load_tiles(const float* a, const float* b, MatmulShape s, int row0, int col0, int k0,
                           float (&a_tile)[T::kDepthK][T::kAPitch], float (&b_tile)[T::kDepthK][T::kColsC]) {
  for (int idx = threadIdx.x; idx < T::kRowsC * T::kDepthK; idx += T::kThreads) {
    const int r = idx / T::kDepthK, p = idx % T::kDepthK;  // consecutive threads along a row of A
    const int row = row0 + r, col = k0 + p;
    a_tile[p][r] = (row < s.m && col < s.k) ? a[static_cast<size_t>(row) * s.k + col] : 0.0f;
  }
  for (int idx = threadIdx.x; idx < T::kDepthK * T::kColsC; idx += T::kThreads) {
    const int p = idx / T::kColsC, c = idx % T::kColsC;  // consecutive threads along a row of B
    const int row = k0 + p, col = col0 + c;
    b_tile[p][c] = (row < s.k && col < s.n) ? b[static_cast<size_t>(row) * s.n + col] : 0.0f;
  }
}

// Blocks along z split the k dimension: each adds its partial product into C, which the
// launcher has zeroed. That gives mid-sized matrices, whose tiles are too few to occupy
// every multiprocessor, more blocks without shrinking the tile.
template <class T>
__global__ void __launch_bounds__(T::kThreads) matmul_tiled(const float* a, const float* b, float* c, MatmulShape s,
                                                             int k_per_split) {
  __shared__ float a_tile[T::kDepthK][T::kAPitch];
  __shared__ float b_tile[T::kDepthK][T::kColsC];

  const int row0 = blockIdx.y * T::kRowsC;
  const int col0 = blockIdx.x * T::kColsC;
  const int k_begin = blockIdx.z * k_per_split;
  const int k_end = min(s.k, k_begin + k_per_split);
  const int tx = threadIdx.x % T::kThreadsX;
  const int ty = threadIdx.x / T::kThreadsX;

  // Thread (tx, ty) owns rows ty + kThreadsY*i and columns tx + kThreadsX*j of the tile:
  // neighbouring threads read neighbouring shared-memory words and write neighbouring
  // words of C.
  float acc[T::kRowBlock][T::kColBlock] = {};
  for (int k0 = k_begin; k0 < k_end; k0 += T::kDepthK) {
    load_tiles<T>(a, b, s, row0, col0, k0, a_tile, b_tile);
    __syncthreads();
#pragma unroll
    for (int p = 0; p < T::kDepthK; ++p) {
      float a_frag[T::kRowBlock], b_frag[T::kColBlock];
#pragma unroll
      for (int i = 0; i < T::kRowBlock; ++i) a_frag[i] = a_tile[p][ty + T::kThreadsY * i];
#pragma unroll
      for (int j = 0; j < T::kColBlock; ++j) b_frag[j] = b_tile[p][tx + T::kThreadsX * j];
#pragma unroll
      for (int i = 0; i < T::kRowBlock; ++i)
#pragma unroll
        for (int j = 0; j < T::kColBlock; ++j) acc[i][j] += a_frag[i] * b_frag[j];
    }
    __syncthreads();  // the next load overwrites tiles other threads may still read
  }

#pragma unroll
  for (int i = 0; i < T::kRowBlock; ++i) {
    const int row = row0 + ty + T::kThreadsY * i;
    if (row >= s.m) continue;
#pragma unroll
    for (int j = 0; j < T::kColBlock; ++j) {
      const int col = col0 + tx + T::kThreadsX * j;
      if (col >= s.n) continue;
      float* out = c + static_cast<size_t>(row) * s.n + col;
      if (gridDim.z == 1) {
        *out = acc[i][j];
      } else {
        atomicAdd(out, acc[i][j]);
      }
    }
  }
}

template <class T>
int blocks_for(MatmulShape s) {
  return ((s.n + T::kColsC - 1) / T::kColsC) * ((s.m + T::kRowsC - 1) / T::kRowsC);
}

// split: how many blocks share the k dimension of one tile (1: no split).
template <class T>
void launch(const float* a, const float* b, float* c, MatmulShape s, int split) {
  // Whole k steps per split, so only the last split meets the end of k.
  const int steps = (s.k + T::kDepthK - 1) / T::kDepthK;
  const int k_per_split = (steps + split - 1) / split * T::kDepthK;
  const dim3 grid((s.n + T::kColsC - 1) / T::kColsC, (s.m + T::kRowsC - 1) / T::kRowsC, split);
  if (split > 1) CUDA_CHECK(cudaMemsetAsync(c, 0, sizeof(float) * s.m * s.n));
  matmul_tiled<T><<<grid, T::kThreads>>>(a, b, c, s, k_per_split);
  CUDA_CHECK_LAUNCH();
}

// Chosen by timing tile shapes and splits against each other on an H100 (docs/design.md):
// the 128-wide tile wins once it has about 1.5 blocks per multiprocessor; below that the
// 64-wide tile, split along k until the GPU holds as many of its blocks as it can run at
// once (8 per multiprocessor at 256 threads), gains up to 3x over the unsplit tile.
using LargeTile = TileShape<128, 128, 8, 8, 16>;
using MidTile = TileShape<64, 64, 4, 4, 16>;
constexpr int kMidTileBlocksPerSm = 8;
constexpr int kMaxSplit = 6;          // more splits measured no faster
constexpr int kMinStepsPerSplit = 4;  // each split still runs a few k steps

int mid_tile_split(MatmulShape s, int sms) {
  const int blocks = blocks_for<MidTile>(s);
  const int wanted = (kMidTileBlocksPerSm * sms + blocks - 1) / blocks;
  const int steps = (s.k + MidTile::kDepthK - 1) / MidTile::kDepthK;
  return std::max(1, std::min({wanted, kMaxSplit, steps / kMinStepsPerSplit}));
}

}  // namespace

void matmul_tiled_kernel(const float* a, const float* b, float* c, MatmulShape s) {
  const int sms = device_attribute(cudaDevAttrMultiProcessorCount);
  if (2 * blocks_for<LargeTile>(s) >= 3 * sms) return launch<LargeTile>(a, b, c, s, 1);
  launch<MidTile>(a, b, c, s, mid_tile_split(s, sms));
}

}  // namespace gpubench
