// Shared by the CPU and GPU matmul tests: a random problem and its FP64 reference.
#pragma once

#include <vector>

#include "core/random.hpp"
#include "core/reference.hpp"
#include "core/verify.hpp"

namespace gpubench::testing {

struct RandomMatmul : MatmulProblem {
  explicit RandomMatmul(MatmulShape s, std::uint64_t seed = 1) : MatmulProblem(random_matmul_problem(s, seed)) {}

  Verification check(const std::vector<float>& c) const {
    return verify_matmul(c.data(), reference, accumulation_tolerance(kFp32UnitRoundoff, shape.k));
  }
};

// Square, non-square, odd and tile-straddling shapes (tiles are 32, 64, 128 or 256 wide).
inline std::vector<MatmulShape> test_shapes() {
  return {{1, 1, 1}, {7, 5, 3}, {64, 64, 64}, {33, 65, 17}, {129, 127, 131}, {200, 200, 200},
          {257, 300, 513}, {1, 300, 77}, {300, 1, 77}};
}

}  // namespace gpubench::testing
