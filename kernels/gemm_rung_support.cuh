// What several GEMM ladder rungs share (kernels/gemm_ladder.cuh): shared-memory addresses for PTX,
// the order in which blocks walk the tiles of C, and the checks behind a rung's unsupported(shape).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/cuda_check.hpp"
#include "core/operations.hpp"

namespace gpubench {

#ifdef __CUDACC__  // device code: the host-compiled tests include the rest
// The shared-memory address (the shared window's 32-bit offset) that PTX's shared-memory operands take.
__device__ inline std::uint32_t shared_address(const void* pointer) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(pointer));
}
#endif

struct GemmTile {
  int row = 0;  // in tiles of C
  int col = 0;
};

// The `index`-th tile of a tile_rows x tile_cols grid when blocks walk it in bands of `band_rows`
// tile rows, down each column of a band before the next column: the blocks resident at once then
// read a few row panels of A and column panels of B, which stay in L2, instead of all of B.
__host__ __device__ inline GemmTile banded_tile(int index, int tile_rows, int tile_cols, int band_rows) {
  const int band_tiles = band_rows * tile_cols;
  const int band = index / band_tiles;
  const int first_row = band * band_rows;
  const int rows = tile_rows - first_row < band_rows ? tile_rows - first_row : band_rows;  // the last band may be short
  const int within = index - band * band_tiles;
  return {first_row + within % rows, within / rows};
}

// Empty when this binary holds code of `kernel` that the current GPU runs (cudaFuncGetAttributes
// succeeds); otherwise why not. The failed query's error is cleared so the next launch check does
// not report it.
inline std::string kernel_image_missing(const void* kernel) {
  cudaFuncAttributes attributes{};
  const cudaError_t status = cudaFuncGetAttributes(&attributes, kernel);
  if (status == cudaSuccess) return "";
  cudaGetLastError();
  return std::string("this build has no code of the kernel for this GPU (") + cudaGetErrorString(status) + ")";
}

// cp.async and TMA copy 16-byte pieces of rows: every row of A (k halves) and of B (n halves) must
// start on a 16-byte boundary. Empty when the FP16 shape allows it; otherwise why not.
inline std::string fp16_rows_unaligned(MatmulShape s) {
  if (s.n % 8 == 0 && s.k % 8 == 0) return "";
  return "needs n and k multiples of 8 (16-byte rows of FP16 for its 16-byte copies); got n=" + std::to_string(s.n) +
         ", k=" + std::to_string(s.k);
}

// Lets `kernel` launch with `bytes` of dynamic shared memory (more than the default 48 KiB): needed
// before a launch and before an occupancy query at that size.
inline void allow_dynamic_shared_memory(const void* kernel, std::size_t bytes) {
  CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)));
}

}  // namespace gpubench
