// The plain seven-deep convolution loop, one thread, FP32 sums: the reference the CPU and
// GPU convolutions are tested against, not a contender (the study times im2col + OpenBLAS and
// cuDNN). Cross-correlation, as cuDNN's CUDNN_CROSS_CORRELATION and conv2d_cpu compute it.
#pragma once

#include "core/operations.hpp"

namespace gpubench::testing {

// Sums each output element in the same order (filter row, filter column, channel) whatever
// the layout, so NCHW and NHWC results agree bit for bit. A Conv2dFn.
void conv2d_direct_loop(const float* input, const float* filter, float* output, Conv2dShape shape,
                        TensorLayout layout);

}  // namespace gpubench::testing
