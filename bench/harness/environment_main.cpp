// gpubench_env: prints, as JSON, what the C++ side of this build sees of the machine and
// its libraries. The driver adds what it reads from the OS and nvidia-smi.
#include <cblas.h>
#include <omp.h>
#include <sched.h>

#include <cstdlib>
#include <iostream>
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

Json openblas_json() {
  return {{"config", openblas_get_config()},
          {"core", openblas_get_corename()},
          {"threads", openblas_get_num_threads()},
          {"parallel", openblas_get_parallel()}};
}

// --- affinity: what the study binaries, run with the same environment, are pinned to -----
// CPUs the calling thread may run on; 0 when it cannot be read.
int allowed_cpus() {
  cpu_set_t set;
  return sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 0;
}

Json environment_value(const char* name) {
  const char* value = std::getenv(name);
  return value ? Json(value) : Json(nullptr);
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
Json affinity_json() {
  const int initial = allowed_cpus();
  std::vector<int> per_thread(omp_get_max_threads(), 0);
#pragma omp parallel num_threads(static_cast<int>(per_thread.size()))
  per_thread[omp_get_thread_num()] = allowed_cpus();
  return {{"process_cpus", omp_get_num_procs()},
          {"initial_thread_cpus", initial},
          {"omp_proc_bind", environment_value("OMP_PROC_BIND")},
          {"omp_places", environment_value("OMP_PLACES")},
          {"openmp_proc_bind", proc_bind_name(omp_get_proc_bind())},
          {"openmp_places", omp_get_num_places()},
          {"openmp_thread_cpus", per_thread}};
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

Json device_json(int index) {
  cudaDeviceProp p{};
  if (cudaGetDeviceProperties(&p, index) != cudaSuccess) return nullptr;
  char bus_id[32];
  std::snprintf(bus_id, sizeof bus_id, "%08x:%02x:%02x.0", p.pciDomainID, p.pciBusID, p.pciDeviceID);
  return {{"index", index},
          {"name", p.name},
          {"compute_capability", std::to_string(p.major) + "." + std::to_string(p.minor)},
          {"multiprocessors", p.multiProcessorCount},
          {"memory_bytes", p.totalGlobalMem},
          {"l2_cache_bytes", p.l2CacheSize},
          {"memory_bus_width_bits", p.memoryBusWidth},
          {"shared_memory_per_block_optin_bytes", p.sharedMemPerBlockOptin},
          {"ecc_enabled", p.ECCEnabled != 0},
          {"pci_bus_id", bus_id}};
}

Json cuda_json() {
  int runtime = 0, driver = 0, count = 0;
  cudaRuntimeGetVersion(&runtime);
  cudaDriverGetVersion(&driver);
  const std::string reason = gpu_unavailable_reason();
  if (reason.empty()) cudaGetDeviceCount(&count);
  Json devices = Json::array();
  for (int i = 0; i < count; ++i) devices.push_back(device_json(i));
  return {{"built", true},
          {"runtime_version", version_string(runtime)},
          {"driver_supports_version", driver ? Json(version_string(driver)) : Json(nullptr)},
          {"cublas_version", cublas_version()},
          {"unavailable_reason", text_or_null(reason)},
          {"devices", devices}};
}
#else
Json cuda_json() {
  return {{"built", false}, {"unavailable_reason", gpu_unavailable_reason()}, {"devices", Json::array()}};
}
#endif

}  // namespace
}  // namespace gpubench

int main() {
  using namespace gpubench;
  const Json environment = {{"hardware_threads", std::thread::hardware_concurrency()},
                            {"openmp_threads", omp_get_max_threads()},
                            {"affinity", affinity_json()},
                            {"openblas", openblas_json()},
                            {"compilers", {{"cxx", GPUBENCH_CXX_COMPILER}, {"cuda", GPUBENCH_CUDA_COMPILER}}},
                            {"google_benchmark_version", GPUBENCH_BENCHMARK_VERSION},
                            {"cuda", cuda_json()}};
  std::cout << dump_json(environment) << "\n";
  return 0;
}
