// The collectives of the NCCL study, described on the host: how many FP32 elements each rank sends
// and receives for a message size, nccl-tests' bus-bandwidth factors, and each rank's expected
// output from every rank's input, with its check. CPU-only, so that the CPU tests cover it.
#pragma once

#include <cstddef>
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

// `rank`'s output against what it must be, given every rank's input (`inputs[r]`, counts.send
// elements each; broadcast's root is rank 0). Copies must match exactly. Sums must lie within
// 2 (n-1) u sum_r |x_r[i]| of the exact sum (FP64 here): (n-1) u is the first-order bound of any
// order of n-1 FP32 additions, doubled for room; an indexing or synchronisation fault (an error of
// the size of the values) still fails.
Verification verify_collective(Collective collective, const float* output, const std::vector<std::vector<float>>& inputs,
                               int rank, const CollectiveCounts& counts);

}  // namespace gpubench
