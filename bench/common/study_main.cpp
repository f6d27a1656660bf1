#include "common/study_main.hpp"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <iostream>

#include "common/gpu_utilization.hpp"
#include "common/json.hpp"
#include "common/system.hpp"

namespace gpubench {
namespace {

bool contains(const std::vector<std::string>& values, const std::string& value) {
  return std::find(values.begin(), values.end(), value) != values.end();
}

std::string joined(const std::vector<std::string>& values) {
  std::string out;
  for (const std::string& v : values) out += (out.empty() ? "" : ", ") + v;
  return out;
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
  if (options.describe) {
    std::cout << "{\"study\": " << json_string(study.name) << ", " << study.describe()
              << ", \"gpu\": {" << json_availability(gpu_reason) << "}}\n";
    return 0;
  }
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
  return 0;
}

}  // namespace gpubench
