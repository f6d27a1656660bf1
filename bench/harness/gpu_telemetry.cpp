#include "harness/gpu_telemetry.hpp"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "harness/gpu_utilization.hpp"
#include "core/json.hpp"
#include "harness/nvml.hpp"

namespace gpubench {
namespace {

// NVML's calls, declared as nvml.h has them.
using Device = nvml::Device;
using Return = nvml::Return;
struct NvmlMemory {  // nvmlMemory_t
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};
constexpr int kNvmlClockSm = 1;           // NVML_CLOCK_SM
constexpr int kNvmlClockMem = 2;          // NVML_CLOCK_MEM
constexpr int kNvmlTemperatureGpu = 0;    // NVML_TEMPERATURE_GPU
using ClockInfoFn = Return (*)(Device, int type, unsigned int* mhz);
using PowerUsageFn = Return (*)(Device, unsigned int* milliwatts);
using TotalEnergyFn = Return (*)(Device, unsigned long long* millijoules);
using TemperatureFn = Return (*)(Device, int sensor, unsigned int* celsius);
using MemoryInfoFn = Return (*)(Device, NvmlMemory*);
using ReasonsFn = Return (*)(Device, unsigned long long* reasons);

double median_of(std::vector<double> values) {
  if (values.empty()) return kNotRead;
  const std::size_t middle = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + middle, values.end());
  const double upper = values[middle];
  if (values.size() % 2) return upper;
  return (upper + *std::max_element(values.begin(), values.begin() + middle)) / 2;
}

double mean_of(const std::vector<double>& values) {
  if (values.empty()) return kNotRead;
  double sum = 0;
  for (double v : values) sum += v;
  return sum / values.size();
}

// The values of one quantity that were read (not NaN).
template <typename Field>
std::vector<double> read_values(const std::vector<const TelemetrySample*>& samples, Field field) {
  std::vector<double> values;
  for (const TelemetrySample* s : samples)
    if (!std::isnan(s->*field)) values.push_back(s->*field);
  return values;
}

double fraction_with(const std::vector<const TelemetrySample*>& samples, std::uint64_t reasons) {
  int known = 0, with = 0;
  for (const TelemetrySample* s : samples) {
    if (!s->reasons_known) continue;
    ++known;
    with += (s->reasons & reasons) != 0;
  }
  return known ? static_cast<double>(with) / known : kNotRead;
}

Json sample_json(const TelemetrySample& s) {
  return {{"t_s", s.t_s},
          {"unix_s", s.unix_s},
          {"sm_clock_mhz", s.sm_clock_mhz},
          {"mem_clock_mhz", s.mem_clock_mhz},
          {"power_w", s.power_w},
          {"energy_j", s.energy_j},
          {"temperature_c", s.temperature_c},
          {"gpu_util", s.gpu_util_percent},
          {"mem_util", s.mem_util_percent},
          {"memory_used_mib", s.memory_used_mib},
          {"reasons", s.reasons_known ? Json(s.reasons) : Json(nullptr)}};
}

double unix_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

TelemetrySummary summarize_telemetry(const std::vector<TelemetrySample>& samples, double start_s, double end_s) {
  std::vector<const TelemetrySample*> inside;
  for (const TelemetrySample& s : samples)
    if (s.t_s >= start_s && s.t_s <= end_s) inside.push_back(&s);
  TelemetrySummary summary;
  summary.samples = static_cast<int>(inside.size());
  summary.sm_clock_mhz = median_of(read_values(inside, &TelemetrySample::sm_clock_mhz));
  summary.mem_clock_mhz = median_of(read_values(inside, &TelemetrySample::mem_clock_mhz));
  summary.power_w = mean_of(read_values(inside, &TelemetrySample::power_w));
  const std::vector<double> temperatures = read_values(inside, &TelemetrySample::temperature_c);
  if (!temperatures.empty()) summary.temperature_c_max = *std::max_element(temperatures.begin(), temperatures.end());
  summary.power_limited_fraction = fraction_with(inside, kPowerLimitReasons);
  summary.thermal_limited_fraction = fraction_with(inside, kThermalLimitReasons);
  return summary;
}

Json telemetry_series_json(const std::vector<TelemetrySample>& samples, const std::string& unavailable_reason) {
  if (!unavailable_reason.empty()) return {{"source", "nvml"}, {"unavailable", unavailable_reason}};
  return {{"source", "nvml"}, {"interval_s", kTelemetryIntervalS}, {"samples", array_of(samples, sample_json)}};
}

// The NVML calls, the sampling thread and the series.
struct TelemetryRecorder::Impl {
  const nvml::Library& library = nvml::library();
  std::string unavailable_reason;
  ClockInfoFn clock_info = library.function<ClockInfoFn>("nvmlDeviceGetClockInfo");
  PowerUsageFn power_usage = library.function<PowerUsageFn>("nvmlDeviceGetPowerUsage");
  TotalEnergyFn total_energy = library.function<TotalEnergyFn>("nvmlDeviceGetTotalEnergyConsumption");
  TemperatureFn temperature = library.function<TemperatureFn>("nvmlDeviceGetTemperature");
  nvml::UtilizationRatesFn utilization = library.function<nvml::UtilizationRatesFn>("nvmlDeviceGetUtilizationRates");
  MemoryInfoFn memory_info = library.function<MemoryInfoFn>("nvmlDeviceGetMemoryInfo");
  ReasonsFn reasons = library.function<ReasonsFn>("nvmlDeviceGetCurrentClocksEventReasons");
  ClockInfoFn max_clock_info = library.function<ClockInfoFn>("nvmlDeviceGetMaxClockInfo");
  const std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();

