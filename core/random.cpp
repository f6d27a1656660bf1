#include "core/random.hpp"

#include <algorithm>
#include <random>

namespace gpubench {
namespace {

// Values are drawn in blocks of 2^16, each from its own engine, on the OpenMP threads: the values depend
// on the seed alone, never on the thread count, and the gigabytes of inputs of the largest sizes take a
// fraction of one thread's time. Block 0's engine is seeded with the seed itself, so a draw of up to 2^16
// values is the one a single engine always gave (the small inputs, and the tests built on them, keep their
// values); block b > 0's with configuration_seed(seed, b).
constexpr std::size_t kBlock = std::size_t{1} << 16;

std::uint64_t block_seed(std::uint64_t seed, std::uint64_t block) {
  return block == 0 ? seed : configuration_seed(seed, block);
}

template <typename T, typename Distribution>
void fill_blocks(T* out, std::size_t count, std::uint64_t seed, const Distribution& prototype) {
  const long blocks = static_cast<long>((count + kBlock - 1) / kBlock);
#pragma omp parallel for schedule(static)
  for (long block = 0; block < blocks; ++block) {
    std::mt19937_64 engine(block_seed(seed, static_cast<std::uint64_t>(block)));
    Distribution distribution = prototype;  // a fresh one per block: normal_distribution keeps a spare value
    const std::size_t begin = static_cast<std::size_t>(block) * kBlock, end = std::min(count, begin + kBlock);
    for (std::size_t i = begin; i < end; ++i) out[i] = static_cast<T>(distribution(engine));
  }
}

}  // namespace

std::vector<float> random_uniform(std::size_t count, std::uint64_t seed) { return random_uniform_as<float>(count, seed); }

template <typename T>
std::vector<T> random_uniform_as(std::size_t count, std::uint64_t seed) {
  std::vector<T> values(count);
  fill_blocks(values.data(), count, seed, std::uniform_real_distribution<float>(-1.0f, 1.0f));
  return values;
}
template std::vector<float> random_uniform_as<float>(std::size_t count, std::uint64_t seed);
template std::vector<double> random_uniform_as<double>(std::size_t count, std::uint64_t seed);

std::vector<float> random_normal(std::size_t count, std::uint64_t seed) {
  std::vector<float> values(count);
  fill_blocks(values.data(), count, seed, std::normal_distribution<float>(0.0f, 1.0f));
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
