#include "cudnn_check.hpp"

namespace gpubench {

std::string cudnn_status_message(cudnnStatus_t status) {
  char detail[512] = "";
  cudnnGetLastErrorString(detail, sizeof detail);
  std::string message = cudnnGetErrorString(status);
  if (detail[0] != '\0') message += std::string(" (") + detail + ")";
  return message;
}

void throw_cudnn_error(cudnnStatus_t status, const char* expression, const char* file, int line) {
  const std::string message = cudnn_status_message(status) + " in " + expression + " at " + file + ":" +
                              std::to_string(line);
  if (CUDNN_STATUS_CATEGORY(status) == CUDNN_STATUS_NOT_SUPPORTED) throw CudnnUnsupported(message);
  if (status == CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED ||
      status == CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED)
    throw GpuOutOfMemory(message);
  throw GpuError(message);
}

}  // namespace gpubench
