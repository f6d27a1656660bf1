#include "conv2d_cpu.hpp"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <vector>

#include "core/first_touch.hpp"

namespace gpubench {
namespace {

// Element strides of a 4-D tensor given as (outer, channel, row, column): the input
// (n, c, h, w), the output (n, k, p, q) and the filter (k, c, r, s) alike. One indexing
// routine then serves both layouts.
struct Strides {
  std::size_t outer, channel, row, column;

  std::size_t at(int o, int c, int y, int x) const {
    return o * outer + c * channel + y * row + x * column;
  }
};

Strides strides_of(TensorLayout layout, int channels, int rows, int columns) {
  const std::size_t c = channels, y = rows, x = columns;
  if (layout == TensorLayout::nchw) return {c * y * x, y * x, x, 1};
  return {y * x * c, 1, x * c, c};  // nhwc
}

struct Conv2dIndexing {
  Strides input, filter, output;

  Conv2dIndexing(Conv2dShape s, TensorLayout layout)
      : input(strides_of(layout, s.in_channels, s.height, s.width)),
        filter(strides_of(layout, s.in_channels, s.kernel, s.kernel)),
        output(strides_of(layout, s.out_channels, s.out_height(), s.out_width())) {}
};

// One output element (image n, filter k, position p, q) summed in FP64: verification's reference.
double output_element_fp64(const float* input, const float* filter, const Conv2dShape& s, const Conv2dIndexing& ix,
                           int n, int k, int p, int q) {
  double sum = 0;
  for (int r = 0; r < s.kernel; ++r) {
    const int h = p * s.stride - s.padding + r;
    if (h < 0 || h >= s.height) continue;
    for (int t = 0; t < s.kernel; ++t) {
      const int w = q * s.stride - s.padding + t;
      if (w < 0 || w >= s.width) continue;
      for (int c = 0; c < s.in_channels; ++c) {
        sum += static_cast<double>(input[ix.input.at(n, c, h, w)]) * filter[ix.filter.at(k, c, r, t)];
      }
    }
  }
  return sum;
}

// --- im2col -----------------------------------------------------------------------
// A 1x1 filter at stride 1 without padding reads the input as it lies: the image is its
// own column matrix, so no copy is made (as any framework does).
bool is_pointwise(const Conv2dShape& s) { return s.kernel == 1 && s.stride == 1 && s.padding == 0; }

std::size_t column_elements(const Conv2dShape& s) {
  return static_cast<std::size_t>(s.accumulation_length()) * s.out_height() * s.out_width();
}

// Output columns [q_begin, q_end) read input columns inside the image for filter column t;
// the others read padding.
void valid_columns(const Conv2dShape& s, int t, int& q_begin, int& q_end) {
  const int q_count = s.out_width();
  const int first = s.padding - t;  // q * stride >= padding - t
  q_begin = first <= 0 ? 0 : std::min(q_count, (first + s.stride - 1) / s.stride);
  const int last = s.width - 1 + s.padding - t;  // q * stride <= width - 1 + padding - t
  q_end = last < 0 ? 0 : std::min(q_count, last / s.stride + 1);
  q_end = std::max(q_end, q_begin);
}

// Column matrix of one image, NCHW: CRS rows (c, r, t) of PQ; NHWC: PQ rows (p, q) of RSC,
// matching the KRSC filter. A row is the unit of work spread over threads.
struct ColumnLayout {
  int rows, row_length;
};

ColumnLayout column_layout(const Conv2dShape& s, TensorLayout layout) {
  const int pq = s.out_height() * s.out_width();
  if (layout == TensorLayout::nchw) return {s.accumulation_length(), pq};
  return {pq, s.accumulation_length()};
}

// Row (c, r, t): input channel c shifted by filter tap (r, t), zeros where it reads padding.
void im2col_row_nchw(const float* image, const Conv2dShape& s, int row, float* out) {
  const int p_count = s.out_height(), q_count = s.out_width();
  const int c = row / (s.kernel * s.kernel), r = row / s.kernel % s.kernel, t = row % s.kernel;
  int q_begin, q_end;
  valid_columns(s, t, q_begin, q_end);
  const float* channel = image + static_cast<std::size_t>(c) * s.height * s.width;
  for (int p = 0; p < p_count; ++p, out += q_count) {
    const int h = p * s.stride - s.padding + r;
    if (h < 0 || h >= s.height) {
      std::fill(out, out + q_count, 0.0f);
      continue;
    }
    const float* in = channel + static_cast<std::size_t>(h) * s.width;
    std::fill(out, out + q_begin, 0.0f);
    for (int q = q_begin; q < q_end; ++q) out[q] = in[q * s.stride - s.padding + t];
    std::fill(out + q_end, out + q_count, 0.0f);
  }
}

// Row (p, q): the R x S x C patch under output pixel (p, q), C contiguous channels per tap.
void im2col_row_nhwc(const float* image, const Conv2dShape& s, int row, float* out) {
  const int p = row / s.out_width(), q = row % s.out_width();
  const std::size_t c_count = s.in_channels;
  for (int r = 0; r < s.kernel; ++r) {
    const int h = p * s.stride - s.padding + r;
    for (int t = 0; t < s.kernel; ++t, out += c_count) {
      const int w = q * s.stride - s.padding + t;
      if (h < 0 || h >= s.height || w < 0 || w >= s.width) {
        std::fill(out, out + c_count, 0.0f);
      } else {
        std::copy_n(image + (static_cast<std::size_t>(h) * s.width + w) * c_count, c_count, out);
      }
    }
  }
}

// Column matrices of `count` consecutive images, one after another. Spread over OpenMP
// threads: each copied element feeds only 2K flop of GEMM (128 for K = 64), so on many
// cores a serial copy would take longer than the GEMM.
void im2col_images(const float* images, const Conv2dShape& s, TensorLayout layout, int count, float* columns) {
  const ColumnLayout cl = column_layout(s, layout);
  const std::size_t image_size = static_cast<std::size_t>(s.in_channels) * s.height * s.width;
  const auto im2col_row = layout == TensorLayout::nchw ? im2col_row_nchw : im2col_row_nhwc;
  const long total_rows = static_cast<long>(count) * cl.rows;
#pragma omp parallel for schedule(static)
  for (long i = 0; i < total_rows; ++i) {
    im2col_row(images + i / cl.rows * image_size, s, static_cast<int>(i % cl.rows),
               columns + static_cast<std::size_t>(i) * cl.row_length);
  }
}

// Kept across calls (one per calling thread, at most the budget below or one image's): a
// fresh buffer of megabytes would add its page faults to every timed call. Its pages are
// first written by the threads that write the columns (im2col_images' static schedule).
float* column_buffer(std::size_t elements) {
  thread_local std::unique_ptr<ThreadPlacedArray<float>> buffer;
  return grown(buffer, elements);
}

// --- GEMMs over groups of images ---------------------------------------------------------
// A column matrix is R*S times the size of its image: for the whole batch it would reach
// gigabytes (3x3, 256 channels, 14x14, N = 256: 1.8 GB). Columns are built for as many
// images as fit in this budget at a time (at least one), which bounds memory while
// keeping OpenMP passes few: after each pass libgomp's threads spin for a while
// (OMP_WAIT_POLICY unset) and take cores from the OpenBLAS threads of the next GEMM. On
// 2 cores, one image per pass ran the 3x3 layers at half the speed of 64 MiB passes.
constexpr std::size_t kColumnBudgetElements = (64u << 20) / sizeof(float);

int images_per_pass(const Conv2dShape& s) {
  const std::size_t per_image = column_elements(s);
  return static_cast<int>(std::clamp<std::size_t>(kColumnBudgetElements / per_image, 1, s.batch));
}

// NCHW: output image (K x PQ) = filter (K x CRS) * columns (CRS x PQ). One GEMM per image:
// several images side by side would give a K x (images * PQ) output, not NCHW.
void conv2d_nchw(const float* input, const float* filter, float* output, const Conv2dShape& s) {
  const int pq = s.out_height() * s.out_width();
  const int crs = s.accumulation_length();
  const std::size_t image_in = static_cast<std::size_t>(s.in_channels) * s.height * s.width;
  const std::size_t image_out = static_cast<std::size_t>(s.out_channels) * pq;
  const bool pointwise = is_pointwise(s);
  const int group = pointwise ? s.batch : images_per_pass(s);
  float* columns = pointwise ? nullptr : column_buffer(group * column_elements(s));
  for (int first = 0; first < s.batch; first += group) {
    const int count = std::min(group, s.batch - first);
    if (!pointwise) im2col_images(input + first * image_in, s, TensorLayout::nchw, count, columns);
    for (int i = 0; i < count; ++i) {
      const float* b = pointwise ? input + (first + i) * image_in : columns + i * column_elements(s);
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, s.out_channels, pq, crs, 1.0f, filter, crs, b, pq,
                  0.0f, output + (first + i) * image_out, pq);
    }
  }
}

// NHWC: output (pixels x K) = columns (pixels x RSC) * filter^T (RSC x K), already NHWC, so
// the pixels of a whole group of images go through one GEMM.
void conv2d_nhwc(const float* input, const float* filter, float* output, const Conv2dShape& s) {
  const int pq = s.out_height() * s.out_width();
  const int rsc = s.accumulation_length();
  const std::size_t image_in = static_cast<std::size_t>(s.height) * s.width * s.in_channels;
  const std::size_t image_out = static_cast<std::size_t>(pq) * s.out_channels;
  const bool pointwise = is_pointwise(s);
  const int group = pointwise ? s.batch : images_per_pass(s);
  float* columns = pointwise ? nullptr : column_buffer(group * column_elements(s));
  for (int first = 0; first < s.batch; first += group) {
    const int count = std::min(group, s.batch - first);
    if (!pointwise) im2col_images(input + first * image_in, s, TensorLayout::nhwc, count, columns);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, count * pq, s.out_channels, rsc, 1.0f,
                pointwise ? input + first * image_in : columns, rsc, filter, rsc, 0.0f,
                output + first * image_out, s.out_channels);
  }
}

