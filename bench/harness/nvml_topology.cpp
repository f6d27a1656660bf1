#include "harness/nvml_topology.hpp"

#include <algorithm>

#include "harness/nvml.hpp"

#if GPUBENCH_HAVE_CUDA
#include <cuda_runtime.h>
#endif

namespace gpubench::nvml {

std::string topology_level_name(int level) {
  switch (level) {  // NVML_TOPOLOGY_INTERNAL, _SINGLE, _MULTIPLE, _HOSTBRIDGE, _NODE, _SYSTEM
    case 0: return "same_board";
    case 10: return "single_pcie_switch";
    case 20: return "multiple_pcie_switches";
    case 30: return "host_bridge";
    case 40: return "numa_node";
    case 50: return "across_numa_nodes";
    default: return "unknown";
  }
}

double pcie_lane_bytes_per_s(unsigned generation) {
  constexpr double kGiga = 1e9;
  switch (generation) {
    case 1: return 2.5 * kGiga * 8 / 10 / 8;
    case 2: return 5.0 * kGiga * 8 / 10 / 8;
    case 3: return 8.0 * kGiga * 128 / 130 / 8;
    case 4: return 16.0 * kGiga * 128 / 130 / 8;
    case 5: return 32.0 * kGiga * 128 / 130 / 8;
    case 6: return 64.0 * kGiga * 242 / 256 / 8;
    default: return 0;
  }
}

double nvlink_bytes_per_s(int compute_capability_major) {
  switch (compute_capability_major) {
    case 6: return 20e9;   // NVLink 1 (P100)
    case 7:                // NVLink 2 (V100)
    case 8:                // NVLink 3 (A100)
    case 9: return 25e9;   // NVLink 4 (H100, H200)
    case 10: return 50e9;  // NVLink 5 (B200, GB200)
    default: return 0;
  }
}

PairTopology pair_link(bool nvlink, const DeviceLinks& a, const DeviceLinks& b) {
  PairTopology pair;
  pair.nvlink = nvlink;
  pair.link = nvlink ? "nvlink" : "pcie";
  pair.link_bytes_per_s = nvlink ? std::min(a.nvlink_bytes_per_s, b.nvlink_bytes_per_s)
                                 : std::min(a.pcie_bytes_per_s(), b.pcie_bytes_per_s());
  return pair;
}

#if GPUBENCH_HAVE_CUDA
namespace {

constexpr int kPciBusIdBufferSize = 32;  // NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE
constexpr unsigned kMaxNvLinks = 18;     // NVML_NVLINK_MAX_LINKS
constexpr int kFeatureEnabled = 1;       // NVML_FEATURE_ENABLED
constexpr int kP2pCapsIndexNvLink = 2;   // NVML_P2P_CAPS_INDEX_NVLINK
constexpr int kP2pStatusOk = 0;          // NVML_P2P_STATUS_OK

// NVML's handle of CUDA device `cuda_device`, or the reason there is none.
std::string handle_of(int cuda_device, Device* handle, std::string* pci_bus_id) {
  const Library& nvml = library();
  if (!nvml.unavailable_reason.empty()) return nvml.unavailable_reason;
  char bus_id[kPciBusIdBufferSize] = {};
  const cudaError_t cuda_status = cudaDeviceGetPCIBusId(bus_id, sizeof bus_id, cuda_device);
  if (cuda_status != cudaSuccess) {
    cudaGetLastError();
    return std::string("cudaDeviceGetPCIBusId failed: ") + cudaGetErrorString(cuda_status);
  }
  *pci_bus_id = bus_id;
  using HandleByPciBusIdFn = Return (*)(const char*, Device*);
  const auto by_bus_id = nvml.function<HandleByPciBusIdFn>("nvmlDeviceGetHandleByPciBusId_v2");
  if (!by_bus_id) return "NVML too old: no nvmlDeviceGetHandleByPciBusId_v2";
  const Return status = by_bus_id(bus_id, handle);
  return status == kSuccess ? "" : nvml.failure("nvmlDeviceGetHandleByPciBusId_v2", status);
}

void read_pcie(Device handle, DeviceLinks* links) {
  using UnsignedFn = Return (*)(Device, unsigned int*);
  const Library& nvml = library();
  const auto generation = nvml.function<UnsignedFn>("nvmlDeviceGetMaxPcieLinkGeneration");
  const auto width = nvml.function<UnsignedFn>("nvmlDeviceGetMaxPcieLinkWidth");
  if (!generation || !width || generation(handle, &links->pcie_generation) != kSuccess ||
      width(handle, &links->pcie_width) != kSuccess)
    links->pcie_generation = links->pcie_width = 0;
}

void read_nvlink(Device handle, int compute_capability_major, DeviceLinks* links) {
  using StateFn = Return (*)(Device, unsigned int link, int* state);
  using VersionFn = Return (*)(Device, unsigned int link, unsigned int* version);
  const Library& nvml = library();
  const auto state = nvml.function<StateFn>("nvmlDeviceGetNvLinkState");
  const auto version = nvml.function<VersionFn>("nvmlDeviceGetNvLinkVersion");
  if (!state) return;
  for (unsigned link = 0; link < kMaxNvLinks; ++link) {
    int enabled = 0;
    if (state(handle, link, &enabled) != kSuccess || enabled != kFeatureEnabled) continue;
    if (links->nvlinks_active++ == 0 && version) version(handle, link, &links->nvlink_version);
  }
  links->nvlink_bytes_per_s = links->nvlinks_active * nvlink_bytes_per_s(compute_capability_major);
}

}  // namespace

DeviceLinks device_links(int cuda_device) {
  DeviceLinks links;
  Device handle = nullptr;
  links.unavailable_reason = handle_of(cuda_device, &handle, &links.pci_bus_id);
  if (!links.unavailable_reason.empty()) return links;
  int major = 0;
  if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, cuda_device) != cudaSuccess) cudaGetLastError();
  read_pcie(handle, &links);
  read_nvlink(handle, major, &links);
  return links;
}

