// The skeleton every study is built on, after nvbench's "declare a benchmark once with its axes"
// and nccl-tests' one harness per collective. A study supplies
//   - its implementations, one `Implementation` row each (the same row type in every study),
//   - its axes by name and their defaults,
//   - `prepare`: for one entry, its inputs on the right side, its first (checked) call, and
//     what it reports, as a `PreparedEntry` whose `run_once` is the timed work;
//   - the points its quick run and default suite take, the counters its entries report and the
//     rules they are counted by, and its own --describe fields.
// The skeleton owns everything else: registration over sizes x batches x implementations x
// precisions x modes, entry names, --impls/--modes/--caps/--cpu-only, the per-entry cache,
// the skip/error guard, the warm-up, the timed loop with its clock and telemetry window,
// the counters, --describe and main(). docs/design.md walks through adding a study.
#pragma once

#include <benchmark/benchmark.h>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "core/json.hpp"
#include "core/verify.hpp"
#include "harness/study_options.hpp"

namespace gpubench {

enum class Device { cpu, gpu };
const char* device_name(Device device);

// Where a GEMM-like entry's operands live and which copies its timed region holds. Studies whose
// mode slot holds something else (the transfer and overlap studies' host memory kinds) name their
// own values; `mode_name` gives the names every other study uses.
enum class Mode { host, resident, transfer_pinned, transfer_pageable };
const char* mode_name(Mode mode);
std::vector<std::string> mode_names(const std::vector<Mode>& modes);
// The modes whose timed region copies operands in and results out, and from which host memory.
bool copies_timed(const std::string& mode);
bool copies_from_pinned(const std::string& mode);

// One row of a study's implementation table.
struct Implementation {
  std::string id;
  Device device = Device::cpu;
  std::vector<std::string> modes;       // values of the mode slot it runs in
  std::vector<std::string> precisions;  // values of the precision slot
  int max_size = 0;                     // largest n it runs at; 0: no cap
  std::string cap_reason;               // why the cap is where it is
  int (*threads)() = nullptr;           // CPU threads it uses (the "threads" counter); GPU rows: none
  // (mode, precision) pairs it runs in, when not every mode with every precision.
  std::vector<std::pair<std::string, std::string>> combinations;
  // Whether it has an entry at size n (a kernel that needs a multiple of its word size), besides
  // the cap; nullptr: every size.
  bool (*runs_at)(int n) = nullptr;

  bool on_gpu() const { return device == Device::gpu; }
};

// A study's table is a vector of its own row type, derived from Implementation with its run
// function; `rows` lists it for the skeleton and `row_of` gives an entry's row back.
template <typename Row>
std::vector<const Implementation*> rows(const std::vector<Row>& table) {
  std::vector<const Implementation*> all;
  for (const Row& row : table) all.push_back(&row);
  return all;
}

// first, first * factor, ... up to last: the doublings of a batch sweep, the steps of a size sweep.
std::vector<int> geometric(long first, long last, long factor);

// Helpers for a row's `threads`.
int one_thread();
int openmp_threads();
int openblas_threads();

// One point of a study: the values of its axes and its name,
// <study>/<impl>/<device>/<mode>/<precision>/n:<n>[/batch:<batch>].
struct Entry {
  const Implementation* impl = nullptr;
  std::string mode;
  std::string precision;
  int n = 0;
  int batch = 0;  // 0: the study has no batch axis
  std::string name;
};

template <typename Row>
const Row& row_of(const Entry& entry) {
  return static_cast<const Row&>(*entry.impl);
}

// How a study's entries are timed (the protocols in harness/timed_loop.hpp).
enum class Clock {
  wall,               // the host clock around batches of calls (CPU work on many threads)
  host,               // the host clock around each call (CPU work with untimed steps between calls)
  device_events,      // CUDA events on the default stream: device time, launch latency held out
                      // (entries whose timed region holds copies are timed as host_to_completion)
  host_to_completion  // the host clock around each call, until its work has completed
};

// An entry set up to run: `run_once` is one call of the measured work (a GPU call enqueued on
// the default stream); the verdict of its first call, made by `prepare`, decides whether it is
// timed; `counters` are reported after the loop.
class PreparedEntry {
 public:
  PreparedEntry() { add_link_traffic(0, 0); }  // nothing crosses the link unless the entry says so
  virtual ~PreparedEntry() = default;
  virtual void run_once() = 0;
  // The call before each timed loop; returns why its answer is wrong, or "" (by default it runs
  // run_once and waits for it).
  virtual std::string warm_up();
  // Seconds of one call on the host clock (Clock::host or host_to_completion, which waits for the
  // device). Entries with untimed work around each call (a fresh mapping, an unregistration) or
  // that time themselves override it.
  virtual double timed_call(Clock clock);

