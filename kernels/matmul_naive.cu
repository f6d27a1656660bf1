#include "matmul_naive.cuh"

#include "core/cuda_check.hpp"
#include "gemm_naive_element.cuh"

namespace gpubench {
namespace {

__global__ void matmul_naive(const float* a, const float* b, float* c, MatmulShape s) {
  const int col = blockIdx.x * blockDim.x + threadIdx.x;
  const int row = blockIdx.y * blockDim.y + threadIdx.y;
  if (row >= s.m || col >= s.n) return;
  c[static_cast<size_t>(row) * s.n + col] = naive_element(a, b, s, row, col);
}

// Thread t of the grid computes elements t, t + (grid's threads), ... of C in row-major order:
// consecutive threads take consecutive columns of a row.
__global__ void matmul_naive_grid_stride(const float* a, const float* b, float* c, MatmulShape s) {
  const size_t elements = static_cast<size_t>(s.m) * s.n;
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < elements; i += stride) {
    c[i] = naive_element(a, b, s, static_cast<int>(i / s.n), static_cast<int>(i % s.n));
  }
}

}  // namespace

void matmul_naive_kernel(const float* a, const float* b, float* c, MatmulShape s) {
  const dim3 block(32, 8);
  const dim3 grid((s.n + block.x - 1) / block.x, (s.m + block.y - 1) / block.y);
  matmul_naive<<<grid, block>>>(a, b, c, s);
  CUDA_CHECK_LAUNCH();
}

void matmul_naive_grid_stride_kernel(const float* a, const float* b, float* c, MatmulShape s, LaunchShape launch) {
  matmul_naive_grid_stride<<<launch.blocks, launch.threads_per_block>>>(a, b, c, s);
  CUDA_CHECK_LAUNCH();
}

const void* matmul_naive_grid_stride_function() { return reinterpret_cast<const void*>(&matmul_naive_grid_stride); }

}  // namespace gpubench
