// The collectives study's data on the device (kernels/collective_data.cuh), with 1, 2 and 4 ranks
// simulated on one GPU: the fill writes the host's seeded input bit for bit and nothing past it; the
// check passes each rank's output built on the host (copies bit for bit, sums in FP32 in an order of
// their own), agrees with the host's check (verify_collective), and fails the smallest FP32 step
// beyond one element's bound, a NaN, an output never written and another rank's output. Without a
// usable GPU every test reports itself skipped.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "collective_data.cuh"
#include "core/collectives.hpp"
#include "core/gpu_runtime.hpp"
#include "core/system.hpp"
#include "core/verify.hpp"

namespace gpubench {
namespace {

constexpr std::uint64_t kProblemSeed = 0x5EED;

class GpuCollectiveDataTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string reason = gpu_unavailable_reason();
    if (!reason.empty()) GTEST_SKIP() << "no GPU: " << reason;
  }
};

TEST_F(GpuCollectiveDataTest, FillIsTheHostsSeededInputAndNothingPastIt) {
  // One value; under a block; past the fill's largest grid (8192 blocks of 256), which strides.
  for (std::size_t count : {std::size_t{1}, std::size_t{255}, (std::size_t{1} << 21) + 3}) {
    for (int rank : {0, 3}) {
      DeviceBuffer<float> buffer(count + 1);  // one element past the input: must stay poisoned
      CUDA_CHECK(cudaMemset(buffer.get(), 0xFF, buffer.bytes()));
      fill_collective_input(buffer.get(), count, kProblemSeed, rank, nullptr);
      CUDA_CHECK(cudaDeviceSynchronize());
      std::vector<float> filled(count + 1);
      CUDA_CHECK(cudaMemcpy(filled.data(), buffer.get(), buffer.bytes(), cudaMemcpyDeviceToHost));
      const std::vector<float> expected = seeded_input(kProblemSeed, rank, count);
      EXPECT_EQ(std::memcmp(filled.data(), expected.data(), 4 * count), 0) << "rank " << rank << ", " << count << " values";
      EXPECT_TRUE(std::isnan(filled[count])) << "wrote past the end at " << count;
    }
  }
}

struct CheckCase {
  Collective collective;
  int ranks;
};
void PrintTo(const CheckCase& c, std::ostream* out) { *out << collective_name(c.collective) << " x" << c.ranks; }

class GpuCollectiveCheckTest : public ::testing::TestWithParam<CheckCase> {
 protected:
  void SetUp() override {
    const std::string reason = gpu_unavailable_reason();
    if (!reason.empty()) GTEST_SKIP() << "no GPU: " << reason;
  }
};

// Rank `rank`'s output built here from the inputs, in each collective's layout: chunks copied bit for
// bit, sums in FP32 from the last rank to the first (an order of their own, as NCCL's ring has).
std::vector<float> host_output(Collective collective, const std::vector<std::vector<float>>& inputs, int rank,
                               const CollectiveCounts& counts) {
  const std::size_t ranks = inputs.size(), at = static_cast<std::size_t>(rank);
  std::vector<float> output;
  switch (collective) {
    case Collective::all_reduce:
    case Collective::reduce_scatter: {
      const std::size_t offset = collective == Collective::reduce_scatter ? at * counts.recv : 0;
      output.assign(counts.recv, 0.0f);
      for (std::size_t r = ranks; r-- > 0;) {
        for (std::size_t i = 0; i < counts.recv; ++i) output[i] += inputs[r][offset + i];
      }
      break;
    }
    case Collective::all_gather:
      for (const auto& input : inputs) output.insert(output.end(), input.begin(), input.end());
      break;
    case Collective::broadcast: output = inputs[0]; break;
    case Collective::all_to_all: {
      const std::size_t chunk = counts.recv / ranks;
      for (const auto& input : inputs) {
        output.insert(output.end(), input.begin() + static_cast<long>(at * chunk),
                      input.begin() + static_cast<long>((at + 1) * chunk));
      }
      break;
    }
  }
  return output;
}

