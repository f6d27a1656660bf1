#include "core/precision_codec.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>

#include "core/compare_elements.hpp"

namespace gpubench {
namespace {

std::uint32_t bits_of(float value) {
  std::uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

float float_of(std::uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

constexpr float kE4m3Max = 448.0f;
constexpr float kInt8Max = 127.0f;

float largest_magnitude(const std::vector<float>& values) {
  float largest = 0.0f;
  const long count = static_cast<long>(values.size());
#pragma omp parallel for schedule(static) reduction(max : largest)
  for (long i = 0; i < count; ++i) largest = std::max(largest, std::fabs(values[i]));
  return largest > 0.0f ? largest : 1.0f;
}

// Applies `convert` to every element, in row-major order or transposed (rows x cols in,
// cols x rows out), writing the results' bytes straight into the encoded operand: on the OpenMP
// threads, with no intermediate typed copy (operands of 8192^2 elements are encoded per precision).
template <typename T, typename Convert>
std::vector<std::uint8_t> converted(const std::vector<float>& values, int rows, int cols, bool transpose,
                                    Convert convert) {
  std::vector<std::uint8_t> bytes(values.size() * sizeof(T));
  std::uint8_t* out = bytes.data();
  if (!transpose) {  // one contiguous loop the compiler vectorises
    const long count = static_cast<long>(values.size());
#pragma omp parallel for schedule(static)
    for (long i = 0; i < count; ++i) {
      const T value = convert(values[i]);
      std::memcpy(out + static_cast<std::size_t>(i) * sizeof(T), &value, sizeof(T));
    }
    return bytes;
  }
#pragma omp parallel for schedule(static)
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) {
      const std::size_t to = transpose ? static_cast<std::size_t>(c) * rows + r : static_cast<std::size_t>(r) * cols + c;
      const T value = convert(values[static_cast<std::size_t>(r) * cols + c]);
      std::memcpy(out + to * sizeof(T), &value, sizeof(T));
    }
  return bytes;
}

// The conversion to T as a lambda (inlined and vectorised, as a function pointer is not).
template <typename T>
constexpr auto kWidened = [](float value) { return static_cast<T>(value); };

std::int8_t quantize_int8(float scaled) {
  return static_cast<std::int8_t>(std::clamp(std::nearbyint(scaled), -kInt8Max, kInt8Max));
}

}  // namespace

std::uint16_t float_to_half_bits(float value) {
  const std::uint32_t x = bits_of(value);
  const std::uint16_t sign = static_cast<std::uint16_t>((x >> 16) & 0x8000u);
  const std::uint32_t magnitude = x & 0x7FFFFFFFu;
  if (magnitude >= 0x7F800000u) return sign | (magnitude > 0x7F800000u ? 0x7E00u : 0x7C00u);  // NaN, Inf
  if (magnitude >= 0x477FF000u) return sign | 0x7C00u;  // 65520 and above round to infinity
  if (magnitude < 0x38800000u) {                        // below 2^-14: a subnormal half, steps of 2^-24
    return sign | static_cast<std::uint16_t>(std::nearbyint(float_of(magnitude) * 16777216.0f));
  }
  std::uint32_t rebiased = magnitude - 0x38000000u;  // exponent bias 127 -> 15
  rebiased += 0x0FFFu + ((rebiased >> 13) & 1u);     // round the 13 dropped bits to nearest even
  return sign | static_cast<std::uint16_t>(rebiased >> 13);
}

float half_bits_to_float(std::uint16_t bits) {
  const float sign = (bits & 0x8000u) ? -1.0f : 1.0f;
  const int exponent = (bits >> 10) & 0x1F;
  const int fraction = bits & 0x3FF;
  if (exponent == 0) return sign * std::ldexp(static_cast<float>(fraction), -24);
  if (exponent == 31) return fraction ? NAN : sign * INFINITY;
  return sign * std::ldexp(1.0f + fraction / 1024.0f, exponent - 15);
}

std::uint16_t float_to_bf16_bits(float value) {
  const std::uint32_t x = bits_of(value);
  if ((x & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<std::uint16_t>((x >> 16) | 0x40u);  // quiet NaN
  return static_cast<std::uint16_t>((x + 0x7FFFu + ((x >> 16) & 1u)) >> 16);
}

float bf16_bits_to_float(std::uint16_t bits) { return float_of(static_cast<std::uint32_t>(bits) << 16); }

std::uint8_t float_to_e4m3_bits(float value) {
  const std::uint8_t sign = std::signbit(value) ? 0x80 : 0x00;
  const float magnitude = std::fabs(value);
  if (std::isnan(value)) return 0x7F;
  if (magnitude >= kE4m3Max) return sign | 0x7E;  // saturate to 448
  if (magnitude < 0.015625f) {                    // below 2^-6: subnormal, steps of 2^-9
    return sign | static_cast<std::uint8_t>(std::nearbyint(magnitude * 512.0f));
  }
  int exponent;
  const float mantissa = std::frexp(magnitude, &exponent);  // magnitude = mantissa * 2^exponent, mantissa in [0.5, 1)
  int biased = exponent - 1 + 7;
  int fraction = static_cast<int>(std::nearbyint((mantissa * 2.0f - 1.0f) * 8.0f));
  if (fraction == 8) {
    fraction = 0;
    ++biased;
  }
  const int bits = (biased << 3) | fraction;
  return sign | static_cast<std::uint8_t>(std::min(bits, 0x7E));
}

float e4m3_bits_to_float(std::uint8_t bits) {
  const float sign = (bits & 0x80) ? -1.0f : 1.0f;
  const int exponent = (bits >> 3) & 0xF;
  const int fraction = bits & 0x7;
  if (exponent == 15 && fraction == 7) return NAN;
  if (exponent == 0) return sign * std::ldexp(static_cast<float>(fraction), -9);
  return sign * std::ldexp(1.0f + fraction / 8.0f, exponent - 7);
}

EncodedOperands encode_operands(Precision precision, const std::vector<float>& a, const std::vector<float>& b,
                                MatmulShape s) {
  EncodedOperands out;
  switch (precision) {
    case Precision::fp64:
      out.a = converted<double>(a, s.m, s.k, false, kWidened<double>);
      out.b = converted<double>(b, s.k, s.n, false, kWidened<double>);
      break;
    case Precision::fp32:
    case Precision::tf32:  // the tensor cores round to TF32 themselves
      out.a = converted<float>(a, s.m, s.k, false, kWidened<float>);
      out.b = converted<float>(b, s.k, s.n, false, kWidened<float>);
      break;
    case Precision::fp16:
    case Precision::fp16_acc16:
      out.a = converted<std::uint16_t>(a, s.m, s.k, false, float_to_half_bits);
      out.b = converted<std::uint16_t>(b, s.k, s.n, false, float_to_half_bits);
      break;
    case Precision::bf16:
      out.a = converted<std::uint16_t>(a, s.m, s.k, false, float_to_bf16_bits);
      out.b = converted<std::uint16_t>(b, s.k, s.n, false, float_to_bf16_bits);
      break;
    case Precision::fp8_e4m3:
    case Precision::int8: {
      const bool fp8 = precision == Precision::fp8_e4m3;
      const float top = fp8 ? kE4m3Max : kInt8Max;
      const float scale_a = top / largest_magnitude(a), scale_b = top / largest_magnitude(b);
      out.dequant[0] = 1.0f / scale_a;
      out.dequant[kDequantStride] = 1.0f / scale_b;
      out.b_transposed = true;
      if (fp8) {
        out.a = converted<std::uint8_t>(a, s.m, s.k, false, [&](float v) { return float_to_e4m3_bits(v * scale_a); });
        out.b = converted<std::uint8_t>(b, s.k, s.n, true, [&](float v) { return float_to_e4m3_bits(v * scale_b); });
      } else {
        out.a = converted<std::int8_t>(a, s.m, s.k, false, [&](float v) { return quantize_int8(v * scale_a); });
        out.b = converted<std::int8_t>(b, s.k, s.n, true, [&](float v) { return quantize_int8(v * scale_b); });
      }
      break;
    }
  }
  return out;
}

namespace {

// Calls `use(decode)` with `decode(i)`: element i of the output `c`, stored in the precision's output
// format, as FP64 (one switch on the format, not one per element).
template <typename Use>
auto with_decoder(Precision precision, const void* c, const EncodedOperands& operands, Use use) {
  switch (precision) {
    case Precision::fp64: {
      const auto* doubles = static_cast<const double*>(c);
      return use([doubles](std::size_t i) { return doubles[i]; });
    }
    case Precision::fp16:
    case Precision::fp16_acc16: {
      const auto* halves = static_cast<const std::uint16_t*>(c);
      return use([halves](std::size_t i) { return static_cast<double>(half_bits_to_float(halves[i])); });
    }
    case Precision::bf16:
    case Precision::fp8_e4m3: {  // BF16 output; FP8's already dequantized by the GEMM's scales
      const auto* bf16 = static_cast<const std::uint16_t*>(c);
      return use([bf16](std::size_t i) { return static_cast<double>(bf16_bits_to_float(bf16[i])); });
    }
    case Precision::int8: {
      const auto* sums = static_cast<const std::int32_t*>(c);
      const double dequant = static_cast<double>(operands.dequant[0]) * operands.dequant[kDequantStride];
      return use([sums, dequant](std::size_t i) { return sums[i] * dequant; });
    }
    default: {  // FP32 output
      const auto* floats = static_cast<const float*>(c);
      return use([floats](std::size_t i) { return static_cast<double>(floats[i]); });
    }
  }
}

}  // namespace

std::vector<double> decode_output(Precision precision, const void* c, std::size_t count,
                                  const EncodedOperands& operands) {
  std::vector<double> out(count);
  with_decoder(precision, c, operands, [&](auto decode) {
    const long elements = static_cast<long>(count);
#pragma omp parallel for schedule(static)
    for (long i = 0; i < elements; ++i) out[i] = decode(static_cast<std::size_t>(i));
    return 0;
  });
  return out;
}

Verification verify_encoded_output(Precision precision, const void* c, const EncodedOperands& operands,
                                   const MatmulReference& ref, Tolerance tolerance) {
  return with_decoder(precision, c, operands,
                      [&](auto decode) { return compare_reference_rows(ref, tolerance, decode); });
}

// --- the convolution study's tensors ---------------------------------------------------------
void require_conv2d_precision(Precision precision) {
  if (precision != Precision::fp32 && precision != Precision::tf32 && precision != Precision::fp16)
    throw std::invalid_argument(std::string("cuDNN convolution has no precision ") + precision_info(precision).name +
                                " here (fp32, tf32, fp16)");
}

std::size_t conv2d_element_bytes(Precision precision) {
  require_conv2d_precision(precision);
  return precision == Precision::fp16 ? 2 : 4;
}

std::vector<std::uint8_t> encode_conv2d_tensor(const std::vector<float>& values, Precision precision) {
  std::vector<std::uint8_t> bytes(values.size() * conv2d_element_bytes(precision));
  if (precision != Precision::fp16) {
    std::memcpy(bytes.data(), values.data(), bytes.size());
    return bytes;
  }
  std::vector<std::uint16_t> half(values.size());
  const long count = static_cast<long>(values.size());
#pragma omp parallel for schedule(static)  // tensors of up to 50M elements, converted in software
  for (long i = 0; i < count; ++i) half[i] = float_to_half_bits(values[i]);
  std::memcpy(bytes.data(), half.data(), bytes.size());
  return bytes;
}

std::vector<float> decode_conv2d_tensor(const std::vector<std::uint8_t>& bytes, Precision precision) {
  std::vector<float> values(bytes.size() / conv2d_element_bytes(precision));
  if (precision != Precision::fp16) {
    std::memcpy(values.data(), bytes.data(), bytes.size());
    return values;
  }
  std::vector<std::uint16_t> half(values.size());
  std::memcpy(half.data(), bytes.data(), bytes.size());
  const long count = static_cast<long>(values.size());
#pragma omp parallel for schedule(static)
  for (long i = 0; i < count; ++i) values[i] = half_bits_to_float(half[i]);
  return values;
}

}  // namespace gpubench
