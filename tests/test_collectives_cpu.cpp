// The collectives study's host side: rank discovery from each launcher's environment, the message
// shapes, nccl-tests' bus factors, the seeded inputs and the host's checks of each collective's output,
// the reference of the device's (core/launched_rank.hpp, core/collectives.hpp,
// core/collective_elements.hpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/collective_elements.hpp"
#include "core/collectives.hpp"
#include "core/launched_rank.hpp"
#include "core/random.hpp"

namespace gpubench {
namespace {

EnvironmentReader environment(const std::map<std::string, std::string>& variables) {
  return [variables](const char* name) -> const char* {
    const auto found = variables.find(name);
    return found == variables.end() ? nullptr : found->second.c_str();
  };
}

TEST(LaunchedRank, EachLauncherEnvironment) {
  const auto slurm = rank_from_environment(environment({{"SLURM_PROCID", "5"}, {"SLURM_NTASKS", "16"}, {"SLURM_LOCALID", "1"}}));
  ASSERT_TRUE(slurm);
  EXPECT_EQ(slurm->launcher, "slurm");
  EXPECT_EQ(slurm->rank, 5);
  EXPECT_EQ(slurm->size, 16);
  EXPECT_EQ(slurm->local_rank, 1);
  const auto ompi = rank_from_environment(environment(
      {{"OMPI_COMM_WORLD_RANK", "3"}, {"OMPI_COMM_WORLD_SIZE", "4"}, {"OMPI_COMM_WORLD_LOCAL_RANK", "3"}}));
  ASSERT_TRUE(ompi);
  EXPECT_EQ(ompi->launcher, "open_mpi");
  EXPECT_EQ(ompi->rank, 3);
  const auto torchrun = rank_from_environment(environment({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "0"}}));
  ASSERT_TRUE(torchrun);
  EXPECT_EQ(torchrun->launcher, "torchrun");
  EXPECT_EQ(torchrun->size, 2);
  EXPECT_FALSE(rank_from_environment(environment({{"SLURM_JOB_ID", "7"}})));
}

TEST(LaunchedRank, TheStepsTaskCountWinsOverTheAllocations) {
  // `srun --ntasks=1` in an allocation of 8 tasks.
  const auto batch = rank_from_environment(environment({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "8"}, {"SLURM_LOCALID", "0"},
                                                        {"SLURM_STEP_NUM_TASKS", "1"}}));
  ASSERT_TRUE(batch);
  EXPECT_EQ(batch->size, 1);
}

TEST(LaunchedRank, OpenMpiWinsOverTheBatchStepsSlurmVariables) {
  // mpirun inside an sbatch script: every rank inherits the batch step's SLURM_PROCID=0.
  const auto found = rank_from_environment(environment({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "1"},
                                                        {"SLURM_LOCALID", "0"}, {"OMPI_COMM_WORLD_RANK", "2"},
                                                        {"OMPI_COMM_WORLD_SIZE", "4"}, {"OMPI_COMM_WORLD_LOCAL_RANK", "2"}}));
  ASSERT_TRUE(found);
  EXPECT_EQ(found->launcher, "open_mpi");
  EXPECT_EQ(found->rank, 2);
}

TEST(LaunchedRank, IncompleteOrInconsistentVariablesAreErrors) {
  EXPECT_THROW(rank_from_environment(environment({{"SLURM_PROCID", "1"}, {"SLURM_LOCALID", "1"}})), std::invalid_argument);
  EXPECT_THROW(rank_from_environment(environment({{"RANK", "x"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "0"}})),
               std::invalid_argument);
  EXPECT_THROW(rank_from_environment(environment({{"RANK", "2"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "0"}})),
               std::invalid_argument);
  EXPECT_THROW(rank_from_environment(environment({{"RANK", "-1"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "0"}})),
               std::invalid_argument);
}

