#include "core/reference.hpp"

#include <cblas.h>

#include <algorithm>
#include <numeric>
#include <random>

#include "core/random.hpp"

namespace gpubench {
namespace {

std::vector<int> reference_rows(MatmulShape shape, ReferencePolicy policy, std::uint64_t seed) {
  std::vector<int> rows(shape.m);
  std::iota(rows.begin(), rows.end(), 0);
  if (shape.flop() <= policy.max_full_flop || policy.sampled_rows >= shape.m) return rows;
  std::mt19937_64 engine(seed);
  std::shuffle(rows.begin(), rows.end(), engine);
  rows.resize(policy.sampled_rows);
  std::sort(rows.begin(), rows.end());
  return rows;
}

}  // namespace

MatmulReference matmul_reference_fp64(const float* a, const float* b, MatmulShape shape,
                                      ReferencePolicy policy, std::uint64_t seed) {
  MatmulReference ref;
  ref.shape = shape;
  ref.rows = reference_rows(shape, policy, seed);
  const int rows = static_cast<int>(ref.rows.size());

  // The upcast copies on the OpenMP threads: at 8192 B alone is half a GiB of FP64.
  std::vector<double> a64(static_cast<std::size_t>(rows) * shape.k);
#pragma omp parallel for schedule(static)
  for (int r = 0; r < rows; ++r) {
    const float* src = a + static_cast<std::size_t>(ref.rows[r]) * shape.k;
    std::copy(src, src + shape.k, a64.begin() + static_cast<std::size_t>(r) * shape.k);
  }
  std::vector<double> b64(shape.b_elements());
  const long b_elements = static_cast<long>(b64.size());
#pragma omp parallel for schedule(static)
  for (long i = 0; i < b_elements; ++i) b64[i] = b[i];
  ref.values.assign(static_cast<std::size_t>(rows) * shape.n, 0.0);
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, shape.n, shape.k, 1.0,
              a64.data(), shape.k, b64.data(), shape.n, 0.0, ref.values.data(), shape.n);
  return ref;
}

MatmulReference matmul_reference_extended(const float* a, const float* b, MatmulShape shape, int rows,
                                          std::uint64_t seed) {
  MatmulReference ref;
  ref.shape = shape;
  ref.rows = reference_rows(shape, ReferencePolicy{0.0, rows}, seed);
  ref.values.assign(ref.rows.size() * static_cast<std::size_t>(shape.n), 0.0);
#pragma omp parallel for schedule(static)
  for (std::size_t r = 0; r < ref.rows.size(); ++r) {
    std::vector<long double> sums(shape.n, 0.0L);
    const float* a_row = a + static_cast<std::size_t>(ref.rows[r]) * shape.k;
    for (int p = 0; p < shape.k; ++p) {
      const float* b_row = b + static_cast<std::size_t>(p) * shape.n;
      for (int j = 0; j < shape.n; ++j) sums[j] += static_cast<long double>(a_row[p]) * b_row[j];
    }
    std::copy(sums.begin(), sums.end(), ref.values.begin() + r * shape.n);
  }
  return ref;
}

MatmulProblem random_matmul_problem(MatmulShape shape, std::uint64_t key, ReferencePolicy policy) {
  MatmulProblem problem;
  problem.shape = shape;
  problem.a = random_uniform(shape.a_elements(), configuration_seed(key, 0));
  problem.b = random_uniform(shape.b_elements(), configuration_seed(key, 1));
  problem.reference = matmul_reference_fp64(problem.a.data(), problem.b.data(), shape, policy,
                                            configuration_seed(key, 2));
  return problem;
}

}  // namespace gpubench
