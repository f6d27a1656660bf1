#include "cudnn_check.hpp"

namespace gpubench {

std::string cudnn_last_error_detail() {
  char detail[512] = "";
  cudnnGetLastErrorString(detail, sizeof detail);
  return detail;
}

std::string cudnn_status_message(cudnnStatus_t status) {
  const std::string detail = cudnn_last_error_detail();
  std::string message = cudnnGetErrorString(status);
  if (!detail.empty()) message += " (" + detail + ")";
  return message;
}

bool is_cudnn_unsupported(cudnnStatus_t status) { return CUDNN_STATUS_CATEGORY(status) == CUDNN_STATUS_NOT_SUPPORTED; }

bool is_cudnn_allocation_failure(cudnnStatus_t status) {
  return status == CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED ||
         status == CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED;
}

void throw_cudnn_error(cudnnStatus_t status, const char* expression, const char* file, int line) {
  const std::string message =
      cudnn_status_message(status) + " in " + expression + " at " + file + ":" + std::to_string(line);
  if (is_cudnn_unsupported(status)) throw CudnnUnsupported(message);
  if (is_cudnn_allocation_failure(status)) throw GpuOutOfMemory(message);
  throw GpuError(message);
}

}  // namespace gpubench
