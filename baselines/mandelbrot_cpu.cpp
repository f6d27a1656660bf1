#include "mandelbrot_cpu.hpp"

#include <cstddef>

namespace gpubench {
namespace {

using Ops = SeparateRounding;

template <typename Real, typename Count>
void scalar_row(const MandelbrotImage& image, const PixelGrid<Real>& grid, int y, Count* row) {
  const Real ci = pixel_coordinate<Ops>(grid.y_min, grid.dy, y);
  for (int x = 0; x < image.width; ++x)
    row[x] = static_cast<Count>(
        escape_count<Ops>(pixel_coordinate<Ops>(grid.x_min, grid.dx, x), ci, image.max_iterations));
}

// Lanes of one group: 64 bytes of Real, two AVX2 vectors (one AVX-512 vector), which gives each core
// two independent chains of dependent operations to overlap.
template <typename Real>
constexpr int kLanes = 64 / sizeof(Real);
constexpr int kRunning = -1;  // a lane's count while its orbit is iterated
constexpr int kOutside = -2;  // a lane past the end of the row

// Escaped lanes keep iterating with the rest of their group (their z grows to infinity and NaN,
// whose comparisons are false); their counts were set when they escaped.
template <typename Real, typename Count>
void simd_row(const MandelbrotImage& image, const PixelGrid<Real>& grid, int y, Count* row) {
  constexpr int lanes = kLanes<Real>;
  const Real ci = pixel_coordinate<Ops>(grid.y_min, grid.dy, y);
  for (int left = 0; left < image.width; left += lanes) {
    Real cr[lanes], zr[lanes], zi[lanes], zr2[lanes], zi2[lanes];
    int count[lanes];
    for (int l = 0; l < lanes; ++l) {
      cr[l] = pixel_coordinate<Ops>(grid.x_min, grid.dx, left + l);
      zr[l] = zi[l] = zr2[l] = zi2[l] = 0;
      count[l] = left + l < image.width ? kRunning : kOutside;
    }
    for (int i = 0; i < image.max_iterations; ++i) {
      int running = 0;
#pragma omp simd reduction(+ : running)
      for (int l = 0; l < lanes; ++l) {
        Orbit<Real> z{zr[l], zi[l], zr2[l], zi2[l]};
        const bool escaped = escapes_after_step<Ops>(z, cr[l], ci);
        zr[l] = z.zr;
        zi[l] = z.zi;
        zr2[l] = z.zr2;
        zi2[l] = z.zi2;
        const bool active = count[l] == kRunning;
        count[l] = active && escaped ? i : count[l];
        running += active && !escaped;
      }
      if (running == 0) break;
    }
    for (int l = 0; l < lanes && left + l < image.width; ++l)
      row[left + l] = static_cast<Count>(count[l] == kRunning ? image.max_iterations : count[l]);
  }
}

template <bool kSimd>
void compute(Precision precision, const MandelbrotImage& image, void* counts, bool parallel) {
  with_mandelbrot_types(precision, image, [&](auto real, auto count) {
    using Real = decltype(real);
    using Count = decltype(count);
    const PixelGrid<Real> grid = image.grid<Real>();
    Count* const out = static_cast<Count*>(counts);
    const auto row = [&](int y) {
      Count* const line = out + static_cast<std::size_t>(y) * image.width;
      if constexpr (kSimd) {
        simd_row(image, grid, y, line);
      } else {
        scalar_row(image, grid, y, line);
      }
    };
    if (parallel) {
#pragma omp parallel for schedule(dynamic)
      for (int y = 0; y < image.height; ++y) row(y);
    } else {
      for (int y = 0; y < image.height; ++y) row(y);
    }
  });
}

}  // namespace

void mandelbrot_loop(Precision precision, const MandelbrotImage& image, void* counts) {
  compute<false>(precision, image, counts, false);
}

void mandelbrot_loop_parallel(Precision precision, const MandelbrotImage& image, void* counts) {
  compute<false>(precision, image, counts, true);
}

void mandelbrot_simd_parallel(Precision precision, const MandelbrotImage& image, void* counts) {
  compute<true>(precision, image, counts, true);
}

}  // namespace gpubench
