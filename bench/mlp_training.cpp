// The MLP training study: one SGD step (forward, backward, update) of an MNIST-shape MLP (784 -> n -> n -> 10,
// ReLU, softmax cross-entropy) against the batch size. How many samples per second does each side train, from
// which batch does the GPU pay off, what does BF16 mixed precision buy, how much device memory does a batch
// take, and which is the largest batch that fits?
//   CPU: OpenBLAS SGEMM plus OpenMP loops (baselines/mlp_cpu), FP32.
//   GPU: cuBLAS plus our fused kernels (kernels/mlp_cuda), FP32 and BF16 mixed, each resident (the batch
//        already on the device) and transfer_pinned (the batch's inputs and labels copied in from pinned
//        memory inside the timed region, as a training loop that streams its data does).
// Entries: mlp_training/<impl>/<cpu|gpu>/<mode>/<precision>/n:<n>/batch:<b>; docs/interface.md.
#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/first_touch.hpp"
#include "core/json.hpp"
#include "core/random.hpp"
#include "harness/study.hpp"
#include "mlp_cpu.hpp"

#if GPUBENCH_HAVE_CUDA
#include "core/gpu_runtime.hpp"
#include "cublas_handle.hpp"
#include "mlp_cuda.cuh"
#endif

namespace gpubench {
namespace {

// Every step, verified or timed, uses it; the PyTorch reference (scripts/reference_mlp.py) too.
constexpr float kLearningRate = 0.1f;
constexpr int kEpochSamples = 60000;  // MNIST's training set: the driver's time per epoch

// A row runs the step of its device; the other device's function is null.
struct MlpImplementation : Implementation {
  decltype(&mlp_train_step_cpu) cpu_step = nullptr;
#if GPUBENCH_HAVE_CUDA
  decltype(&mlp_train_step_gpu) gpu_step = nullptr;
#endif
};

std::vector<MlpImplementation> implementations() {
  // No size caps: memory limits the batch.
  return {
      {{"openblas_loops", Device::cpu, mode_names({Mode::host}), {"fp32"}, 0, "", openblas_threads},
       mlp_train_step_cpu},
#if GPUBENCH_HAVE_CUDA
      {{"cublas_kernels", Device::gpu, mode_names({Mode::resident, Mode::transfer_pinned}), {"fp32", "bf16_mixed"}},
       nullptr,
       mlp_train_step_gpu},
#endif
  };
}

const std::vector<MlpImplementation>& table() {
  static const std::vector<MlpImplementation> all = implementations();
  return all;
}

// How close a step must come to its reference (CPU entries: the FP64 step; GPU entries: the CPU step).
// The numbers and why they are what they are: tests/test_gpu_mlp.cpp, which holds the GPU to the same ones.
struct StepTolerance {
  const char* precision;
  double step_rel_fro;  // on the step (weights after minus before), normwise, per tensor
  double step_max_rel;  // largest element error over the largest element of the step; infinity: not judged
  double loss_rel;
};

const std::vector<StepTolerance>& tolerances() {
  static const std::vector<StepTolerance> all = {
      {"fp32", 1e-3, 1e-2, 1e-5},
      // A ReLU flip changes a whole row of a gradient, so BF16's largest-element error reaches 1.0.
      {"bf16_mixed", 0.25, INFINITY, 0x1p-6},
  };
  return all;
}

const StepTolerance& tolerance_of(const std::string& precision) {
  return *std::find_if(tolerances().begin(), tolerances().end(),
                       [&](const StepTolerance& t) { return precision == t.precision; });
}

MlpShape shape_of(int hidden) {
  MlpShape shape;
  shape.hidden = hidden;
  return shape;
}

// The usual estimate, 3x the forward GEMMs' flop (the backward pass does about twice the forward's);
// element-wise work is not counted.
double step_flop(MlpShape s, int batch) {
  return 6.0 * batch *
         (static_cast<double>(s.inputs) * s.hidden + static_cast<double>(s.hidden) * s.hidden +
          static_cast<double>(s.hidden) * s.outputs);
}

// --- the problem of one (n, batch), shared by its entries ---------------------------------------------
struct StepResult {
  std::vector<double> parameters;  // after the step
  double loss = 0;
};

struct MlpProblem {
  MlpShape shape;
  int batch = 0;
  std::vector<float> parameters;  // initial weights
  std::vector<float> inputs;      // batch x inputs, uniform in [0, 1) like pixels
  std::vector<int> labels;
  // References, computed when an entry first needs them (mutable: the cache hands the problem out const).
  mutable std::unique_ptr<StepResult> fp64_step, cpu_step;
};

// Host bytes an entry needs at most: the batch (FP32 inputs, labels), about a dozen parameter vectors and
// the CPU step (five batch x hidden FP32 buffers: the entry itself, or the GPU entries' reference); CPU
// entries add the FP64 reference step (an FP64 copy of the inputs, five FP64 buffers) and their own copy of
// the batch, transfer_pinned entries the pinned copy of the batch.
double host_bytes_needed(MlpShape s, int batch, bool fp64_reference, bool pinned_copy) {
  const double batch_row = s.inputs * 4.0 + 4.0;
  double per_row = batch_row + 5.0 * s.hidden * 4.0;
  if (fp64_reference) per_row += (s.inputs + 5.0 * s.hidden) * 8.0 + batch_row;
  if (pinned_copy) per_row += batch_row;
  return batch * per_row + 64.0 * static_cast<double>(mlp_layout(s).parameters);
}

MlpProblem make_problem(MlpShape shape, int batch) {
  MlpProblem problem;
  problem.shape = shape;
  problem.batch = batch;
  const std::uint64_t configuration = static_cast<std::uint64_t>(shape.hidden) << 32 | batch;
  problem.parameters = mlp_initial_parameters(shape, configuration_seed(configuration, 0));
  problem.inputs = random_uniform(static_cast<std::size_t>(batch) * shape.inputs, configuration_seed(configuration, 1));
  for (float& v : problem.inputs) v = 0.5f * (v + 1.0f);
  for (float u : random_uniform(batch, configuration_seed(configuration, 2)))
    problem.labels.push_back(std::min(static_cast<int>(0.5f * (u + 1.0f) * shape.outputs), shape.outputs - 1));
  return problem;
}

// Throws EntrySkipped when the host lacks `host_bytes`, checked even when the problem is already built.
const MlpProblem& problem_for(MlpShape shape, int batch, double host_bytes) {
  static ProblemCache<std::pair<int, int>, MlpProblem> cache;
  require_host_memory(host_bytes);
  return cache.get({shape.hidden, batch}, [&] { return make_problem(shape, batch); });
}

// --- the FP64 reference step: OpenBLAS DGEMM on upcast copies and loops, written from the definition ----
using Matrix = std::vector<double>;  // row-major

// ReLU(in W^T + b), or without the ReLU for the logits.
Matrix dense_fp64(const Matrix& in, const double* weights, const double* bias, int rows, int in_features,
                  int out_features, bool relu) {
  Matrix out(static_cast<std::size_t>(rows) * out_features);
  for (int i = 0; i < rows; ++i) std::copy(bias, bias + out_features, out.begin() + std::size_t(i) * out_features);
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, out_features, in_features, 1.0, in.data(), in_features,
              weights, in_features, 1.0, out.data(), out_features);
  if (relu)
    for (double& v : out) v = std::max(v, 0.0);
  return out;
}

// Mean softmax cross-entropy; the logits become dL/dlogits.
double softmax_cross_entropy_fp64(Matrix& logits, const std::vector<int>& labels, int classes) {
  const int rows = static_cast<int>(labels.size());
  double loss = 0;
  for (int i = 0; i < rows; ++i) {
    double* z = logits.data() + std::size_t(i) * classes;
    const double max = *std::max_element(z, z + classes);
    double sum = 0;
    for (int j = 0; j < classes; ++j) sum += std::exp(z[j] - max);
    loss += std::log(sum) - (z[labels[i]] - max);
    for (int j = 0; j < classes; ++j) z[j] = (std::exp(z[j] - max) / sum - (j == labels[i])) / rows;
  }
  return loss / rows;
}

// One layer backward: dW = grad_out^T in, db = column sums of grad_out, and, if asked, the gradient at the
// layer's input (a hidden activation) masked by its ReLU.
Matrix backward_fp64(const Matrix& grad_out, const Matrix& in, const double* weights, int rows, int in_features,
                     int out_features, double* grad_weights, double* grad_bias, bool input_gradient) {
  cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, out_features, in_features, rows, 1.0, grad_out.data(),
              out_features, in.data(), in_features, 0.0, grad_weights, in_features);
  std::fill(grad_bias, grad_bias + out_features, 0.0);
  for (int i = 0; i < rows; ++i)
    for (int j = 0; j < out_features; ++j) grad_bias[j] += grad_out[std::size_t(i) * out_features + j];
  if (!input_gradient) return {};
  Matrix grad_in(in.size());
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, in_features, out_features, 1.0, grad_out.data(),
              out_features, weights, in_features, 0.0, grad_in.data(), in_features);
  for (std::size_t i = 0; i < grad_in.size(); ++i)
    if (!(in[i] > 0)) grad_in[i] = 0;
  return grad_in;
}

