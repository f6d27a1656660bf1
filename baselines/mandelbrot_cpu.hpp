#pragma once
#include "core/mandelbrot.hpp"

namespace gpubench {
// The escape counts of every pixel (core/mandelbrot.hpp's MandelbrotFn), computed with the formula of
// core/escape_time.hpp, each operation rounded on its own (this file is compiled without contraction).
// One pixel after the other, on one thread: the compiled counterpart of the guide's Python loop.
void mandelbrot_loop(Precision precision, const MandelbrotImage& image, void* counts);
// Rows handed out one at a time to all OpenMP threads (schedule(dynamic)): rows through the set take
// many times longer than rows outside it, so a static split would leave threads idle.
void mandelbrot_loop_parallel(Precision precision, const MandelbrotImage& image, void* counts);
// As mandelbrot_loop_parallel, each row in groups of pixels iterated together in SIMD lanes until
// every lane of the group has escaped or reached the limit: the CPU's own divergence, as a warp's.
void mandelbrot_simd_parallel(Precision precision, const MandelbrotImage& image, void* counts);
}  // namespace gpubench
