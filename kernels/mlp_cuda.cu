#include "mlp_cuda.cuh"

#include <math_constants.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "core/cuda_check.hpp"
#include "cublas_handle.hpp"

namespace gpubench {
namespace {

using bf16 = __nv_bfloat16;

constexpr int kThreads = 256;
// Grid-stride loops stop adding blocks here: a few times what any current GPU keeps resident.
constexpr std::size_t kMaxBlocks = 4096;
// Row-wise kernels stride over rows with at most this many blocks in the grid's y dimension.
constexpr int kMaxRowBlocks = 1024;
// The loss is summed by one block (a power of two, for its tree reduction).
constexpr int kLossThreads = 1024;
// Column sums: a block covers kColumnStrip columns (a warp reads them as one contiguous row piece) and a
// chunk of kRowsPerChunk rows, kRowLanes warps each taking every kRowLanes-th row of the chunk.
constexpr int kColumnStrip = 32;
constexpr int kRowLanes = 8;
constexpr int kRowsPerChunk = 64;
constexpr int kRowsPerThread = kRowsPerChunk / kRowLanes;

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

// Adds the output bias, then per row (one thread each): the softmax cross-entropy (row maximum subtracted
// first, so large logits neither overflow nor lose the label's term) into row_loss, and dL/dlogits of the
// batch mean, (softmax - one_hot) / rows. The loss is summed afterwards by mean_loss_of, in a fixed order.
template <typename T>
__global__ void softmax_cross_entropy(const float* logits, const float* bias, const int* labels, int rows, int classes,
                                      T* grad_logits, float* row_loss) {
  const float inverse_rows = 1.0f / static_cast<float>(rows);
  for (std::size_t r = first_index(); r < static_cast<std::size_t>(rows); r += grid_stride()) {
    const float* z = logits + r * classes;
    T* grad = grad_logits + r * classes;
    const int label = labels[r];
    float max = -CUDART_INF_F;
    for (int j = 0; j < classes; ++j) max = fmaxf(max, z[j] + bias[j]);
    float sum = 0.0f;
    for (int j = 0; j < classes; ++j) sum += expf(z[j] + bias[j] - max);
    const bool valid = label >= 0 && label < classes;
    row_loss[r] = valid ? logf(sum) - (z[label] + bias[label] - max) : CUDART_NAN_F;
    for (int j = 0; j < classes; ++j) {
      const float probability = expf(z[j] + bias[j] - max) / sum;
      const float target = j == label ? 1.0f : 0.0f;
      grad[j] = from_float<T>(valid ? (probability - target) * inverse_rows : CUDART_NAN_F);
    }
  }
}

// The mean of the rows' losses, in FP64, in a fixed order (each thread its rows in order, then a fixed
// tree), so it is reproducible. One block: the rows' losses are few next to the activations.
__global__ void mean_loss_of(const float* row_loss, int rows, float* mean_loss) {
  __shared__ double partial[kLossThreads];
  double loss = 0.0;
  for (int r = static_cast<int>(threadIdx.x); r < rows; r += kLossThreads) loss += row_loss[r];
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
// in one pass. Block b sums chunk b / strips of the rows for strip b % strips of the columns into
// sums[chunk * columns + column]; the strips of a chunk are neighbours in the grid, so the resident blocks
// stream through consecutive rows. Each thread loads all its elements before it writes any masked zero, so
// its loads are in flight together: a loop that loaded, tested and stored row by row took 16 times as long
// on an H100 (~550 us against ~35 us for 8192 x 1024 FP32). Thread (x, y) sums its rows in order, the lanes
// y are added in order: every sum has a fixed order.
template <typename T>
__global__ void masked_column_sums(T* __restrict__ values, const T* __restrict__ activation, int rows, int columns,
                                   int strips, float* __restrict__ sums) {
  __shared__ float lane_sums[kRowLanes][kColumnStrip + 1];
  const int strip = static_cast<int>(blockIdx.x % strips);
  const int chunk = static_cast<int>(blockIdx.x / strips);
  const int column = strip * kColumnStrip + static_cast<int>(threadIdx.x);
  const int first = chunk * kRowsPerChunk + static_cast<int>(threadIdx.y);  // then every kRowLanes-th row
  const int last = min(rows, (chunk + 1) * kRowsPerChunk);
  float value[kRowsPerThread];
  bool passed[kRowsPerThread];
#pragma unroll
  for (int u = 0; u < kRowsPerThread; ++u) {
    const int r = first + u * kRowLanes;
    const bool inside = column < columns && r < last;
    const std::size_t i = elements(r, columns) + column;
    value[u] = inside ? to_float(values[i]) : 0.0f;
    passed[u] = inside && (activation == nullptr || to_float(activation[i]) > 0.0f);
  }
  float sum = 0.0f;
#pragma unroll
  for (int u = 0; u < kRowsPerThread; ++u) {
    const int r = first + u * kRowLanes;
    if (passed[u]) {
      sum += value[u];
    } else if (column < columns && r < last) {
      values[elements(r, columns) + column] = from_float<T>(0.0f);
    }
  }
  lane_sums[threadIdx.y][threadIdx.x] = sum;
  __syncthreads();
  if (threadIdx.y != 0 || column >= columns) return;
  float total = 0.0f;
  for (int lane = 0; lane < kRowLanes; ++lane) total += lane_sums[lane][threadIdx.x];
  sums[elements(chunk, columns) + column] = total;
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
                          T* grad_logits, float* row_loss, float* mean_loss) {
  softmax_cross_entropy<<<grid_for(rows), kThreads>>>(logits, bias, labels, rows, classes, grad_logits, row_loss);
  CUDA_CHECK_LAUNCH();
  mean_loss_of<<<1, kLossThreads>>>(row_loss, rows, mean_loss);
  CUDA_CHECK_LAUNCH();
}

// A batch of one chunk writes its sums directly; larger batches go through `partials` and one more launch.
// The chunking depends on the batch only, so the summation order does too.
template <typename T>
void column_sums(T* values, const T* activation, int rows, int columns, float* sums, float* partials) {
  const int chunks = chunks_of(rows);
  const int strips = (columns + kColumnStrip - 1) / kColumnStrip;
  masked_column_sums<<<chunks * strips, dim3(kColumnStrip, kRowLanes)>>>(values, activation, rows, columns, strips,
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
  loss_and_grad_logits(ws.logits.get(), p + l.b3.offset, labels, batch, s.outputs, dz3, ws.row_loss.get(),
                       ws.mean_loss.get());

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
  visit(row_loss, static_cast<std::size_t>(batch));
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