StepResult fp64_step(const MlpProblem& problem) {
  const MlpShape s = problem.shape;
  const MlpLayout l = mlp_layout(s);
  const int b = problem.batch;
  StepResult result{{problem.parameters.begin(), problem.parameters.end()}, 0};
  double* p = result.parameters.data();
  const Matrix x(problem.inputs.begin(), problem.inputs.end());
  const Matrix a1 = dense_fp64(x, p + l.w1.offset, p + l.b1.offset, b, s.inputs, s.hidden, true);
  const Matrix a2 = dense_fp64(a1, p + l.w2.offset, p + l.b2.offset, b, s.hidden, s.hidden, true);
  Matrix dz = dense_fp64(a2, p + l.w3.offset, p + l.b3.offset, b, s.hidden, s.outputs, false);
  result.loss = softmax_cross_entropy_fp64(dz, problem.labels, s.outputs);
  std::vector<double> g(l.parameters);
  const Matrix da2 =
      backward_fp64(dz, a2, p + l.w3.offset, b, s.hidden, s.outputs, &g[l.w3.offset], &g[l.b3.offset], true);
  const Matrix da1 =
      backward_fp64(da2, a1, p + l.w2.offset, b, s.hidden, s.hidden, &g[l.w2.offset], &g[l.b2.offset], true);
  backward_fp64(da1, x, p + l.w1.offset, b, s.inputs, s.hidden, &g[l.w1.offset], &g[l.b1.offset], false);
  for (std::size_t i = 0; i < g.size(); ++i) p[i] -= kLearningRate * g[i];
  return result;
}

