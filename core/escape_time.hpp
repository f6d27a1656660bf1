// The Mandelbrot escape-time formula, one definition for the CPU baselines and the GPU kernels
// (compiled by the host compiler and by nvcc), so both evaluate the same operations in the same
// order: z = z^2 + c from z = 0, the count the index of the first iteration after which
// |z|^2 >= 4, or the iteration limit when none is. It is the guide's Python, term for term:
// its complex square z*z + c rounds re = (zr*zr - zi*zi) + cr and im = (zr*zi + zi*zr) + ci,
// and zr*zi + zi*zr = (zr + zr)*zi exactly (doubling is exact).
//
// Which operations are fused is the arithmetic policy's:
//   SeparateRounding  every multiply and add rounded on its own, as IEEE 754 defines them: on the
//                     device __fmul_rn/__fadd_rn (nvcc never contracts them into an FMA), on the host
//                     plain operators in a file compiled with -ffp-contract=off. CPU and GPU then agree
//                     bit for bit.
//   CompilerRounding  plain operators: in device code nvcc contracts a*b + c into one FMA (its default,
//                     -fmad=true), as a CUDA program written the plain way gets. An FMA rounds once
//                     where the pair rounds twice, so an orbit that passes close to the escape test can
//                     escape an iteration earlier or later than the separately rounded one.
#pragma once

#if defined(__CUDACC__)
#define GPUBENCH_HOST_DEVICE __host__ __device__
#else
#define GPUBENCH_HOST_DEVICE
#endif

namespace gpubench {

struct SeparateRounding {
#if defined(__CUDA_ARCH__)
  static __device__ float mul(float a, float b) { return __fmul_rn(a, b); }
  static __device__ float add(float a, float b) { return __fadd_rn(a, b); }
  static __device__ float sub(float a, float b) { return __fsub_rn(a, b); }
  static __device__ double mul(double a, double b) { return __dmul_rn(a, b); }
  static __device__ double add(double a, double b) { return __dadd_rn(a, b); }
  static __device__ double sub(double a, double b) { return __dsub_rn(a, b); }
#else
  template <typename Real>
  static Real mul(Real a, Real b) { return a * b; }
  template <typename Real>
  static Real add(Real a, Real b) { return a + b; }
  template <typename Real>
  static Real sub(Real a, Real b) { return a - b; }
#endif
};

struct CompilerRounding {
  template <typename Real>
  static GPUBENCH_HOST_DEVICE Real mul(Real a, Real b) { return a * b; }
  template <typename Real>
  static GPUBENCH_HOST_DEVICE Real add(Real a, Real b) { return a + b; }
  template <typename Real>
  static GPUBENCH_HOST_DEVICE Real sub(Real a, Real b) { return a - b; }
};

// Where pixel (x, y) lies: c = (x_min + x*dx, y_min + y*dy), the guide's left and bottom edges.
template <typename Real>
struct PixelGrid {
  Real x_min, y_min, dx, dy;
};

template <typename Ops, typename Real>
GPUBENCH_HOST_DEVICE inline Real pixel_coordinate(Real origin, Real step, int index) {
  return Ops::add(origin, Ops::mul(static_cast<Real>(index), step));
}

// The state of one orbit: z and its squares (kept for the next step and the escape test).
template <typename Real>
struct Orbit {
  Real zr = 0, zi = 0, zr2 = 0, zi2 = 0;
};

// One iteration, 8 floating-point operations; true when z escaped (|z|^2 >= 4).
template <typename Ops, typename Real>
GPUBENCH_HOST_DEVICE inline bool escapes_after_step(Orbit<Real>& z, Real cr, Real ci) {
  z.zi = Ops::add(Ops::mul(Ops::add(z.zr, z.zr), z.zi), ci);
  z.zr = Ops::add(Ops::sub(z.zr2, z.zi2), cr);
  z.zr2 = Ops::mul(z.zr, z.zr);
  z.zi2 = Ops::mul(z.zi, z.zi);
  return Ops::add(z.zr2, z.zi2) >= static_cast<Real>(4);
}

// The escape count of c: 0 .. max_iterations.
template <typename Ops, typename Real>
GPUBENCH_HOST_DEVICE inline int escape_count(Real cr, Real ci, int max_iterations) {
  Orbit<Real> z;
  for (int i = 0; i < max_iterations; ++i)
    if (escapes_after_step<Ops>(z, cr, ci)) return i;
  return max_iterations;
}

}  // namespace gpubench
