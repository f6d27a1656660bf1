// The convolution study: the forward pass of four ResNet-50 layers over the batch. From
// which batch does the GPU beat the CPU, where does its throughput stop growing, and what
// do TF32, FP16 and the NHWC layout that tensor cores prefer buy over FP32?
//   CPU: im2col + OpenBLAS SGEMM (baselines/conv2d_cpu), FP32, NCHW and NHWC.
//   GPU: cuDNN's forward convolution through its graph API, with the engine measured fastest
//        for each configuration (kernels/conv2d_cudnn), FP32 without tensor cores, TF32 and FP16,
//        NCHW and NHWC; resident, and transfer_pinned (input in, output out, timed; filter resident).
// Entries: conv2d/<impl>/<cpu|gpu>/<mode>/<precision>/n:<n>/batch:<b>, n the layer's input
// height and width; docs/interface.md.
#include <cstdint>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "conv2d_cpu.hpp"
#include "core/json.hpp"
#include "core/precision.hpp"
#include "core/precision_codec.hpp"
#include "core/random.hpp"
#include "core/verify.hpp"
#include "harness/cpu_entry.hpp"
#include "harness/held_choices.hpp"
#include "harness/study.hpp"

#if GPUBENCH_HAVE_CUDNN
#include "conv2d_cudnn.hpp"
#include "core/gpu_runtime.hpp"
#include "cudnn_backend.hpp"
#endif

namespace gpubench {
namespace {

// --- layers: the size axis --------------------------------------------------------------------
// One 3x3 convolution of each ResNet-50 stage at its resolution, and the last stage's 1x1
// expansion; every one keeps the image size (stride 1, "same" padding). Their input sizes
// differ, so the size axis n (input height = width) names the layer.
struct Layer {
  int n;
  int in_channels;
  int out_channels;
  int kernel;
  int padding;
  const char* role;

