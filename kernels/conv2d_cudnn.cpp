#include "conv2d_cudnn.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "common/gpu_runtime.hpp"
#include "common/precision_codec.hpp"
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

cudnnMathType_t math_type(Precision precision) {
  switch (precision) {
    case Precision::fp32:
      return CUDNN_FMA_MATH;
    case Precision::tf32:
      return CUDNN_DEFAULT_MATH;
    default:
      return CUDNN_TENSOR_OP_MATH;
  }
}

// Find reports the math type each algorithm ran with. For fp32 only FMA math is accepted:
// on Ampere and newer any other mode may have used TF32, which would be the tf32 entry.
bool math_type_allowed(Precision precision, cudnnMathType_t math) {
  return precision != Precision::fp32 || math == CUDNN_FMA_MATH;
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

// Owns one cuDNN descriptor. Destruction cannot report a failure (it runs while unwinding
// too), so its status is not checked, as cudaFree's is not in DeviceBuffer.
template <typename Descriptor, cudnnStatus_t (*Create)(Descriptor*), cudnnStatus_t (*Destroy)(Descriptor)>
class Owned {
 public:
  Owned() { CUDNN_CHECK(Create(&descriptor_)); }
  ~Owned() { Destroy(descriptor_); }
  Owned(const Owned&) = delete;
  Owned& operator=(const Owned&) = delete;
  Descriptor get() const { return descriptor_; }

 private:
  Descriptor descriptor_ = nullptr;
};

using TensorDescriptor = Owned<cudnnTensorDescriptor_t, cudnnCreateTensorDescriptor, cudnnDestroyTensorDescriptor>;
using FilterDescriptor = Owned<cudnnFilterDescriptor_t, cudnnCreateFilterDescriptor, cudnnDestroyFilterDescriptor>;
using ConvolutionDescriptor =
    Owned<cudnnConvolutionDescriptor_t, cudnnCreateConvolutionDescriptor, cudnnDestroyConvolutionDescriptor>;

cudnnTensorFormat_t tensor_format(TensorLayout layout) {
  return layout == TensorLayout::nchw ? CUDNN_TENSOR_NCHW : CUDNN_TENSOR_NHWC;
}

const char* algorithm_name_of(cudnnConvolutionFwdAlgo_t algorithm) {
  switch (algorithm) {
    case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM:
      return "IMPLICIT_GEMM";
    case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM:
      return "IMPLICIT_PRECOMP_GEMM";
    case CUDNN_CONVOLUTION_FWD_ALGO_GEMM:
      return "GEMM";
    case CUDNN_CONVOLUTION_FWD_ALGO_DIRECT:
      return "DIRECT";
    case CUDNN_CONVOLUTION_FWD_ALGO_FFT:
      return "FFT";
    case CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING:
      return "FFT_TILING";
    case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD:
      return "WINOGRAD";
    case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED:
      return "WINOGRAD_NONFUSED";
    default:
      return "UNKNOWN";
  }
}

std::string version_text(std::size_t major, std::size_t minor, std::size_t patch) {
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

// Room left free while the algorithms are tried: cuDNN loads kernels and keeps small
// buffers of its own besides the workspace it is given.
constexpr double kFindHeadroomBytes = 256.0 * 1024 * 1024;

// Device memory of `bytes`, or none for 0 bytes (cuDNN then takes a null pointer).
std::unique_ptr<DeviceBuffer<std::uint8_t>> device_bytes_or_none(std::size_t bytes) {
  return bytes > 0 ? std::make_unique<DeviceBuffer<std::uint8_t>>(bytes) : nullptr;
}

void* data_or_null(const std::unique_ptr<DeviceBuffer<std::uint8_t>>& buffer) {
  return buffer ? buffer->get() : nullptr;
}

bool is_allocation_failure(cudnnStatus_t status) {
  return status == CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED ||
         status == CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED;
}

}  // namespace

struct CudnnConv2dPlan::Resources {
  TensorDescriptor input, output;
  FilterDescriptor filter;
  ConvolutionDescriptor convolution;
  cudnnConvolutionFwdAlgo_t algorithm = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
  std::size_t workspace_bytes = 0;
  std::unique_ptr<DeviceBuffer<std::uint8_t>> workspace;  // none when the algorithm needs none

  void describe(const Conv2dShape& s, TensorLayout layout, Precision precision);
  std::size_t find_workspace_bytes() const;
  cudnnConvolutionFwdAlgoPerf_t find_fastest(Precision precision, const void* input, const void* filter,
                                             void* output) const;
  void use(const cudnnConvolutionFwdAlgoPerf_t& chosen);
};

// Filters follow the data layout (KCRS for NCHW, KRSC for NHWC), as in conv2d_cpu.hpp;
// FP16 data accumulates in FP32 (cuDNN's "pseudo half" configuration).
void CudnnConv2dPlan::Resources::describe(const Conv2dShape& s, TensorLayout layout, Precision precision) {
  const cudnnTensorFormat_t format = tensor_format(layout);
  const cudnnDataType_t type = storage_type(precision);
  CUDNN_CHECK(cudnnSetTensor4dDescriptor(input.get(), format, type, s.batch, s.in_channels, s.height, s.width));
  CUDNN_CHECK(
      cudnnSetFilter4dDescriptor(filter.get(), type, format, s.out_channels, s.in_channels, s.kernel, s.kernel));
  CUDNN_CHECK(cudnnSetConvolution2dDescriptor(convolution.get(), s.padding, s.padding, s.stride, s.stride, 1, 1,
                                              CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
  CUDNN_CHECK(cudnnSetConvolutionMathType(convolution.get(), math_type(precision)));
  CUDNN_CHECK(cudnnSetTensor4dDescriptor(output.get(), format, type, s.batch, s.out_channels, s.out_height(),
                                         s.out_width()));
}

// What the hungriest algorithm asks for, capped by free device memory, as torch sizes its
// search workspace. An algorithm that cannot run the configuration answers with a
// not-supported status here; Find reports it again, so that status counts as "needs nothing".
std::size_t CudnnConv2dPlan::Resources::find_workspace_bytes() const {
  std::size_t largest = 0;
  for (int a = 0; a < CUDNN_CONVOLUTION_FWD_ALGO_COUNT; ++a) {
    std::size_t bytes = 0;
    const cudnnStatus_t status =
        cudnnGetConvolutionForwardWorkspaceSize(cudnn_handle(), input.get(), filter.get(), convolution.get(),
                                                output.get(), static_cast<cudnnConvolutionFwdAlgo_t>(a), &bytes);
    if (status == CUDNN_STATUS_SUCCESS) largest = std::max(largest, bytes);
  }
  const double available = std::max(static_cast<double>(device_free_bytes()) - kFindHeadroomBytes, 0.0);
  return static_cast<std::size_t>(std::min(static_cast<double>(largest), available));
}

// Every algorithm timed by cuDNN on these buffers; results come fastest first.
cudnnConvolutionFwdAlgoPerf_t CudnnConv2dPlan::Resources::find_fastest(Precision precision, const void* x,
                                                                       const void* w, void* y) const {
  int capacity = 0;
  CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithmMaxCount(cudnn_handle(), &capacity));
  std::vector<cudnnConvolutionFwdAlgoPerf_t> results(std::max(capacity, 1));
  int returned = 0;
  {
    const std::size_t scratch_bytes = find_workspace_bytes();
    const auto scratch = device_bytes_or_none(scratch_bytes);  // freed before the chosen workspace is allocated
    CUDNN_CHECK(cudnnFindConvolutionForwardAlgorithmEx(cudnn_handle(), input.get(), x, filter.get(), w,
                                                       convolution.get(), output.get(), y,
                                                       static_cast<int>(results.size()), &returned, results.data(),
                                                       data_or_null(scratch), scratch_bytes));
  }
  std::string statuses;
  bool out_of_memory = false;
  for (int i = 0; i < returned; ++i) {
    const cudnnConvolutionFwdAlgoPerf_t& r = results[i];
    if (r.status == CUDNN_STATUS_SUCCESS && math_type_allowed(precision, r.mathType)) return r;
    out_of_memory = out_of_memory || is_allocation_failure(r.status);
    const char* why =
        r.status == CUDNN_STATUS_SUCCESS ? "ran only with math other than FMA" : cudnnGetErrorString(r.status);
    statuses += std::string(statuses.empty() ? "" : ", ") + algorithm_name_of(r.algo) + " " + why;
  }
  const std::string message = "no cuDNN forward algorithm for this configuration (" +
                              (statuses.empty() ? std::string("cuDNN returned none") : statuses) + ")";
  if (out_of_memory) throw GpuOutOfMemory(message);
  throw CudnnUnsupported(message);
}

// The chosen algorithm's math type goes on the descriptor (cuDNN decides between tensor-core
// and FMA kernels from algorithm and math type together), then its workspace is allocated:
// the larger of what Find used and what the algorithm asks for under that math type.
void CudnnConv2dPlan::Resources::use(const cudnnConvolutionFwdAlgoPerf_t& chosen) {
  algorithm = chosen.algo;
  CUDNN_CHECK(cudnnSetConvolutionMathType(convolution.get(), chosen.mathType));
  std::size_t required = 0;
  CUDNN_CHECK(cudnnGetConvolutionForwardWorkspaceSize(cudnn_handle(), input.get(), filter.get(), convolution.get(),
                                                      output.get(), algorithm, &required));
  workspace_bytes = std::max(required, chosen.memory);
  workspace = device_bytes_or_none(workspace_bytes);
}

CudnnConv2dPlan::CudnnConv2dPlan(Conv2dShape shape, TensorLayout layout, Precision precision, const void* input,
                                 const void* filter, void* output)
    : shape_(shape), layout_(layout), precision_(precision) {
  require_conv2d_precision(precision);
  resources_ = std::make_unique<Resources>();
  resources_->describe(shape, layout, precision);
  resources_->use(resources_->find_fastest(precision, input, filter, output));
}

CudnnConv2dPlan::~CudnnConv2dPlan() = default;

int CudnnConv2dPlan::algorithm() const { return static_cast<int>(resources_->algorithm); }

const char* CudnnConv2dPlan::algorithm_name() const { return algorithm_name_of(resources_->algorithm); }

std::size_t CudnnConv2dPlan::workspace_bytes() const { return resources_->workspace_bytes; }

void CudnnConv2dPlan::run(const void* input, const void* filter, void* output) const {
  // Scaling factors are float for FP32 and FP16 data alike (cuDNN takes double only for FP64).
  const float alpha = 1.0f, beta = 0.0f;  // beta 0: the output is written, never read
  const Resources& r = *resources_;
  CUDNN_CHECK(cudnnConvolutionForward(cudnn_handle(), &alpha, r.input.get(), input, r.filter.get(), filter,
                                      r.convolution.get(), r.algorithm, data_or_null(r.workspace),
                                      r.workspace_bytes, &beta, r.output.get(), output));
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
std::vector<std::string> cudnn_forward_algorithm_names() {
  std::vector<std::string> names;
  for (int a = 0; a < CUDNN_CONVOLUTION_FWD_ALGO_COUNT; ++a)
    names.push_back(algorithm_name_of(static_cast<cudnnConvolutionFwdAlgo_t>(a)));
  return names;
}

std::string cudnn_library_version() {
  const std::size_t v = cudnnGetVersion();  // major * 10000 + minor * 100 + patch since cuDNN 9
  return version_text(v / 10000, v / 100 % 100, v % 100);
}

std::string cudnn_header_version() { return version_text(CUDNN_MAJOR, CUDNN_MINOR, CUDNN_PATCHLEVEL); }

}  // namespace gpubench
