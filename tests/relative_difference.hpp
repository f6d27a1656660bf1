// max |a - b| / max |b| of two results of one computation: two FP32 results each within
// tolerance of an FP64 reference differ by at most twice that tolerance.
#pragma once

#include <cmath>
#include <vector>

namespace gpubench::testing {

inline double max_relative_difference(const std::vector<float>& a, const std::vector<float>& b) {
  double max_diff = 0, max_b = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    max_diff = std::fmax(max_diff, std::fabs(double(a[i]) - b[i]));
    max_b = std::fmax(max_b, std::fabs(double(b[i])));
  }
  return max_b > 0 ? max_diff / max_b : max_diff;
}

}  // namespace gpubench::testing
