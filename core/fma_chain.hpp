// The roofline study's operation (core/operations.hpp's FmaChainFn): y = x, then k times
// y = y*a + x. The chain is linear in x, y_k = x * (a^k + a^(k-1) + ... + 1), so the exact result
// of every element is x times one factor, computed here once in long double: the check costs one
// pass over the output, whatever k is.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "core/precision_codec.hpp"
#include "core/verify.hpp"

namespace gpubench {

// A value as the chain stores it in precision T (FP16: binary16 bits, std::uint16_t).
template <typename T>
T fma_chain_stored(double value) {
  if constexpr (std::is_same_v<T, std::uint16_t>) {
    return float_to_half_bits(static_cast<float>(value));
  } else {
    return static_cast<T>(value);
  }
}

// The chain's factor a^k + ... + a + 1 (y_k / x in exact arithmetic), in long double.
long double fma_chain_factor(int k, double a);

// With 0 < a < 1 each FMA rounds a value no larger than |y_k| once, and the error it makes shrinks
// by a at every later step: |error| <= u |y_k| min(k, 1/(1-a)). The bound is held against the
// largest |y_k| with a factor 4 of headroom (an FP16 chain that a CPU computes in FP32 and rounds
// to FP16 after each step rounds twice); a wrong element, an unwritten one (NaN) or a chain of
// another length at small k fails. At large k the factor converges to 1/(1-a), so there the check
// catches wrong and unwritten elements, not a chain a few steps short.
Tolerance fma_chain_tolerance(double unit_roundoff, int k, double a);

// The output y of the chain over x, held against x * fma_chain_factor within fma_chain_tolerance
// (FP16: binary16 bits).
Verification verify_fma_chain(const float* x, const float* y, std::size_t n, int k, float a);
Verification verify_fma_chain(const double* x, const double* y, std::size_t n, int k, double a);
Verification verify_fma_chain(const std::uint16_t* x, const std::uint16_t* y, std::size_t n, int k, std::uint16_t a);

}  // namespace gpubench
