// Theoretical occupancy of a kernel at a block size: how many of its blocks one multiprocessor holds
// at once (cudaOccupancyMaxActiveBlocksPerMultiprocessor), what one block takes (cudaFuncGetAttributes:
// registers per thread, shared memory per block), and which resource stops the count there (threads,
// block slots, registers, shared memory, barriers: the CUDA toolkit's occupancy calculator,
// cuda_occupancy.h, whose per-resource limits the runtime's count is the least of). Where a grid of
// a given shape lands follows: the multiprocessors it keeps busy and the warps resident at once.
#pragma once

#include <cuda_occupancy.h>
#include <nlohmann/json_fwd.hpp>

#include <cstddef>
#include <string>
#include <vector>

namespace gpubench {

// A one-dimensional grid: `blocks` blocks of `threads_per_block` threads.
struct LaunchShape {
  unsigned blocks = 1;
  unsigned threads_per_block = 32;
};

struct KernelOccupancy {
  int threads_per_block = 0;
  int registers_per_thread = 0;
  std::size_t shared_bytes_per_block = 0;  // static and dynamic
  int blocks_per_multiprocessor = 0;       // resident at once; 0: the block cannot run
  int multiprocessors = 0;
  int max_warps_per_multiprocessor = 0;
  int warp_size = 32;
  // Blocks per multiprocessor each resource allows on its own (the calculator's; a resource the
  // kernel does not use allows INT_MAX; -1: unknown, the calculator does not know this device).
  int limit_by_threads = -1;
  int limit_by_blocks = -1;
  int limit_by_registers = -1;
  int limit_by_shared_memory = -1;
  int limit_by_barriers = -1;
  // The resources whose limit is blocks_per_multiprocessor ("threads", "blocks", "registers",
  // "shared_memory", "barriers"); empty when the calculator's count differs from the runtime's or it
  // does not know the device.
  std::vector<std::string> limited_by;

  int warps_per_block() const { return (threads_per_block + warp_size - 1) / warp_size; }
  // Resident warps over the multiprocessor's maximum at blocks_per_multiprocessor.
  double occupancy() const;
  // Multiprocessors a grid of `blocks` keeps busy at once: one block on each before a second on any,
  // as the block scheduler places a grid on an idle GPU.
  int busy_multiprocessors(unsigned blocks) const;
  // Warps of a grid of `blocks` resident at once (its first wave), and the GPU's maximum.
  double resident_warps(unsigned blocks) const;
  double max_resident_warps() const;
};

// The calculator's limits for a kernel on a device (pure: the tests give an H100's figures).
// `runtime_blocks` is the runtime's count, which the result reports; limited_by names the resources
// whose limit equals it.
KernelOccupancy occupancy_from(const cudaOccDeviceProp& device, const cudaOccFuncAttributes& kernel,
                               int threads_per_block, std::size_t dynamic_shared_bytes, int runtime_blocks);

// The same for `kernel` (a __global__ function's address) on the current device, asked of the runtime.
KernelOccupancy kernel_occupancy(const void* kernel, int threads_per_block, std::size_t dynamic_shared_bytes = 0);

// The --describe object of an occupancy: {"threads_per_block", "registers_per_thread",
// "shared_bytes_per_block", "blocks_per_multiprocessor", "occupancy", "limited_by": [...],
// "limits": {"threads", "blocks", "registers", "shared_memory", "barriers"} (null: not a limit, or unknown)}.
// A gpubench::Json (core/json.hpp); declared here without the library's full header, which CUDA
// sources that include this one need not compile.
nlohmann::ordered_json occupancy_json(const KernelOccupancy& occupancy);

}  // namespace gpubench
