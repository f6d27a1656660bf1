#include "core/cuda_check.hpp"

namespace gpubench {
namespace {

std::string where(const char* expression, const char* file, int line) {
  return std::string(expression) + " at " + file + ":" + std::to_string(line);
}

}  // namespace

void throw_cuda_error(cudaError_t status, const char* expression, const char* file, int line) {
  const std::string message = std::string("CUDA error ") + cudaGetErrorName(status) + " (" +
                              cudaGetErrorString(status) + ") in " + where(expression, file, line);
  if (status == cudaErrorMemoryAllocation) throw GpuOutOfMemory(message);
  throw GpuError(message);
}

void throw_cublas_error(cublasStatus_t status, const char* expression, const char* file, int line) {
  const std::string message = std::string("cuBLAS error ") + cublasGetStatusName(status) + " (" +
                              cublasGetStatusString(status) + ") in " + where(expression, file, line);
  if (status == CUBLAS_STATUS_ALLOC_FAILED) throw GpuOutOfMemory(message);
  throw GpuError(message);
}

}  // namespace gpubench
