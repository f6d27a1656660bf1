#include "primitives_cpu.hpp"

#include <omp.h>
#include <parallel/algorithm>
#include <parallel/numeric>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <numeric>

#include "core/first_touch.hpp"

#if GPUBENCH_HAVE_TBB
#include <tbb/task_arena.h>

#include <execution>
#endif

namespace gpubench {
namespace {

std::uint64_t packed_pair(std::uint32_t key, std::uint32_t value) { return std::uint64_t{key} << 32 | value; }

// The four algorithms the primitives are made of, in one library's form: the C++ standard ones with
// the execution policy given (none: the plain call; `policy...` names one policy object, an lvalue
// as libstdc++'s algorithms need), ...
template <const auto&... policy>
struct StandardAlgorithms {
  template <typename It, typename T> static T reduce(It first, It last, T init) {
    return std::reduce(policy..., first, last, init);
  }
  template <typename It, typename Out> static void inclusive_scan(It first, It last, Out out) {
    std::inclusive_scan(policy..., first, last, out);
  }
  template <typename It> static void sort(It first, It last) { std::sort(policy..., first, last); }
  template <typename It, typename Out, typename Op> static void transform(It first, It last, Out out, Op op) {
    std::transform(policy..., first, last, out, op);
  }
  template <typename It1, typename It2, typename Out, typename Op>
  static void transform(It1 first, It1 last, It2 second, Out out, Op op) {
    std::transform(policy..., first, last, second, out, op);
  }
};

// ... and libstdc++'s parallel mode: the same algorithms on OpenMP threads, in every GCC build (no TBB needed).
// Its scan is partial_sum, which is an inclusive scan.
struct GnuParallelAlgorithms {
  template <typename It, typename T> static T reduce(It first, It last, T init) {
    return __gnu_parallel::accumulate(first, last, init);
  }
  template <typename It, typename Out> static void inclusive_scan(It first, It last, Out out) {
    __gnu_parallel::partial_sum(first, last, out);
  }
  template <typename It> static void sort(It first, It last) { __gnu_parallel::sort(first, last); }
  template <typename It, typename Out, typename Op> static void transform(It first, It last, Out out, Op op) {
    __gnu_parallel::transform(first, last, out, op);
  }
  template <typename It1, typename It2, typename Out, typename Op>
  static void transform(It1 first, It1 last, It2 second, Out out, Op op) {
    __gnu_parallel::transform(first, last, second, out, op);
  }
};

// Each primitive as one call of the library's algorithm.
template <typename Algorithms>
struct StandardCalls {
  static void reduce(const std::uint32_t* values, std::size_t n, std::uint32_t* sum) {
    *sum = Algorithms::reduce(values, values + n, std::uint32_t{0});
  }

  static void inclusive_scan(const std::uint32_t* values, std::uint32_t* out, std::size_t n) {
    Algorithms::inclusive_scan(values, values + n, out);
  }

  static void sort_u32(std::uint32_t* keys, std::size_t n) { Algorithms::sort(keys, keys + n); }

  static void sort_u64(std::uint64_t* keys, std::size_t n) { Algorithms::sort(keys, keys + n); }

  // Packed into 64-bit words in a buffer kept across calls (grown by the first, untimed call, so a
  // timed call neither allocates nor faults pages in), sorted, and unpacked.
  static void sort_pairs(std::uint32_t* keys, std::uint32_t* values, std::size_t n) {
    static std::unique_ptr<ThreadPlacedArray<std::uint64_t>> buffer;
    std::uint64_t* packed = grown(buffer, n);
    Algorithms::transform(keys, keys + n, values, packed, packed_pair);
    Algorithms::sort(packed, packed + n);
    Algorithms::transform(packed, packed + n, keys,
                          [](std::uint64_t pair) { return static_cast<std::uint32_t>(pair >> 32); });
    Algorithms::transform(packed, packed + n, values,
                          [](std::uint64_t pair) { return static_cast<std::uint32_t>(pair); });
  }

  static void transform(const float* in, float* out, std::size_t n, float a, float b) {
    Algorithms::transform(in, in + n, out, [a, b](float x) { return std::fma(a, x, b); });
  }

  static PrimitiveFunctions functions() {
    PrimitiveFunctions f;
    f.reduce = reduce;
    f.inclusive_scan = inclusive_scan;
    f.sort_u32 = sort_u32;
    f.sort_pairs = sort_pairs;
    f.sort_u64 = sort_u64;
    f.transform = transform;
    return f;
  }
};

}  // namespace

PrimitiveFunctions std_seq_primitives() { return StandardCalls<StandardAlgorithms<>>::functions(); }

PrimitiveFunctions gnu_parallel_primitives() { return StandardCalls<GnuParallelAlgorithms>::functions(); }
int gnu_parallel_threads() { return omp_get_max_threads(); }

#if GPUBENCH_HAVE_TBB
PrimitiveFunctions std_par_primitives() { return StandardCalls<StandardAlgorithms<std::execution::par>>::functions(); }
const char* std_par_unavailable_reason() { return ""; }
int std_par_threads() { return tbb::this_task_arena::max_concurrency(); }
#else
PrimitiveFunctions std_par_primitives() { return {}; }
const char* std_par_unavailable_reason() {
  return "built without TBB: GCC's std::execution::par runs on TBB, and without it (libtbb-dev when CMake "
         "configured the build) it would run on one thread";
}
int std_par_threads() { return 1; }
#endif

}  // namespace gpubench
