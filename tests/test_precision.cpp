// The precision study's CPU-side logic: format conversions, scaled encodings, tolerances,
// capability skips (with faked GPUs), and that the error computation catches a planted
// fault at a low-precision tolerance.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "core/precision.hpp"
#include "core/precision_codec.hpp"
#include "matmul_test_support.hpp"

namespace gpubench {
namespace {

TEST(Codec, HalfRoundsToNearestEvenAndOverflowsToInfinity) {
  EXPECT_EQ(float_to_half_bits(1.0f), 0x3C00);
  EXPECT_EQ(float_to_half_bits(-2.0f), 0xC000);
  EXPECT_EQ(float_to_half_bits(65504.0f), 0x7BFF);
  EXPECT_EQ(float_to_half_bits(65520.0f), 0x7C00);             // the tie above the largest half rounds up
  EXPECT_EQ(float_to_half_bits(1.0f + 1.0f / 2048), 0x3C00);   // tie between 1 and 1+2^-10: even
  EXPECT_EQ(float_to_half_bits(1.0f + 3.0f / 2048), 0x3C02);   // tie: to the even neighbour above
  EXPECT_EQ(float_to_half_bits(std::ldexp(1.0f, -24)), 0x0001);  // smallest subnormal
  for (float v : {0.1f, -3.14159f, 1e-5f, 1234.5f})
    EXPECT_NEAR(half_bits_to_float(float_to_half_bits(v)), v, std::fabs(v) * 4.9e-4 + 6e-8) << v;
}

TEST(Codec, Bf16KeepsEightBitsOfPrecision) {
  EXPECT_EQ(float_to_bf16_bits(1.0f), 0x3F80);
  EXPECT_EQ(float_to_bf16_bits(1.0f + 1.0f / 256), 0x3F80);  // tie: even
  for (float v : {0.1f, -3.14159f, 1e-30f, 3e38f})
    EXPECT_NEAR(bf16_bits_to_float(float_to_bf16_bits(v)), v, std::fabs(v) * 3.91e-3) << v;
}

TEST(Codec, E4m3SaturatesAndHasSubnormals) {
  EXPECT_EQ(float_to_e4m3_bits(448.0f), 0x7E);
  EXPECT_EQ(float_to_e4m3_bits(1e6f), 0x7E);   // saturates: E4M3 has no infinity
  EXPECT_EQ(float_to_e4m3_bits(-448.0f), 0xFE);
  EXPECT_EQ(float_to_e4m3_bits(1.0f), 0x38);
  EXPECT_EQ(float_to_e4m3_bits(0.015625f), 0x08);  // smallest normal, 2^-6
  EXPECT_EQ(float_to_e4m3_bits(std::ldexp(1.0f, -9)), 0x01);
  EXPECT_EQ(e4m3_bits_to_float(0x7E), 448.0f);
  for (float v : {0.3f, -7.7f, 100.0f, 0.02f})
    EXPECT_NEAR(e4m3_bits_to_float(float_to_e4m3_bits(v)), v, std::fabs(v) * 0.0625) << v;
}

TEST(Codec, ScaledFormatsUseTheFullRangeAndTransposeB) {
  const MatmulShape shape{2, 3, 2};  // A 2x2, B 2x3
  const std::vector<float> a = {0.5f, -1.0f, 0.25f, 0.0f}, b = {2.0f, 1.0f, 0.0f, -1.0f, 0.5f, 4.0f};
  const EncodedOperands q = encode_operands(Precision::int8, a, b, shape);
  ASSERT_TRUE(q.b_transposed);
  EXPECT_EQ(static_cast<std::int8_t>(q.a[1]), -127);  // largest |A| maps to 127
  EXPECT_FLOAT_EQ(q.dequant[0], 1.0f / 127);
  EXPECT_FLOAT_EQ(q.dequant[kDequantStride], 4.0f / 127);
  // B^T row 2 is B's column 2: (0, 4) -> (0, 127)
  EXPECT_EQ(static_cast<std::int8_t>(q.b[4]), 0);
  EXPECT_EQ(static_cast<std::int8_t>(q.b[5]), 127);
  const EncodedOperands f8 = encode_operands(Precision::fp8_e4m3, a, b, shape);
  EXPECT_EQ(f8.a[1], float_to_e4m3_bits(-448.0f));
  EXPECT_FLOAT_EQ(f8.dequant[kDequantStride], 4.0f / 448);
}

// The unscaled formats: A and B element by element in row-major order, FP32 kept bit for bit, FP64
// widened exactly, FP16 and BF16 rounded one element at a time.
TEST(Codec, UnscaledFormatsKeepTheLayoutAndRoundEachElement) {
  const MatmulShape shape{3, 5, 4};  // A 3x4, B 4x5
  const std::vector<float> a = random_uniform(shape.a_elements(), 1), b = random_normal(shape.b_elements(), 2);
  const EncodedOperands f32 = encode_operands(Precision::fp32, a, b, shape);
  ASSERT_EQ(f32.a.size(), a.size() * 4);
  EXPECT_EQ(std::memcmp(f32.a.data(), a.data(), f32.a.size()), 0);
  EXPECT_EQ(std::memcmp(f32.b.data(), b.data(), f32.b.size()), 0);
  const EncodedOperands f64 = encode_operands(Precision::fp64, a, b, shape);
  const EncodedOperands f16 = encode_operands(Precision::fp16, a, b, shape);
  const EncodedOperands bf = encode_operands(Precision::bf16, a, b, shape);
  for (std::size_t i = 0; i < b.size(); ++i) {
    double wide;
    std::uint16_t half, brain;
    std::memcpy(&wide, f64.b.data() + 8 * i, 8);
    std::memcpy(&half, f16.b.data() + 2 * i, 2);
    std::memcpy(&brain, bf.b.data() + 2 * i, 2);
    EXPECT_EQ(wide, static_cast<double>(b[i])) << i;
    EXPECT_EQ(half, float_to_half_bits(b[i])) << i;
    EXPECT_EQ(brain, float_to_bf16_bits(b[i])) << i;
  }
  EXPECT_FALSE(f16.b_transposed);
}

TEST(Codec, Int8OutputIsScaledBack) {
  EncodedOperands q;
  q.dequant[0] = 0.5f;
  q.dequant[kDequantStride] = 0.25f;
  const std::int32_t sums[2] = {8, -16};
  const std::vector<double> c = decode_output(Precision::int8, sums, 2, q);
  EXPECT_DOUBLE_EQ(c[0], 1.0);
  EXPECT_DOUBLE_EQ(c[1], -2.0);
}

TEST(PrecisionTolerance, GrowsWithLengthAndShrinksWithBits) {
  EXPECT_LT(precision_tolerance(Precision::fp32, 256).rel_fro, precision_tolerance(Precision::fp32, 4096).rel_fro);
  EXPECT_LT(precision_tolerance(Precision::fp32, 4096).rel_fro, precision_tolerance(Precision::tf32, 4096).rel_fro);
  EXPECT_LT(precision_tolerance(Precision::fp16, 4096).rel_fro, precision_tolerance(Precision::bf16, 4096).rel_fro);
  EXPECT_LT(precision_tolerance(Precision::bf16, 4096).rel_fro, precision_tolerance(Precision::fp8_e4m3, 4096).rel_fro);
  EXPECT_DOUBLE_EQ(precision_tolerance(Precision::fp16_acc16, 16384).rel_fro, 0.5);  // capped
  EXPECT_LT(precision_tolerance(Precision::fp64, 16384).rel_fro, 1e-12);
}

TEST(Capability, FakedGpusSkipWhatTheyLack) {
  const GpuCapability ampere{8, 0}, ada{8, 9}, hopper{9, 0}, volta{7, 0};
  EXPECT_NE(gpu_precision_unsupported_reason(Precision::fp8_e4m3, ampere).find("8.9"), std::string::npos);
  EXPECT_NE(gpu_precision_unsupported_reason(Precision::fp8_e4m3, ampere).find("this GPU: 8.0"), std::string::npos);
  EXPECT_EQ(gpu_precision_unsupported_reason(Precision::fp8_e4m3, ada), "");
  for (const PrecisionInfo& info : all_precisions())
    if (info.id != Precision::fp64) EXPECT_EQ(gpu_precision_unsupported_reason(info.id, hopper), "") << info.name;
  EXPECT_NE(gpu_precision_unsupported_reason(Precision::bf16, volta), "");
  EXPECT_NE(gpu_precision_unsupported_reason(Precision::int8, volta), "");
  EXPECT_EQ(gpu_precision_unsupported_reason(Precision::fp16, volta), "");
  EXPECT_NE(gpu_precision_unsupported_reason(Precision::fp64, hopper), "");
}

// A BF16 result computed honestly passes its tolerance; the same result with one wrong
// element fails it: the low-precision bound is loose, not blind.
TEST(PrecisionVerification, CatchesAPlantedFaultAtBf16Tolerance) {
  const testing::RandomMatmul problem({96, 80, 64}, 3);
  const EncodedOperands bf16 = encode_operands(Precision::bf16, problem.a, problem.b, problem.shape);
  std::vector<double> c(problem.shape.c_elements(), 0.0);
  const auto* a = reinterpret_cast<const std::uint16_t*>(bf16.a.data());
  const auto* b = reinterpret_cast<const std::uint16_t*>(bf16.b.data());
  for (int i = 0; i < problem.shape.m; ++i)
    for (int j = 0; j < problem.shape.n; ++j)
      for (int p = 0; p < problem.shape.k; ++p)
        c[i * problem.shape.n + j] += static_cast<double>(bf16_bits_to_float(a[i * problem.shape.k + p])) *
                                      bf16_bits_to_float(b[p * problem.shape.n + j]);
  const Tolerance tolerance = precision_tolerance(Precision::bf16, problem.shape.k);
  const Verification honest = verify_matmul(c.data(), problem.reference, tolerance);
  EXPECT_TRUE(honest.passed()) << honest.describe();
  EXPECT_GT(honest.rel_fro_error, 1e-4);  // input rounding shows: BF16 is not FP32
  c[5 * problem.shape.n + 7] += 5.0;
  EXPECT_FALSE(verify_matmul(c.data(), problem.reference, tolerance).passed());
}

// The full reference's values stored in `precision`'s output format (a stand-in for a GPU's output).
std::vector<std::uint8_t> stored_output(Precision precision, const MatmulReference& full, const EncodedOperands& q) {
  const std::size_t count = full.values.size();
  std::vector<std::uint8_t> bytes(count * precision_info(precision).output_bytes);
  for (std::size_t i = 0; i < count; ++i) {
    const float value = static_cast<float>(full.values[i]);
    if (precision == Precision::fp16) {
      const std::uint16_t bits = float_to_half_bits(value);
      std::memcpy(bytes.data() + 2 * i, &bits, 2);
    } else if (precision == Precision::bf16) {
      const std::uint16_t bits = float_to_bf16_bits(value);
      std::memcpy(bytes.data() + 2 * i, &bits, 2);
    } else if (precision == Precision::int8) {
      const double dequant = static_cast<double>(q.dequant[0]) * q.dequant[kDequantStride];
      const auto sum = static_cast<std::int32_t>(std::nearbyint(full.values[i] / dequant));
      std::memcpy(bytes.data() + 4 * i, &sum, 4);
    } else {
      std::memcpy(bytes.data() + 4 * i, &value, 4);
    }
  }
  return bytes;
}

// verify_encoded_output decodes element by element what decode_output decodes whole: the same errors
// as verify_matmul on the decoded output, with a full reference and with a sampled one; a NaN-poisoned
// element outside the sampled rows (never written) fails; a wrong element of a sampled row fails.
TEST(PrecisionVerification, EncodedOutputIsCheckedAsItsDecodingIs) {
  const testing::RandomMatmul problem({96, 80, 64}, 4);
  const MatmulShape shape = problem.shape;
  const MatmulReference sampled =
      matmul_reference_fp64(problem.a.data(), problem.b.data(), shape, ReferencePolicy{0.0, 10}, 6);
  ASSERT_FALSE(sampled.complete());
  int unsampled = 0;
  while (std::find(sampled.rows.begin(), sampled.rows.end(), unsampled) != sampled.rows.end()) ++unsampled;
  for (Precision precision : {Precision::fp32, Precision::fp16, Precision::bf16, Precision::int8}) {
    SCOPED_TRACE(precision_info(precision).name);
    const EncodedOperands q = encode_operands(precision, problem.a, problem.b, shape);
    const Tolerance tolerance = precision_tolerance(precision, shape.k);
    std::vector<std::uint8_t> c = stored_output(precision, problem.reference, q);
    const std::vector<double> decoded = decode_output(precision, c.data(), shape.c_elements(), q);
    for (const MatmulReference* ref : {&problem.reference, &sampled}) {
      const Verification whole = verify_matmul(decoded.data(), *ref, tolerance);
      const Verification in_place = verify_encoded_output(precision, c.data(), q, *ref, tolerance);
      EXPECT_TRUE(in_place.passed()) << in_place.describe();
      EXPECT_DOUBLE_EQ(in_place.rel_fro_error, whole.rel_fro_error);
      EXPECT_DOUBLE_EQ(in_place.max_rel_error, whole.max_rel_error);
      EXPECT_EQ(in_place.non_finite, 0u);
    }
    const std::size_t bytes = precision_info(precision).output_bytes;
    if (precision != Precision::int8) {  // an INT32 output has no NaN to poison it with
      std::vector<std::uint8_t> unwritten = c;
      std::memset(unwritten.data() + (static_cast<std::size_t>(unsampled) * shape.n + 3) * bytes, 0xFF, bytes);
      const Verification v = verify_encoded_output(precision, unwritten.data(), q, sampled, tolerance);
      EXPECT_FALSE(v.passed());
      EXPECT_EQ(v.non_finite, 1u);
    }
    MatmulReference off = problem.reference;  // one element of a sampled row 5 away
    off.values[static_cast<std::size_t>(sampled.rows[2]) * shape.n + 5] += 5.0;
    const std::vector<std::uint8_t> wrong = stored_output(precision, off, q);
    EXPECT_FALSE(verify_encoded_output(precision, wrong.data(), q, sampled, tolerance).passed());
  }
}

}  // namespace
}  // namespace gpubench
