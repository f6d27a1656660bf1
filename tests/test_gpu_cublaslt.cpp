// The cuBLASLt GEMM plan (kernels/cublaslt_gemm.hpp): what it tells the heuristic, how its algorithm
// is held across processes, and that a held or unaligned plan still computes the right product.
// The tests that need a GPU report themselves skipped without one.
#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/gpu_runtime.hpp"
#include "core/precision.hpp"
#include "core/precision_codec.hpp"
#include "core/random.hpp"
#include "core/reference.hpp"
#include "core/system.hpp"
#include "cublaslt_gemm.hpp"

namespace gpubench {
namespace {

TEST(CublasLtAlignment, IsTheLargestPowerOfTwoUpTo256DividingTheAddress) {
  const auto at = [](std::uintptr_t address) { return reinterpret_cast<const void*>(address); };
  const CublasLtAlignment found = CublasLtAlignment::of(at(0x10000), at(0x10010), at(0x10006));
  EXPECT_EQ(found.a, 256u);
  EXPECT_EQ(found.b, 16u);
  EXPECT_EQ(found.c, 2u);
  EXPECT_EQ(CublasLtAlignment::of(at(0x10001), at(0x10100), at(0x10080)).a, 1u);
  EXPECT_EQ(CublasLtAlignment::of_allocations().c, 256u);
}

TEST(CublasLtWorkspace, IsPyTorchsSizeForTheGpuGeneration) {
  for (int hopper_or_blackwell : {9, 10, 12}) EXPECT_EQ(torch_cublaslt_workspace_bytes(hopper_or_blackwell), 32u << 20);
  EXPECT_EQ(torch_cublaslt_workspace_bytes(8), (8u << 20) + (128u << 10));  // ":4096:2:16:8"
}

TEST(CublasLtChoiceKey, NamesThePrecisionShapeAndAlignment) {
  EXPECT_EQ(cublaslt_choice_key(Precision::tf32, MatmulShape{4096, 2048, 1024}, CublasLtAlignment{256, 16, 4}),
            "cublaslt/tf32/4096x2048x1024/align:256,16,4");
  EXPECT_NE(cublaslt_choice_key(Precision::fp16, MatmulShape{64, 64, 64}, {}),
            cublaslt_choice_key(Precision::bf16, MatmulShape{64, 64, 64}, {}));
}

// A run's held choices as the harness keeps them: the first record of a key wins.
struct FakeHeldChoices {
  std::map<std::string, std::string> choices;
  std::optional<std::string> find(const std::string& key) const {
    const auto found = choices.find(key);
    return found == choices.end() ? std::nullopt : std::optional<std::string>(found->second);
  }
  void record(const std::string& key, const std::string& choice) { choices.emplace(key, choice); }
};

class CublasLtGemmTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string reason = gpu_unavailable_reason();
    if (!reason.empty()) GTEST_SKIP() << "no GPU: " << reason;
  }

