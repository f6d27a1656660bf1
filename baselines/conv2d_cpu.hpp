// FP32 2-D convolution on the CPU, as cuDNN computes it (CUDNN_CROSS_CORRELATION: the
// filter is not flipped), no bias. The shape, layout and signature here are the ones the
// GPU implementations share, so one verification routine checks them all.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/operations.hpp"
#include "core/verify.hpp"

namespace gpubench {

// im2col (OpenMP threads) then OpenBLAS SGEMM (all of its threads), columns built for at
// most 64 MiB of images at a time: the honest CPU baseline. Time it with
// OMP_WAIT_POLICY=passive, or libgomp's threads, spinning after im2col, slow the GEMM.
void conv2d_im2col_openblas(const float* input, const float* filter, float* output, Conv2dShape shape,
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
