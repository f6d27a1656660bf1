// One training step of the MNIST-shape MLP on the GPU: the GPU side of the MLP study, the counterpart of
// mlp_train_step_cpu (baselines/mlp_cpu.hpp) with the same arguments as device pointers and the same flat
// parameter layout. The GEMMs run in cuBLAS (the shared handle), the rest in our fused element-wise and
// reduction kernels, all on the legacy default stream.
#pragma once

#include <cuda_bf16.h>

#include <cstddef>
#include <memory>

#include "core/gpu_runtime.hpp"
#include "core/operations.hpp"

namespace gpubench {

enum class MlpPrecision {
  fp32,        // FP32 everywhere; cuBLAS FP32 GEMMs (no TF32)
  bf16_mixed,  // BF16 copies of the weights and inputs, BF16 activations and back-propagated gradients feed
               // the GEMMs (FP32 accumulation); master weights, biases (added in FP32), logits, weight
               // gradients, loss and update stay FP32
};

// A device buffer that grows to the largest count asked for and never shrinks, so that only the first step
// at a larger batch allocates.
template <typename T>
class GrowingDeviceBuffer {
 public:
  static constexpr std::size_t element_bytes = sizeof(T);

  void reserve(std::size_t count) {
    if (count <= capacity_) return;
    // Free first: the contents need not survive, and the peak stays at the new size.
    buffer_.reset();
    capacity_ = 0;
    buffer_ = std::make_unique<DeviceBuffer<T>>(count);
    capacity_ = count;
  }
  T* get() const { return buffer_ ? buffer_->get() : nullptr; }

 private:
  std::unique_ptr<DeviceBuffer<T>> buffer_;
  std::size_t capacity_ = 0;
};

// Activations and back-propagated gradients of one batch, in the type the GEMMs read (batch-major).
template <typename T>
struct MlpActivations {
  GrowingDeviceBuffer<T> hidden1, hidden2;            // batch x hidden, after ReLU
  GrowingDeviceBuffer<T> grad_hidden1, grad_hidden2;  // batch x hidden, dL/d(pre-activation)
  GrowingDeviceBuffer<T> grad_logits;                 // batch x outputs
};

// Everything a step needs on the device besides parameters, inputs and labels. Grown by the step itself
// (or ahead of it by reserve), never shrunk.
struct MlpGpuWorkspace {
  GrowingDeviceBuffer<float> gradients;        // flat layout, FP32 in both precisions
  GrowingDeviceBuffer<float> logits;           // batch x outputs, before the output bias
  GrowingDeviceBuffer<float> column_partials;  // per-chunk partial column sums of the bias gradients
  GrowingDeviceBuffer<float> row_loss;         // batch: each row's loss, summed in a fixed order afterwards
  GrowingDeviceBuffer<float> mean_loss;        // 1 value: the loss of the last step
  MlpActivations<float> fp32_activations;
  // bf16_mixed only:
  MlpActivations<__nv_bfloat16> bf16_activations;
  GrowingDeviceBuffer<__nv_bfloat16> inputs_bf16;   // batch x inputs
  GrowingDeviceBuffer<__nv_bfloat16> weights_bf16;  // flat layout (the bias slots are unused)

  void reserve(MlpShape shape, int batch, MlpPrecision precision);
  // The device bytes reserve() asks for from an empty workspace (before allocation granularity).
  static double bytes_needed(MlpShape shape, int batch, MlpPrecision precision);
  // The mean loss of the last step, copied to the host: waits for that step.
  float loss() const;

 private:
  template <typename Visit>
  void for_each_buffer(MlpShape shape, int batch, MlpPrecision precision, Visit&& visit);
};

// One step of plain SGD, as mlp_train_step_cpu: forward, mean softmax cross-entropy, backward, then
// parameters -= learning_rate * gradients (the gradients stay in workspace.gradients). It is only enqueued:
// nothing waits for it, as in a training loop; workspace.loss() reads the loss. The loss is reduced in a
// fixed order, so the same step gives the same loss bit for bit. A label outside [0, outputs) makes the loss
// and that row's gradient NaN (the labels are on the device: checking them on the host would need a copy
// per step). Throws std::invalid_argument for a batch below 1, GpuOutOfMemory when the workspace cannot grow.
void mlp_train_step_gpu(MlpShape shape, float* parameters, const float* inputs, const int* labels, int batch,
                        float learning_rate, MlpGpuWorkspace& workspace, MlpPrecision precision);

}  // namespace gpubench
