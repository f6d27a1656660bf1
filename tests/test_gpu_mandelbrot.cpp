// The mandelbrot study's kernels against the CPU baseline: the separately rounded kernel equals its
// counts bit for bit, the contracted one differs in at most the study's share of pixels, on random
// regions of odd sizes (partial 16 x 16 blocks), in FP32 and FP64, with byte and 16-bit counts; every
// pixel written. Without a usable GPU every test reports itself skipped.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "core/gpu_runtime.hpp"
#include "core/mandelbrot.hpp"
#include "core/system.hpp"
#include "mandelbrot.cuh"
#include "mandelbrot_cpu.hpp"

namespace gpubench {
namespace {

class GpuMandelbrotTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string reason = gpu_unavailable_reason();
    if (!reason.empty()) GTEST_SKIP() << "no GPU: " << reason;
  }
};

// The kernel's counts of `image`, from a device buffer poisoned above every limit.
std::vector<std::uint8_t> gpu_counts(MandelbrotFn kernel, Precision precision, const MandelbrotImage& image) {
  DeviceBuffer<std::uint8_t> device(image.bytes());
  CUDA_CHECK(cudaMemset(device.get(), 0xFF, device.bytes()));
  kernel(precision, image, device.get());
  CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<std::uint8_t> counts(image.bytes());
  CUDA_CHECK(cudaMemcpy(counts.data(), device.get(), device.bytes(), cudaMemcpyDeviceToHost));
  return counts;
}

std::vector<MandelbrotImage> images() {
  std::mt19937_64 engine(13);
  std::uniform_real_distribution<double> left(-2.2, 0.0), span(0.05, 2.5), bottom(-1.3, 0.2);
  const int sizes[][2] = {{1536, 1024}, {37, 23}, {257, 129}, {1, 1}, {500, 333}};
  const int limits[] = {20, kLargestByteLimit, kLargestByteLimit + 1, 7, 2000};
  std::vector<MandelbrotImage> found;
  for (int k = 0; k < 5; ++k) {
    const double x = left(engine), y = bottom(engine), width = span(engine);
    found.push_back({sizes[k][0], sizes[k][1], x, x + width, y, y + width, limits[k]});
  }
  found.push_back({1536, 1024, -2, 1, -1, 1, 20});  // the guide's configuration
  return found;
}

void expect_agreement(MandelbrotFn kernel, double allowed_fraction) {
  for (Precision precision : {Precision::fp32, Precision::fp64}) {
    for (const MandelbrotImage& image : images()) {
      std::vector<std::uint8_t> expected(image.bytes());
      mandelbrot_loop_parallel(precision, image, expected.data());
      const std::vector<std::uint8_t> counts = gpu_counts(kernel, precision, image);
      const CountComparison found = compare_counts(image, counts.data(), expected.data());
      const std::string where = std::to_string(image.width) + "x" + std::to_string(image.height) + " limit " +
                                std::to_string(image.max_iterations) + " " + precision_info(precision).name;
      EXPECT_EQ(found.out_of_range, 0u) << where;
      EXPECT_LE(static_cast<double>(found.differing), allowed_fraction * image.pixels()) << where;
    }
  }
}

TEST_F(GpuMandelbrotTest, SeparatelyRoundedKernelEqualsTheCpuBitForBit) { expect_agreement(mandelbrot_kernel, 0.0); }

TEST_F(GpuMandelbrotTest, ContractedKernelDiffersInFewPixels) {
  expect_agreement(mandelbrot_kernel_fma, kMandelbrotContractedDifferingFraction);
}

TEST_F(GpuMandelbrotTest, OtherPrecisionsAreRefused) {
  const MandelbrotImage image{16, 16, -2, 1, -1, 1, 20};
  DeviceBuffer<std::uint8_t> device(image.bytes());
  EXPECT_THROW(mandelbrot_kernel(Precision::fp16, image, device.get()), std::invalid_argument);
}

}  // namespace
}  // namespace gpubench
