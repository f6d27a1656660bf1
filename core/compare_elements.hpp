// The errors every check records (Verification, core/verify.hpp) over `count` output values, each
// against what it should be, compared in parallel: `element(i)` returns {value, expected}. A NaN or
// Inf value is counted as non-finite (a poisoned value never written fails); against an all-zero
// reference any difference fails. Included by the checks' .cpp files only, which OpenMP compiles.
#pragma once

#include <cmath>
#include <cstddef>
#include <utility>

#include "core/verify.hpp"

namespace gpubench {

template <typename Element>
Verification compare_elements(std::size_t count, Tolerance tolerance, Element element) {
  double diff_sq = 0, ref_sq = 0, max_diff = 0, max_ref = 0;
  std::size_t non_finite = 0;
  const long elements = static_cast<long>(count);
  // The sums are reduced per thread: their rounding differs from a serial sum far below any tolerance.
#pragma omp parallel for schedule(static) reduction(+ : diff_sq, ref_sq, non_finite) reduction(max : max_diff, max_ref)
  for (long i = 0; i < elements; ++i) {
    const std::pair<double, double> compared = element(static_cast<std::size_t>(i));
    const double value = compared.first, expected = compared.second;
    if (!std::isfinite(value)) {
      ++non_finite;
      continue;
    }
    const double diff = std::fabs(value - expected);
    diff_sq += diff * diff;
    ref_sq += expected * expected;
    max_diff = std::fmax(max_diff, diff);
    max_ref = std::fmax(max_ref, std::fabs(expected));
  }
  Verification result;
  result.tolerance = tolerance;
  result.non_finite = non_finite;
  result.rel_fro_error = ref_sq > 0 ? std::sqrt(diff_sq / ref_sq) : (diff_sq > 0 ? INFINITY : 0.0);
  result.max_rel_error = max_ref > 0 ? max_diff / max_ref : (max_diff > 0 ? INFINITY : 0.0);
  return result;
}

// How many of `count` values are NaN or Inf, `value(i)` giving each: the check of the elements a
// comparison with a sampled reference leaves out (an element never written is NaN-poisoned).
template <typename Value>
std::size_t count_non_finite(std::size_t count, Value value) {
  std::size_t non_finite = 0;
  const long elements = static_cast<long>(count);
#pragma omp parallel for schedule(static) reduction(+ : non_finite)
  for (long i = 0; i < elements; ++i) non_finite += std::isfinite(value(static_cast<std::size_t>(i))) ? 0 : 1;
  return non_finite;
}

// A GEMM's m x n output against `ref` (core/verify.hpp's verify_matmul), `value(i)` giving the
// output's element i (row-major) as FP64: the rows the reference holds compared element by element,
// and, where it holds only some rows, every other element still counted if NaN or Inf.
template <typename Value>
Verification compare_reference_rows(const MatmulReference& ref, Tolerance tolerance, Value value) {
  const std::size_t n = static_cast<std::size_t>(ref.shape.n);
  Verification result = compare_elements(ref.rows.size() * n, tolerance, [&](std::size_t i) {
    return std::pair<double, double>(value(static_cast<std::size_t>(ref.rows[i / n]) * n + i % n), ref.values[i]);
  });
  if (!ref.complete()) result.non_finite = count_non_finite(static_cast<std::size_t>(ref.shape.m) * n, value);
  return result;
}

}  // namespace gpubench
