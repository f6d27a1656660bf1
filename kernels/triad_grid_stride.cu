#include "triad_grid_stride.cuh"

#include "core/cuda_check.hpp"

namespace gpubench {
namespace {

__global__ void triad_grid_stride(const float* __restrict__ x, const float* __restrict__ y, float* __restrict__ z,
                                  std::size_t n, float s) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    z[i] = fmaf(s, y[i], x[i]);
}

}  // namespace

void triad_grid_stride_kernel(const float* x, const float* y, float* z, std::size_t n, float s, LaunchShape launch) {
  triad_grid_stride<<<launch.blocks, launch.threads_per_block>>>(x, y, z, n, s);
  CUDA_CHECK_LAUNCH();
}

const void* triad_grid_stride_function() { return reinterpret_cast<const void*>(&triad_grid_stride); }

}  // namespace gpubench
