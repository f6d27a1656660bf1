// The operations a study measures, as one signature each. A CPU baseline (baselines/)
// and its GPU counterparts (kernels/) share the signature, so one verification routine
// serves every implementation. GPU implementations take device pointers and enqueue
// their work on the legacy default stream.
#pragma once

#include <cstddef>
#include <cstdint>

namespace gpubench {

// C[m x n] = A[m x k] * B[k x n], all row-major and contiguous.
struct MatmulShape {
  int m;
  int n;
  int k;

  double flop() const { return 2.0 * m * n * k; }
  std::size_t a_elements() const { return static_cast<std::size_t>(m) * k; }
  std::size_t b_elements() const { return static_cast<std::size_t>(k) * n; }
  std::size_t c_elements() const { return static_cast<std::size_t>(m) * n; }
};

using MatmulFp32Fn = void (*)(const float* a, const float* b, float* c, MatmulShape shape);

// `batch` independent products C_i = A_i * B_i of square n x n row-major matrices, stored
// back to back (matrix i starts at i * n * n), as strided-batched GEMMs take them.
struct BatchedGemmShape {
  int n = 0;
  int batch = 0;
  std::size_t stride() const { return static_cast<std::size_t>(n) * n; }
  std::size_t elements() const { return stride() * batch; }
  double flop() const { return 2.0 * n * n * static_cast<double>(n) * batch; }
};

using BatchedGemmFn = void (*)(const float* a, const float* b, float* c, BatchedGemmShape shape);

// --- one training step of an MLP (the MLP study) ----------------------------------------
// inputs -> hidden (ReLU) -> hidden (ReLU) -> outputs (logits), softmax cross-entropy.
// The defaults are MNIST's shape.
struct MlpShape {
  int inputs = 784;
  int hidden = 1024;
  int outputs = 10;
};

// Where one tensor lies in the flat parameter vector, in elements.
struct MlpTensor {
  std::size_t offset = 0;
  std::size_t size = 0;
};

// W1 (hidden x inputs), b1 (hidden), W2 (hidden x hidden), b2, W3 (outputs x hidden), b3,
// contiguous in that order; gradients use the same layout.
struct MlpLayout {
  MlpTensor w1, b1, w2, b2, w3, b3;
  std::size_t parameters = 0;  // total length of the flat vector
};

MlpLayout mlp_layout(MlpShape shape);

// --- 2-D convolution (the convolution study) ---------------------------------------------
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

}  // namespace gpubench
