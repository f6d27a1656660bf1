#pragma once
#include "core/mandelbrot.hpp"

namespace gpubench {
// One thread per pixel in blocks of 16 x 16 threads (the guide's launch), counts written to device
// memory (core/mandelbrot.hpp's MandelbrotFn). Each operation of the formula rounded on its own
// (SeparateRounding): the counts equal the CPU baselines' bit for bit.
void mandelbrot_kernel(Precision precision, const MandelbrotImage& image, void* counts);
// The same kernel written with plain operators, which nvcc contracts into fused multiply-adds
// (CompilerRounding): what a CUDA program written the plain way computes.
void mandelbrot_kernel_fma(Precision precision, const MandelbrotImage& image, void* counts);
}  // namespace gpubench
