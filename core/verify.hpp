// One verification routine for every implementation of an operation, CPU or GPU:
// compare its output with the FP64 reference computed from the same inputs.
#pragma once

#include <cstddef>
#include <string>

#include "core/reference.hpp"

namespace gpubench {

// Unit roundoff of the arithmetic an implementation accumulates in.
inline constexpr double kFp32UnitRoundoff = 5.9604644775390625e-8;  // 2^-24

struct Tolerance {
  double rel_fro;  // on ||C - ref||_F / ||ref||_F
  double max_rel;  // on max |C - ref| / max |ref|
};

// Rounding errors of a length-k dot product with random-sign terms grow like
// u * sqrt(k) relative to the result; the factor leaves room for blocked and FMA
// orderings while any indexing or synchronisation fault (errors near 1) still fails.
Tolerance accumulation_tolerance(double unit_roundoff, int k);

struct Verification {
  double rel_fro_error = 0;
  double max_rel_error = 0;
  std::size_t non_finite = 0;  // NaN or Inf in the output (poisoned and never written, or overflow)
  Tolerance tolerance{};

  bool passed() const;
  std::string describe() const;
};

// Bit for bit: `count` values against what they must equal exactly (a copy, one rounded
// operation per element), the errors recorded as the matmul ones are (both must be 0); a
// NaN or Inf (a poisoned value never written) fails.
Verification verify_exact(const float* values, const float* expected, std::size_t count);

// `c` holds the full m x n output, row-major: the rows the reference holds are compared with it, and
// every element must be finite (with a sampled reference, the rows it lacks too).
Verification verify_matmul(const float* c, const MatmulReference& ref, Tolerance tolerance);
Verification verify_matmul(const double* c, const MatmulReference& ref, Tolerance tolerance);

}  // namespace gpubench
