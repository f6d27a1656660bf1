#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/random.hpp"
#include "mlp_cpu.hpp"

namespace gpubench {
namespace {

// A random batch: inputs uniform in [-scale, scale), labels uniform over the classes.
struct Batch {
  std::vector<float> inputs;
  std::vector<int> labels;
  int size = 0;
};

Batch random_batch(MlpShape shape, int size, std::uint64_t seed, float scale = 1.0f) {
  Batch batch;
  batch.size = size;
  batch.inputs = random_uniform(static_cast<std::size_t>(size) * shape.inputs, configuration_seed(seed, 0));
  for (float& v : batch.inputs) v *= scale;
  for (float u : random_uniform(size, configuration_seed(seed, 1))) {
    const int label = static_cast<int>((u + 1.0f) * 0.5f * shape.outputs);
    batch.labels.push_back(std::min(label, shape.outputs - 1));
  }
  return batch;
}

struct NamedTensor {
  const char* name;
  MlpTensor tensor;
};

std::vector<NamedTensor> tensors_of(const MlpLayout& l) {
  return {{"W1", l.w1}, {"b1", l.b1}, {"W2", l.w2}, {"b2", l.b2}, {"W3", l.w3}, {"b3", l.b3}};
}

float loss_of(MlpShape shape, const std::vector<float>& parameters, const Batch& batch) {
  MlpWorkspace workspace;
  return mlp_loss_and_gradients_cpu(shape, parameters.data(), batch.inputs.data(), batch.labels.data(), batch.size,
                                    nullptr, workspace);
}

std::vector<float> gradients_of(MlpShape shape, const std::vector<float>& parameters, const Batch& batch,
                                float* loss = nullptr) {
  std::vector<float> gradients(mlp_layout(shape).parameters);
  MlpWorkspace workspace;
  const float l = mlp_loss_and_gradients_cpu(shape, parameters.data(), batch.inputs.data(), batch.labels.data(),
                                             batch.size, gradients.data(), workspace);
  if (loss != nullptr) *loss = l;
  return gradients;
}

// --- An independent FP64 implementation: naive loops, written from the definition -------
struct Fp64Result {
  double loss = 0;
  std::vector<double> gradients;  // flat layout
  std::vector<bool> active;       // ReLU pattern of both hidden layers, row by row
};

// `relu_mask = false` plants a fault: the backward pass forgets the ReLU derivative.
Fp64Result fp64_loss_and_gradients(MlpShape s, const std::vector<double>& p, const Batch& batch,
                                   bool relu_mask = true) {
  const MlpLayout l = mlp_layout(s);
  const int n = batch.size, in = s.inputs, h = s.hidden, out = s.outputs;
  const auto W = [&](MlpTensor t, int columns, int r, int c) { return p[t.offset + std::size_t(r) * columns + c]; };
  Fp64Result result;
  result.gradients.assign(l.parameters, 0.0);
  auto& g = result.gradients;
  for (int row = 0; row < n; ++row) {
    const float* x = batch.inputs.data() + std::size_t(row) * in;
    std::vector<double> a1(h), a2(h), z(out), dz(out), da2(h), da1(h);
    for (int j = 0; j < h; ++j) {
      double sum = p[l.b1.offset + j];
      for (int k = 0; k < in; ++k) sum += W(l.w1, in, j, k) * x[k];
      a1[j] = std::max(sum, 0.0);
      result.active.push_back(sum > 0);
    }
    for (int j = 0; j < h; ++j) {
      double sum = p[l.b2.offset + j];
      for (int k = 0; k < h; ++k) sum += W(l.w2, h, j, k) * a1[k];
      a2[j] = std::max(sum, 0.0);
      result.active.push_back(sum > 0);
    }
    for (int j = 0; j < out; ++j) {
      double sum = p[l.b3.offset + j];
      for (int k = 0; k < h; ++k) sum += W(l.w3, h, j, k) * a2[k];
      z[j] = sum;
    }
    const double max = *std::max_element(z.begin(), z.end());
    double total = 0;
    for (double v : z) total += std::exp(v - max);
    const int label = batch.labels[row];
    result.loss += (std::log(total) + max - z[label]) / n;
    for (int j = 0; j < out; ++j) dz[j] = (std::exp(z[j] - max) / total - (j == label)) / n;

    // Backward, one row at a time, accumulating into the parameter gradients.
    for (int j = 0; j < out; ++j) {
      g[l.b3.offset + j] += dz[j];
      for (int k = 0; k < h; ++k) g[l.w3.offset + std::size_t(j) * h + k] += dz[j] * a2[k];
    }
    for (int k = 0; k < h; ++k) {
      double sum = 0;
      for (int j = 0; j < out; ++j) sum += dz[j] * W(l.w3, h, j, k);
      da2[k] = (a2[k] > 0 || !relu_mask) ? sum : 0.0;
    }
    for (int j = 0; j < h; ++j) {
      g[l.b2.offset + j] += da2[j];
      for (int k = 0; k < h; ++k) g[l.w2.offset + std::size_t(j) * h + k] += da2[j] * a1[k];
    }
    for (int k = 0; k < h; ++k) {
      double sum = 0;
      for (int j = 0; j < h; ++j) sum += da2[j] * W(l.w2, h, j, k);
      da1[k] = (a1[k] > 0 || !relu_mask) ? sum : 0.0;
    }
    for (int j = 0; j < h; ++j) {
      g[l.b1.offset + j] += da1[j];
      for (int k = 0; k < in; ++k) g[l.w1.offset + std::size_t(j) * in + k] += da1[j] * x[k];
    }
  }
  return result;
}

std::vector<double> to_double(const std::vector<float>& v) { return {v.begin(), v.end()}; }
std::vector<float> to_float(const std::vector<double>& v) { return {v.begin(), v.end()}; }

// --- Central finite differences ------------------------------------------------------
// (L(p+h) - L(p-h)) / 2h against `analytic` for every parameter. A step over which a ReLU
// changes state (found with the FP64 forward) crosses a kink, where the difference quotient
// is not the derivative: that parameter is skipped and counted.
struct FiniteDifferenceCheck {
  int checked = 0;
  int skipped = 0;
  int failed = 0;
  std::string first_failure;
};

// FP32 loss: roundoff in L is a few 1e-7, so a step of 1e-2 keeps its share of the quotient
// near 1e-5, and the truncation error (h^2 times the loss's third derivative) is of the same
// order. Measured on the tiny net: errors up to 7e-6, at most 1/20 of the tolerance, while an
// error of 1% in a tensor's largest gradient exceeds it about 5 times.
constexpr float kStep = 1e-2f;
constexpr double kAbsoluteTolerance = 5e-5;
constexpr double kRelativeTolerance = 2e-3;

FiniteDifferenceCheck check_finite_differences(MlpShape shape, const std::vector<float>& parameters,
                                               const Batch& batch, const std::vector<float>& analytic) {
  FiniteDifferenceCheck check;
  const std::vector<bool> pattern = fp64_loss_and_gradients(shape, to_double(parameters), batch).active;
  for (const NamedTensor& named : tensors_of(mlp_layout(shape))) {
    for (std::size_t e = 0; e < named.tensor.size; ++e) {
      const std::size_t i = named.tensor.offset + e;
      std::vector<float> plus = parameters, minus = parameters;
      plus[i] += kStep;
      minus[i] -= kStep;
      if (fp64_loss_and_gradients(shape, to_double(plus), batch).active != pattern ||
          fp64_loss_and_gradients(shape, to_double(minus), batch).active != pattern) {
        ++check.skipped;
        continue;
      }
      ++check.checked;
      // Divide by the step actually taken, after rounding p +- h to float.
      const double quotient = (double(loss_of(shape, plus, batch)) - loss_of(shape, minus, batch)) /
                              (double(plus[i]) - minus[i]);
      const double error = std::fabs(quotient - analytic[i]);
      if (error > kAbsoluteTolerance + kRelativeTolerance * std::fabs(analytic[i])) {
        if (check.failed++ == 0) {
          std::ostringstream out;
          out << named.name << "[" << e << "]: finite difference " << quotient << ", gradient " << analytic[i];
          check.first_failure = out.str();
        }
      }
    }
  }
  return check;
}

// Non-square everywhere, so a transposed product cannot pass by coincidence.
constexpr MlpShape kTiny{7, 5, 3};
constexpr int kTinyBatch = 4;

struct TinyProblem {
  std::vector<float> parameters = mlp_initial_parameters(kTiny, 11);
  Batch batch = random_batch(kTiny, kTinyBatch, 12);
};

TEST(MlpLayout, PlacesTheTensorsContiguouslyInOrder) {
  const MlpLayout l = mlp_layout(MlpShape{});
  EXPECT_EQ(l.w1.offset, 0u);
  EXPECT_EQ(l.w1.size, 1024u * 784);
  std::size_t next = 0;
  for (const NamedTensor& named : tensors_of(l)) {
    EXPECT_EQ(named.tensor.offset, next) << named.name;
    next += named.tensor.size;
  }
  EXPECT_EQ(l.b3.size, 10u);
  EXPECT_EQ(l.parameters, next);
  EXPECT_EQ(mlp_initial_parameters(MlpShape{}, 1).size(), l.parameters);
}

TEST(MlpGradients, MatchCentralFiniteDifferences) {
  const TinyProblem problem;
  const std::vector<float> analytic = gradients_of(kTiny, problem.parameters, problem.batch);
  const FiniteDifferenceCheck check = check_finite_differences(kTiny, problem.parameters, problem.batch, analytic);
  EXPECT_EQ(check.failed, 0) << check.first_failure;
  // Only a few steps may cross a kink, or the test would check little.
  EXPECT_GE(check.checked, 0.8 * mlp_layout(kTiny).parameters) << check.skipped << " skipped";
}

TEST(MlpGradients, FiniteDifferencesCatchPlantedFaults) {
  const TinyProblem problem;
  const std::vector<float> analytic = gradients_of(kTiny, problem.parameters, problem.batch);
  // One entry of each tensor off by 1% of that tensor's largest gradient.
  for (const NamedTensor& named : tensors_of(mlp_layout(kTiny))) {
    const auto first = analytic.begin() + named.tensor.offset;
    const auto largest = std::max_element(first, first + named.tensor.size,
                                          [](float a, float b) { return std::fabs(a) < std::fabs(b); });
    std::vector<float> wrong = analytic;
    wrong[largest - analytic.begin()] += 0.01f * std::fabs(*largest);
    EXPECT_GT(check_finite_differences(kTiny, problem.parameters, problem.batch, wrong).failed, 0) << named.name;
  }
  // A backward pass that forgets the ReLU derivative (computed independently in FP64).
  const std::vector<float> no_mask = to_float(
      fp64_loss_and_gradients(kTiny, to_double(problem.parameters), problem.batch, /*relu_mask=*/false).gradients);
  EXPECT_GT(check_finite_differences(kTiny, problem.parameters, problem.batch, no_mask).failed, 0);
}

// The FP64 reference must itself be right for the next test to mean anything: finite
// differences in FP64 are accurate to about 1e-9 with a step of 1e-5.
TEST(MlpGradients, Fp64ReferenceMatchesItsOwnFiniteDifferences) {
  const TinyProblem problem;
  const std::vector<double> p = to_double(problem.parameters);
  const Fp64Result reference = fp64_loss_and_gradients(kTiny, p, problem.batch);
  constexpr double step = 1e-5;
  for (std::size_t i = 0; i < p.size(); ++i) {
    std::vector<double> plus = p, minus = p;
    plus[i] += step;
    minus[i] -= step;
    const Fp64Result up = fp64_loss_and_gradients(kTiny, plus, problem.batch);
    const Fp64Result down = fp64_loss_and_gradients(kTiny, minus, problem.batch);
    if (up.active != reference.active || down.active != reference.active) continue;  // a kink
    EXPECT_NEAR((up.loss - down.loss) / (2 * step), reference.gradients[i], 1e-8) << "parameter " << i;
  }
}

// Every gradient against the FP64 loops: on the tiny net and on one large enough that the
// OpenMP loops run threaded.
TEST(MlpGradients, MatchFp64Reference) {
  struct Case {
    MlpShape shape;
    int batch;
  };
  for (const Case c : {Case{kTiny, kTinyBatch}, Case{MlpShape{100, 512, 10}, 80}}) {
    const std::vector<float> parameters = mlp_initial_parameters(c.shape, 21);
    const Batch batch = random_batch(c.shape, c.batch, 22);
    float loss = 0;
    const std::vector<float> gradients = gradients_of(c.shape, parameters, batch, &loss);
    const Fp64Result reference = fp64_loss_and_gradients(c.shape, to_double(parameters), batch);
    EXPECT_NEAR(loss, reference.loss, 1e-5 * reference.loss);
    // Normwise per tensor: FP32 sums of up to a few hundred terms are good to ~1e-6.
    for (const NamedTensor& named : tensors_of(mlp_layout(c.shape))) {
      double error = 0, norm = 0;
      for (std::size_t i = named.tensor.offset; i < named.tensor.offset + named.tensor.size; ++i) {
        error += std::pow(gradients[i] - reference.gradients[i], 2);
        norm += std::pow(reference.gradients[i], 2);
      }
      ASSERT_GT(norm, 0) << named.name;
      EXPECT_LT(std::sqrt(error / norm), 1e-5) << named.name << " with hidden " << c.shape.hidden;
    }
  }
}

TEST(MlpTraining, LossDecreasesOverSgdSteps) {
  const MlpShape shape;  // MNIST's
  std::vector<float> parameters = mlp_initial_parameters(shape, 31);
  const Batch batch = random_batch(shape, 64, 32);
  MlpWorkspace workspace;
  std::vector<float> losses;
  for (int step = 0; step < 8; ++step) {
    losses.push_back(mlp_train_step_cpu(shape, parameters.data(), batch.inputs.data(), batch.labels.data(),
                                        batch.size, 0.05f, workspace));
  }
  for (std::size_t i = 1; i < losses.size(); ++i) EXPECT_LT(losses[i], losses[i - 1]) << "step " << i;
  EXPECT_LT(losses.back(), 0.5f * losses.front());
}

TEST(MlpTraining, StepSubtractsLearningRateTimesGradients) {
  const TinyProblem problem;
  float loss_before = 0;
  const std::vector<float> gradients = gradients_of(kTiny, problem.parameters, problem.batch, &loss_before);
  std::vector<float> parameters = problem.parameters;
  MlpWorkspace workspace;
  const float lr = 0.3f;
  EXPECT_EQ(mlp_train_step_cpu(kTiny, parameters.data(), problem.batch.inputs.data(), problem.batch.labels.data(),
                               problem.batch.size, lr, workspace),
            loss_before);
  for (std::size_t i = 0; i < parameters.size(); ++i) {
    // The library may fuse the multiply-add (-march=native): equal within half an ulp of
    // lr * g plus one of the result, under 2^-22 of |p| + |lr * g|.
    const float step = lr * gradients[i];
    EXPECT_NEAR(parameters[i], problem.parameters[i] - step,
                0x1p-22f * (std::fabs(problem.parameters[i]) + std::fabs(step)))
        << "parameter " << i;
  }
}

TEST(MlpLoss, IsNearLn10WithSmallOutputWeights) {
  const MlpShape shape;
  std::vector<float> parameters = mlp_initial_parameters(shape, 41);
  const Batch batch = random_batch(shape, 32, 42);
  // He init itself gives logits of standard deviation near 0.8: a loss a little above ln 10.
  const float he_loss = loss_of(shape, parameters, batch);
  EXPECT_GT(he_loss, std::log(10.0f) - 0.1f);
  EXPECT_LT(he_loss, std::log(10.0f) + 1.0f);
  // Output layer scaled to near zero: the softmax is uniform, so the mean loss is ln 10.
  const MlpLayout l = mlp_layout(shape);
  for (std::size_t i = l.w3.offset; i < l.parameters; ++i) parameters[i] *= 1e-3f;
  EXPECT_NEAR(loss_of(shape, parameters, batch), std::log(10.0), 1e-3);
}

TEST(MlpLoss, StaysFiniteForLargeLogits) {
  // Inputs scaled by 1e4 give logits in the thousands: exp without the row maximum would
  // overflow to Inf and give NaN.
  for (const MlpShape shape : {kTiny, MlpShape{}}) {
    const std::vector<float> parameters = mlp_initial_parameters(shape, 51);
    const Batch batch = random_batch(shape, 16, 52, 1e4f);
    float loss = 0;
    const std::vector<float> gradients = gradients_of(shape, parameters, batch, &loss);
    ASSERT_TRUE(std::isfinite(loss)) << "hidden " << shape.hidden;
    EXPECT_GT(loss, 10.0f) << "hidden " << shape.hidden;  // confidently wrong on random labels
    EXPECT_TRUE(std::all_of(gradients.begin(), gradients.end(), [](float g) { return std::isfinite(g); }))
        << "hidden " << shape.hidden;
    if (shape.hidden == kTiny.hidden) {
      EXPECT_NEAR(loss, fp64_loss_and_gradients(shape, to_double(parameters), batch).loss, 1e-4 * loss);
    }
  }
}

TEST(MlpWorkspace, ReuseAcrossBatchSizesMatchesFreshWorkspaces) {
  const MlpShape shape;  // batches above the threaded loops' threshold too
  const std::vector<float> parameters = mlp_initial_parameters(shape, 61);
  MlpWorkspace reused;
  const float* hidden_buffer = nullptr;
  for (int size : {48, 7, 48, 96}) {
    const Batch batch = random_batch(shape, size, 62 + size);
    std::vector<float> gradients(parameters.size());
    const float loss = mlp_loss_and_gradients_cpu(shape, parameters.data(), batch.inputs.data(),
                                                  batch.labels.data(), size, gradients.data(), reused);
    float fresh_loss = 0;
    const std::vector<float> fresh = gradients_of(shape, parameters, batch, &fresh_loss);
    // Same sums in the same order (no reductions depend on buffers or threads): bit for bit.
    EXPECT_EQ(loss, fresh_loss) << "batch " << size;
    EXPECT_EQ(gradients, fresh) << "batch " << size;
    // A batch no larger than one seen before reuses the buffers.
    if (size <= 48 && hidden_buffer != nullptr) {
      EXPECT_EQ(reused.hidden1.data(), hidden_buffer) << "batch " << size;
    }
    if (size == 48) hidden_buffer = reused.hidden1.data();
  }
  EXPECT_GE(reused.hidden1.size(), 96u * shape.hidden);
}

TEST(MlpArguments, RejectsLabelsOutsideTheClassesAndEmptyBatches) {
  const TinyProblem problem;
  Batch batch = problem.batch;
  MlpWorkspace workspace;
  batch.labels[2] = kTiny.outputs;
  EXPECT_THROW(mlp_loss_and_gradients_cpu(kTiny, problem.parameters.data(), batch.inputs.data(),
                                          batch.labels.data(), batch.size, nullptr, workspace),
               std::invalid_argument);
  EXPECT_THROW(mlp_loss_and_gradients_cpu(kTiny, problem.parameters.data(), batch.inputs.data(),
                                          batch.labels.data(), 0, nullptr, workspace),
               std::invalid_argument);
}

}  // namespace
}  // namespace gpubench
