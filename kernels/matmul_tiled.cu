#include "matmul_tiled.cuh"

#include "common/cuda_check.hpp"

namespace gpubench {
namespace {

constexpr int kThreadsX = 16;  // threads along a row of the C tile
constexpr int kThreadsY = 16;
constexpr int kThreads = kThreadsX * kThreadsY;
constexpr int kTileK = 8;

// Each thread owns a kPerThread x kPerThread block of C, so a block's tile of C is
// (16*kPerThread)^2. Larger tiles reuse each loaded operand more; smaller ones make more
// blocks, which small matrices need to occupy every multiprocessor.
template <int kPerThread>
struct Tile {
  static constexpr int kSize = kThreadsX * kPerThread;
  // A is stored transposed in shared memory; one float of padding per row keeps the
  // transposing stores free of bank conflicts.
  static constexpr int kAPitch = kSize + 1;
  static_assert(kSize * kTileK % kThreads == 0, "each thread loads whole elements of both tiles");
};

template <int kPerThread>
__device__ void load_tiles(const float* a, const float* b, MatmulShape s, int row0, int col0, int k0,
                           float (&a_tile)[kTileK][Tile<kPerThread>::kAPitch],
                           float (&b_tile)[kTileK][Tile<kPerThread>::kSize]) {
  constexpr int kSize = Tile<kPerThread>::kSize;
  for (int idx = threadIdx.x; idx < kSize * kTileK; idx += kThreads) {
    const int r = idx / kTileK, p = idx % kTileK;  // consecutive threads along a row of A
    const int row = row0 + r, col = k0 + p;
    a_tile[p][r] = (row < s.m && col < s.k) ? a[static_cast<size_t>(row) * s.k + col] : 0.0f;
  }
  for (int idx = threadIdx.x; idx < kTileK * kSize; idx += kThreads) {
    const int p = idx / kSize, c = idx % kSize;  // consecutive threads along a row of B
    const int row = k0 + p, col = col0 + c;
    b_tile[p][c] = (row < s.k && col < s.n) ? b[static_cast<size_t>(row) * s.n + col] : 0.0f;
  }
}

template <int kPerThread>
__global__ void __launch_bounds__(kThreads) matmul_tiled(const float* a, const float* b, float* c, MatmulShape s) {
  using T = Tile<kPerThread>;
  __shared__ float a_tile[kTileK][T::kAPitch];
  __shared__ float b_tile[kTileK][T::kSize];

  const int row0 = blockIdx.y * T::kSize;
  const int col0 = blockIdx.x * T::kSize;
  const int tx = threadIdx.x % kThreadsX;
  const int ty = threadIdx.x / kThreadsX;

  // Thread (tx, ty) owns rows ty + 16*i and columns tx + 16*j of the tile: neighbouring
  // threads read neighbouring shared-memory words and write neighbouring words of C.
  float acc[kPerThread][kPerThread] = {};
  for (int k0 = 0; k0 < s.k; k0 += kTileK) {
    load_tiles<kPerThread>(a, b, s, row0, col0, k0, a_tile, b_tile);
    __syncthreads();
#pragma unroll
    for (int p = 0; p < kTileK; ++p) {
      float a_frag[kPerThread], b_frag[kPerThread];
#pragma unroll
      for (int i = 0; i < kPerThread; ++i) a_frag[i] = a_tile[p][ty + kThreadsY * i];
#pragma unroll
      for (int j = 0; j < kPerThread; ++j) b_frag[j] = b_tile[p][tx + kThreadsX * j];
#pragma unroll
      for (int i = 0; i < kPerThread; ++i)
#pragma unroll
        for (int j = 0; j < kPerThread; ++j) acc[i][j] += a_frag[i] * b_frag[j];
    }
    __syncthreads();  // the next load overwrites tiles other threads may still read
  }

#pragma unroll
  for (int i = 0; i < kPerThread; ++i) {
    const int row = row0 + ty + kThreadsY * i;
    if (row >= s.m) continue;
#pragma unroll
    for (int j = 0; j < kPerThread; ++j) {
      const int col = col0 + tx + kThreadsX * j;
      if (col < s.n) c[static_cast<size_t>(row) * s.n + col] = acc[i][j];
    }
  }
}

template <int kPerThread>
int blocks_for(MatmulShape s) {
  constexpr int kSize = Tile<kPerThread>::kSize;
  return ((s.n + kSize - 1) / kSize) * ((s.m + kSize - 1) / kSize);
}

template <int kPerThread>
void launch(const float* a, const float* b, float* c, MatmulShape s) {
  constexpr int kSize = Tile<kPerThread>::kSize;
  const dim3 grid((s.n + kSize - 1) / kSize, (s.m + kSize - 1) / kSize);
  matmul_tiled<kPerThread><<<grid, kThreads>>>(a, b, c, s);
  CUDA_CHECK_LAUNCH();
}

int multiprocessor_count() {
  static const int count = [] {
    int device = 0, sms = 0;
    CUDA_CHECK(cudaGetDevice(&device));
    CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    return sms;
  }();
  return count;
}

}  // namespace

void matmul_tiled_kernel(const float* a, const float* b, float* c, MatmulShape s) {
  // The largest tile that still gives every multiprocessor a block of its own.
  const int sms = multiprocessor_count();
  if (blocks_for<8>(s) >= sms) return launch<8>(a, b, c, s);
  if (blocks_for<4>(s) >= sms) return launch<4>(a, b, c, s);
  launch<2>(a, b, c, s);
}

}  // namespace gpubench
