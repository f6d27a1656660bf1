// Every CUDA and cuBLAS return code is checked; a failure becomes an exception that the
// study turns into an error entry (or a skip, for running out of device memory).
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

namespace gpubench {

struct GpuError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The request did not fit: a property of the configuration, reported as a skip.
struct GpuOutOfMemory : GpuError {
  using GpuError::GpuError;
};

// The configuration cannot run here (no library algorithm for it, host memory the driver will
// not pin): a property of the machine and the configuration, reported as "skipped: <why>".
struct GpuEntrySkipped : GpuError {
  using GpuError::GpuError;
};

[[noreturn]] void throw_cuda_error(cudaError_t status, const char* expression, const char* file, int line);
[[noreturn]] void throw_cublas_error(cublasStatus_t status, const char* expression, const char* file, int line);

}  // namespace gpubench

#define CUDA_CHECK(expression)                                                        \
  do {                                                                                \
    const cudaError_t gpubench_status_ = (expression);                                \
    if (gpubench_status_ != cudaSuccess)                                              \
      ::gpubench::throw_cuda_error(gpubench_status_, #expression, __FILE__, __LINE__); \
  } while (0)

#define CUBLAS_CHECK(expression)                                                        \
  do {                                                                                  \
    const cublasStatus_t gpubench_status_ = (expression);                               \
    if (gpubench_status_ != CUBLAS_STATUS_SUCCESS)                                      \
      ::gpubench::throw_cublas_error(gpubench_status_, #expression, __FILE__, __LINE__); \
  } while (0)

// After a kernel launch: launch errors show at once, faults in the kernel at the next sync.
#define CUDA_CHECK_LAUNCH() CUDA_CHECK(cudaGetLastError())