// --- verification ------------------------------------------------------------------
struct OutputPosition {
  int n, k, p, q;
};

// The element at `logical` in (n, k, p, q) order, whatever the layout.
OutputPosition output_position(const Conv2dShape& s, std::size_t logical) {
  const std::size_t q_count = s.out_width(), p_count = s.out_height();
  OutputPosition at;
  at.q = static_cast<int>(logical % q_count);
  at.p = static_cast<int>(logical / q_count % p_count);
  at.k = static_cast<int>(logical / (q_count * p_count) % s.out_channels);
  at.n = static_cast<int>(logical / (q_count * p_count * s.out_channels));
  return at;
}

// verify_matmul's two error measures, summed over the elements compared.
struct ErrorSums {
  double diff_sq = 0, ref_sq = 0, max_diff = 0, max_ref = 0;

  void add(double value, double expected) {
    const double diff = std::fabs(value - expected);
    diff_sq += diff * diff;
    ref_sq += expected * expected;
    max_diff = std::fmax(max_diff, diff);
    max_ref = std::fmax(max_ref, std::fabs(expected));
  }
  // As verify_matmul: against an all-zero reference any difference fails.
  void finish(Verification& v) const {
    v.rel_fro_error = ref_sq > 0 ? std::sqrt(diff_sq / ref_sq) : (diff_sq > 0 ? INFINITY : 0.0);
    v.max_rel_error = max_ref > 0 ? max_diff / max_ref : (max_diff > 0 ? INFINITY : 0.0);
  }
};

}  // namespace

