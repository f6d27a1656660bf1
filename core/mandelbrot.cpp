#include "core/mandelbrot.hpp"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <vector>

namespace gpubench {

void throw_unsupported_mandelbrot_precision(Precision precision) {
  throw std::invalid_argument(std::string("mandelbrot: no ") + precision_info(precision).name +
                              " arithmetic (fp32 and fp64 only)");
}

int count_at(const void* counts, int count_bytes, std::size_t i) {
  return count_bytes == 1 ? static_cast<const std::uint8_t*>(counts)[i] : static_cast<const std::uint16_t*>(counts)[i];
}

// The loops below run over all threads: images of 8192 x 8192 pixels are checked once per entry.
CountComparison compare_counts(const MandelbrotImage& image, const void* counts, const void* reference) {
  const int bytes = image.count_bytes();
  const long pixels = static_cast<long>(image.pixels());
  std::size_t differing = 0, out_of_range = 0;
  long first = pixels;
  int largest = 0;
#pragma omp parallel for schedule(static) reduction(+ : differing, out_of_range) reduction(min : first) \
    reduction(max : largest)
  for (long i = 0; i < pixels; ++i) {
    const int count = count_at(counts, bytes, i);
    if (count > image.max_iterations) {
      ++out_of_range;
      continue;
    }
    const int difference = std::abs(count - count_at(reference, bytes, i));
    if (difference == 0) continue;
    ++differing;
    first = std::min(first, i);
    largest = std::max(largest, difference);
  }
  CountComparison found;
  found.differing = differing;
  found.max_difference = largest;
  found.out_of_range = out_of_range;
  found.first_differing = differing > 0 ? static_cast<std::size_t>(first) : 0;
  return found;
}

namespace {

int iterations_of(int count, int max_iterations) { return count < max_iterations ? count + 1 : max_iterations; }

}  // namespace

double executed_iterations(const MandelbrotImage& image, const void* counts) {
  const int bytes = image.count_bytes();
  const long pixels = static_cast<long>(image.pixels());
  double total = 0;
#pragma omp parallel for schedule(static) reduction(+ : total)
  for (long i = 0; i < pixels; ++i) total += iterations_of(count_at(counts, bytes, i), image.max_iterations);
  return total;
}

double warp_divergence(const MandelbrotImage& image, const void* counts) {
  constexpr int kRowsPerWarp = kWarpSize / kBlockSide;
  const int bytes = image.count_bytes();
  double longest = 0, mean = 0;
#pragma omp parallel for schedule(static) reduction(+ : longest, mean)
  for (int top = 0; top < image.height; top += kRowsPerWarp) {  // a warp's rows: block rows pair up
    for (int left = 0; left < image.width; left += kBlockSide) {
      int lanes = 0, warp_longest = 0;
      double warp_total = 0;
      for (int y = top; y < std::min(top + kRowsPerWarp, image.height); ++y) {
        for (int x = left; x < std::min(left + kBlockSide, image.width); ++x) {
          const int ran = iterations_of(count_at(counts, bytes, static_cast<std::size_t>(y) * image.width + x),
                                        image.max_iterations);
          warp_longest = std::max(warp_longest, ran);
          warp_total += ran;
          ++lanes;
        }
      }
      longest += warp_longest;
      mean += warp_total / lanes;
    }
  }
  return mean > 0 ? longest / mean : 1.0;
}

void write_count_image(const std::string& path, const MandelbrotImage& image, const void* counts,
                       const std::string& note) {
  std::ofstream out(path, std::ios::binary);
  out << "P5\n# " << note << "\n" << image.width << " " << image.height << "\n" << image.max_iterations << "\n";
  const int bytes = image.count_bytes();
  std::vector<char> row(static_cast<std::size_t>(image.width) * bytes);
  for (int y = image.height - 1; y >= 0; --y) {
    for (int x = 0; x < image.width; ++x) {
      const int count = count_at(counts, bytes, static_cast<std::size_t>(y) * image.width + x);
      if (bytes == 1) {
        row[x] = static_cast<char>(count);
      } else {
        row[2 * x] = static_cast<char>(count >> 8);
        row[2 * x + 1] = static_cast<char>(count & 0xFF);
      }
    }
    out.write(row.data(), static_cast<std::streamsize>(row.size()));
  }
  if (!out) throw std::runtime_error("cannot write the count image " + path);
}

}  // namespace gpubench
