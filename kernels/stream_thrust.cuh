#pragma once
#include <cstddef>

#include "core/operations.hpp"

namespace gpubench {
// STREAM's kernels as Thrust writes them (core/operations.hpp's StreamFn, device pointers):
// thrust::transform for copy, scale, add and triad (triad's functor one fused multiply-add), on
// the legacy default stream with thrust::cuda::par_nosync (enqueued, not waited for, as a kernel
// launch is); dot is thrust::inner_product, which returns its sum to the host (it waits for the
// device and allocates Thrust's temporary storage on each call), copied into z[0].
void stream_thrust(StreamOp op, const float* x, const float* y, float* z, std::size_t n, float scalar);
void stream_thrust(StreamOp op, const double* x, const double* y, double* z, std::size_t n, double scalar);
}  // namespace gpubench
