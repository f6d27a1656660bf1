#pragma once
#include "core/operations.hpp"

namespace gpubench {
// The hand-written C++ baseline: a BLAS's loop nest as plain loops (packed panels of A and B,
// a 6 x 32 tile of C accumulated in registers, vectorised by the compiler, no intrinsics),
// OpenMP threads owning contiguous row blocks of C. What careful C++ reaches without a BLAS
// library; none of a BLAS's per-CPU tuning.
void matmul_blocked_loop(const float* a, const float* b, float* c, MatmulShape shape);
}  // namespace gpubench
