// The SGEMM ladder's rungs (kernels/sgemm_NN_*.cu) against the FP64 reference, odd shapes included,
// each rung skipping exactly the shapes its rule excludes; their launch descriptions against the
// runtime; rung 10's tuned choice, and every one of its candidates (the tuner may pick any) right and
// repeatable bit for bit. Without a usable GPU every test reports itself skipped.
#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <regex>
#include <string>
#include <tuple>
#include <vector>

#include "core/gpu_runtime.hpp"
#include "core/kernel_occupancy.hpp"
#include "core/system.hpp"
#include "gemm_ladder.cuh"
#include "matmul_test_support.hpp"
#include "sgemm_10_candidates.cuh"

namespace gpubench {
namespace {

struct LadderRung {
  const char* name;
  GemmRung (*make)();
  bool needs_n_multiple_of_4;  // float4 rows of B and C
  bool needs_k_multiple_of_4;  // float4 rows of A
};
void PrintTo(const LadderRung& rung, std::ostream* out) { *out << rung.name; }

const LadderRung kRungs[] = {
    {"sgemm_01_naive_16x128", sgemm_01_naive_16x128, false, false},
    {"sgemm_02_naive_full_grid", sgemm_02_naive_full_grid, false, false},
    {"sgemm_03_coalesced", sgemm_03_coalesced, false, false},
    {"sgemm_04_shared_tiles", sgemm_04_shared_tiles, false, false},
    {"sgemm_05_blocktile_1d", sgemm_05_blocktile_1d, false, false},
    {"sgemm_06_blocktile_2d", sgemm_06_blocktile_2d, false, false},
    {"sgemm_07_vectorized", sgemm_07_vectorized, true, true},
    {"sgemm_08_cp_async", sgemm_08_cp_async, true, false},
    {"sgemm_09_warptile", sgemm_09_warptile, true, false},
    {"sgemm_10_autotuned", sgemm_10_autotuned, true, false},
};

// The shared odd shapes, shapes whose n (and k) allow float4 rows with the other sides odd (edge tiles
// of every tile shape, k shorter than one slice and not a whole number of slices), and two of 1024 or so.
std::vector<MatmulShape> ladder_shapes() {
  std::vector<MatmulShape> shapes = testing::test_shapes();
  const std::vector<MatmulShape> more = {{7, 8, 3},           {129, 132, 131},    {65, 260, 36},
                                         {1024, 1024, 1024},  {1031, 1028, 1027}, {1031, 1028, 1036},
                                         {1031, 1029, 1027}};
  shapes.insert(shapes.end(), more.begin(), more.end());
  return shapes;
}

std::string describe(MatmulShape s) {
  return std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k);
}

// Each shape's inputs and reference once for all rungs.
const testing::RandomMatmul& problem_for(MatmulShape s) {
  static std::map<std::tuple<int, int, int>, std::unique_ptr<testing::RandomMatmul>> problems;
  auto& problem = problems[{s.m, s.n, s.k}];
  if (!problem) problem = std::make_unique<testing::RandomMatmul>(s, 3 * s.m + 5 * s.n + s.k);
  return *problem;
}

class SgemmLadderTest : public ::testing::TestWithParam<LadderRung> {
 protected:
  void SetUp() override {
    const std::string reason = gpu_unavailable_reason();
    if (!reason.empty()) GTEST_SKIP() << "no GPU: " << reason;
  }