// Output element i's exact value and bound, here: the contributions' FP64 sum and 2 (n-1) u sum |x|,
// or the copied value and 0.
std::pair<double, double> exact_and_bound(Collective collective, const std::vector<std::vector<float>>& inputs, int rank,
                                          const CollectiveCounts& counts, const std::vector<float>& output, std::size_t i) {
  if (!sums(collective)) return {output[i], 0.0};
  const std::size_t offset = collective == Collective::reduce_scatter ? static_cast<std::size_t>(rank) * counts.recv : 0;
  double sum = 0, magnitude = 0;
  for (const auto& input : inputs) {
    sum += input[offset + i];
    magnitude += std::fabs(static_cast<double>(input[offset + i]));
  }
  return {sum, 2.0 * static_cast<double>(inputs.size() - 1) * kFp32UnitRoundoff * magnitude};
}

// The smallest FP32 value above `exact` that lies more than `bound` from it.
float first_beyond(double exact, double bound) {
  float value = static_cast<float>(exact + bound);
  while (static_cast<double>(value) - exact > bound) value = std::nextafter(value, -INFINITY);
  while (!(static_cast<double>(value) - exact > bound)) value = std::nextafter(value, INFINITY);
  return value;
}

// The device's check of `output` (uploaded) as rank `rank`'s.
CollectiveVerification device_check(Collective collective, const std::vector<float>& output, int ranks, int rank,
                                    const CollectiveCounts& counts) {
  DeviceBuffer<float> buffer(counts.recv);
  CUDA_CHECK(cudaMemcpy(buffer.get(), output.data(), buffer.bytes(), cudaMemcpyHostToDevice));
  return check_collective_output(collective, buffer.get(), kProblemSeed, ranks, rank, counts, nullptr);
}

// The device's verdict and the host's: the same wrong elements, the errors and tolerances the same
// but for the order of the sums.
void expect_same_verdict(const CollectiveVerification& device, const CollectiveVerification& host, const std::string& where) {
  const auto near = [&](double found, double expected, const char* what) {
    EXPECT_NEAR(found, expected, 1e-12 + 1e-9 * std::fabs(expected)) << where << ": " << what;
  };
  EXPECT_EQ(device.passed(), host.passed()) << where << ": device " << device.describe() << "; host " << host.describe();
  EXPECT_EQ(device.wrong_elements, host.wrong_elements) << where;
  EXPECT_EQ(device.first_wrong_element, host.first_wrong_element) << where;
  EXPECT_EQ(device.errors.non_finite, host.errors.non_finite) << where;
  near(device.errors.rel_fro_error, host.errors.rel_fro_error, "rel_fro_error");
  near(device.errors.max_rel_error, host.errors.max_rel_error, "max_rel_error");
  near(device.errors.tolerance.rel_fro, host.errors.tolerance.rel_fro, "tolerance.rel_fro");
  near(device.errors.tolerance.max_rel, host.errors.tolerance.max_rel, "tolerance.max_rel");
}

