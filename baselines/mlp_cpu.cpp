#include "mlp_cpu.hpp"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "core/random.hpp"

namespace gpubench {
namespace {

// Below this many elements a loop runs on one thread: starting the team costs more than
// the loop (small batches of the sweep).
constexpr std::size_t kParallelElements = 1 << 15;

std::size_t elements(int rows, int columns) { return static_cast<std::size_t>(rows) * columns; }

void grow(std::vector<float>& buffer, std::size_t size) {
  if (buffer.size() < size) buffer.resize(size);
}

// out (rows x out_features) = in (rows x in_features) * W^T, W being out_features x in_features.
void linear_forward(const float* in, const float* weights, int rows, int in_features, int out_features,
                    float* out) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, out_features, in_features, 1.0f, in, in_features,
              weights, in_features, 0.0f, out, out_features);
}

// dW (out_features x in_features) = grad_out^T * in: the batch is the summed dimension.
void weight_gradient(const float* grad_out, const float* in, int rows, int in_features, int out_features,
                     float* grad_weights) {
  cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, out_features, in_features, rows, 1.0f, grad_out,
              out_features, in, in_features, 0.0f, grad_weights, in_features);
}

// grad_in (rows x in_features) = grad_out * W.
void input_gradient(const float* grad_out, const float* weights, int rows, int in_features, int out_features,
                    float* grad_in) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, in_features, out_features, 1.0f, grad_out,
              out_features, weights, in_features, 0.0f, grad_in, in_features);
}

void add_bias(float* values, const float* bias, int rows, int columns, bool relu) {
  const std::size_t total = elements(rows, columns);
#pragma omp parallel for schedule(static) if (total >= kParallelElements)
  for (int i = 0; i < rows; ++i) {
    float* row = values + elements(i, columns);
    for (int j = 0; j < columns; ++j) {
      const float v = row[j] + bias[j];
      row[j] = relu ? std::max(v, 0.0f) : v;
    }
  }
}

// grad *= ReLU'(pre-activation), read off the ReLU output: positive exactly where it passed.
void relu_backward(float* grad, const float* activation, std::size_t count) {
#pragma omp parallel for schedule(static) if (count >= kParallelElements)
  for (std::size_t i = 0; i < count; ++i) {
    if (!(activation[i] > 0.0f)) grad[i] = 0.0f;
  }
}

// Bias gradient = column sums. Each thread owns a block of columns and walks down the rows,
// so it reads whole contiguous row pieces and the summation order never depends on threads.
void column_sums(const float* values, int rows, int columns, float* sums) {
  constexpr int kBlock = 64;
  const int blocks = (columns + kBlock - 1) / kBlock;
#pragma omp parallel for schedule(static) if (elements(rows, columns) >= kParallelElements)
  for (int b = 0; b < blocks; ++b) {
    const int first = b * kBlock, last = std::min(columns, first + kBlock);
    for (int j = first; j < last; ++j) sums[j] = 0.0f;
    for (int i = 0; i < rows; ++i) {
      const float* row = values + elements(i, columns);
      for (int j = first; j < last; ++j) sums[j] += row[j];
    }
  }
}

// Per-row cross-entropy of the softmax, and (if wanted) logits replaced by dL/dlogits of the
// batch mean: (softmax - one_hot) / batch. The row maximum is subtracted before exp, so large
// logits neither overflow nor lose the label's term.
void softmax_cross_entropy(float* logits, const int* labels, int rows, int classes, bool gradient,
                           float* row_loss) {
  const float inverse_batch = 1.0f / static_cast<float>(rows);
#pragma omp parallel for schedule(static) if (elements(rows, classes) >= kParallelElements)
  for (int i = 0; i < rows; ++i) {
    float* z = logits + elements(i, classes);
    const float max = *std::max_element(z, z + classes);
    float sum = 0.0f;
    for (int j = 0; j < classes; ++j) sum += std::exp(z[j] - max);
    row_loss[i] = std::log(sum) - (z[labels[i]] - max);
    if (!gradient) continue;
    for (int j = 0; j < classes; ++j) {
      const float probability = std::exp(z[j] - max) / sum;
      z[j] = (probability - (j == labels[i] ? 1.0f : 0.0f)) * inverse_batch;
    }
  }
}

void check_arguments(MlpShape shape, const int* labels, int batch) {
  if (batch <= 0) throw std::invalid_argument("mlp: batch must be positive, got " + std::to_string(batch));
  for (int i = 0; i < batch; ++i) {
    if (labels[i] < 0 || labels[i] >= shape.outputs) {
      throw std::invalid_argument("mlp: label " + std::to_string(labels[i]) + " of row " + std::to_string(i) +
                                  " is outside [0, " + std::to_string(shape.outputs) + ")");
    }
  }
}

}  // namespace

