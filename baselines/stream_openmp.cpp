#include "stream_openmp.hpp"

#include <cmath>

namespace gpubench {
namespace {

// One loop per operation, so each compiles to its own vectorised loop; triad's std::fma is the
// fused multiply-add every implementation computes (vfmadd with -march=native).
template <typename T>
void run(StreamOp op, const T* __restrict x, const T* __restrict y, T* __restrict z, std::size_t n, T scalar) {
  const long count = static_cast<long>(n);
  switch (op) {
    case StreamOp::copy:
#pragma omp parallel for simd schedule(static)
      for (long i = 0; i < count; ++i) z[i] = x[i];
      return;
    case StreamOp::scale:
#pragma omp parallel for simd schedule(static)
      for (long i = 0; i < count; ++i) z[i] = scalar * x[i];
      return;
    case StreamOp::add:
#pragma omp parallel for simd schedule(static)
      for (long i = 0; i < count; ++i) z[i] = x[i] + y[i];
      return;
    case StreamOp::triad:
#pragma omp parallel for simd schedule(static)
      for (long i = 0; i < count; ++i) z[i] = std::fma(scalar, y[i], x[i]);
      return;
    case StreamOp::dot: {
      T sum = 0;
#pragma omp parallel for simd schedule(static) reduction(+ : sum)
      for (long i = 0; i < count; ++i) sum += x[i] * y[i];
      z[0] = sum;
      return;
    }
  }
}

}  // namespace

void stream_openmp(StreamOp op, const float* x, const float* y, float* z, std::size_t n, float scalar) {
  run(op, x, y, z, n, scalar);
}

void stream_openmp(StreamOp op, const double* x, const double* y, double* z, std::size_t n, double scalar) {
  run(op, x, y, z, n, scalar);
}

}  // namespace gpubench
