#include "launch_chain.cuh"

#include <string>

#include "core/cuda_check.hpp"
#include "core/gpu_runtime.hpp"

namespace gpubench {
namespace {

constexpr unsigned kThreads = 256;
constexpr unsigned kElementsPerThread = 4;  // 2^16 elements in 64 blocks: one wave, and few stamps per kernel
constexpr int kTimerSteps = 64;          // changes of the global timer the step is the smallest of
constexpr long long kTimerReads = 1 << 24;  // reads before giving up on a timer that does not move

__device__ inline unsigned long long global_time_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// Thread 0 of each block stamps its start before the block's work and its end after every thread of
// the block is done with it.
__device__ inline void stamp_start(KernelSpan* span) {
  if (threadIdx.x == 0) atomicMin(&span->start_ns, global_time_ns());
}
__device__ inline void stamp_end(KernelSpan* span) {
  __syncthreads();
  if (threadIdx.x == 0) atomicMax(&span->end_ns, global_time_ns());
}

__global__ void nothing() {}

__device__ inline std::size_t first_element() { return static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; }
__device__ inline std::size_t grid_threads() { return static_cast<std::size_t>(gridDim.x) * blockDim.x; }

__global__ void add_value(float* x, std::size_t n, float value, KernelSpan* span) {
  stamp_start(span);
  for (std::size_t i = first_element(); i < n; i += grid_threads()) x[i] += value;
  stamp_end(span);
}

__global__ void add_values(float* x, std::size_t n, const float* values, int steps, KernelSpan* span) {
  stamp_start(span);
  for (std::size_t i = first_element(); i < n; i += grid_threads()) {
    float element = x[i];
    for (int step = 0; step < steps; ++step) element += values[step];
    x[i] = element;
  }
  stamp_end(span);
}

__global__ void timer_step(unsigned long long* smallest) {
  unsigned long long last = global_time_ns(), best = 0;
  int changes = 0;
  for (long long read = 0; read < kTimerReads && changes < kTimerSteps; ++read) {
    const unsigned long long now = global_time_ns();
    if (now == last) continue;
    best = (changes == 0 || now - last < best) ? now - last : best;
    last = now;
    ++changes;
  }
  *smallest = best;
}

unsigned blocks_for(std::size_t n) {
  const std::size_t per_block = kThreads * kElementsPerThread;
  const std::size_t blocks = (n + per_block - 1) / per_block;
  if (blocks == 0 || blocks > 0x7FFFFFFFu)
    throw GpuError("launch chain: " + std::to_string(n) + " elements do not make one grid");
  return static_cast<unsigned>(blocks);
}

}  // namespace

void empty_kernel(cudaStream_t stream) {
  nothing<<<1, 1, 0, stream>>>();
  CUDA_CHECK_LAUNCH();
}

void add_value_kernel(float* x, std::size_t n, float value, KernelSpan* span, cudaStream_t stream) {
  add_value<<<blocks_for(n), kThreads, 0, stream>>>(x, n, value, span);
  CUDA_CHECK_LAUNCH();
}

void add_values_fused_kernel(float* x, std::size_t n, const float* values, int steps, KernelSpan* span,
                             cudaStream_t stream) {
  add_values<<<blocks_for(n), kThreads, 0, stream>>>(x, n, values, steps, span);
  CUDA_CHECK_LAUNCH();
}

double global_timer_step_s() {
  DeviceBuffer<unsigned long long> smallest(1);
  timer_step<<<1, 1>>>(smallest.get());
  CUDA_CHECK_LAUNCH();
  unsigned long long ns = 0;
  CUDA_CHECK(cudaMemcpy(&ns, smallest.get(), sizeof(ns), cudaMemcpyDeviceToHost));
  return static_cast<double>(ns) * 1e-9;
}

}  // namespace gpubench
