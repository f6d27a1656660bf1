#include "harness/measurement.hpp"

#include <algorithm>
#include <cmath>
#include <functional>

namespace gpubench {

Json StoppingRule::json() const {
  return {{"max_noise", max_noise},
          {"min_samples", min_samples},
          {"min_time_s", min_time_s},
          {"timeout_s", timeout_s},
          {"plateau_tolerance", plateau_tolerance}};
}

Json WarmupRule::json() const {
  return {{"batch_s", batch_s},   {"window_s", window_s}, {"settle_windows", settle_windows},
          {"settle_tolerance", settle_tolerance}, {"min_s", min_s}, {"max_s", max_s}};
}

Json ThrottleRule::json() const { return {{"threshold", threshold}, {"recovery_s", recovery_s}}; }

Json Protocol::json() const {
  Json throughput_json = throughput.json();
  throughput_json["sample_s"] = sample_s;
  throughput_json["max_calls_per_sample"] = max_calls_per_sample;
  Json cpu_json = cpu.json();
  cpu_json["sample_s"] = cpu_sample_s;
  return {{"warmup", warmup.json()},     {"throughput", throughput_json},
          {"latency", latency.json()},   {"cpu", cpu_json},
          {"throttle", throttle.json()}, {"energy", {{"window_s", energy_window_s}}}};
}

const Protocol& protocol() {
  static const Protocol kProtocol = [] {
    Protocol p;
    // Windows of 30 ms: clocks under a power limit move within tens of milliseconds; three windows
    // without a one-way drift, after at least 0.1 s.
    p.warmup = WarmupRule{0.01, 0.03, 3, 0.01, 0.1, 3.0};
    // nvbench's stdrel noise target (0.5%) on a short budget per process: samples inside one process
    // agree to 1-2% while the next process lands elsewhere, so the run spends its time on independent
    // trials (the driver's --trials) rather than on more samples of one (docs/methodology.md).
    p.throughput = StoppingRule{0.005, 5, 0.05, 0.3, 0.02};
    // Calls shorter than this are held behind the blocking kernel in samples of about this
    // length (long against the events' 0.5 us resolution); longer calls hide their own launch and
    // are sampled in back-to-back batches of warmup.batch_s, so the GPU never idles between
    // samples (held samples of single 200 us calls left it idle 15% of the time, and its clock
    // rose and fell with that).
    p.sample_s = 1e-4;
    p.max_calls_per_sample = 32;
    p.latency = StoppingRule{0.01, 5, 0.005, 0.2, 0.02};
    p.cpu = StoppingRule{0.01, 5, 0.05, 0.3, 0.02};
    p.cpu_sample_s = 0.01;  // long against the host clock and the scheduler's tick
    p.throttle = ThrottleRule{0.75, 0.05};  // nvbench's defaults
    // NVML's energy counter moves in steps (100 ms on the H100): half a second spans five of them,
    // and the trials' median narrows what one window leaves uncertain.
    p.energy_window_s = 0.5;
    return p;
  }();
  return kProtocol;
}

const char* stop_reason_name(StopReason reason) {
  switch (reason) {
    case StopReason::none: return "none";
    case StopReason::noise: return "noise";
    case StopReason::plateau: return "plateau";
    case StopReason::timeout: return "timeout";
  }
  return "?";
}

double relative_noise(const std::vector<double>& samples, std::size_t count) {
  count = std::min(count, samples.size());
  if (count < 2) return kUnknown;
  double mean = 0;
  for (std::size_t i = 0; i < count; ++i) mean += samples[i];
  mean /= count;
  double squares = 0;
  for (std::size_t i = 0; i < count; ++i) squares += (samples[i] - mean) * (samples[i] - mean);
  return std::sqrt(squares / (count - 1)) / mean;
}

double median_of(std::vector<double> values) {
  if (values.empty()) return kUnknown;
  std::sort(values.begin(), values.end());
  const std::size_t middle = values.size() / 2;
  return values.size() % 2 ? values[middle] : (values[middle - 1] + values[middle]) / 2;
}

StopReason stop_reason(const StoppingRule& rule, const std::vector<double>& samples, double measured_s,
                       double elapsed_s) {
  const std::size_t n = samples.size();
  const std::size_t minimum = static_cast<std::size_t>(rule.min_samples);
  if (n >= minimum && measured_s >= rule.min_time_s) {
    const double noise = relative_noise(samples, n);
    if (noise <= rule.max_noise) return StopReason::noise;
    // nvbench stops as well when more samples no longer change the noise: it is the entry's own.
    if (n >= 4 * minimum && std::fabs(noise - relative_noise(samples, n - minimum)) <= rule.plateau_tolerance * noise)
      return StopReason::plateau;
  }
  return elapsed_s >= rule.timeout_s ? StopReason::timeout : StopReason::none;
}

bool settled(const WarmupRule& rule, const std::vector<double>& window_call_s,
             const std::vector<double>& window_clock_mhz) {
  const std::size_t count = static_cast<std::size_t>(rule.settle_windows);
  // Steady: the last windows agree within the tolerance, or they go up and down, which is noise
  // (a short call's host jitter), not the one-way drift of a clock that is still settling.
  const auto steady = [&](const std::vector<double>& values) {
    if (values.size() < count) return false;
    const auto first = values.end() - static_cast<long>(count);
    if (std::any_of(first, values.end(), [](double v) { return std::isnan(v); })) return true;  // unknown: no say
    const auto [low, high] = std::minmax_element(first, values.end());
    if (*high <= *low * (1 + rule.settle_tolerance)) return true;
    return !std::is_sorted(first, values.end()) && !std::is_sorted(first, values.end(), std::greater<double>());
  };
  return window_call_s.size() >= count && steady(window_call_s) &&
         (window_clock_mhz.size() < count || steady(window_clock_mhz));
}

int calls_for(double target_s, double call_s, int max_calls) {
  if (!(call_s > 0)) return 1;
  const double calls = std::ceil(target_s / call_s);
  return static_cast<int>(std::clamp(calls, 1.0, static_cast<double>(max_calls)));
}

double throttle_reference_mhz(double settled_clock_mhz, double max_clock_mhz) {
  return std::isnan(settled_clock_mhz) ? max_clock_mhz : settled_clock_mhz;
}

bool throttled(const ThrottleRule& rule, double clock_mhz, double busy_mhz) {
  if (std::isnan(clock_mhz) || !(busy_mhz > 0)) return false;
  return clock_mhz < rule.threshold * busy_mhz;
}

Json PhaseRecord::json() const {
  return {{"samples_s", samples_s},
          {"median_s", median_s()},
          {"noise", noise},
          {"stop", stop_reason_name(reason)},
          {"converged", converged()},
          {"measured_s", measured_s},
          {"elapsed_s", elapsed_s},
          {"throttled_samples", throttled_samples},
          {"calls_per_sample", calls_per_sample}};
}

PhaseRecord run_phase(const StoppingRule& rule, const ThrottleRule& throttle, double busy_mhz,
                      const SampleHooks& hooks) {
  PhaseRecord record;
  const double start = hooks.now_s();
  while (record.reason == StopReason::none) {
    const Sample sample = hooks.take();
    if (throttled(throttle, hooks.clock_mhz(), busy_mhz)) {
      ++record.throttled_samples;
      hooks.pause(throttle.recovery_s);
    } else {
      record.samples_s.push_back(sample.call_s);
      record.measured_s += sample.measured_s;
    }
    record.elapsed_s = hooks.now_s() - start;
    record.reason = stop_reason(rule, record.samples_s, record.measured_s, record.elapsed_s);
  }
  record.noise = relative_noise(record.samples_s, record.samples_s.size());
  return record;
}

Json WarmupRecord::json() const {
  return {{"burst_call_s", burst_call_s},   {"window_call_s", window_call_s},
          {"window_clock_mhz", window_clock_mhz}, {"settled", settled},
          {"elapsed_s", elapsed_s}};
}

WarmupRecord run_warmup(const WarmupRule& rule, double first_call_s, const WarmupHooks& hooks) {
  WarmupRecord record;
  const double start = hooks.now_s();
  int calls = calls_for(rule.batch_s, first_call_s, kMaxBatchCalls);
  double window_s = 0;
  int window_calls = 0;
  while (true) {
    const Sample batch = hooks.run_batch(calls);
    window_s += batch.measured_s;
    window_calls += batch.calls;
    if (std::isnan(record.burst_call_s)) {
      record.burst_call_s = batch.call_s;
      calls = calls_for(rule.batch_s, record.burst_call_s, kMaxBatchCalls);  // the first call may have been slow
    }
    record.elapsed_s = hooks.now_s() - start;
    if (window_s >= rule.window_s) {
      record.window_call_s.push_back(window_s / window_calls);
      record.window_clock_mhz.push_back(hooks.clock_mhz());
      window_s = 0;
      window_calls = 0;
      record.settled = settled(rule, record.window_call_s, record.window_clock_mhz);
      if (record.settled && record.elapsed_s >= rule.min_s) return record;
    }
    if (record.elapsed_s >= rule.max_s) {
      record.settled = false;
      return record;
    }
  }
}

PowerEstimate power_from_ticks(const std::vector<EnergyTick>& ticks, double poll_gap_s) {
  PowerEstimate estimate;
  estimate.ticks = static_cast<int>(ticks.size());
  if (ticks.size() < 3) return estimate;
  const auto power_between = [&](std::size_t a, std::size_t b) {
    return (ticks[b].energy_j - ticks[a].energy_j) / (ticks[b].t_s - ticks[a].t_s);
  };
  const std::size_t last = ticks.size() - 1, middle = last / 2;
  estimate.window_s = ticks[last].t_s - ticks[0].t_s;
  if (!(estimate.window_s > 0)) return estimate;
  estimate.power_w = power_between(0, last);
  // Each end is known to within one poll gap; the halves' disagreement is the counter's own noise.
  estimate.uncertainty_w = std::fabs(power_between(0, middle) - power_between(middle, last)) / 2 +
                           estimate.power_w * 2 * poll_gap_s / estimate.window_s;
  return estimate;
}

}  // namespace gpubench
