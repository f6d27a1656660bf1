#include "saxpy.cuh"

#include "core/cuda_check.hpp"

namespace gpubench {
namespace {

constexpr unsigned kThreads = 256;

// One element per thread: the kernel is bound by memory bandwidth, and consecutive threads
// touching consecutive elements coalesce.
__global__ void saxpy(float a, const float* x, float* y, std::size_t count) {
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < count) y[i] = fmaf(a, x[i], y[i]);
}

}  // namespace

void saxpy_kernel(float a, const float* x, float* y, std::size_t count, cudaStream_t stream) {
  if (count == 0) return;  // a grid of zero blocks is a launch error
  const std::size_t blocks = (count + kThreads - 1) / kThreads;
  if (blocks > 0x7FFFFFFFu) throw GpuError("saxpy_kernel: " + std::to_string(count) + " elements exceed one grid");
  saxpy<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(a, x, y, count);
  CUDA_CHECK_LAUNCH();
}

}  // namespace gpubench