TEST(CollectiveShapes, NcclTestsConventions) {
  EXPECT_EQ(collective_counts(Collective::all_reduce, 1024, 4).send, 256u);
  EXPECT_EQ(collective_counts(Collective::all_gather, 1024, 4).send, 64u);
  EXPECT_EQ(collective_counts(Collective::all_gather, 1024, 4).recv, 256u);
  EXPECT_EQ(collective_counts(Collective::reduce_scatter, 1024, 4).recv, 64u);
  EXPECT_EQ(collective_counts(Collective::reduce_scatter, 1000, 3).message_bytes(), 996u);  // 83 x 3 values
  EXPECT_EQ(collective_counts(Collective::all_to_all, 8, 4).send, 0u);  // two values for four ranks
  EXPECT_EQ(collective_counts(Collective::broadcast, std::size_t{1} << 33, 8).recv, std::size_t{1} << 31);
}

TEST(CollectiveShapes, BusBandwidthFactors) {
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(Collective::all_reduce, 8), 1.75);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(Collective::all_gather, 8), 0.875);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(Collective::reduce_scatter, 4), 0.75);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(Collective::all_to_all, 2), 0.5);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(Collective::broadcast, 8), 1.0);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(Collective::all_reduce, 1), 0.0);
}

std::vector<std::vector<float>> inputs_for(const CollectiveCounts& counts, int ranks) {
  std::vector<std::vector<float>> inputs;
  for (int rank = 0; rank < ranks; ++rank) inputs.push_back(random_uniform(counts.send, 100 + rank));
  return inputs;
}

// What NCCL's ring computes: FP32 sums in an order other than the check's.
std::vector<float> fp32_sum_from_last(const std::vector<std::vector<float>>& inputs, std::size_t offset, std::size_t count) {
  std::vector<float> sum(count, 0.0f);
  for (std::size_t r = inputs.size(); r-- > 0;) {
    for (std::size_t i = 0; i < count; ++i) sum[i] += inputs[r][offset + i];
  }
  return sum;
}

TEST(CollectiveCheck, Fp32SumsInAnyOrderPassAndAShiftedSliceFails) {
  const int ranks = 8;
  const CollectiveCounts all_reduce = collective_counts(Collective::all_reduce, 4096, ranks);
  const auto inputs = inputs_for(all_reduce, ranks);
  std::vector<float> output = fp32_sum_from_last(inputs, 0, all_reduce.recv);
  EXPECT_TRUE(verify_collective(Collective::all_reduce, output.data(), inputs, 3, all_reduce).passed());
  output[7] += 1e-3f;
  EXPECT_FALSE(verify_collective(Collective::all_reduce, output.data(), inputs, 3, all_reduce).passed());

  const CollectiveCounts scatter = collective_counts(Collective::reduce_scatter, 4096, ranks);
  const auto scatter_inputs = inputs_for(scatter, ranks);
  const std::vector<float> slice_2 = fp32_sum_from_last(scatter_inputs, 2 * scatter.recv, scatter.recv);
  EXPECT_TRUE(verify_collective(Collective::reduce_scatter, slice_2.data(), scatter_inputs, 2, scatter).passed());
  EXPECT_FALSE(verify_collective(Collective::reduce_scatter, slice_2.data(), scatter_inputs, 3, scatter).passed());
}

TEST(CollectiveCheck, OneRanksSumIsExact) {
  const CollectiveCounts counts = collective_counts(Collective::all_reduce, 256, 1);
  const auto inputs = inputs_for(counts, 1);
  std::vector<float> output = inputs[0];
  EXPECT_TRUE(verify_collective(Collective::all_reduce, output.data(), inputs, 0, counts).passed());
  output[0] = std::nextafter(output[0], 2.0f);
  EXPECT_FALSE(verify_collective(Collective::all_reduce, output.data(), inputs, 0, counts).passed());
}

