// What each parallel primitive of core/operations.hpp must produce from its inputs, computed on the
// host apart from every implementation the primitives study times, and the exact checks of an
// implementation's output against it. Each check returns "" when the output is right, else what is
// wrong (the first wrong element and both values).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace gpubench {

// The sum of the values modulo 2^32.
std::uint32_t wrapping_sum(const std::uint32_t* values, std::size_t n);

// The keys in ascending order, by libstdc++'s parallel-mode sort (OpenMP threads): not the std::sort
// or TBB the CPU baselines time.
std::vector<std::uint32_t> sorted_keys(const std::vector<std::uint32_t>& keys);
std::vector<std::uint64_t> sorted_keys(const std::vector<std::uint64_t>& keys);

std::string check_sum(std::uint32_t sum, std::uint32_t expected);
// out[i] must be values[0] + ... + values[i] modulo 2^32.
std::string check_inclusive_scan(const std::uint32_t* values, const std::uint32_t* out, std::size_t n);
// Sorted keys must equal the reference element for element: sorted, and a permutation of the input
// (the reference is the input sorted).
std::string check_sorted(const std::uint32_t* keys, const std::vector<std::uint32_t>& reference);
std::string check_sorted(const std::uint64_t* keys, const std::vector<std::uint64_t>& reference);
// Pairs sorted by key whose values were each key's position in the input: the keys must equal the
// reference (the input's keys sorted), every value must name a distinct position (a permutation of
// 0..n-1), and input[values[i]] must be keys[i]: every output pair is an input pair, each once.
std::string check_sorted_pairs(const std::uint32_t* input, const std::vector<std::uint32_t>& reference,
                               const std::uint32_t* keys, const std::uint32_t* values);
// out[i] must have the bits of std::fma(a, in[i], b).
std::string check_affine_transform(const float* in, const float* out, std::size_t n, float a, float b);

}  // namespace gpubench
