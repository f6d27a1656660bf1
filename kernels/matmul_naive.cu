#include "matmul_naive.cuh"

#include "core/cuda_check.hpp"

namespace gpubench {
namespace {

__global__ void matmul_naive(const float* a, const float* b, float* c, MatmulShape s) {
  const int col = blockIdx.x * blockDim.x + threadIdx.x;
  const int row = blockIdx.y * blockDim.y + threadIdx.y;
  if (row >= s.m || col >= s.n) return;
  float sum = 0.0f;
  for (int p = 0; p < s.k; ++p) {
    sum += a[static_cast<size_t>(row) * s.k + p] * b[static_cast<size_t>(p) * s.n + col];
  }
  c[static_cast<size_t>(row) * s.n + col] = sum;
}

}  // namespace

void matmul_naive_kernel(const float* a, const float* b, float* c, MatmulShape s) {
  const dim3 block(32, 8);
  const dim3 grid((s.n + block.x - 1) / block.x, (s.m + block.y - 1) / block.y);
  matmul_naive<<<grid, block>>>(a, b, c, s);
  CUDA_CHECK_LAUNCH();
}

}  // namespace gpubench
