// The transfer study's GPU pieces: the zero-copy kernel moves every byte in both directions
// through mapped pinned and registered memory, and a never-written mapping copies as zeros.
// Without a usable GPU every test reports itself skipped.
#include <gtest/gtest.h>

#include <vector>

#include "core/gpu_runtime.hpp"
#include "core/host_memory.hpp"
#include "core/system.hpp"
#include "host_memory_probes.hpp"
#include "sm_copy.cuh"

namespace gpubench {
namespace {

class GpuTransferTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string reason = gpu_unavailable_reason();
    if (!reason.empty()) GTEST_SKIP() << "no GPU: " << reason;
  }
};

void* device_view(void* host) {
  void* view = nullptr;
  CUDA_CHECK(cudaHostGetDevicePointer(&view, host, 0));
  return view;
}

// Through a mapped host buffer: host -> device by the kernel, back by the kernel into another.
void round_trip_through(std::uint8_t* source, std::uint8_t* destination, std::size_t bytes) {
  fill_random_bytes(source, bytes, bytes);
  fill_random_bytes(destination, bytes, bytes + 1);
  DeviceBuffer<std::uint8_t> device(bytes);
  CUDA_CHECK(cudaMemset(device.get(), 0, bytes));
  sm_copy(device.get(), device_view(source), bytes, 0);
  sm_copy(device_view(destination), device.get(), bytes, 0);
  CUDA_CHECK(cudaDeviceSynchronize());
  EXPECT_EQ(first_difference(source, destination, bytes), bytes) << bytes << " bytes";
}

TEST_F(GpuTransferTest, SmCopyMovesEveryByteThroughPinnedMemory) {
  for (std::size_t bytes : {16u, 4096u, 4112u, 3u << 20}) {
    PinnedBuffer<std::uint8_t> source(bytes), destination(bytes);
    round_trip_through(source.get(), destination.get(), bytes);
  }
}

TEST_F(GpuTransferTest, SmCopyMovesEveryByteThroughRegisteredMemory) {
  const std::size_t bytes = 5u << 20;
  MappedHostBuffer source(bytes), destination(bytes);
  fill_random_bytes(source.get(), bytes, 1);  // map the pages before pinning them
  fill_random_bytes(destination.get(), bytes, 2);
  CUDA_CHECK(cudaHostRegister(source.get(), bytes, cudaHostRegisterMapped));
  CUDA_CHECK(cudaHostRegister(destination.get(), bytes, cudaHostRegisterMapped));
  round_trip_through(source.get(), destination.get(), bytes);
  CUDA_CHECK(cudaHostUnregister(destination.get()));
  CUDA_CHECK(cudaHostUnregister(source.get()));
}

TEST_F(GpuTransferTest, SmCopyRefusesMisalignedWork) {
  DeviceBuffer<std::uint8_t> a(64), b(64);
  EXPECT_THROW(sm_copy(a.get(), b.get(), 40, 0), std::invalid_argument);
  EXPECT_THROW(sm_copy(a.get() + 4, b.get(), 32, 0), std::invalid_argument);
}

TEST_F(GpuTransferTest, NeverWrittenMappingCopiesAsZeros) {
  const std::size_t bytes = 4u << 20;
  MappedHostBuffer fresh(bytes);
  DeviceBuffer<std::uint8_t> device(bytes);
  CUDA_CHECK(cudaMemset(device.get(), 0xAB, bytes));
  CUDA_CHECK(cudaMemcpy(device.get(), fresh.get(), bytes, cudaMemcpyHostToDevice));
  std::vector<std::uint8_t> back(bytes, 1);
  CUDA_CHECK(cudaMemcpy(back.data(), device.get(), bytes, cudaMemcpyDeviceToHost));
  EXPECT_TRUE(all_zero(back.data(), bytes));
}

}  // namespace
}  // namespace gpubench
