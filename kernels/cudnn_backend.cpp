#include "cudnn_backend.hpp"

#include <algorithm>
#include <array>
#include <utility>

namespace gpubench {

cudnnHandle_t cudnn_handle() {
  static const cudnnHandle_t handle = [] {
    cudnnHandle_t h = nullptr;
    CUDNN_CHECK(cudnnCreate(&h));
    return h;
  }();
  return handle;
}

// --- descriptors --------------------------------------------------------------------------------
CudnnDescriptor::CudnnDescriptor(cudnnBackendDescriptorType_t type) {
  CUDNN_CHECK(cudnnBackendCreateDescriptor(type, &handle_));
}

CudnnDescriptor::~CudnnDescriptor() {
  if (handle_) cudnnBackendDestroyDescriptor(handle_);
}

CudnnDescriptor::CudnnDescriptor(CudnnDescriptor&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}

CudnnDescriptor& CudnnDescriptor::operator=(CudnnDescriptor&& other) noexcept {
  std::swap(handle_, other.handle_);
  return *this;
}

void CudnnDescriptor::set_values(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type,
                                 std::int64_t count, const void* values) {
  CUDNN_CHECK(cudnnBackendSetAttribute(handle_, name, type, count, values));
}

void CudnnDescriptor::set_descriptor(cudnnBackendAttributeName_t name, const CudnnDescriptor& value) {
  set_values(name, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &value.handle_);  // an array of one handle
}

void CudnnDescriptor::finalize() { CUDNN_CHECK(cudnnBackendFinalize(handle_)); }

cudnnStatus_t CudnnDescriptor::try_finalize() { return cudnnBackendFinalize(handle_); }

// --- reading attributes back --------------------------------------------------------------------
std::int64_t get_int64(const CudnnDescriptor& owner, cudnnBackendAttributeName_t name) {
  std::int64_t value = 0, count = 0;
  CUDNN_CHECK(cudnnBackendGetAttribute(owner.get(), name, CUDNN_TYPE_INT64, 1, &count, &value));
  return value;
}

std::int64_t descriptor_count(const CudnnDescriptor& owner, cudnnBackendAttributeName_t name) {
  std::int64_t count = 0;
  CUDNN_CHECK(cudnnBackendGetAttribute(owner.get(), name, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count, nullptr));
  return count;
}

std::vector<CudnnDescriptor> read_descriptors(const CudnnDescriptor& owner, cudnnBackendAttributeName_t name,
                                              cudnnBackendDescriptorType_t type, std::int64_t capacity) {
  std::vector<CudnnDescriptor> descriptors;
  std::vector<cudnnBackendDescriptor_t> handles;
  for (std::int64_t i = 0; i < capacity; ++i) {
    descriptors.emplace_back(type);
    handles.push_back(descriptors.back().get());
  }
  if (capacity == 0) return descriptors;
  std::int64_t count = 0;
  CUDNN_CHECK(
      cudnnBackendGetAttribute(owner.get(), name, CUDNN_TYPE_BACKEND_DESCRIPTOR, capacity, &count, handles.data()));
  descriptors.erase(descriptors.begin() + std::clamp<std::int64_t>(count, 0, capacity), descriptors.end());
  return descriptors;
}

// --- engines ------------------------------------------------------------------------------------
namespace {

// An engine has each note at most once, so the header's count of note kinds is room for all
// of them; a newer library with more kinds reports its count, of which only these are read.
std::vector<cudnnBackendNumericalNote_t> numerical_notes(const CudnnDescriptor& engine) {
  std::array<cudnnBackendNumericalNote_t, CUDNN_NUMERICAL_NOTE_TYPE_COUNT> notes{};
  std::int64_t count = 0;
  CUDNN_CHECK(cudnnBackendGetAttribute(engine.get(), CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE,
                                       static_cast<std::int64_t>(notes.size()), &count, notes.data()));
  return {notes.begin(), notes.begin() + std::clamp<std::int64_t>(count, 0, notes.size())};
}

// " k2=3 k15=1": the configuration's knob choices, by cudnnBackendKnobType_t value. A
// configuration chooses each knob at most once, so the header's count of knob kinds is room.
std::string knob_text(const CudnnDescriptor& config) {
  std::string text;
  for (const CudnnDescriptor& choice : read_descriptors(config, CUDNN_ATTR_ENGINECFG_KNOB_CHOICES,
                                                        CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR, CUDNN_KNOB_TYPE_COUNTS)) {
    cudnnBackendKnobType_t type = CUDNN_KNOB_TYPE_COUNTS;
    std::int64_t count = 0;
    CUDNN_CHECK(cudnnBackendGetAttribute(choice.get(), CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE, CUDNN_TYPE_KNOB_TYPE, 1,
                                         &count, &type));
    const std::int64_t value = get_int64(choice, CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE);
    text += " k" + std::to_string(static_cast<int>(type)) + "=" + std::to_string(value);
  }
  return text;
}

std::string version_text(std::size_t major, std::size_t minor, std::size_t patch) {
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

}  // namespace

bool EngineInfo::has(cudnnBackendNumericalNote_t note) const {
  return std::find(notes.begin(), notes.end(), note) != notes.end();
}

EngineInfo engine_info(const CudnnDescriptor& config) {
  const std::vector<CudnnDescriptor> engines =
      read_descriptors(config, CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_BACKEND_ENGINE_DESCRIPTOR, 1);
  if (engines.empty()) throw GpuError("cuDNN returned an engine configuration without an engine");
  EngineInfo info;
  info.index = get_int64(engines[0], CUDNN_ATTR_ENGINE_GLOBAL_INDEX);
  info.notes = numerical_notes(engines[0]);
  info.knobs = knob_text(config);
  return info;
}

std::string engine_name(std::int64_t index) { return "engine " + std::to_string(index); }

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

// --- versions -----------------------------------------------------------------------------------
std::string cudnn_library_version() {
  const std::size_t v = cudnnGetVersion();  // major * 10000 + minor * 100 + patch since cuDNN 9
  return version_text(v / 10000, v / 100 % 100, v % 100);
}

std::string cudnn_header_version() { return version_text(CUDNN_MAJOR, CUDNN_MINOR, CUDNN_PATCHLEVEL); }

}  // namespace gpubench