PairTopology pair_topology(int cuda_device_a, int cuda_device_b, const DeviceLinks& a, const DeviceLinks& b) {
  Device first = nullptr, second = nullptr;
  std::string bus_id;
  std::string reason = handle_of(cuda_device_a, &first, &bus_id);
  if (reason.empty()) reason = handle_of(cuda_device_b, &second, &bus_id);
  if (!reason.empty()) {
    PairTopology unknown;
    unknown.common_ancestor = "unknown";
    unknown.unavailable_reason = reason;
    return unknown;
  }
  using P2pStatusFn = Return (*)(Device, Device, int index, int* status);
  using AncestorFn = Return (*)(Device, Device, int* level);
  const Library& nvml = library();
  const auto p2p_status = nvml.function<P2pStatusFn>("nvmlDeviceGetP2PStatus");
  const auto ancestor = nvml.function<AncestorFn>("nvmlDeviceGetTopologyCommonAncestor");
  int status = -1, level = -1;
  const bool nvlink = p2p_status && p2p_status(first, second, kP2pCapsIndexNvLink, &status) == kSuccess &&
                      status == kP2pStatusOk;
  PairTopology pair = pair_link(nvlink, a, b);
  const bool placed = ancestor && ancestor(first, second, &level) == kSuccess;
  pair.common_ancestor = placed ? topology_level_name(level) : "unknown";
  return pair;
}
#else
DeviceLinks device_links(int) {
  DeviceLinks links;
  links.unavailable_reason = "this build has no GPU side";
  return links;
}

PairTopology pair_topology(int, int, const DeviceLinks&, const DeviceLinks&) {
  PairTopology unknown;
  unknown.common_ancestor = "unknown";
  unknown.unavailable_reason = "this build has no GPU side";
  return unknown;
}
#endif

}  // namespace gpubench::nvml