StepResult cpu_fp32_step(const MlpProblem& problem) {
  std::vector<float> parameters = problem.parameters;
  MlpWorkspace workspace;
  const float loss = mlp_train_step_cpu(problem.shape, parameters.data(), problem.inputs.data(), problem.labels.data(),
                                        problem.batch, kLearningRate, workspace);
  return {{parameters.begin(), parameters.end()}, loss};
}

const StepResult& fp64_reference(const MlpProblem& problem) {
  if (!problem.fp64_step) problem.fp64_step = std::make_unique<StepResult>(fp64_step(problem));
  return *problem.fp64_step;
}

const StepResult& cpu_reference(const MlpProblem& problem) {
  if (!problem.cpu_step) problem.cpu_step = std::make_unique<StepResult>(cpu_fp32_step(problem));
  return *problem.cpu_step;
}

// --- verification: the step taken against the reference's step -------------------------------------------
// Per tensor, relative to what the step changed rather than to the weights (which a step moves by ~1%),
// so a wrong gradient shows in full: ||after - ref_after||_F / ||ref_after - before||_F, and the largest
// element error over the largest |ref_after - before|. The counters hold the worst tensor's.
struct StepVerdict {
  double rel_fro_error = 0;
  double max_rel_error = 0;
  const char* worst_tensor = "";  // where rel_fro_error is
  std::size_t non_finite = 0;     // NaN or Inf weights after the step
  double loss = 0, reference_loss = 0, loss_error = 0;
  StepTolerance tolerance{};

