// The blocked SGEMM that rungs 7 to 10 of the ladder share. A block computes a kBM x kBN tile of C,
// walking k in steps of kBK through shared memory; each thread accumulates kTM x kTN outputs in
// registers, held as (kTM/4) x (kTN/4) groups of 4 x 4, so that every operand a thread reads from
// shared memory, and every piece of a row of C it writes, is one float4. A is stored transposed
// (k-major) in shared memory so that a thread's rows at one k are consecutive words.
// What varies: how a stage is filled (through registers, rung 7; asynchronous copies into a ring of
// stages, rungs 8-10) and where a thread's outputs lie (a patch of its own, rungs 7-8; warp tiles,
// rungs 9-10).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <string>

#include "async_copy.cuh"
#include "core/cuda_check.hpp"
#include "core/operations.hpp"
#include "gemm_ladder.cuh"
#include "gemm_rung_support.cuh"
#include "sgemm_rung.cuh"

namespace gpubench::sgemm_blocked {

// BandRows: 0, blocks take the tiles of C in raster order (blockIdx); else in bands of that many tile
// rows (banded_tile), which keeps the panels of A and B the resident blocks read in L2 (rung 10's).
template <int BM, int BN, int BK, int TM, int TN, int Threads, int Stages, int BandRows = 0>
struct BlockTile {
  static constexpr int kBM = BM, kBN = BN, kBK = BK, kTM = TM, kTN = TN, kThreads = Threads, kStages = Stages,
                       kBandRows = BandRows;
  // Four floats of padding per k row of the transposed A keep rows 16-byte aligned and spread the
  // transposing stores of a warp (4 rows x 8 k, or 16 rows x 2 float4 in rung 7) over all 32 banks.
  static constexpr int kAPitch = BM + 4;
  static constexpr int kAFloats = BK * kAPitch;
  static constexpr int kStageFloats = kAFloats + BK * BN;
  static constexpr std::size_t kSharedBytes = sizeof(float) * kStageFloats * Stages;
  // Up to 64 accumulators a thread, two blocks of 256 threads fit a multiprocessor's registers (128
  // each); more accumulators need more registers than that, one block then.
  static constexpr int kMinBlocksPerSm = TM * TN > 64 ? 1 : 2;
  static_assert(BM * BN == Threads * TM * TN, "one thread per kTM x kTN outputs");
  static_assert(TM % 4 == 0 && TN % 4 == 0, "a thread's outputs are groups of 4 x 4");
  static_assert(BM % 32 == 0 && BK % 8 == 0, "A's copies: a warp takes 4 rows x 8 k (load_stage_async)");
  static_assert(Threads % 32 == 0 && (BM * BK) % Threads == 0 && (BK * BN / 4) % Threads == 0,
                "threads share the copies evenly");
};

// Where a thread's outputs lie in the block tile: rows row0 + g * kRowStride + (0..3) for g < kTM/4
// and columns col0 + h * kColStride + (0..3) for h < kTN/4.

// Threads in a grid over the block tile, each with a kTM x kTN patch of its own (rungs 7 and 8).
// A warp's reads of B at one k are 16 float4 32 bytes apart: bank conflicts, four shared-memory
// wavefronts where the 256 bytes need two.
template <class T>
struct PatchLayout {
  static constexpr int kRowStride = 4, kColStride = 4;
  static constexpr int kThreadsAlongN = T::kBN / T::kTN;
  int row0, col0;
  __device__ explicit PatchLayout(int thread)
      : row0(thread / kThreadsAlongN * T::kTM), col0(thread % kThreadsAlongN * T::kTN) {}
  static std::string words() { return {}; }
};

// Block tile, then warp tiles of WM x WN, then thread tiles (rungs 9 and 10). The 32 threads of a warp
// form a (WM/kTM) x (WN/kTN) grid whose 4 x 4 groups interleave: at one k a warp's float4 reads of A
// (of B) are consecutive, at most 128 bytes, one shared-memory wavefront broadcast to the threads
// that share them.
template <class T, int WM, int WN>
struct WarpLayout {
  static constexpr int kThreadsAlongM = WM / T::kTM, kThreadsAlongN = WN / T::kTN;
  static constexpr int kRowStride = 4 * kThreadsAlongM, kColStride = 4 * kThreadsAlongN;
  static constexpr int kWarpsAlongN = T::kBN / WN;
  static_assert(kThreadsAlongM * kThreadsAlongN == 32 && WM % T::kTM == 0 && WN % T::kTN == 0,
                "a warp's 32 threads cover its tile");
  static_assert(kThreadsAlongM <= 8 && kThreadsAlongN <= 8, "a warp's float4 reads at one k span 128 bytes at most");
  static_assert(T::kBM % WM == 0 && T::kBN % WN == 0 && (T::kBM / WM) * kWarpsAlongN * 32 == T::kThreads,
                "the warps cover the block tile");
  int row0, col0;
  __device__ explicit WarpLayout(int thread)
      : row0(thread / 32 / kWarpsAlongN * WM + thread % 32 / kThreadsAlongN * 4),
        col0(thread / 32 % kWarpsAlongN * WN + thread % 32 % kThreadsAlongN * 4) {}
  static std::string words() { return ", warp " + std::to_string(WM) + "x" + std::to_string(WN); }
};

// The tiling in words, for GemmLaunch::tile: "block 128x128x16, warp 64x32, thread 8x8, 256 threads, 3 stages".
template <class T, class Layout>
std::string tile_words() {
  std::string words = "block " + std::to_string(T::kBM) + "x" + std::to_string(T::kBN) + "x" + std::to_string(T::kBK) +
                      Layout::words() + ", thread " + std::to_string(T::kTM) + "x" + std::to_string(T::kTN) + ", " +
                      std::to_string(T::kThreads) + " threads";
  if (T::kStages > 1) words += ", " + std::to_string(T::kStages) + " stages";
  if (T::kBandRows > 0) words += ", tiles walked in bands of " + std::to_string(T::kBandRows) + " rows";
  return words;
}

template <class T>
using Accumulators = float[T::kTM][T::kTN];

__device__ inline void unpack(float* to, float4 v) {
  to[0] = v.x;
  to[1] = v.y;
  to[2] = v.z;
  to[3] = v.w;
}

// acc += the stage's slice of A times its slice of B, for this thread's outputs.
template <class T, class Layout>
__device__ inline void multiply_stage(const float* stage, const Layout& layout, Accumulators<T>& acc) {
  const float* a_tile = stage + layout.row0;
  const float* b_tile = stage + T::kAFloats + layout.col0;
#pragma unroll
  for (int p = 0; p < T::kBK; ++p) {
    float a_frag[T::kTM], b_frag[T::kTN];
#pragma unroll
    for (int g = 0; g < T::kTM / 4; ++g)
      unpack(a_frag + 4 * g, *reinterpret_cast<const float4*>(a_tile + p * T::kAPitch + g * Layout::kRowStride));
#pragma unroll
    for (int h = 0; h < T::kTN / 4; ++h)
      unpack(b_frag + 4 * h, *reinterpret_cast<const float4*>(b_tile + p * T::kBN + h * Layout::kColStride));
#pragma unroll
    for (int i = 0; i < T::kTM; ++i)
#pragma unroll
      for (int j = 0; j < T::kTN; ++j) acc[i][j] = fmaf(a_frag[i], b_frag[j], acc[i][j]);
  }
}

// Writes this thread's outputs to the block's tile of C at (row0, col0), as float4 (n % 4 == 0: a
// vector is wholly inside a row or wholly past its end).
template <class T, class Layout>
__device__ inline void store_tile(float* c, MatmulShape s, int row0, int col0, const Layout& layout,
                                  const Accumulators<T>& acc) {
#pragma unroll
  for (int i = 0; i < T::kTM; ++i) {
    const int row = row0 + layout.row0 + i / 4 * Layout::kRowStride + i % 4;
    if (row >= s.m) continue;
#pragma unroll
    for (int h = 0; h < T::kTN / 4; ++h) {
      const int col = col0 + layout.col0 + h * Layout::kColStride;
      if (col < s.n)
        *reinterpret_cast<float4*>(c + static_cast<std::size_t>(row) * s.n + col) =
            make_float4(acc[i][4 * h], acc[i][4 * h + 1], acc[i][4 * h + 2], acc[i][4 * h + 3]);
    }
  }
}

// Starts the copies of the A and B slices at k0 into `stage`; elements outside the matrices become
// zeros. A cannot be transposed by a vector copy, so its elements are copied one by one: thread t takes
// k offset t % 8 of rows t / 8, t / 8 + kThreads / 8, ..., so a warp copies 4 rows x 8 consecutive k
// (four 32-byte sectors), which land in 32 different banks (kAPitch). B's rows go as 16-byte vectors
// (n % 4 == 0), thread t always at the same column. Every pass's offsets are constants, so the copies
// cost few instructions besides their own.
template <class T>
__device__ inline void load_stage_async(float* stage, const float* a, const float* b, MatmulShape s, int row0,
                                        int col0, int k0) {
  constexpr int kRowsPerPass = T::kThreads / 8;
  static_assert(T::kBM % kRowsPerPass == 0, "passes over A cover whole columns of rows");
  const int a_row = row0 + threadIdx.x / 8, a_col = k0 + threadIdx.x % 8;
#pragma unroll
  for (int pass = 0; pass < T::kBM * T::kBK / T::kThreads; ++pass) {
    const int r = pass % (T::kBM / kRowsPerPass) * kRowsPerPass;  // plus threadIdx.x / 8
    const int p = pass / (T::kBM / kRowsPerPass) * 8;             // plus threadIdx.x % 8
    const int row = a_row + r, col = a_col + p;
    const bool inside = row < s.m && col < s.k;
    async_copy_4(stage + (p + threadIdx.x % 8) * T::kAPitch + r + threadIdx.x / 8,
                 inside ? a + static_cast<std::size_t>(row) * s.k + col : a, inside);
  }
  constexpr int kVectorsPerRow = T::kBN / 4;
  constexpr int kRowsPerBPass = T::kThreads / kVectorsPerRow;
  static_assert(T::kThreads % kVectorsPerRow == 0, "a thread keeps its column of B");
  const int b_row = threadIdx.x / kVectorsPerRow, b_col = threadIdx.x % kVectorsPerRow * 4;
  float* b_tile = stage + T::kAFloats;
#pragma unroll
  for (int pass = 0; pass < T::kBK / kRowsPerBPass; ++pass) {
    const int p = b_row + pass * kRowsPerBPass;
    const int row = k0 + p, col = col0 + b_col;
    const bool inside = row < s.k && col < s.n;
    async_copy_16(b_tile + p * T::kBN + b_col, inside ? b + static_cast<std::size_t>(row) * s.n + col : b, inside);
  }
}

// acc += the block's rows of A (from row0) times its columns of B (from col0) over the slices
// [first, last) of k, through a ring of kStages stages at `shared`. While the block multiplies the slice
// in one stage, the copies of the next kStages - 1 slices are in flight; one barrier a slice both
// publishes the slice that arrived and frees the stage the block finished with. A caller that runs it
// again on the same ring puts a barrier between the two: the first call's last stage may still be read.
template <class T, class Layout>
__device__ inline void multiply_slices(float* shared, const float* a, const float* b, MatmulShape s, int row0,
                                       int col0, int first, int last, const Layout& layout, Accumulators<T>& acc) {
  static_assert(T::kStages >= 2, "a pipeline has two stages or more");
#pragma unroll
  for (int ahead = 0; ahead < T::kStages - 1; ++ahead) {
    if (first + ahead < last)
      load_stage_async<T>(shared + ahead * T::kStageFloats, a, b, s, row0, col0, (first + ahead) * T::kBK);
    async_copy_commit();  // a group even when empty: the wait below counts groups
  }
  for (int slice = first; slice < last; ++slice) {
    const int ring_index = slice - first;
    async_copy_wait<T::kStages - 2>();  // this thread's copies of `slice` are done
    __syncthreads();                    // everyone's are, and everyone is done with slice - 1's stage
    const int next = slice + T::kStages - 1;
    if (next < last)
      load_stage_async<T>(shared + (ring_index + T::kStages - 1) % T::kStages * T::kStageFloats, a, b, s, row0, col0,
                          next * T::kBK);
    async_copy_commit();
    multiply_stage<T>(shared + ring_index % T::kStages * T::kStageFloats, layout, acc);
  }
}

// The pipelined kernel: one block per tile of C, all of k through a ring of stages in dynamic shared memory.
template <class T, class Layout>
__global__ void __launch_bounds__(T::kThreads, T::kMinBlocksPerSm)
    sgemm_pipelined(const float* a, const float* b, float* c, MatmulShape s) {
  extern __shared__ float4 shared_vectors[];
  GemmTile tile{static_cast<int>(blockIdx.y), static_cast<int>(blockIdx.x)};
  if constexpr (T::kBandRows > 0)
    tile = banded_tile(blockIdx.y * gridDim.x + blockIdx.x, gridDim.y, gridDim.x, T::kBandRows);
  const int row0 = tile.row * T::kBM, col0 = tile.col * T::kBN;
  const Layout layout(threadIdx.x);
  Accumulators<T> acc = {};
  multiply_slices<T>(reinterpret_cast<float*>(shared_vectors), a, b, s, row0, col0, 0, (s.k + T::kBK - 1) / T::kBK,
                     layout, acc);
  store_tile<T>(c, s, row0, col0, layout, acc);
}

// The host side of one instantiation.
template <class T, class Layout>
struct PipelinedSgemm {
  static constexpr auto kKernel = &sgemm_pipelined<T, Layout>;

