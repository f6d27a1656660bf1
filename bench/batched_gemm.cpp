// The batched GEMM study: many small square products C_i = A_i * B_i at once. From which
// batch does the GPU beat the CPU, where does its throughput stop growing, and what does
// batching through the library buy over a loop of calls?
//   CPU: OpenBLAS looped over the batch (threads inside each product); the batch spread
//        over OpenMP threads with single-threaded OpenBLAS.
//   GPU: cublasSgemmStridedBatched; a loop of cublasSgemm; that loop replayed as a CUDA graph;
//        each resident and transfer_pinned (A and B in, C out, timed).
// Entries: batched_gemm/<impl>/<cpu|gpu>/<mode>/fp32/n:<n>/batch:<b>; docs/interface.md.
#include <benchmark/benchmark.h>
#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "batched_gemm_cpu.hpp"
#include "harness/gpu_telemetry.hpp"
#include "core/json.hpp"
#include "core/random.hpp"
#include "core/reference.hpp"
#include "harness/study_main.hpp"
#include "harness/study_options.hpp"
#include "core/verify.hpp"

#if GPUBENCH_HAVE_CUDA
#include "batched_gemm_cublas.hpp"
#include "harness/gpu_entry.hpp"
#include "core/gpu_runtime.hpp"
#endif

