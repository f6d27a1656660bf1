// The cuBLAS batched paths: every product of the batch against its FP64 reference, on the
// GPU. Without a usable GPU every test reports itself skipped.
#include <gtest/gtest.h>

#include <limits>

#include "batched_gemm_cublas.hpp"
#include "core/gpu_runtime.hpp"
#include "core/random.hpp"
#include "core/reference.hpp"
#include "core/system.hpp"
#include "core/verify.hpp"

namespace gpubench {
namespace {

struct GpuBatched {
  const char* name;
  BatchedGemmFn run;
};
void PrintTo(const GpuBatched& impl, std::ostream* out) { *out << impl.name; }

class GpuBatchedGemmTest : public ::testing::TestWithParam<GpuBatched> {
 protected:
  void SetUp() override {
    const std::string reason = gpu_unavailable_reason();
    if (!reason.empty()) GTEST_SKIP() << "no GPU: " << reason;
  }
};

TEST_P(GpuBatchedGemmTest, EveryProductMatchesItsFp64Reference) {
  for (const BatchedGemmShape shape : {BatchedGemmShape{1, 3}, BatchedGemmShape{33, 7}, BatchedGemmShape{64, 100},
                                       BatchedGemmShape{128, 9}}) {
    const std::vector<float> a = random_uniform(shape.elements(), configuration_seed(shape.n, shape.batch));
    const std::vector<float> b = random_uniform(shape.elements(), configuration_seed(shape.n, shape.batch + 1));
    DeviceBuffer<float> da(shape.elements()), db(shape.elements()), dc(shape.elements());
    CUDA_CHECK(cudaMemcpy(da.get(), a.data(), da.bytes(), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(db.get(), b.data(), db.bytes(), cudaMemcpyHostToDevice));
    for (int run = 0; run < 2; ++run) {  // the graph path replays what it captured on the first run
      CUDA_CHECK(cudaMemset(dc.get(), 0xFF, dc.bytes()));
      GetParam().run(da.get(), db.get(), dc.get(), shape);
      std::vector<float> c(shape.elements());
      CUDA_CHECK(cudaMemcpy(c.data(), dc.get(), dc.bytes(), cudaMemcpyDeviceToHost));
      const MatmulShape one{shape.n, shape.n, shape.n};
      for (int i = 0; i < shape.batch; ++i) {
        const MatmulReference ref = matmul_reference_fp64(a.data() + i * shape.stride(), b.data() + i * shape.stride(),
                                                          one, ReferencePolicy{}, i);
        const Verification v = verify_matmul(c.data() + i * shape.stride(), ref,
                                             accumulation_tolerance(kFp32UnitRoundoff, shape.n));
        EXPECT_TRUE(v.passed()) << GetParam().name << " n=" << shape.n << " product " << i << " run " << run << ": "
                                << v.describe();
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Cublas, GpuBatchedGemmTest,
                         ::testing::Values(GpuBatched{"strided", batched_gemm_cublas_strided},
                                           GpuBatched{"loop", batched_gemm_cublas_loop},
                                           GpuBatched{"graph", batched_gemm_cublas_graph}),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace gpubench