void conv2d_im2col_openblas(const float* input, const float* filter, float* output, Conv2dShape shape,
                            TensorLayout layout) {
  if (layout == TensorLayout::nchw) {
    conv2d_nchw(input, filter, output, shape);
  } else {
    conv2d_nhwc(input, filter, output, shape);
  }
}

Verification verify_conv2d(const float* output, const float* input, const float* filter, Conv2dShape s,
                           TensorLayout layout, std::uint64_t seed, std::size_t samples) {
  Verification result;
  result.tolerance = accumulation_tolerance(kFp32UnitRoundoff, s.accumulation_length());
  const std::size_t total = s.output_elements();
  // An unwritten element of an output poisoned with NaN is found wherever it lies.
  for (std::size_t i = 0; i < total; ++i) result.non_finite += std::isfinite(output[i]) ? 0 : 1;
  if (total == 0) return result;

  const Conv2dIndexing ix(s, layout);
  const bool check_all = total <= samples;
  std::mt19937_64 engine(seed);
  std::uniform_int_distribution<std::size_t> pick(0, total - 1);
  ErrorSums sums;
  for (std::size_t i = 0; i < (check_all ? total : samples); ++i) {
    const OutputPosition at = output_position(s, check_all ? i : pick(engine));
    const double value = output[ix.output.at(at.n, at.k, at.p, at.q)];
    if (!std::isfinite(value)) continue;  // already counted
    sums.add(value, output_element_fp64(input, filter, s, ix, at.n, at.k, at.p, at.q));
  }
  sums.finish(result);
  return result;
}

}  // namespace gpubench
