#include "batched_gemm_cpu.hpp"

#include <cblas.h>
#include <omp.h>

#include <algorithm>

namespace gpubench {
namespace {

void one_product(const float* a, const float* b, float* c, int n) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n);
}

// The two implementations want different OpenBLAS thread counts. Each states its own and it
// is set only when it differs: once, in the first (untimed) call after the other one ran;
// every later call reads an integer. Setting it in every call timed the setting (tens of us,
// beside a 32x32 product's half microsecond).
void use_openblas_threads(int threads) {
  if (openblas_get_num_threads() != threads) openblas_set_num_threads(threads);
}

// Read at load, before anything here changes the count.
const int kOpenblasThreadsAtStart = openblas_get_num_threads();

}  // namespace

int openblas_threads_at_start() { return kOpenblasThreadsAtStart; }

void batched_gemm_openblas_loop(const float* a, const float* b, float* c, BatchedGemmShape s) {
  use_openblas_threads(openblas_threads_at_start());
  for (int i = 0; i < s.batch; ++i) one_product(a + i * s.stride(), b + i * s.stride(), c + i * s.stride(), s.n);
}

// No more threads than products: a thread without a product would only be woken to wait
// (batch 1 runs on the calling thread alone). The threads that do get products sleep between
// calls (the driver's OMP_WAIT_POLICY=passive) and waking them is part of what this method
// costs per call. Letting them spin instead (GOMP_SPINCOUNT, read once at start-up, so for
// the whole binary, not per entry) was not taken: spinning OpenMP threads compete with
// OpenBLAS's own pthreads, which spin too, and on the shared 2-core CI machine a batch of two
// 32x32 products went from 13.7 us to 3 ms with GOMP_SPINCOUNT=300000.
void batched_gemm_threads_over_batch(const float* a, const float* b, float* c, BatchedGemmShape s) {
  use_openblas_threads(1);
  const int threads = std::min(s.batch, omp_get_max_threads());
#pragma omp parallel for schedule(static) num_threads(threads)
  for (int i = 0; i < s.batch; ++i) one_product(a + i * s.stride(), b + i * s.stride(), c + i * s.stride(), s.n);
}

}  // namespace gpubench