  bool passed() const {  // written so that a NaN error fails
    return non_finite == 0 && rel_fro_error <= tolerance.step_rel_fro && max_rel_error <= tolerance.step_max_rel &&
           loss_error <= tolerance.loss_rel;
  }
  std::string describe() const {
    char text[400];
    std::snprintf(text, sizeof text,
                  "step (weights after minus before) off by %.3g normwise (tolerance %.3g) in %s, largest element "
                  "error %.3g of the largest step (tolerance %.3g), %zu non-finite weights; loss %.8g against "
                  "%.8g (relative error %.3g, tolerance %.3g)",
                  rel_fro_error, tolerance.step_rel_fro, worst_tensor, max_rel_error, tolerance.step_max_rel,
                  non_finite, loss, reference_loss, loss_error, tolerance.loss_rel);
    return text;
  }
};

struct NamedTensor {
  const char* name;
  MlpTensor tensor;
};

StepVerdict verify_step(const MlpProblem& problem, const float* after, float loss,
                        const StepResult& reference, const StepTolerance& tolerance) {
  StepVerdict verdict;
  verdict.tolerance = tolerance;
  const MlpLayout l = mlp_layout(problem.shape);
  for (const NamedTensor& named :
       {NamedTensor{"W1", l.w1}, {"b1", l.b1}, {"W2", l.w2}, {"b2", l.b2}, {"W3", l.w3}, {"b3", l.b3}}) {
    double error = 0, step = 0, max_error = 0, max_step = 0;
    for (std::size_t i = named.tensor.offset; i < named.tensor.offset + named.tensor.size; ++i) {
      const double s = std::fabs(reference.parameters[i] - problem.parameters[i]);
      step += s * s;
      max_step = std::max(max_step, s);
      if (!std::isfinite(after[i])) {
        ++verdict.non_finite;
        continue;
      }
      const double e = std::fabs(after[i] - reference.parameters[i]);
      error += e * e;
      max_error = std::max(max_error, e);
    }
    // A reference step of zero (degenerate inputs) makes any difference infinite rather than NaN.
    const double rel_fro = step > 0 ? std::sqrt(error / step) : (error > 0 ? INFINITY : 0.0);
    const double max_rel = max_step > 0 ? max_error / max_step : (max_error > 0 ? INFINITY : 0.0);
    if (rel_fro >= verdict.rel_fro_error) {
      verdict.rel_fro_error = rel_fro;
      verdict.worst_tensor = named.name;
    }
    verdict.max_rel_error = std::max(verdict.max_rel_error, max_rel);
  }
  verdict.loss = loss;
  verdict.reference_loss = reference.loss;
  verdict.loss_error = std::fabs(loss - reference.loss) / reference.loss;
  return verdict;
}

// --- what an entry reports ------------------------------------------------------------------------------
void report_step(PreparedEntry& entry, const MlpProblem& problem, const StepVerdict& verdict) {
  entry.counters["flop"] = step_flop(problem.shape, problem.batch);
  entry.counters["samples"] = problem.batch;
  entry.counters["rel_fro_error"] = verdict.rel_fro_error;
  entry.counters["max_rel_error"] = verdict.max_rel_error;
  entry.counters["loss_rel_error"] = verdict.loss_error;
  if (!verdict.passed()) entry.wrong_result = verdict.describe();
  // No memory traffic: see kNoTrafficModel.
}

// Every timed step starts from the weights the previous one left (the entry keeps training on its batch):
// resetting them would put a copy in the timed region or stop the clock every step, and a step's cost does
// not depend on the weights' values.
class CpuStep : public PreparedEntry {
 public:
  CpuStep(const MlpImplementation& impl, const std::string& precision, const MlpProblem& problem)
      : impl_(impl), problem_(problem), parameters_(problem.parameters), inputs_(problem.inputs),
        labels_(problem.labels) {
    run_once();  // the first step (OpenBLAS's threads, the workspace), checked
    report_step(*this, problem, verify_step(problem, parameters_.data(), loss_, fp64_reference(problem),
                                            tolerance_of(precision)));
  }
  void run_once() override {
    loss_ = impl_.cpu_step(problem_.shape, parameters_.data(), inputs_.data(), labels_.data(), problem_.batch,
                           kLearningRate, workspace_);
  }