  mutable std::mutex mutex;
  std::condition_variable wake;
  bool stopping = false;
  std::vector<TelemetrySample> series;
  std::thread thread;

  Impl() {
    // Newer drivers name them clock-event reasons; older ones only know throttle reasons.
    if (!reasons) reasons = library.function<ReasonsFn>("nvmlDeviceGetCurrentClocksThrottleReasons");
    unavailable_reason = library.unavailable_reason;
    if (unavailable_reason.empty() && !clock_info) unavailable_reason = "NVML lacks nvmlDeviceGetClockInfo";
  }

  double now_s() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count(); }

  // One unsigned reading, NaN when the call fails (unsupported on this GPU, or not permitted).
  template <typename Fn, typename... Args>
  double read(Fn fn, Args... args) const {
    unsigned int value = 0;
    return fn && fn(library.device, args..., &value) == nvml::kSuccess ? value : kNotRead;
  }

  double energy_j() const {
    unsigned long long millijoules = 0;
    return total_energy && total_energy(library.device, &millijoules) == nvml::kSuccess ? millijoules * 1e-3
                                                                                         : kNotRead;
  }

  TelemetrySample take() const {
    TelemetrySample s;
    s.t_s = now_s();
    s.unix_s = unix_seconds();
    s.sm_clock_mhz = read(clock_info, kNvmlClockSm);
    s.mem_clock_mhz = read(clock_info, kNvmlClockMem);
    s.power_w = read(power_usage) * 1e-3;
    s.energy_j = energy_j();
    s.temperature_c = read(temperature, kNvmlTemperatureGpu);
    nvml::Utilization rates{};
    if (utilization && utilization(library.device, &rates) == nvml::kSuccess) {
      s.gpu_util_percent = rates.gpu;
      s.mem_util_percent = rates.memory;
    }
    NvmlMemory memory{};
    if (memory_info && memory_info(library.device, &memory) == nvml::kSuccess)
      s.memory_used_mib = memory.used / 1048576.0;
    unsigned long long mask = 0;
    s.reasons_known = reasons && reasons(library.device, &mask) == nvml::kSuccess;
    s.reasons = s.reasons_known ? mask : 0;
    return s;
  }

  // Samples on a fixed grid of kTelemetryIntervalS: waiting a whole interval after each sample would
  // stretch the period by the NVML calls' own time (tens of ms on a loaded host: 7 samples a second).
  void loop() {
    using Clock = std::chrono::steady_clock;
    const auto interval = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(kTelemetryIntervalS));
    auto next = Clock::now();
    std::unique_lock<std::mutex> lock(mutex);
    while (!stopping) {
      lock.unlock();
      const TelemetrySample sample = take();  // NVML outside the lock: windows may read meanwhile
      lock.lock();
      series.push_back(sample);
      next += interval;
      if (next < Clock::now()) next = Clock::now();  // a sample slower than the interval: no burst to catch up
      wake.wait_until(lock, next, [this] { return stopping; });
    }
  }

  ~Impl() {
    {
      std::lock_guard<std::mutex> lock(mutex);
      stopping = true;
    }
    wake.notify_one();
    if (thread.joinable()) thread.join();
  }
};

TelemetryRecorder::TelemetryRecorder() : impl_(std::make_unique<Impl>()) {}
TelemetryRecorder::~TelemetryRecorder() = default;

TelemetryRecorder& TelemetryRecorder::instance() {
  static TelemetryRecorder recorder;
  return recorder;
}

void TelemetryRecorder::start() {
  if (running() || !impl_->unavailable_reason.empty()) return;
  impl_->thread = std::thread([impl = impl_.get()] { impl->loop(); });
}

bool TelemetryRecorder::running() const { return impl_->thread.joinable(); }
const std::string& TelemetryRecorder::unavailable_reason() const { return impl_->unavailable_reason; }
double TelemetryRecorder::now_s() const { return impl_->now_s(); }
double TelemetryRecorder::energy_j() const { return impl_->energy_j(); }
double TelemetryRecorder::sm_clock_mhz() const { return impl_->read(impl_->clock_info, kNvmlClockSm); }
double TelemetryRecorder::max_sm_clock_mhz() const { return impl_->read(impl_->max_clock_info, kNvmlClockSm); }
double TelemetryRecorder::power_w() const { return impl_->read(impl_->power_usage) * 1e-3; }

std::vector<TelemetrySample> TelemetryRecorder::samples() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->series;  // only the sampling thread appends: already in time order
}

TelemetrySummary TelemetryRecorder::summary_between(double start_s, double end_s) const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return summarize_telemetry(impl_->series, start_s, end_s);
}

void TelemetryWindow::open() {
  TelemetryRecorder& recorder = TelemetryRecorder::instance();
  if (open_ || !recorder.running()) return;
  open_ = true;
  UtilizationSampler::instance().start();
  start_s_ = recorder.now_s();
}

}  // namespace gpubench
