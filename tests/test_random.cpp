// The random draws (core/random): a seed gives the same values whatever the OpenMP thread count,
// block by block as the header defines them (so in every process), in range and not constant.
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <random>
#include <vector>

#include "core/random.hpp"

namespace gpubench {
namespace {

constexpr std::size_t kBlock = std::size_t{1} << 16;
constexpr std::size_t kCount = 4 * kBlock + 5;  // blocks and a part of one

// `draw` with 1, 2 and 3 OpenMP threads (more than this machine may have: a block's values cannot
// depend on which thread drew it).
template <typename Draw>
void expect_same_on_any_threads(Draw draw) {
  const int threads = omp_get_max_threads();
  const auto reference = draw();
  for (int t : {1, 2, 3}) {
    omp_set_num_threads(t);
    EXPECT_EQ(draw(), reference) << t << " threads";
  }
  omp_set_num_threads(threads);
}

TEST(RandomDraws, AreTheSameWhateverTheThreadCount) {
  expect_same_on_any_threads([] { return random_uniform(kCount, 42); });
  expect_same_on_any_threads([] { return random_normal(kCount, 42); });
  expect_same_on_any_threads([] { return random_uniform_as<double>(kCount, 42); });
}

// The definition, written out: block b's values come from mt19937_64(configuration_seed(seed, b)), block
// 0's from mt19937_64(seed), so a seed gives these values in any process and with any library that keeps
// the engine's definition.
TEST(RandomDraws, EachBlockIsItsOwnSeededStream) {
  const std::vector<float> uniform = random_uniform(kCount, 7), normal = random_normal(kCount, 7);
  for (std::size_t block : {std::size_t{0}, std::size_t{3}, std::size_t{4}}) {
    std::mt19937_64 engine(block == 0 ? 7 : configuration_seed(7, block));
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    EXPECT_EQ(uniform[block * kBlock], u(engine)) << "block " << block;
    EXPECT_EQ(uniform[block * kBlock + 1], u(engine)) << "block " << block;
    std::mt19937_64 engine_n(block == 0 ? 7 : configuration_seed(7, block));
    std::normal_distribution<float> z(0.0f, 1.0f);
    EXPECT_EQ(normal[block * kBlock], z(engine_n)) << "block " << block;
  }
  EXPECT_NE(uniform[0], uniform[kBlock]);  // the blocks are not one stream repeated
}

TEST(RandomDraws, Fp64ArraysHoldTheFp32Values) {
  const std::vector<float> narrow = random_uniform(kCount, 9);
  const std::vector<double> wide = random_uniform_as<double>(kCount, 9);
  ASSERT_EQ(wide.size(), narrow.size());
  for (std::size_t i = 0; i < kCount; ++i) ASSERT_EQ(wide[i], static_cast<double>(narrow[i])) << i;
}

TEST(RandomDraws, UniformStaysInRangeAndNormalHasUnitSpread) {
  const std::vector<float> uniform = random_uniform(kCount, 11), normal = random_normal(kCount, 11);
  double sum = 0, sum_sq = 0;
  for (std::size_t i = 0; i < kCount; ++i) {
    ASSERT_GE(uniform[i], -1.0f);
    ASSERT_LT(uniform[i], 1.0f);
    sum += uniform[i];
    sum_sq += static_cast<double>(normal[i]) * normal[i];
  }
  EXPECT_LT(std::fabs(sum / kCount), 0.01);               // mean 0 within many standard errors (0.0011)
  EXPECT_NEAR(sum_sq / kCount, 1.0, 0.02);                 // variance 1 (standard error about 0.003)
  EXPECT_NE(random_uniform(kCount, 12), uniform);          // another seed, other values
}

}  // namespace
}  // namespace gpubench
