#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "matmul_blocked.hpp"
#include "matmul_naive.hpp"
#include "matmul_openblas.hpp"
#include "matmul_test_support.hpp"

namespace gpubench {
namespace {

struct CpuImplementation {
  const char* name;
  MatmulFp32Fn run;
};
void PrintTo(const CpuImplementation& impl, std::ostream* out) { *out << impl.name; }

class CpuMatmulTest : public ::testing::TestWithParam<CpuImplementation> {};

TEST_P(CpuMatmulTest, MatchesFp64ReferenceOnRandomShapes) {
  for (const MatmulShape& shape : testing::test_shapes()) {
    const testing::RandomMatmul problem(shape, shape.m * 31 + shape.n);
    std::vector<float> c(shape.c_elements(), std::numeric_limits<float>::quiet_NaN());
    GetParam().run(problem.a.data(), problem.b.data(), c.data(), shape);
    const Verification v = problem.check(c);
    EXPECT_TRUE(v.passed()) << GetParam().name << " at " << shape.m << "x" << shape.n << "x" << shape.k << ": "
                            << v.describe();
  }
}

INSTANTIATE_TEST_SUITE_P(Baselines, CpuMatmulTest,
                         ::testing::Values(CpuImplementation{"naive_loop", matmul_naive_loop},
                                           CpuImplementation{"blocked_loop", matmul_blocked_loop},
                                           CpuImplementation{"openblas", matmul_openblas}),
                         [](const auto& info) { return std::string(info.param.name); });

// The register-tiled loop at a shape that leaves a remainder at every level of its blocking:
// rows past the last 6-row tile and row block, columns past the last 32-column tile and
// 1024-column block, depth past the last 256 block (the later depth blocks add to C).
TEST(BlockedLoop, MatchesFp64ReferenceAcrossEveryBlockEdge) {
  const MatmulShape shape{101, 1100, 523};
  const testing::RandomMatmul problem(shape, 9);
  std::vector<float> c(shape.c_elements(), std::numeric_limits<float>::quiet_NaN());
  matmul_blocked_loop(problem.a.data(), problem.b.data(), c.data(), shape);
  const Verification v = problem.check(c);
  EXPECT_TRUE(v.passed()) << v.describe();
}

TEST(Reference, AgreesWithPlainFp64Loop) {
  const MatmulShape shape{37, 23, 41};
  const testing::RandomMatmul problem(shape);
  ASSERT_TRUE(problem.reference.complete());
  for (int i = 0; i < shape.m; ++i) {
    for (int j = 0; j < shape.n; ++j) {
      double sum = 0;
      for (int p = 0; p < shape.k; ++p) sum += double(problem.a[i * shape.k + p]) * problem.b[p * shape.n + j];
      EXPECT_NEAR(problem.reference.values[i * shape.n + j], sum, 1e-12 * (1 + std::fabs(sum)));
    }
  }
}

TEST(Reference, SamplesRowsWhenTheFullProductIsTooDear) {
  const MatmulShape shape{300, 40, 50};
  const auto a = random_uniform(shape.a_elements(), 1);
  const auto b = random_uniform(shape.b_elements(), 2);
  ReferencePolicy policy;
  policy.max_full_flop = 1000;
  policy.sampled_rows = 16;
  const MatmulReference sampled = matmul_reference_fp64(a.data(), b.data(), shape, policy, 3);
  ASSERT_EQ(sampled.rows.size(), 16u);
  EXPECT_FALSE(sampled.complete());
  const MatmulReference full = matmul_reference_fp64(a.data(), b.data(), shape, ReferencePolicy{}, 3);
  for (std::size_t r = 0; r < sampled.rows.size(); ++r) {
    for (int j = 0; j < shape.n; ++j) {
      EXPECT_DOUBLE_EQ(sampled.values[r * shape.n + j], full.values[sampled.rows[r] * shape.n + j]);
    }
  }
}

TEST(RandomInputs, AreNeitherConstantNorZeroAndStayInRange) {
  const auto values = random_uniform(10000, 42);
  double sum = 0, min = 1, max = -1;
  for (float v : values) {
    sum += v;
    min = std::fmin(min, v);
    max = std::fmax(max, v);
  }
  EXPECT_GE(min, -1.0);
  EXPECT_LT(max, 1.0);
  EXPECT_LT(min, -0.99);
  EXPECT_GT(max, 0.99);
  EXPECT_NEAR(sum / values.size(), 0.0, 0.05);
  EXPECT_NE(random_uniform(16, 1), random_uniform(16, 2));
  EXPECT_EQ(random_uniform(16, 1), random_uniform(16, 1));
}

}  // namespace
}  // namespace gpubench