 private:
  const MlpImplementation& impl_;
  const MlpProblem& problem_;
  // The entry's own weights and batch, first written by the OpenMP threads (core/first_touch.hpp).
  ThreadPlacedArray<float> parameters_, inputs_;
  ThreadPlacedArray<int> labels_;
  MlpWorkspace workspace_;
  float loss_ = 0;
};

#if GPUBENCH_HAVE_CUDA
MlpPrecision gpu_precision(const std::string& precision) {
  return precision == "fp32" ? MlpPrecision::fp32 : MlpPrecision::bf16_mixed;
}

// Creates the cuBLAS handle (with its workspace) first, so that device_bytes holds the entry's memory only,
// then checks that the entry fits; returns the free device memory it saw.
double free_device_bytes_before(MlpShape shape, int batch, MlpPrecision precision) {
  cublas_handle();
  const std::size_t count = mlp_layout(shape).parameters;
  const double batch_bytes = static_cast<double>(batch) * (sizeof(float) * shape.inputs + sizeof(int));
  return require_device_memory(sizeof(float) * count + batch_bytes +
                               MlpGpuWorkspace::bytes_needed(shape, batch, precision));
}

template <typename T>
void upload(const std::vector<T>& host, const DeviceBuffer<T>& device) {
  CUDA_CHECK(cudaMemcpy(device.get(), host.data(), device.bytes(), cudaMemcpyHostToDevice));
}

// The weights keep training across steps, as on the CPU. The device is checked before the host: its limit is
// what a sweep of large batches looks for, and the host memory the reference needs comes second.
class GpuStep : public PreparedEntry {
 public:
  GpuStep(const MlpImplementation& impl, const Entry& entry)
      : impl_(impl), shape_(shape_of(entry.n)), batch_(entry.batch), precision_(gpu_precision(entry.precision)),
        copies_(copies_timed(entry.mode)), free_before_(free_device_bytes_before(shape_, batch_, precision_)),
        problem_(problem_for(shape_, batch_, host_bytes_needed(shape_, batch_, /*fp64_reference=*/false, copies_))),
        parameters_(mlp_layout(shape_).parameters), inputs_(problem_.inputs.size()), labels_(problem_.labels.size()) {
    workspace_.reserve(shape_, batch_, precision_);
    // Measured: free device memory before minus after allocating the weights, the batch and the workspace.
    counters["device_bytes"] = free_before_ - static_cast<double>(device_free_bytes());
    upload(problem_.parameters, parameters_);
    upload(problem_.inputs, inputs_);
    upload(problem_.labels, labels_);
    step();  // the first step, on the uploaded batch, checked against the CPU step
    std::vector<float> after(problem_.parameters.size());
    CUDA_CHECK(cudaMemcpy(after.data(), parameters_.get(), parameters_.bytes(), cudaMemcpyDeviceToHost));
    report_step(*this, problem_, verify_step(problem_, after.data(), workspace_.loss(), cpu_reference(problem_),
                                             tolerance_of(entry.precision)));
    if (copies_) {
      pinned_inputs_ = pinned_copy_of(problem_.inputs);
      pinned_labels_ = pinned_copy_of(problem_.labels);
      add_link_traffic(static_cast<double>(inputs_.bytes() + labels_.bytes()), 0);  // nothing comes back
    }
  }

  void run_once() override {
    if (copies_) {
      CUDA_CHECK(cudaMemcpyAsync(inputs_.get(), pinned_inputs_->get(), inputs_.bytes(), cudaMemcpyHostToDevice, 0));
      CUDA_CHECK(cudaMemcpyAsync(labels_.get(), pinned_labels_->get(), labels_.bytes(), cudaMemcpyHostToDevice, 0));
    }
    step();
  }

 private:
  void step() {
    impl_.gpu_step(shape_, parameters_.get(), inputs_.get(), labels_.get(), batch_, kLearningRate, workspace_,
                   precision_);
  }

