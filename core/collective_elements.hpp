// The collectives study's check element by element, one definition for the host (its reference,
// core/collectives.cpp) and the device (kernels/collective_data.cu): each rank's input drawn from a
// seed, element i at a time; each output element's expected value and bound; and the sums the
// check reduces over the elements. Nothing here holds a buffer: a GPU fills its ranks' inputs and
// checks its ranks' outputs from the seed alone, as nccl-tests does (src/common.cu, InitData and
// CheckData), so no process holds any rank's input on the host.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "core/collectives.hpp"
#include "core/verify.hpp"

#ifndef GPUBENCH_HOST_DEVICE
#if defined(__CUDACC__)
#define GPUBENCH_HOST_DEVICE __host__ __device__
#else
#define GPUBENCH_HOST_DEVICE
#endif
#endif

namespace gpubench {

// Output `index` (from 0) of SplitMix64 started at `seed` (Steele, Lea and Flood 2014; Vigna's
// splitmix64.c): the generator's state after index + 1 steps, finalised. A stateless function of
// (seed, index) in 64-bit integer arithmetic alone, so any element is computed on its own, on any
// thread, bit for bit the same by the host compiler and by nvcc, with no library on either side.
GPUBENCH_HOST_DEVICE inline std::uint64_t splitmix64_at(std::uint64_t seed, std::uint64_t index) {
  std::uint64_t z = seed + (index + 1) * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Element `index` of the input drawn from `seed`: uniform in [-1, 1) (the range of the study's other
// random inputs, core/random.hpp) over the 2^24 multiples of 2^-23 there, from the top 24 bits of
// SplitMix64's output. Every value is exact in FP32, and an FP64 sum of up to 2^29 of them is exact:
// the check's reference sum has no rounding error of its own.
GPUBENCH_HOST_DEVICE inline float seeded_uniform(std::uint64_t seed, std::uint64_t index) {
  const auto top = static_cast<std::int32_t>(splitmix64_at(seed, index) >> 40);
  return static_cast<float>(top - (1 << 23)) * 0x1p-23f;  // both steps exact
}

// Rank `rank`'s seed in a problem seeded `problem_seed`: output `rank` of the problem's own stream.
GPUBENCH_HOST_DEVICE inline std::uint64_t collective_rank_seed(std::uint64_t problem_seed, int rank) {
  return splitmix64_at(problem_seed, static_cast<std::uint64_t>(rank));
}

// Every rank's input of a problem, as a function: input(r, i) is element i of rank r's send buffer.
struct SeededInputs {
  std::uint64_t problem_seed;
  GPUBENCH_HOST_DEVICE float operator()(int rank, std::size_t index) const {
    return seeded_uniform(collective_rank_seed(problem_seed, rank), index);
  }
};

// What one output element must be: `value` exactly (a copy, bound 0), or within `bound` of it (a sum).
struct ExpectedElement {
  double value;
  double bound;
};

// Element i of `rank`'s output (counts.recv elements, core/collectives.hpp's conventions) from the
// ranks' inputs, `input(r, j)` giving element j of rank r's. A sum is the exact (FP64) sum of the
// contributions, and its bound 2 (n-1) u sum_r |x_r[j]|: (n-1) u is the first-order bound of any
// order of n-1 FP32 additions, doubled for room; an indexing or synchronisation fault (an error of
// the size of the values) still fails. A copy is the input element it copies, bound 0.
template <typename Input>
GPUBENCH_HOST_DEVICE ExpectedElement expected_element(Collective collective, const Input& input, int ranks, int rank,
                                                      const CollectiveCounts& counts, std::size_t i) {
  switch (collective) {
    case Collective::all_reduce:
    case Collective::reduce_scatter: {
      // reduce-scatter's output is slice `rank` of the sum; all-reduce's the whole of it.
      const std::size_t at =
          collective == Collective::reduce_scatter ? static_cast<std::size_t>(rank) * counts.recv + i : i;
      double sum = 0, magnitude = 0;
      for (int r = 0; r < ranks; ++r) {
        const double x = input(r, at);
        sum += x;
        magnitude += std::fabs(x);
      }
      return {sum, 2.0 * static_cast<double>(ranks - 1) * kFp32UnitRoundoff * magnitude};
    }
    case Collective::all_gather:  // chunk p is rank p's input
      return {input(static_cast<int>(i / counts.send), i % counts.send), 0.0};
    case Collective::broadcast:  // the root's (rank 0's) input
      return {input(0, i), 0.0};
    case Collective::all_to_all: {
      // Chunk p of this rank's output is chunk `rank` of rank p's input.
      const std::size_t chunk = counts.recv / static_cast<std::size_t>(ranks);
      return {input(static_cast<int>(i / chunk), static_cast<std::size_t>(rank) * chunk + i % chunk), 0.0};
    }
  }
  return {NAN, 0.0};  // no collective: every element fails
}

// What the check sums and maximises over an output's elements, element by element (add) and then
// over parts of the output (merge), in any grouping: the host's threads, the device's blocks. A
// wrong element is one off its expected value by more than its bound, or NaN or Inf (a poisoned
// element never written). No constructor, so that the device may keep an array of them in shared
// memory: start from none().
struct CollectiveErrorSums {
  double diff_sq, ref_sq, bound_sq;     // sums of squares: |output - expected|, |expected|, the bounds
  double max_diff, max_ref, max_bound;  // their largest
  std::uint64_t non_finite;
  std::uint64_t wrong;
  std::uint64_t first_wrong;  // the smallest index of a wrong element; UINT64_MAX where none

  GPUBENCH_HOST_DEVICE static CollectiveErrorSums none() { return {0, 0, 0, 0, 0, 0, 0, 0, UINT64_MAX}; }

  GPUBENCH_HOST_DEVICE void add(std::size_t i, float output, const ExpectedElement& expected) {
    if (!std::isfinite(output)) {
      ++non_finite;
      mark_wrong(i);
      return;
    }
    const double diff = std::fabs(static_cast<double>(output) - expected.value);
    diff_sq += diff * diff;
    ref_sq += expected.value * expected.value;
    bound_sq += expected.bound * expected.bound;
    max_diff = std::fmax(max_diff, diff);
    max_ref = std::fmax(max_ref, std::fabs(expected.value));
    max_bound = std::fmax(max_bound, expected.bound);
    if (!(diff <= expected.bound)) mark_wrong(i);  // a NaN expectation fails too
  }

  GPUBENCH_HOST_DEVICE void merge(const CollectiveErrorSums& other) {
    diff_sq += other.diff_sq;
    ref_sq += other.ref_sq;
    bound_sq += other.bound_sq;
    max_diff = std::fmax(max_diff, other.max_diff);
    max_ref = std::fmax(max_ref, other.max_ref);
    max_bound = std::fmax(max_bound, other.max_bound);
    non_finite += other.non_finite;
    wrong += other.wrong;
    first_wrong = other.first_wrong < first_wrong ? other.first_wrong : first_wrong;
  }

 private:
  GPUBENCH_HOST_DEVICE void mark_wrong(std::size_t i) {
    ++wrong;
    if (i < first_wrong) first_wrong = i;
  }
};

}  // namespace gpubench
