// The occupancy study's pieces. Without a GPU: the occupancy calculator's limits on an H100's figures
// (core/kernel_occupancy.hpp), and where a grid lands. With one: the grid-stride naive SGEMM and triad
// give every element on any grid (the walk-through's 16 x 128, grids of odd sizes, grids larger than
// the problem), the SGEMM bit for bit as the one-thread-per-element kernel; and the runtime's
// occupancy of both kernels is one the calculator explains. GPU tests report themselves skipped
// without a usable GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <string>
#include <vector>

#include "core/gpu_runtime.hpp"
#include "core/json.hpp"
#include "core/kernel_occupancy.hpp"
#include "core/random.hpp"
#include "core/system.hpp"
#include "core/verify.hpp"
#include "matmul_naive.cuh"
#include "matmul_test_support.hpp"
#include "triad_grid_stride.cuh"

namespace gpubench {
namespace {

// An H100 SXM's figures as cudaGetDeviceProperties gives them.
cudaOccDeviceProp h100() {
  cudaOccDeviceProp p;
  p.computeMajor = 9;
  p.computeMinor = 0;
  p.maxThreadsPerBlock = 1024;
  p.maxThreadsPerMultiprocessor = 2048;
  p.regsPerBlock = 65536;
  p.regsPerMultiprocessor = 65536;
  p.warpSize = 32;
  p.sharedMemPerBlock = 49152;
  p.sharedMemPerMultiprocessor = 233472;
  p.numSms = 132;
  p.sharedMemPerBlockOptin = 232448;
  p.reservedSharedMemPerBlock = 1024;
  return p;
}

cudaOccFuncAttributes kernel_of(int registers, std::size_t shared_bytes) {
  cudaOccFuncAttributes k;
  k.maxThreadsPerBlock = 1024;
  k.numRegs = registers;
  k.sharedSizeBytes = shared_bytes;
  k.numBlockBarriers = 1;
  return k;
}

// The calculator's count at this launch, given as the runtime's.
KernelOccupancy calculated(int registers, std::size_t shared_bytes, int threads) {
  const KernelOccupancy first = occupancy_from(h100(), kernel_of(registers, shared_bytes), threads, 0, -1);
  const int count = std::min({first.limit_by_threads, first.limit_by_blocks, first.limit_by_registers,
                              first.limit_by_shared_memory, first.limit_by_barriers});
  return occupancy_from(h100(), kernel_of(registers, shared_bytes), threads, 0, count);
}

TEST(OccupancyCalculator, ThreadsAndRegistersBothStopA32RegisterKernelAt256Threads) {
  const KernelOccupancy o = calculated(32, 0, 256);
  EXPECT_EQ(o.blocks_per_multiprocessor, 8);  // 2048 threads, and 65536 registers / (32 x 256)
  EXPECT_EQ(o.limit_by_threads, 8);
  EXPECT_EQ(o.limit_by_registers, 8);
  EXPECT_EQ(o.limit_by_blocks, 32);
  EXPECT_EQ(o.limited_by, (std::vector<std::string>{"threads", "registers"}));
  EXPECT_DOUBLE_EQ(o.occupancy(), 1.0);
}

TEST(OccupancyCalculator, RegistersHalveIt) {
  const KernelOccupancy o = calculated(64, 0, 256);
  EXPECT_EQ(o.blocks_per_multiprocessor, 4);
  EXPECT_EQ(o.limited_by, std::vector<std::string>{"registers"});
  EXPECT_DOUBLE_EQ(o.occupancy(), 0.5);
}

TEST(OccupancyCalculator, SharedMemoryStopsIt) {
  const KernelOccupancy o = calculated(32, 48 * 1024, 256);
  EXPECT_EQ(o.blocks_per_multiprocessor, 4);  // 228 KiB / (48 KiB + 1 KiB reserved)
  EXPECT_EQ(o.limited_by, std::vector<std::string>{"shared_memory"});
  EXPECT_EQ(o.shared_bytes_per_block, 48u * 1024);
}

TEST(OccupancyCalculator, BlockSlotsStopSmallBlocks) {
  const KernelOccupancy o = calculated(32, 0, 32);
  EXPECT_EQ(o.blocks_per_multiprocessor, 32);  // 32 block slots: 32 warps of 64
  EXPECT_EQ(o.limited_by, std::vector<std::string>{"blocks"});
  EXPECT_DOUBLE_EQ(o.occupancy(), 0.5);
  EXPECT_EQ(o.limit_by_threads, 64);
}

TEST(OccupancyCalculator, ACountTheCalculatorDoesNotGiveNamesNoLimit) {
  EXPECT_TRUE(occupancy_from(h100(), kernel_of(32, 0), 256, 0, 7).limited_by.empty());
}

TEST(OccupancyCalculator, ADeviceNewerThanTheCalculatorKeepsTheRuntimesCount) {
  cudaOccDeviceProp future = h100();
  future.computeMajor = 99;
  const KernelOccupancy o = occupancy_from(future, kernel_of(32, 0), 256, 0, 8);
  EXPECT_EQ(o.blocks_per_multiprocessor, 8);
  EXPECT_TRUE(o.limited_by.empty());
  EXPECT_EQ(o.limit_by_registers, -1);
  EXPECT_TRUE(occupancy_json(o)["limits"]["registers"].is_null());
}

TEST(OccupancyCalculator, WhereAGridLands) {
  const KernelOccupancy o = calculated(32, 0, 128);  // 16 blocks of 4 warps per multiprocessor
  EXPECT_EQ(o.warps_per_block(), 4);
  EXPECT_EQ(o.busy_multiprocessors(16), 16);  // the walk-through's grid
  EXPECT_DOUBLE_EQ(o.resident_warps(16), 64.0);
  EXPECT_DOUBLE_EQ(o.max_resident_warps(), 132.0 * 64);
  EXPECT_EQ(o.busy_multiprocessors(100000), 132);
  EXPECT_DOUBLE_EQ(o.resident_warps(100000), 132.0 * 16 * 4);  // the first wave only
  EXPECT_EQ(calculated(32, 0, 100).warps_per_block(), 4);  // a partial warp is a warp
}

TEST(OccupancyCalculator, DescribesItselfAsJson) {
  const Json json = occupancy_json(calculated(64, 0, 256));
  EXPECT_EQ(json["blocks_per_multiprocessor"], 4) << json;
  EXPECT_EQ(json["limited_by"], Json::array({"registers"})) << json;
  EXPECT_TRUE(json["limits"].contains("shared_memory")) << json;
}

class GpuOccupancyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string reason = gpu_unavailable_reason();
    if (!reason.empty()) GTEST_SKIP() << "no GPU: " << reason;
  }
};

