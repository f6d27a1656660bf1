// The link rates the p2p study sets its bandwidths against: PCIe per lane after encoding, NVLink
// per link by architecture, and a pair's link chosen and rated from both GPUs' links.
#include <gtest/gtest.h>

#include "harness/nvml_topology.hpp"

namespace gpubench::nvml {
namespace {

TEST(NvmlTopology, PcieLaneRatesFollowEachGenerationsEncoding) {
  EXPECT_DOUBLE_EQ(pcie_lane_bytes_per_s(1), 250e6);  // 2.5 GT/s, 8b/10b
  EXPECT_DOUBLE_EQ(pcie_lane_bytes_per_s(2), 500e6);
  EXPECT_NEAR(pcie_lane_bytes_per_s(3), 984.6e6, 0.1e6);  // 8 GT/s, 128b/130b
  EXPECT_NEAR(pcie_lane_bytes_per_s(5), 3.938e9, 1e6);
  EXPECT_DOUBLE_EQ(pcie_lane_bytes_per_s(6), 64e9 * 242 / 256 / 8);  // FLIT mode
  EXPECT_EQ(pcie_lane_bytes_per_s(0), 0);
  EXPECT_EQ(pcie_lane_bytes_per_s(7), 0);  // not known: no rate rather than a guess
}

TEST(NvmlTopology, Gen5By16IsAbout63GBPerSecondOneWay) {
  DeviceLinks links;
  links.pcie_generation = 5;
  links.pcie_width = 16;
  EXPECT_NEAR(links.pcie_bytes_per_s(), 63.0e9, 0.1e9);
  links.pcie_width = 0;  // NVML gave no width
  EXPECT_EQ(links.pcie_bytes_per_s(), 0);
}

TEST(NvmlTopology, NvLinkRatePerLinkByArchitecture) {
  EXPECT_EQ(nvlink_bytes_per_s(9), 25e9);   // H100: 18 links make its 450 GB/s each way
  EXPECT_EQ(nvlink_bytes_per_s(10), 50e9);  // B200: 18 links make 900 GB/s each way
  EXPECT_EQ(nvlink_bytes_per_s(6), 20e9);
  EXPECT_EQ(nvlink_bytes_per_s(5), 0);
}

TEST(NvmlTopology, PairTakesTheSlowerEndOfItsLink) {
  DeviceLinks a, b;
  a.pcie_generation = 5;
  a.pcie_width = 16;
  b.pcie_generation = 4;
  b.pcie_width = 16;
  a.nvlink_bytes_per_s = 18 * 25e9;
  b.nvlink_bytes_per_s = 12 * 25e9;
  const PairTopology over_nvlink = pair_link(true, a, b);
  EXPECT_EQ(over_nvlink.link, "nvlink");
  EXPECT_EQ(over_nvlink.link_bytes_per_s, 12 * 25e9);
  const PairTopology over_pcie = pair_link(false, a, b);
  EXPECT_EQ(over_pcie.link, "pcie");
  EXPECT_DOUBLE_EQ(over_pcie.link_bytes_per_s, b.pcie_bytes_per_s());
}

TEST(NvmlTopology, CommonAncestorsInWords) {
  EXPECT_EQ(topology_level_name(0), "same_board");
  EXPECT_EQ(topology_level_name(10), "single_pcie_switch");
  EXPECT_EQ(topology_level_name(20), "multiple_pcie_switches");
  EXPECT_EQ(topology_level_name(30), "host_bridge");
  EXPECT_EQ(topology_level_name(40), "numa_node");
  EXPECT_EQ(topology_level_name(50), "across_numa_nodes");
  EXPECT_EQ(topology_level_name(5), "unknown");
}

}  // namespace
}  // namespace gpubench::nvml
