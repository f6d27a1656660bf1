#include "core/verify.hpp"

#include <cmath>
#include <cstdio>

#include "core/compare_elements.hpp"

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

// Every row the reference holds, element by element (the full output, or its sampled rows), and
// every element of the output for NaN or Inf.
template <typename T>
Verification compare_with_reference(const T* c, const MatmulReference& ref, Tolerance tolerance) {
  return compare_reference_rows(ref, tolerance, [c](std::size_t i) { return static_cast<double>(c[i]); });
}

}  // namespace

Verification verify_exact(const float* values, const float* expected, std::size_t count) {
  return compare_elements(count, Tolerance{0.0, 0.0},
                          [&](std::size_t i) { return std::pair<double, double>(values[i], expected[i]); });
}

Verification verify_matmul(const float* c, const MatmulReference& ref, Tolerance tolerance) {
  return compare_with_reference(c, ref, tolerance);
}

Verification verify_matmul(const double* c, const MatmulReference& ref, Tolerance tolerance) {
  return compare_with_reference(c, ref, tolerance);
}

}  // namespace gpubench
