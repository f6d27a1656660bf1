// Stream-K for a persistent GEMM kernel (one block per multiprocessor, each walking its share of C): the
// last, partial wave of tiles is not left to a part of the multiprocessors. The first tiles, a whole
// number of waves, go whole to the blocks in turn; the remaining tiles' k-slices (tile x k-slice, the
// "iterations") are split evenly over one block per resident slot, whose ranges cross tile boundaries.
// A block whose range starts inside a tile (a contributor) writes its partial sums of that tile to a
// workspace slot of its own and raises the slot's flag; the block whose range holds the tile's first
// slice (the owner) adds the contributors' partial sums, in the order of their blocks (deterministic),
// and writes C. A contributor's piece is the first of its block's stream-K work and an owner's the last,
// so owners rarely wait, and every block raises its flag before it waits on others: with all blocks
// resident at once (grid <= resident slots), no wait is on a block that cannot run.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <limits>
#include <map>
#include <memory>
#include <mutex>

#include "core/cuda_check.hpp"
#include "core/gpu_runtime.hpp"

namespace gpubench::stream_k {

// A block's piece of work: the k-slices [first, last) of tile `tile` (an index in the kernel's tile
// order), of stream-K block `worker` (-1: a data-parallel tile, taken whole).
struct Unit {
  int tile = 0;
  int first = 0;
  int last = 0;
  int worker = -1;
  __host__ __device__ bool contributes() const { return first > 0; }
};

// How a launch divides C: tiles below data_parallel_tiles are taken whole, tile t by block t % blocks;
// stream_k_blocks blocks (the first ones) then share the iterations of the remaining tiles, worker w
// taking [begin(w), begin(w + 1)), the first stream_k_iterations % stream_k_blocks one iteration more
// than the others. In 32 bits: registers are scarce in the kernels that walk it.
struct Plan {
  int slices = 0;  // k-slices a tile
  int blocks = 0;  // the grid
  int data_parallel_tiles = 0;
  int stream_k_blocks = 0;
  int stream_k_iterations = 0;  // of the tiles past data_parallel_tiles

  __host__ __device__ int begin(int worker) const {
    const int share = stream_k_iterations / stream_k_blocks, longer = stream_k_iterations % stream_k_blocks;
    return worker * share + (worker < longer ? worker : longer);
  }

  __host__ __device__ int stream_k_tiles() const { return stream_k_blocks > 0 ? stream_k_iterations / slices : 0; }

  // The owner's contributors are the workers (unit.worker, contributors_end(unit)): the next ones whose
  // ranges start inside its tile. None for a data-parallel tile.
  __host__ __device__ int contributors_end(const Unit& owner) const {
    if (owner.worker < 0) return owner.worker + 1;
    const int tile_end = (owner.tile - data_parallel_tiles + 1) * slices;
    int next = owner.worker + 1;
    while (next < stream_k_blocks && begin(next) < tile_end) ++next;
    return next;
  }
};

// Which last waves a kernel shares: the partial sums and the owners' waits cost something, which a
// nearly full last wave, or a grid of fewer tiles than blocks, may not win back.
struct TailRule {
  int min_whole_waves = 0;       // share only after this many whole waves
  double max_tail_share = 1.0;   // and a last wave of at most this share of the resident blocks
};

// Whole waves of `resident_blocks` tiles go data-parallel; the rest, if any and if `rule` takes it, to
// stream-K blocks, no more than there are iterations, so every one has a range of at least one iteration
// (and at most `slices`: a tile's worth). Where the rest has more iterations than an int holds (k of tens
// of millions), all tiles go data-parallel. Needs tiles, slices and resident_blocks >= 1.
inline Plan plan(int tiles, int slices, int resident_blocks, TailRule rule = {}) {
  Plan plan;
  plan.slices = slices;
  const int left_over = tiles % resident_blocks;
  const long long iterations = static_cast<long long>(left_over) * slices;
  const bool shared = tiles / resident_blocks >= rule.min_whole_waves &&
                      left_over <= rule.max_tail_share * resident_blocks;
  if (!shared || iterations == 0 || iterations > std::numeric_limits<int>::max()) {
    plan.data_parallel_tiles = tiles;
    plan.blocks = tiles < resident_blocks ? tiles : resident_blocks;
    return plan;
  }
  plan.data_parallel_tiles = tiles - left_over;
  plan.stream_k_iterations = static_cast<int>(iterations);
  plan.stream_k_blocks = plan.stream_k_iterations < resident_blocks ? plan.stream_k_iterations : resident_blocks;
  plan.blocks = plan.data_parallel_tiles > 0 ? resident_blocks : plan.stream_k_blocks;
  return plan;
}

// The units of one block in the order it does them: its data-parallel tiles, then its stream-K range
// cut at tile boundaries (a contributor's piece first, an owner's last).
class Units {
 public:
  __host__ __device__ Units(const Plan& plan, int block) : plan_(plan), tile_(block) {
    if (block < plan.stream_k_blocks) {
      worker_ = block;
      iteration_ = plan.begin(block);
      end_ = plan.begin(block + 1);
    }
  }

  // The next unit into `unit`; false when there is none.
  __host__ __device__ bool next(Unit& unit) {
    if (tile_ < plan_.data_parallel_tiles) {
      unit = {tile_, 0, plan_.slices, -1};
      tile_ += plan_.blocks;
      return true;
    }
    if (iteration_ >= end_) return false;
    const int tile_begin = iteration_ / plan_.slices * plan_.slices;
    const int tile_end = tile_begin + plan_.slices;
    const int last = end_ < tile_end ? end_ : tile_end;
    unit = {plan_.data_parallel_tiles + iteration_ / plan_.slices, iteration_ - tile_begin, last - tile_begin, worker_};
    iteration_ = last;
    return true;
  }

 private:
  Plan plan_;
  int tile_;
  int worker_ = -1, iteration_ = 0, end_ = 0;
};

// Where contributors leave their partial sums: slots of floats, and a flag per slot, zero between calls
// (each raised flag is lowered by the owner that reads the slot).
struct Workspace {
  float4* partials = nullptr;
  unsigned* flags = nullptr;
};

// The current device's workspace for `slots` slots of `slot_floats` (a multiple of 4), allocated on
// first use and grown as needed, kept for the process. One stream at a time uses it (the ladder's calls
// are on the default stream).
inline Workspace workspace(int slots, std::size_t slot_floats) {
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
  const std::size_t vectors = slots * slot_floats / 4;
  if (!buffers.partials || buffers.partials->bytes() < vectors * sizeof(float4))
    buffers.partials = std::make_unique<DeviceBuffer<float4>>(vectors);
  if (!buffers.flags || buffers.flags->bytes() < slots * sizeof(unsigned)) {
    buffers.flags = std::make_unique<DeviceBuffer<unsigned>>(slots);
    CUDA_CHECK(cudaMemset(buffers.flags->get(), 0, buffers.flags->bytes()));
  }
  return {buffers.partials->get(), buffers.flags->get()};
}

#ifdef __CUDACC__
__device__ inline unsigned load_acquire(const unsigned* flag) {
  unsigned value;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];\n" : "=r"(value) : "l"(flag) : "memory");
  return value;
}

__device__ inline void store_release(unsigned* flag, unsigned value) {
  asm volatile("st.release.gpu.global.u32 [%0], %1;\n" ::"l"(flag), "r"(value) : "memory");
}
#endif

}  // namespace gpubench::stream_k
