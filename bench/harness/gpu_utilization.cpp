#include "harness/gpu_utilization.hpp"

#include <time.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "harness/nvml.hpp"

namespace gpubench {
namespace {

// nvml.hpp's library plus the utilization calls, declared as nvml.h has them.
using NvmlReturn = nvml::Return;
using NvmlDevice = nvml::Device;
constexpr NvmlReturn kNvmlSuccess = nvml::kSuccess;
constexpr NvmlReturn kNvmlErrorNotSupported = nvml::kErrorNotSupported;
constexpr NvmlReturn kNvmlErrorNotFound = nvml::kErrorNotFound;  // GetSamples: no sample newer than the one asked for
union NvmlValue {  // nvmlValue_t
  double d;
  unsigned int ui;
  unsigned long ul;
  unsigned long long ull;
  long long sll;
};
struct NvmlSample {  // nvmlSample_t
  unsigned long long timestamp_us;
  NvmlValue value;
};
constexpr int kNvmlGpuUtilizationSamples = 1;     // NVML_GPU_UTILIZATION_SAMPLES
constexpr int kNvmlMemoryUtilizationSamples = 2;  // NVML_MEMORY_UTILIZATION_SAMPLES
constexpr int kNvmlValueTypeUnsignedInt = 1;      // NVML_VALUE_TYPE_UNSIGNED_INT

using NvmlGetSamplesFn = NvmlReturn (*)(NvmlDevice device, int sampling_type, unsigned long long last_seen_us,
                                        int* value_type, unsigned int* count, NvmlSample* samples);
using NvmlGetUtilizationRatesFn = nvml::UtilizationRatesFn;
using NvmlUtilization = nvml::Utilization;

std::uint64_t clock_us(clockid_t clock) {
  timespec now{};
  if (clock_gettime(clock, &now) != 0) throw std::runtime_error("clock_gettime failed");
  return static_cast<std::uint64_t>(now.tv_sec) * 1000000u + static_cast<std::uint64_t>(now.tv_nsec) / 1000u;
}

std::uint64_t distance(std::uint64_t a, std::uint64_t b) { return a > b ? a - b : b - a; }

struct InWindow {
  int count = 0;
  double sum = 0;
  double max = 0;
};

InWindow readings_in(const std::vector<UtilizationReading>& readings, std::uint64_t start_us, std::uint64_t end_us) {
  InWindow in;
  for (const UtilizationReading& r : readings) {
    if (r.timestamp_us < start_us || r.timestamp_us > end_us) continue;
    ++in.count;
    in.sum += r.percent;
    in.max = std::max(in.max, r.percent);
  }
  return in;
}

std::uint64_t newest_timestamp(const std::vector<UtilizationReading>& gpu,
                               const std::vector<UtilizationReading>& memory) {
  std::uint64_t newest = 0;
  for (const auto* readings : {&gpu, &memory})
    for (const UtilizationReading& r : *readings) newest = std::max(newest, r.timestamp_us);
  return newest;
}

// Polls nvmlDeviceGetUtilizationRates on a thread while a window is open, for GPUs whose
// NVML keeps no timestamped samples. Each reading covers NVML's last sample period (1/6 s
// to 1 s, depending on the GPU), so polling faster would only repeat values.
class UtilizationPoller {
 public:
  UtilizationPoller(NvmlGetUtilizationRatesFn get_rates, NvmlDevice device)
      : get_rates_(get_rates), device_(device), thread_([this] { poll(); }) {}
  ~UtilizationPoller() { finish(); }
  UtilizationPoller(const UtilizationPoller&) = delete;
  UtilizationPoller& operator=(const UtilizationPoller&) = delete;

  // Stops the thread; afterwards the readings and the first failure may be read.
  void finish() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_one();
    if (thread_.joinable()) thread_.join();
  }

  std::vector<UtilizationReading> gpu, memory;
  NvmlReturn failure = kNvmlSuccess;

 private:
  static constexpr std::chrono::milliseconds kInterval{50};

  void poll() {
    std::unique_lock<std::mutex> lock(mutex_);
    while (!stopping_) {
      NvmlUtilization rates{};
      const NvmlReturn status = get_rates_(device_, &rates);
      if (status != kNvmlSuccess) {
        failure = status;
        return;
      }
      const std::uint64_t now = clock_us(CLOCK_REALTIME);
      gpu.push_back({now, static_cast<double>(rates.gpu)});
      memory.push_back({now, static_cast<double>(rates.memory)});
      wake_.wait_for(lock, kInterval, [this] { return stopping_; });
    }
  }

  NvmlGetUtilizationRatesFn get_rates_;
  NvmlDevice device_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread thread_;  // last: starts polling once the members above exist
};

}  // namespace

HostTime host_time_now() { return HostTime{clock_us(CLOCK_REALTIME), clock_us(CLOCK_BOOTTIME)}; }

UtilizationSummary summarize_utilization(const std::vector<UtilizationReading>& gpu,
                                         const std::vector<UtilizationReading>& memory, const HostTime& start,
                                         const HostTime& end) {
  UtilizationSummary summary;
  summary.available = true;
  const std::uint64_t newest = newest_timestamp(gpu, memory);
  const bool wall_clock = distance(newest, end.wall_us) <= distance(newest, end.since_boot_us);
  const std::uint64_t start_us = wall_clock ? start.wall_us : start.since_boot_us;
  const std::uint64_t end_us = wall_clock ? end.wall_us : end.since_boot_us;
  const InWindow busy = readings_in(gpu, start_us, end_us);
  const InWindow memory_busy = readings_in(memory, start_us, end_us);
  summary.samples = std::min(busy.count, memory_busy.count);
  if (summary.samples == 0) return summary;
  summary.gpu_percent_mean = busy.sum / busy.count;
  summary.gpu_percent_max = busy.max;
  summary.memory_percent_mean = memory_busy.sum / memory_busy.count;
  return summary;
}

