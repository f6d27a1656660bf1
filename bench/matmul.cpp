// The matmul study: C = A*B in FP32, square sizes, every CPU baseline against every GPU
// implementation, and every GPU implementation in three modes:
//   resident           inputs already on the device; the timed region is the compute alone
//   transfer_pinned    copy A and B in, compute, copy C out, from cudaMallocHost memory
//   transfer_pageable  the same from ordinary (touched) host memory
// Entries are named matmul/<impl>/<device>/<mode>/fp32/n:<n>; docs/interface.md has the rest.
#include <memory>
#include <vector>

#include "core/random.hpp"
#include "core/reference.hpp"
#include "core/verify.hpp"
#include "harness/cpu_entry.hpp"
#include "harness/cublaslt_choice.hpp"
#include "harness/study.hpp"
#include "matmul_blocked.hpp"
#include "matmul_naive.hpp"
#include "matmul_openblas.hpp"

#if GPUBENCH_HAVE_CUDA
#include "harness/gpu_entry.hpp"
#include "matmul_cublas.hpp"
#include "matmul_naive.cuh"
#include "matmul_tiled.cuh"
#endif

namespace gpubench {
namespace {

struct MatmulImplementation : Implementation {
  MatmulFp32Fn run;
  bool cublaslt = false;  // the cuBLASLt path, whose plan is held across the run's processes and reported
};

std::vector<MatmulImplementation> implementations() {
  const std::vector<std::string> cpu = {mode_name(Mode::host)};
  const std::vector<std::string> gpu = mode_names({Mode::resident, Mode::transfer_pinned, Mode::transfer_pageable});
  const std::vector<std::string> fp32 = {"fp32"};
  return {
      {{"openblas", Device::cpu, cpu, fp32, 0, "", openblas_threads}, matmul_openblas},
      {{"blocked_loop", Device::cpu, cpu, fp32, 4096,
        "a call at 8192 is 1.1 TFLOP, seconds on a CPU; OpenBLAS covers the CPU side at that size",
        openmp_threads},
       matmul_blocked_loop},
      {{"naive_loop", Device::cpu, cpu, fp32, 512,
        "one thread without blocking: a call at 1024 takes seconds and says nothing new about the crossover",
        one_thread},
       matmul_naive_loop},
#if GPUBENCH_HAVE_CUDA
      {{"cublas", Device::gpu, gpu, fp32}, matmul_cublaslt, true},
      {{"tiled_kernel", Device::gpu, gpu, fp32}, matmul_tiled_kernel},
      {{"naive_kernel", Device::gpu, gpu, fp32}, matmul_naive_kernel},
#endif
  };
}

const std::vector<MatmulImplementation>& table() {
  static const std::vector<MatmulImplementation> all = implementations();
  return all;
}

// Inputs and FP64 reference for one size, shared by every implementation at that size
// so that all of them are timed and checked on the same random data.
const MatmulProblem& problem_for(int n) {
  static ProblemCache<int, MatmulProblem> cache;
  // Host bytes at the peak: operands, a CPU entry's copies of them, an output, the FP64
  // reference and its upcast operands.
  require_host_memory(44.0 * n * n);
  return cache.get(n, [n] { return random_matmul_problem({n, n, n}, n); });
}

Verification checked(const float* c, const MatmulProblem& problem) {
  return verify_matmul(c, problem.reference, accumulation_tolerance(kFp32UnitRoundoff, problem.shape.k));
}

// A and B read once, C written once, in FP32.
void report_traffic(PreparedEntry& entry, const MatmulShape& s) {
  entry.counters["flop"] = s.flop();
  entry.add_memory_traffic(4.0 * (s.a_elements() + s.b_elements()), 4.0 * s.c_elements());
}

std::unique_ptr<PreparedEntry> prepare(const Entry& entry) {
  const auto& impl = row_of<MatmulImplementation>(entry);
  const MatmulProblem& problem = problem_for(entry.n);
  const std::vector<const std::vector<float>*> inputs = {&problem.a, &problem.b};
  const auto call = [&impl, &problem](const std::vector<const float*>& in, float* c) {
    impl.run(in[0], in[1], c, problem.shape);
  };
  const auto reported = [&problem](auto entry) -> std::unique_ptr<PreparedEntry> {
    entry->set_verdict(checked(entry->output(), problem));
    report_traffic(*entry, problem.shape);
    return entry;
  };
#if GPUBENCH_HAVE_CUDA
  // Resident: operands copied once, untimed. Transfer modes: A and B copied in and C out in every
  // call, from pinned (cudaMallocHost) memory or from the problem's own written vectors. The
  // cuBLASLt plan is made first, for the alignment of the entry's cudaMalloc buffers.
  if (impl.on_gpu()) {
    const CublasLtGemm* plan =
        impl.cublaslt ? &held_cublaslt_plan(Precision::fp32, problem.shape, CublasLtAlignment::of_allocations())
                      : nullptr;
    auto prepared = reported(std::make_unique<GpuFp32Entry>(inputs, problem.shape.c_elements(), entry.mode, call));
    if (plan) report_cublaslt_choice(*prepared, *plan);
    return prepared;
  }
#endif
  return reported(std::make_unique<ThreadPlacedCpuEntry>(inputs, problem.shape.c_elements(), call));
}

StudyDefinition definition() {
  StudyDefinition study;
  study.name = "matmul";
  study.implementations = rows(table());
  study.modes = mode_names({Mode::host, Mode::resident, Mode::transfer_pinned, Mode::transfer_pageable});
  // 200 is the size of the well-known "GPU only a few times faster, copies eat the gain"
  // experiment; the driver adds points around each crossover.
  study.default_sizes = {64, 128, 200, 256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192};
  // The driver's default suite (every study within about ten minutes on one H100) and --quick (within
  // two minutes: every implementation runs and is checked, no crossover found). Only matmul compares
  // the GPU with the CPU at every size, and the driver adds points around each crossover.
  study.quick.sizes = {256};
  study.suite.sizes = {64, 256, 1024, 4096};
  study.counters = {{"flop", "FLOP", "2 n^3 a call"},
                    {"memory_read_bytes", "bytes", "A and B once: 2 x 4 n^2"},
                    {"memory_written_bytes", "bytes", "C once: 4 n^2"},
                    kRelFroErrorCounter,
                    kMaxRelErrorCounter};
  for (CounterRule& rule : cublaslt_choice_counters()) study.counters.push_back(std::move(rule));  // cublas entries
  study.prepare = prepare;
  study.describe = [] { return Json{{"precision", "fp32"}}; };
  return study;
}

}  // namespace
}  // namespace gpubench

int main(int argc, char** argv) { return gpubench::run_study(argc, argv, gpubench::definition()); }
