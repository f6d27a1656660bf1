#include "collective_data.cuh"

#include <stdexcept>

#include "core/collective_elements.hpp"
#include "core/gpu_runtime.hpp"

namespace gpubench {
namespace {

constexpr unsigned kThreads = 256;
// The check's grid, at most: each thread strides over the output, and the blocks' sums are merged in
// a fixed order, so that a check's reported errors depend on the output alone, not on the GPU.
constexpr unsigned kCheckBlocks = 1024;
// The fill's grid, at most: enough to keep every multiprocessor of a GPU busy, each thread striding.
constexpr unsigned kFillBlocks = 8192;

unsigned blocks_for(std::size_t count, unsigned most) {
  const std::size_t needed = (count + kThreads - 1) / kThreads;
  return needed == 0 ? 1 : (needed < most ? static_cast<unsigned>(needed) : most);
}

__global__ void fill_input(float* send, std::size_t count, std::uint64_t rank_seed) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
    send[i] = seeded_uniform(rank_seed, i);
  }
}

// The block's threads' sums, `partial[0..kThreads)`, merged into partial[0] (a tree: a fixed order).
__device__ void merge_block(CollectiveErrorSums* partial) {
  for (unsigned half = kThreads / 2; half > 0; half /= 2) {
    __syncthreads();
    if (threadIdx.x < half) partial[threadIdx.x].merge(partial[threadIdx.x + half]);
  }
}

// Each block's sums over the elements its threads stride over, into block_sums[blockIdx.x].
__global__ void __launch_bounds__(kThreads) check_output(const float* output, Collective collective, SeededInputs inputs,
                                                         int ranks, int rank, CollectiveCounts counts,
                                                         CollectiveErrorSums* block_sums) {
  __shared__ CollectiveErrorSums partial[kThreads];
  CollectiveErrorSums sums = CollectiveErrorSums::none();
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < counts.recv; i += stride) {
    sums.add(i, output[i], expected_element(collective, inputs, ranks, rank, counts, i));
  }
  partial[threadIdx.x] = sums;
  merge_block(partial);
  if (threadIdx.x == 0) block_sums[blockIdx.x] = partial[0];
}

// One block: block_sums[0..blocks) merged into block_sums[blocks].
__global__ void __launch_bounds__(kThreads) merge_blocks(CollectiveErrorSums* block_sums, unsigned blocks) {
  __shared__ CollectiveErrorSums partial[kThreads];
  CollectiveErrorSums sums = CollectiveErrorSums::none();
  for (unsigned b = threadIdx.x; b < blocks; b += kThreads) sums.merge(block_sums[b]);
  partial[threadIdx.x] = sums;
  merge_block(partial);
  if (threadIdx.x == 0) block_sums[blocks] = partial[0];
}

}  // namespace

void fill_collective_input(float* send, std::size_t count, std::uint64_t problem_seed, int rank, cudaStream_t stream) {
  if (count == 0) return;  // a grid of zero blocks is a launch error
  const std::uint64_t rank_seed = collective_rank_seed(problem_seed, rank);
  fill_input<<<blocks_for(count, kFillBlocks), kThreads, 0, stream>>>(send, count, rank_seed);
  CUDA_CHECK_LAUNCH();
}

CollectiveVerification check_collective_output(Collective collective, const float* output, std::uint64_t problem_seed,
                                               int ranks, int rank, const CollectiveCounts& counts, cudaStream_t stream) {
  if (ranks < 1 || rank < 0 || rank >= ranks) {
    throw std::invalid_argument("check_collective_output: rank outside the ranks");
  }
  const unsigned blocks = blocks_for(counts.recv, kCheckBlocks);
  DeviceBuffer<CollectiveErrorSums> block_sums(blocks + 1);  // the last: the whole output's
  check_output<<<blocks, kThreads, 0, stream>>>(output, collective, SeededInputs{problem_seed}, ranks, rank, counts,
                                                block_sums.get());
  CUDA_CHECK_LAUNCH();
  merge_blocks<<<1, kThreads, 0, stream>>>(block_sums.get(), blocks);
  CUDA_CHECK_LAUNCH();
  CollectiveErrorSums sums;
  CUDA_CHECK(cudaMemcpyAsync(&sums, block_sums.get() + blocks, sizeof sums, cudaMemcpyDeviceToHost, stream));
  CUDA_CHECK(cudaStreamSynchronize(stream));
  return collective_verification(sums);
}

}  // namespace gpubench
