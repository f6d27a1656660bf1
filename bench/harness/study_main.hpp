// The main() every study binary shares: its own flags parsed and checked, --describe, the
// GPU check, registration of the entries, then Google Benchmark on the rest of argv.
#pragma once

#include <benchmark/benchmark.h>

#include <functional>
#include <string>
#include <vector>

#include "harness/study_options.hpp"

namespace gpubench {
inline namespace legacy {  // TRANSITION: removed once every study runs on harness/study.hpp

struct StudyDefinition {
  std::string name;                    // the study; its binary is gpubench_<name>
  std::vector<std::string> impl_ids;   // what --impls and --caps may name
  std::vector<std::string> modes;      // what --modes may name
  bool batch_axis = false;             // whether --batches means anything
  // The study's own --describe fields ("key": value, ...); study_main adds "study" and "gpu".
  std::function<std::string()> describe;
  std::function<void(const StudyOptions& options, bool gpu_usable)> register_entries;
  // Optional: the study's own checks of the options (e.g. sizes it has no entries for); throws UsageError.
  std::function<void(const StudyOptions& options)> check_options;
};

// The --describe fields every implementation has, for its JSON object.
std::string implementation_fields(const std::string& id, bool on_gpu, const std::vector<std::string>& modes,
                                  int max_size, const char* cap_reason);

// The "utilization" field of a batch study's --describe: whether NVML can sample the GPU, and why not.
std::string utilization_description();

// Throws UsageError when the options name an implementation or mode the study lacks.
void check_study_options(const StudyOptions& options, const StudyDefinition& study);

// False, after marking the entry skipped with both figures, when the host has less memory
// available than `bytes_needed` (or it cannot be read: then true).
bool host_memory_fits(benchmark::State& state, double bytes_needed);

int study_main(int argc, char** argv, const StudyDefinition& study);

}  // namespace legacy
}  // namespace gpubench
