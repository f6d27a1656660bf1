#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "matmul_openblas.hpp"
#include "matmul_test_support.hpp"

namespace gpubench {
namespace {

class VerifyTest : public ::testing::Test {
 protected:
  const MatmulShape shape{96, 80, 112};
  const testing::RandomMatmul problem{shape};
  std::vector<float> c = std::vector<float>(shape.c_elements());

  void SetUp() override { matmul_openblas(problem.a.data(), problem.b.data(), c.data(), shape); }
};

TEST_F(VerifyTest, AcceptsACorrectResultAndRecordsItsError) {
  const Verification v = problem.check(c);
  EXPECT_TRUE(v.passed()) << v.describe();
  EXPECT_GT(v.rel_fro_error, 0.0);  // FP32 against FP64 is never exact on random data
  EXPECT_LT(v.rel_fro_error, 1e-6);
}

TEST_F(VerifyTest, CatchesOnePlantedWrongElement) {
  c[37 * shape.n + 11] += 0.5f;
  const Verification v = problem.check(c);
  EXPECT_FALSE(v.passed());
  EXPECT_GT(v.max_rel_error, v.tolerance.max_rel);
}

TEST_F(VerifyTest, CatchesAnUnwrittenElement) {
  c[5] = std::numeric_limits<float>::quiet_NaN();  // what a poisoned, never-written output holds
  const Verification v = problem.check(c);
  EXPECT_FALSE(v.passed());
  EXPECT_EQ(v.non_finite, 1u);
}

TEST_F(VerifyTest, CatchesTransposedOutput) {
  const MatmulShape square{64, 64, 64};
  const testing::RandomMatmul sq(square);
  std::vector<float> out(square.c_elements());
  matmul_openblas(sq.a.data(), sq.b.data(), out.data(), square);
  std::vector<float> transposed(out.size());
  for (int i = 0; i < 64; ++i)
    for (int j = 0; j < 64; ++j) transposed[j * 64 + i] = out[i * 64 + j];
  EXPECT_FALSE(sq.check(transposed).passed());
}

TEST_F(VerifyTest, CatchesAResultComputedInLowerPrecision) {
  // Rounding the output to bfloat16 (8 bits of mantissa) must not pass as FP32.
  for (float& value : c) {
    uint32_t bits;
    std::memcpy(&bits, &value, sizeof bits);
    bits &= 0xFFFF0000u;
    std::memcpy(&value, &bits, sizeof bits);
  }
  EXPECT_FALSE(problem.check(c).passed());
}

// A reference of some rows only (what sizes above ReferencePolicy's max_full_flop get): its rows agree
// with the full product's; a wrong value in a sampled row fails; a NaN (a never-written element) fails
// in any row, sampled or not; a wrong finite value outside the sampled rows is what sampling gives up.
class SampledReferenceTest : public VerifyTest {
 protected:
  static constexpr int kRows = 12;
  const MatmulReference sampled =
      matmul_reference_fp64(problem.a.data(), problem.b.data(), shape, ReferencePolicy{0.0, kRows}, 5);
  const Tolerance tolerance = accumulation_tolerance(kFp32UnitRoundoff, shape.k);

  int unsampled_row() const {
    for (int row = 0; row < shape.m; ++row)
      if (std::find(sampled.rows.begin(), sampled.rows.end(), row) == sampled.rows.end()) return row;
    return -1;
  }
};

TEST_F(SampledReferenceTest, HoldsTheFullProductsRows) {
  ASSERT_EQ(sampled.rows.size(), static_cast<std::size_t>(kRows));
  ASSERT_FALSE(sampled.complete());
  for (std::size_t r = 0; r < sampled.rows.size(); ++r)
    for (int j = 0; j < shape.n; ++j)
      ASSERT_DOUBLE_EQ(sampled.values[r * shape.n + j], problem.reference.values[sampled.rows[r] * shape.n + j]);
  const Verification v = verify_matmul(c.data(), sampled, tolerance);
  EXPECT_TRUE(v.passed()) << v.describe();
  EXPECT_GT(v.rel_fro_error, 0.0);
}

TEST_F(SampledReferenceTest, CatchesAWrongElementOfASampledRow) {
  c[static_cast<std::size_t>(sampled.rows[3]) * shape.n + 7] += 0.5f;
  const Verification v = verify_matmul(c.data(), sampled, tolerance);
  EXPECT_FALSE(v.passed());
  EXPECT_GT(v.max_rel_error, v.tolerance.max_rel);
}

TEST_F(SampledReferenceTest, CatchesAnUnwrittenElementOutsideTheSampledRows) {
  const int row = unsampled_row();
  ASSERT_GE(row, 0);
  c[static_cast<std::size_t>(row) * shape.n + 2] = std::numeric_limits<float>::quiet_NaN();
  c[static_cast<std::size_t>(row) * shape.n + 3] = std::numeric_limits<float>::infinity();
  const Verification v = verify_matmul(c.data(), sampled, tolerance);
  EXPECT_FALSE(v.passed());
  EXPECT_EQ(v.non_finite, 2u);
  std::vector<double> wide(c.begin(), c.end());
  EXPECT_EQ(verify_matmul(wide.data(), sampled, tolerance).non_finite, 2u);
}

TEST(Tolerance, GrowsWithAccumulationLength) {
  EXPECT_LT(accumulation_tolerance(kFp32UnitRoundoff, 64).rel_fro,
            accumulation_tolerance(kFp32UnitRoundoff, 8192).rel_fro);
  EXPECT_LT(accumulation_tolerance(kFp32UnitRoundoff, 8192).rel_fro, 1e-4);
}

TEST(VerifyExact, PassesOnlyTheSameValues) {
  const std::vector<float> expected = {0.5f, -1.25f, 3.0f, 1e-30f};
  std::vector<float> values = expected;
  const Verification same = verify_exact(values.data(), expected.data(), values.size());
  EXPECT_TRUE(same.passed()) << same.describe();
  EXPECT_EQ(same.max_rel_error, 0.0);
  values[3] = std::nextafter(values[3], 1.0f);  // one unit in the last place, on the smallest value
  EXPECT_FALSE(verify_exact(values.data(), expected.data(), values.size()).passed());
  values = expected;
  values[1] = std::numeric_limits<float>::quiet_NaN();  // a poisoned element never written
  const Verification unwritten = verify_exact(values.data(), expected.data(), values.size());
  EXPECT_FALSE(unwritten.passed());
  EXPECT_EQ(unwritten.non_finite, 1u);
}

TEST(Verification, NaNErrorNeverPasses) {
  Verification v;
  v.tolerance = {1e-3, 1e-3};
  v.rel_fro_error = std::numeric_limits<double>::quiet_NaN();
  EXPECT_FALSE(v.passed());
}

}  // namespace
}  // namespace gpubench
