#include "core/stream.hpp"

#include <algorithm>
#include <climits>
#include <limits>

#include "core/compare_elements.hpp"

namespace gpubench {
namespace {

struct OpInfo {
  StreamOp op;
  const char* name;
  int read;
  int written;
  double flop;
  const char* formula;
};

const OpInfo& info(StreamOp op) {
  static const OpInfo all[] = {
      {StreamOp::copy, "copy", 1, 1, 0, "z = x"},
      {StreamOp::scale, "scale", 1, 1, 1, "z = s*x"},
      {StreamOp::add, "add", 2, 1, 1, "z = x + y"},
      {StreamOp::triad, "triad", 2, 1, 2, "z = x + s*y (one fused multiply-add)"},
      {StreamOp::dot, "dot", 2, 0, 2, "z[0] = sum of x*y"},
  };
  return all[static_cast<int>(op)];
}

template <typename T>
constexpr double unit_roundoff() {
  return std::numeric_limits<T>::epsilon() / 2;
}

// Element by element: any difference fails (tolerance 0); the errors say by how much.
template <typename T>
Verification exact_elements(StreamOp op, const T* x, const T* y, const T* z, std::size_t n, T scalar) {
  return compare_elements(n, Tolerance{0, 0}, [&](std::size_t i) {
    return std::pair<double, double>(z[i], stream_element(op, x[i], stream_reads_y(op) ? y[i] : T(0), scalar));
  });
}

template <typename T>
Verification dot_sum(const T* x, const T* y, const T* z, std::size_t n) {
  long double sum = 0, magnitude = 0;
  const long count = static_cast<long>(n);
#pragma omp parallel for schedule(static) reduction(+ : sum, magnitude)
  for (long i = 0; i < count; ++i) {
    const long double term = static_cast<long double>(x[i]) * y[i];
    sum += term;
    magnitude += term < 0 ? -term : term;
  }
  Verification result;
  result.tolerance = accumulation_tolerance(unit_roundoff<T>(), static_cast<int>(std::min<std::size_t>(n, INT_MAX)));
  const double value = z[0];
  if (!std::isfinite(value)) {
    result.non_finite = 1;
    return result;
  }
  const double difference = std::fabs(value - static_cast<double>(sum));
  const double error = magnitude > 0 ? difference / static_cast<double>(magnitude) : (difference > 0 ? INFINITY : 0.0);
  result.rel_fro_error = result.max_rel_error = error;
  return result;
}

template <typename T>
Verification check(StreamOp op, const T* x, const T* y, const T* z, std::size_t n, T scalar) {
  return op == StreamOp::dot ? dot_sum(x, y, z, n) : exact_elements(op, x, y, z, n, scalar);
}

}  // namespace

const std::vector<StreamOp>& all_stream_ops() {
  static const std::vector<StreamOp> all = {StreamOp::copy, StreamOp::scale, StreamOp::add, StreamOp::triad,
                                            StreamOp::dot};
  return all;
}

const char* stream_op_name(StreamOp op) { return info(op).name; }
int stream_arrays_read(StreamOp op) { return info(op).read; }
int stream_arrays_written(StreamOp op) { return info(op).written; }
bool stream_reads_y(StreamOp op) { return info(op).read == 2; }
double stream_flop_per_element(StreamOp op) { return info(op).flop; }
const char* stream_formula(StreamOp op) { return info(op).formula; }

Verification verify_stream(StreamOp op, const float* x, const float* y, const float* z, std::size_t n, float scalar) {
  return check(op, x, y, z, n, scalar);
}

Verification verify_stream(StreamOp op, const double* x, const double* y, const double* z, std::size_t n,
                           double scalar) {
  return check(op, x, y, z, n, scalar);
}

}  // namespace gpubench
