// The plumbing of cuDNN's graph (backend) API that any operation built on it needs: the one
// handle, descriptors that destroy themselves, attribute setters and getters whose failures
// throw as CUDNN_CHECK says (kernels/cudnn_check.hpp), what an engine configuration says of
// itself, and the library's version. What a graph computes and how its engine is chosen
// belong to the operation (kernels/conv2d_cudnn).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cudnn_check.hpp"

namespace gpubench {

// One handle for every plan, created on first use (outside any timed region: plans are
// built before timing) and kept; it enqueues on the legacy default stream, as the studies'
// CUDA-event timer records.
cudnnHandle_t cudnn_handle();

// Owns one backend descriptor; movable, so candidates can be kept in a vector. Destruction
// cannot report a failure (it runs while unwinding too), so its status is not checked, as
// cudaFree's is not in DeviceBuffer. The setters and finalize() are checked.
class CudnnDescriptor {
 public:
  explicit CudnnDescriptor(cudnnBackendDescriptorType_t type);
  ~CudnnDescriptor();
  CudnnDescriptor(CudnnDescriptor&& other) noexcept;
  CudnnDescriptor& operator=(CudnnDescriptor&& other) noexcept;
  CudnnDescriptor(const CudnnDescriptor&) = delete;
  CudnnDescriptor& operator=(const CudnnDescriptor&) = delete;

  cudnnBackendDescriptor_t get() const { return handle_; }

  // `count` elements of `type` at `values`.
  void set_values(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, std::int64_t count,
                  const void* values);
  template <typename T>
  void set_value(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, const T& value) {
    set_values(name, type, 1, &value);
  }
  // `value` as an attribute of type CUDNN_TYPE_BACKEND_DESCRIPTOR.
  void set_descriptor(cudnnBackendAttributeName_t name, const CudnnDescriptor& value);

  void finalize();
  // Finalizing is where cuDNN says whether it supports what was set (a heuristics mode for a
  // graph, an engine configuration on this device), so here its status is the caller's to judge.
  cudnnStatus_t try_finalize();

 private:
  cudnnBackendDescriptor_t handle_ = nullptr;
};

// One INT64 attribute of `owner`.
std::int64_t get_int64(const CudnnDescriptor& owner, cudnnBackendAttributeName_t name);

// How many descriptors an attribute of type CUDNN_TYPE_BACKEND_DESCRIPTOR holds.
std::int64_t descriptor_count(const CudnnDescriptor& owner, cudnnBackendAttributeName_t name);

// The descriptors such an attribute holds, up to `capacity`: cuDNN copies them into
// descriptors of `type` made here, and says how many the attribute has.
std::vector<CudnnDescriptor> read_descriptors(const CudnnDescriptor& owner, cudnnBackendAttributeName_t name,
                                              cudnnBackendDescriptorType_t type, std::int64_t capacity);

// An engine configuration's engine, what it says of itself, and the configuration's knobs.
struct EngineInfo {
  std::int64_t index = -1;  // CUDNN_ATTR_ENGINE_GLOBAL_INDEX
  std::vector<cudnnBackendNumericalNote_t> notes;
  std::string knobs;  // " k2=3 k15=1": its knob choices, by cudnnBackendKnobType_t value

  bool has(cudnnBackendNumericalNote_t note) const;
  bool same_configuration(const EngineInfo& other) const { return index == other.index && knobs == other.knobs; }
};

// What the engine configuration `config` (a CUDNN_BACKEND_ENGINECFG_DESCRIPTOR) holds.
EngineInfo engine_info(const CudnnDescriptor& config);

// "engine 12": cuDNN's engines have numbers, not names.
std::string engine_name(std::int64_t index);
// "tensor cores", "Winograd", ...: a numerical note in words.
const char* note_name(cudnnBackendNumericalNote_t note);

// "9.1.0": the library loaded at run time, and the header this was compiled against.
std::string cudnn_library_version();
std::string cudnn_header_version();

}  // namespace gpubench
