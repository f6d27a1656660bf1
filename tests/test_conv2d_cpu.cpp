#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <ostream>
#include <stdexcept>
#include <vector>

#include "conv2d_direct_loop.hpp"
#include "relative_difference.hpp"
#include "core/precision_codec.hpp"
#include "core/random.hpp"
#include "conv2d_cpu.hpp"

namespace gpubench {

void PrintTo(const Conv2dShape& s, std::ostream* out) {
  *out << "N" << s.batch << " C" << s.in_channels << " K" << s.out_channels << " " << s.height << "x" << s.width
       << " R" << s.kernel << " stride " << s.stride << " pad " << s.padding;
}

void PrintTo(TensorLayout layout, std::ostream* out) { *out << layout_name(layout); }

namespace {

constexpr TensorLayout kLayouts[] = {TensorLayout::nchw, TensorLayout::nhwc};

std::string describe(const Conv2dShape& s, TensorLayout layout) {
  return ::testing::PrintToString(s) + " " + layout_name(layout);
}

// Random inputs in the given layout; the output starts poisoned with NaN.
struct RandomConv {
  Conv2dShape shape;
  TensorLayout layout;
  std::vector<float> input, filter;

  RandomConv(Conv2dShape s, TensorLayout l, std::uint64_t seed = 1) : shape(s), layout(l) {
    input = random_uniform(s.input_elements(), configuration_seed(seed, 0));
    filter = random_uniform(s.filter_elements(), configuration_seed(seed, 1));
  }

  std::vector<float> run(Conv2dFn conv) const {
    std::vector<float> output(shape.output_elements(), std::numeric_limits<float>::quiet_NaN());
    conv(input.data(), filter.data(), output.data(), shape, layout);
    return output;
  }

