// The CPU entries' thread-placed arrays: the values they were given, and every page written
// (resident) when construction returns, so no timed call takes a first-touch page fault. Which
// thread wrote a page cannot be seen on a one-node machine; the split is OpenMP's own.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "core/first_touch.hpp"
#include "core/random.hpp"
#include "host_memory_probes.hpp"

namespace gpubench {
namespace {

// Over several pages and not a multiple of a page, the thread count or a vector width.
constexpr std::size_t kCount = (3u << 20) / sizeof(float) + 13;

TEST(ThreadPlacedArray, CopiesEveryElementAndIsResident) {
  const std::vector<float> source = random_uniform(kCount, 5);
  const ThreadPlacedArray<float> placed(source);
  ASSERT_EQ(placed.size(), kCount);
  for (std::size_t i = 0; i < kCount; ++i) ASSERT_EQ(placed.data()[i], source[i]) << "element " << i;
  EXPECT_EQ(resident_fraction(placed.data(), kCount * sizeof(float)), 1.0);
}

TEST(ThreadPlacedArray, FillsEveryElementAndIsResident) {
  const ThreadPlacedArray<float> poisoned(kCount, NAN);
  for (std::size_t i = 0; i < kCount; ++i) ASSERT_TRUE(std::isnan(poisoned.data()[i])) << "element " << i;
  EXPECT_EQ(resident_fraction(poisoned.data(), kCount * sizeof(float)), 1.0);
  const ThreadPlacedArray<std::uint8_t> bytes(kCount, 0xFF);
  for (std::size_t i = 0; i < kCount; ++i) ASSERT_EQ(bytes.data()[i], 0xFF) << "byte " << i;
}

TEST(ThreadPlacedArray, OneWriterCopiesAndFillsEveryElement) {  // an implementation on one thread places its own
  const std::vector<float> source = random_uniform(kCount, 6);
  const ThreadPlacedArray<float> placed(source, 1);
  ASSERT_EQ(placed.size(), kCount);
  for (std::size_t i = 0; i < kCount; ++i) ASSERT_EQ(placed.data()[i], source[i]) << "element " << i;
  const ThreadPlacedArray<float> filled(kCount, 2.5f, 1);
  for (std::size_t i = 0; i < kCount; ++i) ASSERT_EQ(filled.data()[i], 2.5f) << "element " << i;
  EXPECT_EQ(resident_fraction(filled.data(), kCount * sizeof(float)), 1.0);
}

TEST(ThreadPlacedArray, HoldsNothingWhenEmpty) {
  const ThreadPlacedArray<int> empty(std::vector<int>{});
  EXPECT_EQ(empty.size(), 0u);
  const ThreadPlacedArray<int> single(1, 7);
  EXPECT_EQ(single.data()[0], 7);
}

}  // namespace
}  // namespace gpubench
