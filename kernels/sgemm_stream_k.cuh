// Stream-K for the blocked SGEMM (rung 10's candidates), on the schedule of stream_k.cuh: the first
// tiles of C, a whole number of waves, go one per block as in sgemm_pipelined (not persistent); the
// remaining tiles' k-slices are shared by one block per resident slot, contributors' partial sums added
// by each tile's owner in block order.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <string>

#include "core/cuda_check.hpp"
#include "core/gpu_runtime.hpp"
#include "core/operations.hpp"
#include "sgemm_blocktile.cuh"
#include "stream_k.cuh"

namespace gpubench::sgemm_blocked {

// One block's piece of one tile: the slices [first, last) of tile `tile` (in raster order).
struct StreamKPiece {
  int tile = 0;
  int first = 0;
  int last = 0;
};

// How a launch divides C (stream_k::plan): blocks below split.data_parallel_tiles take their tile whole
// (one block a tile, not persistent); the next split.stream_k_blocks share the remaining tiles' iterations.
struct StreamKPlan {
  stream_k::Plan split;
  int tile_cols = 0;

  // The piece at `iteration`, cut at the tile's end or at `end` (the worker's range).
  __host__ __device__ StreamKPiece piece(int iteration, int end) const {
    const int tile_end = (iteration / split.slices + 1) * split.slices;
    const int first = iteration % split.slices;
    return {split.data_parallel_tiles + iteration / split.slices, first,
            first + (end < tile_end ? end : tile_end) - iteration};
  }
};

// Where the shape has no k-slices (k = 0: blocks write zeros), every tile goes data-parallel.
inline StreamKPlan stream_k_plan(MatmulShape s, int bm, int bn, int bk, int resident_blocks) {
  StreamKPlan plan;
  plan.tile_cols = (s.n + bn - 1) / bn;
  const int tiles = (s.m + bm - 1) / bm * plan.tile_cols;
  plan.split = stream_k::plan(tiles, (s.k + bk - 1) / bk, resident_blocks);
  return plan;
}

// Accumulator group v (row v / (kTN/4), columns 4 * (v % (kTN/4)) + 0..3) of this thread lies at
// slot[v * kThreads + thread]: each store and load of a warp is 512 consecutive bytes.
template <class T>
__device__ inline void publish_partial(float4* slot, unsigned* flag, const Accumulators<T>& acc) {
#pragma unroll
  for (int i = 0; i < T::kTM; ++i)
#pragma unroll
    for (int h = 0; h < T::kTN / 4; ++h)
      __stcg(slot + (i * (T::kTN / 4) + h) * T::kThreads + threadIdx.x,
             make_float4(acc[i][4 * h], acc[i][4 * h + 1], acc[i][4 * h + 2], acc[i][4 * h + 3]));
  __threadfence();
  __syncthreads();  // every thread's sums are out before the flag rises
  if (threadIdx.x == 0) stream_k::store_release(flag, 1);
}

// acc += the partial sums in `slot` once its flag has risen; lowers the flag for the next call.
template <class T>
__device__ inline void add_partial(const float4* slot, unsigned* flag, Accumulators<T>& acc) {
  if (threadIdx.x == 0) {
    while (stream_k::load_acquire(flag) == 0) __nanosleep(100);
    *flag = 0;
  }
  __syncthreads();
#pragma unroll
  for (int i = 0; i < T::kTM; ++i)
#pragma unroll
    for (int h = 0; h < T::kTN / 4; ++h) {
      const float4 p = __ldcg(slot + (i * (T::kTN / 4) + h) * T::kThreads + threadIdx.x);
      acc[i][4 * h] += p.x;
      acc[i][4 * h + 1] += p.y;
      acc[i][4 * h + 2] += p.z;
      acc[i][4 * h + 3] += p.w;
    }
}

template <class T, class Layout>
__global__ void __launch_bounds__(T::kThreads, T::kMinBlocksPerSm)
    sgemm_stream_k(const float* a, const float* b, float* c, MatmulShape s, StreamKPlan plan,
                   stream_k::Workspace workspace) {
  extern __shared__ float4 shared_vectors[];
  float* const shared = reinterpret_cast<float*>(shared_vectors);
  const Layout layout(threadIdx.x);
  const int block = blockIdx.x;
  const stream_k::Plan& split = plan.split;
  if (block < split.data_parallel_tiles) {
    const int row0 = block / plan.tile_cols * T::kBM, col0 = block % plan.tile_cols * T::kBN;
    Accumulators<T> acc = {};
    multiply_slices<T>(shared, a, b, s, row0, col0, 0, split.slices, layout, acc);
    store_tile<T>(c, s, row0, col0, layout, acc);
    return;
  }
  const int worker = block - split.data_parallel_tiles;
  const int end = split.begin(worker + 1);
  constexpr int kSlotVectors = T::kBM * T::kBN / 4;
  for (int iteration = split.begin(worker); iteration < end;) {
    const StreamKPiece piece = plan.piece(iteration, end);
    const int row0 = piece.tile / plan.tile_cols * T::kBM, col0 = piece.tile % plan.tile_cols * T::kBN;
    Accumulators<T> acc = {};
    __syncthreads();  // every warp is done with the ring's stages of the previous piece
    multiply_slices<T>(shared, a, b, s, row0, col0, piece.first, piece.last, layout, acc);
    if (piece.first > 0) {  // a contributor: its block's first piece, so one slot a block suffices
      publish_partial<T>(workspace.partials + static_cast<std::size_t>(worker) * kSlotVectors,
                         workspace.flags + worker, acc);
    } else {
      // The contributors to this tile: the next blocks whose ranges start inside it.
      const int tile_end = iteration + split.slices;
      for (int next = worker + 1; next < split.stream_k_blocks && split.begin(next) < tile_end; ++next)
        add_partial<T>(workspace.partials + static_cast<std::size_t>(next) * kSlotVectors, workspace.flags + next,
                       acc);
      store_tile<T>(c, s, row0, col0, layout, acc);
    }
    iteration += piece.last - piece.first;
  }
}

// The host side of one instantiation.
template <class T, class Layout>
struct StreamKSgemm {
  static constexpr auto kKernel = &sgemm_stream_k<T, Layout>;

