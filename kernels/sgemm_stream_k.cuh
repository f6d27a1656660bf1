// Stream-K for the blocked SGEMM (rung 10's candidates): the last, partial wave of tiles is not left to
// a part of the multiprocessors. The first tiles of C, a whole number of waves, go one per block as in
// sgemm_pipelined; the remaining tiles' MAC-loop iterations (tile x k-slice) are split evenly over one
// block per resident slot, whose ranges cross tile boundaries. A block whose range starts inside a tile
// (a contributor) writes its partial sums of that tile to a workspace slot of its own and raises its flag;
// the block whose range holds the tile's first slice (the owner) adds the contributors' partial sums, in
// the order of their blocks (deterministic), and writes C. A contributor's piece is the first thing its
// block does and an owner's the last, so owners rarely wait, and every block raises its flag before it
// waits on others: with all stream-K blocks resident at once, no wait is on a block that cannot run.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "core/cuda_check.hpp"
#include "core/gpu_runtime.hpp"
#include "core/operations.hpp"
#include "sgemm_blocktile.cuh"

namespace gpubench::sgemm_blocked {

// One block's piece of one tile: the slices [first, last) of tile `tile` (in raster order).
struct StreamKPiece {
  int tile = 0;
  int first = 0;
  int last = 0;
};

// How a launch divides C: blocks below data_parallel_tiles take their tile whole; the next
// stream_k_blocks share the iterations of the remaining tiles, block w taking [begin(w), begin(w + 1)),
// the first stream_k_iterations % stream_k_blocks blocks one iteration more than the others. In 32 bits:
// the 64-bit version of the arithmetic costs the 2-blocks-a-multiprocessor kernels spills.
struct StreamKPlan {
  int tile_cols = 0;
  int slices = 0;  // k-slices a tile
  int data_parallel_tiles = 0;
  int stream_k_blocks = 0;
  int stream_k_iterations = 0;  // of the tiles past data_parallel_tiles

  __host__ __device__ int begin(int worker) const {
    const int share = stream_k_iterations / stream_k_blocks, longer = stream_k_iterations % stream_k_blocks;
    return worker * share + (worker < longer ? worker : longer);
  }

  // The piece at `iteration`, cut at the tile's end or at `end` (the worker's range).
  __host__ __device__ StreamKPiece piece(int iteration, int end) const {
    const int tile_end = (iteration / slices + 1) * slices;
    const int first = iteration % slices;
    return {data_parallel_tiles + iteration / slices, first, first + (end < tile_end ? end : tile_end) - iteration};
  }
};

// Whole waves of `resident_blocks` tiles go data-parallel; the rest, if any, to stream-K blocks, no more
// than there are iterations, so every one has a range of at least one iteration. Where the rest has no
// iterations (k = 0: blocks write zeros) or more than an int holds (k of tens of millions), all tiles go
// data-parallel.
inline StreamKPlan stream_k_plan(MatmulShape s, int bm, int bn, int bk, int resident_blocks) {
  StreamKPlan plan;
  const int tile_rows = (s.m + bm - 1) / bm;
  plan.tile_cols = (s.n + bn - 1) / bn;
  plan.slices = (s.k + bk - 1) / bk;
  const int tiles = tile_rows * plan.tile_cols;
  const long long left_over = tiles % resident_blocks;
  const long long iterations = left_over * plan.slices;
  if (iterations == 0 || iterations > std::numeric_limits<int>::max()) {
    plan.data_parallel_tiles = tiles;
    return plan;
  }
  plan.data_parallel_tiles = tiles - static_cast<int>(left_over);
  plan.stream_k_iterations = static_cast<int>(iterations);
  plan.stream_k_blocks = plan.stream_k_iterations < resident_blocks ? plan.stream_k_iterations : resident_blocks;
  return plan;
}

// Where contributors leave their partial sums: a slot of kBM x kBN floats per stream-K block, and a flag
// per block, zero between calls (each raised flag is lowered by the owner that reads the slot).
struct StreamKWorkspace {
  float4* partials = nullptr;
  unsigned* flags = nullptr;
};

// The current device's workspace for `blocks` slots of `slot_floats`, allocated on first use and grown
// as needed, kept for the process. One stream at a time uses it (the ladder's calls are on the default
// stream).
inline StreamKWorkspace stream_k_workspace(int blocks, std::size_t slot_floats) {
  struct Buffers {
    std::unique_ptr<DeviceBuffer<float4>> partials;
    std::unique_ptr<DeviceBuffer<unsigned>> flags;
  };
  static std::mutex mutex;
  static std::map<int, Buffers> per_device;
  int device = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  const std::lock_guard<std::mutex> lock(mutex);
  Buffers& buffers = per_device[device];
  const std::size_t vectors = blocks * slot_floats / 4;
  if (!buffers.partials || buffers.partials->bytes() < vectors * sizeof(float4))
    buffers.partials = std::make_unique<DeviceBuffer<float4>>(vectors);
  if (!buffers.flags || buffers.flags->bytes() < blocks * sizeof(unsigned)) {
    buffers.flags = std::make_unique<DeviceBuffer<unsigned>>(blocks);
    CUDA_CHECK(cudaMemset(buffers.flags->get(), 0, buffers.flags->bytes()));
  }
  return {buffers.partials->get(), buffers.flags->get()};
}

__device__ inline unsigned load_acquire(const unsigned* flag) {
  unsigned value;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];\n" : "=r"(value) : "l"(flag) : "memory");
  return value;
}

