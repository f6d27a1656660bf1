// Command-line options every study binary shares. They are parsed and removed from argv
// before Google Benchmark reads the rest, so both sets of flags can be mixed.
#pragma once

#include <climits>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace gpubench {

// The range of --sizes and --batches values: each is read into an int. A study may take less
// (StudyDefinition::largest_size, largest_batch); --describe states its range, from which the driver
// refuses a value before it runs anything.
constexpr int kSmallestSize = 1;
constexpr int kLargestSize = INT_MAX;

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct StudyOptions {
  std::vector<int> sizes;                 // empty: the study's defaults
  std::vector<int> batches;               // studies with a batch axis; empty: their defaults
  std::vector<std::string> impls;         // empty: all
  std::vector<std::string> modes;         // empty: all
  std::map<std::string, int> caps;        // overrides of size caps; 0 removes a cap
  bool cpu_only = false;
  bool telemetry = true;                  // --no-telemetry: no NVML sampling at all (to measure its cost)
  std::string telemetry_out;              // where the sampled series goes at the end; empty: nowhere
  std::string measurements_out;           // where each entry's samples go as it finishes; empty: nowhere
  std::string held_choices;               // library choices held across a run's processes; empty: none
  std::string artifacts_dir;              // where a study writes files of its own (artifact_path); empty: none
  bool describe = false;
  bool help = false;
};

// Throws UsageError on a malformed value. Flags it does not know are left in argv.
StudyOptions parse_study_options(int* argc, char** argv);

// "64,200,1024" -> {64, 200, 1024}; every item a positive integer. `flag` names it in errors.
std::vector<int> parse_positive_list(const std::string& text, const std::string& flag);
// Sizes may carry a binary suffix: "4KiB" or "4K" = 4096, MiB/M, GiB/G likewise.
int parse_size(const std::string& text);
std::vector<int> parse_sizes(const std::string& text);

// "a=1,b=2" -> {{"a",1},{"b",2}}; values non-negative integers.
std::map<std::string, int> parse_caps(const std::string& text);

std::string study_options_help();

// Whether --impls/--modes (empty: everything) chose `value`.
bool is_selected(const std::vector<std::string>& chosen, const std::string& value);

// An implementation's size cap: the --caps override if given, else its own (0: none).
int size_cap(const StudyOptions& options, const std::string& id, int default_cap);

}  // namespace gpubench