// Grids of the walk-through, of odd sizes, of one thread, and larger than the problem.
std::vector<LaunchShape> test_launches() { return {{16, 128}, {1, 1}, {1, 32}, {7, 33}, {3, 1024}, {4096, 256}}; }

std::vector<float> downloaded(const DeviceBuffer<float>& buffer, std::size_t count) {
  std::vector<float> values(count);
  CUDA_CHECK(cudaMemcpy(values.data(), buffer.get(), count * sizeof(float), cudaMemcpyDeviceToHost));
  return values;
}

TEST_F(GpuOccupancyTest, GridStrideSgemmGivesEveryElementOnAnyGrid) {
  for (const MatmulShape shape : {MatmulShape{129, 127, 131}, MatmulShape{1, 300, 77}, MatmulShape{200, 200, 200}}) {
    const testing::RandomMatmul problem(shape);
    DeviceBuffer<float> a(shape.a_elements()), b(shape.b_elements()), c(shape.c_elements()), one(shape.c_elements());
    CUDA_CHECK(cudaMemcpy(a.get(), problem.a.data(), a.bytes(), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(b.get(), problem.b.data(), b.bytes(), cudaMemcpyHostToDevice));
    matmul_naive_kernel(a.get(), b.get(), one.get(), shape);
    const std::vector<float> per_element = downloaded(one, shape.c_elements());
    for (const LaunchShape launch : test_launches()) {
      CUDA_CHECK(cudaMemset(c.get(), 0xFF, c.bytes()));  // NaN: an element never written fails
      matmul_naive_grid_stride_kernel(a.get(), b.get(), c.get(), shape, launch);
      const std::vector<float> found = downloaded(c, shape.c_elements());
      const Verification v = problem.check(found);
      EXPECT_TRUE(v.passed()) << launch.blocks << " x " << launch.threads_per_block << ": " << v.describe();
      EXPECT_TRUE(verify_exact(found.data(), per_element.data(), found.size()).passed())
          << launch.blocks << " x " << launch.threads_per_block << ": differs from one thread per element";
    }
  }
}

TEST_F(GpuOccupancyTest, GridStrideTriadIsTheHostsFmaOnAnyGrid) {
  const std::size_t n = (1u << 18) + 3;
  const std::vector<float> x = random_uniform(n, 1), y = random_uniform(n, 2);
  const float s = 0.75f;
  std::vector<float> expected(n);
  for (std::size_t i = 0; i < n; ++i) expected[i] = std::fma(s, y[i], x[i]);
  DeviceBuffer<float> dx(n), dy(n), dz(n + 1);  // one element past z: must stay NaN
  CUDA_CHECK(cudaMemcpy(dx.get(), x.data(), dx.bytes(), cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(dy.get(), y.data(), dy.bytes(), cudaMemcpyHostToDevice));
  for (const LaunchShape launch : test_launches()) {
    CUDA_CHECK(cudaMemset(dz.get(), 0xFF, dz.bytes()));
    triad_grid_stride_kernel(dx.get(), dy.get(), dz.get(), n, s, launch);
    const std::vector<float> z = downloaded(dz, n + 1);
    const Verification v = verify_exact(z.data(), expected.data(), n);
    EXPECT_TRUE(v.passed()) << launch.blocks << " x " << launch.threads_per_block << ": " << v.describe();
    EXPECT_TRUE(std::isnan(z[n])) << "wrote past the end";
  }
}

TEST_F(GpuOccupancyTest, TheRuntimesOccupancyIsOneTheCalculatorExplains) {
  const int multiprocessors = device_attribute(cudaDevAttrMultiProcessorCount);
  for (const void* kernel : {matmul_naive_grid_stride_function(), triad_grid_stride_function()}) {
    for (int threads = 32; threads <= 1024; threads *= 2) {
      const KernelOccupancy o = kernel_occupancy(kernel, threads);
      EXPECT_GE(o.blocks_per_multiprocessor, 1) << threads;
      EXPECT_GT(o.registers_per_thread, 0) << threads;
      EXPECT_GT(o.occupancy(), 0.0) << threads;
      EXPECT_LE(o.occupancy(), 1.0) << threads;
      EXPECT_FALSE(o.limited_by.empty()) << threads << ": the calculator's count differs from the runtime's";
      EXPECT_EQ(o.multiprocessors, multiprocessors);
    }
  }
}

}  // namespace
}  // namespace gpubench
