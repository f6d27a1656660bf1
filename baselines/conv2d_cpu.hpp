// FP32 2-D convolution on the CPU, as cuDNN computes it (CUDNN_CROSS_CORRELATION: the
// filter is not flipped), no bias. The shape, layout and signature here are the ones the
// GPU implementations share, so one verification routine checks them all.
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/verify.hpp"

namespace gpubench {

// N images of C x H x W convolved with K filters of C x R x R (R = S = kernel), giving
// N x K x P x Q. Padding is zeros on every side.
struct Conv2dShape {
  int batch;         // N
  int in_channels;   // C
  int out_channels;  // K
  int height;        // H
  int width;         // W
  int kernel;        // R = S
  int stride = 1;
  int padding = 0;

  int out_height() const { return (height + 2 * padding - kernel) / stride + 1; }  // P
  int out_width() const { return (width + 2 * padding - kernel) / stride + 1; }    // Q
  // The usual count, 2*N*K*P*Q*C*R*S: filter taps that fall on padding count too.
  double flop() const {
    return 2.0 * batch * out_channels * out_height() * out_width() * in_channels * kernel * kernel;
  }
  // Length of the dot product behind each output element: C * R * S.
  int accumulation_length() const { return in_channels * kernel * kernel; }
  std::size_t input_elements() const {
    return static_cast<std::size_t>(batch) * in_channels * height * width;
  }
  std::size_t filter_elements() const {
    return static_cast<std::size_t>(out_channels) * in_channels * kernel * kernel;
  }
  std::size_t output_elements() const {
    return static_cast<std::size_t>(batch) * out_channels * out_height() * out_width();
  }
};

// Input and output are NCHW or NHWC; the filter follows: KCRS for nchw, KRSC for nhwc.
enum class TensorLayout { nchw, nhwc };

const char* layout_name(TensorLayout layout);

// Host pointers for CPU implementations, device pointers for GPU ones.
using Conv2dFn = void (*)(const float* input, const float* filter, float* output, Conv2dShape shape,
                          TensorLayout layout);

// im2col (OpenMP threads) then OpenBLAS SGEMM (all of its threads), columns built for at
// most 64 MiB of images at a time: the honest CPU baseline. Time it with
// OMP_WAIT_POLICY=passive, or libgomp's threads, spinning after im2col, slow the GEMM.
void conv2d_im2col_openblas(const float* input, const float* filter, float* output, Conv2dShape shape,
                            TensorLayout layout);

// The plain seven-deep loop, one thread, FP32 sums: the reference every other
// implementation is tested against, not a contender.
void conv2d_direct_loop(const float* input, const float* filter, float* output, Conv2dShape shape,
                        TensorLayout layout);

// Output elements checked against FP64 sums when the output is larger than this.
inline constexpr std::size_t kConv2dVerifiedSamples = 16384;

// Checks `output` (the full tensor, in `layout`) against FP64 sums of the same FP32 inputs:
// every element when there are at most `samples`, otherwise `samples` drawn at random from
// `seed`. Errors are measured as verify_matmul measures them, against
// accumulation_tolerance(kFp32UnitRoundoff, C*R*S); every element is scanned for NaN/Inf.
Verification verify_conv2d(const float* output, const float* input, const float* filter, Conv2dShape shape,
                           TensorLayout layout, std::uint64_t seed,
                           std::size_t samples = kConv2dVerifiedSamples);

}  // namespace gpubench
