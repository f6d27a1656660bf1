#include "matmul_wmma.cuh"

#include <cuda_fp16.h>
#include <mma.h>

#include <stdexcept>
#include <string>

#include "async_copy.cuh"
#include "core/cuda_check.hpp"

namespace gpubench {
namespace {

namespace wmma = nvcuda::wmma;

constexpr int kTileM = 128, kTileN = 128, kTileK = 32;
constexpr int kWarpsM = 2, kWarpsN = 4;
constexpr int kThreads = 32 * kWarpsM * kWarpsN;
constexpr int kWarpTileM = kTileM / kWarpsM;  // 64
constexpr int kWarpTileN = kTileN / kWarpsN;  // 32
constexpr int kFragment = 16;
constexpr int kFragmentsM = kWarpTileM / kFragment;
constexpr int kFragmentsN = kWarpTileN / kFragment;
constexpr int kChunk = 8;  // halves per 16-byte copy
// Eight halves of padding per row keep rows 16-byte aligned and put the eight rows that
// one matrix load reads in different banks.
constexpr int kAPitch = kTileK + 8;
constexpr int kBPitch = kTileN + 8;
constexpr int kStages = 2;

struct SharedTiles {
  __half a[kStages][kTileM][kAPitch];
  __half b[kStages][kTileK][kBPitch];
};
static_assert(sizeof(SharedTiles) <= 48 * 1024, "static shared memory limit");
static_assert(kWarpsM * kWarpsN * kFragment * kFragment * sizeof(float) <= sizeof(SharedTiles),
              "the epilogue reuses the tiles as scratch");

// Loads the A slice (kTileM x kTileK) and B slice (kTileK x kTileN) starting at k0 into
// `stage`; elements outside the matrices become zeros.
template <bool kVectorLoads>
__device__ void load_stage(SharedTiles& tiles, int stage, const __half* a, const __half* b, MatmulShape s,
                           int row0, int col0, int k0) {
  if constexpr (kVectorLoads) {
    for (int chunk = threadIdx.x; chunk < kTileM * kTileK / kChunk; chunk += kThreads) {
      const int r = chunk / (kTileK / kChunk), c = chunk % (kTileK / kChunk) * kChunk;
      const bool inside = row0 + r < s.m && k0 + c < s.k;
      async_copy_16(&tiles.a[stage][r][c], inside ? a + static_cast<size_t>(row0 + r) * s.k + k0 + c : a,
                          inside);
    }
    for (int chunk = threadIdx.x; chunk < kTileK * kTileN / kChunk; chunk += kThreads) {
      const int r = chunk / (kTileN / kChunk), c = chunk % (kTileN / kChunk) * kChunk;
      const bool inside = k0 + r < s.k && col0 + c < s.n;
      async_copy_16(&tiles.b[stage][r][c], inside ? b + static_cast<size_t>(k0 + r) * s.n + col0 + c : b,
                          inside);
    }
  } else {
    const __half zero = __float2half(0.0f);
    for (int i = threadIdx.x; i < kTileM * kTileK; i += kThreads) {
      const int r = i / kTileK, c = i % kTileK;
      const bool inside = row0 + r < s.m && k0 + c < s.k;
      tiles.a[stage][r][c] = inside ? a[static_cast<size_t>(row0 + r) * s.k + k0 + c] : zero;
    }
    for (int i = threadIdx.x; i < kTileK * kTileN; i += kThreads) {
      const int r = i / kTileN, c = i % kTileN;
      const bool inside = k0 + r < s.k && col0 + c < s.n;
      tiles.b[stage][r][c] = inside ? b[static_cast<size_t>(k0 + r) * s.n + col0 + c] : zero;
    }
  }
  async_copy_commit();  // an empty group for the element-wise path keeps the waits uniform
}

template <bool kVectorLoads>
__global__ void __launch_bounds__(kThreads) matmul_wmma(const __half* a, const __half* b, __half* c, MatmulShape s) {
  __shared__ __align__(128) SharedTiles tiles;
  const int row0 = blockIdx.y * kTileM, col0 = blockIdx.x * kTileN;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int warp_row = warp / kWarpsN * kWarpTileM, warp_col = warp % kWarpsN * kWarpTileN;

  wmma::fragment<wmma::accumulator, kFragment, kFragment, kFragment, float> acc[kFragmentsM][kFragmentsN];
  for (auto& row : acc)
    for (auto& fragment : row) wmma::fill_fragment(fragment, 0.0f);

  const int slices = (s.k + kTileK - 1) / kTileK;
  load_stage<kVectorLoads>(tiles, 0, a, b, s, row0, col0, 0);
  for (int slice = 0; slice < slices; ++slice) {
    const int stage = slice % kStages;
    // Start the next slice's copies, then wait for this slice's (all groups but the newest).
    if (slice + 1 < slices) {
      load_stage<kVectorLoads>(tiles, (slice + 1) % kStages, a, b, s, row0, col0, (slice + 1) * kTileK);
    } else {
      async_copy_commit();
    }
    async_copy_wait<1>();
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < kTileK; kk += kFragment) {
      wmma::fragment<wmma::matrix_a, kFragment, kFragment, kFragment, __half, wmma::row_major> a_frag[kFragmentsM];
      wmma::fragment<wmma::matrix_b, kFragment, kFragment, kFragment, __half, wmma::row_major> b_frag[kFragmentsN];
#pragma unroll
      for (int i = 0; i < kFragmentsM; ++i)
        wmma::load_matrix_sync(a_frag[i], &tiles.a[stage][warp_row + i * kFragment][kk], kAPitch);
#pragma unroll
      for (int j = 0; j < kFragmentsN; ++j)
        wmma::load_matrix_sync(b_frag[j], &tiles.b[stage][kk][warp_col + j * kFragment], kBPitch);
#pragma unroll
      for (int i = 0; i < kFragmentsM; ++i)
#pragma unroll
        for (int j = 0; j < kFragmentsN; ++j) wmma::mma_sync(acc[i][j], a_frag[i], b_frag[j], acc[i][j]);
    }
    __syncthreads();  // the next iteration's copies overwrite this stage
  }

