#include "cublas_handle.hpp"

#include "core/cuda_check.hpp"

namespace gpubench {
namespace {
constexpr std::size_t kWorkspaceBytes = 32u << 20;
}  // namespace

cublasHandle_t cublas_handle() {
  static cublasHandle_t handle = [] {
    cublasHandle_t h = nullptr;
    void* workspace = nullptr;
    CUBLAS_CHECK(cublasCreate(&h));
    CUDA_CHECK(cudaMalloc(&workspace, kWorkspaceBytes));
    CUBLAS_CHECK(cublasSetWorkspace(h, workspace, kWorkspaceBytes));
    return h;
  }();
  return handle;
}

}  // namespace gpubench
