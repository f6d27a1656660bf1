// The CPU batched GEMMs: every product of the batch against its own FP64 reference, and
// both implementations against single calls on the same inputs.
#include <gtest/gtest.h>

#include <limits>

#include <cblas.h>

#include "batched_gemm_cpu.hpp"
#include "core/random.hpp"
#include "core/reference.hpp"
#include "core/verify.hpp"
#include "matmul_openblas.hpp"

namespace gpubench {
namespace {

struct BatchedImplementation {
  const char* name;
  BatchedGemmFn run;
};
void PrintTo(const BatchedImplementation& impl, std::ostream* out) { *out << impl.name; }

class BatchedGemmTest : public ::testing::TestWithParam<BatchedImplementation> {};

TEST_P(BatchedGemmTest, EveryProductMatchesItsFp64Reference) {
  for (const BatchedGemmShape shape : {BatchedGemmShape{1, 3}, BatchedGemmShape{32, 17}, BatchedGemmShape{33, 5},
                                       BatchedGemmShape{64, 40}, BatchedGemmShape{100, 1}}) {
    const std::vector<float> a = random_uniform(shape.elements(), configuration_seed(shape.n, shape.batch));
    const std::vector<float> b = random_uniform(shape.elements(), configuration_seed(shape.n, shape.batch + 1));
    std::vector<float> c(shape.elements(), std::numeric_limits<float>::quiet_NaN());
    GetParam().run(a.data(), b.data(), c.data(), shape);
    const MatmulShape one{shape.n, shape.n, shape.n};
    for (int i = 0; i < shape.batch; ++i) {
      const MatmulReference ref =
          matmul_reference_fp64(a.data() + i * shape.stride(), b.data() + i * shape.stride(), one, ReferencePolicy{}, i);
      const Verification v = verify_matmul(c.data() + i * shape.stride(), ref,
                                           accumulation_tolerance(kFp32UnitRoundoff, shape.n));
      EXPECT_TRUE(v.passed()) << GetParam().name << " n=" << shape.n << " product " << i << " of " << shape.batch
                              << ": " << v.describe();
    }
  }
}

TEST_P(BatchedGemmTest, EqualsSingleCallsOnTheSameInputs) {
  const BatchedGemmShape shape{48, 24};
  const std::vector<float> a = random_uniform(shape.elements(), 11), b = random_uniform(shape.elements(), 12);
  std::vector<float> batched(shape.elements()), single(shape.elements());
  GetParam().run(a.data(), b.data(), batched.data(), shape);
  const MatmulShape one{shape.n, shape.n, shape.n};
  for (int i = 0; i < shape.batch; ++i)
    matmul_openblas(a.data() + i * shape.stride(), b.data() + i * shape.stride(), single.data() + i * shape.stride(),
                    one);
  // Same library, same product sizes: the only freedom is OpenBLAS's blocking per thread count.
  for (int i = 0; i < shape.batch * shape.n; ++i)
    for (int j = 0; j < shape.n; ++j)
      EXPECT_NEAR(batched[static_cast<std::size_t>(i) * shape.n + j], single[static_cast<std::size_t>(i) * shape.n + j],
                  1e-4f)
          << "row " << i << " column " << j;
}

// Each sets the OpenBLAS thread count it needs itself, whichever ran before it.
TEST(BatchedGemm, EachImplementationRunsOnTheOpenblasThreadsItNeeds) {
  const BatchedGemmShape shape{8, 4};
  const std::vector<float> a = random_uniform(shape.elements(), 3), b = random_uniform(shape.elements(), 4);
  std::vector<float> c(shape.elements());
  batched_gemm_threads_over_batch(a.data(), b.data(), c.data(), shape);
  EXPECT_EQ(openblas_get_num_threads(), 1);
  batched_gemm_openblas_loop(a.data(), b.data(), c.data(), shape);
  EXPECT_EQ(openblas_get_num_threads(), openblas_threads_at_start());
  batched_gemm_threads_over_batch(a.data(), b.data(), c.data(), shape);
  EXPECT_EQ(openblas_get_num_threads(), 1);
  openblas_set_num_threads(openblas_threads_at_start());  // as the other tests expect it
}

INSTANTIATE_TEST_SUITE_P(Baselines, BatchedGemmTest,
                         ::testing::Values(BatchedImplementation{"openblas_loop", batched_gemm_openblas_loop},
                                           BatchedImplementation{"threads_over_batch",
                                                                 batched_gemm_threads_over_batch}),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace gpubench
