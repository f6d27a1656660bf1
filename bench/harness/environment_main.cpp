// gpubench_env: prints, as JSON, what the C++ side of this build sees of the machine and
// its libraries. The driver adds what it reads from the OS and nvidia-smi.
#include <cblas.h>
#include <omp.h>

#include <iostream>
#include <sstream>
#include <string>
#include <thread>

#include "core/json.hpp"
#include "core/system.hpp"

#if GPUBENCH_HAVE_CUDA
#include <cublas_v2.h>
#include <cuda_runtime.h>
#endif

namespace gpubench {
namespace {

std::string openblas_json() {
  std::ostringstream out;
  out << "{\"config\": " << json_string(openblas_get_config())
      << ", \"core\": " << json_string(openblas_get_corename())
      << ", \"threads\": " << openblas_get_num_threads()
      << ", \"parallel\": " << openblas_get_parallel() << "}";
  return out.str();
}

#if GPUBENCH_HAVE_CUDA
std::string version_string(int encoded) {  // CUDA encodes 12.4 as 12040
  return std::to_string(encoded / 1000) + "." + std::to_string((encoded % 1000) / 10);
}

std::string cublas_version() {
  int major = 0, minor = 0, patch = 0;
  if (cublasGetProperty(MAJOR_VERSION, &major) != CUBLAS_STATUS_SUCCESS ||
      cublasGetProperty(MINOR_VERSION, &minor) != CUBLAS_STATUS_SUCCESS ||
      cublasGetProperty(PATCH_LEVEL, &patch) != CUBLAS_STATUS_SUCCESS) {
    return "unknown";
  }
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

std::string device_json(int index) {
  cudaDeviceProp p{};
  if (cudaGetDeviceProperties(&p, index) != cudaSuccess) return "null";
  char bus_id[32];
  std::snprintf(bus_id, sizeof bus_id, "%08x:%02x:%02x.0", p.pciDomainID, p.pciBusID, p.pciDeviceID);
  std::ostringstream out;
  out << "{\"index\": " << index << ", \"name\": " << json_string(p.name)
      << ", \"compute_capability\": \"" << p.major << "." << p.minor << "\""
      << ", \"multiprocessors\": " << p.multiProcessorCount
      << ", \"memory_bytes\": " << p.totalGlobalMem
      << ", \"l2_cache_bytes\": " << p.l2CacheSize
      << ", \"memory_bus_width_bits\": " << p.memoryBusWidth
      << ", \"shared_memory_per_block_optin_bytes\": " << p.sharedMemPerBlockOptin
      << ", \"ecc_enabled\": " << (p.ECCEnabled ? "true" : "false")
      << ", \"pci_bus_id\": " << json_string(bus_id) << "}";
  return out.str();
}

std::string cuda_json() {
  int runtime = 0, driver = 0, count = 0;
  cudaRuntimeGetVersion(&runtime);
  cudaDriverGetVersion(&driver);
  const std::string reason = gpu_unavailable_reason();
  if (reason.empty()) cudaGetDeviceCount(&count);
  std::ostringstream out;
  out << "{\"built\": true, \"runtime_version\": \"" << version_string(runtime) << "\""
      << ", \"driver_supports_version\": " << (driver ? "\"" + version_string(driver) + "\"" : "null")
      << ", \"cublas_version\": " << json_string(cublas_version())
      << ", \"unavailable_reason\": " << (reason.empty() ? "null" : json_string(reason)) << ", \"devices\": [";
  for (int i = 0; i < count; ++i) out << (i ? ", " : "") << device_json(i);
  out << "]}";
  return out.str();
}
#else
std::string cuda_json() {
  return "{\"built\": false, \"unavailable_reason\": " + json_string(gpu_unavailable_reason()) + ", \"devices\": []}";
}
#endif

}  // namespace
}  // namespace gpubench

int main() {
  using namespace gpubench;
  std::cout << "{\"hardware_threads\": " << std::thread::hardware_concurrency()
            << ", \"openmp_threads\": " << omp_get_max_threads()
            << ", \"openblas\": " << openblas_json()
            << ", \"compilers\": {\"cxx\": " << json_string(GPUBENCH_CXX_COMPILER)
            << ", \"cuda\": " << json_string(GPUBENCH_CUDA_COMPILER) << "}"
            << ", \"google_benchmark_version\": " << json_string(GPUBENCH_BENCHMARK_VERSION)
            << ", \"cuda\": " << cuda_json() << "}\n";
  return 0;
}
