#include "core/fma_chain.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "core/compare_elements.hpp"
#include "core/precision_codec.hpp"

namespace gpubench {
namespace {

constexpr double kHalfUnitRoundoff = 4.8828125e-4;  // 2^-11
constexpr double kHeadroom = 4.0;

double as_double(float value) { return value; }
double as_double(double value) { return value; }
double as_double(std::uint16_t bits) { return half_bits_to_float(bits); }

template <typename T>
double unit_roundoff() {
  if constexpr (std::is_same_v<T, std::uint16_t>) {
    return kHalfUnitRoundoff;
  } else {
    return std::numeric_limits<T>::epsilon() / 2;
  }
}

template <typename T>
Verification check(const T* x, const T* y, std::size_t n, int k, T a) {
  const double multiplier = as_double(a);
  const long double factor = fma_chain_factor(k, multiplier);
  return compare_elements(n, fma_chain_tolerance(unit_roundoff<T>(), k, multiplier), [&](std::size_t i) {
    return std::pair<double, double>(as_double(y[i]), static_cast<double>(as_double(x[i]) * factor));
  });
}

}  // namespace

long double fma_chain_factor(int k, double a) {
  long double factor = 1;
  for (int step = 0; step < k; ++step) factor = factor * a + 1;
  return factor;
}

Tolerance fma_chain_tolerance(double unit_roundoff, int k, double a) {
  const double steps = a > 0 && a < 1 ? std::min(static_cast<double>(std::max(k, 1)), 1 / (1 - a)) : std::max(k, 1);
  const double bound = kHeadroom * unit_roundoff * steps;
  return {bound, bound};
}

Verification verify_fma_chain(const float* x, const float* y, std::size_t n, int k, float a) {
  return check(x, y, n, k, a);
}

Verification verify_fma_chain(const double* x, const double* y, std::size_t n, int k, double a) {
  return check(x, y, n, k, a);
}

Verification verify_fma_chain(const std::uint16_t* x, const std::uint16_t* y, std::size_t n, int k, std::uint16_t a) {
  return check(x, y, n, k, a);
}

}  // namespace gpubench