// NVML's utilization calls for the matched device, and the open window.
struct UtilizationSampler::Nvml {
  const nvml::Library& library = nvml::library();
  NvmlGetSamplesFn get_samples = nullptr;
  NvmlGetUtilizationRatesFn get_rates = nullptr;
  NvmlDevice device = library.device;
  bool timestamped_samples = false;  // nvmlDeviceGetSamples works; otherwise the poller is used
  std::string unavailable_reason;

  bool window_open = false;
  HostTime window_start;
  std::unique_ptr<UtilizationPoller> poller;

  std::string failure(const char* call, NvmlReturn status) const { return library.failure(call, status); }

  // Why NVML cannot sample the GPU's utilization, or "" when it can.
  std::string open() {
    if (!library.unavailable_reason.empty()) return library.unavailable_reason;
    get_samples = library.function<NvmlGetSamplesFn>("nvmlDeviceGetSamples");
    get_rates = library.function<NvmlGetUtilizationRatesFn>("nvmlDeviceGetUtilizationRates");
    if (!get_samples || !get_rates) return "NVML lacks nvmlDeviceGetSamples or nvmlDeviceGetUtilizationRates";
    return probe();
  }

  // Timestamped samples where the GPU keeps them, else polled rates where NVML reports them.
  std::string probe() {
    int value_type = 0;
    unsigned int count = 0;
    NvmlReturn status = get_samples(device, kNvmlGpuUtilizationSamples, 0, &value_type, &count, nullptr);
    timestamped_samples = status == kNvmlSuccess || status == kNvmlErrorNotFound;  // NOT_FOUND: none yet
    if (timestamped_samples) return "";
    if (status != kNvmlErrorNotSupported) return failure("nvmlDeviceGetSamples", status);
    NvmlUtilization rates{};
    status = get_rates(device, &rates);
    return status == kNvmlSuccess ? "" : failure("nvmlDeviceGetUtilizationRates", status);
  }

  // Every reading of one kind NVML holds (its buffer covers the last several seconds, so
  // windows longer than that keep only their end); "" or why they could not be read.
  std::string read_samples(int sampling_type, std::vector<UtilizationReading>* readings) const {
    int value_type = 0;
    unsigned int count = 0;
    NvmlReturn status = get_samples(device, sampling_type, 0, &value_type, &count, nullptr);
    if (status == kNvmlErrorNotFound || (status == kNvmlSuccess && count == 0)) return "";  // the GPU has been idle
    std::vector<NvmlSample> samples(count);
    if (status == kNvmlSuccess) status = get_samples(device, sampling_type, 0, &value_type, &count, samples.data());
    if (status == kNvmlErrorNotFound) return "";
    if (status != kNvmlSuccess) return failure("nvmlDeviceGetSamples", status);
    if (value_type != kNvmlValueTypeUnsignedInt)
      return "nvmlDeviceGetSamples returned value type " + std::to_string(value_type) + ", not unsigned int";
    samples.resize(std::min<std::size_t>(count, samples.size()));  // count is now how many it wrote
    for (const NvmlSample& sample : samples)
      readings->push_back({sample.timestamp_us, static_cast<double>(sample.value.ui)});
    return "";
  }

  std::string read_timestamped(std::vector<UtilizationReading>* gpu, std::vector<UtilizationReading>* memory) const {
    std::string reason = read_samples(kNvmlGpuUtilizationSamples, gpu);
    return reason.empty() ? read_samples(kNvmlMemoryUtilizationSamples, memory) : reason;
  }

  std::string collect_polled(std::vector<UtilizationReading>* gpu, std::vector<UtilizationReading>* memory) {
    poller->finish();
    const NvmlReturn status = poller->failure;
    *gpu = std::move(poller->gpu);
    *memory = std::move(poller->memory);
    poller.reset();
    return status == kNvmlSuccess ? "" : failure("nvmlDeviceGetUtilizationRates", status);
  }
};

UtilizationSampler::UtilizationSampler() : nvml_(std::make_unique<Nvml>()) {
  nvml_->unavailable_reason = nvml_->open();
}

UtilizationSampler::~UtilizationSampler() = default;

UtilizationSampler& UtilizationSampler::instance() {
  static UtilizationSampler sampler;
  return sampler;
}

const std::string& UtilizationSampler::unavailable_reason() const { return nvml_->unavailable_reason; }

void UtilizationSampler::start() {
  Nvml& nvml = *nvml_;
  nvml.poller.reset();  // a window left open by a failed entry is dropped
  nvml.window_open = true;
  nvml.window_start = host_time_now();
  if (nvml.unavailable_reason.empty() && !nvml.timestamped_samples)
    nvml.poller = std::make_unique<UtilizationPoller>(nvml.get_rates, nvml.device);
}

UtilizationSummary UtilizationSampler::stop() {
  Nvml& nvml = *nvml_;
  if (!nvml.window_open) throw std::logic_error("UtilizationSampler::stop without start");
  nvml.window_open = false;
  const HostTime end = host_time_now();
  std::vector<UtilizationReading> gpu, memory;
  std::string reason = nvml.unavailable_reason;
  if (reason.empty())
    reason = nvml.timestamped_samples ? nvml.read_timestamped(&gpu, &memory) : nvml.collect_polled(&gpu, &memory);
  if (reason.empty()) return summarize_utilization(gpu, memory, nvml.window_start, end);
  UtilizationSummary not_sampled;
  not_sampled.reason = reason;
  return not_sampled;
}

std::string utilization_unavailable_reason() { return UtilizationSampler::instance().unavailable_reason(); }

}  // namespace gpubench
