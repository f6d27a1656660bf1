#pragma once

namespace gpubench {
// y = a*x + b as one fused multiply-add, rounded once: std::fma on the host gives the same bits
// (the primitives study's transform, core/operations.hpp's AffineTransformFn).
struct Affine {
  float a, b;
  __host__ __device__ float operator()(float x) const { return fmaf(a, x, b); }
};
}  // namespace gpubench
