// The collectives study's data on the device, after nccl-tests (src/common.cu, InitData and
// CheckData): each rank's input filled on its own GPU from a seed, and each rank's output checked on
// its GPU against values recomputed, element by element, from the seeds of the ranks that contribute
// (core/collective_elements.hpp). The host receives the check's few sums, never a buffer.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "core/collectives.hpp"

namespace gpubench {

// Rank `rank`'s input of the problem seeded `problem_seed` into `send` (`count` FP32 values on the
// current device), enqueued on `stream`: element i is SeededInputs{problem_seed}(rank, i).
void fill_collective_input(float* send, std::size_t count, std::uint64_t problem_seed, int rank, cudaStream_t stream);

// `rank`'s output of `collective` (counts.recv FP32 values on the current device, written by work
// on `stream`) against what it must be, given `ranks` ranks whose inputs were filled from
// `problem_seed`: verify_collective's verdict (core/collectives.hpp), reduced on the device. Waits
// for `stream`.
CollectiveVerification check_collective_output(Collective collective, const float* output, std::uint64_t problem_seed,
                                               int ranks, int rank, const CollectiveCounts& counts, cudaStream_t stream);

}  // namespace gpubench
