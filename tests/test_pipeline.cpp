// The chunked pipeline's schedule and the engine model it is judged by: the order the host
// issues operations in, and what that order costs on a simulated clock.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <stdexcept>

#include "core/pipeline.hpp"

namespace gpubench {
namespace {

constexpr int kChunks = 16;

// Where each (stage, chunk) sits in the issue order.
std::map<std::pair<Stage, int>, std::size_t> positions(const std::vector<PipelineOp>& ops) {
  std::map<std::pair<Stage, int>, std::size_t> at;
  for (std::size_t i = 0; i < ops.size(); ++i) at[{ops[i].stage, ops[i].chunk}] = i;
  return at;
}

double sum(const StageDurations& d) { return d.copy_in + d.compute + d.copy_out; }
double slowest(const StageDurations& d) { return std::max({d.copy_in, d.compute, d.copy_out}); }

// No order can beat the busiest engine's total, plus the stages of one chunk that must
// run before it starts (fill) and after it ends (drain): with equal chunks, that is
// chunks * slowest stage + the other stages of one chunk.
double pipelined_bound(int chunks, const StageDurations& d) { return chunks * slowest(d) + sum(d) - slowest(d); }

// Chunk by chunk: in(i), compute(i), out(i), then chunk i+1; the order the schedule avoids.
std::vector<PipelineOp> chunk_by_chunk(int chunks, int streams) {
  std::vector<PipelineOp> ops;
  for (int i = 0; i < chunks; ++i)
    for (Stage stage : {Stage::copy_in, Stage::compute, Stage::copy_out}) ops.push_back({stage, i, i % streams});
  return ops;
}

const StageDurations kBalanced{1.0, 1.0, 1.0};
const StageDurations kCopyInBound{2.0, 0.1, 1.0};   // SAXPY: two arrays in, one out, trivial compute
const StageDurations kComputeBound{0.3, 2.0, 0.2};  // a large GEMM per chunk
const StageDurations kCopyOutBound{0.2, 0.3, 1.5};

TEST(PipelineChunks, CoverTheUnitsOnceInNearlyEqualParts) {
  for (const auto& [units, chunks] :
       std::vector<std::pair<int, int>>{{1, 1}, {10, 1}, {10, 3}, {8192, 64}, {1000, 7}, {7, 7}, {100, 99}}) {
    int next = 0, smallest = units, largest = 0;
    for (int i = 0; i < chunks; ++i) {
      const ChunkRange r = chunk_range(units, chunks, i);
      EXPECT_EQ(r.begin, next) << units << " units, chunk " << i << " of " << chunks;
      next += r.count;
      smallest = std::min(smallest, r.count);
      largest = std::max(largest, r.count);
    }
    EXPECT_EQ(next, units) << units << " units in " << chunks << " chunks";
    EXPECT_LE(largest - smallest, 1) << units << " units in " << chunks << " chunks";
    EXPECT_GE(smallest, 1);
  }
}

TEST(PipelineSchedule, HasEveryStageOfEveryChunkOnceInDependencyOrder) {
  for (int streams : {1, 2, 4}) {
    for (int chunks : {1, 2, 5, kChunks}) {
      const std::vector<PipelineOp> ops = pipeline_schedule(chunks, streams);
      ASSERT_EQ(ops.size(), 3u * chunks);
      const auto at = positions(ops);
      ASSERT_EQ(at.size(), ops.size()) << "a (stage, chunk) issued twice";
      for (int i = 0; i < chunks; ++i) {
        EXPECT_LT(at.at({Stage::copy_in, i}), at.at({Stage::compute, i}));
        EXPECT_LT(at.at({Stage::compute, i}), at.at({Stage::copy_out, i}));
      }
      for (const PipelineOp& op : ops) EXPECT_EQ(op.stream, op.chunk % streams);
    }
  }
}

TEST(PipelineSchedule, IssuesTheNextCopyInBeforeThisCopyOut) {
  for (int streams : {1, 2, 4}) {
    const auto at = positions(pipeline_schedule(kChunks, streams));
    for (int i = 0; i + 1 < kChunks; ++i)
      EXPECT_LT(at.at({Stage::copy_in, i + 1}), at.at({Stage::copy_out, i}))
          << "chunk " << i << ", " << streams << " streams";
  }
}

TEST(PipelineSchedule, RefusesEmptyCounts) {
  EXPECT_THROW(pipeline_schedule(0, 1), std::invalid_argument);
  EXPECT_THROW(pipeline_schedule(4, 0), std::invalid_argument);
}

TEST(PipelineSimulator, OneStreamTakesTheSumOfEverything) {
  for (const StageDurations& d : {kBalanced, kCopyInBound, kComputeBound})
    for (int copy_engines : {1, 2})
      EXPECT_DOUBLE_EQ(simulate_makespan(pipeline_schedule(kChunks, 1), d, copy_engines), kChunks * sum(d));
}

TEST(PipelineSimulator, ThreeOrMoreStreamsReachTheBusiestEnginePlusFillAndDrainInEveryCase) {
  for (const StageDurations& d : {kBalanced, kCopyInBound, kComputeBound, kCopyOutBound})
    for (int streams : {3, 4})
      EXPECT_DOUBLE_EQ(simulate_makespan(pipeline_schedule(kChunks, streams), d), pipelined_bound(kChunks, d))
          << streams << " streams";
}

TEST(PipelineSimulator, MoreChunksApproachTheBusiestEngineTotal) {
  // With a fixed amount of work, fill and drain shrink with the chunk: the makespan tends
  // to max(total copy-in, total compute, total copy-out).
  const StageDurations whole{8.0, 6.0, 4.0};
  double previous_ratio = 1e9;
  for (int chunks : {2, 8, 32, 128}) {
    const StageDurations each{whole.copy_in / chunks, whole.compute / chunks, whole.copy_out / chunks};
    const double ratio = simulate_makespan(pipeline_schedule(chunks, 4), each) / slowest(whole);
    EXPECT_LT(ratio, previous_ratio) << chunks << " chunks";
    previous_ratio = ratio;
  }
  EXPECT_LT(previous_ratio, 1.02);
}

TEST(PipelineSimulator, TwoStreamsSufficeWhenOneStageDominates) {
  for (const StageDurations& d : {kCopyInBound, kComputeBound})
    EXPECT_DOUBLE_EQ(simulate_makespan(pipeline_schedule(kChunks, 2), d), pipelined_bound(kChunks, d));
}

TEST(PipelineSimulator, TwoStreamsKeepAtMostTwoEnginesBusy) {
  // A stream runs one operation at a time, so two streams cannot keep three engines busy:
  // with balanced stages the pipeline needs at least half the serial time, far from the bound.
  const double makespan = simulate_makespan(pipeline_schedule(kChunks, 2), kBalanced);
  EXPECT_GE(makespan, kChunks * sum(kBalanced) / 2);
  EXPECT_GT(makespan, 1.3 * pipelined_bound(kChunks, kBalanced));
  EXPECT_LT(makespan, kChunks * sum(kBalanced));
}

TEST(PipelineSimulator, DetectsEverythingPlantedOnOneStream) {
  std::vector<PipelineOp> one_stream = pipeline_schedule(kChunks, 4);
  for (PipelineOp& op : one_stream) op.stream = 0;
  for (const StageDurations& d : {kBalanced, kCopyInBound, kComputeBound}) {
    const double planted = simulate_makespan(one_stream, d);
    EXPECT_DOUBLE_EQ(planted, kChunks * sum(d));
    EXPECT_GT(planted, 1.2 * simulate_makespan(pipeline_schedule(kChunks, 4), d));
  }
}

TEST(PipelineSimulator, ChunkByChunkOrderSerializesOnOneCopyEngine) {
  // The classic pitfall: with one DMA queue, out(i) issued before in(i+1) blocks it until
  // compute(i) is done, so no copy overlaps any compute.
  for (const StageDurations& d : {kBalanced, kComputeBound}) {
    const double planted = simulate_makespan(chunk_by_chunk(kChunks, 4), d, 1);
    EXPECT_DOUBLE_EQ(planted, kChunks * sum(d));
    const double scheduled = simulate_makespan(pipeline_schedule(kChunks, 4), d, 1);
    EXPECT_LT(scheduled, planted);
    // Overlapped: the busier of the one copy engine and the compute engine, plus one chunk.
    EXPECT_LE(scheduled, kChunks * std::max(d.copy_in + d.copy_out, d.compute) + sum(d));
  }
}

TEST(PipelineSimulator, CopyOutFirstInAStepSavesAFalseDependencyOnTwoStreams) {
  // Planted: each step issues in(t) before out(t-2), which shares its stream with two streams.
  std::vector<PipelineOp> in_first;
  for (int step = 0; step < kChunks + 2; ++step)
    for (const auto& [stage, chunk] :
         {std::pair{Stage::copy_in, step}, std::pair{Stage::compute, step - 1}, std::pair{Stage::copy_out, step - 2}})
      if (chunk >= 0 && chunk < kChunks) in_first.push_back({stage, chunk, chunk % 2});
  EXPECT_GT(simulate_makespan(in_first, kCopyInBound), simulate_makespan(pipeline_schedule(kChunks, 2), kCopyInBound));
}

}  // namespace
}  // namespace gpubench
