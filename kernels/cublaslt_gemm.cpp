#include "cublaslt_gemm.hpp"

#include <cublasLt.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <map>
#include <stdexcept>
#include <tuple>

#include "core/cuda_check.hpp"
#include "cublas_handle.hpp"

namespace gpubench {
namespace {

std::uint32_t alignment_of(const void* pointer) {
  const auto address = reinterpret_cast<std::uintptr_t>(pointer);
  std::uint32_t alignment = 256;
  while (alignment > 1 && address % alignment != 0) alignment /= 2;
  return alignment;
}

struct LtTypes {
  cudaDataType inputs, output;
  cublasComputeType_t compute;
  cudaDataType scale;       // of alpha and beta
  bool first_transposed;    // the tensor-core FP8/INT8 kernels' TN layout
};

LtTypes lt_types(Precision precision) {
  switch (precision) {
    case Precision::fp32: return {CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F, CUDA_R_32F, false};
    case Precision::tf32: return {CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, CUDA_R_32F, false};
    case Precision::fp16: return {CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_32F, CUDA_R_32F, false};
    case Precision::fp16_acc16: return {CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_16F, CUDA_R_16F, false};
    case Precision::bf16: return {CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_32F, CUDA_R_32F, false};
    // BF16 out: the output cuBLASLt pairs with FP8 inputs most widely (and what frameworks' scaled
    // matmuls return by default).
    case Precision::fp8_e4m3: return {CUDA_R_8F_E4M3, CUDA_R_16BF, CUBLAS_COMPUTE_32F, CUDA_R_32F, true};
    case Precision::int8: return {CUDA_R_8I, CUDA_R_32I, CUBLAS_COMPUTE_32I, CUDA_R_32I, true};
    default: break;
  }
  throw std::invalid_argument(std::string("no cuBLASLt GEMM in ") + precision_info(precision).name);
}

// alpha = 1 and beta = 0 in each scale type (FP16 as its bits: 0x3C00 is 1.0).
constexpr float kFloatScalars[2] = {1.0f, 0.0f};
constexpr std::uint16_t kHalfScalars[2] = {0x3C00, 0x0000};
constexpr std::int32_t kIntScalars[2] = {1, 0};

const void* scalars_of(cudaDataType scale) {
  if (scale == CUDA_R_16F) return kHalfScalars;
  if (scale == CUDA_R_32I) return kIntScalars;
  return kFloatScalars;
}

std::size_t scalar_bytes(cudaDataType scale) { return scale == CUDA_R_16F ? 2 : 4; }

// Lt's "A" is our B, so its scale is B's dequantization factor (PrecisionGemmFn's layout).
void set_fp8_scales(cublasLtMatmulDesc_t operation, const float* dequant) {
  const float* scale_of_lt_a = dequant ? dequant + kDequantStride : nullptr;
  const float* scale_of_lt_b = dequant;
  CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(operation, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &scale_of_lt_a,
                                              sizeof scale_of_lt_a));
  CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(operation, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &scale_of_lt_b,
                                              sizeof scale_of_lt_b));
}

template <typename T>
T algorithm_attribute(const cublasLtMatmulAlgo_t& algorithm, cublasLtMatmulAlgoConfigAttributes_t attribute) {
  T value{};
  std::size_t written = 0;
  CUBLAS_CHECK(cublasLtMatmulAlgoConfigGetAttribute(&algorithm, attribute, &value, sizeof value, &written));
  return value;
}

std::string serialise(const cublasLtMatmulAlgo_t& algorithm) {
  std::string text = std::to_string(cublasLtGetVersion()) + ":";
  char word[17];
  for (std::uint64_t value : algorithm.data) {
    std::snprintf(word, sizeof word, "%016" PRIx64, value);
    text += word;
  }
  return text;
}

// The algorithm a choice string holds, if it was written by this library version and is well formed.
std::optional<cublasLtMatmulAlgo_t> deserialise(const std::string& choice) {
  const std::string prefix = std::to_string(cublasLtGetVersion()) + ":";
  constexpr std::size_t kWords = sizeof(cublasLtMatmulAlgo_t{}.data) / sizeof(std::uint64_t);
  if (choice.compare(0, prefix.size(), prefix) != 0 || choice.size() != prefix.size() + 16 * kWords)
    return std::nullopt;
  cublasLtMatmulAlgo_t algorithm{};
  for (std::size_t i = 0; i < kWords; ++i) {
    const std::string word = choice.substr(prefix.size() + 16 * i, 16);
    if (word.find_first_not_of("0123456789abcdef") != std::string::npos) return std::nullopt;
    algorithm.data[i] = std::stoull(word, nullptr, 16);
  }
  return algorithm;
}

std::string mebibytes(std::size_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
  return text;
}

int compute_capability_major() {
  int device = 0, major = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  return major;
}

}  // namespace

CublasLtAlignment CublasLtAlignment::of(const void* a, const void* b, const void* c) {
  return {alignment_of(a), alignment_of(b), alignment_of(c)};
}

