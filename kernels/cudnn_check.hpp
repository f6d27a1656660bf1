// Every cuDNN return code is checked, as CUDA_CHECK and CUBLAS_CHECK check theirs
// (common/cuda_check.hpp): a failure becomes an exception the study turns into an entry's
// outcome. cuDNN 9 groups its statuses in categories, and two of them are properties of the
// configuration rather than faults, so they get their own exception types.
#pragma once

#include GPUBENCH_CUDNN_HEADER  // cudnn.h or cudnn_v9.h, whichever cmake/FindCUDNN.cmake found

#include "core/cuda_check.hpp"

namespace gpubench {

// cuDNN has no algorithm or kernel for this configuration (the CUDNN_STATUS_NOT_SUPPORTED
// category): the study reports it as a skip with cuDNN's status message.
struct CudnnUnsupported : GpuEntrySkipped {
  using GpuEntrySkipped::GpuEntrySkipped;
};

// "CUDNN_STATUS_NOT_SUPPORTED_SHAPE", with cuDNN's own explanation of its last error when it
// has one.
std::string cudnn_status_message(cudnnStatus_t status);

// cuDNN's own explanation of its last error in this thread (cudnnGetLastErrorString), empty
// when it has none.
std::string cudnn_last_error_detail();

// Whether a failed call says the configuration is unsupported (a skip), or that cuDNN could
// not allocate (does not fit); anything else is a fault.
bool is_cudnn_unsupported(cudnnStatus_t status);
bool is_cudnn_allocation_failure(cudnnStatus_t status);

// Throws CudnnUnsupported for the not-supported category, GpuOutOfMemory when cuDNN could
// not allocate, GpuError otherwise.
[[noreturn]] void throw_cudnn_error(cudnnStatus_t status, const char* expression, const char* file, int line);

}  // namespace gpubench

#define CUDNN_CHECK(expression)                                                        \
  do {                                                                                 \
    const cudnnStatus_t gpubench_status_ = (expression);                               \
    if (gpubench_status_ != CUDNN_STATUS_SUCCESS)                                      \
      ::gpubench::throw_cudnn_error(gpubench_status_, #expression, __FILE__, __LINE__); \
  } while (0)
