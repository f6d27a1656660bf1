// The collectives study's host side: rank discovery from each launcher's environment, the message
// shapes, nccl-tests' bus factors and the checks of each collective's output (core/launched_rank.hpp,
// core/collectives.hpp).
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

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

}  // namespace
}  // namespace gpubench
