#include "conv2d_cudnn.hpp"

#include <algorithm>
#include <array>
#include <cstdio>
#include <map>
#include <optional>
#include <stdexcept>
#include <utility>

#include "core/gpu_runtime.hpp"
#include "core/precision_codec.hpp"
#include "core/system.hpp"
#include "cudnn_backend.hpp"

namespace gpubench {
namespace {

// The tensors' data type: the storage format of core/precision_codec.hpp's conv2d codec.
cudnnDataType_t storage_type(Precision precision) {
  return precision == Precision::fp16 ? CUDNN_DATA_HALF : CUDNN_DATA_FLOAT;
}

// --- the operation graph ----------------------------------------------------------------------
// The variant pack names each tensor by the unique id its descriptor was given.
constexpr std::int64_t kInputId = 'x', kFilterId = 'w', kOutputId = 'y';
// The alignment the tensor descriptors promise; every address run() is given is checked
// against it. cudaMalloc's are 256-byte aligned.
constexpr std::int64_t kTensorAlignment = 16;

using Dims = std::array<std::int64_t, 4>;

// Backend tensors always take their dimensions in N, C, H, W order (K, C, R, S for the
// filter): the layout is only in the strides, NHWC (KRSC) having C innermost.
Dims strides_of(const Dims& dims, TensorLayout layout) {
  const std::int64_t c = dims[1], h = dims[2], w = dims[3];
  if (layout == TensorLayout::nchw) return {c * h * w, h * w, w, 1};
  return {h * w * c, 1, w * c, c};
}

CudnnDescriptor make_tensor(std::int64_t id, const Dims& dims, TensorLayout layout, cudnnDataType_t type) {
  CudnnDescriptor tensor(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
  const Dims strides = strides_of(dims, layout);
  tensor.set_value(CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, type);
  tensor.set_values(CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims.data());
  tensor.set_values(CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, strides.data());
  tensor.set_value(CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, id);
  tensor.set_value(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, kTensorAlignment);
  tensor.finalize();
  return tensor;
}

// Cross-correlation (the filter is not flipped, as conv2d_cpu computes it), symmetric zero
// padding, dilation 1, accumulating in FP32 for FP16 data too.
CudnnDescriptor make_convolution(const Conv2dShape& s) {
  CudnnDescriptor convolution(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
  const std::int64_t spatial_dims = 2;
  const std::array<std::int64_t, 2> padding{s.padding, s.padding}, stride{s.stride, s.stride}, dilation{1, 1};
  convolution.set_value(CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, CUDNN_DATA_FLOAT);
  convolution.set_value(CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, CUDNN_CROSS_CORRELATION);
  convolution.set_value(CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, spatial_dims);
  convolution.set_values(CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, 2, padding.data());
  convolution.set_values(CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, 2, padding.data());
  convolution.set_values(CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, 2, stride.data());
  convolution.set_values(CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, 2, dilation.data());
  convolution.finalize();
  return convolution;
}

// Y = 1 * conv(X, W) + 0 * Y: beta 0, the output is written, never read. The scaling factors
// are float for FP32 and FP16 data alike (cuDNN takes double only with FP64 compute).
CudnnDescriptor make_forward_operation(const CudnnDescriptor& x, const CudnnDescriptor& w, const CudnnDescriptor& y,
                                       const CudnnDescriptor& convolution) {
  CudnnDescriptor operation(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR);
  const float alpha = 1.0f, beta = 0.0f;
  operation.set_descriptor(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, x);
  operation.set_descriptor(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, w);
  operation.set_descriptor(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, y);
  operation.set_descriptor(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, convolution);
  operation.set_value(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_TYPE_FLOAT, alpha);
  operation.set_value(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, CUDNN_TYPE_FLOAT, beta);
  operation.finalize();
  return operation;
}

// The graph of the one operation. The handle attribute is deprecated in newer cuDNN 9 releases
// (in favour of a device-properties descriptor those add) but is what every cuDNN 9 takes.
CudnnDescriptor make_graph(const CudnnDescriptor& operation) {
  CudnnDescriptor graph(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
  graph.set_descriptor(CUDNN_ATTR_OPERATIONGRAPH_OPS, operation);
  graph.set_value(CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, cudnn_handle());
  graph.finalize();
  return graph;
}

// --- the precision's rule ---------------------------------------------------------------------
// Why `precision` passes over an engine with these notes, or nullptr when it takes it. On FP32
// data a tensor-core engine computes in TF32: that is the tf32 entry, not fp32. Down-converted
// inputs (e.g. FP32 to FP16) and reductions in less than FP32 break the formats every entry
// promises (precision.hpp); torch also passes over the first.
const char* refusal(Precision precision, const EngineInfo& engine) {
  if (engine.has(CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS)) return "down-converts its inputs";
  if (engine.has(CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION)) return "reduces in less than FP32";
  if (precision == Precision::fp32 && engine.has(CUDNN_NUMERICAL_NOTE_TENSOR_CORE))
    return "uses tensor cores (fp32 takes none)";
  return nullptr;
}

// --- why engines were passed over ---------------------------------------------------------------
// Every reason an engine configuration (or a heuristics mode) was passed over, with who, for
// the message of a configuration no engine can run. Which exception that message travels in
// follows the reasons: a workspace or allocation that did not fit makes it a does-not-fit skip,
// a status outside the not-supported category an error, and otherwise it is an unsupported skip.
class Rejections {
 public:
  void refuse(const std::string& who, const std::string& reason) { by_reason_[reason].push_back(who); }

  void fail(const std::string& who, cudnnStatus_t status) {
    const std::string reason = cudnnGetErrorString(status);
    const std::string detail = cudnn_last_error_detail();
    if (!detail.empty()) first_detail_.emplace(reason, detail);  // kept only for the first one
    out_of_memory_ = out_of_memory_ || is_cudnn_allocation_failure(status);
    fault_ = fault_ || (!is_cudnn_unsupported(status) && !is_cudnn_allocation_failure(status));
    refuse(who, reason);
  }

  void does_not_fit(const std::string& who, std::size_t workspace_bytes, double available_bytes) {
    out_of_memory_ = true;
    refuse(who + " (" + format_bytes(static_cast<double>(workspace_bytes)) + ")",
           "workspace over the " + format_bytes(available_bytes) + " free less headroom");
  }

  [[noreturn]] void throw_none_usable() const {
    const std::string message = "no cuDNN engine for this configuration (" + summary() + ")";
    if (out_of_memory_) throw GpuOutOfMemory(message);
    if (fault_) throw GpuError(message);
    throw CudnnUnsupported(message);
  }

 private:
  // "CUDNN_STATUS_NOT_SUPPORTED_SHAPE [first: cuDNN's detail]: engine 3, engine 5; ..."
  std::string summary() const {
    if (by_reason_.empty()) return "the heuristics proposed none";
    std::string text;
    for (const auto& [reason, whom] : by_reason_) {
      text += (text.empty() ? "" : "; ") + reason;
      const auto detail = first_detail_.find(reason);
      if (detail != first_detail_.end()) text += " [first: " + detail->second + "]";
      for (std::size_t i = 0; i < whom.size(); ++i) text += (i ? ", " : ": ") + whom[i];
    }
    return text;
  }

  std::map<std::string, std::vector<std::string>> by_reason_;
  std::map<std::string, std::string> first_detail_;
  bool out_of_memory_ = false;
  bool fault_ = false;
};

// --- candidates -----------------------------------------------------------------------------------
// How many engine configurations are timed at most: torch's default (cudnn.benchmark_limit =
// 10). With 16, the GPU tests on the H100 met engine 71 faulting (misaligned address) on a
// 3-channel 7x7 stride-2 NCHW TF32 convolution, a proposal torch never times. Each is run
// once to warm up (kernel loading, caches), then kTimedRuns times; the median counts.
constexpr std::size_t kMaxCandidates = 10;
constexpr int kTimedRuns = 5;
// Device memory left free when deciding whether a workspace fits: cuDNN loads kernels and
// keeps small buffers of its own besides the workspace it is given.
constexpr double kWorkspaceHeadroomBytes = 256.0 * 1024 * 1024;

// One engine configuration that can run the graph, with its finalized execution plan.
struct Candidate {
  CudnnDescriptor config;
  CudnnDescriptor plan;
  EngineInfo engine;
  std::size_t workspace_bytes = 0;
  double seconds = 0;  // the median of its timed runs, once measured
};

// The device addresses one execution reads and writes.
struct TensorPointers {
  const void* input;
  const void* filter;
  void* output;

  bool operator==(const TensorPointers& o) const {
    return input == o.input && filter == o.filter && output == o.output;
  }
};

// Device memory of `bytes`, or none for 0 bytes (cuDNN then takes a null pointer).
std::unique_ptr<DeviceBuffer<std::uint8_t>> device_bytes_or_none(std::size_t bytes) {
  return bytes > 0 ? std::make_unique<DeviceBuffer<std::uint8_t>>(bytes) : nullptr;
}

void* data_or_null(const std::unique_ptr<DeviceBuffer<std::uint8_t>>& buffer) {
  return buffer ? buffer->get() : nullptr;
}

// The tensor descriptors promise kTensorAlignment; an address that breaks the promise would
// make cuDNN's vectorized loads fault or read wrongly.
void require_aligned(const void* address) {
  if (reinterpret_cast<std::uintptr_t>(address) % kTensorAlignment != 0)
    throw std::invalid_argument("cuDNN convolution: a tensor address is not " + std::to_string(kTensorAlignment) +
                                "-byte aligned");
}

// What one execution reads and writes: the tensors' addresses, by the unique ids of their
// descriptors, and the workspace.
CudnnDescriptor make_variant_pack(const TensorPointers& p, void* workspace) {
  require_aligned(p.input);
  require_aligned(p.filter);
  require_aligned(p.output);
  CudnnDescriptor pack(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
  const std::array<std::int64_t, 3> ids{kInputId, kFilterId, kOutputId};
  // cuDNN takes every data pointer as void*; it only reads the input and the filter.
  const std::array<void*, 3> pointers{const_cast<void*>(p.input), const_cast<void*>(p.filter), p.output};
  pack.set_values(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 3, ids.data());
  pack.set_values(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 3, pointers.data());
  pack.set_value(CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, workspace);
  pack.finalize();
  return pack;
}

// The engine configurations cuDNN's heuristics propose for the graph in `mode`, best predicted
// first; none when the mode cannot handle the graph (its status is kept among the rejections).
std::vector<CudnnDescriptor> heuristic_configs(const CudnnDescriptor& graph, cudnnBackendHeurMode_t mode,
                                               const char* mode_name, Rejections& rejections) {
  CudnnDescriptor heuristics(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
  heuristics.set_descriptor(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, graph);
  heuristics.set_value(CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, mode);
  const cudnnStatus_t status = heuristics.try_finalize();
  if (status != CUDNN_STATUS_SUCCESS) {
    rejections.fail(std::string("heuristics ") + mode_name, status);
    return {};
  }
  // Counted first: cuDNN fills descriptors the caller has created.
  const std::int64_t count = descriptor_count(heuristics, CUDNN_ATTR_ENGINEHEUR_RESULTS);
  return read_descriptors(heuristics, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, count);
}

// Finalizing the plan is where cuDNN says whether the engine configuration supports this
// graph on this device, so its status is the caller's to judge.
cudnnStatus_t finalize_plan(CudnnDescriptor& plan, const CudnnDescriptor& config) {
  plan.set_value(CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, cudnn_handle());
  plan.set_descriptor(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, config);
  return plan.try_finalize();
}

// A candidate from one engine configuration, unless the precision refuses its engine, its
// plan does not finalize, or its workspace is over `available_bytes`.
std::optional<Candidate> make_candidate(CudnnDescriptor config, EngineInfo engine, Precision precision,
                                        double available_bytes, Rejections& rejections) {
  const std::string who = engine_name(engine.index);
  if (const char* why = refusal(precision, engine)) {
    rejections.refuse(who, why);
    return std::nullopt;
  }
  CudnnDescriptor plan(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
  const cudnnStatus_t status = finalize_plan(plan, config);
  if (status != CUDNN_STATUS_SUCCESS) {
    rejections.fail(who, status);
    return std::nullopt;
  }
  const auto workspace = static_cast<std::size_t>(get_int64(plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE));
  if (static_cast<double>(workspace) > available_bytes) {
    rejections.does_not_fit(who, workspace, available_bytes);
    return std::nullopt;
  }
  return Candidate{std::move(config), std::move(plan), std::move(engine), workspace, 0.0};
}

bool has_configuration(const std::vector<Candidate>& candidates, const EngineInfo& engine) {
  return std::any_of(candidates.begin(), candidates.end(),
                     [&engine](const Candidate& c) { return c.engine.same_configuration(engine); });
}

// Adds candidates from `configs`, in their order, until there are kMaxCandidates; a
// configuration already among them (proposed twice) is not taken twice.
void add_candidates(std::vector<Candidate>& candidates, std::vector<CudnnDescriptor> configs, Precision precision,
                    double available_bytes, Rejections& rejections) {
  for (CudnnDescriptor& config : configs) {
    if (candidates.size() == kMaxCandidates) return;
    EngineInfo engine = engine_info(config);
    if (has_configuration(candidates, engine)) continue;
    std::optional<Candidate> candidate =
        make_candidate(std::move(config), std::move(engine), precision, available_bytes, rejections);
    if (candidate) candidates.push_back(std::move(*candidate));
  }
}

// Runs the candidate on the configuration's own buffers with a workspace of its own: a
// warm-up, then kTimedRuns runs each between two CUDA events; its `seconds` is their median.
// False, with the status among the rejections, when its first run fails.
bool measure(Candidate& candidate, const TensorPointers& tensors, Rejections& rejections) {
  const auto workspace = device_bytes_or_none(candidate.workspace_bytes);
  const CudnnDescriptor pack = make_variant_pack(tensors, data_or_null(workspace));
  const cudnnStatus_t status = cudnnBackendExecute(cudnn_handle(), candidate.plan.get(), pack.get());
  // A fault in an engine's kernel is sticky (the process's CUDA context is lost), also when the
  // run reports a failure status: name the engine before anything else runs.
  const cudaError_t fault = cudaDeviceSynchronize();
  if (fault != cudaSuccess)
    throw GpuError(engine_name(candidate.engine.index) + " faulted on its first run (" +
                   cudnnGetErrorString(status) + "): " + cudaGetErrorName(fault));
  if (status != CUDNN_STATUS_SUCCESS) {
    rejections.fail(engine_name(candidate.engine.index), status);
    return false;
  }
  EventTimer timer;
  std::array<double, kTimedRuns> seconds{};
  for (double& s : seconds) {
    timer.start();
    CUDNN_CHECK(cudnnBackendExecute(cudnn_handle(), candidate.plan.get(), pack.get()));
    s = timer.stop_seconds();
  }
  std::nth_element(seconds.begin(), seconds.begin() + kTimedRuns / 2, seconds.end());
  candidate.seconds = seconds[kTimedRuns / 2];
  return true;
}

// "12 k2=3 k15=1": what identifies an engine configuration across processes.
std::string choice_of(const EngineInfo& engine) { return std::to_string(engine.index) + engine.knobs; }

// "engine 12 (tensor cores) knobs k2=3 k15=1: fastest of 10, 53.1 us"; `how` says how it was chosen.
std::string describe(const Candidate& chosen, const std::string& how) {
  std::string notes;
  for (cudnnBackendNumericalNote_t note : chosen.engine.notes)
    notes += (notes.empty() ? "" : ", ") + std::string(note_name(note));
  char timing[32];
  std::snprintf(timing, sizeof timing, ", %.1f us", chosen.seconds * 1e6);
  const std::string& knobs = chosen.engine.knobs;
  return engine_name(chosen.engine.index) + (notes.empty() ? "" : " (" + notes + ")") +
         (knobs.empty() ? "" : " knobs" + knobs) + ": " + how + timing;
}

// The held engine configuration among the candidates, measured, or none when the heuristics did
// not propose it here or it does not run.
std::optional<std::size_t> take_held(std::vector<Candidate>& candidates, const std::string& held,
                                     const TensorPointers& tensors, Rejections& rejections) {
  for (std::size_t i = 0; i < candidates.size(); ++i)
    if (choice_of(candidates[i].engine) == held)
      return measure(candidates[i], tensors, rejections) ? std::optional<std::size_t>(i) : std::nullopt;
  return std::nullopt;
}

// The measured choice, as torch's cudnn.benchmark makes it: the candidates of heuristics mode A,
// then for the places left those of cuDNN's fallback list; each timed, the fastest kept. Other
// engines with their default knobs, which torch does not try, are not tried either: with them the
// GPU tests on the H100 met a misaligned-address fault on small odd shapes, and such a fault
// poisons the process's CUDA context. A held choice (an earlier process's) is taken without timing
// the others when the heuristics propose it. Throws as Rejections::throw_none_usable says when none can run.
Candidate choose(const CudnnDescriptor& graph, Precision precision, const TensorPointers& tensors,
                 const std::optional<std::string>& held, std::string& description, bool& was_held) {
  Rejections rejections;
  const double available = std::max(static_cast<double>(device_free_bytes()) - kWorkspaceHeadroomBytes, 0.0);
  std::vector<Candidate> candidates;
  add_candidates(candidates, heuristic_configs(graph, CUDNN_HEUR_MODE_A, "mode A", rejections), precision, available,
                 rejections);
  add_candidates(candidates, heuristic_configs(graph, CUDNN_HEUR_MODE_FALLBACK, "fallback", rejections), precision,
                 available, rejections);
  std::optional<std::size_t> fastest = held ? take_held(candidates, *held, tensors, rejections) : std::nullopt;
  was_held = fastest.has_value();
  if (was_held) {
    description = describe(candidates[*fastest], "held from an earlier process");
    return std::move(candidates[*fastest]);
  }
  std::size_t measured = 0;
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    if (!measure(candidates[i], tensors, rejections)) continue;
    ++measured;
    if (!fastest || candidates[i].seconds < candidates[*fastest].seconds) fastest = i;
  }
  if (!fastest) rejections.throw_none_usable();
  description = describe(candidates[*fastest], "fastest of " + std::to_string(measured) +
                                                   (held ? " (the held engine " + *held + " was not usable here)" : ""));
  return std::move(candidates[*fastest]);
}

Dims input_dims(const Conv2dShape& s) { return {s.batch, s.in_channels, s.height, s.width}; }
Dims filter_dims(const Conv2dShape& s) { return {s.out_channels, s.in_channels, s.kernel, s.kernel}; }
Dims output_dims(const Conv2dShape& s) { return {s.batch, s.out_channels, s.out_height(), s.out_width()}; }

}  // namespace

// The chosen plan with the descriptors it was built from, its workspace and run()'s variant pack.
struct CudnnConv2dPlan::Resources {
  CudnnDescriptor input, filter, output, convolution, operation, graph;
  std::string description;
  bool held = false;  // the engine is an earlier process's choice, not timed against the others here
  Candidate chosen;
  std::unique_ptr<DeviceBuffer<std::uint8_t>> workspace;  // none when the plan needs none
  // run()'s variant pack, made again only when run() is given other addresses: making one
  // per call would put host work between the timer's start event and the convolution.
  std::optional<CudnnDescriptor> pack;
  TensorPointers packed{nullptr, nullptr, nullptr};

  // Filters follow the data layout (KCRS for NCHW, KRSC for NHWC), as core/operations.hpp says.
  Resources(const Conv2dShape& s, TensorLayout layout, Precision precision, const TensorPointers& tensors,
            const std::optional<std::string>& held_engine)
      : input(make_tensor(kInputId, input_dims(s), layout, storage_type(precision))),
        filter(make_tensor(kFilterId, filter_dims(s), layout, storage_type(precision))),
        output(make_tensor(kOutputId, output_dims(s), layout, storage_type(precision))),
        convolution(make_convolution(s)),
        operation(make_forward_operation(input, filter, output, convolution)),
        graph(make_graph(operation)),
        chosen(choose(graph, precision, tensors, held_engine, description, held)),
        workspace(device_bytes_or_none(chosen.workspace_bytes)) {}
};

CudnnConv2dPlan::CudnnConv2dPlan(Conv2dShape shape, TensorLayout layout, Precision precision, const void* input,
                                 const void* filter, void* output, const std::optional<std::string>& held_engine)
    : shape_(shape), layout_(layout), precision_(precision) {
  require_conv2d_precision(precision);
  resources_ =
      std::make_unique<Resources>(shape, layout, precision, TensorPointers{input, filter, output}, held_engine);
}

CudnnConv2dPlan::~CudnnConv2dPlan() = default;

std::int64_t CudnnConv2dPlan::engine() const { return resources_->chosen.engine.index; }

const std::string& CudnnConv2dPlan::engine_description() const { return resources_->description; }

std::string CudnnConv2dPlan::engine_choice() const { return choice_of(resources_->chosen.engine); }

bool CudnnConv2dPlan::engine_held() const { return resources_->held; }

bool CudnnConv2dPlan::tensor_cores() const { return resources_->chosen.engine.has(CUDNN_NUMERICAL_NOTE_TENSOR_CORE); }

std::size_t CudnnConv2dPlan::workspace_bytes() const { return resources_->chosen.workspace_bytes; }

void CudnnConv2dPlan::run(const void* input, const void* filter, void* output) const {
  Resources& r = *resources_;  // the variant pack is a cache, not part of what the plan computes
  const TensorPointers tensors{input, filter, output};
  if (!r.pack || !(tensors == r.packed)) {
    r.pack = make_variant_pack(tensors, data_or_null(r.workspace));
    r.packed = tensors;
  }
  CUDNN_CHECK(cudnnBackendExecute(cudnn_handle(), r.chosen.plan.get(), r.pack->get()));
}

}  // namespace gpubench
