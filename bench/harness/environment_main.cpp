// gpubench_env: prints, as JSON, what the C++ side of this build sees of the machine and
// its libraries. The driver adds what it reads from the OS and nvidia-smi.
#include <cblas.h>
#include <omp.h>
#include <sched.h>

#include <cstdlib>
#include <iostream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

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

// --- affinity: what the study binaries, run with the same environment, are pinned to -----
// CPUs the calling thread may run on; 0 when it cannot be read.
int allowed_cpus() {
  cpu_set_t set;
  return sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 0;
}

std::string environment_value(const char* name) {
  const char* value = std::getenv(name);
  return value ? json_string(value) : "null";
}

const char* proc_bind_name(omp_proc_bind_t bind) {
  switch (bind) {
    case omp_proc_bind_false: return "false";
    case omp_proc_bind_true: return "true";
    case omp_proc_bind_master: return "master";
    case omp_proc_bind_close: return "close";
    case omp_proc_bind_spread: return "spread";
    default: return "unknown";
  }
}

// The CPUs the process was started on (libgomp reads them before it binds anything), those
// of the initial thread (libgomp binds it to the first place when OMP_PROC_BIND is on; the
// OpenBLAS threads, started before, keep the process's unless an OpenBLAS built without
// NO_AFFINITY, see its config, pins them itself), and per OpenMP thread of a full team the
// CPUs it may run on: those of one place each when pinned, all of the process's when not.
std::string affinity_json() {
  const int initial = allowed_cpus();
  std::vector<int> per_thread(omp_get_max_threads(), 0);
#pragma omp parallel num_threads(static_cast<int>(per_thread.size()))
  per_thread[omp_get_thread_num()] = allowed_cpus();
  std::ostringstream out;
  out << "{\"process_cpus\": " << omp_get_num_procs() << ", \"initial_thread_cpus\": " << initial
      << ", \"omp_proc_bind\": " << environment_value("OMP_PROC_BIND")
      << ", \"omp_places\": " << environment_value("OMP_PLACES")
      << ", \"openmp_proc_bind\": " << json_string(proc_bind_name(omp_get_proc_bind()))
      << ", \"openmp_places\": " << omp_get_num_places()
      << ", \"openmp_thread_cpus\": " << json_list(per_thread, [](int n) { return std::to_string(n); }) << "}";
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
            << ", \"affinity\": " << affinity_json()
            << ", \"openblas\": " << openblas_json()
            << ", \"compilers\": {\"cxx\": " << json_string(GPUBENCH_CXX_COMPILER)
            << ", \"cuda\": " << json_string(GPUBENCH_CUDA_COMPILER) << "}"
            << ", \"google_benchmark_version\": " << json_string(GPUBENCH_BENCHMARK_VERSION)
            << ", \"cuda\": " << cuda_json() << "}\n";
  return 0;
}
