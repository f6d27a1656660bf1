// NVML, loaded once at run time (dlopen) for the GPU the CUDA runtime uses, so nothing links
// against the driver and machines without one still build and run. The utilization sampler
// and the telemetry recorder share it.
#pragma once

#include <string>

namespace gpubench::nvml {

// NVML's ABI, declared here: nvml.h is not in every CUDA toolkit, nor on CPU-only machines.
// The values and layouts are nvml.h's, unchanged since NVML introduced them.
using Return = int;  // nvmlReturn_t
constexpr Return kSuccess = 0;
constexpr Return kErrorNotSupported = 3;
constexpr Return kErrorNotFound = 6;
using Device = struct nvmlDevice_st*;
struct Utilization {  // nvmlUtilization_t
  unsigned int gpu;
  unsigned int memory;
};
using UtilizationRatesFn = Return (*)(Device device, Utilization* utilization);  // nvmlDeviceGetUtilizationRates

struct Library {
  void* handle = nullptr;
  Device device = nullptr;          // the CUDA runtime's current device, matched by PCI bus id
  std::string unavailable_reason;   // empty when NVML answers for that device

  // A function of the library, nullptr when this NVML lacks it (or NVML is unavailable).
  template <typename Fn>
  Fn function(const char* name) const {
    return reinterpret_cast<Fn>(raw_function(name));
  }
  // "<call> failed: <NVML's words> (NVML status N)".
  std::string failure(const char* call, Return status) const;

 private:
  void* raw_function(const char* name) const;
};

// Loaded, initialised and matched to the CUDA device on first use; never unloaded (NVML may be
// called from sampling threads until the process ends).
const Library& library();

// The device memory's theoretical peak bandwidth: NVML's maximum memory clock
// (nvmlDeviceGetMaxClockInfo, NVML_CLOCK_MEM) x its bus width (nvmlDeviceGetMemoryBusWidth) x 2
// transfers per clock (double data rate, as NVML reports HBM's and DDR's clock) / 8 bits per byte.
// An H100 SXM: 2619 MHz x 5120 bits x 2 / 8 = 3.35 TB/s, its datasheet's figure.
struct MemoryPeak {
  static constexpr int kTransfersPerClock = 2;
  double bytes_per_s = 0;            // 0 when unknown
  unsigned int max_clock_mhz = 0;
  unsigned int bus_width_bits = 0;
  std::string unavailable_reason;    // empty when NVML gave both figures
};
MemoryPeak memory_peak();

}  // namespace gpubench::nvml
