#include "harness/study.hpp"

#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <iostream>
#include <new>
#include <set>

#include "core/json.hpp"
#include "core/system.hpp"
#include "harness/gpu_telemetry.hpp"
#include "harness/gpu_utilization.hpp"
#include "harness/held_choices.hpp"
#include "harness/ranks.hpp"
#include "harness/timed_loop.hpp"

#if GPUBENCH_HAVE_CUDA
#include <cuda_runtime.h>

#include "core/cuda_check.hpp"
#include "core/gpu_runtime.hpp"
#endif

namespace gpubench {

const char* device_name(Device device) { return device == Device::gpu ? "gpu" : "cpu"; }

const char* mode_name(Mode mode) {
  switch (mode) {
    case Mode::host: return "host";
    case Mode::resident: return "resident";
    case Mode::transfer_pinned: return "transfer_pinned";
    case Mode::transfer_pageable: return "transfer_pageable";
  }
  return "?";
}

std::vector<std::string> mode_names(const std::vector<Mode>& modes) {
  std::vector<std::string> names;
  for (Mode mode : modes) names.push_back(mode_name(mode));
  return names;
}

bool copies_timed(const std::string& mode) {
  return mode == mode_name(Mode::transfer_pinned) || mode == mode_name(Mode::transfer_pageable);
}
bool copies_from_pinned(const std::string& mode) { return mode == mode_name(Mode::transfer_pinned); }

std::vector<int> geometric(long first, long last, long factor) {
  std::vector<int> values;
  for (long value = first; value <= last; value *= factor) values.push_back(static_cast<int>(value));
  return values;
}

int one_thread() { return 1; }
int openmp_threads() { return omp_get_max_threads(); }
int openblas_threads() { return openblas_get_num_threads(); }

// --- a prepared entry ---------------------------------------------------------------------
namespace {

using HostClock = std::chrono::steady_clock;

void wait_for_device() {
#if GPUBENCH_HAVE_CUDA
  CUDA_CHECK(cudaDeviceSynchronize());
#endif
}

}  // namespace

std::string PreparedEntry::warm_up() {
  run_once();
  wait_for_device();
  return "";
}

double PreparedEntry::timed_call(Clock clock) {
  const auto start = HostClock::now();
  run_once();
  benchmark::ClobberMemory();
  if (clock == Clock::host_to_completion) wait_for_device();
  return std::chrono::duration<double>(HostClock::now() - start).count();
}

void PreparedEntry::add_memory_traffic(double bytes_read, double bytes_written) {
  counters["memory_read_bytes"] = bytes_read;
  counters["memory_written_bytes"] = bytes_written;
}

void PreparedEntry::add_link_traffic(double host_to_device, double device_to_host) {
  counters["h2d_bytes"] = host_to_device;
  counters["d2h_bytes"] = device_to_host;
  counters["bytes_transferred"] = host_to_device + device_to_host;
}

const CounterRule kRelFroErrorCounter{"rel_fro_error", "ratio",
                                      "||result - reference||_F / ||reference||_F of the first call, against the "
                                      "FP64 reference"};
const CounterRule kMaxRelErrorCounter{"max_rel_error", "ratio", "max |result - reference| / max |reference|"};

void PreparedEntry::set_verdict(const Verification& verdict) {
  counters["rel_fro_error"] = verdict.rel_fro_error;
  counters["max_rel_error"] = verdict.max_rel_error;
  if (!verdict.passed()) wrong_result = verdict.describe();
}

void require_host_memory(double bytes_needed) {
  const double available = static_cast<double>(host_memory_available_bytes());
  if (available <= 0 || bytes_needed <= available) return;
  throw EntrySkipped("needs about " + format_bytes(bytes_needed) + " of host memory, " + format_bytes(available) +
                     " available");
}

// --- selection and registration -------------------------------------------------------------
namespace {

bool contains(const std::vector<std::string>& values, const std::string& value) {
  return std::find(values.begin(), values.end(), value) != values.end();
}

std::string joined(const std::vector<std::string>& values) {
  std::string out;
  for (const std::string& v : values) out += (out.empty() ? "" : ", ") + v;
  return out;
}

std::vector<std::pair<std::string, std::string>> combinations_of(const Implementation& impl) {
  if (!impl.combinations.empty()) return impl.combinations;
  std::vector<std::pair<std::string, std::string>> all;
  for (const std::string& precision : impl.precisions)
    for (const std::string& mode : impl.modes) all.emplace_back(mode, precision);  // modes innermost
  return all;
}

std::string entry_name(const StudyDefinition& study, const Entry& e) {
  return study.name + "/" + e.impl->id + "/" + device_name(e.impl->device) + "/" + e.mode + "/" + e.precision +
         "/n:" + std::to_string(e.n) + (e.batch > 0 ? "/batch:" + std::to_string(e.batch) : "");
}

}  // namespace

std::vector<Entry> selected_entries(const StudyOptions& options, const StudyDefinition& study, bool gpu_usable) {
  const bool batch_axis = !study.default_batches.empty();
  const std::vector<int>& sizes = options.sizes.empty() ? study.default_sizes : options.sizes;
  const std::vector<int> batches =
      !batch_axis ? std::vector<int>{0} : options.batches.empty() ? study.default_batches : options.batches;
  std::vector<Entry> entries;
  for (int n : sizes)
    for (int batch : batches)
      for (const Implementation* row : study.implementations) {
        const Implementation& impl = *row;
        const int cap = size_cap(options, impl.id, impl.max_size);
        if (!is_selected(options.impls, impl.id) || (cap > 0 && n > cap)) continue;
        if (impl.runs_at && !impl.runs_at(n)) continue;
        if (impl.on_gpu() && (!gpu_usable || options.cpu_only)) continue;
        for (const auto& [mode, precision] : combinations_of(impl)) {
          if (!is_selected(options.modes, mode)) continue;
          entries.push_back(Entry{&impl, mode, precision, n, batch, ""});
        }
      }
  if (study.arrange) entries = study.arrange(std::move(entries));
  for (Entry& entry : entries) entry.name = entry_name(study, entry);
  return entries;
}

void check_study_options(const StudyOptions& options, const StudyDefinition& study) {
  if (study.default_batches.empty() && !options.batches.empty())
    throw UsageError("--batches: this study has no batch axis");
  for (int n : options.sizes)
    if (n > study.largest_size)
      throw UsageError("--sizes: " + std::to_string(n) + " is larger than this study takes (at most " +
                       std::to_string(study.largest_size) + ")");
  for (int batch : options.batches)
    if (batch > study.largest_batch)
      throw UsageError("--batches: " + std::to_string(batch) + " is larger than this study takes (at most " +
                       std::to_string(study.largest_batch) + ")");
  std::vector<std::string> ids;
  for (const Implementation* impl : study.implementations) ids.push_back(impl->id);
  for (const std::string& id : options.impls)
    if (!contains(ids, id)) throw UsageError("--impls: no implementation '" + id + "' in this build (see --describe)");
  for (const auto& [id, cap] : options.caps)
    if (!contains(ids, id)) throw UsageError("--caps: no implementation '" + id + "' in this build (see --describe)");
  for (const std::string& mode : options.modes)
    if (!contains(study.modes, mode))
      throw UsageError("--modes: this study has modes " + joined(study.modes) + ", not '" + mode + "'");
  if (study.check_options) study.check_options(options);
}

// --- running one entry ---------------------------------------------------------------------
EntryFailure entry_failure(const std::exception_ptr& failure) {
  try {
    std::rethrow_exception(failure);
#if GPUBENCH_HAVE_CUDA
  } catch (const GpuOutOfMemory& e) {
    return {true, true, std::string("does not fit: ") + e.what()};
  } catch (const GpuEntrySkipped& e) {
    return {true, false, e.what()};
#endif
  } catch (const std::bad_alloc&) {
    return {true, false, "does not fit: host memory could not be allocated"};
  } catch (const EntrySkipped& e) {
    return {true, false, e.what()};
  } catch (const std::exception& e) {
    return {false, false, e.what()};
  }
}

namespace {

// The entry set up last, kept across Google Benchmark's repeated calls of it (repetitions and
// the rounds that size the iteration count): large entries move gigabytes to set up.
struct EntryCache {
  std::string name;
  std::unique_ptr<PreparedEntry> prepared;
};

EntryCache& entry_cache() {
  static EntryCache cache;
  return cache;
}

void forget_entry() {
  entry_cache().prepared.reset();
  entry_cache().name.clear();
}

// Runs `body`. What the machine cannot do is a skip ("skipped: ..."; out of device or host
// memory: "skipped: does not fit: ..."), anything else an error with its message (entry_failure);
// the kept entry is dropped first, and the CUDA error a failed allocation leaves as the thread's
// last error is cleared, so the next entry's launch checks do not report it again.
template <typename Body>
void guard_entry(benchmark::State& state, Body&& body) {
  try {
    body();
  } catch (const std::exception&) {
    forget_entry();
    const EntryFailure failure = entry_failure(std::current_exception());
#if GPUBENCH_HAVE_CUDA
    if (failure.out_of_device_memory) static_cast<void>(cudaGetLastError());
#endif
    state.SkipWithError(((failure.skipped ? "skipped: " : "") + failure.reason).c_str());
  }
}

// One line of the measurements file per measured entry, written as it finishes so a crash
// keeps what was measured before it.
void write_measurement(const std::string& path, const std::string& name, const EntryMeasurement& measurement) {
  if (path.empty()) return;
  std::ofstream out(path, std::ios::app);
  out << dump_json({{"name", name}, {"measurement", measurement.json()}}) << "\n";
  if (!out) std::cerr << "cannot append to the measurements file " << path << "\n";
}

// Every counter the study's entries may report: the skeleton's (the axes, the CPU threads, the link
// traffic, the GPU telemetry of GPU entries) and the study's own, which say how they are counted
// where a study counts one of the skeleton's itself (transfer's bytes_transferred).
std::vector<CounterRule> counter_rules(const StudyDefinition& study) {
  const auto any_row = [&study](auto has) {
    return std::any_of(study.implementations.begin(), study.implementations.end(), has);
  };
  std::vector<CounterRule> rules = {{"n", study.axes.n_unit, "the entry's " + study.axes.n}};
  if (!study.default_batches.empty())
    rules.push_back({"batch", study.axes.batch_unit, "the entry's " + study.axes.batch});
  if (any_row([](const Implementation* impl) { return impl->threads != nullptr; }))
    rules.push_back({"threads", "count", "CPU threads the implementation uses (CPU entries)"});
  rules.insert(rules.end(), study.counters.begin(), study.counters.end());
  std::vector<CounterRule> skeleton = {
      {"h2d_bytes", "bytes", "copied from the host to the device by one call (0 where the timed call copies nothing)"},
      {"d2h_bytes", "bytes", "copied from the device to the host by one call"},
      {"bytes_transferred", "bytes", "h2d_bytes + d2h_bytes"}};
  if (any_row([](const Implementation* impl) { return impl->on_gpu(); })) {
    const std::vector<CounterRule> telemetry = {
        {"telemetry_samples", "count", "NVML samples over the timed loops (every 0.1 s)"},
        {"telemetry_window_s", "s", "the span of the timed loops the samples cover"},
        {"sm_clock_mhz", "MHz", "median SM clock of the samples"},
        {"mem_clock_mhz", "MHz", "median memory clock of the samples"},
        {"power_w", "W", "mean power of the samples"},
        {"temperature_c_max", "degC", "the hottest sample"},
        {"power_limited_fraction", "fraction", "of the samples with a power limit holding the clocks down"},
        {"thermal_limited_fraction", "fraction", "of the samples with a thermal limit holding the clocks down"},
        {"gpu_util_samples", "count", "NVML utilization samples over the timed loops"},
        {"gpu_util_mean", "percent", "mean GPU utilization (time a kernel ran)"},
        {"gpu_util_max", "percent", "largest GPU utilization"},
        {"mem_util_mean", "percent", "mean memory utilization (time memory was read or written)"}};
    skeleton.insert(skeleton.end(), telemetry.begin(), telemetry.end());
  }
  for (const CounterRule& rule : skeleton) {
    const bool own = std::any_of(rules.begin(), rules.end(), [&](const CounterRule& r) { return r.name == rule.name; });
    if (!own) rules.push_back(rule);
  }
  return rules;
}

// Every counter an entry reports is declared in --describe's rules with its unit, so that the driver
// can read each by name; one that is not is a mistake of the study, said once on stderr.
void warn_if_undeclared(const StudyDefinition& study, const std::string& counter) {
  static const std::set<std::string> declared = [&study] {  // one study a process
    std::set<std::string> names;
    for (const CounterRule& rule : counter_rules(study)) names.insert(rule.name);
    return names;
  }();
  static std::set<std::string> warned;
  if (declared.count(counter) || !warned.insert(counter).second) return;
  std::cerr << "gpubench_" << study.name << ": counter '" << counter
            << "' is not among the counters --describe declares (StudyDefinition::counters)\n";
}

void run_entry(benchmark::State& state, const StudyDefinition& study, const Entry& entry,
               const std::string& measurements_out) {
  guard_entry(state, [&] {
    EntryCache& cache = entry_cache();
    const auto setup_start = HostClock::now();
    if (!cache.prepared || cache.name != entry.name) {
      forget_entry();  // the previous entry's memory goes first
      order_prepare(entry.name);
      cache.prepared = study.prepare(entry);
      cache.name = entry.name;
    }
    PreparedEntry& prepared = *cache.prepared;
    std::string wrong = prepared.wrong_result;
    if (wrong.empty() && entry.impl->on_gpu()) {
      order_calls(1);
      wrong = prepared.warm_up();
    }
    const double setup_s = std::chrono::duration<double>(HostClock::now() - setup_start).count();
    if (!wrong.empty()) {
      state.SkipWithError(("wrong result: " + wrong).c_str());
      return;
    }
    TelemetryWindow telemetry;  // clocks, power and utilization over the sustained part
    EntryMeasurement measurement =
        measure_entry(prepared, entry,
                      prepared.own_clock.value_or(entry.impl->on_gpu() ? study.gpu_clock : study.cpu_clock), telemetry);
    measurement.setup_s = setup_s;
    for (auto _ : state) state.SetIterationTime(measurement.headline_s());
    telemetry.report(state);
    write_measurement(measurements_out, entry.name, measurement);
    for (const auto& [counter, value] : prepared.counters) {
      state.counters[counter] = value;
      warn_if_undeclared(study, counter);
    }
    if (!prepared.label.empty()) state.SetLabel(prepared.label);
    state.counters["n"] = entry.n;
    if (entry.batch > 0) state.counters["batch"] = entry.batch;
    if (entry.impl->threads) state.counters["threads"] = entry.impl->threads();
  });
}

// Each entry is one Google Benchmark run of one iteration whose time is the headline of the
// measurement (timed_loop.hpp); the loop, not Google Benchmark's repetitions, decides how much to sample.
void register_entries(const StudyDefinition& study, const std::vector<Entry>& entries,
                      const std::string& measurements_out) {
  for (const Entry& entry : entries) {
    benchmark::RegisterBenchmark(entry.name.c_str(),
                                 [&study, entry, measurements_out](benchmark::State& state) {
                                   run_entry(state, study, entry, measurements_out);
                                 })
        ->Iterations(1)
        ->Repetitions(1)
        ->UseManualTime()
        ->Unit(benchmark::kMicrosecond);
  }
}

// --- --describe ------------------------------------------------------------------------------
Json axis_names_json(const AxisNames& axes, bool batch_axis) {
  return {{"impl", axes.impl},
          {"mode", axes.mode},
          {"precision", axes.precision},
          {"n", axes.n},
          {"batch", batch_axis ? Json(axes.batch) : Json(nullptr)}};
}

// {"min": least, "max": largest}: the values of --sizes or --batches that check_study_options lets through.
Json range_json(int largest) { return {{"min", kSmallestSize}, {"max", largest}}; }

// Each value once, in the order first met.
void add_once(std::vector<std::string>& values, const std::string& value) {
  if (!contains(values, value)) values.push_back(value);
}

// One axis of --describe's axes: its name, the slot of the entry name it fills, the unit of its values
// (null where they are names or plain numbers), where the binary knows the set its values (else
// null), and where the study says it, what it holds.
Json axis_json(const AxisNames& names, const std::string& name, const std::string& slot, const std::string& unit,
               const Json& values) {
  Json axis = {{"name", name}, {"slot", slot}, {"unit", text_or_null(unit)}, {"values", values}};
  const auto about = names.about.find(slot);
  if (about != names.about.end()) axis["description"] = about->second;
  return axis;
}

// The axes in the order they appear in an entry's name.
Json axes_json(const StudyDefinition& study) {
  std::vector<std::string> ids, devices, precisions;
  for (const Implementation* impl : study.implementations) {
    ids.push_back(impl->id);
    add_once(devices, device_name(impl->device));
    for (const auto& combination : combinations_of(*impl)) add_once(precisions, combination.second);
  }
  const AxisNames& names = study.axes;
  Json axes = {axis_json(names, names.impl, "impl", "", ids), axis_json(names, "device", "device", "", devices),
               axis_json(names, names.mode, "mode", "", study.modes),
               axis_json(names, names.precision, "precision", "", precisions),
               axis_json(names, names.n, "n", names.n_unit, nullptr)};
  if (!study.default_batches.empty())
    axes.push_back(axis_json(names, names.batch, "batch", names.batch_unit, nullptr));
  return axes;
}

// An entry's axes by name: its values in the slots of its name.
Json entry_axes(const StudyDefinition& study, const Entry& entry) {
  Json axes = {{study.axes.impl, entry.impl->id},
               {"device", device_name(entry.impl->device)},
               {study.axes.mode, entry.mode},
               {study.axes.precision, entry.precision},
               {study.axes.n, entry.n}};
  if (!study.default_batches.empty()) axes[study.axes.batch] = entry.batch;
  return axes;
}

Json points_json(const RunPoints& points, bool batch_axis) {
  Json out = {{"sizes", points.sizes}};
  if (batch_axis) out["batches"] = points.batches;
  if (!points.impls.empty()) out["impls"] = points.impls;
  if (!points.modes.empty()) out["modes"] = points.modes;
  return out;
}

Json describe_points(const StudyDefinition& study) {
  const bool batch_axis = !study.default_batches.empty();
  return {{"quick", points_json(study.quick, batch_axis)},
          {"suite", points_json(study.suite, batch_axis)},
          {"full", points_json(RunPoints{study.default_sizes, study.default_batches, {}, {}}, batch_axis)}};
}

Json describe_rules(const StudyDefinition& study) {
  Json counters = Json::object();
  for (const CounterRule& counter : counter_rules(study))
    counters[counter.name] = {{"unit", text_or_null(counter.unit)}, {"rule", text_or_null(counter.rule)}};
  Json rules = {{"counters", counters}};
  rules.update(study.rules);
  return rules;
}

// Why no telemetry is sampled in this run, or "" when it is.
std::string telemetry_unavailable_reason(const StudyOptions& options, const std::string& gpu_reason) {
  if (!options.telemetry) return "turned off (--no-telemetry)";
  if (!gpu_reason.empty()) return "no GPU: " + gpu_reason;
  return TelemetryRecorder::instance().unavailable_reason();
}

// The series for the driver; a file that cannot be written is said, the measurements stand.
void write_telemetry_series(const std::string& path, const std::string& unavailable_reason,
                            const std::string& binary) {
  std::ofstream out(path);
  out << dump_json(telemetry_series_json(TelemetryRecorder::instance().samples(), unavailable_reason)) << "\n";
  if (!out) std::cerr << binary << ": cannot write the telemetry series to " << path << "\n";
}

}  // namespace

Json implementation_fields(const Implementation& impl) {
  return {{"id", impl.id},
          {"device", device_name(impl.device)},
          {"modes", impl.modes},
          {"precisions", impl.precisions},
          {"max_size", impl.max_size > 0 ? Json(impl.max_size) : Json(nullptr)},
          {"cap_reason", text_or_null(impl.cap_reason)}};
}

Json describe(const StudyDefinition& study, const StudyOptions& options, const std::string& gpu_reason,
              const std::string& telemetry_reason) {
  const bool batch_axis = !study.default_batches.empty();
  Json out = {{"study", study.name}, {"default_sizes", study.default_sizes}};
  if (batch_axis) out["default_batches"] = study.default_batches;
  out["size_range"] = range_json(study.largest_size);
  if (batch_axis) out["batch_range"] = range_json(study.largest_batch);
  out["axis_names"] = axis_names_json(study.axes, batch_axis);
  out["axes"] = axes_json(study);
  out["points"] = describe_points(study);
  out["rules"] = describe_rules(study);
  out["ranks_together"] = study.ranks_together;
  Json implementations = Json::array();
  for (const Implementation* impl : study.implementations) {
    Json described = implementation_fields(*impl);
    if (study.describe_implementation) described.update(study.describe_implementation(*impl));
    implementations.push_back(described);
  }
  out["implementations"] = implementations;
  if (study.describe) out.update(study.describe());
  Json entries = Json::array();
  for (const Entry& entry : selected_entries(options, study, gpu_reason.empty()))
    entries.push_back({{"name", entry.name}, {"axes", entry_axes(study, entry)}});
  out["entries"] = entries;
  out["measurement"] = protocol().json();
  out["gpu"] = availability(gpu_reason);
  out["telemetry"] = availability(telemetry_reason);
  return out;
}

namespace {

std::string& artifacts_dir() {
  static std::string dir;  // this process's --artifacts-dir
  return dir;
}

}  // namespace

std::string artifact_path(const std::string& file_name) {
  return artifacts_dir().empty() ? "" : artifacts_dir() + "/" + file_name;
}

Json utilization_description() { return availability(utilization_unavailable_reason()); }

int run_study(int argc, char** argv, const StudyDefinition& study) {
  const std::string binary = "gpubench_" + study.name;
  StudyOptions options;
  try {
    options = parse_study_options(&argc, argv);
    check_study_options(options, study);
    held_choices().open(options.held_choices);
    artifacts_dir() = options.artifacts_dir;
  } catch (const std::runtime_error& e) {  // a bad flag, or a held-choices file that is not one
    std::cerr << binary << ": " << e.what() << "\n";
    return 2;
  }
  if (options.help) std::cout << study_options_help() << "\n";
  std::string gpu_reason = options.cpu_only ? "not requested (--cpu-only)" : gpu_unavailable_reason();
  if (options.describe) {
    std::cout << dump_json(describe(study, options, gpu_reason, telemetry_unavailable_reason(options, gpu_reason)))
              << "\n";
    return 0;
  }
  if (study.ranks_together && !options.help) {  // harness/ranks.hpp
    try {
      gpu_reason = join_ranks(gpu_reason);
      write_ranks(artifact_path(study.name + "_ranks.json"));
      if (following()) {
        follow(study, selected_entries(options, study, gpu_reason.empty()));
        leave_ranks();
        return 0;
      }
    } catch (const std::runtime_error& e) {  // the ranks could not meet, or rank 0 went away
      std::cerr << binary << ": " << e.what() << "\n";
      return 1;
    }
  }
  const std::string telemetry_reason = telemetry_unavailable_reason(options, gpu_reason);
  if (telemetry_reason.empty() && !options.help) TelemetryRecorder::instance().start();
  if (!gpu_reason.empty() && !options.help) std::cerr << binary << ": GPU entries not run: " << gpu_reason << "\n";
  register_entries(study, selected_entries(options, study, gpu_reason.empty()), options.measurements_out);

  if (options.help) {  // Google Benchmark prints its own flags and exits; argv has room, --help was removed from it
    argv[argc++] = const_cast<char*>("--help");
    argv[argc] = nullptr;
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) {
    leave_ranks();
    return 2;
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  leave_ranks();
  forget_entry();  // device memory goes before the CUDA runtime tears down
  if (!options.telemetry_out.empty()) write_telemetry_series(options.telemetry_out, telemetry_reason, binary);
  return 0;
}

}  // namespace gpubench
