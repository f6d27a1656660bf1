#include "conv2d_direct_loop.hpp"

#include <cstddef>

namespace gpubench::testing {
namespace {

// Element strides of a 4-D tensor indexed (outer, channel, row, column): the input (n, c, h, w),
// the filter (k, c, r, s) and the output (n, k, p, q) alike, in either layout.
struct Strides {
  std::size_t outer, channel, row, column;

  std::size_t at(int o, int c, int y, int x) const { return o * outer + c * channel + y * row + x * column; }
};

Strides strides_of(TensorLayout layout, int channels, int rows, int columns) {
  const std::size_t c = channels, y = rows, x = columns;
  if (layout == TensorLayout::nchw) return {c * y * x, y * x, x, 1};
  return {y * x * c, 1, x * c, c};  // nhwc
}

}  // namespace

void conv2d_direct_loop(const float* input, const float* filter, float* output, Conv2dShape s,
                        TensorLayout layout) {
  const Strides in = strides_of(layout, s.in_channels, s.height, s.width);
  const Strides taps = strides_of(layout, s.in_channels, s.kernel, s.kernel);
  const Strides out = strides_of(layout, s.out_channels, s.out_height(), s.out_width());
  for (int n = 0; n < s.batch; ++n)
    for (int k = 0; k < s.out_channels; ++k)
      for (int p = 0; p < s.out_height(); ++p)
        for (int q = 0; q < s.out_width(); ++q) {
          float sum = 0;
          for (int r = 0; r < s.kernel; ++r) {
            const int h = p * s.stride - s.padding + r;
            if (h < 0 || h >= s.height) continue;  // zero padding
            for (int t = 0; t < s.kernel; ++t) {
              const int w = q * s.stride - s.padding + t;
              if (w < 0 || w >= s.width) continue;
              for (int c = 0; c < s.in_channels; ++c) sum += input[in.at(n, c, h, w)] * filter[taps.at(k, c, r, t)];
            }
          }
          output[out.at(n, k, p, q)] = sum;
        }
}

}  // namespace gpubench::testing
