#include "primitives_cpu.hpp"

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

// Each primitive as one standard algorithm call, with the execution policy given (none: the plain
// call): `policy...` is empty or names one policy object (an lvalue, as libstdc++'s algorithms need).
template <const auto&... policy>
struct StandardCalls {
  static void reduce(const std::uint32_t* values, std::size_t n, std::uint32_t* sum) {
    *sum = std::reduce(policy..., values, values + n, std::uint32_t{0});
  }

  static void inclusive_scan(const std::uint32_t* values, std::uint32_t* out, std::size_t n) {
    std::inclusive_scan(policy..., values, values + n, out);
  }

  static void sort_u32(std::uint32_t* keys, std::size_t n) { std::sort(policy..., keys, keys + n); }

  static void sort_u64(std::uint64_t* keys, std::size_t n) { std::sort(policy..., keys, keys + n); }

  // Packed into 64-bit words in a buffer kept across calls (grown by the first, untimed call, so a
  // timed call neither allocates nor faults pages in), sorted, and unpacked.
  static void sort_pairs(std::uint32_t* keys, std::uint32_t* values, std::size_t n) {
    static std::unique_ptr<ThreadPlacedArray<std::uint64_t>> buffer;
    std::uint64_t* packed = grown(buffer, n);
    std::transform(policy..., keys, keys + n, values, packed, packed_pair);
    std::sort(policy..., packed, packed + n);
    std::transform(policy..., packed, packed + n, keys,
                   [](std::uint64_t pair) { return static_cast<std::uint32_t>(pair >> 32); });
    std::transform(policy..., packed, packed + n, values,
                   [](std::uint64_t pair) { return static_cast<std::uint32_t>(pair); });
  }

  static void transform(const float* in, float* out, std::size_t n, float a, float b) {
    std::transform(policy..., in, in + n, out, [a, b](float x) { return std::fma(a, x, b); });
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

PrimitiveFunctions std_seq_primitives() { return StandardCalls<>::functions(); }

#if GPUBENCH_HAVE_TBB
PrimitiveFunctions std_par_primitives() { return StandardCalls<std::execution::par>::functions(); }
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
