#pragma once
#include <cstddef>

#include "core/operations.hpp"

namespace gpubench {
// c = a + b, one thread per element in blocks of 256 (as many blocks as the vector needs): the
// kernel is bound by device memory, each element read and written once, coalesced.
void vector_add_kernel(const float* a, const float* b, float* c, std::size_t count);
// The guide's first CUDA program, one block with one thread per element. A block holds at most
// 1024 threads, so past 1024 elements the one block of 1024 threads strides over the vector (thread t
// adds elements t, t + 1024, ...): one multiprocessor does all the work.
void vector_add_one_block(const float* a, const float* b, float* c, std::size_t count);
}  // namespace gpubench
