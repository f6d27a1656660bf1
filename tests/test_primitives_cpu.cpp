// The primitives study's CPU side: the exact checks (core/primitives_check) accept right outputs and
// catch each kind of wrong one, and the standard-library baselines (one thread, and
// std::execution::par where the build has TBB) pass them on random inputs of odd sizes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <vector>

#include "core/host_memory.hpp"
#include "core/primitives_check.hpp"
#include "primitives_cpu.hpp"

namespace gpubench {
namespace {

template <typename T>
std::vector<T> random_words(std::size_t n, std::uint64_t seed) {
  std::vector<T> words(n);
  fill_random_bytes(reinterpret_cast<std::uint8_t*>(words.data()), n * sizeof(T), seed);
  return words;
}

std::vector<std::uint32_t> positions(std::size_t n) {
  std::vector<std::uint32_t> all(n);
  std::iota(all.begin(), all.end(), 0u);
  return all;
}

std::vector<std::uint32_t> prefix_sums(const std::vector<std::uint32_t>& values) {
  std::vector<std::uint32_t> sums(values.size());
  std::uint32_t sum = 0;
  for (std::size_t i = 0; i < values.size(); ++i) sums[i] = sum += values[i];
  return sums;
}

// --- the checks ---------------------------------------------------------------------------
TEST(PrimitiveChecks, SumWrapsModulo2To32) {
  const std::vector<std::uint32_t> values = {0xFFFFFFFFu, 2u, 0x80000000u, 0x80000000u};
  EXPECT_EQ(wrapping_sum(values.data(), values.size()), 1u);
  EXPECT_EQ(check_sum(1u, 1u), "");
  EXPECT_NE(check_sum(2u, 1u), "");
}

TEST(PrimitiveChecks, ScanCatchesTheFirstWrongPrefix) {
  const std::size_t n = (3u << 20) + 17;  // several of the check's blocks, the last one partial
  const auto values = random_words<std::uint32_t>(n, 1);
  auto out = prefix_sums(values);
  EXPECT_EQ(check_inclusive_scan(values.data(), out.data(), n), "");
  for (std::size_t wrong : {std::size_t{0}, std::size_t{1} << 20, n - 1}) {
    auto broken = out;
    broken[wrong] += 1;
    const std::string message = check_inclusive_scan(values.data(), broken.data(), n);
    EXPECT_NE(message.find("element " + std::to_string(wrong) + " is " + std::to_string(broken[wrong]) +
                           ", expected " + std::to_string(out[wrong])),
              std::string::npos)
        << message;
  }
  // An exclusive scan is a different answer.
  std::vector<std::uint32_t> exclusive(n, 0);
  std::copy(out.begin(), out.end() - 1, exclusive.begin() + 1);
  EXPECT_NE(check_inclusive_scan(values.data(), exclusive.data(), n), "");
}

TEST(PrimitiveChecks, SortedKeysAreTheInputSortedAndNothingElse) {
  const auto keys = random_words<std::uint64_t>(100003, 2);
  auto expected = keys;
  std::sort(expected.begin(), expected.end());
  const auto reference = sorted_keys(keys);
  EXPECT_EQ(reference, expected);
  EXPECT_EQ(check_sorted(expected.data(), reference), "");
  auto unsorted = expected;
  std::swap(unsorted[10], unsorted[11]);
  EXPECT_NE(check_sorted(unsorted.data(), reference), "");
  auto not_a_permutation = expected;  // still sorted, one key replaced by its neighbour
  not_a_permutation[500] = not_a_permutation[501];
  EXPECT_NE(check_sorted(not_a_permutation.data(), reference), "");
}

TEST(PrimitiveChecks, SortedPairsMustBeInputPairsEachOnce) {
  // Few distinct keys: many equal keys, whose values may come in any order.
  std::vector<std::uint32_t> input = random_words<std::uint32_t>(4099, 3);
  for (std::uint32_t& key : input) key %= 16;
  const auto reference = sorted_keys(input);
  std::vector<std::uint32_t> order = positions(input.size());
  std::stable_sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) { return input[a] < input[b]; });
  std::vector<std::uint32_t> keys(input.size());
  for (std::size_t i = 0; i < keys.size(); ++i) keys[i] = input[order[i]];
  EXPECT_EQ(check_sorted_pairs(input.data(), reference, keys.data(), order.data()), "");
  auto swapped_tie = order;  // two equal keys' values the other way round: still right
  ASSERT_EQ(keys[0], keys[1]);
  std::swap(swapped_tie[0], swapped_tie[1]);
  EXPECT_EQ(check_sorted_pairs(input.data(), reference, keys.data(), swapped_tie.data()), "");

