// Rung 1: the launch of a well-known profiling walk-through, 16 blocks of 128 threads, running the
// naive kernel in a grid-stride loop over C: 2048 threads for the whole matrix, whatever its size.
#include "core/kernel_occupancy.hpp"
#include "gemm_ladder.cuh"
#include "matmul_naive.cuh"

namespace gpubench {
namespace {

constexpr LaunchShape kWalkThroughLaunch{16, 128};

void run(const void* a, const void* b, void* c, MatmulShape s) {
  matmul_naive_grid_stride_kernel(static_cast<const float*>(a), static_cast<const float*>(b), static_cast<float*>(c),
                                  s, kWalkThroughLaunch);
}

GemmLaunch launch(MatmulShape) {
  return {matmul_naive_grid_stride_function(), static_cast<int>(kWalkThroughLaunch.threads_per_block), 0,
          kWalkThroughLaunch.blocks, "grid-stride loop over C, 16 blocks x 128 threads, 1 element per thread per pass"};
}

std::string unsupported(MatmulShape) { return {}; }

}  // namespace

GemmRung sgemm_01_naive_16x128() { return {run, launch, unsupported}; }

}  // namespace gpubench
