#pragma once
#include <cuda_runtime.h>

#include <cstddef>

namespace gpubench {
// y[i] = a * x[i] + y[i] for i < count, device pointers, enqueued on `stream` (the overlap
// study runs one chunk per call on its pipeline's streams). Each element is one fused
// multiply-add, rounded once, so std::fma on the host reproduces it bit for bit.
void saxpy_kernel(float a, const float* x, float* y, std::size_t count, cudaStream_t stream);
}  // namespace gpubench
