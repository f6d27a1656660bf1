// The p2p study's GPU pieces: a peer copy by the copy engines and by the SM kernel on the
// receiving GPU (reading its peer's memory) moves every byte, and NVML describes each GPU's
// links. Without a usable GPU every test reports itself skipped; the pair tests also with one GPU.
#include <gtest/gtest.h>

#include <vector>

#include "core/gpu_runtime.hpp"
#include "core/host_memory.hpp"
#include "core/system.hpp"
#include "harness/nvml.hpp"
#include "harness/nvml_topology.hpp"
#include "sm_copy.cuh"

namespace gpubench {
namespace {

int gpu_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) cudaGetLastError();
  return count;
}

class GpuP2pTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string reason = gpu_unavailable_reason();
    if (!reason.empty()) GTEST_SKIP() << "no GPU: " << reason;
  }
};

class GpuPairTest : public GpuP2pTest {
 protected:
  void SetUp() override {
    GpuP2pTest::SetUp();
    if (IsSkipped()) return;
    if (gpu_count() < 2) GTEST_SKIP() << "one GPU visible";
  }
  void TearDown() override { cudaSetDevice(0); }
};

// `bytes` of random data on `device`, and the data.
std::vector<std::uint8_t> upload_random(int device, void** on_device, std::size_t bytes, std::uint64_t seed) {
  std::vector<std::uint8_t> data(bytes);
  fill_random_bytes(data.data(), bytes, seed);
  CUDA_CHECK(cudaSetDevice(device));
  CUDA_CHECK(cudaMalloc(on_device, bytes));
  CUDA_CHECK(cudaMemcpy(*on_device, data.data(), bytes, cudaMemcpyHostToDevice));
  return data;
}

std::vector<std::uint8_t> download(const void* on_device, std::size_t bytes) {
  std::vector<std::uint8_t> data(bytes);
  CUDA_CHECK(cudaMemcpy(data.data(), on_device, bytes, cudaMemcpyDefault));
  return data;
}

// gpu0's buffer into gpu1's, by the engines or by gpu1's kernel reading gpu0's memory.
void copy_pair(bool by_kernel, std::size_t bytes) {
  void *source = nullptr, *destination = nullptr;
  const std::vector<std::uint8_t> sent = upload_random(0, &source, bytes, bytes);
  const std::vector<std::uint8_t> before = upload_random(1, &destination, bytes, bytes + 1);
  ASSERT_NE(first_difference(sent.data(), before.data(), bytes), bytes);
  if (by_kernel) {
    const cudaError_t enabled = cudaDeviceEnablePeerAccess(0, 0);  // gpu1 (current) maps gpu0
    if (enabled == cudaErrorPeerAccessAlreadyEnabled) cudaGetLastError();
    else CUDA_CHECK(enabled);
    sm_copy(destination, source, bytes, 0);
  } else {
    CUDA_CHECK(cudaMemcpyPeerAsync(destination, 1, source, 0, bytes, 0));
  }
  CUDA_CHECK(cudaDeviceSynchronize());
  const std::vector<std::uint8_t> received = download(destination, bytes);
  EXPECT_EQ(first_difference(received.data(), sent.data(), bytes), bytes) << bytes << " bytes";
  CUDA_CHECK(cudaFree(destination));
  CUDA_CHECK(cudaSetDevice(0));
  CUDA_CHECK(cudaFree(source));
}

TEST_F(GpuPairTest, CopyEnginesMoveEveryBytePeerToPeer) {
  for (std::size_t bytes : {16u, 4112u, 3u << 20}) copy_pair(false, bytes);
}

TEST_F(GpuPairTest, KernelReadingItsPeerMovesEveryByte) {
  int can = 0;
  CUDA_CHECK(cudaDeviceCanAccessPeer(&can, 1, 0));
  if (!can) GTEST_SKIP() << "gpu1 cannot map gpu0's memory";
  for (std::size_t bytes : {16u, 4112u, 3u << 20}) copy_pair(true, bytes);
}

TEST_F(GpuPairTest, NvmlRatesEveryPairsLink) {
  const nvml::DeviceLinks a = nvml::device_links(0), b = nvml::device_links(1);
  if (!a.unavailable_reason.empty()) GTEST_SKIP() << a.unavailable_reason;
  const nvml::PairTopology pair = nvml::pair_topology(0, 1, a, b);
  EXPECT_TRUE(pair.unavailable_reason.empty()) << pair.unavailable_reason;
  EXPECT_NE(pair.common_ancestor, "unknown");
  EXPECT_GT(pair.link_bytes_per_s, 0) << pair.link;
}

TEST_F(GpuP2pTest, NvmlGivesEachGpusPcieLink) {
  const nvml::DeviceLinks links = nvml::device_links(0);
  if (!links.unavailable_reason.empty()) GTEST_SKIP() << links.unavailable_reason;
  EXPECT_FALSE(links.pci_bus_id.empty());
  EXPECT_GT(links.pcie_generation, 0u);
  EXPECT_GT(links.pcie_width, 0u);
  EXPECT_GT(links.pcie_bytes_per_s(), 0);
}

}  // namespace
}  // namespace gpubench