  const MlpImplementation& impl_;
  MlpShape shape_;
  int batch_;
  MlpPrecision precision_;
  bool copies_;
  double free_before_;
  const MlpProblem& problem_;
  DeviceBuffer<float> parameters_, inputs_;
  DeviceBuffer<int> labels_;
  MlpGpuWorkspace workspace_;
  std::unique_ptr<PinnedBuffer<float>> pinned_inputs_;
  std::unique_ptr<PinnedBuffer<int>> pinned_labels_;
};
#endif  // GPUBENCH_HAVE_CUDA

std::unique_ptr<PreparedEntry> prepare(const Entry& entry) {
  const auto& impl = row_of<MlpImplementation>(entry);
#if GPUBENCH_HAVE_CUDA
  if (impl.on_gpu()) return std::make_unique<GpuStep>(impl, entry);
#endif
  const MlpShape shape = shape_of(entry.n);
  const MlpProblem& problem =
      problem_for(shape, entry.batch, host_bytes_needed(shape, entry.batch, /*fp64_reference=*/true, /*pinned_copy=*/false));
  return std::make_unique<CpuStep>(impl, entry.precision, problem);
}

// --- description -------------------------------------------------------------------------------------------
Json describe_tolerance(const StepTolerance& t) {
  return {{"id", t.precision},
          {"step_rel_fro", t.step_rel_fro},
          {"step_max_rel", t.step_max_rel},
          {"loss_rel", t.loss_rel}};
}

// Why the step reports no memory traffic counters: a compulsory-traffic lower bound would overstate its
// arithmetic intensity on the roofline, and the real traffic depends on fusion and caching.
constexpr const char* kNoTrafficModel =
    "no traffic model for a training step (weights, activations and gradients each move several times)";

Json describe_study() {
  const MlpShape shape;
  return {{"inputs", shape.inputs},
          {"outputs", shape.outputs},
          {"learning_rate", kLearningRate},
          {"epoch_samples", kEpochSamples},
          {"precisions", array_of(tolerances(), describe_tolerance)},
          {"utilization", utilization_description()},
          {"memory_traffic_note", kNoTrafficModel}};
}

StudyDefinition definition() {
  StudyDefinition study;
  study.name = "mlp_training";
  study.implementations = rows(table());
  study.modes = mode_names({Mode::host, Mode::resident, Mode::transfer_pinned});
  study.default_sizes = {1024};  // the MNIST MLP
  study.default_batches = geometric(1, 8192, 2);
  study.axes.n = "hidden";  // n is the width of both hidden layers
  study.axes.batch_unit = "samples";
  // The driver's default suite: the MNIST MLP at one sample a step (the claim's worst case for the GPU),
  // 256 (a common training batch; PyTorch's step is compared from there) and 8192, where the GPU's rate
  // levels off (the epoch's headline time); 1024 lies between on every curve and is --full's.
  // --quick: one sample and 256.
  study.quick.sizes = {1024};
  study.quick.batches = {1, 256};
  study.suite.sizes = {1024};
  study.suite.batches = {1, 256, 8192};
  study.counters = {
      {"flop", "FLOP", "6 x batch x (784 n + n^2 + 10 n): per weight and sample, 2 forward and 4 backward"},
      {"samples", "count", "the batch: samples a step"},
      {"rel_fro_error", "ratio", "the step (weights after less before) against the FP64 reference's, normwise, in the "
                                 "worst tensor"},
      {"max_rel_error", "ratio", "the largest element's error over the largest element of the reference's step"},
      {"loss_rel_error", "ratio", "|loss - reference loss| / reference loss"},
      {"device_bytes", "bytes", "device memory the GPU entry took: free memory before its buffers less free memory "
                                "after"}};
  study.rules = {{"memory_traffic_note", kNoTrafficModel}};
  study.prepare = prepare;
  study.describe = describe_study;
  return study;
}

}  // namespace
}  // namespace gpubench

int main(int argc, char** argv) { return gpubench::run_study(argc, argv, gpubench::definition()); }
