// How two GPUs, or a GPU and the host, are connected, as NVML reports it: the closest common
// ancestor of a pair in the PCIe tree, whether NVLink joins them, and each link's theoretical
// rate (NVLink: active links x the per-link rate of the GPU's NVLink generation; PCIe: the
// generation's per-lane rate after encoding x the width), so that a measured bandwidth can be
// given as a fraction of its link. The p2p study records it per pair and per GPU.
#pragma once

#include <string>

namespace gpubench::nvml {

// NVML's nvmlGpuTopologyLevel_t (nvmlDeviceGetTopologyCommonAncestor) in words: "same_board",
// "single_pcie_switch", "multiple_pcie_switches", "host_bridge", "numa_node", "across_numa_nodes";
// "unknown" for a value NVML did not have when this was written.
std::string topology_level_name(int level);

// Bytes per second one way of one PCIe lane of `generation` after line encoding (8b/10b for
// generations 1-2, 128b/130b for 3-5, FLIT 242/256 for 6); 0 for a generation it does not know.
double pcie_lane_bytes_per_s(unsigned generation);

// Bytes per second one way of one NVLink of a GPU of compute capability `major`.x (NVLink 1 on
// Pascal, 2-4 on Volta to Hopper, 5 on Blackwell data-centre parts); 0 where it has none it knows.
// Taken from the architecture rather than nvmlDeviceGetNvLinkVersion, whose answer some drivers
// give wrong for Hopper (5.0 for NVLink 4).
double nvlink_bytes_per_s(int compute_capability_major);

// One GPU's links, by CUDA device index (matched to NVML by PCI bus id).
struct DeviceLinks {
  std::string pci_bus_id;
  unsigned pcie_generation = 0;  // the link's maximum (the current one drops when idle)
  unsigned pcie_width = 0;
  int nvlinks_active = 0;
  unsigned nvlink_version = 0;   // NVML's nvmlNvlinkVersion_t of its first active link, as NVML gives it
  double nvlink_bytes_per_s = 0;  // all active links, one way; 0 without NVLink
  std::string unavailable_reason;  // empty when NVML answered for it

  // The PCIe link's rate one way; 0 when NVML did not give generation and width.
  double pcie_bytes_per_s() const {
    return pcie_generation && pcie_width ? pcie_width * pcie_lane_bytes_per_s(pcie_generation) : 0;
  }
};
DeviceLinks device_links(int cuda_device);

// A pair of GPUs: the link a copy between them takes and its theoretical rate one way.
struct PairTopology {
  std::string common_ancestor;  // topology_level_name; "unknown" when NVML did not say
  bool nvlink = false;          // NVML's P2P status over NVLink is OK
  std::string link;             // "nvlink" or "pcie"
  double link_bytes_per_s = 0;  // 0 when unknown
  std::string unavailable_reason;
};
// The pair's link and its rate: over NVLink, the smaller of the two GPUs' NVLink rates (every
// active link counted as reaching the peer, which holds through NVSwitch and on fully connected
// boards); over PCIe, the smaller of the two GPUs' PCIe rates.
PairTopology pair_link(bool nvlink, const DeviceLinks& a, const DeviceLinks& b);
// NVML's answer for CUDA devices a and b (their common ancestor, P2P status over NVLink), with pair_link.
PairTopology pair_topology(int cuda_device_a, int cuda_device_b, const DeviceLinks& a, const DeviceLinks& b);

}  // namespace gpubench::nvml
