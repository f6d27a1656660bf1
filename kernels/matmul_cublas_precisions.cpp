#include "matmul_cublas_precisions.hpp"

#include <cublasLt.h>
#include <cuda_fp16.h>

#include <map>
#include <memory>
#include <stdexcept>
#include <tuple>

#include "core/cuda_check.hpp"
#include "cublas_handle.hpp"

namespace gpubench {
namespace {

// --- cublasGemmEx: row-major C = A*B is column-major C^T = B^T A^T, so B goes first. ---
struct GemmExTypes {
  cudaDataType inputs, output;
  cublasComputeType_t compute;
};

GemmExTypes gemm_ex_types(Precision precision) {
  switch (precision) {
    case Precision::fp32: return {CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F};
    case Precision::tf32: return {CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32};
    case Precision::fp16: return {CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_32F};
    case Precision::fp16_acc16: return {CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_16F};
    case Precision::bf16: return {CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_32F};
    default: throw std::logic_error("not a cublasGemmEx precision");
  }
}

void gemm_ex(Precision precision, const void* a, const void* b, void* c, MatmulShape s) {
  const GemmExTypes t = gemm_ex_types(precision);
  const float alpha = 1.0f, beta = 0.0f;
  const __half alpha_half = __float2half(1.0f), beta_half = __float2half(0.0f);
  const bool half_scalars = t.compute == CUBLAS_COMPUTE_16F;
  CUBLAS_CHECK(cublasGemmEx(cublas_handle(), CUBLAS_OP_N, CUBLAS_OP_N, s.n, s.m, s.k,
                            half_scalars ? static_cast<const void*>(&alpha_half) : &alpha, b, t.inputs, s.n, a,
                            t.inputs, s.k, half_scalars ? static_cast<const void*>(&beta_half) : &beta, c, t.output,
                            s.n, t.compute, CUBLAS_GEMM_DEFAULT));
}

// --- cuBLASLt (FP8, INT8), whose tensor-core kernels take the first operand transposed. ---
// The encoded B is n x k row-major, i.e. a column-major k x n matrix whose transpose is
// B^T; the encoded A (m x k row-major) is a column-major k x m matrix, A^T. So
// D = (k x n)^T (k x m) = B^T A^T = C^T in column-major, which is C row-major.
constexpr std::size_t kWorkspaceBytes = 32u << 20;

cublasLtHandle_t lt_handle() {
  static cublasLtHandle_t handle = [] {
    cublasLtHandle_t h = nullptr;
    CUBLAS_CHECK(cublasLtCreate(&h));
    return h;
  }();
  return handle;
}

void* lt_workspace() {
  static void* workspace = [] {
    void* w = nullptr;
    CUDA_CHECK(cudaMalloc(&w, kWorkspaceBytes));
    return w;
  }();
  return workspace;
}

// Descriptors and the chosen algorithm for one problem, built once: their creation and
// the heuristic query cost more than a small GEMM and are not what the study times.
struct LtPlan {
  cublasLtMatmulDesc_t operation = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulAlgo_t algorithm{};
  ~LtPlan() {
    if (c) cublasLtMatrixLayoutDestroy(c);
    if (b) cublasLtMatrixLayoutDestroy(b);
    if (a) cublasLtMatrixLayoutDestroy(a);
    if (operation) cublasLtMatmulDescDestroy(operation);
  }
};

// Lt's "A" is our B, so its scale is B's dequantization factor.
void set_fp8_scales(cublasLtMatmulDesc_t operation, const float* dequant) {
  const float* scale_of_lt_a = dequant + kDequantStride;
  const float* scale_of_lt_b = dequant;
  CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(operation, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &scale_of_lt_a,
                                              sizeof scale_of_lt_a));
  CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(operation, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &scale_of_lt_b,
                                              sizeof scale_of_lt_b));
}

std::unique_ptr<LtPlan> make_lt_plan(Precision precision, MatmulShape s, const float* dequant) {
  const bool fp8 = precision == Precision::fp8_e4m3;
  const cudaDataType input = fp8 ? CUDA_R_8F_E4M3 : CUDA_R_8I;
  // FP8 writes BF16, the output cuBLASLt pairs with FP8 inputs most widely (and what
  // frameworks' scaled matmuls return by default).
  const cudaDataType output = fp8 ? CUDA_R_16BF : CUDA_R_32I;
  auto plan = std::make_unique<LtPlan>();
  CUBLAS_CHECK(cublasLtMatmulDescCreate(&plan->operation, fp8 ? CUBLAS_COMPUTE_32F : CUBLAS_COMPUTE_32I,
                                        fp8 ? CUDA_R_32F : CUDA_R_32I));
  const cublasOperation_t transpose = CUBLAS_OP_T, keep = CUBLAS_OP_N;
  CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(plan->operation, CUBLASLT_MATMUL_DESC_TRANSA, &transpose,
                                              sizeof transpose));
  CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(plan->operation, CUBLASLT_MATMUL_DESC_TRANSB, &keep, sizeof keep));
  CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&plan->a, input, s.k, s.n, s.k));
  CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&plan->b, input, s.k, s.m, s.k));
  CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&plan->c, output, s.n, s.m, s.n));
  if (fp8) set_fp8_scales(plan->operation, dequant);

  cublasLtMatmulPreference_t preference = nullptr;
  CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&preference));
  const std::size_t workspace = kWorkspaceBytes;
  cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace,
                                       sizeof workspace);
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  const cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(lt_handle(), plan->operation, plan->a, plan->b,
                                                               plan->c, plan->c, preference, 1, &result, &found);
  cublasLtMatmulPreferenceDestroy(preference);
  CUBLAS_CHECK(status);
  if (found == 0) throw GpuError("cuBLASLt has no algorithm for this FP8/INT8 problem");
  plan->algorithm = result.algo;
  return plan;
}

void gemm_lt(Precision precision, const void* a, const void* b, void* c, MatmulShape s, const float* dequant) {
  static std::map<std::tuple<int, int, int, int>, std::unique_ptr<LtPlan>> plans;
  auto& plan = plans[{static_cast<int>(precision), s.m, s.n, s.k}];
  if (!plan) plan = make_lt_plan(precision, s, dequant);
  const bool fp8 = precision == Precision::fp8_e4m3;
  if (fp8) set_fp8_scales(plan->operation, dequant);  // the operands' factors may live elsewhere now
  const float alpha_float = 1.0f, beta_float = 0.0f;
  const std::int32_t alpha_int = 1, beta_int = 0;
  const void* alpha = fp8 ? static_cast<const void*>(&alpha_float) : &alpha_int;
  const void* beta = fp8 ? static_cast<const void*>(&beta_float) : &beta_int;
  CUBLAS_CHECK(cublasLtMatmul(lt_handle(), plan->operation, alpha, b, plan->a, a, plan->b, beta, c, plan->c, c,
                              plan->c, &plan->algorithm, lt_workspace(), kWorkspaceBytes, 0));
}

}  // namespace

void gemm_cublas_precision(Precision precision, const void* a, const void* b, void* c, MatmulShape s,
                           const float* dequant) {
  if (precision == Precision::fp8_e4m3 || precision == Precision::int8) return gemm_lt(precision, a, b, c, s, dequant);
  gemm_ex(precision, a, b, c, s);
}

}  // namespace gpubench
