// The vector_add study: C = A + B in FP32, the classic first GPU program, from 1 Ki to 1 Gi
// elements. One memory-bound operation, so its question is the copies': a CPU loop on one thread
// and on all cores against our kernel, with the data resident on the device and with A and B
// copied in and C copied out in every call (pinned and pageable host memory, as matmul's modes).
// Every result is checked bit for bit: one rounded addition per element is the same everywhere.
// Entries: vector_add/<impl>/<device>/<mode>/fp32/n:<elements>; docs/interface.md.
#include <memory>
#include <string>
#include <vector>

#include "core/json.hpp"
#include "core/random.hpp"
#include "core/verify.hpp"
#include "harness/cpu_entry.hpp"
#include "harness/study.hpp"
#include "vector_add_cpu.hpp"

#if GPUBENCH_HAVE_CUDA
#include "harness/gpu_entry.hpp"
#include "vector_add.cuh"
#endif

namespace gpubench {
namespace {

struct VectorAddImplementation : Implementation {
  VectorAddFn run;
  const char* description;
};

std::vector<VectorAddImplementation> implementations() {
  const std::vector<std::string> cpu = {mode_name(Mode::host)};
  const std::vector<std::string> fp32 = {"fp32"};
  return {
      {{"loop_1thread", Device::cpu, cpu, fp32, 0, "", one_thread}, vector_add_loop,
       "the loop on one thread (vectorized by the compiler), its pages placed by that thread"},
      {{"loop_all_threads", Device::cpu, cpu, fp32, 0, "", openmp_threads}, vector_add_parallel,
       "the loop over all OpenMP threads, schedule(static): each thread adds the share whose pages it first wrote"},
#if GPUBENCH_HAVE_CUDA
      {{"kernel", Device::gpu, mode_names({Mode::resident, Mode::transfer_pinned, Mode::transfer_pageable}), fp32},
       vector_add_kernel, "one thread per element, blocks of 256 threads, as many blocks as the vector needs"},
      // The copies would cost the same as the kernel's: only its device time says something new.
      {{"one_block_kernel", Device::gpu, mode_names({Mode::resident}), fp32}, vector_add_one_block,
       "the guide's first program: one block, one thread per element up to 1024 elements; beyond, the block's 1024 "
       "threads stride over the vector (a block holds at most 1024 threads), so one multiprocessor does the work"},
#endif
  };
}

const std::vector<VectorAddImplementation>& table() {
  static const std::vector<VectorAddImplementation> all = implementations();
  return all;
}

// Inputs and the exact sum for one size, shared by every implementation at that size.
struct VectorAddProblem {
  std::size_t count = 0;
  std::vector<float> a, b, sum;
};

const VectorAddProblem& problem_for(int n) {
  static ProblemCache<int, VectorAddProblem> cache;
  // Host bytes at the peak: A, B and their sum, and one entry's copies (CPU: A, B and C placed by
  // its threads; GPU: pinned A, B and C, or a pageable C).
  require_host_memory(24.0 * n);
  return cache.get(n, [n] {
    VectorAddProblem problem;
    problem.count = static_cast<std::size_t>(n);
    problem.a = random_uniform(problem.count, configuration_seed(n, 0));
    problem.b = random_uniform(problem.count, configuration_seed(n, 1));
    problem.sum.resize(problem.count);
    const long count = static_cast<long>(problem.count);
#pragma omp parallel for schedule(static)
    for (long i = 0; i < count; ++i) problem.sum[i] = problem.a[i] + problem.b[i];
    return problem;
  });
}

// One addition per element; A and B read once, C written once, in FP32.
void report(PreparedEntry& entry, const float* c, const VectorAddProblem& problem) {
  entry.set_verdict(verify_exact(c, problem.sum.data(), problem.count));
  entry.counters["flop"] = static_cast<double>(problem.count);
  entry.add_memory_traffic(8.0 * problem.count, 4.0 * problem.count);
}

std::unique_ptr<PreparedEntry> prepare(const Entry& entry) {
  const auto& impl = row_of<VectorAddImplementation>(entry);
  const VectorAddProblem& problem = problem_for(entry.n);
  const auto call = [&impl, &problem](const std::vector<const float*>& in, float* c) {
    impl.run(in[0], in[1], c, problem.count);
  };
  const std::vector<const std::vector<float>*> inputs = {&problem.a, &problem.b};
#if GPUBENCH_HAVE_CUDA
  if (impl.on_gpu()) {
    auto gpu = std::make_unique<GpuFp32Entry>(inputs, problem.count, entry.mode, call);
    report(*gpu, gpu->output(), problem);
    return gpu;
  }
#endif
  auto cpu = std::make_unique<ThreadPlacedCpuEntry>(inputs, problem.count, call, impl.threads());
  report(*cpu, cpu->output(), problem);
  return cpu;
}

Json describe_implementation(const Implementation& impl) {
  return {{"description", static_cast<const VectorAddImplementation&>(impl).description}};
}

StudyDefinition definition() {
  StudyDefinition study;
  study.name = "vector_add";
  study.implementations = rows(table());
  study.modes = mode_names({Mode::host, Mode::resident, Mode::transfer_pinned, Mode::transfer_pageable});
  study.default_sizes = geometric(1L << 10, 1L << 30, 4);  // 1 Ki to 1 Gi elements (12 bytes each)
  study.axes.n = "elements";
  study.axes.n_unit = "elements";
  // The driver's default suite: the two ends, 12 entries (as transfer's): 1 Ki elements, what launches and
  // copies cost when there is almost nothing to do; 64 Mi, 768 MiB a call, past every cache, from memory
  // on both sides. --full sweeps between (1 Mi, 12 MiB a call, inside the caches, is --quick's).
  study.quick.sizes = {1 << 20};
  study.suite.sizes = {1 << 10, 64 << 20};
  study.counters = {{"flop", "FLOP", "n: one addition an element"},
                    {"memory_read_bytes", "bytes", "a and b once: 2 x 4 n"},
                    {"memory_written_bytes", "bytes", "c once: 4 n"},
                    kRelFroErrorCounter,
                    kMaxRelErrorCounter};
  study.prepare = prepare;
  study.describe = [] {
    return Json{{"precision", "fp32"},
                {"operation", "c[i] = a[i] + b[i], a and b uniform in [-1, 1)"},
                {"verification", "bit for bit against the host's FP32 sum"}};
  };
  study.describe_implementation = describe_implementation;
  return study;
}

}  // namespace
}  // namespace gpubench

int main(int argc, char** argv) { return gpubench::run_study(argc, argv, gpubench::definition()); }
