// The convolution study: the forward pass of four ResNet-50 layers over the batch. From
// which batch does the GPU beat the CPU, where does its throughput stop growing, and what
// do TF32, FP16 and the NHWC layout that tensor cores prefer buy over FP32?
//   CPU: im2col + OpenBLAS SGEMM (baselines/conv2d_cpu), FP32, NCHW and NHWC.
//   GPU: cuDNN's forward convolution through its graph API, with the engine measured fastest
//        for each configuration (kernels/conv2d_cudnn), FP32 without tensor cores, TF32 and FP16,
//        NCHW and NHWC; resident, and transfer_pinned (input in, output out, timed; filter resident).
// Entries: conv2d/<impl>/<cpu|gpu>/<mode>/<precision>/n:<n>/batch:<b>, n the layer's input
// height and width; docs/interface.md.
#include <benchmark/benchmark.h>
#include <cblas.h>

#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "harness/gpu_telemetry.hpp"
#include "core/json.hpp"
#include "core/precision.hpp"
#include "core/random.hpp"
#include "harness/study_main.hpp"
#include "harness/study_options.hpp"
#include "core/verify.hpp"
#include "conv2d_cpu.hpp"

#if GPUBENCH_HAVE_CUDNN
#include "harness/gpu_entry.hpp"
#include "core/gpu_runtime.hpp"
#include "conv2d_cudnn.hpp"
#include "cudnn_check.hpp"
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

const std::vector<int>& default_batches() {
  static const std::vector<int> batches = [] {
    std::vector<int> b;
    for (int batch = 1; batch <= 256; batch *= 2) b.push_back(batch);
    return b;
  }();
  return batches;
}

// --- implementations ------------------------------------------------------------------------
// The layout is part of the id: the precision slot of an entry name holds the precision.
struct Implementation {
  const char* id;
  TensorLayout layout;
  bool on_gpu;
};

const std::vector<Implementation>& implementations() {
  static const std::vector<Implementation> all = {
      {"im2col_openblas_nchw", TensorLayout::nchw, false},
      {"im2col_openblas_nhwc", TensorLayout::nhwc, false},
#if GPUBENCH_HAVE_CUDNN
      {"cudnn_nchw", TensorLayout::nchw, true},
      {"cudnn_nhwc", TensorLayout::nhwc, true},
#endif
  };
  return all;
}

std::vector<std::string> modes_of(const Implementation& impl) {
  if (!impl.on_gpu) return {"host"};
  return {"resident", "transfer_pinned"};
}

// The precisions cuDNN runs here, with the engines each takes (kernels/conv2d_cudnn.hpp);
// their formats are common/precision.hpp's (FP16 writes FP16). The CPU runs fp32 only.
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