  auto repeated = order;  // a position given twice, another never: every key still matches
  const auto twin = std::find_if(order.begin() + 1, order.end(), [&](std::uint32_t p) { return input[p] == keys[0]; });
  ASSERT_NE(twin, order.end());
  repeated[static_cast<std::size_t>(twin - order.begin())] = order[0];
  EXPECT_NE(check_sorted_pairs(input.data(), reference, keys.data(), repeated.data()).find("appears twice"),
            std::string::npos);
  auto unmoved = positions(input.size());  // keys sorted, values left where they were
  EXPECT_NE(check_sorted_pairs(input.data(), reference, keys.data(), unmoved.data()), "");
  auto out_of_range = order;
  out_of_range[7] = static_cast<std::uint32_t>(input.size());
  EXPECT_NE(check_sorted_pairs(input.data(), reference, keys.data(), out_of_range.data()).find("not a position"),
            std::string::npos);
}

TEST(PrimitiveChecks, TransformIsComparedBitForBit) {
  const std::vector<float> x = {0.1f, -0.7f, 0.33f, 1e-3f};
  const float a = 1.7f, b = -0.3f;
  std::vector<float> y(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) y[i] = std::fma(a, x[i], b);
  EXPECT_EQ(check_affine_transform(x.data(), y.data(), x.size(), a, b), "");
  auto off_by_one_bit = y;
  off_by_one_bit[2] = std::nextafter(y[2], 2.0f);
  EXPECT_NE(check_affine_transform(x.data(), off_by_one_bit.data(), x.size(), a, b).find("element 2"),
            std::string::npos);
}

// --- the standard-library baselines ---------------------------------------------------------
// Every primitive of `f` on random inputs of n elements, each output checked.
void expect_primitives_right(const PrimitiveFunctions& f, std::size_t n) {
  SCOPED_TRACE("n = " + std::to_string(n));
  const auto values = random_words<std::uint32_t>(n, n);
  std::uint32_t sum = ~wrapping_sum(values.data(), n);
  f.reduce(values.data(), n, &sum);
  EXPECT_EQ(check_sum(sum, wrapping_sum(values.data(), n)), "");

  std::vector<std::uint32_t> scanned(n, 0xFFFFFFFFu);
  f.inclusive_scan(values.data(), scanned.data(), n);
  EXPECT_EQ(check_inclusive_scan(values.data(), scanned.data(), n), "");

  const auto reference = sorted_keys(values);
  auto keys = values;
  f.sort_u32(keys.data(), n);
  EXPECT_EQ(check_sorted(keys.data(), reference), "");

  keys = values;
  auto pair_values = positions(n);
  f.sort_pairs(keys.data(), pair_values.data(), n);
  EXPECT_EQ(check_sorted_pairs(values.data(), reference, keys.data(), pair_values.data()), "");

  const auto wide = random_words<std::uint64_t>(n, n + 1);
  auto wide_keys = wide;
  f.sort_u64(wide_keys.data(), n);
  EXPECT_EQ(check_sorted(wide_keys.data(), sorted_keys(wide)), "");

  std::vector<float> x(n), y(n, -1.0f);
  for (std::size_t i = 0; i < n; ++i) x[i] = static_cast<float>(values[i] >> 8) * 0x1p-23f - 1.0f;
  f.transform(x.data(), y.data(), n, 1.3f, -0.25f);
  EXPECT_EQ(check_affine_transform(x.data(), y.data(), n, 1.3f, -0.25f), "");
}

const std::size_t kSizes[] = {1, 7, 1000, 65537, (1u << 20) + 5};

TEST(PrimitivesCpu, StdSeqIsRight) {
  for (std::size_t n : kSizes) expect_primitives_right(std_seq_primitives(), n);
}

TEST(PrimitivesCpu, GnuParallelIsRight) {
  EXPECT_GE(gnu_parallel_threads(), 1);
  for (std::size_t n : kSizes) expect_primitives_right(gnu_parallel_primitives(), n);
}

TEST(PrimitivesCpu, StdParIsRightWhereBuilt) {
  if (*std_par_unavailable_reason()) GTEST_SKIP() << std_par_unavailable_reason();
  EXPECT_GE(std_par_threads(), 1);
  for (std::size_t n : kSizes) expect_primitives_right(std_par_primitives(), n);
}

TEST(PrimitivesCpu, StdParSaysWhyNotWhereNotBuilt) {
  const PrimitiveFunctions f = std_par_primitives();
  if (*std_par_unavailable_reason()) {
    EXPECT_EQ(f.reduce, nullptr);
    EXPECT_NE(std::string(std_par_unavailable_reason()).find("TBB"), std::string::npos);
  } else {
    EXPECT_NE(f.sort_pairs, nullptr);
  }
}

}  // namespace
}  // namespace gpubench