  std::string wrong_result;  // non-empty: the first call's answer was wrong, and why
  // The entry's own clock where it differs from its study's (a device-to-device copy in a study
  // of host-observed copies is timed on the device).
  std::optional<Clock> own_clock;
  std::map<std::string, double> counters;
  std::string label;  // optional: Google Benchmark's label, for what counters cannot say in numbers

  // Compulsory traffic of one call, as nvbench's add_global_memory_reads/writes: the counters
  // memory_read_bytes and memory_written_bytes (in the memory the implementation computes in:
  // device memory on the GPU, host memory on the CPU), and h2d_bytes, d2h_bytes and their sum
  // bytes_transferred (across the host<->device link).
  void add_memory_traffic(double bytes_read, double bytes_written);
  void add_link_traffic(double host_to_device, double device_to_host);
  // The verdict's errors (rel_fro_error, max_rel_error); `wrong_result` when it failed.
  void set_verdict(const Verification& verdict);
};

// A slot of the entry name and what it holds in this study (--describe's axis_names and axes):
// its name, and for the numeric slots what their values count ("" where they are plain numbers,
// a matrix's order). The device slot is always the device.
struct AxisNames {
  std::string impl = "impl";
  std::string mode = "mode";
  std::string precision = "precision";
  std::string n = "n";
  std::string batch = "batch";
  std::string n_unit;
  std::string batch_unit;
  // What a slot holds, in words, where its name does not say it all: {slot: text}.
  std::map<std::string, std::string> about;
};

// The points one kind of run takes (--describe's points.quick and points.suite, which the driver
// runs for --quick and by default): sizes, batches (studies with a batch axis), and where not every
// one of them, the implementations and modes. The driver's --impls/--modes, --sizes/--batches and
// --full (the study's default_sizes and default_batches, every implementation and mode) override them.
struct RunPoints {
  std::vector<int> sizes;
  std::vector<int> batches;
  std::vector<std::string> impls;  // empty: every implementation
  std::vector<std::string> modes;  // empty: every mode
};

// One counter the study's entries report (--describe's rules.counters): its unit ("bytes", "FLOP",
// "s", "count", "ratio", ...) and, where it is not plain, how it is counted ("2 n^3 a call").
struct CounterRule {
  std::string name;
  std::string unit;
  std::string rule;
};
// The counters set_verdict writes.
extern const CounterRule kRelFroErrorCounter;
extern const CounterRule kMaxRelErrorCounter;

struct StudyDefinition {
  std::string name;  // the study; its binary is gpubench_<name>
  std::vector<const Implementation*> implementations;  // rows of the study's own table (see `rows`)
  std::vector<std::string> modes;  // every value of the mode slot, for --modes
  std::vector<int> default_sizes;
  std::vector<int> default_batches;  // empty: no batch axis
  // The largest n and batch it takes (larger ones are usage errors; --describe's size_range and
  // batch_range): what the option parser reads, unless the study's own work cannot hold that much.
  int largest_size = kLargestSize;
  int largest_batch = kLargestSize;
  // The driver's --quick run and its default suite (the reasons for each study's points are beside
  // them in its definition).
  RunPoints quick;
  RunPoints suite;
  AxisNames axes;
  // The counters its entries report besides the skeleton's own (n, batch, threads, the link traffic
  // and the GPU telemetry), with their units and rules: every counter any entry of it may report.
  std::vector<CounterRule> counters;
  // What else it knows of its figures, for --describe's rules ({"peak_rule": "..."}); the counters go
  // in rules.counters.
  Json rules = Json::object();
  Clock cpu_clock = Clock::wall;
  Clock gpu_clock = Clock::device_events;
  // Sets up one entry (inputs, buffers, its first call, checked). Throws EntrySkipped for what
  // the machine cannot do; GPU failures follow the guard's rules (study.cpp).
  std::function<std::unique_ptr<PreparedEntry>(const Entry& entry)> prepare;
  // The study's own --describe fields (an object whose keys are merged into it), besides those the
  // skeleton writes.
  std::function<Json()> describe;
  // Optional: the study's own checks of the options (e.g. sizes it has no entries for).
  std::function<void(const StudyOptions& options)> check_options;
  // Optional: the selected entries (sizes x batches x implementations x combinations, in that
  // order) as the study runs them, when its axes are not a cross product: entries dropped,
  // their batch changed, reordered. The skeleton names them afterwards.
  std::function<std::vector<Entry>(std::vector<Entry> selected)> arrange;
  // Whether its entries are collective calls of several processes, one per GPU: started as several
  // ranks (mpirun, srun, torchrun), rank 0 measures and the others make the same calls
  // (harness/ranks.hpp); --describe says it, for the driver's --launcher.
  bool ranks_together = false;
  // Optional: per --describe implementation object, the study's own fields.
  std::function<Json(const Implementation& impl)> describe_implementation;
};

// Thrown by `prepare` (or a kernel) for a configuration that cannot run here: reported as
// "skipped: <why>".
struct EntrySkipped : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Throws EntrySkipped naming both figures when the host has less memory available than
// `bytes_needed` (when it cannot be read, nothing).
void require_host_memory(double bytes_needed);

// The inputs (and reference) of one configuration, shared by the entries at that configuration
// and rebuilt when the configuration changes; the previous one is freed first.
template <typename Key, typename Value>
class ProblemCache {
 public:
  template <typename Make>
  const Value& get(const Key& key, Make&& make) {
    if (!value_ || key_ != key) {
      value_.reset();
      value_ = std::make_unique<Value>(make());
      key_ = key;
    }
    return *value_;
  }

