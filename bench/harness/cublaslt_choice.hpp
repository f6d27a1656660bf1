// A study's cuBLASLt GEMM plan with its algorithm held across the run's processes, and what an
// entry says of it. Header-only: the plan's part is for the study binaries that link
// gpubench_kernels (kernels/cublaslt_gemm.hpp); the counters are declared in every build.
#pragma once

#include <vector>

#include "harness/study.hpp"

#if GPUBENCH_HAVE_CUDA
#include "cublaslt_gemm.hpp"
#include "harness/held_choices.hpp"
#endif

namespace gpubench {

inline std::vector<CounterRule> cublaslt_choice_counters() {
  return {{"algorithm", "id", "cuBLASLt's algorithm id (CUBLASLT_ALGO_CONFIG_ID) of the timed plan; the entry's "
                              "label gives its whole configuration"},
          {"workspace_bytes", "bytes", "the workspace the cuBLASLt algorithm uses, of the one PyTorch gives "
                                       "cuBLASLt on this GPU"},
          {"algorithm_held", "flag", "1 when the cuBLASLt algorithm is the one an earlier process of the run "
                                     "chose (--held-choices)"}};
}

#if GPUBENCH_HAVE_CUDA

// The plan of the problem, made now (before the entry's first call): the first process of the run
// records the heuristic's algorithm under the problem's key, later ones take it, so every trial
// times the same kernel. `alignment`: the operands' (CublasLtAlignment::of_allocations() for
// buffers not yet allocated).
inline const CublasLtGemm& held_cublaslt_plan(Precision precision, MatmulShape shape, CublasLtAlignment alignment,
                                              const float* dequant = nullptr) {
  return cublaslt_gemm_held(held_choices(), precision, shape, alignment, dequant);
}

// The plan's counters (cublaslt_choice_counters) and, in words, its configuration as the label.
inline void report_cublaslt_choice(PreparedEntry& entry, const CublasLtGemm& plan) {
  entry.counters["algorithm"] = plan.algorithm();
  entry.counters["workspace_bytes"] = static_cast<double>(plan.workspace_bytes());
  entry.counters["algorithm_held"] = plan.held() ? 1 : 0;
  entry.label = plan.description();
  if (!entry.wrong_result.empty()) entry.wrong_result += " (" + plan.description() + ")";
}
#endif  // GPUBENCH_HAVE_CUDA

}  // namespace gpubench
