#include "core/random.hpp"

#include <algorithm>
#include <random>

namespace gpubench {

std::vector<float> random_uniform(std::size_t count, std::uint64_t seed) {
  std::mt19937_64 engine(seed);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<float> values(count);
  for (float& v : values) v = uniform(engine);
  return values;
}

std::vector<float> random_uniform_parallel(std::size_t count, std::uint64_t seed) {
  constexpr std::size_t kBlock = std::size_t{1} << 16;
  std::vector<float> values(count);
  const long blocks = static_cast<long>((count + kBlock - 1) / kBlock);
#pragma omp parallel for schedule(static)
  for (long block = 0; block < blocks; ++block) {
    std::mt19937_64 engine(configuration_seed(seed, static_cast<std::uint64_t>(block)));
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
    const std::size_t end = std::min(count, (block + 1) * kBlock);
    for (std::size_t i = block * kBlock; i < end; ++i) values[i] = uniform(engine);
  }
  return values;
}

std::vector<float> random_normal(std::size_t count, std::uint64_t seed) {
  std::mt19937_64 engine(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> values(count);
  for (float& v : values) v = normal(engine);
  return values;
}

std::uint64_t configuration_seed(std::uint64_t configuration, std::uint64_t operand) {
  // splitmix64 finaliser: nearby configurations get unrelated streams.
  std::uint64_t z = configuration * 0x9E3779B97F4A7C15ull + operand + 0x632BE59BD9B4E019ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

}  // namespace gpubench