 private:
  Key key_{};
  std::unique_ptr<Value> value_;
};

// Where the study writes a file of its own named `file_name` (--artifacts-dir, which the driver
// sets to the run's folder), or "" when the run keeps none.
std::string artifact_path(const std::string& file_name);

// The --describe fields every implementation has, as a JSON object.
Json implementation_fields(const Implementation& impl);
// The "utilization" field of a batch study's --describe: whether NVML can sample the GPU, and why not.
Json utilization_description();
// Throws UsageError when the options name an implementation or mode the study lacks.
void check_study_options(const StudyOptions& options, const StudyDefinition& study);
// The entries the options select, in registration order (what --describe and the run share).
std::vector<Entry> selected_entries(const StudyOptions& options, const StudyDefinition& study, bool gpu_usable);

// What --describe prints: the study, its axes and points, the rules of its figures, its implementations
// and the entries the options select (`gpu_reason` empty where the GPU is usable), each with its axes
// by name; docs/interface.md lists the fields.
Json describe(const StudyDefinition& study, const StudyOptions& options, const std::string& gpu_reason,
              const std::string& telemetry_reason);

// main() of a study binary: flags, --describe, the GPU check, telemetry, registration, Google Benchmark.
int run_study(int argc, char** argv, const StudyDefinition& study);

}  // namespace gpubench
