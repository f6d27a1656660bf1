#include "core/system.hpp"

#include <charconv>
#include <cstdio>
#include <fstream>
#include <sstream>

#if GPUBENCH_HAVE_CUDA
#include <cuda_runtime.h>
#endif

namespace gpubench {

std::size_t host_memory_available_bytes() {
  std::ifstream meminfo("/proc/meminfo");
  std::string line;
  while (std::getline(meminfo, line)) {
    std::istringstream fields(line);
    std::string key;
    std::size_t kib = 0;
    if (fields >> key >> kib && key == "MemAvailable:") return kib * 1024;
  }
  return 0;
}

// The kernel driver's version file: present wherever an NVIDIA driver is loaded.
constexpr const char* kNvidiaDriverVersion = "/proc/driver/nvidia/version";

std::string gpu_unavailable_reason() {
#if GPUBENCH_HAVE_CUDA
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    // Without a driver the runtime says its driver is "insufficient": say what the machine lacks.
    if (!std::ifstream(kNvidiaDriverVersion)) return "no NVIDIA GPU driver is loaded on this machine (no GPU to measure)";
    return std::string("no usable CUDA device: ") + cudaGetErrorName(status) + " (" +
           cudaGetErrorString(status) + ")";
  }
  if (count == 0) return "no CUDA device found";
  return "";
#else
  return "this build has no GPU side (no CUDA compiler was found when it was configured)";
#endif
}

std::string format_number(double value) {
  char text[32];
  const auto written = std::to_chars(text, text + sizeof text, value);  // shortest round trip
  return std::string(text, written.ptr);
}

std::string format_bytes(double bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f GiB", bytes / (1024.0 * 1024.0 * 1024.0));
  return text;
}

}  // namespace gpubench
