#include "conv2d_cudnn.hpp"

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <map>
#include <optional>
#include <stdexcept>
#include <utility>

#include "core/gpu_runtime.hpp"
#include "core/precision_codec.hpp"
#include "core/system.hpp"
#include "cudnn_check.hpp"

namespace gpubench {
namespace {

// --- precisions -------------------------------------------------------------------------
void require_conv2d_precision(Precision precision) {
  if (precision != Precision::fp32 && precision != Precision::tf32 && precision != Precision::fp16)
    throw std::invalid_argument(std::string("cuDNN convolution has no precision ") + precision_info(precision).name +
                                " here (fp32, tf32, fp16)");
}

cudnnDataType_t storage_type(Precision precision) {
  return precision == Precision::fp16 ? CUDNN_DATA_HALF : CUDNN_DATA_FLOAT;
}

// --- cuDNN objects ------------------------------------------------------------------------
// One handle for every plan, created on first use (outside any timed region: plans are
// built before timing) and kept; it enqueues on the legacy default stream, as the study's
// CUDA-event timer records.
cudnnHandle_t cudnn_handle() {
  static const cudnnHandle_t handle = [] {
    cudnnHandle_t h = nullptr;
    CUDNN_CHECK(cudnnCreate(&h));
    return h;
  }();
  return handle;
}

// Owns one backend descriptor; movable, so candidates can be kept in a vector. Destruction
// cannot report a failure (it runs while unwinding too), so its status is not checked, as
// cudaFree's is not in DeviceBuffer.
class Descriptor {
 public:
  explicit Descriptor(cudnnBackendDescriptorType_t type) { CUDNN_CHECK(cudnnBackendCreateDescriptor(type, &handle_)); }
  ~Descriptor() {
    if (handle_) cudnnBackendDestroyDescriptor(handle_);
  }
  Descriptor(Descriptor&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
  Descriptor& operator=(Descriptor&& other) noexcept {
    std::swap(handle_, other.handle_);
    return *this;
  }
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(const Descriptor&) = delete;

  cudnnBackendDescriptor_t get() const { return handle_; }
  // The value of an attribute of type CUDNN_TYPE_BACKEND_DESCRIPTOR: an array of handles.
  const cudnnBackendDescriptor_t* as_array() const { return &handle_; }

 private:
  cudnnBackendDescriptor_t handle_ = nullptr;
};

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

Descriptor make_tensor(std::int64_t id, const Dims& dims, TensorLayout layout, cudnnDataType_t type) {
  Descriptor tensor(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
  const Dims strides = strides_of(dims, layout);
  CUDNN_CHECK(cudnnBackendSetAttribute(tensor.get(), CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &type));
  CUDNN_CHECK(cudnnBackendSetAttribute(tensor.get(), CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims.data()));
  CUDNN_CHECK(cudnnBackendSetAttribute(tensor.get(), CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, strides.data()));
  CUDNN_CHECK(cudnnBackendSetAttribute(tensor.get(), CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &id));
  CUDNN_CHECK(
      cudnnBackendSetAttribute(tensor.get(), CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &kTensorAlignment));
  CUDNN_CHECK(cudnnBackendFinalize(tensor.get()));
  return tensor;
}

// Cross-correlation (the filter is not flipped, as conv2d_cpu computes it), symmetric zero
// padding, dilation 1, accumulating in FP32 for FP16 data too.
Descriptor make_convolution(const Conv2dShape& s) {
  Descriptor convolution(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
  const cudnnDataType_t compute = CUDNN_DATA_FLOAT;
  const cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  const std::int64_t spatial_dims = 2;
  const std::array<std::int64_t, 2> padding{s.padding, s.padding}, stride{s.stride, s.stride}, dilation{1, 1};
  const cudnnBackendDescriptor_t c = convolution.get();
  CUDNN_CHECK(cudnnBackendSetAttribute(c, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &compute));
  CUDNN_CHECK(cudnnBackendSetAttribute(c, CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode));
  CUDNN_CHECK(cudnnBackendSetAttribute(c, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &spatial_dims));
  CUDNN_CHECK(cudnnBackendSetAttribute(c, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, 2, padding.data()));
  CUDNN_CHECK(cudnnBackendSetAttribute(c, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, 2, padding.data()));
  CUDNN_CHECK(cudnnBackendSetAttribute(c, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, 2, stride.data()));
  CUDNN_CHECK(cudnnBackendSetAttribute(c, CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, 2, dilation.data()));
  CUDNN_CHECK(cudnnBackendFinalize(c));
  return convolution;
}

// Y = 1 * conv(X, W) + 0 * Y: beta 0, the output is written, never read. The scaling factors
// are float for FP32 and FP16 data alike (cuDNN takes double only with FP64 compute).
Descriptor make_forward_operation(const Descriptor& x, const Descriptor& w, const Descriptor& y,
                                  const Descriptor& convolution) {
  Descriptor operation(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR);
  const float alpha = 1.0f, beta = 0.0f;
  const cudnnBackendDescriptor_t o = operation.get();
  CUDNN_CHECK(cudnnBackendSetAttribute(o, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                                       x.as_array()));
  CUDNN_CHECK(cudnnBackendSetAttribute(o, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                                       w.as_array()));
  CUDNN_CHECK(cudnnBackendSetAttribute(o, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                                       y.as_array()));
  CUDNN_CHECK(cudnnBackendSetAttribute(o, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC,
                                       CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, convolution.as_array()));
  CUDNN_CHECK(cudnnBackendSetAttribute(o, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_TYPE_FLOAT, 1, &alpha));
  CUDNN_CHECK(cudnnBackendSetAttribute(o, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, CUDNN_TYPE_FLOAT, 1, &beta));
  CUDNN_CHECK(cudnnBackendFinalize(o));
  return operation;
}

// The graph of the one operation. The handle attribute is deprecated in newer cuDNN 9 releases
// (in favour of a device-properties descriptor those add) but is what every cuDNN 9 takes.
Descriptor make_graph(const Descriptor& operation) {
  Descriptor graph(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
  const cudnnHandle_t handle = cudnn_handle();
  CUDNN_CHECK(cudnnBackendSetAttribute(graph.get(), CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                                       operation.as_array()));
  CUDNN_CHECK(cudnnBackendSetAttribute(graph.get(), CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle));
  CUDNN_CHECK(cudnnBackendFinalize(graph.get()));
  return graph;
}

// --- reading descriptors back -----------------------------------------------------------------
// The descriptors an attribute of type CUDNN_TYPE_BACKEND_DESCRIPTOR holds, up to `capacity`:
// cuDNN copies them into descriptors of `type` the caller has created, and reports how many
// the attribute has.
std::vector<Descriptor> read_descriptors(cudnnBackendDescriptor_t owner, cudnnBackendAttributeName_t attribute,
                                         cudnnBackendDescriptorType_t type, std::int64_t capacity) {
  std::vector<Descriptor> descriptors;
  std::vector<cudnnBackendDescriptor_t> handles;
  for (std::int64_t i = 0; i < capacity; ++i) {
    descriptors.emplace_back(type);
    handles.push_back(descriptors.back().get());
  }
  if (capacity == 0) return descriptors;
  std::int64_t count = 0;
  CUDNN_CHECK(
      cudnnBackendGetAttribute(owner, attribute, CUDNN_TYPE_BACKEND_DESCRIPTOR, capacity, &count, handles.data()));
  descriptors.erase(descriptors.begin() + std::clamp<std::int64_t>(count, 0, capacity), descriptors.end());
  return descriptors;
}

// An engine configuration's engine, what it says of itself, and the configuration's knobs.
struct EngineInfo {
  std::int64_t index = -1;  // CUDNN_ATTR_ENGINE_GLOBAL_INDEX
  std::vector<cudnnBackendNumericalNote_t> notes;
  std::string knobs;  // knob_text's

  bool has(cudnnBackendNumericalNote_t note) const {
    return std::find(notes.begin(), notes.end(), note) != notes.end();
  }
  bool same_configuration(const EngineInfo& other) const { return index == other.index && knobs == other.knobs; }
};

// An engine has each note at most once, so the header's count of note kinds is room for all
// of them; a newer library with more kinds reports its count, of which only these are read.
std::vector<cudnnBackendNumericalNote_t> numerical_notes(cudnnBackendDescriptor_t engine) {
  std::array<cudnnBackendNumericalNote_t, CUDNN_NUMERICAL_NOTE_TYPE_COUNT> notes{};
  std::int64_t count = 0;
  CUDNN_CHECK(cudnnBackendGetAttribute(engine, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE,
                                       static_cast<std::int64_t>(notes.size()), &count, notes.data()));
  return {notes.begin(), notes.begin() + std::clamp<std::int64_t>(count, 0, notes.size())};
}

// " k2=3 k15=1": the configuration's knob choices, by cudnnBackendKnobType_t value. A
// configuration chooses each knob at most once, so the header's count of knob kinds is room.
std::string knob_text(const Descriptor& config) {
  std::string text;
  for (const Descriptor& choice : read_descriptors(config.get(), CUDNN_ATTR_ENGINECFG_KNOB_CHOICES,
                                                   CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR, CUDNN_KNOB_TYPE_COUNTS)) {
    cudnnBackendKnobType_t type = CUDNN_KNOB_TYPE_COUNTS;
    std::int64_t value = 0, count = 0;
    CUDNN_CHECK(cudnnBackendGetAttribute(choice.get(), CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE, CUDNN_TYPE_KNOB_TYPE, 1,
                                         &count, &type));
    CUDNN_CHECK(
        cudnnBackendGetAttribute(choice.get(), CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE, CUDNN_TYPE_INT64, 1, &count, &value));
    text += " k" + std::to_string(static_cast<int>(type)) + "=" + std::to_string(value);
  }
  return text;
}

// The engine a configuration holds, what it says of itself, and the configuration's knobs.
EngineInfo engine_info(const Descriptor& config) {
  const std::vector<Descriptor> engines =
      read_descriptors(config.get(), CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_BACKEND_ENGINE_DESCRIPTOR, 1);
  if (engines.empty()) throw GpuError("cuDNN returned an engine configuration without an engine");
  EngineInfo info;
  std::int64_t count = 0;
  CUDNN_CHECK(cudnnBackendGetAttribute(engines[0].get(), CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &count,
                                       &info.index));
  info.notes = numerical_notes(engines[0].get());
  info.knobs = knob_text(config);
  return info;
}

const char* note_name(cudnnBackendNumericalNote_t note) {
  switch (note) {
    case CUDNN_NUMERICAL_NOTE_TENSOR_CORE:
      return "tensor cores";
    case CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS:
      return "down-converts inputs";
    case CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION:
      return "reduced-precision reduction";
    case CUDNN_NUMERICAL_NOTE_FFT:
      return "FFT";
    case CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC:
      return "nondeterministic";
    case CUDNN_NUMERICAL_NOTE_WINOGRAD:
      return "Winograd";
    case CUDNN_NUMERICAL_NOTE_WINOGRAD_TILE_4x4:
      return "Winograd 4x4";
    case CUDNN_NUMERICAL_NOTE_WINOGRAD_TILE_6x6:
      return "Winograd 6x6";
    case CUDNN_NUMERICAL_NOTE_WINOGRAD_TILE_13x13:
      return "Winograd 13x13";
    case CUDNN_NUMERICAL_NOTE_STRICT_NAN_PROP:
      return "strict NaN propagation";
    default:
      return "a note this header does not name";
  }
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

std::string engine_name(std::int64_t index) { return "engine " + std::to_string(index); }

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
  Descriptor config;
  Descriptor plan;
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
Descriptor make_variant_pack(const TensorPointers& p, void* workspace) {
  require_aligned(p.input);
  require_aligned(p.filter);
  require_aligned(p.output);
  Descriptor pack(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
  const std::array<std::int64_t, 3> ids{kInputId, kFilterId, kOutputId};
  // cuDNN takes every data pointer as void*; it only reads the input and the filter.
  const std::array<void*, 3> pointers{const_cast<void*>(p.input), const_cast<void*>(p.filter), p.output};
  CUDNN_CHECK(
      cudnnBackendSetAttribute(pack.get(), CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 3, ids.data()));
  CUDNN_CHECK(cudnnBackendSetAttribute(pack.get(), CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 3,
                                       pointers.data()));
  CUDNN_CHECK(
      cudnnBackendSetAttribute(pack.get(), CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &workspace));
  CUDNN_CHECK(cudnnBackendFinalize(pack.get()));
  return pack;
}

// The engine configurations cuDNN's heuristics propose for the graph in `mode`, best predicted
// first; none when the mode cannot handle the graph (its status is kept among the rejections).
std::vector<Descriptor> heuristic_configs(const Descriptor& graph, cudnnBackendHeurMode_t mode, const char* mode_name,
                                          Rejections& rejections) {
  Descriptor heuristics(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
  CUDNN_CHECK(cudnnBackendSetAttribute(heuristics.get(), CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH,
                                       CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, graph.as_array()));
  CUDNN_CHECK(cudnnBackendSetAttribute(heuristics.get(), CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode));
  const cudnnStatus_t status = cudnnBackendFinalize(heuristics.get());
  if (status != CUDNN_STATUS_SUCCESS) {
    rejections.fail(std::string("heuristics ") + mode_name, status);
    return {};
  }
  std::int64_t count = 0;  // asked first: cuDNN fills descriptors the caller has created
  CUDNN_CHECK(cudnnBackendGetAttribute(heuristics.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                                       0, &count, nullptr));
  return read_descriptors(heuristics.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, count);
}

// Finalizing the plan is where cuDNN says whether the engine configuration supports this
// graph on this device, so its status is the caller's to judge.
cudnnStatus_t finalize_plan(const Descriptor& plan, const Descriptor& config) {
  const cudnnHandle_t handle = cudnn_handle();
  CUDNN_CHECK(cudnnBackendSetAttribute(plan.get(), CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle));
  CUDNN_CHECK(cudnnBackendSetAttribute(plan.get(), CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG,
                                       CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, config.as_array()));
  return cudnnBackendFinalize(plan.get());
}

std::size_t plan_workspace_bytes(const Descriptor& plan) {
  std::int64_t bytes = 0, count = 0;
  CUDNN_CHECK(cudnnBackendGetAttribute(plan.get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1,
                                       &count, &bytes));
  return static_cast<std::size_t>(bytes);
}

// A candidate from one engine configuration, unless the precision refuses its engine, its
// plan does not finalize, or its workspace is over `available_bytes`.
std::optional<Candidate> make_candidate(Descriptor config, EngineInfo engine, Precision precision,
                                        double available_bytes, Rejections& rejections) {
  const std::string who = engine_name(engine.index);
  if (const char* why = refusal(precision, engine)) {
    rejections.refuse(who, why);
    return std::nullopt;
  }
  Descriptor plan(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
  const cudnnStatus_t status = finalize_plan(plan, config);
  if (status != CUDNN_STATUS_SUCCESS) {
    rejections.fail(who, status);
    return std::nullopt;
  }
  const std::size_t workspace = plan_workspace_bytes(plan);
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
void add_candidates(std::vector<Candidate>& candidates, std::vector<Descriptor> configs, Precision precision,
                    double available_bytes, Rejections& rejections) {
  for (Descriptor& config : configs) {
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
  const Descriptor pack = make_variant_pack(tensors, data_or_null(workspace));
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

// "engine 12 (tensor cores) knobs k2=3 k15=1: fastest of 10, 53.1 us"
std::string describe(const Candidate& chosen, std::size_t measured) {
  std::string notes;
  for (cudnnBackendNumericalNote_t note : chosen.engine.notes)
    notes += (notes.empty() ? "" : ", ") + std::string(note_name(note));
  char timing[64];
  std::snprintf(timing, sizeof timing, ": fastest of %zu, %.1f us", measured, chosen.seconds * 1e6);
  const std::string& knobs = chosen.engine.knobs;
  return engine_name(chosen.engine.index) + (notes.empty() ? "" : " (" + notes + ")") +
         (knobs.empty() ? "" : " knobs" + knobs) + timing;
}

// The measured choice, as torch's cudnn.benchmark makes it: the candidates of heuristics mode A,
// then for the places left those of cuDNN's fallback list; each timed, the fastest kept. Other
// engines with their default knobs, which torch does not try, are not tried either: with them the
// GPU tests on the H100 met a misaligned-address fault on small odd shapes, and such a fault
// poisons the process's CUDA context. Throws as Rejections::throw_none_usable says when none can run.
Candidate choose(const Descriptor& graph, Precision precision, const TensorPointers& tensors,
                 std::string& description) {
  Rejections rejections;
  const double available = std::max(static_cast<double>(device_free_bytes()) - kWorkspaceHeadroomBytes, 0.0);
  std::vector<Candidate> candidates;
  add_candidates(candidates, heuristic_configs(graph, CUDNN_HEUR_MODE_A, "mode A", rejections), precision, available,
                 rejections);
  add_candidates(candidates, heuristic_configs(graph, CUDNN_HEUR_MODE_FALLBACK, "fallback", rejections), precision,
                 available, rejections);
  std::optional<std::size_t> fastest;
  std::size_t measured = 0;
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    if (!measure(candidates[i], tensors, rejections)) continue;
    ++measured;
    if (!fastest || candidates[i].seconds < candidates[*fastest].seconds) fastest = i;
  }
  if (!fastest) rejections.throw_none_usable();
  description = describe(candidates[*fastest], measured);
  return std::move(candidates[*fastest]);
}

std::string version_text(std::size_t major, std::size_t minor, std::size_t patch) {
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

Dims input_dims(const Conv2dShape& s) { return {s.batch, s.in_channels, s.height, s.width}; }
Dims filter_dims(const Conv2dShape& s) { return {s.out_channels, s.in_channels, s.kernel, s.kernel}; }
Dims output_dims(const Conv2dShape& s) { return {s.batch, s.out_channels, s.out_height(), s.out_width()}; }

}  // namespace

// The chosen plan with the descriptors it was built from, its workspace and run()'s variant pack.
struct CudnnConv2dPlan::Resources {
  Descriptor input, filter, output, convolution, operation, graph;
  std::string description;
  Candidate chosen;
  std::unique_ptr<DeviceBuffer<std::uint8_t>> workspace;  // none when the plan needs none
  // run()'s variant pack, made again only when run() is given other addresses: making one
  // per call would put host work between the timer's start event and the convolution.
  std::optional<Descriptor> pack;
  TensorPointers packed{nullptr, nullptr, nullptr};

  // Filters follow the data layout (KCRS for NCHW, KRSC for NHWC), as core/operations.hpp says.
  Resources(const Conv2dShape& s, TensorLayout layout, Precision precision, const TensorPointers& tensors)
      : input(make_tensor(kInputId, input_dims(s), layout, storage_type(precision))),
        filter(make_tensor(kFilterId, filter_dims(s), layout, storage_type(precision))),
        output(make_tensor(kOutputId, output_dims(s), layout, storage_type(precision))),
        convolution(make_convolution(s)),
        operation(make_forward_operation(input, filter, output, convolution)),
        graph(make_graph(operation)),
        chosen(choose(graph, precision, tensors, description)),
        workspace(device_bytes_or_none(chosen.workspace_bytes)) {}
};

CudnnConv2dPlan::CudnnConv2dPlan(Conv2dShape shape, TensorLayout layout, Precision precision, const void* input,
                                 const void* filter, void* output)
    : shape_(shape), layout_(layout), precision_(precision) {
  require_conv2d_precision(precision);
  resources_ = std::make_unique<Resources>(shape, layout, precision, TensorPointers{input, filter, output});
}

CudnnConv2dPlan::~CudnnConv2dPlan() = default;

std::int64_t CudnnConv2dPlan::engine() const { return resources_->chosen.engine.index; }

const std::string& CudnnConv2dPlan::engine_description() const { return resources_->description; }

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

// --- storage formats ----------------------------------------------------------------------
std::size_t conv2d_element_bytes(Precision precision) {
  require_conv2d_precision(precision);
  return precision == Precision::fp16 ? 2 : 4;
}

std::vector<std::uint8_t> encode_conv2d_tensor(const std::vector<float>& values, Precision precision) {
  std::vector<std::uint8_t> bytes(values.size() * conv2d_element_bytes(precision));
  if (precision != Precision::fp16) {
    std::memcpy(bytes.data(), values.data(), bytes.size());
    return bytes;
  }
  std::vector<std::uint16_t> half(values.size());
  const long count = static_cast<long>(values.size());
#pragma omp parallel for schedule(static)  // tensors of up to 50M elements, converted in software
  for (long i = 0; i < count; ++i) half[i] = float_to_half_bits(values[i]);
  std::memcpy(bytes.data(), half.data(), bytes.size());
  return bytes;
}

std::vector<float> decode_conv2d_tensor(const std::vector<std::uint8_t>& bytes, Precision precision) {
  std::vector<float> values(bytes.size() / conv2d_element_bytes(precision));
  if (precision != Precision::fp16) {
    std::memcpy(values.data(), bytes.data(), bytes.size());
    return values;
  }
  std::vector<std::uint16_t> half(values.size());
  std::memcpy(half.data(), bytes.data(), bytes.size());
  const long count = static_cast<long>(values.size());
#pragma omp parallel for schedule(static)
  for (long i = 0; i < count; ++i) values[i] = half_bits_to_float(half[i]);
  return values;
}

// --- versions and names ------------------------------------------------------------------------
std::string cudnn_library_version() {
  const std::size_t v = cudnnGetVersion();  // major * 10000 + minor * 100 + patch since cuDNN 9
  return version_text(v / 10000, v / 100 % 100, v % 100);
}

std::string cudnn_header_version() { return version_text(CUDNN_MAJOR, CUDNN_MINOR, CUDNN_PATCHLEVEL); }

}  // namespace gpubench
