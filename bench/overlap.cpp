// The overlap study: how much of the host<->device copy time a chunked pipeline hides behind
// compute. The work is split into chunks of rows; chunk i+1 is copied in while chunk i is
// computed and chunk i-1 copied out, chunk i on stream i % streams (common/pipeline has the
// order and why). Two workloads on n x n FP32 arrays: SAXPY (copy-bound) and the
// transfer-inclusive matmul C = A*B (compute-heavy). Schedules:
//   serial        everything on one stream, one chunk: the unpipelined baseline;
//   streams1/2/4  the pipeline on 1, 2 or 4 streams;
//   copy_only     the 4-stream pipeline without its compute: the total copy time;
//   compute_only  the 4-stream pipeline without its copies, on resident data: the total compute time.
// Each from pinned and from pageable host memory. The driver derives the ideal,
// max(copy_only, compute_only), and compares every pipeline with it and with serial.
// Entries: overlap/<schedule>/gpu/<pinned|pageable>/<saxpy|matmul>/n:<n>/batch:<chunks>;
// docs/interface.md.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness/gpu_telemetry.hpp"
#include "core/json.hpp"
#include "core/pipeline.hpp"
#include "core/random.hpp"
#include "core/reference.hpp"
#include "harness/study_main.hpp"
#include "harness/study_options.hpp"
#include "core/system.hpp"
#include "core/verify.hpp"

#if GPUBENCH_HAVE_CUDA
#include "harness/gpu_entry.hpp"
#include "core/gpu_runtime.hpp"
#include "overlap_pipeline.hpp"
#endif

namespace gpubench {
namespace {

constexpr int kMaxStreams = 4;

struct Schedule {
  const char* id;
  int streams;
  bool copies;
  bool compute;
  bool one_chunk;  // serial: the whole work as one chunk
};

const std::vector<Schedule>& schedules() {
  static const std::vector<Schedule> all = {
      {"serial", 1, true, true, true},
      {"streams1", 1, true, true, false},
      {"streams2", 2, true, true, false},
      {"streams4", 4, true, true, false},
      {"copy_only", kMaxStreams, true, false, false},
      {"compute_only", kMaxStreams, false, true, false},
  };
  return all;
}

enum class Workload { saxpy, matmul };
const std::vector<Workload> kWorkloads = {Workload::saxpy, Workload::matmul};
const std::vector<std::string> kHostMemories = {"pinned", "pageable"};

const char* workload_name(Workload w) { return w == Workload::saxpy ? "saxpy" : "matmul"; }

const std::vector<int>& default_sizes() {
  static const std::vector<int> sizes = {8192};
  return sizes;
}

const std::vector<int>& default_batches() {
  static const std::vector<int> batches = {1, 4, 16, 64};
  return batches;
}

#if GPUBENCH_HAVE_CUDA
double workload_flop(Workload w, int n) {
  const double elements = static_cast<double>(n) * n;
  return w == Workload::saxpy ? 2.0 * elements : 2.0 * elements * n;
}

// Both workloads copy two n x n arrays in and one out.
double workload_bytes(int n) { return 12.0 * n * n; }

// The chunk counts a schedule runs at. A pipeline with fewer chunks than streams would
// repeat the entry with as many streams as chunks, and one chunk is the serial entry; the
// serial entry runs once per size, whatever the batches, since every pipeline is compared
// with it.
std::vector<int> chunk_counts(const Schedule& schedule, const std::vector<int>& batches) {
  if (schedule.one_chunk) return {1};
  if (!(schedule.copies && schedule.compute)) return batches;
  std::vector<int> counts;
  for (int chunks : batches)
    if (chunks >= std::max(2, schedule.streams)) counts.push_back(chunks);
  return counts;
}

// --- inputs and references, shared by every entry of one (workload, n) ----------------
// Matmul rows checked against the FP64 product: every `n / kCheckedRows`-th row and the last.
// Evenly spread rather than random, so every chunk of at least n / kCheckedRows rows has
// checked rows (a chunk computed from the wrong rows of A fails); an unwritten chunk fails
// anyway, since the whole output is checked for the NaN it was poisoned with.
constexpr int kCheckedRows = 256;

struct OverlapProblem {
  Workload workload;
  int n;
  std::vector<float> in[2];     // saxpy: x, y; matmul: A, B
  float alpha = 0;              // saxpy's a
  std::vector<float> expected;  // saxpy: the exact result
  MatmulReference reference;    // matmul: FP64 rows

