// The overlap study: how much of the host<->device copy time a chunked pipeline hides behind
// compute. The work is split into chunks of rows; chunk i+1 is copied in while chunk i is
// computed and chunk i-1 copied out, chunk i on stream i % streams (core/pipeline has the
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
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "core/json.hpp"
#include "harness/study.hpp"

#if GPUBENCH_HAVE_CUDA
#include "core/gpu_runtime.hpp"
#include "core/pipeline.hpp"
#include "core/random.hpp"
#include "core/reference.hpp"
#include "core/system.hpp"
#include "core/verify.hpp"
#include "overlap_pipeline.hpp"
#endif

namespace gpubench {
namespace {

constexpr int kMaxStreams = 4;

// A row of the table: the schedule of the pipeline. Every schedule runs both workloads (the
// precision slot) from both host memory kinds (the mode slot).
struct Schedule : Implementation {
  int streams = 1;
  bool copies = true;
  bool compute = true;
  bool one_chunk = false;  // serial: the whole work as one chunk
};

enum class Workload { saxpy, matmul };
const std::vector<Workload> kWorkloads = {Workload::saxpy, Workload::matmul};
const std::vector<std::string> kHostMemories = {"pinned", "pageable"};

const char* workload_name(Workload w) { return w == Workload::saxpy ? "saxpy" : "matmul"; }

std::vector<std::string> workload_names() {
  std::vector<std::string> names;
  for (Workload w : kWorkloads) names.push_back(workload_name(w));
  return names;
}

std::vector<Schedule> schedules() {
  const std::vector<std::string> workloads = workload_names();
  const auto gpu = [&](const char* id) { return Implementation{id, Device::gpu, kHostMemories, workloads}; };
  return {
      {gpu("serial"), 1, true, true, true},
      {gpu("streams1"), 1, true, true, false},
      {gpu("streams2"), 2, true, true, false},
      {gpu("streams4"), 4, true, true, false},
      {gpu("copy_only"), kMaxStreams, true, false, false},
      {gpu("compute_only"), kMaxStreams, false, true, false},
  };
}

const std::vector<Schedule>& table() {
  static const std::vector<Schedule> all = schedules();
  return all;
}

// --- which entries, in which order ---------------------------------------------------
// The chunk counts a schedule runs at. A pipeline with fewer chunks than streams would
// repeat the entry with as many streams as chunks, and one chunk is the serial entry; the
// serial entry runs once per size, at one chunk whatever the batches, since every pipeline
// is compared with it.
bool runs_at_chunks(const Schedule& schedule, int chunks) {
  return schedule.one_chunk || !(schedule.copies && schedule.compute) || chunks >= std::max(2, schedule.streams);
}

template <typename T>
std::size_t position(const std::vector<T>& values, const T& value) {
  return static_cast<std::size_t>(std::find(values.begin(), values.end(), value) - values.begin());
}

// Per size: workload, host memory, schedule, then chunks, so that consecutive entries share
// one rig (device arrays, host buffers, streams) and one problem, which take seconds to make.
bool runs_before(const Entry& a, const Entry& b) {
  const auto key = [](const Entry& e) {
    const Schedule& schedule = row_of<Schedule>(e);
    return std::make_tuple(position(schedule.precisions, e.precision), position(schedule.modes, e.mode),
                           &schedule - table().data());
  };
  return key(a) < key(b);
}

bool same_serial_entry(const Entry& a, const Entry& b) {
  return row_of<Schedule>(a).one_chunk && a.impl == b.impl && a.n == b.n && a.mode == b.mode &&
         a.precision == b.precision;
}

// The skeleton's selection (sizes x chunks x schedules x workloads x host memories) as the
// study runs it.
std::vector<Entry> arrange(std::vector<Entry> selected) {
  std::vector<Entry> entries;
  for (Entry entry : selected) {
    const Schedule& schedule = row_of<Schedule>(entry);
    if (!runs_at_chunks(schedule, entry.batch)) continue;
    if (schedule.one_chunk) entry.batch = 1;
    entries.push_back(entry);
  }
  for (auto begin = entries.begin(); begin != entries.end();) {  // the skeleton's sizes are outermost
    const auto end = std::find_if(begin, entries.end(), [&](const Entry& e) { return e.n != begin->n; });
    std::stable_sort(begin, end, runs_before);
    begin = end;
  }
  entries.erase(std::unique(entries.begin(), entries.end(), same_serial_entry), entries.end());
  return entries;
}

#if GPUBENCH_HAVE_CUDA
double workload_flop(Workload w, int n) {
  const double elements = static_cast<double>(n) * n;
  return w == Workload::saxpy ? 2.0 * elements : 2.0 * elements * n;
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

OverlapProblem make_problem(Workload workload, int n) {
  OverlapProblem p;
  p.workload = workload;
  p.n = n;
  const std::uint64_t configuration = static_cast<std::uint64_t>(n) * 2 + (workload == Workload::matmul ? 1 : 0);
  for (int k = 0; k < 2; ++k) p.in[k] = random_uniform(p.elements(), configuration_seed(configuration, k));
  if (workload == Workload::matmul) {
    p.reference = reference_rows(p, checked_rows(n));
    return p;
  }
  // a in [1, 2): never so small that a*x vanishes against y, which would let a chunk whose
  // compute was skipped pass. The device rounds each element once (fmaf), as std::fma does.
  p.alpha = 1.5f + 0.5f * random_uniform(1, configuration_seed(configuration, 2))[0];
  p.expected.resize(p.elements());
  for (std::size_t i = 0; i < p.elements(); ++i) p.expected[i] = std::fma(p.alpha, p.in[0][i], p.in[1][i]);
  return p;
}

// Host bytes at peak: the two inputs, SAXPY's expected result or matmul's upcast B, pinned
// copies of both inputs and the output, and up to three arrays downloaded to verify.
double host_bytes_needed(int n) { return 40.0 * n * n; }

// Checked when the problem is made, once the previous problem and rig are freed.
const OverlapProblem& problem_for(Workload workload, int n) {
  static ProblemCache<std::pair<Workload, int>, OverlapProblem> cache;
  return cache.get({workload, n}, [workload, n] {
    require_host_memory(host_bytes_needed(n));
    return make_problem(workload, n);
  });
}

// --- verification ------------------------------------------------------------------
// Bit-for-bit (verify_exact): a copy, or SAXPY, whose every element is one fused multiply-add
// on either side.
Verification verify_result(const OverlapProblem& p, const float* out) {
  if (p.workload == Workload::saxpy) return verify_exact(out, p.expected.data(), p.elements());
  Verification v = verify_matmul(out, p.reference, accumulation_tolerance(kFp32UnitRoundoff, p.n));
  v.non_finite =
      static_cast<std::size_t>(std::count_if(out, out + p.elements(), [](float x) { return !std::isfinite(x); }));
  return v;
}

Verification first_failure(const Verification& a, const Verification& b) { return a.passed() ? b : a; }

std::unique_ptr<PinnedBuffer<float>> pinned_buffer(std::size_t count) {
  try {
    return std::make_unique<PinnedBuffer<float>>(count);
  } catch (const GpuError& e) {
    throw GpuEntrySkipped("pinned host allocation of " + format_bytes(count * sizeof(float)) + " failed: " + e.what());
  }
}

// --- the rig: what the entries of one (workload, n, host memory) share ------------------
// Device arrays, host buffers, streams and the operation.
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

// Kept while consecutive entries share it; a new one is made after the previous one (which
// refers to the previous problem) is freed. Held as make_rig builds it, by pointer.
Rig& rig_for(Workload workload, int n, bool pinned) {
  static ProblemCache<std::tuple<Workload, int, bool>, std::unique_ptr<Rig>> cache;
  return *cache.get({workload, n, pinned}, [workload, n, pinned] { return make_rig(problem_for(workload, n), pinned); });
}

// --- one entry's first, checked run ---------------------------------------------------
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

// --- the entry -----------------------------------------------------------------------
// Link: both workloads copy two arrays in (x and y; A and B) and one out (y; C).
// Device memory, where the schedule computes: SAXPY reads x and y and writes y; the matmul's
// chunks are one SGEMM each, which reads its rows of A and all of B and writes its rows of C,
// so B is read once per chunk.
void report_traffic(PreparedEntry& entry, const Schedule& schedule, Workload workload, int n, int chunks) {
  const double array_bytes = 4.0 * n * n;
  if (schedule.copies) entry.add_link_traffic(2 * array_bytes, array_bytes);
  if (schedule.compute) {
    const double read = workload == Workload::matmul ? array_bytes * (1 + chunks) : 2 * array_bytes;
    entry.add_memory_traffic(read, array_bytes);
  } else {
    entry.add_memory_traffic(0, 0);
  }
}

class OverlapEntry : public PreparedEntry {
 public:
  OverlapEntry(const Schedule& schedule, Workload workload, Rig& rig, int chunks)
      : rig_(rig), spec_{chunks, schedule.streams, schedule.copies, schedule.compute} {
    set_verdict(warm_up_and_verify(rig_, spec_));
    const int n = rig.problem.n;
    counters["flop"] = schedule.compute ? workload_flop(workload, n) : 0.0;
    counters["streams"] = std::min(schedule.streams, chunks);
    counters["chunk_bytes"] = static_cast<double>(chunk_range(n, chunks, 0).count) * n * sizeof(float);
    counters["copy_engines"] = device_attribute(cudaDevAttrAsyncEngineCount);
    report_traffic(*this, schedule, workload, n, chunks);
  }

  // compute_only SAXPY goes on updating y in place from one run to the next: its time
  // does not depend on the values, and every other schedule copies y in afresh.
  void run_once() override { rig_.streams.run(rig_.operation, spec_); }
  // The pipeline's own events, from before its first operation is issued to after its last
  // (PipelineStreams::run).
  double timed_call(Clock) override { return rig_.streams.run(rig_.operation, spec_); }
  // The first, checked run is the entry's only warm-up, as it was: a run of the pipeline at n = 8192
  // takes up to a tenth of a second, and Google Benchmark calls the entry many times.
  std::string warm_up() override { return ""; }

 private:
  Rig& rig_;  // the rig cache keeps it while this entry is the skeleton's current one
  PipelineSpec spec_;
};

Workload workload_named(const std::string& name) {
  return name == workload_name(Workload::matmul) ? Workload::matmul : Workload::saxpy;
}

std::unique_ptr<PreparedEntry> prepare(const Entry& entry) {
  const int chunks = entry.batch;
  if (chunks > entry.n)
    throw EntrySkipped(std::to_string(chunks) + " chunks of an array of " + std::to_string(entry.n) +
                       " rows would leave some empty");
  const Workload workload = workload_named(entry.precision);
  Rig& rig = rig_for(workload, entry.n, entry.mode == "pinned");
  return std::make_unique<OverlapEntry>(row_of<Schedule>(entry), workload, rig, chunks);
}
#endif  // GPUBENCH_HAVE_CUDA

// --- description ------------------------------------------------------------------------
Json describe_schedule(const Implementation& impl) {
  const auto& s = static_cast<const Schedule&>(impl);
  return {{"streams", s.streams}, {"copies", s.copies}, {"compute", s.compute}, {"one_chunk", s.one_chunk}};
}

Json describe_workload(Workload w) {
  const bool saxpy = w == Workload::saxpy;
  return {{"id", workload_name(w)},
          {"operation",
           saxpy ? "y = a*x + y over n*n FP32 elements, x and y copied in by chunks, y copied out"
                 : "C = A*B, n x n FP32 (cuBLAS SGEMM); A and C by chunks of rows, B copied in once first"},
          {"flop", saxpy ? "2 n^2" : "2 n^3"},
          {"bytes_transferred", "12 n^2"}};
}

Json describe_study() {
  return {{"workloads", array_of(kWorkloads, describe_workload)},
          {"ideal", "max(copy_only time, compute_only time) of the same n, workload, memory and batch"}};
}

// Every entry is on the GPU: without one (or with --cpu-only, or built without CUDA) the
// study has none.
StudyDefinition definition() {
  StudyDefinition study;
  study.name = "overlap";
  study.implementations = rows(table());
  study.modes = kHostMemories;
  study.default_sizes = {8192};
  study.default_batches = {1, 4, 16, 64};
  study.axes = {"schedule", "host_memory", "workload", "n", "chunks"};
  study.axes.batch_unit = "chunks";
  // The driver's default suite: n = 4096 (64 MiB an FP32 array) in 8 chunks, every schedule, and the serial
  // baseline (whole, which `arrange` runs at one chunk whatever the batches); the copy-only and compute-only
  // runs whole are left to --full: the ideal a pipeline is held to is theirs at its own chunk count.
  // --quick: whole and in 4. --full: 8192 in 1 to 64 chunks.
  study.quick.sizes = {4096};
  study.quick.batches = {1, 4};
  study.suite.sizes = {4096};
  study.suite.batches = {8};
  study.counters = {
      {"flop", "FLOP", "the workload's where the schedule computes (saxpy 2 n^2, matmul 2 n^3), else 0"},
      {"memory_read_bytes", "bytes", "where the schedule computes: saxpy x and y (2 x 4 n^2); matmul A once and B once "
                                     "a chunk (4 n^2 x (1 + chunks)); else 0"},
      {"memory_written_bytes", "bytes", "where the schedule computes: y or C once (4 n^2); else 0"},
      kRelFroErrorCounter,
      kMaxRelErrorCounter,
      {"streams", "count", "the streams the pipeline ran on: the schedule's, at most one a chunk"},
      {"chunk_bytes", "bytes", "the first chunk's share of one array: rows x n x 4"},
      {"copy_engines", "count", "the GPU's copy engines (cudaDevAttrAsyncEngineCount)"}};
  study.arrange = arrange;
#if GPUBENCH_HAVE_CUDA
  study.prepare = prepare;
#endif
  study.describe = describe_study;
  study.describe_implementation = describe_schedule;
  return study;
}

}  // namespace
}  // namespace gpubench

int main(int argc, char** argv) { return gpubench::run_study(argc, argv, gpubench::definition()); }
