#include "core/verify.hpp"

#include <cmath>
#include <cstdio>

namespace gpubench {

Tolerance accumulation_tolerance(double unit_roundoff, int k) {
  constexpr double kHeadroom = 16.0;
  const double bound = kHeadroom * unit_roundoff * std::sqrt(static_cast<double>(k > 0 ? k : 1));
  return {bound, bound};
}

bool Verification::passed() const {
  // Written so that a NaN error compares false and fails.
  return non_finite == 0 && rel_fro_error <= tolerance.rel_fro &&
         max_rel_error <= tolerance.max_rel;
}

std::string Verification::describe() const {
  char text[256];
  std::snprintf(text, sizeof text,
                "relative Frobenius error %.3g (tolerance %.3g), largest element error %.3g of "
                "max |C| (tolerance %.3g), %zu non-finite values",
                rel_fro_error, tolerance.rel_fro, max_rel_error, tolerance.max_rel, non_finite);
  return text;
}

namespace {

// Parallel over rows (checks of 4096^2 outputs took 0.14 s on one core, twice per precision entry);
// the sums are reduced per thread, so their rounding differs from a serial sum only far below any
// tolerance.
template <typename T>
Verification compare_with_reference(const T* c, const MatmulReference& ref, Tolerance tolerance) {
  Verification result;
  result.tolerance = tolerance;
  const int n = ref.shape.n;
  const long rows = static_cast<long>(ref.rows.size());
  double diff_sq = 0, ref_sq = 0, max_diff = 0, max_ref = 0;
  std::size_t non_finite = 0;
#pragma omp parallel for schedule(static) reduction(+ : diff_sq, ref_sq, non_finite) reduction(max : max_diff, max_ref)
  for (long r = 0; r < rows; ++r) {
    const T* out = c + static_cast<std::size_t>(ref.rows[r]) * n;
    const double* expected = ref.values.data() + static_cast<std::size_t>(r) * n;
    for (int j = 0; j < n; ++j) {
      const double value = out[j];
      if (!std::isfinite(value)) {
        ++non_finite;
        continue;
      }
      const double diff = std::fabs(value - expected[j]);
      diff_sq += diff * diff;
      ref_sq += expected[j] * expected[j];
      max_diff = std::fmax(max_diff, diff);
      max_ref = std::fmax(max_ref, std::fabs(expected[j]));
    }
  }
  result.non_finite = non_finite;
  // An all-zero reference only arises from degenerate inputs; then any difference fails.
  result.rel_fro_error = ref_sq > 0 ? std::sqrt(diff_sq / ref_sq) : (diff_sq > 0 ? INFINITY : 0.0);
  result.max_rel_error = max_ref > 0 ? max_diff / max_ref : (max_diff > 0 ? INFINITY : 0.0);
  return result;
}

}  // namespace

// Parallel as the matmul check (vectors of a gigabyte and more).
Verification verify_exact(const float* values, const float* expected, std::size_t count) {
  Verification v;
  v.tolerance = {0.0, 0.0};
  double diff_sq = 0, ref_sq = 0, max_diff = 0, max_ref = 0;
  std::size_t non_finite = 0;
  const long elements = static_cast<long>(count);
#pragma omp parallel for schedule(static) reduction(+ : diff_sq, ref_sq, non_finite) reduction(max : max_diff, max_ref)
  for (long i = 0; i < elements; ++i) {
    if (!std::isfinite(values[i])) {
      ++non_finite;
      continue;
    }
    const double diff = std::fabs(static_cast<double>(values[i]) - expected[i]);
    diff_sq += diff * diff;
    ref_sq += static_cast<double>(expected[i]) * expected[i];
    max_diff = std::fmax(max_diff, diff);
    max_ref = std::fmax(max_ref, std::fabs(static_cast<double>(expected[i])));
  }
  v.non_finite = non_finite;
  v.rel_fro_error = ref_sq > 0 ? std::sqrt(diff_sq / ref_sq) : (diff_sq > 0 ? INFINITY : 0.0);
  v.max_rel_error = max_ref > 0 ? max_diff / max_ref : (max_diff > 0 ? INFINITY : 0.0);
  return v;
}

Verification verify_matmul(const float* c, const MatmulReference& ref, Tolerance tolerance) {
  return compare_with_reference(c, ref, tolerance);
}

Verification verify_matmul(const double* c, const MatmulReference& ref, Tolerance tolerance) {
  return compare_with_reference(c, ref, tolerance);
}

}  // namespace gpubench
