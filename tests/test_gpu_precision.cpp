// Every GPU precision path against the FP64 reference of the original FP32 inputs, on
// uniform and normal inputs. Without a usable GPU every test reports itself skipped.
#include <gtest/gtest.h>

#include "core/gpu_runtime.hpp"
#include "core/precision.hpp"
#include "core/precision_codec.hpp"
#include "core/random.hpp"
#include "core/system.hpp"
#include "matmul_cublas_precisions.hpp"
#include "matmul_test_support.hpp"
#include "matmul_wmma.cuh"

namespace gpubench {
namespace {

struct PrecisionPath {
  const char* name;
  Precision precision;
  PrecisionGemmFn run;
};
void PrintTo(const PrecisionPath& path, std::ostream* out) { *out << path.name; }

GpuCapability current_gpu() {
  GpuCapability c;
  cudaDeviceGetAttribute(&c.major, cudaDevAttrComputeCapabilityMajor, 0);
  cudaDeviceGetAttribute(&c.minor, cudaDevAttrComputeCapabilityMinor, 0);
  return c;
}

class GpuPrecisionTest : public ::testing::TestWithParam<PrecisionPath> {
 protected:
  void SetUp() override {
    const std::string reason = gpu_unavailable_reason();
    if (!reason.empty()) GTEST_SKIP() << "no GPU: " << reason;
    const std::string unsupported = gpu_precision_unsupported_reason(GetParam().precision, current_gpu());
    if (!unsupported.empty()) GTEST_SKIP() << unsupported;
  }

  Verification run_on_gpu(MatmulShape s, bool normal, std::uint64_t seed) {
    auto draw = normal ? random_normal : random_uniform;
    const std::vector<float> a = draw(s.a_elements(), configuration_seed(seed, 0));
    const std::vector<float> b = draw(s.b_elements(), configuration_seed(seed, 1));
    const MatmulReference reference = matmul_reference_fp64(a.data(), b.data(), s, ReferencePolicy{}, seed);
    const Precision precision = GetParam().precision;
    const EncodedOperands encoded = encode_operands(precision, a, b, s);
    DeviceBuffer<std::uint8_t> da(encoded.a.size()), db(encoded.b.size());
    DeviceBuffer<std::uint8_t> dc(s.c_elements() * precision_info(precision).output_bytes);
    DeviceBuffer<float> dequant(2 * kDequantStride);
    CUDA_CHECK(cudaMemcpy(da.get(), encoded.a.data(), da.bytes(), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(db.get(), encoded.b.data(), db.bytes(), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(dequant.get(), encoded.dequant, dequant.bytes(), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemset(dc.get(), 0xFF, dc.bytes()));
    GetParam().run(precision, da.get(), db.get(), dc.get(), s, dequant.get());
    std::vector<std::uint8_t> c(dc.bytes());
    CUDA_CHECK(cudaMemcpy(c.data(), dc.get(), dc.bytes(), cudaMemcpyDeviceToHost));
    const std::vector<double> values = decode_output(precision, c.data(), s.c_elements(), encoded);
    return verify_matmul(values.data(), reference, precision_tolerance(precision, s.k));
  }
};

TEST_P(GpuPrecisionTest, MatchesFp64ReferenceOnBothDistributions) {
  for (const MatmulShape shape : {MatmulShape{256, 256, 256}, MatmulShape{512, 384, 320}, MatmulShape{64, 1024, 2048}}) {
    for (bool normal : {false, true}) {
      const Verification v = run_on_gpu(shape, normal, shape.m + shape.k);
      EXPECT_TRUE(v.passed()) << GetParam().name << " at " << shape.m << "x" << shape.n << "x" << shape.k
                              << (normal ? " normal: " : " uniform: ") << v.describe();
      EXPECT_GT(v.rel_fro_error, 0.0) << "an FP64 product of FP32 inputs is never matched exactly";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Cublas, GpuPrecisionTest,
    ::testing::Values(PrecisionPath{"fp32", Precision::fp32, gemm_cublas_precision},
                      PrecisionPath{"tf32", Precision::tf32, gemm_cublas_precision},
                      PrecisionPath{"fp16", Precision::fp16, gemm_cublas_precision},
                      PrecisionPath{"fp16_acc16", Precision::fp16_acc16, gemm_cublas_precision},
                      PrecisionPath{"bf16", Precision::bf16, gemm_cublas_precision},
                      PrecisionPath{"fp8_e4m3", Precision::fp8_e4m3, gemm_cublas_precision},
                      PrecisionPath{"int8", Precision::int8, gemm_cublas_precision}),
    [](const auto& info) { return std::string(info.param.name); });

INSTANTIATE_TEST_SUITE_P(Wmma, GpuPrecisionTest,
                         ::testing::Values(PrecisionPath{"fp16", Precision::fp16, gemm_wmma_precision}),
                         [](const auto& info) { return std::string(info.param.name); });

// Our kernel takes any shape: odd sizes take the element-wise loads and guarded stores.
TEST(WmmaKernel, OddShapes) {
  const std::string reason = gpu_unavailable_reason();
  if (!reason.empty()) GTEST_SKIP() << "no GPU: " << reason;
  for (const MatmulShape& s : testing::test_shapes()) {
    const testing::RandomMatmul problem(s, s.m * 3 + s.n);
    const EncodedOperands encoded = encode_operands(Precision::fp16, problem.a, problem.b, s);
    DeviceBuffer<std::uint8_t> da(encoded.a.size()), db(encoded.b.size());
    DeviceBuffer<std::uint16_t> dc(s.c_elements());  // FP16 output
    CUDA_CHECK(cudaMemcpy(da.get(), encoded.a.data(), da.bytes(), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(db.get(), encoded.b.data(), db.bytes(), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemset(dc.get(), 0xFF, dc.bytes()));
    matmul_wmma_fp16(da.get(), db.get(), dc.get(), s);
    std::vector<std::uint16_t> halves(s.c_elements());
    CUDA_CHECK(cudaMemcpy(halves.data(), dc.get(), dc.bytes(), cudaMemcpyDeviceToHost));
    const std::vector<double> c = decode_output(Precision::fp16, halves.data(), halves.size(), encoded);
    const Verification v = verify_matmul(c.data(), problem.reference, precision_tolerance(Precision::fp16, s.k));
    EXPECT_TRUE(v.passed()) << s.m << "x" << s.n << "x" << s.k << ": " << v.describe();
  }
}

}  // namespace
}  // namespace gpubench
