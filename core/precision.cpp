#include "core/precision.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace gpubench {
namespace {

constexpr double kFp64Roundoff = 1.1102230246251565e-16;  // 2^-53
constexpr double kFp32Roundoff = 5.9604644775390625e-8;   // 2^-24
constexpr double kHalfRoundoff = 4.8828125e-4;            // 2^-11: FP16 and TF32 keep 10 fraction bits
constexpr double kBf16Roundoff = 3.90625e-3;              // 2^-8: 7 fraction bits
constexpr double kE4m3Roundoff = 6.25e-2;                 // 2^-4: 3 fraction bits
// Hopper's FP8 tensor cores keep about 14 bits while accumulating (DeepSeek-V3 report, 2024).
constexpr double kFp8AccumulateRoundoff = 6.103515625e-5;  // 2^-14
// Per-tensor symmetric INT8: a step is amax/127, so rounding is half a step, up to 1/254 of
// amax; against a typical (not the largest) element that is larger, hence 1/127.
constexpr double kInt8Roundoff = 1.0 / 127.0;

constexpr double kInputFactor = 4.0;
constexpr double kOutputFactor = 2.0;
constexpr double kAccumulateFactor = 16.0;
constexpr double kMaxTolerance = 0.5;

}  // namespace

const std::vector<PrecisionInfo>& all_precisions() {
  static const std::vector<PrecisionInfo> all = {
      {Precision::fp64, "fp64", "FP64", "FP64", "FP64", false, 0.0, kFp64Roundoff, kFp64Roundoff, 8, 8},
      {Precision::fp32, "fp32", "FP32", "FP32", "FP32", false, 0.0, kFp32Roundoff, kFp32Roundoff, 4, 4},
      {Precision::tf32, "tf32", "FP32 (TF32 in the multiply)", "FP32", "FP32", true, kHalfRoundoff, kFp32Roundoff,
       kFp32Roundoff, 4, 4},
      // FP16 and BF16 write their own format, as frameworks' matmuls in these dtypes do.
      {Precision::fp16, "fp16", "FP16", "FP32", "FP16", true, kHalfRoundoff, kFp32Roundoff, kHalfRoundoff, 2, 2},
      {Precision::fp16_acc16, "fp16_acc16", "FP16", "FP16", "FP16", true, kHalfRoundoff, kHalfRoundoff,
       kHalfRoundoff, 2, 2},
      {Precision::bf16, "bf16", "BF16", "FP32", "BF16", true, kBf16Roundoff, kFp32Roundoff, kBf16Roundoff, 2, 2},
      {Precision::fp8_e4m3, "fp8_e4m3", "FP8 E4M3, per-tensor scale", "FP32 (about 14 bits on Hopper)", "BF16", true,
       kE4m3Roundoff, kFp8AccumulateRoundoff, kBf16Roundoff, 1, 2},
      {Precision::int8, "int8", "INT8, per-tensor scale", "INT32", "INT32 (scaled back on the host)", true,
       kInt8Roundoff, 0.0, 0.0, 1, 4},
  };
  return all;
}

const PrecisionInfo& precision_info(Precision precision) {
  for (const PrecisionInfo& info : all_precisions())
    if (info.id == precision) return info;
  throw std::logic_error("unknown precision");
}

Precision precision_named(const std::string& name) {
  for (const PrecisionInfo& info : all_precisions())
    if (name == info.name) return info.id;
  throw std::invalid_argument("no precision '" + name + "'");
}

GemmOperandBytes gemm_operand_bytes(Precision precision, const MatmulShape& shape) {
  const PrecisionInfo& info = precision_info(precision);
  return {static_cast<double>(info.input_bytes) * (shape.a_elements() + shape.b_elements()),
          shape.c_elements() * static_cast<std::size_t>(info.output_bytes)};
}

Tolerance precision_tolerance(Precision precision, int k) {
  const PrecisionInfo& info = precision_info(precision);
  const double bound = kInputFactor * info.input_roundoff + kOutputFactor * info.output_roundoff +
                       kAccumulateFactor * info.accumulate_roundoff * std::sqrt(static_cast<double>(std::max(k, 1)));
  const double capped = std::min(bound, kMaxTolerance);
  return {capped, capped};
}

std::string tolerance_rule() {
  return "relative error <= min(0.5, 4 u_in + 2 u_out + 16 u_acc sqrt(k)), u_in: rounding of one input, "
         "u_out: rounding of the stored output, u_acc: unit roundoff of the accumulation";
}

std::string gpu_precision_unsupported_reason(Precision precision, GpuCapability gpu) {
  const int cc = gpu.major * 10 + gpu.minor;
  const std::string have = " (this GPU: " + std::to_string(gpu.major) + "." + std::to_string(gpu.minor) + ")";
  switch (precision) {
    case Precision::fp64:
      return "FP64 is measured on the CPU only";
    case Precision::tf32:
    case Precision::bf16:
      return cc >= 80 ? "" : std::string(precision_info(precision).name) + " needs compute capability 8.0 or newer" + have;
    case Precision::fp16:
    case Precision::fp16_acc16:
      return cc >= 70 ? "" : "FP16 tensor cores need compute capability 7.0 or newer" + have;
    case Precision::int8:
      return cc >= 75 ? "" : "INT8 tensor cores need compute capability 7.5 or newer" + have;
    case Precision::fp8_e4m3:
      return cc >= 89 ? "" : "FP8 needs compute capability 8.9 or newer" + have;
    case Precision::fp32:
      return "";
  }
  return "unknown precision";
}

}  // namespace gpubench