  // Above 48 KiB of dynamic shared memory a kernel must opt in, per device: done before every use
  // (launch and occupancy query), which costs far less than the kernel.
  static void allow_shared_memory() {
    if (T::kSharedBytes > 48 * 1024)
      allow_dynamic_shared_memory(reinterpret_cast<const void*>(kKernel), T::kSharedBytes);
  }

  static void run(const float* a, const float* b, float* c, MatmulShape s) {
    allow_shared_memory();
    sgemm_pipelined<T, Layout><<<tile_grid(s, T::kBM, T::kBN), T::kThreads, T::kSharedBytes>>>(a, b, c, s);
    CUDA_CHECK_LAUNCH();
  }

  static GemmLaunch launch(MatmulShape s) {
    allow_shared_memory();
    return {reinterpret_cast<const void*>(kKernel), T::kThreads, T::kSharedBytes,
            grid_blocks(tile_grid(s, T::kBM, T::kBN)), tile_words<T, Layout>()};
  }
};

// Rungs 9 and 10: warp tiles of WM x WN, as many warps as the block tile holds.
template <int BM, int BN, int BK, int WM, int WN, int TM, int TN, int Stages, int BandRows = 0>
struct WarpTiled {
  using Tile = BlockTile<BM, BN, BK, TM, TN, (BM / WM) * (BN / WN) * 32, Stages, BandRows>;
  using Layout = WarpLayout<Tile, WM, WN>;
  using Sgemm = PipelinedSgemm<Tile, Layout>;
};

}  // namespace gpubench::sgemm_blocked
