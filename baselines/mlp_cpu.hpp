// One training step of a small MLP on the CPU: the CPU side of the batch-size study. FP32,
// row-major weights, batch-major activations (batch x features). A GPU counterpart takes the
// same arguments as device pointers, and the parameters and their gradients share one flat
// layout, so one routine compares CPU and GPU copies.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/operations.hpp"

namespace gpubench {

// Weights He-style uniform in +-sqrt(6 / fan_in) (keeps the activations' scale through the
// ReLU layers), biases uniform in +-0.01; every tensor from its own stream of `seed`.
std::vector<float> mlp_initial_parameters(MlpShape shape, std::uint64_t seed);

// Activations and gradient buffers for one batch, allocated on first use and grown (never
// shrunk) when a larger batch or shape comes, so a timed step does not allocate.
struct MlpWorkspace {
  std::vector<float> hidden1;       // batch x hidden: layer 1 after ReLU
  std::vector<float> hidden2;       // batch x hidden: layer 2 after ReLU
  std::vector<float> logits;        // batch x outputs; the backward pass overwrites it with dL/dlogits
  std::vector<float> grad_hidden1;  // batch x hidden: dL/d(layer 1 pre-activation)
  std::vector<float> grad_hidden2;  // batch x hidden: dL/d(layer 2 pre-activation)
  std::vector<float> row_loss;      // batch: summed in order afterwards, so the loss is reproducible
  std::vector<float> gradients;     // parameter gradients of mlp_train_step_cpu

  void reserve(MlpShape shape, int batch);
};

// Mean cross-entropy over the batch (numerically stable softmax) and, when `gradients` is not
// null, the gradient of every parameter in the flat layout. Labels are in [0, outputs).
// The products run in OpenBLAS SGEMM (its threads), the rest in OpenMP loops; time it with
// OMP_WAIT_POLICY=passive, or libgomp's spinning threads slow the pthread OpenBLAS.
float mlp_loss_and_gradients_cpu(MlpShape shape, const float* parameters, const float* inputs /* batch x inputs */,
                                 const int* labels /* batch */, int batch, float* gradients,
                                 MlpWorkspace& workspace);

// One step of plain SGD: gradients, then parameters -= learning_rate * gradients.
// Returns the loss before the update.
float mlp_train_step_cpu(MlpShape shape, float* parameters, const float* inputs, const int* labels, int batch,
                         float learning_rate, MlpWorkspace& workspace);

}  // namespace gpubench
