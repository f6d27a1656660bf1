// Rung 10's candidates one by one, for its test: the tuner may pick any of them on some GPU and shape,
// so every one must be right. Used only by kernels/sgemm_10_autotuned.cu and its test.
#pragma once

#include "core/operations.hpp"
#include "gemm_ladder.cuh"

namespace gpubench {

int sgemm_10_candidates();

// Candidate `index` (0-based) at `s` (n % 4 == 0), untuned: its launch, and one call on these operands.
GemmLaunch sgemm_10_candidate_launch(int index, MatmulShape s);
void sgemm_10_run_candidate(int index, const float* a, const float* b, float* c, MatmulShape s);

}  // namespace gpubench
