// RAII owners for device and pinned host memory, and a CUDA-event timer: no GPU study
// leaks memory when an entry fails half-way.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <memory>
#include <vector>

#include "core/cuda_check.hpp"

namespace gpubench {

template <typename T>
class DeviceBuffer {
 public:
  explicit DeviceBuffer(std::size_t count) : count_(count) {
    CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&data_), bytes()));
  }
  ~DeviceBuffer() { cudaFree(data_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  T* get() const { return data_; }
  std::size_t bytes() const { return count_ * sizeof(T); }

 private:
  std::size_t count_;
  T* data_ = nullptr;
};

// Page-locked host memory (cudaMallocHost): the copy engines read and write it directly.
template <typename T>
class PinnedBuffer {
 public:
  explicit PinnedBuffer(std::size_t count) : count_(count) {
    CUDA_CHECK(cudaMallocHost(reinterpret_cast<void**>(&data_), bytes()));
  }
  ~PinnedBuffer() { cudaFreeHost(data_); }
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;

  T* get() const { return data_; }
  std::size_t bytes() const { return count_ * sizeof(T); }

 private:
  std::size_t count_;
  T* data_ = nullptr;
};

// A pinned copy of `values`: what a transfer mode's timed calls copy in from.
template <typename T>
std::unique_ptr<PinnedBuffer<T>> pinned_copy_of(const std::vector<T>& values) {
  auto pinned = std::make_unique<PinnedBuffer<T>>(values.size());
  std::copy(values.begin(), values.end(), pinned->get());
  return pinned;
}

// Times work on the legacy default stream between start() and stop() with CUDA events,
// so the time is the GPU's, not the host's launch loop.
class EventTimer {
 public:
  EventTimer() {
    CUDA_CHECK(cudaEventCreate(&start_));
    CUDA_CHECK(cudaEventCreate(&stop_));
  }
  ~EventTimer() {
    cudaEventDestroy(start_);
    cudaEventDestroy(stop_);
  }
  EventTimer(const EventTimer&) = delete;
  EventTimer& operator=(const EventTimer&) = delete;

  void start() { CUDA_CHECK(cudaEventRecord(start_, 0)); }
  void stop() { CUDA_CHECK(cudaEventRecord(stop_, 0)); }
  // Waits for the stop event, calling `poll` while the work runs (the timed loop reads NVML's
  // energy counter so), and returns the seconds between the two events.
  template <typename Poll>
  double wait_seconds(Poll&& poll) {
    while (true) {
      const cudaError_t status = cudaEventQuery(stop_);
      if (status == cudaSuccess) break;
      if (status != cudaErrorNotReady) CUDA_CHECK(status);
      poll();
    }
    float ms = 0;
    CUDA_CHECK(cudaEventElapsedTime(&ms, start_, stop_));
    return ms * 1e-3;
  }
  double wait_seconds() {
    CUDA_CHECK(cudaEventSynchronize(stop_));
    return wait_seconds([] {});
  }
  // stop(), then waits for the work and returns its duration in seconds.
  double stop_seconds() {
    stop();
    return wait_seconds();
  }

 private:
  cudaEvent_t start_ = nullptr;
  cudaEvent_t stop_ = nullptr;
};

// An attribute of the current device (multiprocessors, copy engines, ...).
int device_attribute(cudaDeviceAttr attribute);

// Free device memory now, for checking that a configuration fits before allocating it.
std::size_t device_free_bytes();

// Throws GpuOutOfMemory (a skip, with both figures in its message) unless `operand_bytes`
// plus room for library workspaces and the context's own allocations are free; returns
// the free bytes it saw.
double require_device_memory(double operand_bytes);

}  // namespace gpubench
