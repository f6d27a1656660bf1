// The collectives of the NCCL study, described on the host: how many FP32 elements each rank sends
// and receives for a message size, nccl-tests' bus-bandwidth factors, each rank's seeded input, and
// the host's check of a rank's output from every rank's input: the reference the device's check
// (kernels/collective_data.cuh, element by element the same: core/collective_elements.hpp) is
// tested against. CPU-only, so that the CPU tests cover it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/verify.hpp"

namespace gpubench {

enum class Collective { all_reduce, all_gather, reduce_scatter, broadcast, all_to_all };
const char* collective_name(Collective collective);
// Whether the output sums the ranks' inputs (checked within a rounding bound) or copies them (exactly).
bool sums(Collective collective);

// The FP32 elements one rank's buffers hold for a message of `bytes`, on nccl-tests' convention
// (src/common.cu, each collective's GetCollByteCount): the message is the larger buffer, and a
// per-rank part (all-gather's input, reduce-scatter's output, all-to-all's chunk per peer) is the
// message's elements divided by the ranks, rounded down. Zero where the message is too small.
struct CollectiveCounts {
  std::size_t send = 0;
  std::size_t recv = 0;
  std::size_t message_bytes() const { return 4 * (send > recv ? send : recv); }
};
CollectiveCounts collective_counts(Collective collective, std::size_t bytes, int ranks);

// nccl-tests' bus bandwidth over algorithm bandwidth (doc/PERFORMANCE.md): all-reduce 2(n-1)/n,
// all-gather, reduce-scatter and all-to-all (n-1)/n, broadcast 1. With one rank every factor but
// broadcast's is 0: nothing crosses a link.
double bus_bandwidth_factor(Collective collective, int ranks);

// A collective's check of one rank's output: the errors every check records, and the elements off
// their expected value by more than their own bound (core/collective_elements.hpp), NaN and Inf
// included. It passes where no element is wrong (which keeps the errors within their tolerance).
struct CollectiveVerification {
  Verification errors;
  std::size_t wrong_elements = 0;
  std::size_t first_wrong_element = 0;  // the smallest index of one, where there is one

  bool passed() const { return wrong_elements == 0 && errors.passed(); }
  std::string describe() const;
};

struct CollectiveErrorSums;
// The verdict from the check's sums over every element of an output: errors relative to the
// reference, as every check reports them; the elements' bounds, summed and maximised the same way and
// relative to the same reference, the tolerance (0 for copies).
CollectiveVerification collective_verification(const CollectiveErrorSums& sums);

// Rank `rank`'s input in the problem seeded `problem_seed`, `count` elements: on the host what the
// device's fill writes (core/collective_elements.hpp, SeededInputs).
std::vector<float> seeded_input(std::uint64_t problem_seed, int rank, std::size_t count);

// `rank`'s output against what it must be, given every rank's input (`inputs[r]`, counts.send
// elements each; broadcast's root is rank 0): copies exactly, sums within 2 (n-1) u sum_r |x_r[i]|
// of the exact sum, element by element (core/collective_elements.hpp).
CollectiveVerification verify_collective(Collective collective, const float* output,
                                         const std::vector<std::vector<float>>& inputs, int rank,
                                         const CollectiveCounts& counts);

}  // namespace gpubench