namespace gpubench {
namespace {

struct Implementation {
  const char* id;
  bool on_gpu;
  BatchedGemmFn run;
  int (*threads)();  // CPU threads it uses; nullptr on the GPU
};

int openblas_threads() { return openblas_get_num_threads(); }
int openmp_threads() { return omp_get_max_threads(); }

const std::vector<Implementation>& implementations() {
  static const std::vector<Implementation> all = {
      {"openblas_loop", false, batched_gemm_openblas_loop, openblas_threads},
      {"threads_over_batch", false, batched_gemm_threads_over_batch, openmp_threads},
#if GPUBENCH_HAVE_CUDA
      {"cublas_strided", true, batched_gemm_cublas_strided, nullptr},
      {"cublas_loop", true, batched_gemm_cublas_loop, nullptr},
      {"cublas_graph", true, batched_gemm_cublas_graph, nullptr},
#endif
  };
  return all;
}

std::vector<std::string> modes_of(const Implementation& impl) {
  if (!impl.on_gpu) return {"host"};
  return {"resident", "transfer_pinned"};
}

const std::vector<int>& default_sizes() {
  static const std::vector<int> sizes = {32, 64, 128, 256, 512};
  return sizes;
}

const std::vector<int>& default_batches() {
  static const std::vector<int> batches = [] {
    std::vector<int> b;
    for (int batch = 1; batch <= 4096; batch *= 2) b.push_back(batch);
    return b;
  }();
  return batches;
}

// --- inputs and references, shared by every entry of one (n, batch) -----------------
// Products whose FP64 references are kept: the first, the last and a few in between, so
// a fault in the batch indexing (wrong stride, skipped product) shows.
constexpr int kCheckedProducts = 4;

struct BatchedProblem {
  BatchedGemmShape shape;
  std::vector<float> a, b;
  std::vector<int> checked;                 // indices of the products with references
  std::vector<MatmulReference> references;  // one per checked product
};

std::vector<int> checked_products(int batch, std::uint64_t seed) {
  std::vector<int> chosen = {0, batch - 1};
  std::mt19937_64 engine(seed);
  std::uniform_int_distribution<int> any(0, batch - 1);
  while (static_cast<int>(chosen.size()) < std::min(batch, kCheckedProducts)) chosen.push_back(any(engine));
  std::sort(chosen.begin(), chosen.end());
  chosen.erase(std::unique(chosen.begin(), chosen.end()), chosen.end());
  return chosen;
}

// Host bytes at peak: A, B, an output (12 bytes per element), the pinned copies of a
// transfer entry (12 more) and the upcast operands of one reference.
double host_bytes_needed(const BatchedGemmShape& s) { return 24.0 * s.elements() + 16.0 * s.stride(); }

const BatchedProblem* problem_or_skip(benchmark::State& state, BatchedGemmShape shape) {
  static std::unique_ptr<BatchedProblem> current;
  if (!host_memory_fits(state, host_bytes_needed(shape))) return nullptr;
  if (!current || current->shape.n != shape.n || current->shape.batch != shape.batch) {
    current.reset();
    auto problem = std::make_unique<BatchedProblem>();
    problem->shape = shape;
    const std::uint64_t configuration = static_cast<std::uint64_t>(shape.n) << 32 | shape.batch;
    problem->a = random_uniform(shape.elements(), configuration_seed(configuration, 0));
    problem->b = random_uniform(shape.elements(), configuration_seed(configuration, 1));
    problem->checked = checked_products(shape.batch, configuration_seed(configuration, 2));
    const MatmulShape one{shape.n, shape.n, shape.n};
    for (int i : problem->checked)
      problem->references.push_back(matmul_reference_fp64(problem->a.data() + i * shape.stride(),
                                                          problem->b.data() + i * shape.stride(), one,
                                                          ReferencePolicy{}, configuration_seed(configuration, 3)));
    current = std::move(problem);
  }
  return current.get();
}

// The worst verification over the checked products (a failing one if any fails).
Verification verify_batch(const float* c, const BatchedProblem& problem) {
  Verification worst;
  const Tolerance tolerance = accumulation_tolerance(kFp32UnitRoundoff, problem.shape.n);
  worst.tolerance = tolerance;
  for (std::size_t j = 0; j < problem.checked.size(); ++j) {
    const Verification v =
        verify_matmul(c + problem.checked[j] * problem.shape.stride(), problem.references[j], tolerance);
    if (!v.passed() || v.rel_fro_error > worst.rel_fro_error) worst = v;
    if (!v.passed()) break;
  }
  return worst;
}

void report_counters(benchmark::State& state, const BatchedGemmShape& s, const Verification& verdict,
                     double bytes_transferred) {
  state.counters["flop"] = s.flop();
  state.counters["products"] = s.batch;
  state.counters["bytes_transferred"] = bytes_transferred;
  state.counters["rel_fro_error"] = verdict.rel_fro_error;
  state.counters["max_rel_error"] = verdict.max_rel_error;
  state.counters["n"] = s.n;
  state.counters["batch"] = s.batch;
}

std::vector<float> poisoned(std::size_t count) { return std::vector<float>(count, std::numeric_limits<float>::quiet_NaN()); }

void run_cpu_entry(benchmark::State& state, const Implementation& impl, BatchedGemmShape shape) {
  const BatchedProblem* problem = problem_or_skip(state, shape);
  if (!problem) return;
  std::vector<float> c = poisoned(shape.elements());
  impl.run(problem->a.data(), problem->b.data(), c.data(), shape);  // warm-up, checked
  const Verification verdict = verify_batch(c.data(), *problem);
  if (!verdict.passed()) {
    state.SkipWithError(("wrong result: " + verdict.describe()).c_str());
    return;
  }
  for (auto _ : state) {
    impl.run(problem->a.data(), problem->b.data(), c.data(), shape);
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
  }
  report_counters(state, shape, verdict, 0.0);
  state.counters["threads"] = impl.threads();
}

#if GPUBENCH_HAVE_CUDA
// Buffers, pinned copies and the verdict of one entry, kept across Google Benchmark's
// repeated calls of it (large batches move gigabytes).
struct GpuEntryState {
  std::string name;
  std::unique_ptr<DeviceBuffer<float>> a, b, c;
  std::unique_ptr<PinnedBuffer<float>> pinned_a, pinned_b, pinned_c;
  double device_bytes = 0;  // measured: free device memory before minus after allocating
  Verification verdict;
};

std::unique_ptr<GpuEntryState> prepare_gpu_entry(const Implementation& impl, bool copies_timed,
                                                 const BatchedProblem& problem, const std::string& name) {
  const BatchedGemmShape s = problem.shape;
  const double free_before = require_device_memory(12.0 * s.elements());
  auto state = std::make_unique<GpuEntryState>();
  state->name = name;
  state->a = std::make_unique<DeviceBuffer<float>>(s.elements());
  state->b = std::make_unique<DeviceBuffer<float>>(s.elements());
  state->c = std::make_unique<DeviceBuffer<float>>(s.elements());
  state->device_bytes = free_before - static_cast<double>(device_free_bytes());
  CUDA_CHECK(cudaMemcpy(state->a->get(), problem.a.data(), state->a->bytes(), cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(state->b->get(), problem.b.data(), state->b->bytes(), cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemset(state->c->get(), 0xFF, state->c->bytes()));  // NaN: unwritten products fail
  impl.run(state->a->get(), state->b->get(), state->c->get(), s);
  std::vector<float> c(s.elements());
  CUDA_CHECK(cudaMemcpy(c.data(), state->c->get(), state->c->bytes(), cudaMemcpyDeviceToHost));
  state->verdict = verify_batch(c.data(), problem);
  if (copies_timed) {
    state->pinned_a = std::make_unique<PinnedBuffer<float>>(s.elements());
    state->pinned_b = std::make_unique<PinnedBuffer<float>>(s.elements());
    state->pinned_c = std::make_unique<PinnedBuffer<float>>(s.elements());
    std::copy(problem.a.begin(), problem.a.end(), state->pinned_a->get());
    std::copy(problem.b.begin(), problem.b.end(), state->pinned_b->get());
  }
  return state;
}

void run_gpu_entry(benchmark::State& state, const Implementation& impl, const std::string& mode,
                   BatchedGemmShape shape, const std::string& name) {
  static std::unique_ptr<GpuEntryState> current;
  guard_gpu_entry(state, [&] {
    const BatchedProblem* problem = problem_or_skip(state, shape);
    if (!problem) return;
    const bool copies_timed = mode == "transfer_pinned";
    if (!current || current->name != name) {
      current.reset();
      current = prepare_gpu_entry(impl, copies_timed, *problem, name);
    }
    if (!current->verdict.passed()) {
      state.SkipWithError(("wrong result: " + current->verdict.describe()).c_str());
      return;
    }
    GpuEntryState& s = *current;
    const auto run_once = [&] {
      if (copies_timed) {
        CUDA_CHECK(cudaMemcpyAsync(s.a->get(), s.pinned_a->get(), s.a->bytes(), cudaMemcpyHostToDevice, 0));
        CUDA_CHECK(cudaMemcpyAsync(s.b->get(), s.pinned_b->get(), s.b->bytes(), cudaMemcpyHostToDevice, 0));
      }
      impl.run(s.a->get(), s.b->get(), s.c->get(), shape);
      if (copies_timed) CUDA_CHECK(cudaMemcpyAsync(s.pinned_c->get(), s.c->get(), s.c->bytes(), cudaMemcpyDeviceToHost, 0));
    };
    run_once();  // warm-up of this mode
    CUDA_CHECK(cudaDeviceSynchronize());
    EventTimer timer;
    TelemetryWindow telemetry;  // clocks, power, energy and utilization over the timed loop
    for (auto _ : state) {
      timer.start();
      run_once();
      state.SetIterationTime(timer.stop_seconds());
    }
    report_counters(state, shape, s.verdict, copies_timed ? 3.0 * s.a->bytes() : 0.0);
    state.counters["device_bytes"] = s.device_bytes;
    telemetry.report(state);
  }, [&] { current.reset(); });
}
#endif  // GPUBENCH_HAVE_CUDA

// --- registration and description -----------------------------------------------------
std::string entry_name(const Implementation& impl, const std::string& mode, BatchedGemmShape s) {
  return std::string("batched_gemm/") + impl.id + (impl.on_gpu ? "/gpu/" : "/cpu/") + mode + "/fp32/n:" +
         std::to_string(s.n) + "/batch:" + std::to_string(s.batch);
}

void register_entry(const Implementation& impl, const std::string& mode, BatchedGemmShape shape) {
  const std::string name = entry_name(impl, mode, shape);
  benchmark::internal::Benchmark* entry = nullptr;
  if (impl.on_gpu) {
#if GPUBENCH_HAVE_CUDA
    entry = benchmark::RegisterBenchmark(name.c_str(), [&impl, mode, shape, name](benchmark::State& state) {
      run_gpu_entry(state, impl, mode, shape, name);
    });
    entry->UseManualTime();
#endif
  } else {
    entry = benchmark::RegisterBenchmark(name.c_str(), [&impl, shape](benchmark::State& state) {
      run_cpu_entry(state, impl, shape);
    });
    entry->UseRealTime();
  }
  entry->Unit(benchmark::kMicrosecond);
}

void register_entries(const StudyOptions& options, bool gpu_usable) {
  for (int n : options.sizes.empty() ? default_sizes() : options.sizes)
    for (int batch : options.batches.empty() ? default_batches() : options.batches)
      for (const Implementation& impl : implementations()) {
        const int cap = size_cap(options, impl.id, 0);  // no default caps: memory limits the batch
        if (!is_selected(options.impls, impl.id) || (cap > 0 && n > cap)) continue;
        if (impl.on_gpu && (!gpu_usable || options.cpu_only)) continue;
        for (const std::string& mode : modes_of(impl))
          if (is_selected(options.modes, mode)) register_entry(impl, mode, BatchedGemmShape{n, batch});
      }
}

std::string describe_implementation(const Implementation& impl) {
  return "{" + implementation_fields(impl.id, impl.on_gpu, modes_of(impl), 0, nullptr) + "}";
}

std::string describe_study() {
  const auto number = [](int v) { return std::to_string(v); };
  return "\"default_sizes\": " + json_list(default_sizes(), number) +
         ", \"default_batches\": " + json_list(default_batches(), number) +
         ", \"implementations\": " + json_list(implementations(), describe_implementation) +
         ", \"utilization\": " + utilization_description();
}

}  // namespace
}  // namespace gpubench

int main(int argc, char** argv) {
  using namespace gpubench;
  StudyDefinition study;
  study.name = "batched_gemm";
  for (const Implementation& impl : implementations()) study.impl_ids.push_back(impl.id);
  study.modes = {"host", "resident", "transfer_pinned"};
  study.batch_axis = true;
  study.describe = describe_study;
  study.register_entries = register_entries;
  return study_main(argc, argv, study);
}
