#include "batched_gemm_cpu.hpp"

#include <cblas.h>

namespace gpubench {
namespace {

void one_product(const float* a, const float* b, float* c, int n) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n);
}

// Restores OpenBLAS's thread count however the scope is left.
class OpenblasThreads {
 public:
  explicit OpenblasThreads(int threads) : previous_(openblas_get_num_threads()) { openblas_set_num_threads(threads); }
  ~OpenblasThreads() { openblas_set_num_threads(previous_); }
  OpenblasThreads(const OpenblasThreads&) = delete;
  OpenblasThreads& operator=(const OpenblasThreads&) = delete;

 private:
  int previous_;
};

}  // namespace

void batched_gemm_openblas_loop(const float* a, const float* b, float* c, BatchedGemmShape s) {
  for (int i = 0; i < s.batch; ++i) one_product(a + i * s.stride(), b + i * s.stride(), c + i * s.stride(), s.n);
}

void batched_gemm_threads_over_batch(const float* a, const float* b, float* c, BatchedGemmShape s) {
  const OpenblasThreads single(1);
#pragma omp parallel for schedule(static)
  for (int i = 0; i < s.batch; ++i) one_product(a + i * s.stride(), b + i * s.stride(), c + i * s.stride(), s.n);
}

}  // namespace gpubench
