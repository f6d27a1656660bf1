#include "core/kernel_occupancy.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <utility>

#include "core/cuda_check.hpp"
#include "core/json.hpp"

namespace gpubench {

double KernelOccupancy::occupancy() const {
  return max_warps_per_multiprocessor > 0
             ? static_cast<double>(blocks_per_multiprocessor) * warps_per_block() / max_warps_per_multiprocessor
             : 0.0;
}

int KernelOccupancy::busy_multiprocessors(unsigned blocks) const {
  return static_cast<int>(std::min<unsigned>(blocks, static_cast<unsigned>(multiprocessors)));
}

double KernelOccupancy::resident_warps(unsigned blocks) const {
  const double resident_blocks = std::min(static_cast<double>(blocks),
                                          static_cast<double>(multiprocessors) * blocks_per_multiprocessor);
  return resident_blocks * warps_per_block();
}

double KernelOccupancy::max_resident_warps() const {
  return static_cast<double>(multiprocessors) * max_warps_per_multiprocessor;
}

KernelOccupancy occupancy_from(const cudaOccDeviceProp& device, const cudaOccFuncAttributes& kernel,
                               int threads_per_block, std::size_t dynamic_shared_bytes, int runtime_blocks) {
  KernelOccupancy found;
  found.threads_per_block = threads_per_block;
  found.registers_per_thread = kernel.numRegs;
  found.shared_bytes_per_block = kernel.sharedSizeBytes + dynamic_shared_bytes;
  found.blocks_per_multiprocessor = runtime_blocks;
  found.multiprocessors = device.numSms;
  found.warp_size = device.warpSize;
  found.max_warps_per_multiprocessor = device.maxThreadsPerMultiprocessor / device.warpSize;
  cudaOccResult result{};
  const cudaOccDeviceState state;
  if (cudaOccMaxActiveBlocksPerMultiprocessor(&result, &device, &kernel, &state, threads_per_block,
                                              dynamic_shared_bytes) != CUDA_OCC_SUCCESS)
    return found;  // a device newer than the calculator: the runtime's count, no limits named
  found.limit_by_threads = result.blockLimitWarps;
  found.limit_by_blocks = result.blockLimitBlocks;
  found.limit_by_registers = result.blockLimitRegs;
  found.limit_by_shared_memory = result.blockLimitSharedMem;
  found.limit_by_barriers = result.blockLimitBarriers;
  if (result.activeBlocksPerMultiprocessor != runtime_blocks) return found;  // the calculator is out of date
  const std::pair<const char*, int> limits[] = {{"threads", found.limit_by_threads},
                                                {"blocks", found.limit_by_blocks},
                                                {"registers", found.limit_by_registers},
                                                {"shared_memory", found.limit_by_shared_memory},
                                                {"barriers", found.limit_by_barriers}};
  for (const auto& [resource, limit] : limits)
    if (limit == runtime_blocks) found.limited_by.emplace_back(resource);
  return found;
}

namespace {

const cudaDeviceProp& current_device() {
  static const cudaDeviceProp properties = [] {
    int device = 0;
    CUDA_CHECK(cudaGetDevice(&device));
    cudaDeviceProp found{};
    CUDA_CHECK(cudaGetDeviceProperties(&found, device));
    return found;
  }();
  return properties;
}

// A limit, or null where the resource does not limit the blocks or the limit is unknown.
Json limit_or_null(int limit) { return limit == INT_MAX || limit < 0 ? Json(nullptr) : Json(limit); }

}  // namespace

KernelOccupancy kernel_occupancy(const void* kernel, int threads_per_block, std::size_t dynamic_shared_bytes) {
  cudaFuncAttributes attributes{};
  CUDA_CHECK(cudaFuncGetAttributes(&attributes, kernel));
  int blocks = 0;
  CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, threads_per_block, dynamic_shared_bytes));
  return occupancy_from(cudaOccDeviceProp(current_device()), cudaOccFuncAttributes(attributes), threads_per_block,
                        dynamic_shared_bytes, blocks);
}

Json occupancy_json(const KernelOccupancy& o) {
  return {{"threads_per_block", o.threads_per_block},
          {"registers_per_thread", o.registers_per_thread},
          {"shared_bytes_per_block", o.shared_bytes_per_block},
          {"blocks_per_multiprocessor", o.blocks_per_multiprocessor},
          {"occupancy", o.occupancy()},
          {"limited_by", o.limited_by},
          {"limits",
           {{"threads", limit_or_null(o.limit_by_threads)},
            {"blocks", limit_or_null(o.limit_by_blocks)},
            {"registers", limit_or_null(o.limit_by_registers)},
            {"shared_memory", limit_or_null(o.limit_by_shared_memory)},
            {"barriers", limit_or_null(o.limit_by_barriers)}}}};
}

}  // namespace gpubench
