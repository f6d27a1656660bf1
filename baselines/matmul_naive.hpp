#pragma once
#include "core/operations.hpp"

namespace gpubench {
// The textbook triple loop, one thread: the floor every other implementation beats.
void matmul_naive_loop(const float* a, const float* b, float* c, MatmulShape shape);
}  // namespace gpubench
