// The roofline study's CPU side: the chain's factor is the closed form, the check (core/fma_chain)
// rejects a chain one step short at small k, a wrong element and an unwritten one, and the OpenMP
// baseline passes it in every precision at sizes that leave blocks and elements over.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "core/fma_chain.hpp"
#include "core/precision_codec.hpp"
#include "core/random.hpp"
#include "fma_chain_openmp.hpp"

namespace gpubench {
namespace {

constexpr double kMultiplier = 0.6875;  // in [0.5, 0.75), exact in FP16

TEST(FmaChainFactor, IsTheGeometricSum) {
  for (int k : {0, 1, 2, 7, 100}) {
    const double closed = (1 - std::pow(kMultiplier, k + 1)) / (1 - kMultiplier);
    EXPECT_NEAR(static_cast<double>(fma_chain_factor(k, kMultiplier)), closed, 1e-15 * closed) << "k = " << k;
  }
}

TEST(FmaChainTolerance, GrowsWithTheChainUntilTheMultiplierBoundsIt) {
  const double u = std::numeric_limits<float>::epsilon() / 2;
  EXPECT_LT(fma_chain_tolerance(u, 1, kMultiplier).max_rel, fma_chain_tolerance(u, 2, kMultiplier).max_rel);
  EXPECT_EQ(fma_chain_tolerance(u, 64, kMultiplier).max_rel, fma_chain_tolerance(u, 1024, kMultiplier).max_rel);
  EXPECT_NEAR(fma_chain_tolerance(u, 1024, kMultiplier).max_rel, 4 * u / (1 - kMultiplier), 1e-20);
}

// y from the chain of `steps` steps in FP64, rounded to float.
std::vector<float> chain_of(const std::vector<float>& x, int steps) {
  std::vector<float> y(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    double value = x[i];
    for (int s = 0; s < steps; ++s) value = value * kMultiplier + x[i];
    y[i] = static_cast<float>(value);
  }
  return y;
}

TEST(FmaChainCheck, RejectsAChainOneStepShortAtSmallK) {
  const std::vector<float> x = random_uniform(4096, 7);
  for (int k : {1, 2, 3, 8}) {
    EXPECT_TRUE(verify_fma_chain(x.data(), chain_of(x, k).data(), x.size(), k, kMultiplier).passed()) << k;
    EXPECT_FALSE(verify_fma_chain(x.data(), chain_of(x, k - 1).data(), x.size(), k, kMultiplier).passed()) << k;
  }
}

TEST(FmaChainCheck, RejectsAWrongOrUnwrittenElement) {
  const std::vector<float> x = random_uniform(4096, 8);
  std::vector<float> y = chain_of(x, 1024);
  ASSERT_TRUE(verify_fma_chain(x.data(), y.data(), x.size(), 1024, kMultiplier).passed());
  std::swap(y[10], y[11]);  // an indexing fault: every element's value depends on its own x
  EXPECT_FALSE(verify_fma_chain(x.data(), y.data(), x.size(), 1024, kMultiplier).passed());
  std::swap(y[10], y[11]);
  y[4095] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_FALSE(verify_fma_chain(x.data(), y.data(), x.size(), 1024, kMultiplier).passed());
}

// Block-sized and odd sizes: whole blocks, the elements after the last one, and fewer than a block.
const std::size_t kSizes[] = {1, 37, 4096, 100003};
const int kSteps[] = {1, 3, 64, 1024};

TEST(FmaChainOpenmp, PassesTheCheckInFp32) {
  for (std::size_t n : kSizes) {
    const std::vector<float> x = random_uniform(n, n);
    for (int k : kSteps) {
      std::vector<float> y(n, std::numeric_limits<float>::quiet_NaN());
      fma_chain_openmp(x.data(), y.data(), n, k, static_cast<float>(kMultiplier));
      const Verification v = verify_fma_chain(x.data(), y.data(), n, k, static_cast<float>(kMultiplier));
      EXPECT_TRUE(v.passed()) << "n = " << n << ", k = " << k << ": " << v.describe();
    }
  }
}

TEST(FmaChainOpenmp, PassesTheCheckInFp64) {
  for (std::size_t n : kSizes) {
    const std::vector<float> drawn = random_uniform(n, n);
    const std::vector<double> x(drawn.begin(), drawn.end());
    for (int k : kSteps) {
      std::vector<double> y(n, std::numeric_limits<double>::quiet_NaN());
      fma_chain_openmp(x.data(), y.data(), n, k, kMultiplier);
      const Verification v = verify_fma_chain(x.data(), y.data(), n, k, kMultiplier);
      EXPECT_TRUE(v.passed()) << "n = " << n << ", k = " << k << ": " << v.describe();
    }
  }
}

TEST(FmaChainOpenmp, PassesTheCheckInFp16) {
  const std::uint16_t a = float_to_half_bits(static_cast<float>(kMultiplier));
  for (std::size_t n : kSizes) {
    std::vector<std::uint16_t> x;
    for (float value : random_uniform(n, n)) x.push_back(float_to_half_bits(value));
    for (int k : kSteps) {
      std::vector<std::uint16_t> y(n, 0xFFFF);  // NaN
      fma_chain_openmp(x.data(), y.data(), n, k, a);
      const Verification v = verify_fma_chain(x.data(), y.data(), n, k, a);
      EXPECT_TRUE(v.passed()) << "n = " << n << ", k = " << k << ": " << v.describe();
    }
  }
}

}  // namespace
}  // namespace gpubench
