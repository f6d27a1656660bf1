// GPU telemetry through NVML: SM and memory clocks, power, the energy counter, temperature,
// utilization, memory used and the clock-event (throttle) reasons, sampled every 100 ms on a
// thread for the whole study, and summarised per entry over its timed loops. A report can then
// say whether an entry ran at full clock, what one operation cost in energy, and flag entries
// measured while a power or thermal limit held the clocks down.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "core/json.hpp"

namespace benchmark {
class State;
}

namespace gpubench {

constexpr double kTelemetryIntervalS = 0.1;
constexpr double kNotRead = std::numeric_limits<double>::quiet_NaN();

// Clock-event reason bits (nvml.h's nvmlClocksEventReason* / nvmlClocksThrottleReason* values).
constexpr std::uint64_t kReasonGpuIdle = 0x1;
constexpr std::uint64_t kPowerLimitReasons = 0x4 | 0x80;           // SW power cap, HW power brake
constexpr std::uint64_t kThermalLimitReasons = 0x8 | 0x20 | 0x40;  // HW slowdown, SW and HW thermal slowdown

// One reading of every quantity; NaN where NVML did not answer (an unsupported query).
struct TelemetrySample {
  double t_s = 0;     // steady clock, seconds since the recorder started
  double unix_s = 0;  // wall clock, so the driver can join the series of a study's processes
  double sm_clock_mhz = kNotRead;
  double mem_clock_mhz = kNotRead;
  double power_w = kNotRead;
  double energy_j = kNotRead;  // NVML's total energy counter (since the driver loaded)
  double temperature_c = kNotRead;
  double gpu_util_percent = kNotRead;
  double mem_util_percent = kNotRead;
  double memory_used_mib = kNotRead;
  bool reasons_known = false;
  std::uint64_t reasons = 0;
};

// What the samples inside one timed window say (NaN figures when none fell inside).
struct TelemetrySummary {
  int samples = 0;
  double sm_clock_mhz = kNotRead;   // median
  double mem_clock_mhz = kNotRead;  // median
  double power_w = kNotRead;        // mean
  double temperature_c_max = kNotRead;
  double power_limited_fraction = kNotRead;    // of the samples with reasons: a power limit active
  double thermal_limited_fraction = kNotRead;  // ... a thermal limit (or HW slowdown) active
};

// The samples with start_s <= t_s <= end_s, summarised (pure, for the CPU tests).
TelemetrySummary summarize_telemetry(const std::vector<TelemetrySample>& samples, double start_s, double end_s);

// The series as JSON: {"source": "nvml", "interval_s": .., "samples": [...]}, or
// {"source": "nvml", "unavailable": reason} when nothing could be sampled.
Json telemetry_series_json(const std::vector<TelemetrySample>& samples, const std::string& unavailable_reason);

// Samples the GPU the CUDA runtime uses from start() until the process ends.
class TelemetryRecorder {
 public:
  static TelemetryRecorder& instance();
  // Begins sampling on a thread (once; a no-op when NVML is unavailable).
  void start();
  bool running() const;
  // Empty when NVML can be sampled; otherwise why not.
  const std::string& unavailable_reason() const;
  double now_s() const;  // on the samples' clock
  std::vector<TelemetrySample> samples() const;  // in time order
  TelemetrySummary summary_between(double start_s, double end_s) const;
  // NVML's energy counter now, in joules; NaN when this GPU does not count energy.
  double energy_j() const;
  // Read now, for the timed loop (NaN when NVML cannot say): the SM clock, its maximum, the power.
  double sm_clock_mhz() const;
  double max_sm_clock_mhz() const;
  double power_w() const;

  ~TelemetryRecorder();
  TelemetryRecorder(const TelemetryRecorder&) = delete;
  TelemetryRecorder& operator=(const TelemetryRecorder&) = delete;

 private:
  TelemetryRecorder();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Opened over the sustained part of an entry's timed loop and reported right after it: adds the
// entry's telemetry counters (and NVML utilization) for that span. Reports nothing when never
// opened or when the recorder is not running (--no-telemetry, no NVML), so the driver says why
// from the series file.
class TelemetryWindow {
 public:
  void open();
  // Counters: telemetry_samples, telemetry_window_s, sm_clock_mhz, mem_clock_mhz, power_w,
  // temperature_c_max, power_limited_fraction, thermal_limited_fraction, and the utilization
  // counters of gpu_utilization.hpp. Defined in gpubench_study.
  void report(benchmark::State& state);

 private:
  bool open_ = false;
  double start_s_ = 0;
};

}  // namespace gpubench