  bool allowed(MatmulShape s) const {
    return !(GetParam().needs_n_multiple_of_4 && s.n % 4 != 0) && !(GetParam().needs_k_multiple_of_4 && s.k % 4 != 0);
  }
};

TEST_P(SgemmLadderTest, MatchesFp64ReferenceOrSaysWhyNot) {
  const GemmRung rung = GetParam().make();
  for (const MatmulShape& shape : ladder_shapes()) {
    const std::string why_not = rung.unsupported(shape);
    EXPECT_EQ(why_not.empty(), allowed(shape))
        << GetParam().name << " at " << describe(shape) << ": '" << why_not << "'";
    if (!why_not.empty()) continue;  // never launched
    const testing::RandomMatmul& problem = problem_for(shape);
    DeviceBuffer<float> a(shape.a_elements()), b(shape.b_elements()), c(shape.c_elements());
    CUDA_CHECK(cudaMemcpy(a.get(), problem.a.data(), a.bytes(), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(b.get(), problem.b.data(), b.bytes(), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemset(c.get(), 0xFF, c.bytes()));  // NaN: unwritten elements fail
    rung.run(a.get(), b.get(), c.get(), shape);
    std::vector<float> host_c(shape.c_elements());
    CUDA_CHECK(cudaMemcpy(host_c.data(), c.get(), c.bytes(), cudaMemcpyDeviceToHost));
    const Verification v = problem.check(host_c);
    EXPECT_TRUE(v.passed()) << GetParam().name << " at " << describe(shape) << ": " << v.describe();
  }
}

// The launch `launch` describes at `shape` is one the runtime knows and can place, and its words agree
// with its numbers: "N threads", and for tiled kernels "block RxC" giving one block per tile of C, or
// for stream-K ones one per tile before "the last T tiles", then the "B blocks" that share those.
void expect_launch_consistent(const GemmLaunch& launch, MatmulShape shape, const std::string& name) {
  ASSERT_NE(launch.kernel, nullptr) << name;
  cudaFuncAttributes attributes{};
  CUDA_CHECK(cudaFuncGetAttributes(&attributes, launch.kernel));
  EXPECT_EQ(launch.threads_per_block % 32, 0) << name;
  EXPECT_GE(launch.threads_per_block, 32) << name;
  EXPECT_LE(launch.threads_per_block, attributes.maxThreadsPerBlock) << name;
  const KernelOccupancy occupancy =
      kernel_occupancy(launch.kernel, launch.threads_per_block, launch.dynamic_shared_bytes);
  EXPECT_GE(occupancy.blocks_per_multiprocessor, 1) << name << ": " << launch.tile;

  std::smatch threads;
  ASSERT_TRUE(std::regex_search(launch.tile, threads, std::regex("(\\d+) threads"))) << launch.tile;
  EXPECT_EQ(std::stoi(threads[1]), launch.threads_per_block) << launch.tile;
  std::smatch block;
  if (std::regex_search(launch.tile, block, std::regex("block (\\d+)x(\\d+)"))) {
    const unsigned long long rows = std::stoi(block[1]), cols = std::stoi(block[2]);
    const unsigned long long tiles = (shape.m + rows - 1) / rows * ((shape.n + cols - 1) / cols);
    std::smatch stream_k;
    if (std::regex_search(launch.tile, stream_k, std::regex("the last (\\d+) tiles shared by (\\d+) blocks"))) {
      const unsigned long long shared_tiles = std::stoull(stream_k[1]), sharing_blocks = std::stoull(stream_k[2]);
      EXPECT_LE(shared_tiles, tiles) << launch.tile;
      EXPECT_LE(sharing_blocks, static_cast<unsigned long long>(occupancy.blocks_per_multiprocessor) *
                                    occupancy.multiprocessors)
          << launch.tile << ": stream-K blocks wait on each other, so all must be resident at once";
      EXPECT_EQ(launch.blocks, tiles - shared_tiles + sharing_blocks) << launch.tile;
    } else {
      EXPECT_EQ(launch.blocks, tiles) << launch.tile;
    }
  } else {
    EXPECT_GE(launch.blocks, 1u) << launch.tile;
  }
}

TEST_P(SgemmLadderTest, LaunchDescribesALaunchableKernel) {
  const GemmRung rung = GetParam().make();
  for (const MatmulShape& shape : {MatmulShape{1024, 1024, 1024}, MatmulShape{1031, 1028, 1036}}) {
    ASSERT_EQ(rung.unsupported(shape), "");
    expect_launch_consistent(rung.launch(shape), shape, GetParam().name);
  }
}

INSTANTIATE_TEST_SUITE_P(Rungs, SgemmLadderTest, ::testing::ValuesIn(kRungs),
                         [](const auto& info) { return std::string(info.param.name); });

// Rung 10 names the candidate it chose, and keeps it at a shape: launch() before and after run() at
// that shape describe the same kernel and tiling.
TEST(SgemmAutotunedTest, ChoosesOneOfItsCandidatesAndKeepsIt) {
  const std::string reason = gpu_unavailable_reason();
  if (!reason.empty()) GTEST_SKIP() << "no GPU: " << reason;
  const GemmRung rung = sgemm_10_autotuned();
  const MatmulShape shape{1000, 1028, 999};
  const GemmLaunch first = rung.launch(shape);
  std::smatch candidate;
  ASSERT_TRUE(std::regex_search(first.tile, candidate, std::regex("candidate (\\d+) of (\\d+)"))) << first.tile;
  const int chosen = std::stoi(candidate[1]), candidates = std::stoi(candidate[2]);
  EXPECT_GE(chosen, 1);
  EXPECT_LE(chosen, candidates);
  EXPECT_GT(candidates, 1);

  DeviceBuffer<float> a(shape.a_elements()), b(shape.b_elements()), c(shape.c_elements());
  CUDA_CHECK(cudaMemset(a.get(), 0, a.bytes()));
  CUDA_CHECK(cudaMemset(b.get(), 0, b.bytes()));
  rung.run(a.get(), b.get(), c.get(), shape);
  CUDA_CHECK(cudaDeviceSynchronize());
  const GemmLaunch again = rung.launch(shape);
  EXPECT_EQ(again.kernel, first.kernel);
  EXPECT_EQ(again.tile, first.tile);
  EXPECT_EQ(again.threads_per_block, first.threads_per_block);
  EXPECT_EQ(again.dynamic_shared_bytes, first.dynamic_shared_bytes);
  EXPECT_EQ(again.blocks, first.blocks);
}

// Every candidate of rung 10, not only the one the tuner picks here: odd shapes, tile counts that are not
// a whole number of waves (stream-K's shared tiles), k shorter than a slice, a few tiles with a long k
// (each tile's k-slices split over many stream-K blocks), against the FP64 reference with C poisoned;
// then a second call on the same operands gives the same bits (stream-K's sums in a fixed order).
TEST(SgemmAutotunedTest, EveryCandidateMatchesFp64ReferenceAndRepeatsBitForBit) {
  const std::string reason = gpu_unavailable_reason();
  if (!reason.empty()) GTEST_SKIP() << "no GPU: " << reason;
  const std::vector<MatmulShape> shapes = {{1031, 1028, 1036}, {4100, 4096, 1000}, {129, 132, 5},
                                           {7, 8, 3},          {300, 256, 4000},   {1000, 1028, 999}};
  for (const MatmulShape& shape : shapes) {
    const testing::RandomMatmul& problem = problem_for(shape);
    DeviceBuffer<float> a(shape.a_elements()), b(shape.b_elements()), c(shape.c_elements());
    CUDA_CHECK(cudaMemcpy(a.get(), problem.a.data(), a.bytes(), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(b.get(), problem.b.data(), b.bytes(), cudaMemcpyHostToDevice));
    std::vector<float> first(shape.c_elements()), second(shape.c_elements());
    for (int candidate = 0; candidate < sgemm_10_candidates(); ++candidate) {
      const GemmLaunch launch = sgemm_10_candidate_launch(candidate, shape);
      const std::string name = "candidate " + std::to_string(candidate + 1) + " (" + launch.tile + ") at " + describe(shape);
      expect_launch_consistent(launch, shape, name);
      for (std::vector<float>* result : {&first, &second}) {
        CUDA_CHECK(cudaMemset(c.get(), 0xFF, c.bytes()));  // NaN: unwritten elements fail
        sgemm_10_run_candidate(candidate, a.get(), b.get(), c.get(), shape);
        CUDA_CHECK(cudaMemcpy(result->data(), c.get(), c.bytes(), cudaMemcpyDeviceToHost));
      }
      const Verification v = problem.check(first);
      EXPECT_TRUE(v.passed()) << name << ": " << v.describe();
      EXPECT_EQ(std::memcmp(first.data(), second.data(), c.bytes()), 0) << name << ": two calls differ";
    }
  }
}

}  // namespace
}  // namespace gpubench
