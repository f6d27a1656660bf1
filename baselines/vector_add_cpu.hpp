#pragma once
#include <cstddef>

#include "core/operations.hpp"

namespace gpubench {
// c = a + b on one thread: the loop a first program writes (the compiler vectorizes it).
void vector_add_loop(const float* a, const float* b, float* c, std::size_t count);
// The same loop split over all OpenMP threads in schedule(static): each thread adds the share whose
// pages it first wrote (core/first_touch.hpp places them in that split).
void vector_add_parallel(const float* a, const float* b, float* c, std::size_t count);
}  // namespace gpubench