bool CublasLtAlignment::operator<(const CublasLtAlignment& o) const {
  return std::tie(a, b, c) < std::tie(o.a, o.b, o.c);
}

std::size_t torch_cublaslt_workspace_bytes(int compute_capability_major) {
  const int major = compute_capability_major;
  return (major == 9 || major == 10 || major == 12) ? std::size_t{4096} * 8 * 1024
                                                    : std::size_t{4096} * 1024 * 2 + std::size_t{16} * 1024 * 8;
}

struct CublasLtGemm::Resources {
  Precision precision;
  LtTypes types;
  cublasLtMatmulDesc_t operation = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;  // Lt's A (our B), B (our A), C
  cublasLtMatmulAlgo_t algorithm{};
  std::size_t workspace_limit = 0;   // what the heuristic and every call are allowed
  std::size_t workspace_needed = 0;  // what the algorithm uses of it
  int algorithm_id = 0;
  bool held = false;
  std::string choice, description;
  mutable const float* scales = nullptr;  // FP8: the factors the descriptor points at now

  ~Resources() {  // a destructor cannot report a failure: the statuses are dropped
    if (c) cublasLtMatrixLayoutDestroy(c);
    if (b) cublasLtMatrixLayoutDestroy(b);
    if (a) cublasLtMatrixLayoutDestroy(a);
    if (operation) cublasLtMatmulDescDestroy(operation);
  }
};

namespace {

// Row-major C (m x n) = A (m x k) B (k x n) is column-major C^T (n x m) = B^T A^T: our B is Lt's
// A, an n x k column-major matrix (ld n) as stored. FP8/INT8's encoded B is n x k row-major, a
// k x n column-major matrix (ld k) that Lt transposes. Our A is Lt's B: k x m column-major (ld k).
void describe_problem(CublasLtGemm::Resources& r, MatmulShape s) {
  const LtTypes& t = r.types;
  CUBLAS_CHECK(cublasLtMatmulDescCreate(&r.operation, t.compute, t.scale));
  const cublasOperation_t transpose_a = t.first_transposed ? CUBLAS_OP_T : CUBLAS_OP_N, keep = CUBLAS_OP_N;
  CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(r.operation, CUBLASLT_MATMUL_DESC_TRANSA, &transpose_a,
                                              sizeof transpose_a));
  CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(r.operation, CUBLASLT_MATMUL_DESC_TRANSB, &keep, sizeof keep));
  if (t.first_transposed)
    CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&r.a, t.inputs, s.k, s.n, s.k));
  else
    CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&r.a, t.inputs, s.n, s.k, s.n));
  CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&r.b, t.inputs, s.k, s.m, s.k));
  CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&r.c, t.output, s.n, s.m, s.n));
}

// The held algorithm, when this library accepts it for the problem within the workspace; else why not.
std::string take_held(CublasLtGemm::Resources& r, const std::string& held) {
  const std::optional<cublasLtMatmulAlgo_t> algorithm = deserialise(held);
  if (!algorithm) return "not written by this cuBLASLt version";
  cublasLtMatmulHeuristicResult_t result{};
  const cublasStatus_t status =
      cublasLtMatmulAlgoCheck(cublaslt_handle(), r.operation, r.a, r.b, r.c, r.c, &*algorithm, &result);
  if (status != CUBLAS_STATUS_SUCCESS) return std::string("refused: ") + cublasGetStatusName(status);
  if (result.workspaceSize > r.workspace_limit) return "needs " + mebibytes(result.workspaceSize) + " of workspace";
  r.algorithm = *algorithm;
  r.workspace_needed = result.workspaceSize;
  r.held = true;
  return "";
}

// The heuristic's first algorithm for the workspace and the operands' alignment, as PyTorch asks.
void take_heuristic(CublasLtGemm::Resources& r, MatmulShape s, CublasLtAlignment alignment) {
  cublasLtMatmulPreference_t preference = nullptr;
  CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&preference));
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  cublasStatus_t status = CUBLAS_STATUS_SUCCESS;
  const auto set = [&](cublasLtMatmulPreferenceAttributes_t attribute, const auto& value) {
    if (status == CUBLAS_STATUS_SUCCESS)
      status = cublasLtMatmulPreferenceSetAttribute(preference, attribute, &value, sizeof value);
  };
  const std::uint64_t workspace = r.workspace_limit;
  set(CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, workspace);
  set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, alignment.b);  // Lt's A is our B
  set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, alignment.a);
  set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, alignment.c);
  set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, alignment.c);
  if (status == CUBLAS_STATUS_SUCCESS)
    status = cublasLtMatmulAlgoGetHeuristic(cublaslt_handle(), r.operation, r.a, r.b, r.c, r.c, preference, 1,
                                            &result, &found);
  const cublasStatus_t destroyed = cublasLtMatmulPreferenceDestroy(preference);
  if (status == CUBLAS_STATUS_NOT_SUPPORTED || (status == CUBLAS_STATUS_SUCCESS && found == 0))
    throw GpuEntrySkipped(std::string("cuBLASLt has no algorithm for ") + precision_info(r.precision).name + " at " +
                          std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k));
  CUBLAS_CHECK(status);
  CUBLAS_CHECK(destroyed);
  r.algorithm = result.algo;
  r.workspace_needed = result.workspaceSize;
}

