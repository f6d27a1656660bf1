// The mandelbrot study's CPU side: the escape-time formula (the guide's complex arithmetic, term for
// term), the baselines against it bit for bit on random regions, the checks of a count image, what an
// image says about the work, the PGM it is written as, and the bound on pixels that a contracted (FMA)
// evaluation may change. This file is compiled without contraction, as the baselines are.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "core/mandelbrot.hpp"
#include "mandelbrot_cpu.hpp"

namespace gpubench {
namespace {

using Ops = SeparateRounding;

// The guide's Python, in C++: z = z*z + c on a complex number, escaped once |z|^2 >= 4.
template <typename Real>
int guide_count(Real cr, Real ci, int max_iterations) {
  const std::complex<Real> c(cr, ci);
  std::complex<Real> z = 0;
  for (int i = 0; i < max_iterations; ++i) {
    z = z * z + c;
    if (z.real() * z.real() + z.imag() * z.imag() >= 4) return i;
  }
  return max_iterations;
}

TEST(EscapeCount, KnownPoints) {
  EXPECT_EQ(escape_count<Ops>(0.0, 0.0, 50), 50);   // the origin never escapes
  EXPECT_EQ(escape_count<Ops>(-1.0, 0.0, 50), 50);  // a cycle -1, 0, -1, ...
  EXPECT_EQ(escape_count<Ops>(-2.0, 0.0, 50), 0);   // |z_1|^2 = 4 at once
  EXPECT_EQ(escape_count<Ops>(1.0, 0.0, 50), 1);    // z = 1, 2
  EXPECT_EQ(escape_count<Ops>(0.5f, 0.0f, 50), 4);  // z = 0.5, 0.75, 1.0625, 1.62890625, 3.15...
  EXPECT_EQ(escape_count<Ops>(0.0, 0.0, 0), 0);
}

TEST(EscapeCount, IsTheGuidesComplexArithmetic) {
  std::mt19937_64 engine(7);
  std::uniform_real_distribution<double> re(-2.0, 1.0), im(-1.5, 1.5);
  for (int k = 0; k < 20000; ++k) {
    const double cr = re(engine), ci = im(engine);
    ASSERT_EQ(escape_count<Ops>(cr, ci, 500), guide_count(cr, ci, 500)) << "c = " << cr << " + " << ci << "i";
    const float fr = static_cast<float>(cr), fi = static_cast<float>(ci);
    ASSERT_EQ(escape_count<Ops>(fr, fi, 500), guide_count(fr, fi, 500)) << "c = " << fr << " + " << fi << "i (fp32)";
  }
}

// Every pixel evaluated on its own, in the image's count type.
std::vector<std::uint8_t> pixel_by_pixel(Precision precision, const MandelbrotImage& image) {
  std::vector<std::uint8_t> counts(image.bytes());
  with_mandelbrot_types(precision, image, [&](auto real, auto count) {
    using Real = decltype(real);
    using Count = decltype(count);
    const PixelGrid<Real> grid = image.grid<Real>();
    Count* out = reinterpret_cast<Count*>(counts.data());
    for (int y = 0; y < image.height; ++y)
      for (int x = 0; x < image.width; ++x)
        out[static_cast<std::size_t>(y) * image.width + x] = static_cast<Count>(escape_count<Ops>(
            pixel_coordinate<Ops>(grid.x_min, grid.dx, x), pixel_coordinate<Ops>(grid.y_min, grid.dy, y),
            image.max_iterations));
  });
  return counts;
}

// Odd sizes (no multiple of a SIMD group or a block), regions across the set's edge, limits on both
// sides of the byte counts' largest.
std::vector<MandelbrotImage> random_images() {
  std::mt19937_64 engine(11);
  std::uniform_real_distribution<double> left(-2.2, 0.0), span(0.05, 2.5), bottom(-1.3, 0.2);
  const int sizes[][2] = {{37, 23}, {129, 65}, {300, 17}, {1, 1}, {17, 40}};
  const int limits[] = {20, kLargestByteLimit, kLargestByteLimit + 1, 1000, 3};
  std::vector<MandelbrotImage> images;
  for (int k = 0; k < 5; ++k) {
    const double x = left(engine), y = bottom(engine), width = span(engine);
    images.push_back({sizes[k][0], sizes[k][1], x, x + width, y, y + width, limits[k]});
  }
  return images;
}

struct CpuMandelbrot {
  const char* name;
  MandelbrotFn run;
};
void PrintTo(const CpuMandelbrot& impl, std::ostream* out) { *out << impl.name; }

class CpuMandelbrotTest : public ::testing::TestWithParam<CpuMandelbrot> {};

TEST_P(CpuMandelbrotTest, EqualsThePixelByPixelCountsBitForBit) {
  for (Precision precision : {Precision::fp32, Precision::fp64}) {
    for (const MandelbrotImage& image : random_images()) {
      std::vector<std::uint8_t> counts(image.bytes(), 0xFF);
      GetParam().run(precision, image, counts.data());
      const std::vector<std::uint8_t> expected = pixel_by_pixel(precision, image);
      const CountComparison found = compare_counts(image, counts.data(), expected.data());
      EXPECT_EQ(found.out_of_range, 0u) << GetParam().name << " " << image.width << "x" << image.height;
      EXPECT_EQ(found.differing, 0u) << GetParam().name << " " << image.width << "x" << image.height << " limit "
                                     << image.max_iterations << " precision " << precision_info(precision).name;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Baselines, CpuMandelbrotTest,
                         ::testing::Values(CpuMandelbrot{"loop_1thread", mandelbrot_loop},
                                           CpuMandelbrot{"loop_all_threads", mandelbrot_loop_parallel},
                                           CpuMandelbrot{"simd_all_threads", mandelbrot_simd_parallel}),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(MandelbrotImage, CountsAreBytesUpToTheLargestByteLimit) {
  MandelbrotImage image{3, 2, -2, 1, -1, 1, kLargestByteLimit};
  EXPECT_EQ(image.count_bytes(), 1);
  EXPECT_EQ(image.bytes(), 6u);
  image.max_iterations = kLargestByteLimit + 1;
  EXPECT_EQ(image.count_bytes(), 2);
  EXPECT_EQ(image.bytes(), 12u);
  EXPECT_THROW(mandelbrot_loop(Precision::bf16, image, nullptr), std::invalid_argument);
}

TEST(CompareCounts, CountsDifferencesAndUnwrittenPixels) {
  const MandelbrotImage image{40, 30, -2, 1, -1, 1, 20};
  const std::vector<std::uint8_t> reference = pixel_by_pixel(Precision::fp64, image);
  std::vector<std::uint8_t> counts = reference;
  EXPECT_EQ(compare_counts(image, counts.data(), reference.data()).differing, 0u);
  counts[700] = reference[700] == 20 ? 15 : 20;
  counts[900] = 0xFF;  // the poison: never written
  const CountComparison found = compare_counts(image, counts.data(), reference.data());
  EXPECT_EQ(found.differing, 1u);
  EXPECT_EQ(found.first_differing, 700u);
  EXPECT_EQ(found.max_difference, std::abs(counts[700] - reference[700]));
  EXPECT_EQ(found.out_of_range, 1u);
}

TEST(WorkOfAnImage, ExecutedIterations) {
  const MandelbrotImage image{2, 1, 0, 1, 0, 1, 10};
  const std::uint8_t counts[] = {3, 10};  // escaped after its 4th iteration; never escaped
  EXPECT_EQ(executed_iterations(image, counts), 4.0 + 10.0);
}

TEST(WorkOfAnImage, WarpDivergence) {
  // One warp: two rows of 16 pixels.
  const MandelbrotImage warp{16, 2, 0, 1, 0, 1, 10};
  std::vector<std::uint8_t> counts(32, 5);
  EXPECT_DOUBLE_EQ(warp_divergence(warp, counts.data()), 1.0);
  std::fill(counts.begin(), counts.end(), 0);
  counts[17] = 10;  // one lane runs 10 iterations, the others 1
  EXPECT_DOUBLE_EQ(warp_divergence(warp, counts.data()), 10.0 / (41.0 / 32));
  // A column more: a second warp of two lanes, as uniform as can be.
  const MandelbrotImage wider{17, 2, 0, 1, 0, 1, 10};
  std::vector<std::uint8_t> two_warps(34, 0);
  two_warps[1] = 10;
  EXPECT_DOUBLE_EQ(warp_divergence(wider, two_warps.data()), (10.0 + 1.0) / (41.0 / 32 + 1.0));
}

std::string file_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(CountImage, IsABinaryPgmTopRowFirst) {
  const std::string path = ::testing::TempDir() + "gpubench_counts.pgm";
  const MandelbrotImage words{3, 2, -2, 1, -1, 1, 300};
  const std::uint16_t counts[] = {1, 2, 3, 256, 299, 300};  // row 0 (the bottom), row 1
  write_count_image(path, words, counts, "a note");
  const std::string header = "P5\n# a note\n3 2\n300\n";
  const std::string text = file_text(path);
  ASSERT_EQ(text.size(), header.size() + 12);
  EXPECT_EQ(text.substr(0, header.size()), header);
  const std::string samples = text.substr(header.size());
  EXPECT_EQ(samples, std::string("\x01\x00\x01\x2B\x01\x2C\x00\x01\x00\x02\x00\x03", 12));  // big-endian words
  const MandelbrotImage bytes{2, 2, -2, 1, -1, 1, 20};
  const std::uint8_t small[] = {1, 2, 3, 4};
  write_count_image(path, bytes, small, "bytes");
  EXPECT_EQ(file_text(path), std::string("P5\n# bytes\n2 2\n20\n\x03\x04\x01\x02"));
  std::remove(path.c_str());
  EXPECT_THROW(write_count_image("/nonexistent-directory/x.pgm", bytes, small, ""), std::runtime_error);
}

// --- the bound on pixels a contracted evaluation may change ---------------------------------------
// The formula as nvcc may contract it: every product that feeds an addition fused into it (the
// coordinates, the new imaginary part, the difference of squares, the escape test).
template <typename Real>
int contracted_count(Real cr, Real ci, int max_iterations) {
  Real zr = 0, zi = 0;
  for (int i = 0; i < max_iterations; ++i) {
    const Real next_zi = std::fma(zr + zr, zi, ci);
    zr = std::fma(zr, zr, -(zi * zi)) + cr;
    zi = next_zi;
    if (std::fma(zr, zr, zi * zi) >= 4) return i;
  }
  return max_iterations;
}

// The share of pixels whose contracted count differs from the separately rounded one, and the share
// a one-pixel shift of the image to the left changes.
template <typename Real>
std::pair<double, double> changed_shares(const MandelbrotImage& image) {
  const PixelGrid<Real> grid = image.grid<Real>();
  std::vector<int> exact(image.pixels());
  long contracted_differ = 0;
#pragma omp parallel for schedule(dynamic) reduction(+ : contracted_differ)
  for (int y = 0; y < image.height; ++y) {
    for (int x = 0; x < image.width; ++x) {
      const Real cr = pixel_coordinate<Ops>(grid.x_min, grid.dx, x), ci = pixel_coordinate<Ops>(grid.y_min, grid.dy, y);
      const int count = escape_count<Ops>(cr, ci, image.max_iterations);
      exact[static_cast<std::size_t>(y) * image.width + x] = count;
      const Real fused_cr = std::fma(static_cast<Real>(x), grid.dx, grid.x_min);
      const Real fused_ci = std::fma(static_cast<Real>(y), grid.dy, grid.y_min);
      contracted_differ += contracted_count(fused_cr, fused_ci, image.max_iterations) != count;
    }
  }
  long shift_differ = 0;
  for (int y = 0; y < image.height; ++y)
    for (int x = 0; x + 1 < image.width; ++x) {
      const std::size_t i = static_cast<std::size_t>(y) * image.width + x;
      shift_differ += exact[i] != exact[i + 1];
    }
  const double pixels = static_cast<double>(image.pixels());
  return {contracted_differ / pixels, shift_differ / pixels};
}

TEST(ContractedDifferingFraction, AboveWhatContractionChangesBelowWhatAShiftChanges) {
  const MandelbrotImage guide{1536, 1024, -2, 1, -1, 1, 20};
  const MandelbrotImage deep{256, 256, -2, 1, -1.5, 1.5, 4096};
  for (const auto& [image, shares] : {std::pair{guide, changed_shares<double>(guide)},
                                      std::pair{deep, changed_shares<float>(deep)},
                                      std::pair{deep, changed_shares<double>(deep)}}) {
    const auto [contracted, shifted] = shares;
    EXPECT_LT(contracted, kMandelbrotContractedDifferingFraction) << image.width << " limit " << image.max_iterations;
    EXPECT_GT(shifted, kMandelbrotContractedDifferingFraction) << image.width << " limit " << image.max_iterations;
  }
}

}  // namespace
}  // namespace gpubench
