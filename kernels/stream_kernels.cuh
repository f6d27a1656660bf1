#pragma once
#include <cstddef>

#include "core/operations.hpp"

namespace gpubench {
// Our STREAM kernels (core/operations.hpp's StreamFn: device pointers, 16-byte aligned, the
// default stream), each thread moving 16-byte vectors (float4, double2) and the elements past the
// last whole vector one by one:
//   grid_stride: as many blocks as the GPU holds at once, each thread striding over the arrays;
//   one_per_thread: one vector per thread, as many blocks as the arrays need.
// triad is one fmaf/fma per element. dot: each block sums its products (in the element type,
// warp shuffles, then across the warps) and writes its sum to z[1 + block]; the last block to finish
// adds those into z[0] (a single block writes z[0] itself). The grid-stride dot runs blocks of 1024
// threads, two vectors of each array in flight per thread; both dots read with streaming loads.
void stream_grid_stride(StreamOp op, const float* x, const float* y, float* z, std::size_t n, float scalar);
void stream_grid_stride(StreamOp op, const double* x, const double* y, double* z, std::size_t n, double scalar);
void stream_one_per_thread(StreamOp op, const float* x, const float* y, float* z, std::size_t n, float scalar);
void stream_one_per_thread(StreamOp op, const double* x, const double* y, double* z, std::size_t n, double scalar);
}  // namespace gpubench
