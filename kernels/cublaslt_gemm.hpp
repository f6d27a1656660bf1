// Row-major C = A*B through cuBLASLt, set up as PyTorch's cuBLASLt path sets it up (ATen's
// CUDABlas.cpp, bgemm_internal_cublaslt: torch.matmul with TORCH_BLAS_PREFER_CUBLASLT=1, and
// _scaled_mm): column-major C^T = B^T A^T, the workspace PyTorch gives cuBLASLt on this GPU, the
// operands' alignment told to the heuristic, and the heuristic's first algorithm. (torch.matmul's
// default path, cublasSgemm/cublasGemmEx, lets cuBLAS choose with the same workspace.) The plan of a
// problem (descriptors and algorithm) is made once and kept; its algorithm can be handed to a later
// process, so that every trial of a run times the same kernel (harness/held_choices.hpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "core/precision.hpp"

namespace gpubench {

// The alignment of each operand in bytes: the largest power of two up to 256 dividing its address.
struct CublasLtAlignment {
  std::uint32_t a = 256, b = 256, c = 256;
  // cudaMalloc's (at least 256 bytes): what a study's device buffers have before they exist.
  static CublasLtAlignment of_allocations() { return {}; }
  static CublasLtAlignment of(const void* a, const void* b, const void* c);
  bool operator<(const CublasLtAlignment& o) const;
};

// The workspace PyTorch lets cuBLASLt use on a GPU of this compute capability major version:
// 32 MiB on Hopper and Blackwell (9, 10, 12), else 8 MiB + 128 KiB (its CUBLAS_WORKSPACE_CONFIG
// default ":4096:2:16:8", which its cuBLASLt workspace follows).
std::size_t torch_cublaslt_workspace_bytes(int compute_capability_major);

// Per precision: FP32 (CUBLAS_COMPUTE_32F: no TF32, as torch.matmul with allow_tf32 off), TF32
// (CUBLAS_COMPUTE_32F_FAST_TF32), FP16 and BF16 (FP32 accumulate, their own format out),
// FP16 with FP16 accumulate, all A and B untransposed as PyTorch passes a row-major product; FP8
// E4M3 (per-tensor scales, BF16 out) and INT8 (INT32 out), whose tensor-core kernels want the
// first operand transposed (the encoded B is n x k row-major, precision_codec.hpp).
class CublasLtGemm {
 public:
  // `held`: choice() of an earlier process, taken when this library and GPU accept it for the
  // problem (cublasLtMatmulAlgoCheck); otherwise, or without one, the heuristic chooses. `dequant`:
  // FP8's scale factors (as PrecisionGemmFn's), or null until run() gives them.
  CublasLtGemm(Precision precision, MatmulShape shape, CublasLtAlignment alignment, const float* dequant,
               const std::optional<std::string>& held);
  ~CublasLtGemm();
  CublasLtGemm(const CublasLtGemm&) = delete;
  CublasLtGemm& operator=(const CublasLtGemm&) = delete;

  // Enqueues the GEMM on the default stream (where the shared workspace is used). Operands as
  // PrecisionGemmFn's, aligned at least as the plan was told.
  void run(const void* a, const void* b, void* c, const float* dequant) const;

  // The algorithm, serialised with the library version ("<version>:<hex>"): what `held` takes.
  const std::string& choice() const;
  // The algorithm's configuration in words and where it came from (heuristic or held).
  const std::string& description() const;
  int algorithm() const;                // cuBLASLt's algorithm id (CUBLASLT_ALGO_CONFIG_ID)
  std::size_t workspace_bytes() const;  // what the algorithm needs of the workspace
  bool held() const;                    // `held` was given and taken

  struct Resources;  // descriptors, algorithm and what is said of them (cublaslt_gemm.cpp)

 private:
  std::unique_ptr<Resources> resources_;
};

// What names a problem among a run's held choices; shared by every study that runs it.
std::string cublaslt_choice_key(Precision precision, MatmulShape shape, CublasLtAlignment alignment);

// The process's plan for a problem, made on first use (taking `held` then) and kept.
const CublasLtGemm& cublaslt_gemm(Precision precision, MatmulShape shape, CublasLtAlignment alignment,
                                  const float* dequant = nullptr,
                                  const std::optional<std::string>& held = std::nullopt);

// The plan, its algorithm held across the run's processes in `choices` (a HeldChoices: find(key),
// record(key, choice)): the first process records the heuristic's choice, later ones take it.
template <typename Choices>
const CublasLtGemm& cublaslt_gemm_held(Choices& choices, Precision precision, MatmulShape shape,
                                       CublasLtAlignment alignment, const float* dequant = nullptr) {
  const std::string key = cublaslt_choice_key(precision, shape, alignment);
  const CublasLtGemm& plan = cublaslt_gemm(precision, shape, alignment, dequant, choices.find(key));
  choices.record(key, plan.choice());
  return plan;
}

}  // namespace gpubench
