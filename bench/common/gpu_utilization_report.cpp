// report_utilization lives apart from the sampler: it needs Google Benchmark, which
// gpubench_core (and so the CPU tests) does not link.
#include <benchmark/benchmark.h>

#include "common/gpu_utilization.hpp"

namespace gpubench {

void report_utilization(benchmark::State& state, const UtilizationSummary& summary) {
  if (!summary.available) return;
  state.counters["gpu_util_samples"] = summary.samples;
  if (summary.samples == 0) return;  // no reading fell inside the window: a mean of 0 would be invented
  state.counters["gpu_util_mean"] = summary.gpu_percent_mean;
  state.counters["gpu_util_max"] = summary.gpu_percent_max;
  state.counters["mem_util_mean"] = summary.memory_percent_mean;
}

}  // namespace gpubench
