#pragma once
#include <cstddef>

#include "core/kernel_occupancy.hpp"

namespace gpubench {
// z[i] = x[i] + s * y[i] (one fused multiply-add, rounded once, as std::fma on the host) for i < n, in
// the textbook grid-stride loop on the grid `launch` gives: thread t takes elements t, t + (grid's
// threads), ..., one float each, so a warp's loads and stores are coalesced whatever the grid. Bound
// by device memory once the grid keeps enough loads in flight (the occupancy study's memory-bound
// kernel). Device pointers, the default stream.
void triad_grid_stride_kernel(const float* x, const float* y, float* z, std::size_t n, float s, LaunchShape launch);
// Its __global__ function, for the occupancy API (core/kernel_occupancy.hpp).
const void* triad_grid_stride_function();
}  // namespace gpubench