TEST(CollectiveCheck, CopiesMustBeExact) {
  const int ranks = 4;
  const CollectiveCounts gather = collective_counts(Collective::all_gather, 1024, ranks);
  const auto gather_inputs = inputs_for(gather, ranks);
  std::vector<float> gathered;
  for (const auto& input : gather_inputs) gathered.insert(gathered.end(), input.begin(), input.end());
  EXPECT_TRUE(verify_collective(Collective::all_gather, gathered.data(), gather_inputs, 1, gather).passed());
  gathered[gather.send] = std::nextafter(gathered[gather.send], 2.0f);
  EXPECT_FALSE(verify_collective(Collective::all_gather, gathered.data(), gather_inputs, 1, gather).passed());

  const CollectiveCounts a2a = collective_counts(Collective::all_to_all, 1024, ranks);
  const auto a2a_inputs = inputs_for(a2a, ranks);
  const std::size_t chunk = a2a.send / ranks;
  std::vector<float> received;  // rank 2 receives chunk 2 of every rank's input, in rank order
  for (const auto& input : a2a_inputs) received.insert(received.end(), input.begin() + 2 * chunk, input.begin() + 3 * chunk);
  EXPECT_TRUE(verify_collective(Collective::all_to_all, received.data(), a2a_inputs, 2, a2a).passed());
  EXPECT_FALSE(verify_collective(Collective::all_to_all, received.data(), a2a_inputs, 1, a2a).passed());

  const CollectiveCounts broadcast = collective_counts(Collective::broadcast, 1024, ranks);
  const auto broadcast_inputs = inputs_for(broadcast, ranks);
  EXPECT_TRUE(verify_collective(Collective::broadcast, broadcast_inputs[0].data(), broadcast_inputs, 3, broadcast).passed());
  EXPECT_FALSE(verify_collective(Collective::broadcast, broadcast_inputs[1].data(), broadcast_inputs, 3, broadcast).passed());
}

TEST(CollectiveInputs, SplitMix64IsTheReferenceGenerator) {
  // The first outputs of Vigna's splitmix64.c from state 0 (https://prng.di.unimi.it/splitmix64.c).
  EXPECT_EQ(splitmix64_at(0, 0), 0xE220A8397B1DCDAFull);
  EXPECT_EQ(splitmix64_at(0, 1), 0x6E789E6AA1B965F4ull);
  EXPECT_EQ(splitmix64_at(0, 2), 0x06C45D188009454Full);
  EXPECT_EQ(splitmix64_at(0, 3), 0xF88BB8A8724C81ECull);
  // The top 24 bits of the first, 0xE220A8, as a multiple of 2^-23 from -1.
  EXPECT_EQ(seeded_uniform(0, 0), static_cast<float>(0xE220A8 - (1 << 23)) / (1 << 23));
}

TEST(CollectiveInputs, UniformInMinusOneToOneOnMultiplesOfTwoToTheMinus23) {
  const std::vector<float> values = seeded_input(12345, 3, 1 << 16);
  const auto [low, high] = std::minmax_element(values.begin(), values.end());
  EXPECT_GE(*low, -1.0f);
  EXPECT_LT(*high, 1.0f);
  EXPECT_LT(*low, -0.999f);  // the range is covered, not a part of it
  EXPECT_GT(*high, 0.999f);
  double sum = 0;
  for (float value : values) {
    const double scaled = static_cast<double>(value) * (1 << 23);
    EXPECT_EQ(scaled, std::floor(scaled)) << value;
    sum += value;
  }
  EXPECT_LT(std::fabs(sum / static_cast<double>(values.size())), 0.01);  // 4.5 standard errors of the mean
}

TEST(CollectiveInputs, EachRankAndProblemHasItsOwnInput) {
  const std::vector<float> rank_0 = seeded_input(7, 0, 1000), rank_1 = seeded_input(7, 1, 1000);
  const std::vector<float> other_problem = seeded_input(8, 0, 1000);
  EXPECT_NE(rank_0, rank_1);
  EXPECT_NE(rank_0, other_problem);
  EXPECT_EQ(rank_0, seeded_input(7, 0, 1000));  // reproducible
  // The input element by element, as the device computes it.
  const SeededInputs inputs{7};
  for (std::size_t i : {std::size_t{0}, std::size_t{1}, std::size_t{999}}) EXPECT_EQ(rank_1[i], inputs(1, i));
  // A prefix of a longer input: element i depends on i alone.
  const std::vector<float> longer = seeded_input(7, 1, 5000);
  EXPECT_TRUE(std::equal(rank_1.begin(), rank_1.end(), longer.begin()));
}

