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

// c[i] = a[i] + b[i] for i < count, FP32: one rounded addition per element, so every
// implementation's result is exactly the host's.
using VectorAddFn = void (*)(const float* a, const float* b, float* c, std::size_t count);

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

// --- memory bandwidth (the stream study) --------------------------------------------------
// BabelStream's five kernels over arrays of n elements, x and y the inputs and z the output:
// copy z = x; scale z = s*x; add z = x + y; triad z = x + s*y, one fused multiply-add rounded
// once (so every implementation gives the same bits); dot z[0] = the sum of x*y. z always holds
// n elements: a dot may keep its partial sums in z[1...].
enum class StreamOp { copy, scale, add, triad, dot };

template <typename T>
using StreamFn = void (*)(StreamOp op, const T* x, const T* y, T* z, std::size_t n, T scalar);

// --- arithmetic intensity (the roofline study) ---------------------------------------------
// For each of n elements: y = x, then k times y = y*a + x (fused multiply-adds): k FMAs per
// element loaded, one element read and one written. FP16 elements travel as IEEE binary16 bits
// (std::uint16_t), a included.
template <typename T>
using FmaChainFn = void (*)(const T* x, T* y, std::size_t n, int k, T a);

// --- parallel primitives (the primitives study) ---------------------------------------------
// Sums are of uint32 values modulo 2^32 (unsigned arithmetic wraps): every order of additions gives
// the same result, so every implementation's sum and prefix sums are checked exactly.
// `sum` is host memory for every implementation; a GPU one may leave its copy there queued on the
// default stream (the caller gives it pinned memory and reads it once that stream's work is done).
using ReduceFn = void (*)(const std::uint32_t* values, std::size_t n, std::uint32_t* sum);
// out[i] = values[0] + ... + values[i], modulo 2^32.
using InclusiveScanFn = void (*)(const std::uint32_t* values, std::uint32_t* out, std::size_t n);
// Ascending, in place.
using SortU32Fn = void (*)(std::uint32_t* keys, std::size_t n);
using SortU64Fn = void (*)(std::uint64_t* keys, std::size_t n);
// Ascending by key, in place, values[i] moving with keys[i].
using SortPairsFn = void (*)(std::uint32_t* keys, std::uint32_t* values, std::size_t n);
// out[i] = a * in[i] + b as one fused multiply-add, rounded once: the same bits on every device.
using AffineTransformFn = void (*)(const float* in, float* out, std::size_t n, float a, float b);

// One library's implementation of each primitive (nullptr: it has none of its own).
struct PrimitiveFunctions {
  ReduceFn reduce = nullptr;
  InclusiveScanFn inclusive_scan = nullptr;
  SortU32Fn sort_u32 = nullptr;
  SortPairsFn sort_pairs = nullptr;
  SortU64Fn sort_u64 = nullptr;
  AffineTransformFn transform = nullptr;
};

// The temporary device storage a GPU library took since it last released it: what its calls asked
// for, and how many of those requests reached the device's allocator (cudaMalloc).
struct TemporaryStorageUse {
  long requests = 0;
  double bytes_requested = 0;
  long device_allocations = 0;
};

}  // namespace gpubench
