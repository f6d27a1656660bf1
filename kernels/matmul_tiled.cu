#include "matmul_tiled.cuh"

#include "common/cuda_check.hpp"

namespace gpubench {
namespace {

constexpr int kTileM = 128;
constexpr int kTileN = 128;
constexpr int kTileK = 8;
constexpr int kThreadsX = 16;  // threads along a row of the C tile
constexpr int kThreadsY = 16;
constexpr int kThreads = kThreadsX * kThreadsY;
constexpr int kPerThreadM = kTileM / kThreadsY;  // 8 rows of C per thread
constexpr int kPerThreadN = kTileN / kThreadsX;  // 8 columns of C per thread
// A is stored transposed in shared memory; one float of padding per row keeps the
// transposing stores free of bank conflicts.
constexpr int kATilePitch = kTileM + 1;

static_assert(kTileM * kTileK % kThreads == 0 && kTileK * kTileN % kThreads == 0,
              "each thread loads whole elements of both tiles");

__device__ void load_tiles(const float* a, const float* b, MatmulShape s, int row0, int col0, int k0,
                           float (&a_tile)[kTileK][kATilePitch], float (&b_tile)[kTileK][kTileN]) {
  for (int idx = threadIdx.x; idx < kTileM * kTileK; idx += kThreads) {
    const int r = idx / kTileK, p = idx % kTileK;  // consecutive threads along a row of A
    const int row = row0 + r, col = k0 + p;
    a_tile[p][r] = (row < s.m && col < s.k) ? a[static_cast<size_t>(row) * s.k + col] : 0.0f;
  }
  for (int idx = threadIdx.x; idx < kTileK * kTileN; idx += kThreads) {
    const int p = idx / kTileN, c = idx % kTileN;  // consecutive threads along a row of B
    const int row = k0 + p, col = col0 + c;
    b_tile[p][c] = (row < s.k && col < s.n) ? b[static_cast<size_t>(row) * s.n + col] : 0.0f;
  }
}

__global__ void __launch_bounds__(kThreads) matmul_tiled(const float* a, const float* b, float* c, MatmulShape s) {
  __shared__ float a_tile[kTileK][kATilePitch];
  __shared__ float b_tile[kTileK][kTileN];

  const int row0 = blockIdx.y * kTileM;
  const int col0 = blockIdx.x * kTileN;
  const int tx = threadIdx.x % kThreadsX;
  const int ty = threadIdx.x / kThreadsX;

  // Thread (tx, ty) owns rows ty + 16*i and columns tx + 16*j of the tile: neighbouring
  // threads read neighbouring shared-memory words and write neighbouring words of C.
  float acc[kPerThreadM][kPerThreadN] = {};
  for (int k0 = 0; k0 < s.k; k0 += kTileK) {
    load_tiles(a, b, s, row0, col0, k0, a_tile, b_tile);
    __syncthreads();
#pragma unroll
    for (int p = 0; p < kTileK; ++p) {
      float a_frag[kPerThreadM], b_frag[kPerThreadN];
#pragma unroll
      for (int i = 0; i < kPerThreadM; ++i) a_frag[i] = a_tile[p][ty + kThreadsY * i];
#pragma unroll
      for (int j = 0; j < kPerThreadN; ++j) b_frag[j] = b_tile[p][tx + kThreadsX * j];
#pragma unroll
      for (int i = 0; i < kPerThreadM; ++i)
#pragma unroll
        for (int j = 0; j < kPerThreadN; ++j) acc[i][j] += a_frag[i] * b_frag[j];
    }
    __syncthreads();  // the next load overwrites tiles other threads may still read
  }

#pragma unroll
  for (int i = 0; i < kPerThreadM; ++i) {
    const int row = row0 + ty + kThreadsY * i;
    if (row >= s.m) continue;
#pragma unroll
    for (int j = 0; j < kPerThreadN; ++j) {
      const int col = col0 + tx + kThreadsX * j;
      if (col < s.n) c[static_cast<size_t>(row) * s.n + col] = acc[i][j];
    }
  }
}

}  // namespace

void matmul_tiled_kernel(const float* a, const float* b, float* c, MatmulShape s) {
  const dim3 grid((s.n + kTileN - 1) / kTileN, (s.m + kTileM - 1) / kTileM);
  matmul_tiled<<<grid, kThreads>>>(a, b, c, s);
  CUDA_CHECK_LAUNCH();
}

}  // namespace gpubench
