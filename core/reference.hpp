// FP64 reference results computed on the CPU from the same FP32 inputs an
// implementation was given.
#pragma once

#include <cstdint>
#include <vector>

#include "core/operations.hpp"

namespace gpubench {

struct MatmulReference {
  MatmulShape shape{};
  std::vector<int> rows;       // rows of C held here, ascending (all of them when affordable)
  std::vector<double> values;  // rows.size() x shape.n, row-major

  bool complete() const { return static_cast<int>(rows.size()) == shape.m; }
};

// Where the full FP64 product costs more than max_full_flop, only `sampled_rows` rows
// chosen at random (from `seed`) are computed: every column is still checked, and a
// fault confined to some row blocks is caught with high probability, not certainty (a
// 128-row block of 8192 with probability 1 - (1 - 1/64)^256 = 98%); the checks
// (core/verify.hpp) still require every element of the output to be finite, so an
// element never written fails wherever it is. Full up to 4096: at 8192 the full product
// (1.1 TFLOP of DGEMM per operand set) takes the host seconds, many times the GPU call it checks.
struct ReferencePolicy {
  double max_full_flop = 2.0 * 4096.0 * 4096.0 * 4096.0;
  int sampled_rows = 256;
};

// C = A*B in FP64 (OpenBLAS DGEMM on upcast copies of the FP32 operands).
MatmulReference matmul_reference_fp64(const float* a, const float* b, MatmulShape shape,
                                      ReferencePolicy policy, std::uint64_t seed);

// Uniform random FP32 operands in [-1, 1) and their FP64 product: the problem the GEMM studies time
// every implementation of a shape on. Operands and the reference's sampled rows are drawn from
// configuration_seed(key, 0), (key, 1) and (key, 2), so a key gives the same problem in every process.
struct MatmulProblem {
  MatmulShape shape{};
  std::vector<float> a, b;
  MatmulReference reference;
};
MatmulProblem random_matmul_problem(MatmulShape shape, std::uint64_t key, ReferencePolicy policy = {});

// `rows` random rows of C = A*B summed in long double by plain loops: a reference
// independent of OpenBLAS, for checking an FP64 GEMM (which DGEMM references cannot).
MatmulReference matmul_reference_extended(const float* a, const float* b, MatmulShape shape, int rows,
                                          std::uint64_t seed);

}  // namespace gpubench
