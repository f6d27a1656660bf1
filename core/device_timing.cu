#include "core/device_timing.hpp"

#include <cuda_runtime.h>

#include <atomic>

#include "core/cuda_check.hpp"

namespace gpubench {
namespace {

// Long enough for the host to enqueue a sample's calls, short enough that a call which waits for
// the device (and so could never be enqueued behind the hold) costs little before it is noticed.
constexpr unsigned long long kHoldTimeoutNs = 20'000'000;

__device__ unsigned long long global_time_ns() {
  unsigned long long now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  return now;
}

__global__ void hold_kernel(const volatile int* release, volatile int* timed_out, unsigned long long timeout_ns) {
  const unsigned long long start = global_time_ns();
  while (!*release) {
    if (global_time_ns() - start > timeout_ns) {
      *timed_out = 1;
      return;
    }
  }
}

volatile int* mapped_flag() {
  void* flag = nullptr;
  CUDA_CHECK(cudaHostAlloc(&flag, sizeof(int), cudaHostAllocMapped));
  *static_cast<volatile int*>(flag) = 0;
  return static_cast<volatile int*>(flag);
}

}  // namespace

StreamHold::StreamHold() : release_flag_(mapped_flag()), timed_out_flag_(mapped_flag()) {}

StreamHold::~StreamHold() {
  cudaFreeHost(const_cast<int*>(release_flag_));
  cudaFreeHost(const_cast<int*>(timed_out_flag_));
}

void StreamHold::hold() {
  *release_flag_ = 0;
  *timed_out_flag_ = 0;
  std::atomic_thread_fence(std::memory_order_seq_cst);
  hold_kernel<<<1, 1>>>(release_flag_, timed_out_flag_, kHoldTimeoutNs);
  CUDA_CHECK(cudaGetLastError());
}

void StreamHold::release() {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  *release_flag_ = 1;
}

bool StreamHold::timed_out() const { return *timed_out_flag_ != 0; }

L2Flush::L2Flush() {
  int device = 0, bytes = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  CUDA_CHECK(cudaDeviceGetAttribute(&bytes, cudaDevAttrL2CacheSize, device));
  l2_bytes_ = static_cast<std::size_t>(bytes);
  if (l2_bytes_ > 0) CUDA_CHECK(cudaMalloc(&buffer_, 2 * l2_bytes_));
}

L2Flush::~L2Flush() { cudaFree(buffer_); }

void L2Flush::flush() {
  if (buffer_) CUDA_CHECK(cudaMemsetAsync(buffer_, ++value_ & 0xff, 2 * l2_bytes_, 0));
}

}  // namespace gpubench
