#include "harness/study_main.hpp"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <fstream>
#include <iostream>

#include "harness/gpu_telemetry.hpp"
#include "harness/gpu_utilization.hpp"
#include "core/json.hpp"
#include "core/system.hpp"

namespace gpubench {
inline namespace legacy {  // TRANSITION: removed once every study runs on harness/study.hpp
namespace {

bool contains(const std::vector<std::string>& values, const std::string& value) {
  return std::find(values.begin(), values.end(), value) != values.end();
}

std::string joined(const std::vector<std::string>& values) {
  std::string out;
  for (const std::string& v : values) out += (out.empty() ? "" : ", ") + v;
  return out;
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
  out << telemetry_series_json(TelemetryRecorder::instance().samples(), unavailable_reason) << "\n";
  if (!out) std::cerr << binary << ": cannot write the telemetry series to " << path << "\n";
}

}  // namespace

std::string implementation_fields(const std::string& id, bool on_gpu, const std::vector<std::string>& modes,
                                  int max_size, const char* cap_reason) {
  return "\"id\": " + json_string(id) + ", \"device\": " + json_string(on_gpu ? "gpu" : "cpu") +
         ", \"modes\": " + json_list(modes, json_string) +
         ", \"max_size\": " + (max_size > 0 ? std::to_string(max_size) : "null") +
         ", \"cap_reason\": " + (cap_reason ? json_string(cap_reason) : "null");
}

std::string utilization_description() {
  return "{" + json_availability(utilization_unavailable_reason()) + "}";
}

void check_study_options(const StudyOptions& options, const StudyDefinition& study) {
  if (!study.batch_axis && !options.batches.empty()) throw UsageError("--batches: this study has no batch axis");
  for (const std::string& id : options.impls)
    if (!contains(study.impl_ids, id))
      throw UsageError("--impls: no implementation '" + id + "' in this build (see --describe)");
  for (const auto& [id, cap] : options.caps)
    if (!contains(study.impl_ids, id))
      throw UsageError("--caps: no implementation '" + id + "' in this build (see --describe)");
  for (const std::string& mode : options.modes)
    if (!contains(study.modes, mode))
      throw UsageError("--modes: this study has modes " + joined(study.modes) + ", not '" + mode + "'");
  if (study.check_options) study.check_options(options);
}

bool host_memory_fits(benchmark::State& state, double bytes_needed) {
  const double available = static_cast<double>(host_memory_available_bytes());
  if (available <= 0 || bytes_needed <= available) return true;
  state.SkipWithError(("skipped: needs about " + format_bytes(bytes_needed) + " of host memory, " +
                       format_bytes(available) + " available")
                          .c_str());
  return false;
}

int study_main(int argc, char** argv, const StudyDefinition& study) {
  const std::string binary = "gpubench_" + study.name;
  StudyOptions options;
  try {
    options = parse_study_options(&argc, argv);
    check_study_options(options, study);
  } catch (const UsageError& e) {
    std::cerr << binary << ": " << e.what() << "\n";
    return 2;
  }
  if (options.help) std::cout << study_options_help() << "\n";
  const std::string gpu_reason = options.cpu_only ? "not requested (--cpu-only)" : gpu_unavailable_reason();
  const std::string telemetry_reason = telemetry_unavailable_reason(options, gpu_reason);
  if (options.describe) {
    std::cout << "{\"study\": " << json_string(study.name) << ", " << study.describe()
              << ", \"gpu\": {" << json_availability(gpu_reason) << "}, \"telemetry\": {"
              << json_availability(telemetry_reason) << "}}\n";
    return 0;
  }
  if (telemetry_reason.empty() && !options.help) TelemetryRecorder::instance().start();
  if (!gpu_reason.empty() && !options.help) std::cerr << binary << ": GPU entries not run: " << gpu_reason << "\n";
  study.register_entries(options, gpu_reason.empty());

  if (options.help) {  // Google Benchmark prints its own flags and exits; argv has room, --help was removed from it
    argv[argc++] = const_cast<char*>("--help");
    argv[argc] = nullptr;
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  if (!options.telemetry_out.empty()) write_telemetry_series(options.telemetry_out, telemetry_reason, binary);
  return 0;
}

}  // namespace legacy
}  // namespace gpubench