  std::size_t elements() const { return static_cast<std::size_t>(n) * n; }
};

std::vector<int> checked_rows(int n) {
  const int stride = std::max(1, n / kCheckedRows);
  std::vector<int> rows;
  for (int r = 0; r < n; r += stride) rows.push_back(r);
  if (rows.back() != n - 1) rows.push_back(n - 1);
  return rows;
}

// The FP64 product's `rows` only: A's rows gathered and multiplied by all of B.
MatmulReference reference_rows(const OverlapProblem& p, const std::vector<int>& rows) {
  const int count = static_cast<int>(rows.size());
  std::vector<float> gathered(static_cast<std::size_t>(count) * p.n);
  for (int i = 0; i < count; ++i)
    std::copy_n(p.in[0].begin() + static_cast<std::size_t>(rows[i]) * p.n, p.n,
                gathered.begin() + static_cast<std::size_t>(i) * p.n);
  const ReferencePolicy every_row{std::numeric_limits<double>::infinity(), 0};
  MatmulReference ref =
      matmul_reference_fp64(gathered.data(), p.in[1].data(), MatmulShape{count, p.n, p.n}, every_row, 0);
  ref.shape = MatmulShape{p.n, p.n, p.n};
  ref.rows = rows;
  return ref;
}

std::unique_ptr<OverlapProblem> make_problem(Workload workload, int n) {
  auto p = std::make_unique<OverlapProblem>();
  p->workload = workload;
  p->n = n;
  const std::uint64_t configuration = static_cast<std::uint64_t>(n) * 2 + (workload == Workload::matmul ? 1 : 0);
  for (int k = 0; k < 2; ++k) p->in[k] = random_uniform(p->elements(), configuration_seed(configuration, k));
  if (workload == Workload::matmul) {
    p->reference = reference_rows(*p, checked_rows(n));
    return p;
  }
  // a in [1, 2): never so small that a*x vanishes against y, which would let a chunk whose
  // compute was skipped pass. The device rounds each element once (fmaf), as std::fma does.
  p->alpha = 1.5f + 0.5f * random_uniform(1, configuration_seed(configuration, 2))[0];
  p->expected.resize(p->elements());
  for (std::size_t i = 0; i < p->elements(); ++i) p->expected[i] = std::fma(p->alpha, p->in[0][i], p->in[1][i]);
  return p;
}

// Host bytes at peak: the two inputs, SAXPY's expected result or matmul's upcast B, pinned
// copies of both inputs and the output, and up to three arrays downloaded to verify.
double host_bytes_needed(int n) { return 40.0 * n * n; }

// --- verification ------------------------------------------------------------------
// Bit-for-bit: a copy, or SAXPY, whose every element is one fused multiply-add on either
// side. The errors are recorded as the matmul ones are, and must be 0.
Verification verify_exact(const float* out, const float* expected, std::size_t count) {
  Verification v;
  v.tolerance = {0.0, 0.0};
  double diff_sq = 0, ref_sq = 0, max_diff = 0, max_ref = 0;
  for (std::size_t i = 0; i < count; ++i) {
    if (!std::isfinite(out[i])) {
      ++v.non_finite;
      continue;
    }
    const double diff = std::fabs(static_cast<double>(out[i]) - expected[i]);
    diff_sq += diff * diff;
    ref_sq += static_cast<double>(expected[i]) * expected[i];
    max_diff = std::max(max_diff, diff);
    max_ref = std::max(max_ref, std::fabs(static_cast<double>(expected[i])));
  }
  v.rel_fro_error = ref_sq > 0 ? std::sqrt(diff_sq / ref_sq) : (diff_sq > 0 ? INFINITY : 0.0);
  v.max_rel_error = max_ref > 0 ? max_diff / max_ref : (max_diff > 0 ? INFINITY : 0.0);
  return v;
}

Verification verify_result(const OverlapProblem& p, const float* out) {
  if (p.workload == Workload::saxpy) return verify_exact(out, p.expected.data(), p.elements());
  Verification v = verify_matmul(out, p.reference, accumulation_tolerance(kFp32UnitRoundoff, p.n));
  v.non_finite =
      static_cast<std::size_t>(std::count_if(out, out + p.elements(), [](float x) { return !std::isfinite(x); }));
  return v;
}

Verification first_failure(const Verification& a, const Verification& b) { return a.passed() ? b : a; }

void report_counters(benchmark::State& state, Workload workload, int n, const Schedule& schedule, int chunks,
                     const Verification& verdict) {
  state.counters["bytes_transferred"] = schedule.copies ? workload_bytes(n) : 0.0;
  state.counters["flop"] = schedule.compute ? workload_flop(workload, n) : 0.0;
  state.counters["n"] = n;
  state.counters["batch"] = chunks;
  state.counters["streams"] = std::min(schedule.streams, chunks);
  state.counters["chunk_bytes"] = static_cast<double>(chunk_range(n, chunks, 0).count) * n * sizeof(float);
  state.counters["rel_fro_error"] = verdict.rel_fro_error;
  state.counters["max_rel_error"] = verdict.max_rel_error;
}

std::unique_ptr<PinnedBuffer<float>> pinned_buffer(std::size_t count) {
  try {
    return std::make_unique<PinnedBuffer<float>>(count);
  } catch (const GpuError& e) {
    throw GpuEntrySkipped("pinned host allocation of " + format_bytes(count * sizeof(float)) + " failed: " + e.what());
  }
}

// Everything the entries of one (workload, n, host memory) share: device arrays, host
// buffers, streams, the operation, and each entry's verdict on this rig.
struct Rig {
  const OverlapProblem& problem;
  bool pinned;
  std::unique_ptr<DeviceBuffer<float>> device[3];  // in[0], in[1], out (matmul; SAXPY works in place on in[1])
  std::unique_ptr<PinnedBuffer<float>> pinned_in[2], pinned_out;
  std::vector<float> pageable_out;
  std::unique_ptr<LaneWorkspaces> workspaces;
  PipelineStreams streams{kMaxStreams};
  OverlapArrays arrays;
  ChunkedOperation operation;
  std::map<std::string, Verification> verdicts;

