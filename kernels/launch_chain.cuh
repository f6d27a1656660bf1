#pragma once
#include <cuda_runtime.h>

#include <cstddef>

namespace gpubench {
// The launch_overhead study's kernels, each enqueued on `stream`.

// When a kernel ran on the device, on the GPU's global timer (%globaltimer, nanoseconds): the earliest
// start of any of its blocks and the latest end. Reset to kUnstamped before the kernel runs.
struct KernelSpan {
  unsigned long long start_ns;
  unsigned long long end_ns;
};
constexpr KernelSpan kUnstamped = {~0ull, 0ull};

// A kernel of one thread that does nothing: what a launch costs by itself.
void empty_kernel(cudaStream_t stream);
// x[i] += value for i < n (one rounded FP32 addition), blocks of 256 threads each adding to 4 elements
// (a grid-stride loop: 2^16 elements in 64 blocks, one wave on any current GPU, so few blocks stamp the
// span); `span` receives the kernel's span.
void add_value_kernel(float* x, std::size_t n, float value, KernelSpan* span, cudaStream_t stream);
// The same for values[0], values[1], ..., values[steps - 1] (device memory) in that order, in one kernel:
// each thread keeps its element in a register between the additions, so the result is the chain's bit for bit.
void add_values_fused_kernel(float* x, std::size_t n, const float* values, int steps, KernelSpan* span,
                             cudaStream_t stream);
// The smallest step of the global timer one thread sees while reading it (seconds; 0 when it did not
// move): how finely a KernelSpan is resolved.
double global_timer_step_s();
}  // namespace gpubench
