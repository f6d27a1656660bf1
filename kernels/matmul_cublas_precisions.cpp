#include "matmul_cublas_precisions.hpp"

#include "cublaslt_gemm.hpp"

namespace gpubench {

void gemm_cublas_precision(Precision precision, const void* a, const void* b, void* c, MatmulShape s,
                           const float* dequant) {
  cublaslt_gemm(precision, s, CublasLtAlignment::of(a, b, c), dequant).run(a, b, c, dequant);
}

}  // namespace gpubench
