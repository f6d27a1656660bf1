#include "matmul_cublas.hpp"

#include "core/cuda_check.hpp"
#include "cublas_handle.hpp"
#include "cublaslt_gemm.hpp"

namespace gpubench {

void matmul_cublaslt(const float* a, const float* b, float* c, MatmulShape s) {
  cublaslt_gemm(Precision::fp32, s, CublasLtAlignment::of(a, b, c)).run(a, b, c, nullptr);
}

void matmul_cublas(const float* a, const float* b, float* c, MatmulShape s) {
  // cuBLAS is column-major: a row-major C = A*B is the column-major C^T = B^T * A^T, so
  // passing B first with swapped dimensions computes it without any transpose.
  const float alpha = 1.0f, beta = 0.0f;
  CUBLAS_CHECK(cublasSgemm(cublas_handle(), CUBLAS_OP_N, CUBLAS_OP_N, s.n, s.m, s.k, &alpha, b, s.n,
                           a, s.k, &beta, c, s.n));
}

}  // namespace gpubench