  Rig(const OverlapProblem& p, bool use_pinned) : problem(p), pinned(use_pinned) {}
};

// Pageable mode copies from the problem's vectors and into a vector that has been written
// (every page mapped); pinned mode from and into cudaMallocHost copies.
void attach_host_buffers(Rig& rig) {
  const OverlapProblem& p = rig.problem;
  if (!rig.pinned) {
    rig.pageable_out.assign(p.elements(), 0.0f);
    rig.arrays.host_in[0] = p.in[0].data();
    rig.arrays.host_in[1] = p.in[1].data();
    rig.arrays.host_out = rig.pageable_out.data();
    return;
  }
  for (int k = 0; k < 2; ++k) {
    rig.pinned_in[k] = pinned_buffer(p.elements());
    std::copy(p.in[k].begin(), p.in[k].end(), rig.pinned_in[k]->get());
    rig.arrays.host_in[k] = rig.pinned_in[k]->get();
  }
  rig.pinned_out = pinned_buffer(p.elements());
  rig.arrays.host_out = rig.pinned_out->get();
}

std::unique_ptr<Rig> make_rig(const OverlapProblem& p, bool pinned) {
  const bool matmul = p.workload == Workload::matmul;
  const int device_arrays = matmul ? 3 : 2;
  const double workspace_bytes = matmul ? static_cast<double>(kMaxStreams) * LaneWorkspaces::kBytes : 0.0;
  require_device_memory(device_arrays * 4.0 * p.elements() + workspace_bytes);
  auto rig = std::make_unique<Rig>(p, pinned);
  for (int k = 0; k < device_arrays; ++k) rig->device[k] = std::make_unique<DeviceBuffer<float>>(p.elements());
  rig->arrays.n = p.n;
  rig->arrays.device_in[0] = rig->device[0]->get();
  rig->arrays.device_in[1] = rig->device[1]->get();
  rig->arrays.device_out = rig->device[device_arrays - 1]->get();
  attach_host_buffers(*rig);
  if (matmul) {
    rig->workspaces = std::make_unique<LaneWorkspaces>(kMaxStreams);
    rig->operation = matmul_operation(rig->arrays, *rig->workspaces);
  } else {
    rig->operation = saxpy_operation(p.alpha, rig->arrays);
  }
  return rig;
}

struct Caches {
  std::unique_ptr<OverlapProblem> problem;
  std::unique_ptr<Rig> rig;  // built on `problem`, so reset first
};

Caches& caches() {
  static Caches c;
  return c;
}

Rig* rig_or_skip(benchmark::State& state, Workload workload, int n, bool pinned) {
  Caches& c = caches();
  if (c.rig && c.rig->problem.workload == workload && c.rig->problem.n == n && c.rig->pinned == pinned)
    return c.rig.get();
  c.rig.reset();
  if (!c.problem || c.problem->workload != workload || c.problem->n != n) {
    c.problem.reset();
    if (!host_memory_fits(state, host_bytes_needed(n))) return nullptr;
    c.problem = make_problem(workload, n);
  }
  c.rig = make_rig(*c.problem, pinned);
  return c.rig.get();
}

void upload(float* device, const std::vector<float>& host) {
  CUDA_CHECK(cudaMemcpy(device, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice));
}

std::vector<float> download(const float* device, std::size_t count) {
  std::vector<float> host(count);
  CUDA_CHECK(cudaMemcpy(host.data(), device, count * sizeof(float), cudaMemcpyDeviceToHost));
  return host;
}

void poison(float* device, std::size_t count) { CUDA_CHECK(cudaMemset(device, 0xFF, count * sizeof(float))); }

// The device before the verified run. Inputs a pipeline must copy in are poisoned (all-ones
// bytes are NaN), so a chunk never copied fails; compute_only finds them resident. An
// output that is not also an input is poisoned, except under copy_only, which copies it out
// unchanged: it is given A's values, so what arrives on the host is known.
void prepare_device(const Rig& rig, const PipelineSpec& spec) {
  const OverlapArrays& a = rig.arrays;
  const OverlapProblem& p = rig.problem;
  for (int k = 0; k < 2; ++k) {
    if (spec.copies)
      poison(a.device_in[k], p.elements());
    else
      upload(a.device_in[k], p.in[k]);
  }
  if (a.device_out != a.device_in[1]) {
    if (spec.compute)
      poison(a.device_out, p.elements());
    else
      upload(a.device_out, p.in[0]);
  }
  // The pipeline's non-blocking streams do not wait for work on the legacy default stream
  // (cudaMemset, and a cudaMemcpy from pageable memory, may still be running there).
  CUDA_CHECK(cudaDeviceSynchronize());
}

// copy_only: the inputs arrived intact and the host received the device's output unchanged.
Verification verify_copies(const Rig& rig) {
  const OverlapArrays& a = rig.arrays;
  const std::size_t count = rig.problem.elements();
  Verification v = verify_exact(a.host_out, download(a.device_out, count).data(), count);
  for (int k = 0; k < 2; ++k)
    v = first_failure(v, verify_exact(download(a.device_in[k], count).data(), rig.problem.in[k].data(), count));
  return v;
}

// The entry's first run on this rig: a warm-up (module loading, cuBLAS heuristics, clocks),
// untimed and checked.
Verification warm_up_and_verify(Rig& rig, const PipelineSpec& spec) {
  prepare_device(rig, spec);
  std::fill(rig.arrays.host_out, rig.arrays.host_out + rig.problem.elements(), std::numeric_limits<float>::quiet_NaN());
  rig.streams.run(rig.operation, spec);
  if (!spec.compute) return verify_copies(rig);
  if (spec.copies) return verify_result(rig.problem, rig.arrays.host_out);
  return verify_result(rig.problem, download(rig.arrays.device_out, rig.problem.elements()).data());
}

void run_entry(benchmark::State& state, const Schedule& schedule, Workload workload, bool pinned, int n, int chunks,
               const std::string& name) {
  if (chunks > n) {
    state.SkipWithError(("skipped: " + std::to_string(chunks) + " chunks of an array of " + std::to_string(n) +
                         " rows would leave some empty")
                            .c_str());
    return;
  }
  guard_gpu_entry(state, [&] {
    Rig* rig = rig_or_skip(state, workload, n, pinned);
    if (!rig) return;
    const PipelineSpec spec{chunks, schedule.streams, schedule.copies, schedule.compute};
    auto found = rig->verdicts.find(name);
    if (found == rig->verdicts.end()) found = rig->verdicts.emplace(name, warm_up_and_verify(*rig, spec)).first;
    if (!found->second.passed()) {
      state.SkipWithError(("wrong result: " + found->second.describe()).c_str());
      return;
    }
    // compute_only SAXPY goes on updating y in place from one run to the next: its time
    // does not depend on the values, and every other schedule copies y in afresh.
    TelemetryWindow telemetry;  // clocks, power, energy and utilization over the timed loop
    for (auto _ : state) state.SetIterationTime(rig->streams.run(rig->operation, spec));
    telemetry.report(state);
    report_counters(state, workload, n, schedule, chunks, found->second);
    state.counters["copy_engines"] = device_attribute(cudaDevAttrAsyncEngineCount);
  }, [] { caches().rig.reset(); });
}
// --- registration and description -----------------------------------------------------
std::string entry_name(const Schedule& schedule, const std::string& memory, Workload workload, int n, int chunks) {
  return std::string("overlap/") + schedule.id + "/gpu/" + memory + "/" + workload_name(workload) +
         "/n:" + std::to_string(n) + "/batch:" + std::to_string(chunks);
}

void register_entry(const Schedule& schedule, const std::string& memory, Workload workload, int n, int chunks) {
  const std::string name = entry_name(schedule, memory, workload, n, chunks);
  const bool pinned = memory == "pinned";
  benchmark::RegisterBenchmark(name.c_str(),
                               [&schedule, workload, pinned, n, chunks, name](benchmark::State& state) {
                                 run_entry(state, schedule, workload, pinned, n, chunks, name);
                               })
      ->UseManualTime()
      ->Unit(benchmark::kMicrosecond);
}
#endif  // GPUBENCH_HAVE_CUDA

// Every entry is on the GPU: without one (or with --cpu-only, or built without CUDA)
// the study registers none.
void register_entries(const StudyOptions& options, bool gpu_usable) {
  if (!gpu_usable) return;
#if GPUBENCH_HAVE_CUDA
  const std::vector<int>& batches = options.batches.empty() ? default_batches() : options.batches;
  for (int n : options.sizes.empty() ? default_sizes() : options.sizes)
    for (Workload workload : kWorkloads)
      for (const std::string& memory : kHostMemories) {
        if (!is_selected(options.modes, memory)) continue;
        for (const Schedule& schedule : schedules()) {
          const int cap = size_cap(options, schedule.id, 0);  // no default caps: memory limits n
          if (!is_selected(options.impls, schedule.id) || (cap > 0 && n > cap)) continue;
          for (int chunks : chunk_counts(schedule, batches)) register_entry(schedule, memory, workload, n, chunks);
        }
      }
#else
  (void)options;
#endif
}

std::string describe_schedule(const Schedule& s) {
  return "{" + implementation_fields(s.id, true, kHostMemories, 0, nullptr) +
         ", \"streams\": " + std::to_string(s.streams) + ", \"copies\": " + (s.copies ? "true" : "false") +
         ", \"compute\": " + (s.compute ? "true" : "false") + ", \"one_chunk\": " + (s.one_chunk ? "true" : "false") +
         "}";
}

std::string describe_workload(Workload w) {
  const bool saxpy = w == Workload::saxpy;
  return "{\"id\": " + json_string(workload_name(w)) + ", \"operation\": " +
         json_string(saxpy ? "y = a*x + y over n*n FP32 elements, x and y copied in by chunks, y copied out"
                           : "C = A*B, n x n FP32 (cuBLAS SGEMM); A and C by chunks of rows, B copied in once first") +
         ", \"flop\": " + json_string(saxpy ? "2 n^2" : "2 n^3") + ", \"bytes_transferred\": \"12 n^2\"}";
}

std::string describe_study() {
  const auto number = [](int v) { return std::to_string(v); };
  return "\"default_sizes\": " + json_list(default_sizes(), number) +
         ", \"default_batches\": " + json_list(default_batches(), number) +
         ", \"implementations\": " + json_list(schedules(), describe_schedule) +
         ", \"workloads\": " + json_list(kWorkloads, describe_workload) + ", \"ideal\": " +
         json_string("max(copy_only time, compute_only time) of the same n, workload, memory and batch");
}

}  // namespace
}  // namespace gpubench

int main(int argc, char** argv) {
  using namespace gpubench;
  StudyDefinition study;
  study.name = "overlap";
  for (const Schedule& schedule : schedules()) study.impl_ids.push_back(schedule.id);
  study.modes = kHostMemories;
  study.batch_axis = true;
  study.describe = describe_study;
  study.register_entries = register_entries;
  return study_main(argc, argv, study);
}
