// Host-side conversion of FP32 operands into each precision's storage format, and of
// outputs back to FP64 for verification. Portable code (no CUDA headers), so the CPU
// tests check the roundings that the GPU entries rely on.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/operations.hpp"
#include "core/precision.hpp"
#include "core/reference.hpp"
#include "core/verify.hpp"

namespace gpubench {

// Round to nearest even; out-of-range values saturate (E4M3) or become infinities (FP16).
std::uint16_t float_to_half_bits(float value);
float half_bits_to_float(std::uint16_t bits);
std::uint16_t float_to_bf16_bits(float value);
float bf16_bits_to_float(std::uint16_t bits);
std::uint8_t float_to_e4m3_bits(float value);  // OCP E4M3 ("FN"): largest finite 448, no infinities
float e4m3_bits_to_float(std::uint8_t bits);

// A and B in a precision's storage format. FP8 and INT8 are scaled per tensor so the
// largest magnitude maps to the format's largest value; `dequant` undoes it (C = dequant_a
// * dequant_b * A_q B_q), laid out as the GEMMs read it (see kDequantStride). Their B is stored transposed (n x k, row-major): the layout the
// tensor-core integer and FP8 GEMMs require.
struct EncodedOperands {
  std::vector<std::uint8_t> a, b;
  alignas(16) float dequant[2 * kDequantStride] = {1.0f, 0.0f, 0.0f, 0.0f, 1.0f, 0.0f, 0.0f, 0.0f};  // A's, B's
  bool b_transposed = false;
};

EncodedOperands encode_operands(Precision precision, const std::vector<float>& a, const std::vector<float>& b,
                                MatmulShape shape);

// The m x n output `c` (in the precision's output format) as FP64 values.
std::vector<double> decode_output(Precision precision, const void* c, std::size_t count,
                                  const EncodedOperands& operands);

// The output `c` (m x n, row-major, in the precision's output format) checked as verify_matmul checks an
// FP32 one: the rows `ref` holds decoded and compared, every element required to be finite. Decodes
// in place, element by element: no FP64 copy of the whole output.
Verification verify_encoded_output(Precision precision, const void* c, const EncodedOperands& operands,
                                   const MatmulReference& ref, Tolerance tolerance);

// --- the convolution study's tensors ---------------------------------------------------------
// Input, filter and output are FP32 for Precision::fp32 and tf32 and FP16 for fp16 (FP32
// accumulation in all three: kernels/conv2d_cudnn); other precisions are refused with
// std::invalid_argument. The CPU side stays FP32: a caller converts on the host with these.
void require_conv2d_precision(Precision precision);
std::size_t conv2d_element_bytes(Precision precision);
// FP32 values in the precision's storage format (FP16: rounded to nearest even).
std::vector<std::uint8_t> encode_conv2d_tensor(const std::vector<float>& values, Precision precision);
// A tensor in the precision's storage format as FP32 values (exact: FP16 widens losslessly).
std::vector<float> decode_conv2d_tensor(const std::vector<std::uint8_t>& bytes, Precision precision);

}  // namespace gpubench