std::vector<Precision> precisions_of(const Implementation& impl) {
  if (!impl.on_gpu) return {Precision::fp32};
  std::vector<Precision> ids;
  for (const PrecisionUse& use : precision_uses()) ids.push_back(use.id);
  return ids;
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

const ConvProblem* problem_or_skip(benchmark::State& state, Conv2dShape shape) {
  static std::unique_ptr<ConvProblem> current;
  if (!host_memory_fits(state, host_bytes_needed(shape))) return nullptr;
  if (!current || current->shape.height != shape.height || current->shape.batch != shape.batch) {
    current.reset();
    auto problem = std::make_unique<ConvProblem>();
    problem->shape = shape;
    problem->input = random_uniform(shape.input_elements(), configuration_seed(configuration_of(shape), 0));
    problem->filter = random_uniform(shape.filter_elements(), configuration_seed(configuration_of(shape), 1));
    current = std::move(problem);
  }
  return current.get();
}

// The output (as FP32 values, in `layout`) against FP64 sums of the same FP32 inputs, within
// the precision's bound 4 u_in + 2 u_out + 16 u_acc sqrt(k) (common/precision.hpp); for fp32
// that is verify_conv2d's own 16 u sqrt(k) plus 2 u. TF32 and FP16 round every input element
// to 11 significant bits before multiplying (relative 2^-11; up to 2^-10 where TF32
// truncates), so each product is off by up to twice that, with random signs: about 0.8 u_in
// rms relative to the result (2.2 u_in if TF32 truncates, its error being one-sided), inside
// the 4 u_in term. FP16 also rounds each output element to FP16: the 2 u_out term. A wrong
// element or index (errors near 1) still exceeds the bound by orders of magnitude.
Verification verify_output(const std::vector<float>& output, const ConvProblem& problem, TensorLayout layout,
                           Precision precision) {
  Verification v = verify_conv2d(output.data(), problem.input.data(), problem.filter.data(), problem.shape, layout,
                                 configuration_seed(configuration_of(problem.shape), 2));
  v.tolerance = precision_tolerance(precision, problem.shape.accumulation_length());
  return v;
}

void report_counters(benchmark::State& state, const Conv2dShape& s, const Verification& verdict,
                     double bytes_transferred) {
  state.counters["flop"] = s.flop();
  state.counters["samples"] = s.batch;
  state.counters["bytes_transferred"] = bytes_transferred;
  state.counters["rel_fro_error"] = verdict.rel_fro_error;
  state.counters["max_rel_error"] = verdict.max_rel_error;
  state.counters["tolerance"] = verdict.tolerance.max_rel;
  state.counters["n"] = s.height;
  state.counters["batch"] = s.batch;
}

// --- CPU entries ----------------------------------------------------------------------------
// The output and verdict of one entry, kept across Google Benchmark's repeated calls of it:
// at batch 256 verifying again would cost more than a repetition.
struct CpuEntryState {
  std::string name;
  std::vector<float> output;
  Verification verdict;
};

std::unique_ptr<CpuEntryState> prepare_cpu_entry(const Implementation& impl, const ConvProblem& problem,
                                                 const std::string& name) {
  auto entry = std::make_unique<CpuEntryState>();
  entry->name = name;
  // Poisoned with NaN: an element never written fails verification.
  entry->output.assign(problem.shape.output_elements(), std::numeric_limits<float>::quiet_NaN());
  conv2d_im2col_openblas(problem.input.data(), problem.filter.data(), entry->output.data(), problem.shape,
                         impl.layout);  // also the warm-up (thread pools, column buffer)
  entry->verdict = verify_output(entry->output, problem, impl.layout, Precision::fp32);
  return entry;
}

void run_cpu_entry(benchmark::State& state, const Implementation& impl, Conv2dShape shape, const std::string& name) {
  static std::unique_ptr<CpuEntryState> current;
  const ConvProblem* problem = problem_or_skip(state, shape);
  if (!problem) return;
  if (!current || current->name != name) {
    current.reset();
    current = prepare_cpu_entry(impl, *problem, name);
  }
  if (!current->verdict.passed()) {
    state.SkipWithError(("wrong result: " + current->verdict.describe()).c_str());
    return;
  }
  float* output = current->output.data();
  for (auto _ : state) {
    conv2d_im2col_openblas(problem->input.data(), problem->filter.data(), output, shape, impl.layout);
    benchmark::DoNotOptimize(output);
    benchmark::ClobberMemory();
  }
  report_counters(state, shape, current->verdict, 0.0);
  state.counters["threads"] = openblas_get_num_threads();
}

#if GPUBENCH_HAVE_CUDNN
// --- GPU entries ------------------------------------------------------------------------------
// Buffers, plan and verdict of one configuration (implementation, precision, n, batch), kept
// across Google Benchmark's repeated calls and shared by its two modes, which run one after
// the other: the engine search and the verification then run once per configuration.
struct GpuEntryState {
  std::string configuration;
  std::unique_ptr<DeviceBuffer<std::uint8_t>> input, filter, output;  // in the precision's storage format
  std::unique_ptr<CudnnConv2dPlan> plan;
  std::unique_ptr<PinnedBuffer<std::uint8_t>> pinned_input, pinned_output;  // made for transfer_pinned
  double device_bytes = 0;  // measured: free device memory before minus after allocating
  Verification verdict;
};

std::unique_ptr<DeviceBuffer<std::uint8_t>> upload(const std::vector<std::uint8_t>& bytes) {
  auto buffer = std::make_unique<DeviceBuffer<std::uint8_t>>(bytes.size());
  CUDA_CHECK(cudaMemcpy(buffer->get(), bytes.data(), bytes.size(), cudaMemcpyHostToDevice));
  return buffer;
}

// Inputs converted to the precision on the host (FP16: rounded to nearest even), the
// engine chosen on them, then one run into an output poisoned with NaN (all-ones bits
// are NaN in FP32 and FP16 alike), read back and verified.
std::unique_ptr<GpuEntryState> prepare_gpu_entry(const Implementation& impl, Precision precision,
                                                 const ConvProblem& problem, const std::string& configuration) {
  const Conv2dShape s = problem.shape;
  const double element = static_cast<double>(conv2d_element_bytes(precision));
  const double free_before =
      require_device_memory(element * (s.input_elements() + s.filter_elements() + s.output_elements()));
  auto entry = std::make_unique<GpuEntryState>();
  entry->configuration = configuration;
  entry->input = upload(encode_conv2d_tensor(problem.input, precision));
  entry->filter = upload(encode_conv2d_tensor(problem.filter, precision));
  entry->output = std::make_unique<DeviceBuffer<std::uint8_t>>(static_cast<std::size_t>(element) * s.output_elements());
  entry->plan = std::make_unique<CudnnConv2dPlan>(s, impl.layout, precision, entry->input->get(),
                                                  entry->filter->get(), entry->output->get());
  entry->device_bytes = free_before - static_cast<double>(device_free_bytes());  // includes the workspace
  CUDA_CHECK(cudaMemset(entry->output->get(), 0xFF, entry->output->bytes()));
  entry->plan->run(entry->input->get(), entry->filter->get(), entry->output->get());
  std::vector<std::uint8_t> output(entry->output->bytes());
  CUDA_CHECK(cudaMemcpy(output.data(), entry->output->get(), output.size(), cudaMemcpyDeviceToHost));
  entry->verdict = verify_output(decode_conv2d_tensor(output, precision), problem, impl.layout, precision);
  return entry;
}

// Pinned host copies for transfer_pinned: the input already converted (copied back from the
// device, so both modes time the same bytes) and room for the output.
void add_pinned_copies(GpuEntryState& entry) {
  entry.pinned_input = std::make_unique<PinnedBuffer<std::uint8_t>>(entry.input->bytes());
  entry.pinned_output = std::make_unique<PinnedBuffer<std::uint8_t>>(entry.output->bytes());
  CUDA_CHECK(cudaMemcpy(entry.pinned_input->get(), entry.input->get(), entry.input->bytes(), cudaMemcpyDeviceToHost));
}

void time_gpu_entry(benchmark::State& state, GpuEntryState& entry, bool copies_timed) {
  const auto run_once = [&] {
    if (copies_timed)
      CUDA_CHECK(cudaMemcpyAsync(entry.input->get(), entry.pinned_input->get(), entry.input->bytes(),
                                 cudaMemcpyHostToDevice, 0));
    entry.plan->run(entry.input->get(), entry.filter->get(), entry.output->get());
    if (copies_timed)
      CUDA_CHECK(cudaMemcpyAsync(entry.pinned_output->get(), entry.output->get(), entry.output->bytes(),
                                 cudaMemcpyDeviceToHost, 0));
  };
  run_once();  // warm-up of this mode
  CUDA_CHECK(cudaDeviceSynchronize());
  EventTimer timer;
  TelemetryWindow telemetry;  // clocks, power, energy and utilization over the timed loop
  for (auto _ : state) {
    timer.start();
    run_once();
    state.SetIterationTime(timer.stop_seconds());
  }
  report_counters(state, entry.plan->shape(), entry.verdict,
                  copies_timed ? static_cast<double>(entry.input->bytes() + entry.output->bytes()) : 0.0);
  state.counters["device_bytes"] = entry.device_bytes;
  state.counters["workspace_bytes"] = static_cast<double>(entry.plan->workspace_bytes());
  // The engine's global index twice: `engine` is its name here, `algorithm` the counter the
  // driver reads for the library's choice (scripts/gpubench_driver/gbench.py).
  state.counters["engine"] = static_cast<double>(entry.plan->engine());
  state.counters["algorithm"] = static_cast<double>(entry.plan->engine());
  state.counters["tensor_cores"] = entry.plan->tensor_cores() ? 1 : 0;
  state.SetLabel(entry.plan->engine_description());  // counters are numbers; the engine in words
  telemetry.report(state);
}

void run_gpu_entry(benchmark::State& state, const Implementation& impl, Precision precision, const std::string& mode,
                   Conv2dShape shape, const std::string& configuration) {
  static std::unique_ptr<GpuEntryState> current;
  guard_gpu_entry(state, [&] {
    const ConvProblem* problem = problem_or_skip(state, shape);
    if (!problem) return;
    if (!current || current->configuration != configuration) {
      current.reset();
      current = prepare_gpu_entry(impl, precision, *problem, configuration);
    }
    if (!current->verdict.passed()) {
      state.SkipWithError(
          ("wrong result: " + current->verdict.describe() + " (cuDNN " + current->plan->engine_description() + ")")
              .c_str());
      return;
    }
    const bool copies_timed = mode == "transfer_pinned";
    if (copies_timed && !current->pinned_input) add_pinned_copies(*current);
    time_gpu_entry(state, *current, copies_timed);
  }, [&] { current.reset(); });
}
#endif  // GPUBENCH_HAVE_CUDNN

// --- registration ----------------------------------------------------------------------------
std::string entry_name(const Implementation& impl, const std::string& mode, Precision precision, Conv2dShape s) {
  return std::string("conv2d/") + impl.id + (impl.on_gpu ? "/gpu/" : "/cpu/") + mode + "/" +
         precision_info(precision).name + "/n:" + std::to_string(s.height) + "/batch:" + std::to_string(s.batch);
}

void register_entry(const Implementation& impl, const std::string& mode, Precision precision, Conv2dShape shape) {
  const std::string name = entry_name(impl, mode, precision, shape);
  benchmark::internal::Benchmark* entry = nullptr;
  if (impl.on_gpu) {
#if GPUBENCH_HAVE_CUDNN
    const std::string configuration = entry_name(impl, "", precision, shape);  // the name without its mode
    entry = benchmark::RegisterBenchmark(name.c_str(), [&impl, precision, mode, shape,
                                                        configuration](benchmark::State& state) {
      run_gpu_entry(state, impl, precision, mode, shape, configuration);
    });
    entry->UseManualTime();
#endif
  } else {
    entry = benchmark::RegisterBenchmark(name.c_str(), [&impl, shape, name](benchmark::State& state) {
      run_cpu_entry(state, impl, shape, name);
    });
    entry->UseRealTime();
  }
  entry->Unit(benchmark::kMicrosecond);
}

// For each configuration its modes are registered one after the other, so they share its state.
void register_entries(const StudyOptions& options, bool gpu_usable) {
  for (int n : options.sizes.empty() ? default_sizes() : options.sizes)
    for (int batch : options.batches.empty() ? default_batches() : options.batches)
      for (const Implementation& impl : implementations()) {
        const int cap = size_cap(options, impl.id, 0);  // no default caps
        if (!is_selected(options.impls, impl.id) || (cap > 0 && n > cap)) continue;
        if (impl.on_gpu && (!gpu_usable || options.cpu_only)) continue;
        for (Precision precision : precisions_of(impl))
          for (const std::string& mode : modes_of(impl))
            if (is_selected(options.modes, mode)) register_entry(impl, mode, precision, layer_of(n)->shape(batch));
      }
}

// study_main checks the flags every study shares; which sizes exist is this study's own
// rule, so --sizes is checked first, on a copy of argv (parsing removes the flags it reads).
// Any usage error is reported as study_main reports one. Returns the exit status, 0 to go on.
// Sizes name layers: an n without a layer is a usage error naming the valid ones.
void check_sizes(const StudyOptions& options) {
  for (int n : options.sizes) {
    if (layer_of(n)) continue;
    std::string valid;
    for (int size : default_sizes()) valid += (valid.empty() ? "" : ", ") + std::to_string(size);
    throw UsageError("--sizes: no layer with n=" + std::to_string(n) + " (the layers have n = " + valid + ")");
  }
}

// --- description ------------------------------------------------------------------------------
std::string describe_layer(const Layer& layer) {
  const Conv2dShape s = layer.shape(1);
  return "{\"n\": " + std::to_string(layer.n) + ", \"role\": " + json_string(layer.role) +
         ", \"in_channels\": " + std::to_string(s.in_channels) + ", \"out_channels\": " +
         std::to_string(s.out_channels) + ", \"kernel\": " + std::to_string(s.kernel) +
         ", \"stride\": " + std::to_string(s.stride) + ", \"padding\": " + std::to_string(s.padding) +
         ", \"height\": " + std::to_string(s.height) + ", \"width\": " + std::to_string(s.width) +
         ", \"out_height\": " + std::to_string(s.out_height()) + ", \"out_width\": " + std::to_string(s.out_width()) +
         ", \"flop_per_sample\": " + std::to_string(static_cast<long long>(s.flop())) + "}";
}

std::string describe_precision(const PrecisionUse& use) {
  const PrecisionInfo& info = precision_info(use.id);
  return "{\"id\": " + json_string(info.name) + ", \"inputs\": " + json_string(info.inputs) +
         ", \"accumulate\": " + json_string(info.accumulate) + ", \"output\": " + json_string(info.output) +
         ", \"cudnn_math\": " + json_string(use.cudnn_math) + ", \"tolerance\": " + json_string(tolerance_rule()) +
         "}";
}

std::string describe_implementation(const Implementation& impl) {
  const auto precision_name = [](Precision p) { return json_string(precision_info(p).name); };
  return "{" + implementation_fields(impl.id, impl.on_gpu, modes_of(impl), 0, nullptr) +
         ", \"layout\": " + json_string(layout_name(impl.layout)) +
         ", \"precisions\": " + json_list(precisions_of(impl), precision_name) + "}";
}

#if GPUBENCH_HAVE_CUDNN
std::string describe_cudnn() {
  return "{" + json_availability("") + ", \"version\": " + json_string(cudnn_library_version()) +
         ", \"header_version\": " + json_string(cudnn_header_version()) + "}";
}
#else
std::string describe_cudnn() {
  const std::string reason = GPUBENCH_HAVE_CUDA ? "cuDNN 9 was not found when this build was configured "
                                                  "(cmake/FindCUDNN.cmake; set CUDNN_ROOT to point at one)"
                                                : "this build has no GPU side (no CUDA compiler was found)";
  return "{" + json_availability(reason) + ", \"version\": null, \"header_version\": null}";
}
#endif

// What the GPU entries' `engine` counter means: cuDNN's engines have numbers, no names.
constexpr const char* kEngineNotes =
    "engine (and algorithm, the same number): the global index of the cuDNN engine chosen for the configuration "
    "(CUDNN_ATTR_ENGINE_GLOBAL_INDEX), the fastest of up to 10 engine configurations (cuDNN's heuristics, then its "
    "fallback list) timed on the entry's buffers; its meaning may change between cuDNN "
    "versions. tensor_cores: 1 when the engine has the numerical note CUDNN_NUMERICAL_NOTE_TENSOR_CORE. Each "
    "entry's label describes the engine: its numerical notes, its knob choices (kN=V, N a cudnnBackendKnobType_t "
    "value) and how many engine configurations were timed.";

// Whether the GPU entries' utilization counters can be sampled (NVML), and why not.
std::string describe_study() {
  const auto number = [](int v) { return std::to_string(v); };
  return "\"default_sizes\": " + json_list(default_sizes(), number) +
         ", \"default_batches\": " + json_list(default_batches(), number) +
         ", \"layers\": " + json_list(layers(), describe_layer) +
         ", \"precisions\": " + json_list(precision_uses(), describe_precision) +
         ", \"implementations\": " + json_list(implementations(), describe_implementation) +
         ", \"cudnn\": " + describe_cudnn() + ", \"engine_notes\": " + json_string(kEngineNotes) +
         ", \"utilization\": " + utilization_description();
}

}  // namespace
}  // namespace gpubench

int main(int argc, char** argv) {
  using namespace gpubench;
  StudyDefinition study;
  study.name = "conv2d";
  for (const Implementation& impl : implementations()) study.impl_ids.push_back(impl.id);
  study.modes = {"host", "resident", "transfer_pinned"};
  study.batch_axis = true;
  study.describe = describe_study;
  study.register_entries = register_entries;
  study.check_options = check_sizes;
  return study_main(argc, argv, study);
}
