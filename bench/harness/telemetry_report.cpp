// The counters of the utilization and telemetry windows live apart from the samplers: they
// need Google Benchmark, which gpubench_core (and so the CPU tests) does not link.
#include <benchmark/benchmark.h>

#include <cmath>

#include "harness/gpu_telemetry.hpp"
#include "harness/gpu_utilization.hpp"

namespace gpubench {
namespace {

// A figure NVML did not give stays out of the JSON rather than appearing as NaN.
void set_if_read(benchmark::State& state, const char* name, double value) {
  if (!std::isnan(value)) state.counters[name] = value;
}

}  // namespace

void report_utilization(benchmark::State& state, const UtilizationSummary& summary) {
  if (!summary.available) return;
  state.counters["gpu_util_samples"] = summary.samples;
  if (summary.samples == 0) return;  // no reading fell inside the window: a mean of 0 would be invented
  state.counters["gpu_util_mean"] = summary.gpu_percent_mean;
  state.counters["gpu_util_max"] = summary.gpu_percent_max;
  state.counters["mem_util_mean"] = summary.memory_percent_mean;
}

void TelemetryWindow::report(benchmark::State& state) {
  if (!open_) return;
  open_ = false;
  TelemetryRecorder& recorder = TelemetryRecorder::instance();
  const double end_s = recorder.now_s();
  report_utilization(state, UtilizationSampler::instance().stop());
  const TelemetrySummary summary = recorder.summary_between(start_s_, end_s);
  state.counters["telemetry_samples"] = summary.samples;
  set_if_read(state, "sm_clock_mhz", summary.sm_clock_mhz);
  set_if_read(state, "mem_clock_mhz", summary.mem_clock_mhz);
  set_if_read(state, "power_w", summary.power_w);
  set_if_read(state, "temperature_c_max", summary.temperature_c_max);
  set_if_read(state, "power_limited_fraction", summary.power_limited_fraction);
  set_if_read(state, "thermal_limited_fraction", summary.thermal_limited_fraction);
  state.counters["telemetry_window_s"] = end_s - start_s_;
}

}  // namespace gpubench
