// The batched GEMM study: many small square products C_i = A_i * B_i at once. From which
// batch does the GPU beat the CPU, where does its throughput stop growing, and what does
// batching through the library buy over a loop of calls?
//   CPU: OpenBLAS looped over the batch (threads inside each product); the batch spread
//        over OpenMP threads with single-threaded OpenBLAS.
//   GPU: cublasSgemmStridedBatched; a loop of cublasSgemm; that loop replayed as a CUDA graph;
//        each resident and transfer_pinned (A and B in, C out, timed).
// Entries: batched_gemm/<impl>/<cpu|gpu>/<mode>/fp32/n:<n>/batch:<b>; docs/interface.md.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "batched_gemm_cpu.hpp"
#include "core/random.hpp"
#include "core/reference.hpp"
#include "core/verify.hpp"
#include "harness/cpu_entry.hpp"
#include "harness/study.hpp"

#if GPUBENCH_HAVE_CUDA
#include "batched_gemm_cublas.hpp"
#include "harness/gpu_entry.hpp"
#endif

namespace gpubench {
namespace {

struct BatchedGemmImplementation : Implementation {
  BatchedGemmFn run;
};

// No size caps: memory limits the batch.
std::vector<BatchedGemmImplementation> implementations() {
  const std::vector<std::string> cpu = {mode_name(Mode::host)};
  const std::vector<std::string> gpu = mode_names({Mode::resident, Mode::transfer_pinned});
  const std::vector<std::string> fp32 = {"fp32"};
  return {
      {{"openblas_loop", Device::cpu, cpu, fp32, 0, "", openblas_threads}, batched_gemm_openblas_loop},
      {{"threads_over_batch", Device::cpu, cpu, fp32, 0, "", openmp_threads}, batched_gemm_threads_over_batch},
#if GPUBENCH_HAVE_CUDA
      {{"cublas_strided", Device::gpu, gpu, fp32}, batched_gemm_cublas_strided},
      {{"cublas_loop", Device::gpu, gpu, fp32}, batched_gemm_cublas_loop},
      {{"cublas_graph", Device::gpu, gpu, fp32}, batched_gemm_cublas_graph},
#endif
  };
}

const std::vector<BatchedGemmImplementation>& table() {
  static const std::vector<BatchedGemmImplementation> all = implementations();
  return all;
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

BatchedProblem make_problem(BatchedGemmShape shape) {
  BatchedProblem problem;
  problem.shape = shape;
  const std::uint64_t configuration = static_cast<std::uint64_t>(shape.n) << 32 | shape.batch;
  problem.a = random_uniform(shape.elements(), configuration_seed(configuration, 0));
  problem.b = random_uniform(shape.elements(), configuration_seed(configuration, 1));
  problem.checked = checked_products(shape.batch, configuration_seed(configuration, 2));
  const MatmulShape one{shape.n, shape.n, shape.n};
  for (int i : problem.checked)
    problem.references.push_back(matmul_reference_fp64(problem.a.data() + i * shape.stride(),
                                                       problem.b.data() + i * shape.stride(), one, ReferencePolicy{},
                                                       configuration_seed(configuration, 3)));
  return problem;
}

const BatchedProblem& problem_for(BatchedGemmShape shape) {
  static ProblemCache<std::pair<int, int>, BatchedProblem> cache;
  require_host_memory(host_bytes_needed(shape));
  return cache.get({shape.n, shape.batch}, [shape] { return make_problem(shape); });
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

// Every product reads its A and B once and writes its C once, in FP32.
void report_work(PreparedEntry& entry, const BatchedGemmShape& s) {
  entry.counters["flop"] = s.flop();
  entry.counters["products"] = s.batch;
  entry.add_memory_traffic(4.0 * 2 * s.elements(), 4.0 * s.elements());
}

std::unique_ptr<PreparedEntry> prepare(const Entry& entry) {
  const auto& impl = row_of<BatchedGemmImplementation>(entry);
  const BatchedProblem& problem = problem_for(BatchedGemmShape{entry.n, entry.batch});
  const std::vector<const std::vector<float>*> inputs = {&problem.a, &problem.b};
  const auto call = [&impl, &problem](const std::vector<const float*>& in, float* c) {
    impl.run(in[0], in[1], c, problem.shape);
  };
  const auto reported = [&problem](auto entry) -> std::unique_ptr<PreparedEntry> {
    entry->set_verdict(verify_batch(entry->output(), problem));
    report_work(*entry, problem.shape);
    return entry;
  };
#if GPUBENCH_HAVE_CUDA
  // transfer_pinned copies A and B in and C out of cudaMallocHost memory in every call.
  if (impl.on_gpu()) {
    auto gpu = std::make_unique<GpuFp32Entry>(inputs, problem.shape.elements(), entry.mode, call);
    gpu->counters["device_bytes"] = gpu->device_bytes_taken();
    return reported(std::move(gpu));
  }
#endif
  return reported(std::make_unique<ThreadPlacedCpuEntry>(inputs, problem.shape.elements(), call));
}

StudyDefinition definition() {
  StudyDefinition study;
  study.name = "batched_gemm";
  study.implementations = rows(table());
  study.modes = mode_names({Mode::host, Mode::resident, Mode::transfer_pinned});
  study.default_sizes = {32, 64, 128, 256, 512};
  study.default_batches = geometric(1, 4096, 2);
  study.axes.batch_unit = "products";
  // The driver's default suite: the small product (32), where batching decides everything, from one
  // product a call (the CPU's ground) through 64 (the crossovers lie below it) to 4096, where the batch
  // fills the GPU (a batched call against a loop of calls, the saturation). The mid-sized product (128)
  // restates it with smaller factors and took 60% of the study's time in the H100 run 20261127-084333
  // (its 4096 x 128^2 inputs and their references): --full sweeps every size and doubling.
  // --quick: 32 at one product and 256.
  study.quick.sizes = {32};
  study.quick.batches = {1, 256};
  study.suite.sizes = {32};
  study.suite.batches = {1, 64, 4096};
  study.counters = {{"flop", "FLOP", "2 n^3 x batch a call"},
                    {"products", "count", "the batch: n x n products a call"},
                    {"memory_read_bytes", "bytes", "every product's A and B once: 2 x 4 n^2 x batch"},
                    {"memory_written_bytes", "bytes", "every product's C once: 4 n^2 x batch"},
                    {"device_bytes", "bytes", "device memory the GPU entry took: free memory before its buffers "
                                              "less free memory after"},
                    kRelFroErrorCounter,
                    kMaxRelErrorCounter};
  study.prepare = prepare;
  study.describe = [] { return Json{{"utilization", utilization_description()}}; };
  return study;
}

}  // namespace
}  // namespace gpubench

int main(int argc, char** argv) { return gpubench::run_study(argc, argv, gpubench::definition()); }
