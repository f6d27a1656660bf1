// The stream study's operations (core/operations.hpp's StreamOp) as every part sees them: their
// names, what STREAM counts of them, the value each element must hold, and the check of an
// implementation's output against the inputs it was given.
#pragma once

#include <cmath>
#include <cstddef>
#include <vector>

#include "core/operations.hpp"
#include "core/verify.hpp"

namespace gpubench {

const std::vector<StreamOp>& all_stream_ops();
const char* stream_op_name(StreamOp op);
// The arrays one call reads and writes, counted as STREAM counts them (copy and scale 2 arrays,
// add and triad 3, dot 2: each array once, whatever the caches do).
int stream_arrays_read(StreamOp op);
int stream_arrays_written(StreamOp op);
bool stream_reads_y(StreamOp op);
// Floating-point operations per element (copy 0, scale and add 1, triad and dot 2).
double stream_flop_per_element(StreamOp op);
// The operation as a formula, for --describe.
const char* stream_formula(StreamOp op);

// z's element for x's and y's, every operation but dot; triad's multiply-add is fused, as the
// kernels write it, so the comparison is exact.
template <typename T>
T stream_element(StreamOp op, T x, T y, T scalar) {
  switch (op) {
    case StreamOp::copy: return x;
    case StreamOp::scale: return scalar * x;
    case StreamOp::add: return x + y;
    case StreamOp::triad: return std::fma(scalar, y, x);
    case StreamOp::dot: break;
  }
  return T(0);
}

// copy, scale, add, triad: every element must equal stream_element bit for bit (tolerance 0;
// the errors report how far the output is). dot: |z[0] - sum| over the sum of |x*y| (the sum in
// long double) within accumulation_tolerance(unit roundoff of T, n): the order of the additions
// is the implementation's. A NaN or infinity in what is checked fails.
Verification verify_stream(StreamOp op, const float* x, const float* y, const float* z, std::size_t n, float scalar);
Verification verify_stream(StreamOp op, const double* x, const double* y, const double* z, std::size_t n,
                           double scalar);

}  // namespace gpubench