  Conv2dShape shape(int batch) const { return {batch, in_channels, out_channels, n, n, kernel, 1, padding}; }
};

const std::vector<Layer>& layers() {
  static const std::vector<Layer> all = {
      {7, 512, 2048, 1, 0, "ResNet-50 conv5_x 1x1 expansion"},
      {14, 256, 256, 3, 1, "ResNet-50 conv4_x 3x3"},
      {28, 128, 128, 3, 1, "ResNet-50 conv3_x 3x3"},
      {56, 64, 64, 3, 1, "ResNet-50 conv2_x 3x3"},
  };
  return all;
}

const Layer* layer_of(int n) {
  for (const Layer& layer : layers())
    if (layer.n == n) return &layer;
  return nullptr;
}

std::vector<int> default_sizes() {
  std::vector<int> sizes;
  for (const Layer& layer : layers()) sizes.push_back(layer.n);
  return sizes;
}

// Sizes name layers: an n without a layer is a usage error naming the valid ones.
void check_sizes(const StudyOptions& options) {
  for (int n : options.sizes) {
    if (layer_of(n)) continue;
    std::string valid;
    for (int size : default_sizes()) valid += (valid.empty() ? "" : ", ") + std::to_string(size);
    throw UsageError("--sizes: no layer with n=" + std::to_string(n) + " (the layers have n = " + valid + ")");
  }
}

// --- precisions -------------------------------------------------------------------------------
// The precisions cuDNN runs here, with the engines each takes (kernels/conv2d_cudnn.hpp);
// their formats are core/precision.hpp's (FP16 writes FP16). The CPU runs fp32 only.
struct PrecisionUse {
  Precision id;
  const char* cudnn_math;
};

const std::vector<PrecisionUse>& precision_uses() {
  static const std::vector<PrecisionUse> all = {
      {Precision::fp32, "FP32 compute, engines without tensor cores (no TF32)"},
      {Precision::tf32, "FP32 compute, tensor-core (TF32) engines allowed"},
      {Precision::fp16, "FP32 compute, tensor-core engines allowed"},
  };
  return all;
}

// --- implementations ----------------------------------------------------------------------------
// The layout is part of the id: the precision slot of an entry name holds the precision.
struct ConvImplementation : Implementation {
  TensorLayout layout = TensorLayout::nchw;
  Conv2dFn run = nullptr;  // CPU rows; the GPU rows run the CudnnConv2dPlan of their configuration
};

std::vector<ConvImplementation> implementations() {
  const std::vector<std::string> cpu = {mode_name(Mode::host)};
  const std::vector<std::string> fp32 = {precision_info(Precision::fp32).name};
  std::vector<ConvImplementation> all = {
      {{"im2col_openblas_nchw", Device::cpu, cpu, fp32, 0, "", openblas_threads},
       TensorLayout::nchw,
       conv2d_im2col_openblas},
      {{"im2col_openblas_nhwc", Device::cpu, cpu, fp32, 0, "", openblas_threads},
       TensorLayout::nhwc,
       conv2d_im2col_openblas},
  };
#if GPUBENCH_HAVE_CUDNN
  const std::vector<std::string> gpu = mode_names({Mode::resident, Mode::transfer_pinned});
  std::vector<std::string> cudnn_precisions;
  for (const PrecisionUse& use : precision_uses()) cudnn_precisions.push_back(precision_info(use.id).name);
  all.push_back({{"cudnn_nchw", Device::gpu, gpu, cudnn_precisions}, TensorLayout::nchw});
  all.push_back({{"cudnn_nhwc", Device::gpu, gpu, cudnn_precisions}, TensorLayout::nhwc});
#endif
  return all;
}

const std::vector<ConvImplementation>& table() {
  static const std::vector<ConvImplementation> all = implementations();
  return all;
}

// --- inputs and verification, shared by every entry of one (n, batch) ---------------------------
struct ConvProblem {
  Conv2dShape shape;
  // Uniform in [-1, 1), independent elements: read in NCHW or NHWC order they are a random
  // tensor of that layout alike, so both layouts use the same draw.
  std::vector<float> input, filter;
};

std::uint64_t configuration_of(const Conv2dShape& s) { return static_cast<std::uint64_t>(s.height) << 32 | s.batch; }

// Host bytes at peak, in units of FP32 elements: the inputs, then for a GPU entry their
// encoded copies and the pinned input, and three outputs (read back, decoded, pinned); a
// CPU entry needs less.
double host_bytes_needed(const Conv2dShape& s) {
  return 4.0 * (3.0 * s.input_elements() + 2.0 * s.filter_elements() + 3.0 * s.output_elements());
}

const ConvProblem& problem_for(const Conv2dShape& shape) {
  static ProblemCache<std::pair<int, int>, ConvProblem> cache;
  require_host_memory(host_bytes_needed(shape));
  return cache.get({shape.height, shape.batch}, [&shape] {
    ConvProblem problem;
    problem.shape = shape;
    problem.input = random_uniform(shape.input_elements(), configuration_seed(configuration_of(shape), 0));
    problem.filter = random_uniform(shape.filter_elements(), configuration_seed(configuration_of(shape), 1));
    return problem;
  });
}

// The output (as FP32 values, in `layout`) against FP64 sums of the same FP32 inputs, within
// the precision's bound 4 u_in + 2 u_out + 16 u_acc sqrt(k) (core/precision.hpp); for fp32
// that is verify_conv2d's own 16 u sqrt(k) plus 2 u. TF32 and FP16 round every input element
// to 11 significant bits before multiplying (relative 2^-11; up to 2^-10 where TF32
// truncates), so each product is off by up to twice that, with random signs: about 0.8 u_in
// rms relative to the result (2.2 u_in if TF32 truncates, its error being one-sided), inside
// the 4 u_in term. FP16 also rounds each output element to FP16: the 2 u_out term. A wrong
// element or index (errors near 1) still exceeds the bound by orders of magnitude.
Verification verify_output(const float* output, const ConvProblem& problem, TensorLayout layout,
                           Precision precision) {
  Verification v = verify_conv2d(output, problem.input.data(), problem.filter.data(), problem.shape, layout,
                                 configuration_seed(configuration_of(problem.shape), 2));
  v.tolerance = precision_tolerance(precision, problem.shape.accumulation_length());
  return v;
}

// What every entry reports: the work, the verdict, and the compulsory memory traffic of one
// call: every image of the batch read and its output written once, the filter read once, in
// the element size the implementation stores (conv2d_element_bytes).
void report(PreparedEntry& entry, const Conv2dShape& s, const Verification& verdict, double element_bytes) {
  entry.counters["flop"] = s.flop();
  entry.counters["samples"] = s.batch;
  entry.counters["tolerance"] = verdict.tolerance.max_rel;
  entry.set_verdict(verdict);
  entry.add_memory_traffic(element_bytes * (s.input_elements() + s.filter_elements()),
                           element_bytes * s.output_elements());
}

#if GPUBENCH_HAVE_CUDNN
// --- GPU entries ------------------------------------------------------------------------------
// Buffers, plan and verdict of one configuration (implementation, precision, n, batch), shared
// by its two modes, which run one after the other: the engine search and the verification
// then run once per configuration, and both modes time the same engine.
struct GpuConfiguration {
  std::unique_ptr<DeviceBuffer<std::uint8_t>> input, filter, output;  // in the precision's storage format
  std::unique_ptr<CudnnConv2dPlan> plan;
  double device_bytes = 0;  // measured: free device memory before minus after allocating
  Verification verdict;
};

std::unique_ptr<DeviceBuffer<std::uint8_t>> upload(const std::vector<std::uint8_t>& bytes) {
  auto buffer = std::make_unique<DeviceBuffer<std::uint8_t>>(bytes.size());
  CUDA_CHECK(cudaMemcpy(buffer->get(), bytes.data(), bytes.size(), cudaMemcpyHostToDevice));
  return buffer;
}

// What names a configuration among a run's held choices (harness/held_choices.hpp).
std::string choice_key(const ConvImplementation& impl, Precision precision, const Conv2dShape& s) {
  return "conv2d/" + impl.id + "/" + precision_info(precision).name + "/n:" + std::to_string(s.height) +
         "/batch:" + std::to_string(s.batch);
}

// Inputs converted to the precision on the host (FP16: rounded to nearest even), the
// engine chosen on them (or the one an earlier trial chose), then one run into an output
// poisoned with NaN (all-ones bits are NaN in FP32 and FP16 alike), read back and verified.
GpuConfiguration configure(const ConvImplementation& impl, Precision precision, const ConvProblem& problem) {
  const Conv2dShape s = problem.shape;
  const double element = static_cast<double>(conv2d_element_bytes(precision));
  const double free_before =
      require_device_memory(element * (s.input_elements() + s.filter_elements() + s.output_elements()));
  GpuConfiguration c;
  c.input = upload(encode_conv2d_tensor(problem.input, precision));
  c.filter = upload(encode_conv2d_tensor(problem.filter, precision));
  c.output = std::make_unique<DeviceBuffer<std::uint8_t>>(static_cast<std::size_t>(element) * s.output_elements());
  const std::string key = choice_key(impl, precision, s);
  c.plan = std::make_unique<CudnnConv2dPlan>(s, impl.layout, precision, c.input->get(), c.filter->get(),
                                             c.output->get(), held_choices().find(key));
  held_choices().record(key, c.plan->engine_choice());
  c.device_bytes = free_before - static_cast<double>(device_free_bytes());  // includes the workspace
  CUDA_CHECK(cudaMemset(c.output->get(), 0xFF, c.output->bytes()));
  c.plan->run(c.input->get(), c.filter->get(), c.output->get());
  std::vector<std::uint8_t> output(c.output->bytes());
  CUDA_CHECK(cudaMemcpy(output.data(), c.output->get(), output.size(), cudaMemcpyDeviceToHost));
  c.verdict = verify_output(decode_conv2d_tensor(output, precision).data(), problem, impl.layout, precision);
  return c;
}

// The configuration kept until the next one is asked for (the previous one's device memory
// goes first).
const GpuConfiguration& configuration_for(const ConvImplementation& impl, Precision precision,
                                          const ConvProblem& problem) {
  static ProblemCache<std::tuple<std::string, Precision, int, int>, GpuConfiguration> cache;
  const Conv2dShape& s = problem.shape;
  return cache.get({impl.id, precision, s.height, s.batch}, [&] { return configure(impl, precision, problem); });
}

// resident: the configuration's buffers as they are. transfer_pinned: the input copied in
// and the output out in every call, from pinned copies this entry makes.
class GpuConv : public PreparedEntry {
 public:
  GpuConv(const GpuConfiguration& configuration, const std::string& mode, Precision precision)
      : c_(configuration), copies_(copies_timed(mode)) {
    report(*this, c_.plan->shape(), c_.verdict, static_cast<double>(conv2d_element_bytes(precision)));
    if (!wrong_result.empty()) {
      wrong_result += " (cuDNN " + c_.plan->engine_description() + ")";
      return;
    }
    if (copies_) {
      make_pinned_copies();
      add_link_traffic(static_cast<double>(c_.input->bytes()), static_cast<double>(c_.output->bytes()));
    }
    counters["device_bytes"] = c_.device_bytes;
    counters["workspace_bytes"] = static_cast<double>(c_.plan->workspace_bytes());
    // The engine's global index twice: `engine` is its name here, `algorithm` the counter the
    // driver reads for the library's choice (scripts/gpubench_driver/lib/gbench.py).
    counters["engine"] = static_cast<double>(c_.plan->engine());
    counters["algorithm"] = static_cast<double>(c_.plan->engine());
    counters["tensor_cores"] = c_.plan->tensor_cores() ? 1 : 0;
    counters["engine_held"] = c_.plan->engine_held() ? 1 : 0;
    label = c_.plan->engine_description();  // counters are numbers; the engine in words
  }

