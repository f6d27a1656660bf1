// The rungs of the GEMM ladders (the gemm_ladder study): hand-written kernels from a naive launch
// to the library's speed, one numbered file per rung (kernels/sgemm_NN_*.cu, kernels/hgemm_NN_*.cu),
// each one step past the rung before it. Every rung computes C = A*B, all row-major and contiguous,
// on device pointers, on the legacy default stream:
//   sgemm rungs: FP32 A, B and C, FP32 arithmetic on the CUDA cores;
//   hgemm rungs: FP16 A and B (binary16 bits), FP32 accumulation on the tensor cores, FP16 C
//                (as the precision study's cuBLAS FP16 entry writes it).
// A new rung: one file here, one line below, one row in bench/gemm_ladder.cpp, a paragraph in
// docs/gemm-ladder.md.
#pragma once

#include <cstddef>
#include <string>

#include "core/operations.hpp"

namespace gpubench {

// How a rung launches at a shape: its main kernel (a __global__ function's address, for the
// occupancy API), threads per block, dynamic shared memory per block, the grid's blocks, and its tiling.
struct GemmLaunch {
  const void* kernel = nullptr;
  int threads_per_block = 0;
  std::size_t dynamic_shared_bytes = 0;
  unsigned long long blocks = 0;
  std::string tile;  // the tiling in words, e.g. "block 128x128x16, warp 64x32, thread 8x4, 2 stages"
};

struct GemmRung {
  void (*run)(const void* a, const void* b, void* c, MatmulShape shape) = nullptr;
  GemmLaunch (*launch)(MatmulShape shape) = nullptr;
  // Empty where the rung runs at `shape` on the current GPU and in this build; otherwise why not
  // (a size that is not a multiple of its tile, an architecture it was not built for): the study
  // skips the entry with that reason instead of timing a wrong or failing call.
  std::string (*unsupported)(MatmulShape shape) = nullptr;
};

// The FP32 ladder, in order.
GemmRung sgemm_01_naive_16x128();
GemmRung sgemm_02_naive_full_grid();
GemmRung sgemm_03_coalesced();
GemmRung sgemm_04_shared_tiles();
GemmRung sgemm_05_blocktile_1d();
GemmRung sgemm_06_blocktile_2d();
GemmRung sgemm_07_vectorized();
GemmRung sgemm_08_cp_async();
GemmRung sgemm_09_warptile();
GemmRung sgemm_10_autotuned();

// The tensor-core ladder (FP16 in, FP32 accumulate), in order.
GemmRung hgemm_01_wmma();
GemmRung hgemm_02_mma_sync();
GemmRung hgemm_03_wgmma();

}  // namespace gpubench