__device__ inline void store_release(unsigned* flag, unsigned value) {
  asm volatile("st.release.gpu.global.u32 [%0], %1;\n" ::"l"(flag), "r"(value) : "memory");
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
  if (threadIdx.x == 0) store_release(flag, 1);
}

// acc += the partial sums in `slot` once its flag has risen; lowers the flag for the next call.
template <class T>
__device__ inline void add_partial(const float4* slot, unsigned* flag, Accumulators<T>& acc) {
  if (threadIdx.x == 0) {
    while (load_acquire(flag) == 0) __nanosleep(100);
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
                   StreamKWorkspace workspace) {
  extern __shared__ float4 shared_vectors[];
  float* const shared = reinterpret_cast<float*>(shared_vectors);
  const Layout layout(threadIdx.x);
  const int block = blockIdx.x;
  if (block < plan.data_parallel_tiles) {
    const int row0 = block / plan.tile_cols * T::kBM, col0 = block % plan.tile_cols * T::kBN;
    Accumulators<T> acc = {};
    multiply_slices<T>(shared, a, b, s, row0, col0, 0, plan.slices, layout, acc);
    store_tile<T>(c, s, row0, col0, layout, acc);
    return;
  }
  const int worker = block - plan.data_parallel_tiles;
  const int end = plan.begin(worker + 1);
  constexpr int kSlotVectors = T::kBM * T::kBN / 4;
  for (int iteration = plan.begin(worker); iteration < end;) {
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
      const int tile_end = iteration + plan.slices;
      for (int next = worker + 1; next < plan.stream_k_blocks && plan.begin(next) < tile_end; ++next)
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
    const StreamKWorkspace workspace =
        p.stream_k_blocks > 0 ? stream_k_workspace(p.stream_k_blocks, static_cast<std::size_t>(T::kBM) * T::kBN)
                              : StreamKWorkspace{};
    sgemm_stream_k<T, Layout>
        <<<p.data_parallel_tiles + p.stream_k_blocks, T::kThreads, T::kSharedBytes>>>(a, b, c, s, p, workspace);
    CUDA_CHECK_LAUNCH();
  }

  static GemmLaunch launch(MatmulShape s) {
    const StreamKPlan p = plan(s);
    const int stream_k_tiles = p.stream_k_blocks > 0 ? p.stream_k_iterations / p.slices : 0;
    return {reinterpret_cast<const void*>(kKernel), T::kThreads, T::kSharedBytes,
            static_cast<unsigned long long>(p.data_parallel_tiles) + p.stream_k_blocks,
            tile_words<T, Layout>() + ", stream-K: the last " + std::to_string(stream_k_tiles) + " tiles shared by " +
                std::to_string(p.stream_k_blocks) + " blocks"};
  }
};

// A WarpTiled configuration run stream-K.
template <class Config>
struct StreamK {
  using Sgemm = StreamKSgemm<typename Config::Tile, typename Config::Layout>;
};

}  // namespace gpubench::sgemm_blocked
