// The tensor-core ladder's rungs (kernels/hgemm_NN_*.cu) against the FP64 product of their FP16 inputs,
// odd shapes included, each rung refusing exactly the shapes its rule excludes (never launched); their
// launch descriptions against the runtime. Without a usable GPU, or on one a rung was not built for
// (the wgmma rung needs compute capability 9.0), those tests report themselves skipped; the block
// order, the stream-K schedule and the shape rule are checked on the host.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <regex>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "core/gpu_runtime.hpp"
#include "core/kernel_occupancy.hpp"
#include "core/precision.hpp"
#include "core/precision_codec.hpp"
#include "core/random.hpp"
#include "core/reference.hpp"
#include "core/system.hpp"
#include "core/verify.hpp"
#include "gemm_ladder.cuh"
#include "gemm_rung_support.cuh"
#include "stream_k.cuh"

namespace gpubench {
namespace {

struct HgemmRung {
  const char* name;
  GemmRung (*make)();
  bool any_shape;  // otherwise n and k must be multiples of 8
};
void PrintTo(const HgemmRung& rung, std::ostream* out) { *out << rung.name; }

const HgemmRung kRungs[] = {
    {"hgemm_01_wmma", hgemm_01_wmma, true},
    {"hgemm_02_mma_sync", hgemm_02_mma_sync, false},
    {"hgemm_03_wgmma", hgemm_03_wgmma, false},
};

// Edge tiles in every direction, k shorter than one slice and not a whole number of slices, a single
// row, n and k that are not multiples of 8 (refused by the rungs that copy 16-byte pieces of rows), and
// shapes with more tiles than an H100 has multiprocessors, so that the persistent rung's blocks take
// several tiles each and its ring of stages wraps across tiles. For the wgmma rung's stream-K on 132
// multiprocessors (it shares a last wave after a whole one, at most three quarters full):
// 1664x2816x4096 (a wave of 132 tiles, then 11 tiles of 64 k-tiles, each shared by 12 or 13 blocks),
// 1536x3072x64 (one k-tile: 12 stream-K tiles taken whole) and 2056x4104x136 (k-tiles one a block);
// 1032x2048x1048 (72 tiles, no whole wave) stays data-parallel.
std::vector<MatmulShape> ladder_shapes() {
  return {{1, 8, 8},          {33, 65, 17},        {100, 100, 100},  {129, 127, 131},    {200, 200, 200},
          {257, 264, 136},    {130, 520, 24},      {64, 100, 64},    {64, 64, 100},      {1024, 1024, 1024},
          {1032, 1040, 1048}, {2056, 4104, 136},   {2048, 2048, 512}, {1032, 2048, 1048}, {1664, 2816, 4096},
          {1536, 3072, 64}};
}

std::string describe(MatmulShape s) {
  return std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k);
}

std::vector<std::uint16_t> to_halves(const std::vector<float>& values) {
  std::vector<std::uint16_t> halves(values.size());
  std::transform(values.begin(), values.end(), halves.begin(), float_to_half_bits);
  return halves;
}

std::vector<float> to_floats(const std::vector<std::uint16_t>& halves) {
  std::vector<float> values(halves.size());
  std::transform(halves.begin(), halves.end(), values.begin(), half_bits_to_float);
  return values;
}

// Random FP16 operands and the FP64 product of exactly those values (FP16 widens to FP32 exactly).
struct HalfProblem {
  MatmulShape shape;
  std::vector<std::uint16_t> a, b;
  MatmulReference reference;

