// The occupancy study: the same kernels launched on grids from one block to many times the GPU's
// multiprocessor count, of 32 to 1024 threads per block, in grid-stride loops so that every grid
// does the whole problem. Its rate against the warps resident at once and the multiprocessors busy
// shows what a launch configuration costs, and places a profiling walk-through's launch (16 blocks
// of 128 threads, said to use less than a tenth of a big GPU) on the curve. Two kernels:
//   naive_sgemm  the naive SGEMM (kernels/matmul_naive.cu), C = A*B at n = 1024, an element of C per
//                loop step: latency-bound, it needs many warps to hide its loads;
//   triad        z = x + s*y over 2^24 floats (kernels/triad_grid_stride.cu): bound by device memory,
//                it needs enough loads in flight.
// Beside each entry, the kernel's theoretical occupancy at its block size from the occupancy API
// and what limits it (core/kernel_occupancy.hpp). Operands resident, device time.
// Entries: occupancy/<kernel>/gpu/resident/fp32/n:<threads per block>/batch:<blocks>; docs/interface.md.
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "core/json.hpp"
#include "core/random.hpp"
#include "core/reference.hpp"
#include "core/system.hpp"
#include "core/verify.hpp"
#include "harness/study.hpp"

#if GPUBENCH_HAVE_CUDA
#include <cmath>

#include "core/gpu_runtime.hpp"
#include "core/kernel_occupancy.hpp"
#include "harness/gpu_entry.hpp"
#include "matmul_naive.cuh"
#include "triad_grid_stride.cuh"
#endif

