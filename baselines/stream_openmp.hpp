#pragma once
#include "core/operations.hpp"

namespace gpubench {
// STREAM's kernels as OpenMP loops over all the host's threads: schedule(static), each thread one
// contiguous share of the elements (the share whose pages it first wrote, core/first_touch.hpp),
// vectorised by the compiler; dot sums each thread's share in the element type, then the shares.
void stream_openmp(StreamOp op, const float* x, const float* y, float* z, std::size_t n, float scalar);
void stream_openmp(StreamOp op, const double* x, const double* y, double* z, std::size_t n, double scalar);
}  // namespace gpubench