std::string describe_algorithm(const CublasLtGemm::Resources& r) {
  const cublasLtMatmulAlgo_t& a = r.algorithm;
  return "cuBLASLt algo " + std::to_string(r.algorithm_id) +
         " tile " + std::to_string(algorithm_attribute<std::uint32_t>(a, CUBLASLT_ALGO_CONFIG_TILE_ID)) +
         " stages " + std::to_string(algorithm_attribute<std::uint32_t>(a, CUBLASLT_ALGO_CONFIG_STAGES_ID)) +
         " split-k " + std::to_string(algorithm_attribute<std::int32_t>(a, CUBLASLT_ALGO_CONFIG_SPLITK_NUM)) +
         " reduction " +
         std::to_string(algorithm_attribute<std::uint32_t>(a, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME)) +
         " swizzle " + std::to_string(algorithm_attribute<std::uint32_t>(a, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING)) +
         " custom " + std::to_string(algorithm_attribute<std::uint32_t>(a, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION)) +
         " inner shape " +
         std::to_string(algorithm_attribute<std::uint16_t>(a, CUBLASLT_ALGO_CONFIG_INNER_SHAPE_ID)) +
         " cluster shape " +
         std::to_string(algorithm_attribute<std::uint16_t>(a, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID)) + ", " +
         mebibytes(r.workspace_needed) + " of a " + mebibytes(r.workspace_limit) + " workspace";
}

}  // namespace

CublasLtGemm::CublasLtGemm(Precision precision, MatmulShape shape, CublasLtAlignment alignment,
                           const float* dequant, const std::optional<std::string>& held)
    : resources_(std::make_unique<Resources>()) {
  Resources& r = *resources_;
  r.precision = precision;
  r.types = lt_types(precision);
  r.workspace_limit = std::min(torch_cublaslt_workspace_bytes(compute_capability_major()), kGemmWorkspaceBytes);
  describe_problem(r, shape);
  if (precision == Precision::fp8_e4m3) {
    set_fp8_scales(r.operation, dequant);
    r.scales = dequant;
  }
  const std::string refusal = held ? take_held(r, *held) : "";
  if (!r.held) take_heuristic(r, shape, alignment);
  r.algorithm_id = algorithm_attribute<std::int32_t>(r.algorithm, CUBLASLT_ALGO_CONFIG_ID);
  r.choice = serialise(r.algorithm);
  r.description = describe_algorithm(r) + (r.held ? "; held from an earlier process"
                                                  : "; the heuristic's first" +
                                                        (held ? " (the held choice " + refusal + ")" : std::string()));
}

CublasLtGemm::~CublasLtGemm() = default;

void CublasLtGemm::run(const void* a, const void* b, void* c, const float* dequant) const {
  const Resources& r = *resources_;
  if (r.precision == Precision::fp8_e4m3 && dequant != r.scales) {
    set_fp8_scales(r.operation, dequant);  // the operands' factors live elsewhere now
    r.scales = dequant;
  }
  const void* scalars = scalars_of(r.types.scale);
  const void* alpha = scalars;
  const void* beta = static_cast<const char*>(scalars) + scalar_bytes(r.types.scale);
  CUBLAS_CHECK(cublasLtMatmul(cublaslt_handle(), r.operation, alpha, b, r.a, a, r.b, beta, c, r.c, c, r.c,
                              &r.algorithm, gemm_workspace(), r.workspace_limit, 0));
}

const std::string& CublasLtGemm::choice() const { return resources_->choice; }
const std::string& CublasLtGemm::description() const { return resources_->description; }
int CublasLtGemm::algorithm() const { return resources_->algorithm_id; }
std::size_t CublasLtGemm::workspace_bytes() const { return resources_->workspace_needed; }
bool CublasLtGemm::held() const { return resources_->held; }

std::string cublaslt_choice_key(Precision precision, MatmulShape s, CublasLtAlignment alignment) {
  return std::string("cublaslt/") + precision_info(precision).name + "/" + std::to_string(s.m) + "x" +
         std::to_string(s.n) + "x" + std::to_string(s.k) + "/align:" + std::to_string(alignment.a) + "," +
         std::to_string(alignment.b) + "," + std::to_string(alignment.c);
}

const CublasLtGemm& cublaslt_gemm(Precision precision, MatmulShape s, CublasLtAlignment alignment,
                                  const float* dequant, const std::optional<std::string>& held) {
  // Descriptors and the algorithm for each problem, built once: their creation and the heuristic
  // query cost more than a small GEMM and are not what a study times.
  static std::map<std::tuple<Precision, int, int, int, CublasLtAlignment>, std::unique_ptr<CublasLtGemm>> plans;
  auto& plan = plans[{precision, s.m, s.n, s.k, alignment}];
  if (!plan) plan = std::make_unique<CublasLtGemm>(precision, s, alignment, dequant, held);
  return *plan;
}

}  // namespace gpubench
