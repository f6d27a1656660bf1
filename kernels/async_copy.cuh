// Asynchronous copies from global to shared memory (cp.async, compute capability 8.0 and newer): they
// bypass the registers and complete in the background while the threads compute, committed in groups
// and waited for by group.
#pragma once

#include <cuda_runtime.h>

namespace gpubench {

// Copies 4 bytes, through L1. Where !inside the destination gets zeros and nothing is read.
__device__ inline void async_copy_4(float* shared, const float* global, bool inside) {
  const unsigned address = static_cast<unsigned>(__cvta_generic_to_shared(shared));
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(address), "l"(global), "r"(inside ? 4 : 0)
               : "memory");
}

// Copies 16 bytes (both addresses 16-byte aligned), bypassing L1. Where !inside: zeros, nothing read.
__device__ inline void async_copy_16(void* shared, const void* global, bool inside) {
  const unsigned address = static_cast<unsigned>(__cvta_generic_to_shared(shared));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(address), "l"(global), "r"(inside ? 16 : 0)
               : "memory");
}

// Closes the group of this thread's copies started since the last commit (possibly none).
__device__ inline void async_copy_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }

// Waits until at most kPending of this thread's committed groups are still in flight; other threads'
// copies are visible after a barrier that follows.
template <int kPending>
__device__ inline void async_copy_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending) : "memory");
}

}  // namespace gpubench