TEST(CollectiveCheck, ReportsTheWrongElementsAndTheFirst) {
  const int ranks = 4;
  const CollectiveCounts counts = collective_counts(Collective::all_reduce, 4096, ranks);
  const auto inputs = inputs_for(counts, ranks);
  std::vector<float> output = fp32_sum_from_last(inputs, 0, counts.recv);
  const CollectiveVerification right = verify_collective(Collective::all_reduce, output.data(), inputs, 0, counts);
  EXPECT_TRUE(right.passed()) << right.describe();
  EXPECT_EQ(right.wrong_elements, 0u);
  output[700] += 0.5f;
  output[20] = NAN;
  const CollectiveVerification wrong = verify_collective(Collective::all_reduce, output.data(), inputs, 0, counts);
  EXPECT_FALSE(wrong.passed());
  EXPECT_EQ(wrong.wrong_elements, 2u);
  EXPECT_EQ(wrong.first_wrong_element, 20u);
  EXPECT_EQ(wrong.errors.non_finite, 1u);
  EXPECT_NE(wrong.describe().find("2 elements wrong"), std::string::npos) << wrong.describe();
}

TEST(CollectiveCheck, EachElementWithinItsOwnBound) {
  // Element 0 sums small values: an error 10 times its own bound is far within the bound of the
  // largest elements, which the errors' tolerance is relative to; it fails all the same.
  const int ranks = 8;
  const CollectiveCounts counts = collective_counts(Collective::all_reduce, 4096, ranks);
  auto inputs = inputs_for(counts, ranks);
  double magnitude = 0;
  for (auto& input : inputs) {
    input[0] = 1e-3f;
    magnitude += 1e-3f;
  }
  std::vector<float> output = fp32_sum_from_last(inputs, 0, counts.recv);
  const double bound = 2.0 * (ranks - 1) * kFp32UnitRoundoff * magnitude;
  output[0] = static_cast<float>(output[0] + 10 * bound);
  const CollectiveVerification v = verify_collective(Collective::all_reduce, output.data(), inputs, 0, counts);
  EXPECT_TRUE(v.errors.passed()) << v.describe();
  EXPECT_FALSE(v.passed());
  EXPECT_EQ(v.wrong_elements, 1u);
  EXPECT_EQ(v.first_wrong_element, 0u);
}

TEST(CollectiveCheck, ExpectedElementsFollowEachCollectivesLayout) {
  // input(r, j) = 1000 r + j: each expected element names the element it comes from.
  const auto input = [](int r, std::size_t j) { return static_cast<float>(1000 * r + static_cast<int>(j)); };
  const int ranks = 4;
  const CollectiveCounts gather = collective_counts(Collective::all_gather, 4 * 64, ranks);  // 16 per rank
  EXPECT_EQ(expected_element(Collective::all_gather, input, ranks, 1, gather, 35).value, 2003.0);
  const CollectiveCounts a2a = collective_counts(Collective::all_to_all, 4 * 64, ranks);  // chunks of 16
  EXPECT_EQ(expected_element(Collective::all_to_all, input, ranks, 2, a2a, 35).value, 2000.0 + 2 * 16 + 3);
  const CollectiveCounts broadcast = collective_counts(Collective::broadcast, 4 * 64, ranks);
  EXPECT_EQ(expected_element(Collective::broadcast, input, ranks, 3, broadcast, 9).value, 9.0);
  const CollectiveCounts scatter = collective_counts(Collective::reduce_scatter, 4 * 64, ranks);  // 16 out
  const ExpectedElement sum = expected_element(Collective::reduce_scatter, input, ranks, 1, scatter, 5);
  EXPECT_EQ(sum.value, 6000.0 + 4 * 21);
  EXPECT_EQ(sum.bound, 2.0 * 3 * kFp32UnitRoundoff * (6000.0 + 4 * 21));
  EXPECT_EQ(expected_element(Collective::all_reduce, input, 1, 0, collective_counts(Collective::all_reduce, 64, 1), 5).bound,
            0.0);
}

}  // namespace
}  // namespace gpubench