namespace gpubench {
namespace {

constexpr int kSgemmSize = 1024;           // the naive SGEMM's n (square)
constexpr std::size_t kTriadElements = 1u << 24;  // 64 MiB an array, 192 MiB a call: past every L2
constexpr int kMaxThreadsPerBlock = 1024;  // every CUDA GPU's block limit
const std::vector<int> kBlockMultiples = {1, 2, 4, 8, 16, 32};  // of the multiprocessor count (the full sweep)
constexpr int kSmallGrids = 64;            // the full sweep's powers of two up to this many blocks

bool fits_one_block(int threads) { return threads >= 1 && threads <= kMaxThreadsPerBlock; }

#if GPUBENCH_HAVE_CUDA
struct OccupancyKernel : Implementation {
  const void* (*function)();
  std::unique_ptr<PreparedEntry> (*prepare)(LaunchShape launch);
  const char* problem;
  const char* description;
};

// --- the naive SGEMM -----------------------------------------------------------------------------
const MatmulProblem& sgemm_problem() {
  static const MatmulProblem problem = random_matmul_problem({kSgemmSize, kSgemmSize, kSgemmSize}, kSgemmSize);
  return problem;
}

std::unique_ptr<PreparedEntry> sgemm_entry(LaunchShape launch) {
  const MatmulProblem& p = sgemm_problem();
  auto entry = std::make_unique<GpuFp32Entry>(
      std::vector{&p.a, &p.b}, p.shape.c_elements(), mode_name(Mode::resident),
      [launch, shape = p.shape](const std::vector<const float*>& in, float* c) {
        matmul_naive_grid_stride_kernel(in[0], in[1], c, shape, launch);
      });
  entry->set_verdict(verify_matmul(entry->output(), p.reference, accumulation_tolerance(kFp32UnitRoundoff, p.shape.k)));
  entry->counters["flop"] = p.shape.flop();
  entry->add_memory_traffic(4.0 * (p.shape.a_elements() + p.shape.b_elements()), 4.0 * p.shape.c_elements());
  return entry;
}

// --- the triad -----------------------------------------------------------------------------------
struct TriadProblem {
  float s = 0;
  std::vector<float> x, y, z;  // z: the host's fused multiply-adds, what every element must equal
};

const TriadProblem& triad_problem() {
  static const TriadProblem problem = [] {
    TriadProblem made;
    made.x = random_uniform(kTriadElements, configuration_seed(kTriadElements, 0));
    made.y = random_uniform(kTriadElements, configuration_seed(kTriadElements, 1));
    made.s = random_uniform(1, configuration_seed(kTriadElements, 2))[0];
    made.z.resize(kTriadElements);
    for (std::size_t i = 0; i < kTriadElements; ++i) made.z[i] = std::fma(made.s, made.y[i], made.x[i]);
    return made;
  }();
  return problem;
}

std::unique_ptr<PreparedEntry> triad_entry(LaunchShape launch) {
  const TriadProblem& p = triad_problem();
  auto entry = std::make_unique<GpuFp32Entry>(std::vector{&p.x, &p.y}, kTriadElements, mode_name(Mode::resident),
                                              [launch, s = p.s](const std::vector<const float*>& in, float* z) {
                                                triad_grid_stride_kernel(in[0], in[1], z, kTriadElements, s, launch);
                                              });
  entry->set_verdict(verify_exact(entry->output(), p.z.data(), kTriadElements));
  entry->counters["flop"] = 2.0 * kTriadElements;
  entry->add_memory_traffic(8.0 * kTriadElements, 4.0 * kTriadElements);
  return entry;
}

std::vector<OccupancyKernel> implementations() {
  const std::vector<std::string> resident = {mode_name(Mode::resident)};
  const std::vector<std::string> fp32 = {"fp32"};
  const auto row = [&](const char* id) {
    Implementation base{id, Device::gpu, resident, fp32};
    base.runs_at = fits_one_block;
    return base;
  };
  return {
      {row("naive_sgemm"), matmul_naive_grid_stride_function, sgemm_entry,
       "C = A*B, A, B and C 1024 x 1024 FP32, uniform in [-1, 1)",
       "the naive SGEMM (kernels/matmul_naive.cu) in a grid-stride loop over C: each thread computes elements t, "
       "t + grid threads, ..., each a 1024-long dot product from global memory; checked against the FP64 product"},
      {row("triad"), triad_grid_stride_function, triad_entry,
       "z = x + s*y over 2^24 FP32 elements (64 MiB an array), uniform in [-1, 1)",
       "the textbook grid-stride loop, one float per thread per step, one fused multiply-add per element; checked "
       "bit for bit against the host's fma"},
  };
}

const std::vector<OccupancyKernel>& table() {
  static const std::vector<OccupancyKernel> all = implementations();
  return all;
}

// What the entry's launch does with the GPU: its kernel's theoretical occupancy at this block size
// and where the grid lands.
void report_occupancy(PreparedEntry& entry, const KernelOccupancy& o, LaunchShape launch) {
  entry.counters["multiprocessors"] = o.multiprocessors;
  entry.counters["busy_multiprocessors"] = o.busy_multiprocessors(launch.blocks);
  entry.counters["resident_warps"] = o.resident_warps(launch.blocks);
  entry.counters["max_resident_warps"] = o.max_resident_warps();
  entry.counters["blocks_per_multiprocessor"] = o.blocks_per_multiprocessor;
  entry.counters["theoretical_occupancy"] = o.occupancy();
  entry.counters["registers_per_thread"] = o.registers_per_thread;
  entry.counters["shared_bytes_per_block"] = static_cast<double>(o.shared_bytes_per_block);
}

std::unique_ptr<PreparedEntry> prepare(const Entry& entry) {
  const auto& kernel = row_of<OccupancyKernel>(entry);
  const LaunchShape launch{static_cast<unsigned>(entry.batch), static_cast<unsigned>(entry.n)};
  const KernelOccupancy occupancy = kernel_occupancy(kernel.function(), entry.n);
  if (occupancy.blocks_per_multiprocessor == 0)
    throw EntrySkipped("a block of " + std::to_string(entry.n) + " threads of this kernel cannot run on this GPU");
  auto prepared = kernel.prepare(launch);
  report_occupancy(*prepared, occupancy, launch);
  return prepared;
}

// Threads per block whose theoretical occupancy --describe lists: every whole number of warps.
std::vector<int> described_block_sizes() {
  std::vector<int> sizes;
  for (int threads = 32; threads <= kMaxThreadsPerBlock; threads += 32) sizes.push_back(threads);
  return sizes;
}

// The kernel's occupancy at every block size; null without a usable GPU or where the runtime cannot
// say (no code for this GPU in the binary: its entries then fail and say why).
Json described_occupancy(const OccupancyKernel& kernel) {
  if (!gpu_unavailable_reason().empty()) return nullptr;
  try {
    return array_of(described_block_sizes(),
                    [&kernel](int threads) { return occupancy_json(kernel_occupancy(kernel.function(), threads)); });
  } catch (const GpuError&) {
    static_cast<void>(cudaGetLastError());  // not sticky: the entries start clean
    return nullptr;
  }
}

Json describe_kernel(const Implementation& impl) {
  const auto& kernel = static_cast<const OccupancyKernel&>(impl);
  return {{"problem", kernel.problem}, {"description", kernel.description}, {"occupancy", described_occupancy(kernel)}};
}
#endif  // GPUBENCH_HAVE_CUDA

// Blocks of the full sweep: powers of two up to kSmallGrids (the walk-through's 16 among them) and
// kBlockMultiples times the multiprocessor count of this GPU; without one, powers of two to 4096.
std::vector<int> default_blocks() {
  std::vector<int> blocks = geometric(1, kSmallGrids, 2);
#if GPUBENCH_HAVE_CUDA
  if (gpu_unavailable_reason().empty()) {
    const int multiprocessors = device_attribute(cudaDevAttrMultiProcessorCount);
    for (int multiple : kBlockMultiples) blocks.push_back(multiple * multiprocessors);
    std::sort(blocks.begin(), blocks.end());
    blocks.erase(std::unique(blocks.begin(), blocks.end()), blocks.end());
    return blocks;
  }
#endif
  return geometric(1, 4096, 2);
}

Json describe_study() {
  return {{"precision", "fp32"},
          {"walkthrough",
           {{"blocks", 16},
            {"threads_per_block", 128},
            {"kernel", "naive_sgemm"},
            {"claim", "uses less than a tenth of a big GPU"}}},
          {"blocks_rule", "the full sweep's blocks: 1, 2, 4, ..., " + std::to_string(kSmallGrids) +
                              " and 1, 2, 4, ..., 32 times the GPU's multiprocessor count (without a GPU, 1 to 4096)"},
          {"placement_rule",
           "busy_multiprocessors = min(blocks, multiprocessors): the block scheduler puts one block on each idle "
           "multiprocessor before a second on any; resident_warps = min(blocks, multiprocessors x "
           "blocks_per_multiprocessor) x warps per block: the grid's first wave"}};
}

StudyDefinition definition() {
  StudyDefinition study;
  study.name = "occupancy";
#if GPUBENCH_HAVE_CUDA
  study.implementations = rows(table());
  study.describe_implementation = describe_kernel;
#endif
  study.modes = {mode_name(Mode::resident)};
  study.default_sizes = geometric(32, kMaxThreadsPerBlock, 2);
  study.default_batches = default_blocks();
  study.axes.n = "threads_per_block";
  study.axes.batch = "blocks";
  study.axes.n_unit = "threads";
  study.axes.batch_unit = "blocks";
  // The driver's default suite: the naive SGEMM only, 128 threads a block, at the walk-through's 16 blocks,
  // one block per multiprocessor of an H100 or H200 (132) and 32 per multiprocessor (4224): 3 entries, the
  // fraction of the GPU the walk-through's launch reaches against the best of them. 256-thread blocks add
  // nothing there (4224 of them within 1.2% of 4224 of 128 in the H100 run 20261127-084333) and cost a
  // process per trial: --full. --quick: 16 and 4224 blocks of 128 threads.
  // The triad, 32 to 1024 threads and 1 to 32 x the multiprocessors (the GPU's own count): --full.
  study.quick.sizes = {128};
  study.quick.batches = {16, 4224};
  study.quick.impls = {"naive_sgemm"};
  study.suite.sizes = {128};
  study.suite.batches = {16, 132, 4224};
  study.suite.impls = {"naive_sgemm"};
  study.counters = {
      {"flop", "FLOP", "naive_sgemm: 2 x 1024^3; triad: 2 x 2^24"},
      {"memory_read_bytes", "bytes", "naive_sgemm: A and B once (2 x 4 x 1024^2); triad: x and y once (8 x 2^24)"},
      {"memory_written_bytes", "bytes", "naive_sgemm: C once (4 x 1024^2); triad: z once (4 x 2^24)"},
      kRelFroErrorCounter,
      kMaxRelErrorCounter,
      {"multiprocessors", "count", "the GPU's"},
      {"busy_multiprocessors", "count", "placement_rule: min(blocks, multiprocessors)"},
      {"resident_warps", "count", "placement_rule: the grid's first wave"},
      {"max_resident_warps", "count", "multiprocessors x the warps one holds at once"},
      {"blocks_per_multiprocessor", "count", "the kernel's resident blocks at this block size (the occupancy "
                                             "calculator)"},
      {"theoretical_occupancy", "fraction", "resident warps of a multiprocessor over the most it holds"},
      {"registers_per_thread", "count", "the kernel's"},
      {"shared_bytes_per_block", "bytes", "static and dynamic shared memory of a block"}};
  study.prepare = [](const Entry& entry) -> std::unique_ptr<PreparedEntry> {
#if GPUBENCH_HAVE_CUDA
    return prepare(entry);
#else
    static_cast<void>(entry);
    throw EntrySkipped("built without CUDA");  // not reached: the study has no rows without it
#endif
  };
  study.describe = describe_study;
  return study;
}

}  // namespace
}  // namespace gpubench

int main(int argc, char** argv) { return gpubench::run_study(argc, argv, gpubench::definition()); }
