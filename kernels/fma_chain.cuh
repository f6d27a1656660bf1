#pragma once
#include <cstddef>
#include <cstdint>

#include "core/operations.hpp"

namespace gpubench {
// The roofline study's chain on the GPU (core/operations.hpp's FmaChainFn: device pointers,
// 16-byte aligned, the default stream): a grid-stride loop as wide as the GPU holds at once, each
// thread loading a 16-byte vector (4 FP32, 2 FP64 or 8 FP16 elements), running its independent
// chains k steps in registers (fmaf, fma; FP16 as __hfma2 on half2 pairs, no tensor cores), and
// storing it; the elements past the last whole vector one by one.
void fma_chain_kernel(const float* x, float* y, std::size_t n, int k, float a);
void fma_chain_kernel(const double* x, double* y, std::size_t n, int k, double a);
void fma_chain_kernel(const std::uint16_t* x, std::uint16_t* y, std::size_t n, int k, std::uint16_t a);
}  // namespace gpubench
