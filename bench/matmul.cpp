// The matmul study: C = A*B in FP32, square sizes, every CPU baseline against every GPU
// implementation, and every GPU implementation in three modes:
//   resident           inputs already on the device; the timed region is the compute alone
//   transfer_pinned    copy A and B in, compute, copy C out, from cudaMallocHost memory
//   transfer_pageable  the same from ordinary (touched) host memory
// Entries are named matmul/<impl>/<device>/<mode>/fp32/n:<n>; docs/interface.md has the rest.
#include <benchmark/benchmark.h>
#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "harness/gpu_telemetry.hpp"
#include "core/json.hpp"
#include "core/random.hpp"
#include "core/reference.hpp"
#include "harness/study_main.hpp"
#include "harness/study_options.hpp"
#include "core/verify.hpp"
#include "matmul_blocked.hpp"
#include "matmul_naive.hpp"
#include "matmul_openblas.hpp"

#if GPUBENCH_HAVE_CUDA
#include "harness/gpu_entry.hpp"
#include "core/gpu_runtime.hpp"
#include "matmul_cublas.hpp"
#include "matmul_naive.cuh"
#include "matmul_tiled.cuh"
#endif

namespace gpubench {
namespace {

enum class Mode { host, resident, transfer_pinned, transfer_pageable };

const char* mode_name(Mode mode) {
  switch (mode) {
    case Mode::host: return "host";
    case Mode::resident: return "resident";
    case Mode::transfer_pinned: return "transfer_pinned";
    case Mode::transfer_pageable: return "transfer_pageable";
  }
  return "?";
}

struct Implementation {
  const char* id;
  bool on_gpu;
  MatmulFp32Fn run;
  int max_size;             // 0: no cap
  const char* cap_reason;   // why the cap is where it is
  int (*threads)();         // CPU threads it uses; nullptr for GPU implementations
};

int one_thread() { return 1; }
int openmp_threads() { return omp_get_max_threads(); }
int openblas_threads() { return openblas_get_num_threads(); }

const std::vector<Implementation>& implementations() {
  static const std::vector<Implementation> all = {
      {"openblas", false, matmul_openblas, 0, nullptr, openblas_threads},
      {"blocked_loop", false, matmul_blocked_loop, 4096,
       "a call at 8192 takes several seconds on a 16-core host and OpenBLAS is the CPU's best by then",
       openmp_threads},
      {"naive_loop", false, matmul_naive_loop, 512,
       "one thread without blocking: a call at 1024 takes seconds and says nothing new about the crossover",
       one_thread},
#if GPUBENCH_HAVE_CUDA
      {"cublas", true, matmul_cublas, 0, nullptr, nullptr},
      {"tiled_kernel", true, matmul_tiled_kernel, 0, nullptr, nullptr},
      {"naive_kernel", true, matmul_naive_kernel, 0, nullptr, nullptr},
#endif
  };
  return all;
}

std::vector<Mode> modes_of(const Implementation& impl) {
  if (!impl.on_gpu) return {Mode::host};
  return {Mode::resident, Mode::transfer_pinned, Mode::transfer_pageable};
}

const std::vector<int>& default_sizes() {
  // 200 is the size of the well-known "GPU only a few times faster, copies eat the gain"
  // experiment; the driver adds points around each crossover.
  static const std::vector<int> sizes = {64,  128,  200,  256,  384,  512,  768,
                                         1024, 1536, 2048, 3072, 4096, 6144, 8192};
  return sizes;
}

// Inputs and FP64 reference for one size, shared by every implementation at that size
// so that all of them are timed and checked on the same random data.
struct MatmulProblem {
  MatmulShape shape;
  std::vector<float> a, b;
  MatmulReference reference;
};

// Host bytes one size needs at its peak: operands, an output, the FP64 reference and the
// reference's upcast operands while it is computed.
double host_bytes_needed(int n) { return 36.0 * n * n; }

const MatmulProblem& problem_for(int n) {
  static std::unique_ptr<MatmulProblem> current;
  if (!current || current->shape.n != n) {
    current.reset();  // free the previous size before allocating the next
    auto problem = std::make_unique<MatmulProblem>();
    problem->shape = {n, n, n};
    problem->a = random_uniform(problem->shape.a_elements(), configuration_seed(n, 0));
    problem->b = random_uniform(problem->shape.b_elements(), configuration_seed(n, 1));
    problem->reference = matmul_reference_fp64(problem->a.data(), problem->b.data(), problem->shape,
                                               ReferencePolicy{}, configuration_seed(n, 2));
    current = std::move(problem);
  }
  return *current;
}

// Every entry is verified on its first (warm-up) run in this process; the verdict is
// kept for the later repetitions of the same entry.
std::map<std::string, Verification>& verdicts() {
  static std::map<std::string, Verification> by_entry;
  return by_entry;
}

void poison(std::vector<float>& c) { std::fill(c.begin(), c.end(), std::numeric_limits<float>::quiet_NaN()); }

void report_counters(benchmark::State& state, const MatmulShape& shape, const Verification& verdict,
                     double bytes_transferred) {
  state.counters["flop"] = shape.flop();
  state.counters["bytes_transferred"] = bytes_transferred;
  state.counters["rel_fro_error"] = verdict.rel_fro_error;
  state.counters["max_rel_error"] = verdict.max_rel_error;
  state.counters["n"] = shape.n;
}

Tolerance fp32_tolerance(const MatmulShape& shape) { return accumulation_tolerance(kFp32UnitRoundoff, shape.k); }

// Returns the problem, or nullptr after marking the entry skipped when it cannot fit.
const MatmulProblem* problem_or_skip(benchmark::State& state, int n) {
  return host_memory_fits(state, host_bytes_needed(n)) ? &problem_for(n) : nullptr;
}

void run_cpu_entry(benchmark::State& state, const Implementation& impl, int n, const std::string& name) {
  const MatmulProblem* problem = problem_or_skip(state, n);
  if (!problem) return;
  const MatmulShape shape = problem->shape;
  std::vector<float> c(shape.c_elements());
  auto found = verdicts().find(name);
  if (found == verdicts().end()) {  // warm-up run, checked
    poison(c);
    impl.run(problem->a.data(), problem->b.data(), c.data(), shape);
    found = verdicts().emplace(name, verify_matmul(c.data(), problem->reference, fp32_tolerance(shape))).first;
  }
  if (!found->second.passed()) {
    state.SkipWithError(("wrong result: " + found->second.describe()).c_str());
    return;
  }
  for (auto _ : state) {
    impl.run(problem->a.data(), problem->b.data(), c.data(), shape);
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
  }
  report_counters(state, shape, found->second, 0.0);
  state.counters["threads"] = impl.threads();
}

#if GPUBENCH_HAVE_CUDA

// The host side of a transfer-inclusive run: where A and B are copied from and C to.
struct HostOperands {
  const float* a;
  const float* b;
  float* c;
};

void run_gpu_entry(benchmark::State& state, const Implementation& impl, Mode mode, int n,
                   const std::string& name) {
  guard_gpu_entry(state, [&] {
    const MatmulProblem* problem = problem_or_skip(state, n);
    if (!problem) return;
    const MatmulShape shape = problem->shape;
    require_device_memory(4.0 * (shape.a_elements() + shape.b_elements() + shape.c_elements()));
    DeviceBuffer<float> a(shape.a_elements()), b(shape.b_elements()), c(shape.c_elements());

    // Pageable mode copies straight from the problem's vectors: ordinary memory that has
    // been written, so every page is mapped. Pinned mode copies from cudaMallocHost memory.
    std::vector<float> pageable_c(shape.c_elements());
    std::unique_ptr<PinnedBuffer<float>> pinned_a, pinned_b, pinned_c;
    HostOperands host{problem->a.data(), problem->b.data(), pageable_c.data()};
    if (mode == Mode::transfer_pinned) {
      pinned_a = std::make_unique<PinnedBuffer<float>>(shape.a_elements());
      pinned_b = std::make_unique<PinnedBuffer<float>>(shape.b_elements());
      pinned_c = std::make_unique<PinnedBuffer<float>>(shape.c_elements());
      std::copy(problem->a.begin(), problem->a.end(), pinned_a->get());
      std::copy(problem->b.begin(), problem->b.end(), pinned_b->get());
      host = {pinned_a->get(), pinned_b->get(), pinned_c->get()};
    }
    const bool copies_timed = mode != Mode::resident;
    if (!copies_timed) {
      CUDA_CHECK(cudaMemcpy(a.get(), problem->a.data(), a.bytes(), cudaMemcpyHostToDevice));
      CUDA_CHECK(cudaMemcpy(b.get(), problem->b.data(), b.bytes(), cudaMemcpyHostToDevice));
    }
    const auto run_once = [&] {
      if (copies_timed) {
        CUDA_CHECK(cudaMemcpyAsync(a.get(), host.a, a.bytes(), cudaMemcpyHostToDevice, 0));
        CUDA_CHECK(cudaMemcpyAsync(b.get(), host.b, b.bytes(), cudaMemcpyHostToDevice, 0));
      }
      impl.run(a.get(), b.get(), c.get(), shape);
      if (copies_timed) CUDA_CHECK(cudaMemcpyAsync(host.c, c.get(), c.bytes(), cudaMemcpyDeviceToHost, 0));
    };

    // Warm-up on poisoned outputs (all-ones bytes are NaN), checked the first time.
    CUDA_CHECK(cudaMemset(c.get(), 0xFF, c.bytes()));
    std::fill(host.c, host.c + shape.c_elements(), std::numeric_limits<float>::quiet_NaN());
    run_once();
    CUDA_CHECK(cudaDeviceSynchronize());
    auto found = verdicts().find(name);
    if (found == verdicts().end()) {
      if (!copies_timed) CUDA_CHECK(cudaMemcpy(host.c, c.get(), c.bytes(), cudaMemcpyDeviceToHost));
      found = verdicts().emplace(name, verify_matmul(host.c, problem->reference, fp32_tolerance(shape))).first;
    }
    if (!found->second.passed()) {
      state.SkipWithError(("wrong result: " + found->second.describe()).c_str());
      return;
    }

    EventTimer timer;
    TelemetryWindow telemetry;  // clocks, power, energy and utilization over the timed loop
    for (auto _ : state) {
      timer.start();
      run_once();
      state.SetIterationTime(timer.stop_seconds());
    }
    telemetry.report(state);
    const double copied = copies_timed ? static_cast<double>(a.bytes() + b.bytes() + c.bytes()) : 0.0;
    report_counters(state, shape, found->second, copied);
  }, [] {});
}

#endif  // GPUBENCH_HAVE_CUDA

std::string entry_name(const Implementation& impl, Mode mode, int n) {
  return std::string("matmul/") + impl.id + (impl.on_gpu ? "/gpu/" : "/cpu/") + mode_name(mode) +
         "/fp32/n:" + std::to_string(n);
}

void register_entries(const StudyOptions& options, bool gpu_usable) {
  const std::vector<int>& sizes = options.sizes.empty() ? default_sizes() : options.sizes;
  for (int n : sizes) {
    for (const Implementation& impl : implementations()) {
      const int cap = size_cap(options, impl.id, impl.max_size);
      if (!is_selected(options.impls, impl.id) || (cap > 0 && n > cap)) continue;
      if (impl.on_gpu && (!gpu_usable || options.cpu_only)) continue;
      for (Mode mode : modes_of(impl)) {
        if (!is_selected(options.modes, mode_name(mode))) continue;
        const std::string name = entry_name(impl, mode, n);
        benchmark::internal::Benchmark* entry = nullptr;
        if (impl.on_gpu) {
#if GPUBENCH_HAVE_CUDA
          entry = benchmark::RegisterBenchmark(name.c_str(), [&impl, mode, n, name](benchmark::State& state) {
            run_gpu_entry(state, impl, mode, n, name);
          });
          entry->UseManualTime();
#endif
        } else {
          entry = benchmark::RegisterBenchmark(name.c_str(), [&impl, n, name](benchmark::State& state) {
            run_cpu_entry(state, impl, n, name);
          });
          entry->UseRealTime();  // multithreaded: the wall clock, not this thread's CPU time
        }
        entry->Unit(benchmark::kMicrosecond);
      }
    }
  }
}

std::string describe_implementation(const Implementation& impl) {
  std::vector<std::string> modes;
  for (Mode mode : modes_of(impl)) modes.push_back(mode_name(mode));
  return "{" + implementation_fields(impl.id, impl.on_gpu, modes, impl.max_size, impl.cap_reason) + "}";
}

std::string describe_study() {
  return "\"precision\": \"fp32\", \"default_sizes\": " +
         json_list(default_sizes(), [](int n) { return std::to_string(n); }) +
         ", \"implementations\": " + json_list(implementations(), describe_implementation);
}

}  // namespace
}  // namespace gpubench

int main(int argc, char** argv) {
  using namespace gpubench;
  StudyDefinition study;
  study.name = "matmul";
  for (const Implementation& impl : implementations()) study.impl_ids.push_back(impl.id);
  study.modes = {"host", "resident", "transfer_pinned", "transfer_pageable"};
  study.batch_axis = false;
  study.describe = describe_study;
  study.register_entries = register_entries;
  return study_main(argc, argv, study);
}
