#include "core/gpu_runtime.hpp"

#include "core/system.hpp"

namespace gpubench {

int device_attribute(cudaDeviceAttr attribute) {
  int device = 0, value = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  CUDA_CHECK(cudaDeviceGetAttribute(&value, attribute, device));
  return value;
}

std::size_t device_free_bytes() {
  std::size_t free_bytes = 0, total_bytes = 0;
  CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  return free_bytes;
}

double require_device_memory(double operand_bytes) {
  constexpr double kHeadroom = 512.0 * 1024 * 1024;
  const double needed = operand_bytes + kHeadroom;
  const double free_bytes = static_cast<double>(device_free_bytes());
  if (needed > free_bytes)
    throw GpuOutOfMemory("needs about " + format_bytes(needed) + " of GPU memory, " + format_bytes(free_bytes) +
                         " free");
  return free_bytes;
}

}  // namespace gpubench
