// The roofline study's GPU kernel: every element of the chain equals, bit for bit, the same chain of
// single-rounded fused multiply-adds on the host (FP32 and FP64 std::fma; FP16 an FP64 fma, exact for
// FP16 operands, rounded once to FP16, as __hfma2 rounds), at sizes that leave elements past the last
// 16-byte vector and at chain lengths across the sweep; and it passes the study's check. Without a
// usable GPU every test reports itself skipped.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/fma_chain.hpp"
#include "core/gpu_runtime.hpp"
#include "core/precision_codec.hpp"
#include "core/random.hpp"
#include "core/system.hpp"
#include "fma_chain.cuh"

namespace gpubench {
namespace {

class GpuRooflineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string reason = gpu_unavailable_reason();
    if (!reason.empty()) GTEST_SKIP() << "no GPU: " << reason;
  }
};

constexpr double kMultiplier = 0.6875;  // in [0.5, 0.75), exact in FP16
const std::size_t kSizes[] = {1, 7, 4101, (1u << 20) + 3};
const int kSteps[] = {1, 2, 17, 64, 1024};

// The host's chain of one element, each step rounded once to the element's format.
float host_chain(float x, int k) {
  float y = x;
  for (int s = 0; s < k; ++s) y = std::fma(y, static_cast<float>(kMultiplier), x);
  return y;
}
double host_chain(double x, int k) {
  double y = x;
  for (int s = 0; s < k; ++s) y = std::fma(y, kMultiplier, x);
  return y;
}
// `value` rounded once to FP16 (to nearest, ties to even): through FP32 it could round twice. The
// chain's values stay within 4 in magnitude, far from FP16's overflow.
std::uint16_t to_half(double value) {
  const std::uint16_t near = float_to_half_bits(static_cast<float>(value));
  std::uint16_t best = near;
  for (int step : {-1, 1}) {
    const auto other = static_cast<std::uint16_t>(near + step);
    if ((other & 0x8000) != (near & 0x8000)) continue;  // past zero: the other sign's patterns
    const double distance = std::fabs(half_bits_to_float(other) - value);
    const double best_distance = std::fabs(half_bits_to_float(best) - value);
    if (distance < best_distance || (distance == best_distance && (other & 1) == 0)) best = other;
  }
  return best;
}

// FP16 operands: y*a + x is exact in FP64 (22 bits of product, exponents within 40 of each other).
std::uint16_t host_chain(std::uint16_t x, int k) {
  const double input = half_bits_to_float(x);
  std::uint16_t y = x;
  for (int s = 0; s < k; ++s) y = to_half(std::fma(static_cast<double>(half_bits_to_float(y)), kMultiplier, input));
  return y;
}

template <typename T>
void expect_exact_chains() {
  for (std::size_t n : kSizes) {
    std::vector<T> x;
    for (float value : random_uniform(n, n)) x.push_back(fma_chain_stored<T>(value));
    DeviceBuffer<T> dx(n), dy(n);
    CUDA_CHECK(cudaMemcpy(dx.get(), x.data(), dx.bytes(), cudaMemcpyHostToDevice));
    for (int k : kSteps) {
      CUDA_CHECK(cudaMemset(dy.get(), 0xFF, dy.bytes()));  // NaN: an element never written differs
      fma_chain_kernel(dx.get(), dy.get(), n, k, fma_chain_stored<T>(kMultiplier));
      CUDA_CHECK(cudaDeviceSynchronize());
      std::vector<T> y(n);
      CUDA_CHECK(cudaMemcpy(y.data(), dy.get(), dy.bytes(), cudaMemcpyDeviceToHost));
      std::size_t differing = 0;
      for (std::size_t i = 0; i < n; ++i) {
        const T expected = host_chain(x[i], k);
        differing += std::memcmp(&expected, &y[i], sizeof(T)) != 0;
      }
      EXPECT_EQ(differing, 0u) << "n = " << n << ", k = " << k;
      const Verification v = verify_fma_chain(x.data(), y.data(), n, k, fma_chain_stored<T>(kMultiplier));
      EXPECT_TRUE(v.passed()) << "n = " << n << ", k = " << k << ": " << v.describe();
    }
  }
}

TEST_F(GpuRooflineTest, Fp32ChainsEqualTheHostsBitForBit) { expect_exact_chains<float>(); }

TEST_F(GpuRooflineTest, Fp64ChainsEqualTheHostsBitForBit) { expect_exact_chains<double>(); }

TEST_F(GpuRooflineTest, Fp16ChainsEqualTheHostsBitForBit) { expect_exact_chains<std::uint16_t>(); }

TEST_F(GpuRooflineTest, RefusesMisalignedArrays) {
  DeviceBuffer<float> x(64), y(64);
  EXPECT_THROW(fma_chain_kernel(x.get() + 1, y.get(), 32, 4, 0.5f), std::invalid_argument);
}

}  // namespace
}  // namespace gpubench
