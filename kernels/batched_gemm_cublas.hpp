#pragma once
#include "core/operations.hpp"

namespace gpubench {
// Three ways to run a batch of small products through cuBLAS (device pointers, results on
// the legacy default stream):
// one cublasSgemmStridedBatched call: the library schedules the whole batch at once;
void batched_gemm_cublas_strided(const float* a, const float* b, float* c, BatchedGemmShape shape);
// one cublasSgemm per product: what code that never heard of batching does; each call pays
// its launch;
void batched_gemm_cublas_loop(const float* a, const float* b, float* c, BatchedGemmShape shape);
// the same loop captured once into a CUDA graph and replayed: one launch for the batch,
// the kernels unchanged.
void batched_gemm_cublas_graph(const float* a, const float* b, float* c, BatchedGemmShape shape);
}  // namespace gpubench
