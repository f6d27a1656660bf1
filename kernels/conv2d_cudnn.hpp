// 2-D forward convolution through cuDNN's legacy API (cudnnConvolutionForward, still shipped
// in cuDNN 9), in FP32, TF32 and FP16, NCHW or NHWC: the shape and layouts of
// baselines/conv2d_cpu.hpp, so verify_conv2d checks it like the CPU baseline.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/precision.hpp"
#include "conv2d_cpu.hpp"

namespace gpubench {

// --- the storage format the GPU side takes -----------------------------------------------
// Input, filter and output are FP32 for Precision::fp32 and tf32 and FP16 for fp16 (FP32
// accumulation in all three); other precisions are refused with std::invalid_argument. The
// CPU side stays FP32: a caller converts on the host with these two.
std::size_t conv2d_element_bytes(Precision precision);
// FP32 values in the precision's storage format (FP16: rounded to nearest even).
std::vector<std::uint8_t> encode_conv2d_tensor(const std::vector<float>& values, Precision precision);
// A tensor in the precision's storage format as FP32 values (exact: FP16 widens losslessly).
std::vector<float> decode_conv2d_tensor(const std::vector<std::uint8_t>& bytes, Precision precision);

// --- one convolution configuration, ready to run ----------------------------------------------
// Holds cuDNN's descriptors of the input, filter, output and convolution, the algorithm
// cuDNN measured fastest for them, and that algorithm's workspace. Everything costly
// happens in the constructor, so a study builds the plan outside its timed region and the
// call it times does nothing but enqueue the convolution.
//
// The algorithm is chosen as torch.backends.cudnn.benchmark = True chooses it:
// cudnnFindConvolutionForwardAlgorithmEx runs every algorithm cuDNN offers on the given
// buffers, with a scratch workspace as large as the hungriest algorithm asks for (capped by
// free device memory), and the fastest one that succeeded in the precision's math mode is kept.
// Math modes: fp32 CUDNN_FMA_MATH (no tensor cores; cuDNN's default would allow TF32 on
// Ampere and newer), tf32 CUDNN_DEFAULT_MATH (TF32 tensor cores allowed for FP32 data, what
// torch sets with allow_tf32), fp16 CUDNN_TENSOR_OP_MATH.
class CudnnConv2dPlan {
 public:
  // Device pointers; `output` is overwritten while the algorithms are tried. Throws
  // CudnnUnsupported (kernels/cudnn_check.hpp) when no algorithm can run the
  // configuration, GpuOutOfMemory when its workspace does not fit, GpuError on any other failure.
  CudnnConv2dPlan(Conv2dShape shape, TensorLayout layout, Precision precision, const void* input,
                  const void* filter, void* output);
  ~CudnnConv2dPlan();
  CudnnConv2dPlan(const CudnnConv2dPlan&) = delete;
  CudnnConv2dPlan& operator=(const CudnnConv2dPlan&) = delete;

  Conv2dShape shape() const { return shape_; }
  TensorLayout layout() const { return layout_; }
  Precision precision() const { return precision_; }
  int algorithm() const;               // a cudnnConvolutionFwdAlgo_t value
  const char* algorithm_name() const;  // its name without the prefix, e.g. "IMPLICIT_PRECOMP_GEMM"
  std::size_t workspace_bytes() const;

  // output = input (*) filter for the plan's configuration, enqueued on the legacy default
  // stream; the pointers may differ from the constructor's but must hold the same tensors' shapes.
  void run(const void* input, const void* filter, void* output) const;

 private:
  struct Resources;  // cuDNN descriptors and the workspace: cuDNN's types stay out of this header
  Conv2dShape shape_;
  TensorLayout layout_;
  Precision precision_;
  std::unique_ptr<Resources> resources_;
};

// The cudnnConvolutionFwdAlgo_t names, indexed by value (IMPLICIT_GEMM, ...).
std::vector<std::string> cudnn_forward_algorithm_names();

// "9.1.0": the library loaded at run time, and the header this was compiled against.
std::string cudnn_library_version();
std::string cudnn_header_version();

}  // namespace gpubench
