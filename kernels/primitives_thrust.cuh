#pragma once
#include "core/operations.hpp"

namespace gpubench {
// The primitives of core/operations.hpp in Thrust (device pointers, the legacy default stream):
// thrust::reduce, inclusive_scan, sort, sort_by_key and transform.

// As Thrust is usually called, with thrust::device: each call allocates its temporary storage with
// cudaMalloc and frees it with cudaFree, which waits for the whole device, and each algorithm
// synchronises before it returns; reduce brings its sum to the host through one more copy.
PrimitiveFunctions thrust_primitives();

// The same calls with thrust::cuda::par(allocator), the allocator a cache of device blocks kept
// across calls: a call takes its temporary storage from blocks an earlier call of the same needs
// left there (cudaMalloc only when none fits), and still synchronises as thrust::device does.
// transform, which needs no temporary storage, has none of its own.
PrimitiveFunctions thrust_cached_primitives();
// What those calls asked the cache for since the last release (requests, bytes asked for, and how
// many went on to cudaMalloc).
TemporaryStorageUse thrust_cache_use();
// Frees every block of the cache (cudaFree, which waits for the device) and zeroes its use.
void thrust_cache_release();
}  // namespace gpubench
