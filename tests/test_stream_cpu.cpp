// The stream study's CPU side: the check (core/stream) accepts exactly the right output and rejects
// one wrong bit, an unwritten element and a dot off by more than its rounding; the OpenMP baseline
// gives every element the exact value (triad's single rounding included) at sizes that leave
// remainders past any vector width and thread share, and a dot within its tolerance.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "core/random.hpp"
#include "core/stream.hpp"
#include "stream_openmp.hpp"

namespace gpubench {
namespace {

template <typename T>
struct Arrays {
  std::vector<T> x, y, z;
  T scalar;
};

template <typename T>
Arrays<T> arrays(std::size_t n) {
  const std::vector<float> x = random_uniform(n, n), y = random_uniform(n, n + 1);
  return {{x.begin(), x.end()}, {y.begin(), y.end()}, std::vector<T>(n + 1, std::numeric_limits<T>::quiet_NaN()),
          static_cast<T>(1.25)};
}

template <typename T>
void expect_baseline_exact(std::size_t n) {
  for (StreamOp op : all_stream_ops()) {
    Arrays<T> a = arrays<T>(n);
    stream_openmp(op, a.x.data(), a.y.data(), a.z.data(), n, a.scalar);
    const Verification v = verify_stream(op, a.x.data(), a.y.data(), a.z.data(), n, a.scalar);
    EXPECT_TRUE(v.passed()) << stream_op_name(op) << " at " << n << ": " << v.describe();
    if (op != StreamOp::dot) {
      EXPECT_EQ(v.max_rel_error, 0) << stream_op_name(op) << " at " << n;
      EXPECT_TRUE(std::isnan(a.z[n])) << stream_op_name(op) << " wrote past the end at " << n;
    }
  }
}

TEST(StreamOpenmp, EveryOperationIsExactInFp32) {
  for (std::size_t n : {std::size_t{1}, std::size_t{7}, std::size_t{1000}, (std::size_t{1} << 20) + 3})
    expect_baseline_exact<float>(n);
}

TEST(StreamOpenmp, EveryOperationIsExactInFp64) {
  for (std::size_t n : {std::size_t{1}, std::size_t{7}, std::size_t{1000}, (std::size_t{1} << 20) + 3})
    expect_baseline_exact<double>(n);
}

TEST(StreamCheck, TriadIsOneRoundedFusedMultiplyAdd) {
  // s*y = 1 + 2^-11 + 2^-24 rounds to 1 + 2^-11 in FP32: x + s*y rounded twice loses the 2^-24 that
  // fma(s, y, x) keeps. The check must take only the fused one.
  const float x = -1.0f, y = 1.0f + std::ldexp(1.0f, -12), s = y;
  const float fused = std::fma(s, y, x);
  const volatile float product = s * y;  // rounded on its own, whatever the compiler contracts
  const float twice = x + product;
  ASSERT_NE(fused, twice) << "the operands no longer tell the two roundings apart";
  EXPECT_TRUE(verify_stream(StreamOp::triad, &x, &y, &fused, 1, s).passed());
  EXPECT_FALSE(verify_stream(StreamOp::triad, &x, &y, &twice, 1, s).passed());
}

TEST(StreamCheck, OneWrongBitFails) {
  Arrays<float> a = arrays<float>(4096);
  for (StreamOp op : {StreamOp::copy, StreamOp::scale, StreamOp::add, StreamOp::triad}) {
    for (std::size_t i = 0; i < a.x.size(); ++i) a.z[i] = stream_element(op, a.x[i], a.y[i], a.scalar);
    ASSERT_TRUE(verify_stream(op, a.x.data(), a.y.data(), a.z.data(), a.x.size(), a.scalar).passed());
    a.z[2049] = std::nextafter(a.z[2049], 2.0f);
    EXPECT_FALSE(verify_stream(op, a.x.data(), a.y.data(), a.z.data(), a.x.size(), a.scalar).passed())
        << stream_op_name(op);
  }
}

TEST(StreamCheck, AnUnwrittenElementFails) {
  Arrays<double> a = arrays<double>(1000);
  for (std::size_t i = 0; i < 999; ++i) a.z[i] = a.x[i];  // the last one keeps its NaN
  const Verification v = verify_stream(StreamOp::copy, a.x.data(), a.y.data(), a.z.data(), 1000, a.scalar);
  EXPECT_FALSE(v.passed());
  EXPECT_EQ(v.non_finite, 1u);
}

TEST(StreamCheck, DotWithinItsRoundingPassesAndBeyondFails) {
  const std::size_t n = 1 << 16;
  Arrays<float> a = arrays<float>(n);
  long double sum = 0, magnitude = 0;
  for (std::size_t i = 0; i < n; ++i) {
    sum += static_cast<long double>(a.x[i]) * a.y[i];
    magnitude += std::fabs(static_cast<long double>(a.x[i]) * a.y[i]);
  }
  const double tolerance = accumulation_tolerance(std::numeric_limits<float>::epsilon() / 2, n).max_rel;
  const auto check = [&](double value) {
    a.z[0] = static_cast<float>(value);
    return verify_stream(StreamOp::dot, a.x.data(), a.y.data(), a.z.data(), n, a.scalar);
  };
  EXPECT_TRUE(check(static_cast<double>(sum)).passed());
  EXPECT_TRUE(check(static_cast<double>(sum + 0.5L * tolerance * magnitude)).passed());
  EXPECT_FALSE(check(static_cast<double>(sum + 2.0L * tolerance * magnitude)).passed());
  EXPECT_FALSE(check(std::numeric_limits<double>::quiet_NaN()).passed());
}

TEST(StreamOps, CountedAsStreamCountsThem) {
  EXPECT_EQ(stream_arrays_read(StreamOp::copy) + stream_arrays_written(StreamOp::copy), 2);
  EXPECT_EQ(stream_arrays_read(StreamOp::scale) + stream_arrays_written(StreamOp::scale), 2);
  EXPECT_EQ(stream_arrays_read(StreamOp::add) + stream_arrays_written(StreamOp::add), 3);
  EXPECT_EQ(stream_arrays_read(StreamOp::triad) + stream_arrays_written(StreamOp::triad), 3);
  EXPECT_EQ(stream_arrays_read(StreamOp::dot) + stream_arrays_written(StreamOp::dot), 2);
  EXPECT_EQ(stream_arrays_written(StreamOp::dot), 0);
}

}  // namespace
}  // namespace gpubench
