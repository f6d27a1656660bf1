#include "harness/study_options.hpp"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <sstream>

namespace gpubench {
namespace {

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> items;
  std::stringstream stream(text);
  std::string item;
  while (std::getline(stream, item, separator)) items.push_back(item);
  if (!text.empty() && text.back() == separator) items.emplace_back();
  return items;
}

long parse_integer(const std::string& text, const std::string& what) {
  errno = 0;
  char* end = nullptr;
  const long value = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno == ERANGE || value > INT_MAX || value < INT_MIN) {
    throw UsageError(what + ": '" + text + "' is not an integer");
  }
  return value;
}

std::vector<std::string> parse_names(const std::string& text, const std::string& flag) {
  std::vector<std::string> names = split(text, ',');
  for (const std::string& name : names) {
    if (name.empty()) throw UsageError(flag + ": empty name in '" + text + "'");
  }
  return names;
}

// "--name=value" -> value when arg starts with "--name="; nullptr otherwise.
const char* flag_value(const char* arg, const std::string& name) {
  const std::string prefix = "--" + name + "=";
  return std::string(arg).rfind(prefix, 0) == 0 ? arg + prefix.size() : nullptr;
}

}  // namespace

std::vector<int> parse_positive_list(const std::string& text, const std::string& flag) {
  std::vector<int> values;
  for (const std::string& item : split(text, ',')) {
    const long value = parse_integer(item, flag);  // at most INT_MAX, kLargestSize
    if (value < kSmallestSize) throw UsageError(flag + ": values must be positive, got " + item);
    values.push_back(static_cast<int>(value));
  }
  if (values.empty()) throw UsageError(flag + ": no value given");
  return values;
}

int parse_size(const std::string& text) {
  // Binary multiples, so a byte size reads as it is written in the transfer study: 4KiB, 256MiB, 1GiB.
  static const std::pair<const char*, long> kSuffixes[] = {{"KiB", 1L << 10}, {"MiB", 1L << 20}, {"GiB", 1L << 30},
                                                           {"K", 1L << 10},   {"M", 1L << 20},   {"G", 1L << 30}};
  std::string digits = text;
  long multiple = 1;
  for (const auto& [suffix, factor] : kSuffixes) {
    const std::string s = suffix;
    if (text.size() > s.size() && text.compare(text.size() - s.size(), s.size(), s) == 0) {
      digits = text.substr(0, text.size() - s.size());
      multiple = factor;
      break;
    }
  }
  const long value = parse_integer(digits, "--sizes");
  if (value < kSmallestSize) throw UsageError("--sizes: values must be positive, got " + text);
  if (value > kLargestSize / multiple)
    throw UsageError("--sizes: " + text + " is larger than " + std::to_string(kLargestSize));
  return static_cast<int>(value * multiple);
}

std::vector<int> parse_sizes(const std::string& text) {
  std::vector<int> sizes;
  for (const std::string& item : split(text, ',')) sizes.push_back(parse_size(item));
  if (sizes.empty()) throw UsageError("--sizes: no value given");
  return sizes;
}

std::map<std::string, int> parse_caps(const std::string& text) {
  std::map<std::string, int> caps;
  for (const std::string& item : split(text, ',')) {
    const auto eq = item.find('=');
    if (eq == std::string::npos || eq == 0) throw UsageError("--caps: expected id=N, got '" + item + "'");
    const long value = parse_integer(item.substr(eq + 1), "--caps");
    if (value < 0) throw UsageError("--caps: a cap cannot be negative, got " + item);
    caps[item.substr(0, eq)] = static_cast<int>(value);
  }
  return caps;
}

StudyOptions parse_study_options(int* argc, char** argv) {
  StudyOptions options;
  int kept = 1;
  for (int i = 1; i < *argc; ++i) {
    const char* arg = argv[i];
    const std::string flag(arg);
    if (const char* v = flag_value(arg, "sizes")) {
      options.sizes = parse_sizes(v);
    } else if (const char* v = flag_value(arg, "batches")) {
      options.batches = parse_positive_list(v, "--batches");
    } else if (const char* v = flag_value(arg, "impls")) {
      options.impls = parse_names(v, "--impls");
    } else if (const char* v = flag_value(arg, "modes")) {
      options.modes = parse_names(v, "--modes");
    } else if (const char* v = flag_value(arg, "caps")) {
      options.caps = parse_caps(v);
    } else if (const char* v = flag_value(arg, "telemetry-out")) {
      if (!*v) throw UsageError("--telemetry-out: no file given");
      options.telemetry_out = v;
    } else if (const char* v = flag_value(arg, "measurements-out")) {
      if (!*v) throw UsageError("--measurements-out: no file given");
      options.measurements_out = v;
    } else if (const char* v = flag_value(arg, "held-choices")) {
      if (!*v) throw UsageError("--held-choices: no file given");
      options.held_choices = v;
    } else if (const char* v = flag_value(arg, "artifacts-dir")) {
      if (!*v) throw UsageError("--artifacts-dir: no directory given");
      options.artifacts_dir = v;
    } else if (flag == "--no-telemetry") {
      options.telemetry = false;
    } else if (flag == "--cpu-only") {
      options.cpu_only = true;
    } else if (flag == "--describe") {
      options.describe = true;
    } else if (flag == "--help" || flag == "-h") {
      options.help = true;
    } else if (flag.rfind("--benchmark_", 0) != 0 && flag.rfind("--v=", 0) != 0) {
      throw UsageError("unknown flag '" + flag + "' (see --help)");
    } else {
      argv[kept++] = argv[i];
    }
  }
  *argc = kept;
  argv[kept] = nullptr;
  return options;
}

std::string study_options_help() {
  return "Study options:\n"
         "  --sizes=N,N,...     square sizes to run (default: the study's list)\n"
         "  --batches=B,B,...   batch sizes, for studies with a batch axis (default: the study's list)\n"
         "  --impls=ID,ID,...   implementations to run (ids: see --describe)\n"
         "  --modes=M,M,...     modes to run: host (CPU), resident, transfer_pinned, transfer_pageable\n"
         "  --caps=ID=N,...     change the largest size an implementation runs at (0: no cap)\n"
         "  --cpu-only          run no GPU entries\n"
         "  --no-telemetry      sample no NVML telemetry (clocks, power, energy, utilization)\n"
         "  --telemetry-out=F   write the telemetry series sampled while the study ran to F (JSON)\n"
         "  --measurements-out=F  append each entry's samples, warm-up, stop reason and energy to F\n"
         "                      (one JSON object per line, as the entry finishes)\n"
         "  --held-choices=F    take each library choice (cuDNN's engine) F holds; autotune and record\n"
         "                      the others there (one 'key<TAB>choice' line each)\n"
         "  --artifacts-dir=D   write the files a study makes besides its entries there (the\n"
         "                      mandelbrot study's count image); none without it\n"
         "  --describe          print the implementations, modes, caps and GPU status as JSON\n"
         "Any --benchmark_* flag goes to Google Benchmark (its own help follows).\n";
}

bool is_selected(const std::vector<std::string>& chosen, const std::string& value) {
  return chosen.empty() || std::find(chosen.begin(), chosen.end(), value) != chosen.end();
}

int size_cap(const StudyOptions& options, const std::string& id, int default_cap) {
  const auto override_cap = options.caps.find(id);
  return override_cap != options.caps.end() ? override_cap->second : default_cap;
}

}  // namespace gpubench