std::vector<float> mlp_initial_parameters(MlpShape s, std::uint64_t seed) {
  const MlpLayout layout = mlp_layout(s);
  std::vector<float> parameters(layout.parameters);
  std::uint64_t stream = 0;
  const auto fill = [&](MlpTensor tensor, float bound) {
    const std::vector<float> values = random_uniform(tensor.size, configuration_seed(seed, stream++));
    for (std::size_t i = 0; i < tensor.size; ++i) parameters[tensor.offset + i] = bound * values[i];
  };
  const auto he_bound = [](int fan_in) { return std::sqrt(6.0f / static_cast<float>(fan_in)); };
  constexpr float kBiasBound = 0.01f;
  fill(layout.w1, he_bound(s.inputs));
  fill(layout.b1, kBiasBound);
  fill(layout.w2, he_bound(s.hidden));
  fill(layout.b2, kBiasBound);
  fill(layout.w3, he_bound(s.hidden));
  fill(layout.b3, kBiasBound);
  return parameters;
}

void MlpWorkspace::reserve(MlpShape s, int batch) {
  grow(hidden1, elements(batch, s.hidden));
  grow(hidden2, elements(batch, s.hidden));
  grow(logits, elements(batch, s.outputs));
  grow(grad_hidden1, elements(batch, s.hidden));
  grow(grad_hidden2, elements(batch, s.hidden));
  grow(row_loss, static_cast<std::size_t>(batch));
}

float mlp_loss_and_gradients_cpu(MlpShape s, const float* parameters, const float* inputs, const int* labels,
                                 int batch, float* gradients, MlpWorkspace& ws) {
  check_arguments(s, labels, batch);
  ws.reserve(s, batch);
  const MlpLayout l = mlp_layout(s);
  const float* p = parameters;
  float* h1 = ws.hidden1.data();
  float* h2 = ws.hidden2.data();
  float* z3 = ws.logits.data();

  linear_forward(inputs, p + l.w1.offset, batch, s.inputs, s.hidden, h1);
  add_bias(h1, p + l.b1.offset, batch, s.hidden, /*relu=*/true);
  linear_forward(h1, p + l.w2.offset, batch, s.hidden, s.hidden, h2);
  add_bias(h2, p + l.b2.offset, batch, s.hidden, /*relu=*/true);
  linear_forward(h2, p + l.w3.offset, batch, s.hidden, s.outputs, z3);
  add_bias(z3, p + l.b3.offset, batch, s.outputs, /*relu=*/false);
  softmax_cross_entropy(z3, labels, batch, s.outputs, gradients != nullptr, ws.row_loss.data());

  // Summed in double, in row order: reproducible whatever the thread count.
  double loss = 0.0;
  for (int i = 0; i < batch; ++i) loss += ws.row_loss[i];
  loss /= batch;
  if (gradients == nullptr) return static_cast<float>(loss);

  float* g = gradients;
  float* dz2 = ws.grad_hidden2.data();
  float* dz1 = ws.grad_hidden1.data();
  // z3 now holds dL/dlogits.
  weight_gradient(z3, h2, batch, s.hidden, s.outputs, g + l.w3.offset);
  column_sums(z3, batch, s.outputs, g + l.b3.offset);
  input_gradient(z3, p + l.w3.offset, batch, s.hidden, s.outputs, dz2);
  relu_backward(dz2, h2, elements(batch, s.hidden));

  weight_gradient(dz2, h1, batch, s.hidden, s.hidden, g + l.w2.offset);
  column_sums(dz2, batch, s.hidden, g + l.b2.offset);
  input_gradient(dz2, p + l.w2.offset, batch, s.hidden, s.hidden, dz1);
  relu_backward(dz1, h1, elements(batch, s.hidden));

  weight_gradient(dz1, inputs, batch, s.inputs, s.hidden, g + l.w1.offset);
  column_sums(dz1, batch, s.hidden, g + l.b1.offset);
  return static_cast<float>(loss);
}

float mlp_train_step_cpu(MlpShape s, float* parameters, const float* inputs, const int* labels, int batch,
                         float learning_rate, MlpWorkspace& ws) {
  const std::size_t count = mlp_layout(s).parameters;
  grow(ws.gradients, count);
  float* g = ws.gradients.data();
  const float loss = mlp_loss_and_gradients_cpu(s, parameters, inputs, labels, batch, g, ws);
#pragma omp parallel for schedule(static) if (count >= kParallelElements)
  for (std::size_t i = 0; i < count; ++i) parameters[i] -= learning_rate * g[i];
  return loss;
}

}  // namespace gpubench
