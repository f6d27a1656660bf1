// 2-D forward convolution through cuDNN's graph (backend) API, in FP32, TF32 and FP16, NCHW or
// NHWC: the shape and layouts of core/operations.hpp, so verify_conv2d checks it like the
// CPU baseline. Its tensors are in the storage format of core/precision_codec.hpp's conv2d
// codec (FP32, or FP16 for fp16), which a caller converts to and from on the host; the
// backend API's plumbing is kernels/cudnn_backend.hpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "core/operations.hpp"
#include "core/precision.hpp"

namespace gpubench {

// --- one convolution configuration, ready to run ----------------------------------------------
// Holds cuDNN's operation graph of the convolution (input X, filter W, output Y, FP32
// compute), the execution plan of the engine configuration measured fastest for it, and that
// plan's workspace. Everything costly happens in the constructor, so a study builds the plan
// outside its timed region and the call it times does nothing but enqueue the convolution.
//
// The engine is chosen as torch.backends.cudnn.benchmark = True chooses it: cuDNN's heuristics
// (CUDNN_HEUR_MODE_A, then cuDNN's fallback list for the places left) propose engine configurations; those the
// precision refuses (below), those whose plan cuDNN will not finalize for this graph and those
// whose workspace does not fit in free device memory are passed over; up to 10 (torch's default) are run on the
// given buffers (one warm-up, then the median of 5 runs timed with CUDA events) and the fastest
// is kept; or, given `held_engine` (engine_choice() of an earlier process, so that every trial of a run
// times the same engine), that engine when the heuristics propose it. The precision's rule, from each engine's numerical notes: fp32 takes no tensor-core
// engine (on FP32 data those compute in TF32, which is the tf32 entry); tf32 (FP32 data) and
// fp16 allow tensor cores; none takes an engine that down-converts its inputs (e.g. FP32 to
// FP16) or reduces in less than FP32 (torch passes over the first too).
class CudnnConv2dPlan {
 public:
  // Device pointers, 16-byte aligned (cudaMalloc's are); `output` is overwritten while the
  // engines are tried. Throws std::invalid_argument for a precision other than fp32, tf32 and
  // fp16, CudnnUnsupported (kernels/cudnn_check.hpp) when no engine can run the configuration,
  // GpuOutOfMemory when none that can fits, GpuError on any other failure.
  CudnnConv2dPlan(Conv2dShape shape, TensorLayout layout, Precision precision, const void* input,
                  const void* filter, void* output, const std::optional<std::string>& held_engine = std::nullopt);
  ~CudnnConv2dPlan();
  CudnnConv2dPlan(const CudnnConv2dPlan&) = delete;
  CudnnConv2dPlan& operator=(const CudnnConv2dPlan&) = delete;

  Conv2dShape shape() const { return shape_; }
  TensorLayout layout() const { return layout_; }
  Precision precision() const { return precision_; }
  // The chosen engine's global index (CUDNN_ATTR_ENGINE_GLOBAL_INDEX): cuDNN's engines have
  // numbers, not names, and a number's meaning may change between cuDNN versions.
  std::int64_t engine() const;
  // "engine 12 (tensor cores) knobs k2=3 k15=1: fastest of 10, 53.1 us": the index, its
  // numerical notes, its knob choices (cudnnBackendKnobType_t values), and the autotuning.
  const std::string& engine_description() const;
  // "12 k2=3 k15=1": the engine's index and knob choices, what held_engine takes.
  std::string engine_choice() const;
  bool engine_held() const;  // held_engine was given and taken
  bool tensor_cores() const;  // the engine has the numerical note CUDNN_NUMERICAL_NOTE_TENSOR_CORE
  std::size_t workspace_bytes() const;

  // output = input (*) filter for the plan's configuration, enqueued on the legacy default
  // stream; the pointers may differ from the constructor's (16-byte aligned, the same tensors'
  // shapes).
  void run(const void* input, const void* filter, void* output) const;

 private:
  struct Resources;  // cuDNN descriptors and the workspace: cuDNN's types stay out of this header
  Conv2dShape shape_;
  TensorLayout layout_;
  Precision precision_;
  std::unique_ptr<Resources> resources_;
};

}  // namespace gpubench
