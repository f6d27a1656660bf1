#include "mlp_cuda.cuh"

#include <math_constants.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "common/cuda_check.hpp"
#include "cublas_handle.hpp"

namespace gpubench {
namespace {

using bf16 = __nv_bfloat16;

constexpr int kThreads = 256;
// Grid-stride loops stop adding blocks here: a few times what any current GPU keeps resident.
constexpr std::size_t kMaxBlocks = 4096;
// Row-wise kernels stride over rows with at most this many blocks in the grid's y dimension.
constexpr int kMaxRowBlocks = 1024;
// The loss kernel is one block (a power of two, for its tree reduction).
constexpr int kLossThreads = 1024;
// Column sums: a block covers kColumnStrip columns (a warp reads them as one contiguous row piece) with
// kRowLanes rows in flight, over a chunk of kRowsPerChunk rows.
constexpr int kColumnStrip = 32;
constexpr int kRowLanes = 8;
constexpr int kRowsPerChunk = 64;

__host__ __device__ std::size_t elements(int rows, int columns) { return static_cast<std::size_t>(rows) * columns; }

int grid_for(std::size_t count) { return static_cast<int>(std::min((count + kThreads - 1) / kThreads, kMaxBlocks)); }

int chunks_of(int rows) { return (rows + kRowsPerChunk - 1) / kRowsPerChunk; }

__device__ std::size_t first_index() { return blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; }
__device__ std::size_t grid_stride() { return static_cast<std::size_t>(gridDim.x) * blockDim.x; }

__device__ float to_float(float v) { return v; }
__device__ float to_float(bf16 v) { return __bfloat162float(v); }

template <typename T>
__device__ T from_float(float v);
template <>
__device__ float from_float<float>(float v) {
  return v;
}
template <>
__device__ bf16 from_float<bf16>(float v) {
  return __float2bfloat16_rn(v);
}

// --- kernels ------------------------------------------------------------------------------------------

__global__ void convert_to_bf16(const float* in, bf16* out, std::size_t count) {
  for (std::size_t i = first_index(); i < count; i += grid_stride()) out[i] = __float2bfloat16_rn(in[i]);
}

// values = ReLU(values + bias) over a batch-major matrix, the sum in FP32. Threads run along a row (a warp
// touches consecutive elements) and the grid's y dimension strides over the rows, so each thread's bias
// element is fixed: no per-element division to find the column, which at large batches would cost more
// than the memory traffic. Written as `v < 0 ? 0 : v`, as std::max in the CPU step, so a NaN passes
// through and fails verification.
template <typename T>
__global__ void bias_relu(T* values, const float* bias, int rows, int columns) {
  const int column = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (column >= columns) return;
  const float b = bias[column];
  for (int row = static_cast<int>(blockIdx.y); row < rows; row += static_cast<int>(gridDim.y)) {
    T& value = values[elements(row, columns) + column];
    const float v = to_float(value) + b;
    value = from_float<T>(v < 0.0f ? 0.0f : v);
  }
}

// Adds the output bias, then per row: the softmax cross-entropy (row maximum subtracted first, so large
// logits neither overflow nor lose the label's term) and dL/dlogits of the batch mean,
// (softmax - one_hot) / rows. One block: rows x classes is tiny next to the GEMMs, and a single block sums
// the loss in a fixed order (each thread its rows in order, then a fixed tree), so it is reproducible.
template <typename T>
__global__ void softmax_cross_entropy(const float* logits, const float* bias, const int* labels, int rows, int classes,
                                      T* grad_logits, float* mean_loss) {
  __shared__ double partial[kLossThreads];
  const float inverse_rows = 1.0f / static_cast<float>(rows);
  double loss = 0.0;
  for (int r = static_cast<int>(threadIdx.x); r < rows; r += kLossThreads) {
    const float* z = logits + elements(r, classes);
    T* grad = grad_logits + elements(r, classes);
    const int label = labels[r];
    float max = -CUDART_INF_F;
    for (int j = 0; j < classes; ++j) max = fmaxf(max, z[j] + bias[j]);
    float sum = 0.0f;
    for (int j = 0; j < classes; ++j) sum += expf(z[j] + bias[j] - max);
    const bool valid = label >= 0 && label < classes;
    loss += valid ? logf(sum) - (z[label] + bias[label] - max) : CUDART_NAN_F;
    for (int j = 0; j < classes; ++j) {
      const float probability = expf(z[j] + bias[j] - max) / sum;
      const float target = j == label ? 1.0f : 0.0f;
      grad[j] = from_float<T>(valid ? (probability - target) * inverse_rows : CUDART_NAN_F);
    }
  }
  partial[threadIdx.x] = loss;
  __syncthreads();
  for (int stride = kLossThreads / 2; stride > 0; stride /= 2) {
    if (static_cast<int>(threadIdx.x) < stride) partial[threadIdx.x] += partial[threadIdx.x + stride];
    __syncthreads();
  }
  if (threadIdx.x == 0) *mean_loss = static_cast<float>(partial[0] / rows);
}

// Column sums of a batch-major matrix (a bias gradient). With `activation`, each element is first masked by
// ReLU'(pre-activation), read off the activation (positive exactly where the ReLU passed), and the mask is
// written back, since the following GEMMs need the masked gradient too: ReLU backward and the bias gradient
// in one pass. Block (chunk, strip) sums its chunk of rows for its strip of columns into
// sums[chunk * columns + column]; every sum has a fixed order.
template <typename T>
__global__ void masked_column_sums(T* values, const T* activation, int rows, int columns, float* sums) {
  __shared__ float lane_sums[kRowLanes][kColumnStrip + 1];
  const int column = static_cast<int>(blockIdx.y * kColumnStrip + threadIdx.x);
  const int first = static_cast<int>(blockIdx.x) * kRowsPerChunk;
  const int last = first + min(rows - first, kRowsPerChunk);
  float sum = 0.0f;
  if (column < columns) {
    for (int r = first + static_cast<int>(threadIdx.y); r < last; r += kRowLanes) {
      const std::size_t i = elements(r, columns) + column;
      if (activation != nullptr && !(to_float(activation[i]) > 0.0f)) {
        values[i] = from_float<T>(0.0f);
        continue;
      }
      sum += to_float(values[i]);
    }
  }
  lane_sums[threadIdx.y][threadIdx.x] = sum;
  __syncthreads();
  if (threadIdx.y != 0 || column >= columns) return;
  float total = 0.0f;
  for (int lane = 0; lane < kRowLanes; ++lane) total += lane_sums[lane][threadIdx.x];
  sums[elements(blockIdx.x, columns) + column] = total;
}

// The chunks' partial column sums added in chunk order.
__global__ void add_chunks(const float* partials, int chunks, int columns, float* sums) {
  const int column = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (column >= columns) return;
  float total = 0.0f;
  for (int c = 0; c < chunks; ++c) total += partials[elements(c, columns) + column];
  sums[column] = total;
}

__global__ void sgd_update(float* parameters, const float* gradients, float learning_rate, std::size_t count) {
  for (std::size_t i = first_index(); i < count; i += grid_stride()) parameters[i] -= learning_rate * gradients[i];
}

// --- launches -------------------------------------------------------------------------------------------

void to_bf16(const float* in, bf16* out, std::size_t count) {
  convert_to_bf16<<<grid_for(count), kThreads>>>(in, out, count);
  CUDA_CHECK_LAUNCH();
}

template <typename T>
void add_bias_relu(T* values, const float* bias, int rows, int columns) {
  const dim3 grid((columns + kThreads - 1) / kThreads, std::min(rows, kMaxRowBlocks));
  bias_relu<<<grid, kThreads>>>(values, bias, rows, columns);
  CUDA_CHECK_LAUNCH();
}

template <typename T>
void loss_and_grad_logits(const float* logits, const float* bias, const int* labels, int rows, int classes,
                          T* grad_logits, float* mean_loss) {
  softmax_cross_entropy<<<1, kLossThreads>>>(logits, bias, labels, rows, classes, grad_logits, mean_loss);
  CUDA_CHECK_LAUNCH();
}

// A batch of one chunk writes its sums directly; larger batches go through `partials` and one more launch.
// The chunking depends on the batch only, so the summation order does too.
template <typename T>
void column_sums(T* values, const T* activation, int rows, int columns, float* sums, float* partials) {
  const int chunks = chunks_of(rows);
  const dim3 grid(chunks, (columns + kColumnStrip - 1) / kColumnStrip);
  masked_column_sums<<<grid, dim3(kColumnStrip, kRowLanes)>>>(values, activation, rows, columns,
                                                              chunks == 1 ? sums : partials);
  CUDA_CHECK_LAUNCH();
  if (chunks == 1) return;
  add_chunks<<<(columns + kThreads - 1) / kThreads, kThreads>>>(partials, chunks, columns, sums);
  CUDA_CHECK_LAUNCH();
}

void update(float* parameters, const float* gradients, float learning_rate, std::size_t count) {
  sgd_update<<<grid_for(count), kThreads>>>(parameters, gradients, learning_rate, count);
  CUDA_CHECK_LAUNCH();
}

// --- GEMMs: row-major X (rows x columns) is column-major X^T, so each product is written for cuBLAS
// on the transposes (as baselines/mlp_cpu.cpp writes them for row-major CBLAS). ---------------------------
template <typename T>
constexpr cudaDataType data_type() {
  return std::is_same_v<T, float> ? CUDA_R_32F : CUDA_R_16BF;
}

// Column-major C (m x n) = op(A) op(B), FP32 accumulation (CUBLAS_COMPUTE_32F: no TF32 on FP32 inputs,
// the handle keeps the default math mode).
template <typename In, typename Out>
void gemm(cublasOperation_t op_a, cublasOperation_t op_b, int m, int n, int k, const In* a, int lda, const In* b,
          int ldb, Out* c, int ldc) {
  const float alpha = 1.0f, beta = 0.0f;
  CUBLAS_CHECK(cublasGemmEx(cublas_handle(), op_a, op_b, m, n, k, &alpha, a, data_type<In>(), lda, b, data_type<In>(),
                            ldb, &beta, c, data_type<Out>(), ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

// out (rows x out_features) = in (rows x in_features) W^T: out^T = W in^T, W's storage read transposed.
template <typename T, typename Out>
void linear_forward(const T* in, const T* weights, int rows, int in_features, int out_features, Out* out) {
  gemm(CUBLAS_OP_T, CUBLAS_OP_N, out_features, rows, in_features, weights, in_features, in, in_features, out,
       out_features);
}

// dW (out_features x in_features) = grad_out^T in: dW^T = in^T grad_out, the batch summed.
template <typename T>
void weight_gradient(const T* grad_out, const T* in, int rows, int in_features, int out_features, float* grad_weights) {
  gemm(CUBLAS_OP_N, CUBLAS_OP_T, in_features, out_features, rows, in, in_features, grad_out, out_features, grad_weights,
       in_features);
}

// grad_in (rows x in_features) = grad_out W: grad_in^T = W^T grad_out^T.
template <typename T>
void input_gradient(const T* grad_out, const T* weights, int rows, int in_features, int out_features, T* grad_in) {
  gemm(CUBLAS_OP_N, CUBLAS_OP_N, in_features, rows, out_features, weights, in_features, grad_out, out_features, grad_in,
       in_features);
}

// The step in the GEMM input type T: `inputs` and `weights` are T copies (the FP32 originals in FP32);
// biases are read from `parameters` in FP32, which is updated last.
template <typename T>
void train_step(MlpShape s, float* parameters, const T* inputs, const T* weights, const int* labels, int batch,
                float learning_rate, MlpActivations<T>& a, MlpGpuWorkspace& ws) {
  const MlpLayout l = mlp_layout(s);
  const float* p = parameters;
  float* g = ws.gradients.get();
  float* partials = ws.column_partials.get();
  T* h1 = a.hidden1.get();
  T* h2 = a.hidden2.get();
  T* dz3 = a.grad_logits.get();
  T* dz2 = a.grad_hidden2.get();
  T* dz1 = a.grad_hidden1.get();

  // The hidden GEMMs write T, as a BF16 autocast layer does: in mixed precision an FP32 output would
  // double the bytes bias+ReLU moves, for one rounding less.
  linear_forward(inputs, weights + l.w1.offset, batch, s.inputs, s.hidden, h1);
  add_bias_relu(h1, p + l.b1.offset, batch, s.hidden);
  linear_forward(h1, weights + l.w2.offset, batch, s.hidden, s.hidden, h2);
  add_bias_relu(h2, p + l.b2.offset, batch, s.hidden);
  linear_forward(h2, weights + l.w3.offset, batch, s.hidden, s.outputs, ws.logits.get());
  loss_and_grad_logits(ws.logits.get(), p + l.b3.offset, labels, batch, s.outputs, dz3, ws.mean_loss.get());

  weight_gradient(dz3, h2, batch, s.hidden, s.outputs, g + l.w3.offset);
  column_sums(dz3, static_cast<const T*>(nullptr), batch, s.outputs, g + l.b3.offset, partials);
  input_gradient(dz3, weights + l.w3.offset, batch, s.hidden, s.outputs, dz2);
  column_sums(dz2, h2, batch, s.hidden, g + l.b2.offset, partials);  // masks dz2 by ReLU' first

  weight_gradient(dz2, h1, batch, s.hidden, s.hidden, g + l.w2.offset);
  input_gradient(dz2, weights + l.w2.offset, batch, s.hidden, s.hidden, dz1);
  column_sums(dz1, h1, batch, s.hidden, g + l.b1.offset, partials);

  weight_gradient(dz1, inputs, batch, s.inputs, s.hidden, g + l.w1.offset);
  update(parameters, g, learning_rate, l.parameters);
}

template <typename T, typename Visit>
void visit_activations(MlpActivations<T>& a, MlpShape s, int batch, Visit&& visit) {
  for (GrowingDeviceBuffer<T>* buffer : {&a.hidden1, &a.hidden2, &a.grad_hidden1, &a.grad_hidden2})
    visit(*buffer, elements(batch, s.hidden));
  visit(a.grad_logits, elements(batch, s.outputs));
}

}  // namespace

// The one list of buffers and sizes: reserve() grows them, bytes_needed() adds them up.
template <typename Visit>
void MlpGpuWorkspace::for_each_buffer(MlpShape s, int batch, MlpPrecision precision, Visit&& visit) {
  const std::size_t parameters = mlp_layout(s).parameters;
  visit(gradients, parameters);
  visit(logits, elements(batch, s.outputs));
  visit(column_partials, elements(chunks_of(batch), std::max(s.hidden, s.outputs)));
  visit(mean_loss, 1);
  if (precision == MlpPrecision::fp32) {
    visit_activations(fp32_activations, s, batch, visit);
    return;
  }
  visit_activations(bf16_activations, s, batch, visit);
  visit(inputs_bf16, elements(batch, s.inputs));
  visit(weights_bf16, parameters);
}

void MlpGpuWorkspace::reserve(MlpShape shape, int batch, MlpPrecision precision) {
  for_each_buffer(shape, batch, precision, [](auto& buffer, std::size_t count) { buffer.reserve(count); });
}

double MlpGpuWorkspace::bytes_needed(MlpShape shape, int batch, MlpPrecision precision) {
  MlpGpuWorkspace empty;  // allocates nothing: only its buffers' element sizes are read
  double bytes = 0;
  empty.for_each_buffer(shape, batch, precision, [&bytes](auto& buffer, std::size_t count) {
    bytes += static_cast<double>(count) * buffer.element_bytes;
  });
  return bytes;
}

float MlpGpuWorkspace::loss() const {
  if (mean_loss.get() == nullptr) throw std::logic_error("MlpGpuWorkspace::loss: no step has run");
  float value = 0.0f;
  CUDA_CHECK(cudaMemcpy(&value, mean_loss.get(), sizeof value, cudaMemcpyDeviceToHost));
  return value;
}

void mlp_train_step_gpu(MlpShape shape, float* parameters, const float* inputs, const int* labels, int batch,
                        float learning_rate, MlpGpuWorkspace& workspace, MlpPrecision precision) {
  if (batch <= 0) throw std::invalid_argument("mlp: batch must be positive, got " + std::to_string(batch));
  workspace.reserve(shape, batch, precision);
  if (precision == MlpPrecision::fp32) {
    train_step(shape, parameters, inputs, static_cast<const float*>(parameters), labels, batch, learning_rate,
               workspace.fp32_activations, workspace);
    return;
  }
  // The BF16 copies are made afresh every step (as autocast does), so the step depends only on its
  // arguments, never on what an earlier step left behind.
  to_bf16(parameters, workspace.weights_bf16.get(), mlp_layout(shape).parameters);
  to_bf16(inputs, workspace.inputs_bf16.get(), elements(batch, shape.inputs));
  train_step(shape, parameters, static_cast<const bf16*>(workspace.inputs_bf16.get()),
             static_cast<const bf16*>(workspace.weights_bf16.get()), labels, batch, learning_rate,
             workspace.bf16_activations, workspace);
}

}  // namespace gpubench
