#include "vector_add.cuh"

#include <string>

#include "core/cuda_check.hpp"

namespace gpubench {
namespace {

constexpr unsigned kThreads = 256;
constexpr unsigned kBlockLimit = 1024;  // threads one block may hold

__global__ void add_one_per_thread(const float* a, const float* b, float* c, std::size_t count) {
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < count) c[i] = a[i] + b[i];
}

__global__ void add_block_stride(const float* a, const float* b, float* c, std::size_t count) {
  for (std::size_t i = threadIdx.x; i < count; i += blockDim.x) c[i] = a[i] + b[i];
}

}  // namespace

void vector_add_kernel(const float* a, const float* b, float* c, std::size_t count) {
  if (count == 0) return;  // a grid of zero blocks is a launch error
  const std::size_t blocks = (count + kThreads - 1) / kThreads;
  if (blocks > 0x7FFFFFFFu)
    throw GpuError("vector_add_kernel: " + std::to_string(count) + " elements exceed one grid");
  add_one_per_thread<<<static_cast<unsigned>(blocks), kThreads>>>(a, b, c, count);
  CUDA_CHECK_LAUNCH();
}

void vector_add_one_block(const float* a, const float* b, float* c, std::size_t count) {
  if (count == 0) return;
  const unsigned threads = count < kBlockLimit ? static_cast<unsigned>(count) : kBlockLimit;
  add_block_stride<<<1, threads>>>(a, b, c, count);
  CUDA_CHECK_LAUNCH();
}

}  // namespace gpubench