TEST_P(GpuCollectiveCheckTest, PassesEachRanksOutputAndFailsOneElementBeyondItsBound) {
  const Collective collective = GetParam().collective;
  const int ranks = GetParam().ranks;
  // A few values per rank, not a multiple of the ranks (one block); then a million, which the check's
  // largest grid (1024 blocks of 256) strides over.
  for (std::size_t bytes : {std::size_t{4} * (5 * static_cast<std::size_t>(ranks) + 3), (std::size_t{1} << 22) + 4 * 13}) {
    const CollectiveCounts counts = collective_counts(collective, bytes, ranks);
    ASSERT_GT(counts.recv, 0u);
    std::vector<std::vector<float>> inputs;
    for (int r = 0; r < ranks; ++r) inputs.push_back(seeded_input(kProblemSeed, r, counts.send));
    for (int rank = 0; rank < ranks; ++rank) {
      const std::string where = std::string(collective_name(collective)) + " rank " + std::to_string(rank) + " of " +
                                std::to_string(ranks) + ", " + std::to_string(bytes) + " bytes";
      std::vector<float> output = host_output(collective, inputs, rank, counts);
      ASSERT_EQ(output.size(), counts.recv) << where;
      const CollectiveVerification right = device_check(collective, output, ranks, rank, counts);
      EXPECT_TRUE(right.passed()) << where << ": " << right.describe();
      expect_same_verdict(right, verify_collective(collective, output.data(), inputs, rank, counts), where);
      if (!sums(collective)) EXPECT_EQ(right.errors.rel_fro_error, 0.0) << where << ": copies are exact";

      // One element: at the edge of its bound it passes, one FP32 step beyond it fails.
      const std::size_t k = counts.recv * 2 / 3;
      const auto [exact, bound] = exact_and_bound(collective, inputs, rank, counts, output, k);
      const float beyond = first_beyond(exact, bound);
      output[k] = std::nextafter(beyond, -INFINITY);
      EXPECT_TRUE(device_check(collective, output, ranks, rank, counts).passed()) << where << ": within the bound";
      output[k] = beyond;
      const CollectiveVerification wrong = device_check(collective, output, ranks, rank, counts);
      EXPECT_FALSE(wrong.passed()) << where << ": beyond the bound";
      EXPECT_EQ(wrong.wrong_elements, 1u) << where;
      EXPECT_EQ(wrong.first_wrong_element, k) << where;
      expect_same_verdict(wrong, verify_collective(collective, output.data(), inputs, rank, counts), where);

      // A NaN before it: two wrong, the NaN first.
      output[k / 2] = NAN;
      const CollectiveVerification nan = device_check(collective, output, ranks, rank, counts);
      EXPECT_FALSE(nan.passed()) << where;
      EXPECT_EQ(nan.wrong_elements, 2u) << where;
      EXPECT_EQ(nan.first_wrong_element, k / 2) << where;
      EXPECT_EQ(nan.errors.non_finite, 1u) << where;
    }
  }
}

TEST_P(GpuCollectiveCheckTest, AnOutputNeverWrittenFails) {
  const CollectiveCounts counts = collective_counts(GetParam().collective, 4096, GetParam().ranks);
  DeviceBuffer<float> poisoned(counts.recv);
  CUDA_CHECK(cudaMemset(poisoned.get(), 0xFF, poisoned.bytes()));  // all-ones bytes: NaN
  const CollectiveVerification v = check_collective_output(GetParam().collective, poisoned.get(), kProblemSeed,
                                                           GetParam().ranks, 0, counts, nullptr);
  EXPECT_FALSE(v.passed());
  EXPECT_EQ(v.wrong_elements, counts.recv);
  EXPECT_EQ(v.errors.non_finite, counts.recv);
  EXPECT_EQ(v.first_wrong_element, 0u);
}

TEST_P(GpuCollectiveCheckTest, AnotherRanksOutputFailsWhereTheRanksDiffer) {
  // reduce-scatter and all-to-all give each rank an output of its own; the others give all the same.
  const Collective collective = GetParam().collective;
  const int ranks = GetParam().ranks;
  const CollectiveCounts counts = collective_counts(collective, 4096, ranks);
  std::vector<std::vector<float>> inputs;
  for (int r = 0; r < ranks; ++r) inputs.push_back(seeded_input(kProblemSeed, r, counts.send));
  const std::vector<float> rank_0s = host_output(collective, inputs, 0, counts);
  const bool own_output = collective == Collective::reduce_scatter || collective == Collective::all_to_all;
  EXPECT_EQ(device_check(collective, rank_0s, ranks, ranks - 1, counts).passed(), ranks == 1 || !own_output)
      << "rank 0's output checked as rank " << ranks - 1 << "'s";
}

std::vector<CheckCase> every_collective_on_1_2_and_4_ranks() {
  std::vector<CheckCase> cases;
  for (Collective collective : {Collective::all_reduce, Collective::all_gather, Collective::reduce_scatter,
                                Collective::broadcast, Collective::all_to_all}) {
    for (int ranks : {1, 2, 4}) cases.push_back({collective, ranks});
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Collectives, GpuCollectiveCheckTest, ::testing::ValuesIn(every_collective_on_1_2_and_4_ranks()),
                         [](const auto& info) {
                           return std::string(collective_name(info.param.collective)) + "_" +
                                  std::to_string(info.param.ranks) + "_ranks";
                         });

}  // namespace
}  // namespace gpubench
