#include "core/primitives_check.hpp"

#include <parallel/algorithm>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace gpubench {
namespace {

constexpr std::size_t kBlock = 1u << 20;  // elements per OpenMP work item
constexpr std::size_t kNone = std::numeric_limits<std::size_t>::max();

std::size_t blocks_of(std::size_t n) { return (n + kBlock - 1) / kBlock; }

// The smallest i < n for which wrong(i) holds, or kNone; blocks of elements on all threads.
template <typename Wrong>
std::size_t first_where(std::size_t n, Wrong&& wrong) {
  std::size_t first = kNone;
#pragma omp parallel for schedule(static) reduction(min : first)
  for (std::size_t block = 0; block < blocks_of(n); ++block) {
    const std::size_t end = std::min(n, (block + 1) * kBlock);
    for (std::size_t i = block * kBlock; i < end; ++i)
      if (wrong(i)) {
        first = std::min(first, i);
        break;
      }
  }
  return first;
}

template <typename T>
std::string element_message(std::size_t i, T found, T expected) {
  return "element " + std::to_string(i) + " is " + std::to_string(found) + ", expected " + std::to_string(expected);
}

template <typename Key>
std::vector<Key> parallel_sorted(const std::vector<Key>& keys) {
  std::vector<Key> sorted = keys;
  __gnu_parallel::sort(sorted.begin(), sorted.end());
  return sorted;
}

template <typename Key>
std::string keys_check(const Key* keys, const std::vector<Key>& reference) {
  const std::size_t i = first_where(reference.size(), [&](std::size_t k) { return keys[k] != reference[k]; });
  return i == kNone ? "" : "sorted " + element_message(i, keys[i], reference[i]);
}

std::uint32_t bits_of(float value) {
  std::uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

}  // namespace

std::uint32_t wrapping_sum(const std::uint32_t* values, std::size_t n) {
  std::uint32_t sum = 0;
#pragma omp parallel for schedule(static) reduction(+ : sum)
  for (std::size_t i = 0; i < n; ++i) sum += values[i];
  return sum;
}

std::vector<std::uint32_t> sorted_keys(const std::vector<std::uint32_t>& keys) { return parallel_sorted(keys); }
std::vector<std::uint64_t> sorted_keys(const std::vector<std::uint64_t>& keys) { return parallel_sorted(keys); }

std::string check_sum(std::uint32_t sum, std::uint32_t expected) {
  return sum == expected ? "" : "sum " + std::to_string(sum) + ", expected " + std::to_string(expected);
}

// Each block's sum first, then each block checked from the sum of the blocks before it.
std::string check_inclusive_scan(const std::uint32_t* values, const std::uint32_t* out, std::size_t n) {
  const std::size_t blocks = blocks_of(n);
  std::vector<std::uint32_t> before(blocks + 1, 0);
#pragma omp parallel for schedule(static)
  for (std::size_t block = 0; block < blocks; ++block) {
    const std::size_t begin = block * kBlock, end = std::min(n, begin + kBlock);
    std::uint32_t sum = 0;
    for (std::size_t i = begin; i < end; ++i) sum += values[i];
    before[block + 1] = sum;
  }
  for (std::size_t block = 0; block < blocks; ++block) before[block + 1] += before[block];
  std::size_t first = kNone;
  std::uint32_t expected_at_first = 0;
#pragma omp parallel for schedule(static) reduction(min : first)
  for (std::size_t block = 0; block < blocks; ++block) {
    const std::size_t begin = block * kBlock, end = std::min(n, begin + kBlock);
    std::uint32_t sum = before[block];
    for (std::size_t i = begin; i < end; ++i) {
      sum += values[i];
      if (out[i] != sum) {
        first = std::min(first, i);
        break;
      }
    }
  }
  if (first == kNone) return "";
  for (std::size_t i = (first / kBlock) * kBlock; i <= first; ++i) expected_at_first += values[i];
  expected_at_first += before[first / kBlock];
  return "prefix sum " + element_message(first, out[first], expected_at_first);
}

std::string check_sorted(const std::uint32_t* keys, const std::vector<std::uint32_t>& reference) {
  return keys_check(keys, reference);
}

std::string check_sorted(const std::uint64_t* keys, const std::vector<std::uint64_t>& reference) {
  return keys_check(keys, reference);
}

std::string check_sorted_pairs(const std::uint32_t* input, const std::vector<std::uint32_t>& reference,
                               const std::uint32_t* keys, const std::uint32_t* values) {
  const std::string wrong_keys = keys_check(keys, reference);
  if (!wrong_keys.empty()) return wrong_keys;
  const std::size_t n = reference.size();
  const std::size_t out_of_range = first_where(n, [&](std::size_t i) { return values[i] >= n; });
  if (out_of_range != kNone)
    return "value " + std::to_string(out_of_range) + " is " + std::to_string(values[out_of_range]) +
           ", not a position below " + std::to_string(n);
  const std::size_t mismatched = first_where(n, [&](std::size_t i) { return input[values[i]] != keys[i]; });
  if (mismatched != kNone)
    return "pair " + std::to_string(mismatched) + " has key " + std::to_string(keys[mismatched]) + " but value " +
           std::to_string(values[mismatched]) + ", whose key was " + std::to_string(input[values[mismatched]]);
  // Each position once: one bit per position, set atomically; a bit already set is a repeat.
  std::vector<std::uint64_t> seen((n + 63) / 64, 0);
  const std::size_t repeated = first_where(n, [&](std::size_t i) {
    const std::uint64_t bit = std::uint64_t{1} << (values[i] % 64);
    return (__atomic_fetch_or(&seen[values[i] / 64], bit, __ATOMIC_RELAXED) & bit) != 0;
  });
  return repeated == kNone ? "" : "position " + std::to_string(values[repeated]) + " appears twice (again at pair " +
                                      std::to_string(repeated) + ")";
}

std::string check_affine_transform(const float* in, const float* out, std::size_t n, float a, float b) {
  const std::size_t i =
      first_where(n, [&](std::size_t k) { return bits_of(out[k]) != bits_of(std::fma(a, in[k], b)); });
  if (i == kNone) return "";
  return "element " + std::to_string(i) + " is " + std::to_string(out[i]) + ", expected " +
         std::to_string(std::fma(a, in[i], b)) + " (bits differ)";
}

}  // namespace gpubench
