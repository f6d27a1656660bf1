#include "vector_add_cpu.hpp"

namespace gpubench {

void vector_add_loop(const float* a, const float* b, float* c, std::size_t count) {
  for (std::size_t i = 0; i < count; ++i) c[i] = a[i] + b[i];
}

void vector_add_parallel(const float* a, const float* b, float* c, std::size_t count) {
#pragma omp parallel for schedule(static)
  for (std::size_t i = 0; i < count; ++i) c[i] = a[i] + b[i];
}

}  // namespace gpubench
