#pragma once
#include <cuda_runtime.h>

#include <cstddef>

namespace gpubench {
// A copy done by the multiprocessors instead of a copy engine: each thread moves 16-byte
// words in a grid-stride loop. With `source` or `destination` a device pointer to mapped
// pinned host memory (zero-copy), the loads or stores cross the PCIe link as the kernel runs.
// With one of them another GPU's memory (peer access enabled), they cross the GPUs' link.
// Both pointers 16-byte aligned; `bytes` a multiple of 16. Enqueued on `stream`.
void sm_copy(void* destination, const void* source, std::size_t bytes, cudaStream_t stream);
}  // namespace gpubench
