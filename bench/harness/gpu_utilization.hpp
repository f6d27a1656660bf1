// GPU utilization while a configuration runs, sampled through NVML, so the batch-size
// studies can show how busy the GPU was against batch size. NVML is loaded at run time
// (dlopen), so nothing links against the driver and machines without one still build and run.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace benchmark {
class State;  // Google Benchmark's; only report_utilization needs it, and it is built where benchmark is linked
}

namespace gpubench {

struct UtilizationSummary {
  bool available = false;          // NVML answered for this GPU
  std::string reason;              // why not, when !available (e.g. "libnvidia-ml.so.1 not found")
  double gpu_percent_mean = 0;     // NVML GPU utilization: percent of time one or more kernels ran
  double gpu_percent_max = 0;
  double memory_percent_mean = 0;  // NVML memory utilization: percent of time device memory was read or written
  int samples = 0;                 // NVML samples that fell inside the window
};

// Samples NVML utilization of the GPU the CUDA runtime uses (matched by PCI bus id) while a window is open.
// One window at a time, opened and closed on one thread (the benchmark's).
class UtilizationSampler {
 public:
  static UtilizationSampler& instance();
  void start();               // opens a window (a no-op apart from remembering the time when NVML is unavailable)
  UtilizationSummary stop();  // closes it: summary of the samples that fell inside

  // Empty when NVML can sample the GPU; otherwise why not.
  const std::string& unavailable_reason() const;

  ~UtilizationSampler();
  UtilizationSampler(const UtilizationSampler&) = delete;
  UtilizationSampler& operator=(const UtilizationSampler&) = delete;

 private:
  UtilizationSampler();
  struct Nvml;  // the loaded library, the device and the open window; NVML's types stay out of this header
  std::unique_ptr<Nvml> nvml_;
};

// Empty when utilization can be sampled; otherwise why not (for a study's --describe).
std::string utilization_unavailable_reason();

// Adds the counters gpu_util_mean, gpu_util_max, mem_util_mean, gpu_util_samples when available;
// nothing when not (the driver then says utilization was not sampled and why, from --describe).
// Defined in gpubench_study, which links Google Benchmark.
void report_utilization(benchmark::State& state, const UtilizationSummary& summary);

// --- the summarising logic, pure so the CPU tests can check it -------------------------
// One reading of one NVML utilization counter (percent) and when it was taken.
struct UtilizationReading {
  std::uint64_t timestamp_us = 0;
  double percent = 0;
};

// A moment on each host clock NVML's timestamps may follow: drivers differ (some stamp
// wall-clock time since 1970, others time since boot), and NVML does not say which.
struct HostTime {
  std::uint64_t wall_us = 0;        // CLOCK_REALTIME
  std::uint64_t since_boot_us = 0;  // CLOCK_BOOTTIME
};
HostTime host_time_now();

// The readings whose timestamps fall in [start, end] (both edges inside), on the clock
// that the newest reading is nearest to at `end`. available is true; samples is the
// smaller of the two counts, since NVML takes both kinds of reading together.
UtilizationSummary summarize_utilization(const std::vector<UtilizationReading>& gpu,
                                         const std::vector<UtilizationReading>& memory, const HostTime& start,
                                         const HostTime& end);

}  // namespace gpubench
