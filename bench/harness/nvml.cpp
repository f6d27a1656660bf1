#include "harness/nvml.hpp"

#include <dlfcn.h>

#if GPUBENCH_HAVE_CUDA
#include <cuda_runtime.h>
#endif

namespace gpubench::nvml {
namespace {

constexpr const char* kLibraryName = "libnvidia-ml.so.1";
constexpr int kPciBusIdBufferSize = 32;  // NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE

using InitFn = Return (*)();
using HandleByPciBusIdFn = Return (*)(const char* pci_bus_id, Device* device);

std::string last_dl_error() {
  const char* error = dlerror();
  return error ? error : "no error reported";
}

#if GPUBENCH_HAVE_CUDA
// The NVML device with the PCI bus id of the CUDA runtime's current device: NVML and CUDA
// number devices differently (CUDA_VISIBLE_DEVICES, CUDA_DEVICE_ORDER).
std::string find_cuda_device(Library* nvml) {
  int cuda_device = 0;
  cudaError_t cuda_status = cudaGetDevice(&cuda_device);
  char pci_bus_id[kPciBusIdBufferSize] = {};
  if (cuda_status == cudaSuccess) cuda_status = cudaDeviceGetPCIBusId(pci_bus_id, sizeof pci_bus_id, cuda_device);
  if (cuda_status != cudaSuccess)
    return std::string("NVML not used: no CUDA device to match (") + cudaGetErrorString(cuda_status) + ")";
  const auto handle_by_pci_bus_id = nvml->function<HandleByPciBusIdFn>("nvmlDeviceGetHandleByPciBusId_v2");
  if (!handle_by_pci_bus_id) return "NVML too old: no nvmlDeviceGetHandleByPciBusId_v2 (" + last_dl_error() + ")";
  const Return status = handle_by_pci_bus_id(pci_bus_id, &nvml->device);
  if (status != kSuccess)
    return nvml->failure("nvmlDeviceGetHandleByPciBusId_v2", status) + " for CUDA device " +
           std::to_string(cuda_device) + " at " + pci_bus_id;
  return "";
}
#endif

std::string open(Library* nvml) {
#if GPUBENCH_HAVE_CUDA
  nvml->handle = dlopen(kLibraryName, RTLD_NOW | RTLD_LOCAL);
  if (!nvml->handle) return std::string("NVML not loaded: ") + kLibraryName + " not found (" + last_dl_error() + ")";
  if (!nvml->function<void*>("nvmlErrorString"))
    return std::string("NVML in ") + kLibraryName + " lacks nvmlErrorString (" + last_dl_error() + ")";
  const auto init = nvml->function<InitFn>("nvmlInit_v2");
  if (!init) return "NVML too old: no nvmlInit_v2 (" + last_dl_error() + ")";
  const Return status = init();
  if (status != kSuccess) return nvml->failure("nvmlInit_v2", status);
  return find_cuda_device(nvml);
#else
  (void)nvml;
  return "NVML not used: this build has no GPU side (no CUDA compiler was found when it was configured)";
#endif
}

}  // namespace

void* Library::raw_function(const char* name) const { return handle ? dlsym(handle, name) : nullptr; }

std::string Library::failure(const char* call, Return status) const {
  using ErrorStringFn = const char* (*)(Return);
  const auto error_string = function<ErrorStringFn>("nvmlErrorString");
  return std::string(call) + " failed: " + (error_string ? error_string(status) : "unknown error") +
         " (NVML status " + std::to_string(status) + ")";
}

MemoryPeak memory_peak() {
  constexpr int kClockMem = 2;  // NVML_CLOCK_MEM
  using MaxClockFn = Return (*)(Device, int type, unsigned int* mhz);
  using BusWidthFn = Return (*)(Device, unsigned int* bits);
  MemoryPeak peak;
  const Library& nvml = library();
  if (!nvml.unavailable_reason.empty()) {
    peak.unavailable_reason = nvml.unavailable_reason;
    return peak;
  }
  const auto max_clock = nvml.function<MaxClockFn>("nvmlDeviceGetMaxClockInfo");
  const auto bus_width = nvml.function<BusWidthFn>("nvmlDeviceGetMemoryBusWidth");
  if (!max_clock || !bus_width) {
    peak.unavailable_reason = "NVML too old: no nvmlDeviceGetMaxClockInfo or nvmlDeviceGetMemoryBusWidth";
    return peak;
  }
  Return status = max_clock(nvml.device, kClockMem, &peak.max_clock_mhz);
  if (status != kSuccess) {
    peak.unavailable_reason = nvml.failure("nvmlDeviceGetMaxClockInfo", status);
    return peak;
  }
  status = bus_width(nvml.device, &peak.bus_width_bits);
  if (status != kSuccess) {
    peak.unavailable_reason = nvml.failure("nvmlDeviceGetMemoryBusWidth", status);
    return peak;
  }
  peak.bytes_per_s = peak.max_clock_mhz * 1e6 * peak.bus_width_bits * MemoryPeak::kTransfersPerClock / 8.0;
  return peak;
}

const Library& library() {
  static const Library loaded = [] {
    Library nvml;
    nvml.unavailable_reason = open(&nvml);
    return nvml;
  }();
  return loaded;
}

}  // namespace gpubench::nvml