  // Through shared memory, so edge tiles of any shape are written with bounds checks.
  float* scratch = reinterpret_cast<float*>(&tiles) + warp * kFragment * kFragment;
  for (int i = 0; i < kFragmentsM; ++i) {
    for (int j = 0; j < kFragmentsN; ++j) {
      wmma::store_matrix_sync(scratch, acc[i][j], kFragment, wmma::mem_row_major);
      __syncwarp();
      for (int e = lane; e < kFragment * kFragment; e += 32) {
        const int row = row0 + warp_row + i * kFragment + e / kFragment;
        const int col = col0 + warp_col + j * kFragment + e % kFragment;
        if (row < s.m && col < s.n) c[static_cast<size_t>(row) * s.n + col] = __float2half_rn(scratch[e]);
      }
      __syncwarp();
    }
  }
}

// 16-byte copies need every row of A and B to start on a 16-byte boundary.
bool takes_vector_loads(MatmulShape s) { return s.k % kChunk == 0 && s.n % kChunk == 0; }

dim3 grid_of(MatmulShape s) { return dim3((s.n + kTileN - 1) / kTileN, (s.m + kTileM - 1) / kTileM); }

}  // namespace

void matmul_wmma_fp16(const void* a, const void* b, void* c, MatmulShape s) {
  const auto* a_half = static_cast<const __half*>(a);
  const auto* b_half = static_cast<const __half*>(b);
  auto* c_half = static_cast<__half*>(c);
  if (takes_vector_loads(s)) {
    matmul_wmma<true><<<grid_of(s), kThreads>>>(a_half, b_half, c_half, s);
  } else {
    matmul_wmma<false><<<grid_of(s), kThreads>>>(a_half, b_half, c_half, s);
  }
  CUDA_CHECK_LAUNCH();
}

GemmLaunch matmul_wmma_fp16_launch(MatmulShape s) {
  const dim3 grid = grid_of(s);
  GemmLaunch launch;
  launch.kernel = takes_vector_loads(s) ? reinterpret_cast<const void*>(&matmul_wmma<true>)
                                        : reinterpret_cast<const void*>(&matmul_wmma<false>);
  launch.threads_per_block = kThreads;
  launch.blocks = static_cast<unsigned long long>(grid.x) * grid.y;
  launch.tile = "block " + std::to_string(kTileM) + "x" + std::to_string(kTileN) + "x" + std::to_string(kTileK) +
                ", warp " + std::to_string(kWarpTileM) + "x" + std::to_string(kWarpTileN) + " (WMMA 16x16x16 fragments), " +
                std::to_string(kStages) + " stages (cp.async)";
  if (!takes_vector_loads(s)) launch.tile += ", element-wise loads (n or k not a multiple of 8)";
  return launch;
}

void gemm_wmma_precision(Precision precision, const void* a, const void* b, void* c, MatmulShape s, const float*) {
  if (precision != Precision::fp16) throw std::logic_error("the WMMA kernel computes FP16 inputs only");
  matmul_wmma_fp16(a, b, c, s);
}

}  // namespace gpubench