  Verification verify(const std::vector<float>& output, std::size_t samples = kConv2dVerifiedSamples) const {
    return verify_conv2d(output.data(), input.data(), filter.data(), shape, layout, 7, samples);
  }
};

// Odd sizes, batch 1 and 3, stride 1 and 2, padding 0 to 2, 1x1, 3x3 and 5x5 filters,
// one-pixel images, padding wider than a filter reaches inside.
// {batch, in_channels, out_channels, height, width, kernel, stride, padding}
std::vector<Conv2dShape> test_shapes() {
  return {{1, 1, 1, 1, 1, 1, 1, 0},   {1, 3, 4, 7, 5, 3, 1, 1},    {3, 5, 7, 9, 11, 3, 1, 0},
          {3, 4, 6, 10, 9, 3, 2, 1},  {1, 6, 5, 8, 8, 3, 2, 0},    {3, 16, 24, 7, 7, 1, 1, 0},
          {3, 8, 12, 9, 7, 1, 2, 0},  {1, 8, 12, 5, 6, 1, 1, 1},   {3, 17, 9, 13, 13, 5, 1, 2},
          {1, 3, 2, 4, 4, 3, 1, 2},   {3, 2, 3, 1, 1, 3, 1, 1},    {2, 64, 64, 14, 14, 3, 1, 1},
          {3, 7, 5, 12, 15, 3, 2, 0}};
}

using testing::conv2d_direct_loop;
using testing::max_relative_difference;

// (outer, channel, row, column) in NCHW order <-> NHWC order; KCRS <-> KRSC alike.
std::vector<float> nchw_to_nhwc(const std::vector<float>& x, int outer, int channels, int rows, int columns) {
  std::vector<float> y(x.size());
  for (int o = 0; o < outer; ++o)
    for (int c = 0; c < channels; ++c)
      for (int h = 0; h < rows; ++h)
        for (int w = 0; w < columns; ++w)
          y[((std::size_t(o) * rows + h) * columns + w) * channels + c] =
              x[((std::size_t(o) * channels + c) * rows + h) * columns + w];
  return y;
}

std::vector<float> nhwc_to_nchw(const std::vector<float>& y, int outer, int channels, int rows, int columns) {
  std::vector<float> x(y.size());
  for (int o = 0; o < outer; ++o)
    for (int c = 0; c < channels; ++c)
      for (int h = 0; h < rows; ++h)
        for (int w = 0; w < columns; ++w)
          x[((std::size_t(o) * channels + c) * rows + h) * columns + w] =
              y[((std::size_t(o) * rows + h) * columns + w) * channels + c];
  return x;
}

TEST(ConvShape, OutputSizesAndCounts) {
  const Conv2dShape resnet{8, 64, 64, 56, 56, 3, 1, 1};
  EXPECT_EQ(resnet.out_height(), 56);
  EXPECT_EQ(resnet.out_width(), 56);
  EXPECT_DOUBLE_EQ(resnet.flop(), 2.0 * 8 * 64 * 56 * 56 * 64 * 3 * 3);
  EXPECT_EQ(resnet.accumulation_length(), 576);
  const Conv2dShape pointwise{256, 256, 1024, 14, 14, 1};
  EXPECT_EQ(pointwise.out_height(), 14);
  EXPECT_EQ(pointwise.input_elements(), 256u * 256 * 14 * 14);
  EXPECT_EQ(pointwise.filter_elements(), 1024u * 256);
  EXPECT_EQ(pointwise.output_elements(), 256u * 1024 * 14 * 14);
  const Conv2dShape strided{1, 3, 8, 7, 6, 3, 2, 1};
  EXPECT_EQ(strided.out_height(), 4);  // rows -1, 1, 3, 5 of the padded image
  EXPECT_EQ(strided.out_width(), 3);
}

// Pins the convention: cross-correlation (cuDNN's CUDNN_CROSS_CORRELATION), filter not flipped.
TEST(ConvDirectLoop, IsCrossCorrelationNotConvolution) {
  const Conv2dShape s{1, 1, 1, 6, 5, 3};
  const RandomConv problem(s, TensorLayout::nchw);
  const std::vector<float> out = problem.run(conv2d_direct_loop);
  for (int p = 0; p < s.out_height(); ++p) {
    for (int q = 0; q < s.out_width(); ++q) {
      double expected = 0;
      for (int r = 0; r < 3; ++r)
        for (int t = 0; t < 3; ++t) expected += double(problem.input[(p + r) * 5 + q + t]) * problem.filter[r * 3 + t];
      EXPECT_NEAR(out[p * s.out_width() + q], expected, 1e-5) << "p " << p << " q " << q;
    }
  }
}

TEST(ConvDirectLoop, PassesFp64Verification) {
  for (const Conv2dShape& shape : test_shapes()) {
    for (TensorLayout layout : kLayouts) {
      const RandomConv problem(shape, layout, shape.height * 31 + shape.in_channels);
      const Verification v = problem.verify(problem.run(conv2d_direct_loop));
      EXPECT_TRUE(v.passed()) << describe(shape, layout) << ": " << v.describe();
    }
  }
}

TEST(ConvIm2colOpenblas, MatchesDirectLoopOnRandomShapes) {
  for (const Conv2dShape& shape : test_shapes()) {
    for (TensorLayout layout : kLayouts) {
      const RandomConv problem(shape, layout, shape.height * 31 + shape.in_channels);
      const std::vector<float> gemm = problem.run(conv2d_im2col_openblas);
      const std::vector<float> direct = problem.run(conv2d_direct_loop);
      const Verification v = problem.verify(gemm);
      EXPECT_TRUE(v.passed()) << describe(shape, layout) << ": " << v.describe();
      EXPECT_LE(max_relative_difference(gemm, direct), 2 * v.tolerance.max_rel) << describe(shape, layout);
    }
  }
}

// The study's three layers at batch 1 and 2: realistic channel counts and image sizes.
TEST(ConvIm2colOpenblas, MatchesDirectLoopOnResNetLayers) {
  const Conv2dShape layers[] = {{1, 64, 64, 56, 56, 3, 1, 1}, {2, 256, 256, 14, 14, 3, 1, 1},
                                {2, 256, 1024, 14, 14, 1, 1, 0}};
  for (const Conv2dShape& shape : layers) {
    for (TensorLayout layout : kLayouts) {
      const RandomConv problem(shape, layout, shape.out_channels);
      const std::vector<float> gemm = problem.run(conv2d_im2col_openblas);
      const Verification v = problem.verify(gemm);
      EXPECT_TRUE(v.passed()) << describe(shape, layout) << ": " << v.describe();
      EXPECT_LE(max_relative_difference(gemm, problem.run(conv2d_direct_loop)), 2 * v.tolerance.max_rel)
          << describe(shape, layout);
    }
  }
}

TEST(ConvIm2colOpenblas, GivesTheSameResultOnRepeatedCalls) {
  // The column buffer is reused across calls: a larger shape then a smaller one must not
  // read stale columns.
  const RandomConv large({2, 9, 4, 17, 13, 3, 1, 1}, TensorLayout::nchw, 3);
  const RandomConv small({3, 4, 5, 6, 7, 3, 2, 1}, TensorLayout::nchw, 4);
  const std::vector<float> first = small.run(conv2d_im2col_openblas);
  large.run(conv2d_im2col_openblas);
  EXPECT_EQ(small.run(conv2d_im2col_openblas), first);
}

TEST(ConvLayouts, NchwAndNhwcAgreeAfterTransposition) {
  for (const Conv2dShape& s : test_shapes()) {
    const RandomConv nchw(s, TensorLayout::nchw, s.width * 17 + s.out_channels);
    RandomConv nhwc = nchw;
    nhwc.layout = TensorLayout::nhwc;
    nhwc.input = nchw_to_nhwc(nchw.input, s.batch, s.in_channels, s.height, s.width);
    nhwc.filter = nchw_to_nhwc(nchw.filter, s.out_channels, s.in_channels, s.kernel, s.kernel);
    const auto back = [&](const std::vector<float>& out) {
      return nhwc_to_nchw(out, s.batch, s.out_channels, s.out_height(), s.out_width());
    };
    // The direct loop sums in the same order in both layouts: bit for bit.
    EXPECT_EQ(back(nhwc.run(conv2d_direct_loop)), nchw.run(conv2d_direct_loop)) << ::testing::PrintToString(s);
    // im2col orders the sum (c, r, s) for NCHW and (r, s, c) for NHWC: within rounding.
    const double tolerance = accumulation_tolerance(kFp32UnitRoundoff, s.accumulation_length()).max_rel;
    EXPECT_LE(max_relative_difference(back(nhwc.run(conv2d_im2col_openblas)), nchw.run(conv2d_im2col_openblas)),
              2 * tolerance)
        << ::testing::PrintToString(s);
  }
}

// --- the FP64 verification ----------------------------------------------------------------
class ConvVerifyTest : public ::testing::TestWithParam<TensorLayout> {
 protected:
  // Small enough that every element is checked.
  const Conv2dShape shape{2, 6, 5, 8, 8, 3, 1, 1};
  const RandomConv problem{shape, GetParam(), 11};
  std::vector<float> output = problem.run(conv2d_im2col_openblas);
};

TEST_P(ConvVerifyTest, AcceptsACorrectResultAndRecordsItsError) {
  const Verification v = problem.verify(output);
  EXPECT_TRUE(v.passed()) << v.describe();
  EXPECT_GT(v.rel_fro_error, 0.0);  // FP32 against FP64 is never exact on random data
  EXPECT_LT(v.rel_fro_error, 1e-6);
}

TEST_P(ConvVerifyTest, CatchesOnePlantedWrongElement) {
  output[shape.output_elements() / 3] += 0.05f;
  const Verification v = problem.verify(output);
  EXPECT_FALSE(v.passed());
  EXPECT_GT(v.max_rel_error, v.tolerance.max_rel);
  EXPECT_EQ(v.non_finite, 0u);
}

TEST_P(ConvVerifyTest, CatchesAnUnwrittenElement) {
  output.back() = std::numeric_limits<float>::quiet_NaN();  // what a poisoned, never-written output holds
  const Verification v = problem.verify(output);
  EXPECT_FALSE(v.passed());
  EXPECT_EQ(v.non_finite, 1u);
}

TEST_P(ConvVerifyTest, CatchesAnOutputShiftedByOneElement) {
  std::vector<float> shifted(output.size());
  for (std::size_t i = 0; i + 1 < output.size(); ++i) shifted[i + 1] = output[i];
  shifted[0] = output.back();
  EXPECT_FALSE(problem.verify(shifted).passed());
}

TEST_P(ConvVerifyTest, CatchesTransposedImages) {
  // Rows and columns of every output image swapped (P = Q here): right values, wrong places.
  const int side = shape.out_height();
  const int planes = shape.batch * shape.out_channels;
  const bool nchw = GetParam() == TensorLayout::nchw;
  std::vector<float> transposed(output.size());
  for (int plane = 0; plane < planes; ++plane) {
    const int n = plane / shape.out_channels, k = plane % shape.out_channels;
    for (int p = 0; p < side; ++p) {
      for (int q = 0; q < side; ++q) {
        const auto at = [&](int y, int x) {
          return nchw ? (std::size_t(plane) * side + y) * side + x
                      : ((std::size_t(n) * side + y) * side + x) * shape.out_channels + k;
        };
        transposed[at(q, p)] = output[at(p, q)];
      }
    }
  }
  EXPECT_FALSE(problem.verify(transposed).passed());
}

TEST_P(ConvVerifyTest, CatchesTheOtherLayout) {
  // The same tensor handed over in the other layout.
  const auto swapped = GetParam() == TensorLayout::nchw
                           ? nchw_to_nhwc(output, shape.batch, shape.out_channels, shape.out_height(), shape.out_width())
                           : nhwc_to_nchw(output, shape.batch, shape.out_channels, shape.out_height(), shape.out_width());
  EXPECT_FALSE(problem.verify(swapped).passed());
}

TEST_P(ConvVerifyTest, SamplesALargeOutputAndStillCatchesAShift) {
  const RandomConv large({3, 16, 32, 20, 20, 3, 1, 1}, GetParam(), 12);  // 38400 outputs
  std::vector<float> out = large.run(conv2d_im2col_openblas);
  const std::size_t samples = 500;
  ASSERT_GT(out.size(), samples);
  EXPECT_TRUE(large.verify(out, samples).passed());
  out.insert(out.begin(), out.back());
  out.pop_back();
  EXPECT_FALSE(large.verify(out, samples).passed());
}

INSTANTIATE_TEST_SUITE_P(Conv, ConvVerifyTest, ::testing::ValuesIn(kLayouts),
                         [](const auto& info) { return std::string(layout_name(info.param)); });

// --- the storage format of the GPU side (core/precision_codec) ------------------------------
TEST(Conv2dStorage, Fp32AndTf32KeepTheValuesFp16RoundsThemToNearest) {
  const std::vector<float> values = random_uniform(1000, 5);
  EXPECT_EQ(decode_conv2d_tensor(encode_conv2d_tensor(values, Precision::fp32), Precision::fp32), values);
  EXPECT_EQ(decode_conv2d_tensor(encode_conv2d_tensor(values, Precision::tf32), Precision::tf32), values);
  const std::vector<std::uint8_t> half = encode_conv2d_tensor(values, Precision::fp16);
  ASSERT_EQ(half.size(), 2 * values.size());
  const std::vector<float> back = decode_conv2d_tensor(half, Precision::fp16);
  for (std::size_t i = 0; i < values.size(); ++i) {
    EXPECT_EQ(back[i], half_bits_to_float(float_to_half_bits(values[i]))) << i;
    EXPECT_LE(std::fabs(back[i] - values[i]), std::ldexp(std::fabs(values[i]), -11) + 3e-8) << i;  // 2^-11 relative
  }
}

TEST(Conv2dStorage, RefusesPrecisionsItDoesNotRun) {
  EXPECT_EQ(conv2d_element_bytes(Precision::fp32), 4u);
  EXPECT_EQ(conv2d_element_bytes(Precision::tf32), 4u);
  EXPECT_EQ(conv2d_element_bytes(Precision::fp16), 2u);
  EXPECT_THROW(conv2d_element_bytes(Precision::bf16), std::invalid_argument);
  EXPECT_THROW(encode_conv2d_tensor({1.0f}, Precision::int8), std::invalid_argument);
}

}  // namespace
}  // namespace gpubench
