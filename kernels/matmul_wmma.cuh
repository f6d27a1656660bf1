#pragma once
#include "core/precision.hpp"
#include "gemm_ladder.cuh"

namespace gpubench {
// Our tensor-core GEMM: FP16 A (m x k) and B (k x n), row-major, FP32 accumulate, FP16
// output (as cuBLAS's FP16 entry writes it), through the WMMA API. Each 256-thread block computes a 128x128 tile of C from
// 32-deep slices of A and B that cp.async double-buffers in shared memory; each warp owns
// 64x32 of the tile (4x2 fragments of 16x16). Any shape; sizes that are multiples of 8
// take 16-byte asynchronous copies, others a guarded element-wise load.
void matmul_wmma_fp16(const void* a, const void* b, void* c, MatmulShape shape);
// How matmul_wmma_fp16 launches at `shape` (the kernel it picks, its block, grid and tiling): the
// tensor-core ladder's first rung (hgemm_01_wmma) reports it.
GemmLaunch matmul_wmma_fp16_launch(MatmulShape shape);

// The precision study's signature (FP16 only).
void gemm_wmma_precision(Precision precision, const void* a, const void* b, void* c, MatmulShape shape,
                         const float* dequant);
}  // namespace gpubench