  // `plan` on encoded uniform inputs placed `offset` bytes into their device buffers (C as well),
  // against the FP64 product of the FP32 values.
  static Verification run_checked(const CublasLtGemm& plan, Precision precision, MatmulShape s,
                                  std::size_t offset = 0) {
    const std::vector<float> a = random_uniform(s.a_elements(), configuration_seed(s.m, 0));
    const std::vector<float> b = random_uniform(s.b_elements(), configuration_seed(s.m, 1));
    const MatmulReference reference = matmul_reference_fp64(a.data(), b.data(), s, ReferencePolicy{}, 3);
    const EncodedOperands encoded = encode_operands(precision, a, b, s);
    const std::size_t c_bytes = s.c_elements() * precision_info(precision).output_bytes;
    DeviceBuffer<std::uint8_t> da(encoded.a.size() + offset), db(encoded.b.size() + offset), dc(c_bytes + offset);
    DeviceBuffer<float> dequant(2 * kDequantStride);
    CUDA_CHECK(cudaMemcpy(da.get() + offset, encoded.a.data(), encoded.a.size(), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(db.get() + offset, encoded.b.data(), encoded.b.size(), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(dequant.get(), encoded.dequant, dequant.bytes(), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemset(dc.get(), 0xFF, dc.bytes()));  // NaN: unwritten elements fail
    plan.run(da.get() + offset, db.get() + offset, dc.get() + offset, dequant.get());
    std::vector<std::uint8_t> c(c_bytes);
    CUDA_CHECK(cudaMemcpy(c.data(), dc.get() + offset, c_bytes, cudaMemcpyDeviceToHost));
    const std::vector<double> values = decode_output(precision, c.data(), s.c_elements(), encoded);
    return verify_matmul(values.data(), reference, precision_tolerance(precision, s.k));
  }
};

// What a later process does with the first one's choice: the same algorithm, taken without the
// heuristic, and the product still right, in every format the study runs on tensor cores or not.
TEST_F(CublasLtGemmTest, AHeldChoiceIsTakenAndComputesTheSameProduct) {
  const MatmulShape s{512, 384, 256};
  GpuCapability gpu;
  CUDA_CHECK(cudaDeviceGetAttribute(&gpu.major, cudaDevAttrComputeCapabilityMajor, 0));
  CUDA_CHECK(cudaDeviceGetAttribute(&gpu.minor, cudaDevAttrComputeCapabilityMinor, 0));
  for (Precision precision : {Precision::fp32, Precision::tf32, Precision::fp16, Precision::fp16_acc16,
                              Precision::bf16, Precision::fp8_e4m3, Precision::int8}) {
    if (!gpu_precision_unsupported_reason(precision, gpu).empty()) continue;
    const char* name = precision_info(precision).name;
    const CublasLtGemm chosen(precision, s, {}, nullptr, std::nullopt);
    EXPECT_FALSE(chosen.held()) << name;
    EXPECT_NE(chosen.description().find("heuristic"), std::string::npos) << name << ": " << chosen.description();
    const CublasLtGemm later(precision, s, {}, nullptr, chosen.choice());
    EXPECT_TRUE(later.held()) << name << ": " << later.description();
    EXPECT_EQ(later.choice(), chosen.choice()) << name;
    EXPECT_EQ(later.algorithm(), chosen.algorithm()) << name;
    EXPECT_EQ(later.workspace_bytes(), chosen.workspace_bytes()) << name;
    const Verification v = run_checked(later, precision, s);
    EXPECT_TRUE(v.passed()) << name << " (" << later.description() << "): " << v.describe();
  }
}

TEST_F(CublasLtGemmTest, AChoiceItCannotUseFallsBackToTheHeuristic) {
  const MatmulShape s{256, 256, 256};
  const CublasLtGemm chosen(Precision::bf16, s, {}, nullptr, std::nullopt);
  for (const std::string& held : {std::string("1:00"), std::string("not a choice"),
                                  "0" + chosen.choice()}) {  // another version's, or damaged
    const CublasLtGemm plan(Precision::bf16, s, {}, nullptr, held);
    EXPECT_FALSE(plan.held()) << held;
    EXPECT_EQ(plan.choice(), chosen.choice()) << held;
    EXPECT_NE(plan.description().find("the held choice"), std::string::npos) << plan.description();
  }
  // An FP16 algorithm handed to a BF16 problem of the same shape: taken only if the library accepts
  // it (cublasLtMatmulAlgoCheck), and the product right either way.
  const CublasLtGemm fp16(Precision::fp16, s, {}, nullptr, std::nullopt);
  const CublasLtGemm crossed(Precision::bf16, s, {}, nullptr, fp16.choice());
  const Verification v = run_checked(crossed, Precision::bf16, s);
  EXPECT_TRUE(v.passed()) << crossed.description() << ": " << v.describe();
}

// Operands that are not where cudaMalloc puts them: the heuristic is told, and its algorithm is right.
TEST_F(CublasLtGemmTest, UnalignedOperandsGetAnAlgorithmForTheirAlignment) {
  const MatmulShape s{129, 127, 131};
  for (Precision precision : {Precision::fp32, Precision::tf32, Precision::fp16, Precision::bf16}) {
    const std::size_t offset = precision_info(precision).input_bytes;  // one element in
    const CublasLtAlignment alignment{static_cast<std::uint32_t>(offset), static_cast<std::uint32_t>(offset),
                                      static_cast<std::uint32_t>(precision_info(precision).output_bytes)};
    const CublasLtGemm plan(precision, s, alignment, nullptr, std::nullopt);
    const Verification v = run_checked(plan, precision, s, offset);
    EXPECT_TRUE(v.passed()) << precision_info(precision).name << " (" << plan.description() << "): " << v.describe();
  }
}

// The first process records the heuristic's algorithm under the problem's key; a later one, given
// the same record, takes it.
TEST_F(CublasLtGemmTest, TheHeldPlanRecordsItsChoiceUnderTheProblemsKey) {
  const MatmulShape s{320, 192, 448};
  FakeHeldChoices choices;
  const CublasLtGemm& plan = cublaslt_gemm_held(choices, Precision::fp16, s, {});
  const std::string key = cublaslt_choice_key(Precision::fp16, s, {});
  ASSERT_EQ(choices.choices.count(key), 1u);
  EXPECT_EQ(choices.choices[key], plan.choice());
  EXPECT_EQ(&cublaslt_gemm(Precision::fp16, s, {}), &plan) << "one plan a problem in a process";
  const CublasLtGemm later(Precision::fp16, s, {}, nullptr, choices.find(key));
  EXPECT_TRUE(later.held()) << later.description();
}

// TF32 is what its name says: its inputs are rounded (an FP32 GEMM's error is far smaller).
TEST_F(CublasLtGemmTest, Tf32RoundsItsInputsAndFp32DoesNot) {
  const MatmulShape s{256, 256, 256};
  const Verification tf32 = run_checked(CublasLtGemm(Precision::tf32, s, {}, nullptr, std::nullopt),
                                        Precision::tf32, s);
  const Verification fp32 = run_checked(CublasLtGemm(Precision::fp32, s, {}, nullptr, std::nullopt),
                                        Precision::fp32, s);
  ASSERT_TRUE(tf32.passed() && fp32.passed()) << tf32.describe() << "; " << fp32.describe();
  EXPECT_GT(tf32.rel_fro_error, 1e-5) << "TF32 rounds inputs to 10 mantissa bits (about 1e-4 relative)";
  EXPECT_LT(fp32.rel_fro_error, 1e-5) << "FP32 keeps 23 bits: no TF32 in the FP32 path";
}

}  // namespace
}  // namespace gpubench
