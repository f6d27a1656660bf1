// What our memory-bound kernels share: 16-byte vectors (one load or store instruction per thread
// moves 16 bytes, the widest access a thread makes), the check that pointers allow them, and the
// grid of a grid-stride loop.
#pragma once
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "core/cuda_check.hpp"
#include "core/gpu_runtime.hpp"

namespace gpubench {

constexpr int kVectorThreads = 256;  // threads per block of every such kernel

// 16 bytes of T and its lanes. FP16 (binary16 bits) travels as 4 half2 pairs.
template <typename T>
struct Vector16;
template <>
struct Vector16<float> {
  using type = float4;
  using Lane = float;
  static constexpr int lanes = 4;
  static constexpr int elements = 4;
};
template <>
struct Vector16<double> {
  using type = double2;
  using Lane = double;
  static constexpr int lanes = 2;
  static constexpr int elements = 2;
};
template <>
struct Vector16<std::uint16_t> {
  using type = uint4;
  using Lane = __half2;
  static constexpr int lanes = 4;
  static constexpr int elements = 8;
};

// The lanes of a vector, read and written by index (registers once the loop over them is unrolled).
template <typename T>
__device__ inline typename Vector16<T>::Lane* lanes_of(typename Vector16<T>::type& vector) {
  return reinterpret_cast<typename Vector16<T>::Lane*>(&vector);
}

// Throws std::invalid_argument unless every pointer is 16-byte aligned (cudaMalloc's are).
template <typename... Pointers>
void require_vector_alignment(const char* kernel, const Pointers*... pointers) {
  const bool aligned = ((reinterpret_cast<std::uintptr_t>(pointers) % 16 == 0) && ...);
  if (!aligned) throw std::invalid_argument(std::string(kernel) + " needs 16-byte aligned arrays");
}

// Blocks of `Threads` for a grid-stride loop of `Kernel`: as many as the multiprocessors hold at once
// (every thread resident, none waiting for a slot; asked once per kernel), no more than `items` need
// at one item per thread.
template <auto Kernel, int Threads = kVectorThreads>
unsigned resident_blocks(std::size_t items) {
  static const std::size_t resident = [] {
    int per_multiprocessor = 0;
    CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_multiprocessor, Kernel, Threads, 0));
    return static_cast<std::size_t>(std::max(per_multiprocessor, 1)) *
           device_attribute(cudaDevAttrMultiProcessorCount);
  }();
  const std::size_t wanted = (items + Threads - 1) / Threads;
  return static_cast<unsigned>(std::max<std::size_t>(1, std::min(resident, wanted)));
}

// Blocks for one item per thread; throws GpuError past the largest grid.
inline unsigned blocks_for(std::size_t items, const char* kernel) {
  const std::size_t blocks = (items + kVectorThreads - 1) / kVectorThreads;
  if (blocks > 0x7FFFFFFFu)
    throw GpuError(std::string(kernel) + ": " + std::to_string(items) + " items exceed one grid");
  return static_cast<unsigned>(std::max<std::size_t>(blocks, 1));
}

}  // namespace gpubench