  explicit HalfProblem(MatmulShape s) : shape(s) {
    const std::uint64_t seed = 3 * s.m + 5 * s.n + s.k;
    a = to_halves(random_uniform(s.a_elements(), configuration_seed(seed, 0)));
    b = to_halves(random_uniform(s.b_elements(), configuration_seed(seed, 1)));
    reference = matmul_reference_fp64(to_floats(a).data(), to_floats(b).data(), s, ReferencePolicy{}, seed);
  }
};

// Each shape's inputs and reference once for all rungs.
const HalfProblem& problem_for(MatmulShape s) {
  static std::map<std::tuple<int, int, int>, std::unique_ptr<HalfProblem>> problems;
  auto& problem = problems[{s.m, s.n, s.k}];
  if (!problem) problem = std::make_unique<HalfProblem>(s);
  return *problem;
}

// The rung's C (FP16 bits) for the problem, from a NaN-poisoned output buffer.
std::vector<std::uint16_t> run_on_device(const GemmRung& rung, const HalfProblem& problem) {
  const MatmulShape s = problem.shape;
  DeviceBuffer<std::uint16_t> a(s.a_elements()), b(s.b_elements()), c(s.c_elements());
  CUDA_CHECK(cudaMemcpy(a.get(), problem.a.data(), a.bytes(), cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(b.get(), problem.b.data(), b.bytes(), cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemset(c.get(), 0xFF, c.bytes()));  // 0xFFFF is a NaN: unwritten elements fail
  rung.run(a.get(), b.get(), c.get(), s);
  std::vector<std::uint16_t> halves(s.c_elements());
  CUDA_CHECK(cudaMemcpy(halves.data(), c.get(), c.bytes(), cudaMemcpyDeviceToHost));
  return halves;
}

bool rows_allow_16_byte_copies(MatmulShape s) { return s.n % 8 == 0 && s.k % 8 == 0; }

class HgemmLadderTest : public ::testing::TestWithParam<HgemmRung> {
 protected:
  void SetUp() override {
    const std::string reason = gpu_unavailable_reason();
    if (!reason.empty()) GTEST_SKIP() << "no GPU: " << reason;
    // A shape every rung takes: a refusal here is the GPU's or the build's, not the shape's.
    const std::string unsupported = GetParam().make().unsupported({256, 256, 256});
    if (!unsupported.empty()) GTEST_SKIP() << GetParam().name << ": " << unsupported;
  }

  bool takes(MatmulShape s) const { return GetParam().any_shape || rows_allow_16_byte_copies(s); }
};

// A wrong answer, an element never written or a race between the pipeline's stages fails: the result
// must match the reference, and two runs must agree bit for bit (each rung sums in a fixed order).
TEST_P(HgemmLadderTest, MatchesFp64ReferenceOrSaysWhyNot) {
  const GemmRung rung = GetParam().make();
  for (const MatmulShape& shape : ladder_shapes()) {
    const std::string why_not = rung.unsupported(shape);
    EXPECT_EQ(why_not.empty(), takes(shape)) << GetParam().name << " at " << describe(shape) << ": '" << why_not << "'";
    if (!why_not.empty()) continue;  // never launched
    const HalfProblem& problem = problem_for(shape);
    const std::vector<std::uint16_t> c = run_on_device(rung, problem);
    const Verification v =
        verify_matmul(to_floats(c).data(), problem.reference, precision_tolerance(Precision::fp16, shape.k));
    EXPECT_TRUE(v.passed()) << GetParam().name << " at " << describe(shape) << ": " << v.describe();
    EXPECT_TRUE(run_on_device(rung, problem) == c) << GetParam().name << " at " << describe(shape)
                                                   << ": a second run gave other bits";
  }
}

// The launch a rung describes is one the runtime knows and can place: its kernel is in this binary for
// this GPU, a block fits a multiprocessor, and the grid is one block per tile of C ("block RxC" in its
// tiling), or for a persistent rung one block per multiprocessor at most: one per tile, or more where
// stream-K shares the tiles of a last, partial wave (their number) among more blocks.
TEST_P(HgemmLadderTest, LaunchDescribesALaunchableKernel) {
  const GemmRung rung = GetParam().make();
  for (const MatmulShape& shape :
       {MatmulShape{1024, 1024, 1024}, MatmulShape{1032, 1040, 1048}, MatmulShape{4096, 4096, 4096}}) {
    ASSERT_EQ(rung.unsupported(shape), "");
    const GemmLaunch launch = rung.launch(shape);
    ASSERT_NE(launch.kernel, nullptr) << GetParam().name;
    cudaFuncAttributes attributes{};
    CUDA_CHECK(cudaFuncGetAttributes(&attributes, launch.kernel));
    EXPECT_EQ(launch.threads_per_block % 128, 0) << GetParam().name;  // whole warpgroups, or 8 warps
    EXPECT_LE(launch.threads_per_block, attributes.maxThreadsPerBlock) << GetParam().name;
    const KernelOccupancy occupancy =
        kernel_occupancy(launch.kernel, launch.threads_per_block, launch.dynamic_shared_bytes);
    EXPECT_GE(occupancy.blocks_per_multiprocessor, 1) << GetParam().name << ": " << launch.tile;

    std::smatch block;
    ASSERT_TRUE(std::regex_search(launch.tile, block, std::regex("block (\\d+)x(\\d+)x(\\d+)"))) << launch.tile;
    const unsigned long long rows = std::stoi(block[1]), cols = std::stoi(block[2]);
    const unsigned long long tiles = (shape.m + rows - 1) / rows * ((shape.n + cols - 1) / cols);
    const unsigned long long multiprocessors = device_attribute(cudaDevAttrMultiProcessorCount);
    const bool persistent = launch.tile.find("persistent") != std::string::npos;
    std::smatch sharing;
    if (std::regex_search(launch.tile, sharing, std::regex("stream-K: the last (\\d+) tiles shared by (\\d+) blocks"))) {
      const unsigned long long shared_tiles = std::stoull(sharing[1]), sharing_blocks = std::stoull(sharing[2]);
      EXPECT_TRUE(persistent) << launch.tile;
      EXPECT_EQ(shared_tiles, tiles % multiprocessors) << launch.tile;
      EXPECT_GE(sharing_blocks, 1u) << launch.tile;
      EXPECT_LE(sharing_blocks, multiprocessors) << launch.tile;
      EXPECT_EQ(launch.blocks, std::max(std::min(tiles, multiprocessors), sharing_blocks)) << launch.tile;
    } else {
      EXPECT_EQ(launch.blocks, persistent ? std::min(tiles, multiprocessors) : tiles) << launch.tile;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Rungs, HgemmLadderTest, ::testing::ValuesIn(kRungs),
                         [](const auto& info) { return std::string(info.param.name); });

// On the host: the banded order visits every tile exactly once, and a band's tiles stay in its rows.
TEST(GemmTileOrder, BandsVisitEveryTileOnce) {
  for (const auto& [rows, cols, band] : {std::tuple{1, 1, 8}, std::tuple{8, 32, 8}, std::tuple{17, 17, 8},
                                        std::tuple{64, 32, 8}, std::tuple{5, 3, 8}, std::tuple{9, 4, 4}}) {
    std::set<std::pair<int, int>> seen;
    for (int index = 0; index < rows * cols; ++index) {
      const GemmTile tile = banded_tile(index, rows, cols, band);
      EXPECT_GE(tile.row, index / (band * cols) * band) << rows << "x" << cols << " band " << band << " #" << index;
      EXPECT_LT(tile.row, std::min(rows, (index / (band * cols) + 1) * band)) << index;
      EXPECT_GE(tile.col, 0) << index;
      EXPECT_LT(tile.col, cols) << index;
      EXPECT_TRUE(seen.insert({tile.row, tile.col}).second) << "tile visited twice at #" << index;
    }
    EXPECT_EQ(seen.size(), static_cast<std::size_t>(rows * cols));
  }
}

// A stream-K schedule's units, block by block, and whether every block finishes: each block does its
// units in order, a contributor's at once, an owner's once its contributors have published (all
// blocks resident, as the kernels launch them).
struct StreamKRun {
  std::vector<std::vector<stream_k::Unit>> units;  // a block's, in its order
  bool finished = false;
};

StreamKRun run_stream_k(const stream_k::Plan& plan) {
  StreamKRun run;
  for (int block = 0; block < plan.blocks; ++block) {
    run.units.emplace_back();
    stream_k::Units walk(plan, block);
    for (stream_k::Unit unit; walk.next(unit);) run.units.back().push_back(unit);
  }
  std::vector<std::size_t> done(plan.blocks, 0);
  std::set<int> published;  // workers
  for (bool progress = true; progress;) {
    progress = false;
    for (int block = 0; block < plan.blocks; ++block) {
      if (done[block] == run.units[block].size()) continue;
      const stream_k::Unit& unit = run.units[block][done[block]];
      bool ready = true;
      if (unit.contributes()) {
        published.insert(unit.worker);
      } else {
        for (int next = unit.worker + 1; next < plan.contributors_end(unit); ++next) ready &= published.count(next) > 0;
      }
      if (ready) ++done[block], progress = true;
    }
  }
  run.finished = true;
  for (int block = 0; block < plan.blocks; ++block) run.finished &= done[block] == run.units[block].size();
  return run;
}

// On the host: every (tile, k-slice) is multiplied once, every tile stored once by its owner, which adds
// exactly the pieces its contributors published (each a block's first stream-K unit, published once,
// read once); the grid fits the resident slots, and every block finishes.
TEST(StreamKSchedule, CoversEverySliceOnceAndEveryBlockFinishes) {
  for (int resident : {1, 7, 132}) {
    for (int tiles : {1, 5, 32, 72, 128, 131, 132, 133, 143, 264, 289, 512, 2048}) {
      for (int slices : {1, 2, 3, 17, 64, 128}) {
        const std::string where =
            std::to_string(tiles) + " tiles of " + std::to_string(slices) + " slices, " + std::to_string(resident);
        const stream_k::Plan plan = stream_k::plan(tiles, slices, resident);
        EXPECT_LE(plan.blocks, resident) << where;
        EXPECT_EQ(plan.data_parallel_tiles + plan.stream_k_tiles(), tiles) << where;
        EXPECT_LT(plan.stream_k_tiles(), resident) << where;
        const StreamKRun run = run_stream_k(plan);
        EXPECT_TRUE(run.finished) << where;
        std::map<int, stream_k::Unit> contributions;  // by worker
        std::vector<int> multiplied(static_cast<std::size_t>(tiles) * slices, 0), stored(tiles, 0);
        for (const auto& units : run.units) {
          for (std::size_t i = 0; i < units.size(); ++i) {
            const stream_k::Unit& unit = units[i];
            ASSERT_TRUE(unit.tile >= 0 && unit.tile < tiles && 0 <= unit.first && unit.first < unit.last &&
                        unit.last <= slices)
                << where;
            EXPECT_EQ(unit.worker < 0, unit.tile < plan.data_parallel_tiles) << where;
            for (int k = unit.first; k < unit.last; ++k) ++multiplied[static_cast<std::size_t>(unit.tile) * slices + k];
            if (unit.contributes()) {
              EXPECT_TRUE(i == 0 || units[i - 1].worker < 0) << where << ": a contributor's piece not its first";
              EXPECT_TRUE(contributions.emplace(unit.worker, unit).second) << where;
            }
          }
        }
        int read = 0;
        for (const auto& units : run.units) {
          for (const stream_k::Unit& unit : units) {
            if (unit.contributes()) continue;
            ++stored[unit.tile];
            int covered = unit.last;
            for (int next = unit.worker + 1; next < plan.contributors_end(unit); ++next, ++read) {
              ASSERT_TRUE(contributions.count(next)) << where << ": worker " << next << " never publishes";
              const stream_k::Unit& piece = contributions.at(next);
              EXPECT_EQ(piece.tile, unit.tile) << where;
              EXPECT_EQ(piece.first, covered) << where;  // in k order, without gaps or overlaps
              covered = piece.last;
            }
            EXPECT_EQ(covered, slices) << where << ": tile " << unit.tile;
          }
        }
        EXPECT_EQ(read, static_cast<int>(contributions.size())) << where;
        EXPECT_EQ(std::count(multiplied.begin(), multiplied.end(), 1), static_cast<long>(multiplied.size())) << where;
        EXPECT_EQ(std::count(stored.begin(), stored.end(), 1), tiles) << where;
      }
    }
  }
  // A tail rule keeps the data-parallel schedule where it says no.
  const stream_k::TailRule rule{1, 0.75};
  EXPECT_EQ(stream_k::plan(2048, 64, 132, rule).stream_k_tiles(), 2048 % 132);  // 68 of 132: shared
  EXPECT_EQ(stream_k::plan(512, 64, 132, rule).stream_k_blocks, 0);             // 116 of 132: too full
  EXPECT_EQ(stream_k::plan(32, 16, 132, rule).stream_k_blocks, 0);              // no whole wave
  EXPECT_EQ(stream_k::plan(32, 16, 132, rule).blocks, 32);
  // Iterations past an int: all tiles whole.
  const stream_k::Plan huge = stream_k::plan(135, 1 << 30, 132);
  EXPECT_EQ(huge.data_parallel_tiles, 135);
  EXPECT_EQ(huge.stream_k_blocks, 0);
  EXPECT_EQ(huge.blocks, 132);
}

// On the host: 16-byte copies of FP16 rows need n and k multiples of 8, and the refusal names them.
TEST(Fp16RowAlignment, RefusesExactlyNOrKNotMultiplesOf8) {
  for (const MatmulShape& shape : ladder_shapes()) {
    const std::string why_not = fp16_rows_unaligned(shape);
    EXPECT_EQ(why_not.empty(), rows_allow_16_byte_copies(shape)) << describe(shape);
    if (!why_not.empty()) EXPECT_NE(why_not.find("multiples of 8"), std::string::npos) << why_not;
  }
}

}  // namespace
}  // namespace gpubench
