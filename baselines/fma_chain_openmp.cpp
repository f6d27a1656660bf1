#include "fma_chain_openmp.hpp"

#include <immintrin.h>

#include <cstring>

namespace gpubench {
namespace {

constexpr int kVectorBytes = 64;
constexpr int kVectors = 8;  // independent chains per block: the FMA units' latency times their number

// Vectors of T (the attribute cannot be given to a template parameter).
template <typename T, int Bytes = kVectorBytes>
struct VectorOf;
template <int Bytes>
struct VectorOf<float, Bytes> {
  typedef float type __attribute__((vector_size(Bytes)));
};
template <>
struct VectorOf<double> {
  typedef double type __attribute__((vector_size(kVectorBytes)));
};
template <>
struct VectorOf<_Float16> {
  typedef _Float16 type __attribute__((vector_size(kVectorBytes)));
};

// One step of every chain of a block, in T's own arithmetic.
template <typename T>
struct Native {
  using Stored = typename VectorOf<T>::type;
  using Vector = Stored;
  using Lane = T;
  static Vector load(const Stored& v) { return v; }
  static Stored store(const Vector& v) { return v; }
  static Vector step(const Vector& acc, const Vector& a, const Vector& in) { return acc * a + in; }
};

#if !defined(__AVX512FP16__) && (defined(__AVX512F__) || defined(__F16C__))
// FP16 on a CPU without FP16 arithmetic: each step an FP32 multiply-add rounded to FP16 by the
// vectorised conversions (AVX-512F or F16C), so every step is rounded to FP16 as an FP16 FMA's
// result is (after one rounding in FP32). GCC's own _Float16 arithmetic converts one lane at a time.
#if defined(__AVX512F__)
struct HalfInFloat {
  using Stored = __m256i;  // 16 halves
  using Lane = float;
  using Vector = VectorOf<float, 64>::type;
  static Vector load(const Stored& v) { return (Vector)_mm512_cvtph_ps(v); }
  static Stored store(const Vector& v) {
    return _mm512_cvtps_ph((__m512)v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  }
#else
struct HalfInFloat {
  using Stored = __m128i;  // 8 halves
  using Lane = float;
  using Vector = VectorOf<float, 32>::type;
  static Vector load(const Stored& v) { return (Vector)_mm256_cvtph_ps(v); }
  static Stored store(const Vector& v) {
    return _mm256_cvtps_ph((__m256)v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  }
#endif
  static Vector step(const Vector& acc, const Vector& a, const Vector& in) { return load(store(acc * a + in)); }
};
template <>
struct Native<_Float16> : HalfInFloat {};
#endif

// y[0, n) from x[0, n) (bytes of T), in blocks of kVectors vectors kept in registers for all k
// steps, the rest one element at a time.
template <typename T>
void chain(const std::uint8_t* x, std::uint8_t* y, std::size_t n, int k, T a) {
  using Op = Native<T>;
  using Stored = typename Op::Stored;
  using Vector = typename Op::Vector;
  constexpr std::size_t kBlockBytes = sizeof(Stored) * kVectors;
  constexpr std::size_t kBlock = kBlockBytes / sizeof(T);
  const long blocks = static_cast<long>(n / kBlock);
  Vector multiplier = {};
  multiplier += static_cast<typename Op::Lane>(a);
#pragma omp parallel for schedule(static)
  for (long block = 0; block < blocks; ++block) {
    Stored stored[kVectors];
    Vector in[kVectors], acc[kVectors];
    std::memcpy(stored, x + block * kBlockBytes, kBlockBytes);
#pragma GCC unroll 8
    for (int v = 0; v < kVectors; ++v) acc[v] = in[v] = Op::load(stored[v]);
    for (int step = 0; step < k; ++step) {
#pragma GCC unroll 8
      for (int v = 0; v < kVectors; ++v) acc[v] = Op::step(acc[v], multiplier, in[v]);
    }
#pragma GCC unroll 8
    for (int v = 0; v < kVectors; ++v) stored[v] = Op::store(acc[v]);
    std::memcpy(y + block * kBlockBytes, stored, kBlockBytes);
  }
  for (std::size_t i = blocks * kBlock; i < n; ++i) {
    T in, acc;
    std::memcpy(&in, x + i * sizeof(T), sizeof(T));
    acc = in;
    for (int step = 0; step < k; ++step) acc = static_cast<T>(acc * a + in);
    std::memcpy(y + i * sizeof(T), &acc, sizeof(T));
  }
}

template <typename T, typename Stored>
void run(const Stored* x, Stored* y, std::size_t n, int k, Stored a) {
  static_assert(sizeof(T) == sizeof(Stored), "the same bits, read as T");
  T multiplier;
  std::memcpy(&multiplier, &a, sizeof a);
  chain<T>(reinterpret_cast<const std::uint8_t*>(x), reinterpret_cast<std::uint8_t*>(y), n, k, multiplier);
}

}  // namespace

void fma_chain_openmp(const float* x, float* y, std::size_t n, int k, float a) { run<float>(x, y, n, k, a); }

void fma_chain_openmp(const double* x, double* y, std::size_t n, int k, double a) { run<double>(x, y, n, k, a); }

void fma_chain_openmp(const std::uint16_t* x, std::uint16_t* y, std::size_t n, int k, std::uint16_t a) {
  run<_Float16>(x, y, n, k, a);
}

}  // namespace gpubench
