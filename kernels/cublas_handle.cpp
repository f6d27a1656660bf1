#include "cublas_handle.hpp"

#include "core/cuda_check.hpp"

namespace gpubench {

void* gemm_workspace() {
  static void* workspace = [] {
    void* w = nullptr;
    CUDA_CHECK(cudaMalloc(&w, kGemmWorkspaceBytes));
    return w;
  }();
  return workspace;
}

cublasHandle_t cublas_handle() {
  static cublasHandle_t handle = [] {
    cublasHandle_t h = nullptr;
    CUBLAS_CHECK(cublasCreate(&h));
    CUBLAS_CHECK(cublasSetWorkspace(h, gemm_workspace(), kGemmWorkspaceBytes));
    return h;
  }();
  return handle;
}

cublasLtHandle_t cublaslt_handle() {
  static cublasLtHandle_t handle = [] {
    cublasLtHandle_t h = nullptr;
    CUBLAS_CHECK(cublasLtCreate(&h));
    return h;
  }();
  return handle;
}

}  // namespace gpubench