  static void allow_shared_memory() {
    if (T::kSharedBytes > 48 * 1024)
      allow_dynamic_shared_memory(reinterpret_cast<const void*>(kKernel), T::kSharedBytes);
  }

  // As many stream-K blocks as the device holds at once: all resident together, none waits forever.
  static StreamKPlan plan(MatmulShape s) {
    allow_shared_memory();
    int device = 0, multiprocessors = 0, per_multiprocessor = 0;
    CUDA_CHECK(cudaGetDevice(&device));
    CUDA_CHECK(cudaDeviceGetAttribute(&multiprocessors, cudaDevAttrMultiProcessorCount, device));
    CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_multiprocessor, kKernel, T::kThreads,
                                                             T::kSharedBytes));
    // At least one: a kernel that cannot be resident fails at its launch, which says why.
    return stream_k_plan(s, T::kBM, T::kBN, T::kBK, std::max(1, multiprocessors * per_multiprocessor));
  }

  static void run(const float* a, const float* b, float* c, MatmulShape s) {
    const StreamKPlan p = plan(s);
    const stream_k::Workspace workspace =
        p.split.stream_k_blocks > 0
            ? stream_k::workspace(p.split.stream_k_blocks, static_cast<std::size_t>(T::kBM) * T::kBN)
            : stream_k::Workspace{};
    sgemm_stream_k<T, Layout><<<p.split.data_parallel_tiles + p.split.stream_k_blocks, T::kThreads, T::kSharedBytes>>>(
        a, b, c, s, p, workspace);
    CUDA_CHECK_LAUNCH();
  }

  static GemmLaunch launch(MatmulShape s) {
    const StreamKPlan p = plan(s);
    return {reinterpret_cast<const void*>(kKernel), T::kThreads, T::kSharedBytes,
            static_cast<unsigned long long>(p.split.data_parallel_tiles) + p.split.stream_k_blocks,
            tile_words<T, Layout>() + ", stream-K: the last " + std::to_string(p.split.stream_k_tiles()) +
                " tiles shared by " + std::to_string(p.split.stream_k_blocks) + " blocks"};
  }
};

// A WarpTiled configuration run stream-K.
template <class Config>
struct StreamK {
  using Sgemm = StreamKSgemm<typename Config::Tile, typename Config::Layout>;
};

}  // namespace gpubench::sgemm_blocked
