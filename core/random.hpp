// Random inputs: studies never time zeros or constants, which change power draw,
// clocks and sometimes the code path.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace gpubench {

// Every draw is made on the OpenMP threads, in blocks of 2^16 values each from its own mt19937_64 engine,
// seeded with the seed for block 0 and with configuration_seed(seed, block) for the others: a seed gives
// the same values in every process, whatever the thread count, and gigabytes of inputs take a fraction of
// one thread's time.

// Values uniform in [-1, 1), reproducible from the seed.
std::vector<float> random_uniform(std::size_t count, std::uint64_t seed);
// The same FP32 values stored as T (float or double): an FP64 array holding exactly random_uniform's
// values, written without an FP32 copy first.
template <typename T>
std::vector<T> random_uniform_as(std::size_t count, std::uint64_t seed);
// Standard normal values, reproducible from the seed: unlike uniform inputs they have
// outliers, which matter to formats scaled by their largest value.
std::vector<float> random_normal(std::size_t count, std::uint64_t seed);

// A seed that differs between configurations and between the operands of one.
std::uint64_t configuration_seed(std::uint64_t configuration, std::uint64_t operand);

}  // namespace gpubench
