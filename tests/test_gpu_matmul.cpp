// GPU kernels against the FP64 reference. Without a usable GPU every test reports itself
// skipped (CTest shows them as skipped, not passed).
#include <gtest/gtest.h>

#include <limits>

#include "core/gpu_runtime.hpp"
#include "core/system.hpp"
#include "matmul_cublas.hpp"
#include "matmul_naive.cuh"
#include "matmul_test_support.hpp"
#include "matmul_tiled.cuh"

namespace gpubench {
namespace {

struct GpuImplementation {
  const char* name;
  MatmulFp32Fn run;
};
void PrintTo(const GpuImplementation& impl, std::ostream* out) { *out << impl.name; }

class GpuMatmulTest : public ::testing::TestWithParam<GpuImplementation> {
 protected:
  void SetUp() override {
    const std::string reason = gpu_unavailable_reason();
    if (!reason.empty()) GTEST_SKIP() << "no GPU: " << reason;
  }

  // Copies in from `host_a`/`host_b`, computes, copies out into `host_c`: the path of the
  // study's transfer modes when the host buffers are pinned, and of resident mode otherwise.
  Verification run_through_device(const testing::RandomMatmul& problem, const float* host_a,
                                  const float* host_b, float* host_c) {
    const MatmulShape s = problem.shape;
    DeviceBuffer<float> a(s.a_elements()), b(s.b_elements()), c(s.c_elements());
    CUDA_CHECK(cudaMemset(c.get(), 0xFF, c.bytes()));  // NaN: unwritten elements fail
    CUDA_CHECK(cudaMemcpyAsync(a.get(), host_a, a.bytes(), cudaMemcpyHostToDevice, 0));
    CUDA_CHECK(cudaMemcpyAsync(b.get(), host_b, b.bytes(), cudaMemcpyHostToDevice, 0));
    GetParam().run(a.get(), b.get(), c.get(), s);
    CUDA_CHECK(cudaMemcpyAsync(host_c, c.get(), c.bytes(), cudaMemcpyDeviceToHost, 0));
    CUDA_CHECK(cudaDeviceSynchronize());
    return verify_matmul(host_c, problem.reference, accumulation_tolerance(kFp32UnitRoundoff, s.k));
  }
};

TEST_P(GpuMatmulTest, MatchesFp64ReferenceFromPageableMemory) {
  for (const MatmulShape& shape : testing::test_shapes()) {
    const testing::RandomMatmul problem(shape, shape.m * 7 + shape.k);
    std::vector<float> c(shape.c_elements(), std::numeric_limits<float>::quiet_NaN());
    const Verification v = run_through_device(problem, problem.a.data(), problem.b.data(), c.data());
    EXPECT_TRUE(v.passed()) << GetParam().name << " at " << shape.m << "x" << shape.n << "x" << shape.k << ": "
                            << v.describe();
  }
}

TEST_P(GpuMatmulTest, MatchesFp64ReferenceFromPinnedMemory) {
  const MatmulShape shape{1000, 1029, 515};
  const testing::RandomMatmul problem(shape, 5);
  PinnedBuffer<float> a(shape.a_elements()), b(shape.b_elements()), c(shape.c_elements());
  std::copy(problem.a.begin(), problem.a.end(), a.get());
  std::copy(problem.b.begin(), problem.b.end(), b.get());
  const Verification v = run_through_device(problem, a.get(), b.get(), c.get());
  EXPECT_TRUE(v.passed()) << GetParam().name << ": " << v.describe();
}

TEST_P(GpuMatmulTest, LargeSquareSize) {
  const MatmulShape shape{2048, 2048, 2048};
  const testing::RandomMatmul problem(shape, 9);
  std::vector<float> c(shape.c_elements());
  const Verification v = run_through_device(problem, problem.a.data(), problem.b.data(), c.data());
  EXPECT_TRUE(v.passed()) << GetParam().name << ": " << v.describe();
}

INSTANTIATE_TEST_SUITE_P(Kernels, GpuMatmulTest,
                         ::testing::Values(GpuImplementation{"cublaslt", matmul_cublaslt},
                                           GpuImplementation{"cublas", matmul_cublas},
                                           GpuImplementation{"tiled_kernel", matmul_tiled_kernel},
                                           GpuImplementation{"naive_kernel", matmul_naive_kernel}),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace gpubench
