#pragma once
#include <cstdint>

#include "core/operations.hpp"

namespace gpubench {
// The roofline study's chain (y = x, then k times y = y*a + x) on all the host's threads: each
// thread takes contiguous blocks of 8 independent 64-byte vectors (GCC vector extensions, as wide
// as the CPU's registers allow with -march=native; 8 chains in flight cover the FMA units'
// latency), and keeps a block in registers for all k steps; schedule(static) gives a thread the
// elements whose pages it first wrote. FP16 is _Float16: FMAs in FP16 where the CPU has them
// (AVX512-FP16), otherwise whatever the compiler makes of it (FP32 arithmetic, converted).
void fma_chain_openmp(const float* x, float* y, std::size_t n, int k, float a);
void fma_chain_openmp(const double* x, double* y, std::size_t n, int k, double a);
void fma_chain_openmp(const std::uint16_t* x, std::uint16_t* y, std::size_t n, int k, std::uint16_t a);
}  // namespace gpubench