  void run_once() override {
    if (copies_)
      CUDA_CHECK(cudaMemcpyAsync(c_.input->get(), pinned_input_->get(), c_.input->bytes(), cudaMemcpyHostToDevice, 0));
    c_.plan->run(c_.input->get(), c_.filter->get(), c_.output->get());
    if (copies_)
      CUDA_CHECK(
          cudaMemcpyAsync(pinned_output_->get(), c_.output->get(), c_.output->bytes(), cudaMemcpyDeviceToHost, 0));
  }

 private:
  // The input already converted (copied back from the device, so both modes time the same
  // bytes) and room for the output.
  void make_pinned_copies() {
    pinned_input_ = std::make_unique<PinnedBuffer<std::uint8_t>>(c_.input->bytes());
    pinned_output_ = std::make_unique<PinnedBuffer<std::uint8_t>>(c_.output->bytes());
    CUDA_CHECK(cudaMemcpy(pinned_input_->get(), c_.input->get(), c_.input->bytes(), cudaMemcpyDeviceToHost));
  }

  const GpuConfiguration& c_;
  bool copies_;
  std::unique_ptr<PinnedBuffer<std::uint8_t>> pinned_input_, pinned_output_;
};
#endif  // GPUBENCH_HAVE_CUDNN

std::unique_ptr<PreparedEntry> prepare(const Entry& entry) {
  const auto& impl = row_of<ConvImplementation>(entry);
  const ConvProblem& problem = problem_for(layer_of(entry.n)->shape(entry.batch));
#if GPUBENCH_HAVE_CUDNN
  if (impl.on_gpu()) {
    const Precision precision = precision_named(entry.precision);
    return std::make_unique<GpuConv>(configuration_for(impl, precision, problem), entry.mode, precision);
  }
#endif
  // The first call, on an output poisoned with NaN, is also the warm-up (thread pools, column buffer).
  auto cpu = std::make_unique<ThreadPlacedCpuEntry>(
      std::vector{&problem.input, &problem.filter}, problem.shape.output_elements(),
      [&impl, &problem](const std::vector<const float*>& in, float* output) {
        impl.run(in[0], in[1], output, problem.shape, impl.layout);
      });
  report(*cpu, problem.shape, verify_output(cpu->output(), problem, impl.layout, Precision::fp32),
         static_cast<double>(sizeof(float)));
  return cpu;
}

// --- description ------------------------------------------------------------------------------
Json describe_layer(const Layer& layer) {
  const Conv2dShape s = layer.shape(1);
  return {{"n", layer.n},
          {"role", layer.role},
          {"in_channels", s.in_channels},
          {"out_channels", s.out_channels},
          {"kernel", s.kernel},
          {"stride", s.stride},
          {"padding", s.padding},
          {"height", s.height},
          {"width", s.width},
          {"out_height", s.out_height()},
          {"out_width", s.out_width()},
          {"flop_per_sample", static_cast<long long>(s.flop())}};
}

Json describe_precision(const PrecisionUse& use) {
  const PrecisionInfo& info = precision_info(use.id);
  return {{"id", info.name},
          {"inputs", info.inputs},
          {"accumulate", info.accumulate},
          {"output", info.output},
          {"cudnn_math", use.cudnn_math},
          {"tolerance", tolerance_rule()}};
}

#if GPUBENCH_HAVE_CUDNN
Json describe_cudnn() {
  Json cudnn = availability("");
  cudnn["version"] = cudnn_library_version();
  cudnn["header_version"] = cudnn_header_version();
  return cudnn;
}
#else
Json describe_cudnn() {
  const std::string reason = GPUBENCH_HAVE_CUDA ? "cuDNN 9 was not found when this build was configured "
                                                  "(cmake/FindCUDNN.cmake; set CUDNN_ROOT to point at one)"
                                                : "this build has no GPU side (no CUDA compiler was found)";
  Json cudnn = availability(reason);
  cudnn["version"] = nullptr;
  cudnn["header_version"] = nullptr;
  return cudnn;
}
#endif

// What the GPU entries' `engine` counter means: cuDNN's engines have numbers, no names.
constexpr const char* kEngineNotes =
    "engine (and algorithm, the same number): the global index of the cuDNN engine chosen for the configuration "
    "(CUDNN_ATTR_ENGINE_GLOBAL_INDEX), the fastest of up to 10 engine configurations (cuDNN's heuristics, then its "
    "fallback list) timed on the entry's buffers; its meaning may change between cuDNN "
    "versions. tensor_cores: 1 when the engine has the numerical note CUDNN_NUMERICAL_NOTE_TENSOR_CORE. Each "
    "entry's label describes the engine: its numerical notes, its knob choices (kN=V, N a cudnnBackendKnobType_t "
    "value) and how many engine configurations were timed. engine_held: 1 when the engine is the one an earlier "
    "process of the run chose (--held-choices), taken without timing the others, so that every trial of an entry "
    "times the same engine.";

// The layers, the precisions, cuDNN, and whether the GPU entries' utilization counters can be
// sampled (NVML).
Json describe_study() {
  return {{"layers", array_of(layers(), describe_layer)},
          {"precisions", array_of(precision_uses(), describe_precision)},
          {"cudnn", describe_cudnn()},
          {"engine_notes", kEngineNotes},
          {"utilization", utilization_description()}};
}

StudyDefinition definition() {
  StudyDefinition study;
  study.name = "conv2d";
  study.implementations = rows(table());
  study.modes = mode_names({Mode::host, Mode::resident, Mode::transfer_pinned});
  study.default_sizes = default_sizes();
  study.default_batches = geometric(1, 256, 2);
  study.axes.n = "layer";  // n names a layer by its input height and width (see "layers")
  study.axes.n_unit = "pixels";  // the layer's input height and width
  study.axes.batch_unit = "samples";
  // The driver's default suite and --quick: the first and last ResNet-50 stages (56: conv2_x, 7: conv5_x's
  // 1x1) at one image and at 32, on the CPU and resident on the GPU (what PyTorch's convolution is compared
  // with); a layer's copies are the transfer study's bytes over its rates, and the GPU with copies against
  // the CPU is matmul's and mlp_training's question: transfer_pinned is --full's. --full sweeps every
  // layer and batch.
  study.quick.sizes = {56};
  study.quick.batches = {1, 32};
  study.suite.sizes = {7, 56};
  study.suite.batches = {1, 32};
  study.suite.modes = mode_names({Mode::host, Mode::resident});
  study.counters = {
      {"flop", "FLOP", "2 x batch x K x P x Q x C x R x S, the direct algorithm's count (filter taps on the padding "
                       "included)"},
      {"samples", "count", "the batch: images a call"},
      {"memory_read_bytes", "bytes", "every image of the batch and the filter once, in the element size the "
                                     "implementation stores"},
      {"memory_written_bytes", "bytes", "the batch's output once, in that element size"},
      kRelFroErrorCounter,
      kMaxRelErrorCounter,
      {"tolerance", "ratio", "the max_rel_error the entry is held to: " + tolerance_rule()},
      {"device_bytes", "bytes", "device memory the configuration took: free memory before its buffers and plan "
                                "less free memory after"},
      {"workspace_bytes", "bytes", "the cuDNN plan's workspace"},
      {"engine", "id", "the cuDNN engine's global index (engine_notes)"},
      {"algorithm", "id", "the same number as engine"},
      {"tensor_cores", "flag", "1 when the engine has the numerical note CUDNN_NUMERICAL_NOTE_TENSOR_CORE"},
      {"engine_held", "flag", "1 when the engine is the one an earlier process of the run chose (--held-choices)"}};
  // Why a rate from these FLOP is not what the multiply units did.
  study.rules = {{"nominal_flop",
                  "a convolution's FLOP are those of the direct algorithm; cuDNN may choose Winograd or FFT "
                  "algorithms, which do fewer operations, so its rate can exceed what the multiply units did, and its "
                  "fraction of the peak 100%"}};
  study.prepare = prepare;
  study.check_options = check_sizes;
  study.describe = describe_study;
  study.describe_implementation = [](const Implementation& impl) {
    return Json{{"layout", layout_name(static_cast<const ConvImplementation&>(impl).layout)}};
  };
  return study;
}

}  // namespace
}  // namespace gpubench

int main(int argc, char** argv) { return gpubench::run_study(argc, argv, gpubench::definition()); }
