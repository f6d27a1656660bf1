#include "sm_copy.cuh"

#include <algorithm>
#include <cstdint>
#include <stdexcept>

#include "core/gpu_runtime.hpp"

namespace gpubench {
namespace {

__global__ void copy_words(uint4* destination, const uint4* source, std::size_t words) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < words; i += stride)
    destination[i] = source[i];
}

}  // namespace

void sm_copy(void* destination, const void* source, std::size_t bytes, cudaStream_t stream) {
  constexpr std::size_t kWord = sizeof(uint4);
  if (bytes % kWord || reinterpret_cast<std::uintptr_t>(destination) % kWord ||
      reinterpret_cast<std::uintptr_t>(source) % kWord)
    throw std::invalid_argument("sm_copy needs 16-byte aligned pointers and a multiple of 16 bytes");
  const std::size_t words = bytes / kWord;
  constexpr int kThreads = 256;
  // Enough blocks for every multiprocessor to keep many 16-byte requests in flight across the
  // link (its latency is microseconds), no more than the words need.
  const std::size_t wanted = (words + kThreads - 1) / kThreads;
  const int blocks = static_cast<int>(std::min<std::size_t>(wanted, static_cast<std::size_t>(device_attribute(cudaDevAttrMultiProcessorCount)) * 8));
  if (blocks == 0) return;
  copy_words<<<blocks, kThreads, 0, stream>>>(static_cast<uint4*>(destination), static_cast<const uint4*>(source),
                                              words);
  CUDA_CHECK_LAUNCH();
}

}  // namespace gpubench
