#include "matmul_openblas.hpp"

#include <cblas.h>

namespace gpubench {

void matmul_openblas(const float* a, const float* b, float* c, MatmulShape s) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, s.m, s.n, s.k, 1.0f, a, s.k, b, s.n,
              0.0f, c, s.n);
}

}  // namespace gpubench
