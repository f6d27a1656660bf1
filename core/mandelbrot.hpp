// The Mandelbrot operation (the mandelbrot study): an image of escape counts over a region of the
// complex plane (the formula: core/escape_time.hpp), its signature, the checks of a count image
// against a reference, and what the image says about the work (iterations, warp divergence).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/escape_time.hpp"
#include "core/precision.hpp"

namespace gpubench {

// Counts are stored in the narrowest unsigned type that holds the iteration limit and one value
// more, the poison of a count never written: bytes (as the guide stores them) up to 254
// iterations, 16-bit words up to 65534.
inline constexpr int kLargestByteLimit = 0xFE;
inline constexpr int kLargestIterationLimit = 0xFFFE;
// The GPU kernels' blocks, kBlockSide x kBlockSide threads (the guide's 16 x 16), one pixel each.
inline constexpr int kBlockSide = 16;
inline constexpr int kWarpSize = 32;
// Floating-point operations of one iteration (escapes_after_step).
inline constexpr double kFlopPerIteration = 8;
// The share of pixels whose counts may differ from a separately rounded reference's where the
// arithmetic contracts multiply-adds into FMAs (the mandelbrot study's kernel_fma): below what a
// one-pixel shift of the image changes, above what contraction changes (both checked by
// tests/test_mandelbrot_cpu.cpp on an emulation of it).
inline constexpr double kMandelbrotContractedDifferingFraction = 1e-2;

struct MandelbrotImage {
  int width = 0;
  int height = 0;
  double x_min = 0, x_max = 0, y_min = 0, y_max = 0;
  int max_iterations = 0;

  std::size_t pixels() const { return static_cast<std::size_t>(width) * height; }
  int count_bytes() const { return max_iterations <= kLargestByteLimit ? 1 : 2; }
  std::size_t bytes() const { return pixels() * count_bytes(); }
  // Row y of the image holds c = x_min + x*dx + i (y_min + y*dy), x = 0 .. width - 1.
  template <typename Real>
  PixelGrid<Real> grid() const {
    return {static_cast<Real>(x_min), static_cast<Real>(y_min), static_cast<Real>((x_max - x_min) / width),
            static_cast<Real>((y_max - y_min) / height)};
  }
};

// Writes the escape counts of every pixel of `image` in `precision` (fp32 or fp64) to `counts`,
// row-major, each image.count_bytes() wide: host memory for a CPU implementation, device memory for
// a GPU one (enqueued on the default stream).
using MandelbrotFn = void (*)(Precision precision, const MandelbrotImage& image, void* counts);

// Calls body(Real{}, Count{}) with the types of `precision` (float, double) and of the image's counts
// (std::uint8_t, std::uint16_t); throws std::invalid_argument for another precision.
template <typename Body>
void with_mandelbrot_types(Precision precision, const MandelbrotImage& image, Body&& body);
[[noreturn]] void throw_unsupported_mandelbrot_precision(Precision precision);

// Count i of an image whose counts are `count_bytes` wide.
int count_at(const void* counts, int count_bytes, std::size_t i);

// How a count image differs from the reference's: pixels whose counts differ and the largest
// difference; counts above the iteration limit (never written: the poison) are out of range.
struct CountComparison {
  std::size_t differing = 0;
  int max_difference = 0;
  std::size_t out_of_range = 0;
  std::size_t first_differing = 0;  // its index, when differing > 0
};
CountComparison compare_counts(const MandelbrotImage& image, const void* counts, const void* reference);

// Iterations the formula ran over the whole image: a pixel that escaped at count i ran i + 1, one
// that never escaped the limit.
double executed_iterations(const MandelbrotImage& image, const void* counts);

// How far the kernel's warps (32 consecutive threads of a 16 x 16 block: two rows of 16 pixels) are
// from running their lanes equally long: the sum over warps of their longest lane's iterations over
// the sum of their mean lane's (lanes outside the image left out). 1: every lane of every warp runs
// as long as the others; a warp runs as long as its longest lane.
double warp_divergence(const MandelbrotImage& image, const void* counts);

// The counts as a binary PGM (P5; 16-bit samples big-endian, as the format says, when the counts are
// 16-bit), top row first (the largest y), its maximum value the iteration limit, a comment naming
// the region. Throws std::runtime_error when the file cannot be written.
void write_count_image(const std::string& path, const MandelbrotImage& image, const void* counts,
                       const std::string& note);

// --- implementation of the template ------------------------------------------------------------
template <typename Body>
void with_mandelbrot_types(Precision precision, const MandelbrotImage& image, Body&& body) {
  const auto with_count = [&](auto real) {
    if (image.count_bytes() == 1) {
      body(real, std::uint8_t{});
    } else {
      body(real, std::uint16_t{});
    }
  };
  if (precision == Precision::fp32) {
    with_count(float{});
  } else if (precision == Precision::fp64) {
    with_count(double{});
  } else {
    throw_unsupported_mandelbrot_precision(precision);
  }
}

}  // namespace gpubench
