// How an entry is measured, as rules on samples: the warm-up that ends when time and clock have
// settled, the stopping rule that ends a phase when its noise is small or stops shrinking (after
// nvbench's stdrel criterion), the throttle filter that drops samples taken below a fraction of
// the busy clock, and power from the energy counter's ticks. Pure: the skeleton's timed loop
// (study.cpp) supplies the samples through hooks, and the tests supply synthetic ones.
// docs/methodology.md gives the reasons and the experiments behind the numbers in `protocol()`.
#pragma once

#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "core/json.hpp"

namespace gpubench {

constexpr double kUnknown = std::numeric_limits<double>::quiet_NaN();

// When a phase of samples may stop.
struct StoppingRule {
  double max_noise = 0;          // stop once the samples' relative standard deviation is at most this
  int min_samples = 0;
  double min_time_s = 0;         // ... and at least this much measured time
  double timeout_s = 0;          // wall seconds of the phase: stop unconverged
  double plateau_tolerance = 0;  // stop when the noise no longer moves by more than this fraction
  Json json() const;
};

// When the warm-up ends: back-to-back batches grouped into windows; settled once the last
// `settle_windows` windows agree within `settle_tolerance` in time per call (and in SM clock), or
// move up and down rather than one way (noise, not a drift).
struct WarmupRule {
  double batch_s = 0;   // device time of one batch of calls
  double window_s = 0;  // a window holds batches of at least this much time in all
  int settle_windows = 0;
  double settle_tolerance = 0;
  double min_s = 0;
  double max_s = 0;
  Json json() const;
};

struct ThrottleRule {
  double threshold = 0;   // a sample whose SM clock is below this fraction of the GPU's maximum is dropped
  double recovery_s = 0;  // and the GPU is left idle this long before the next
  Json json() const;
};

// Every number of the protocol, in one place (published in --describe as "measurement").
struct Protocol {
  WarmupRule warmup;
  StoppingRule throughput;  // GPU device time, calls held behind a blocking kernel
  double sample_s = 0;      // calls shorter than this: held samples of about this long ...
  int max_calls_per_sample = 0;  // ... in at most this many calls (the launch queue must hold them);
                                 // longer calls: back-to-back batches of warmup.batch_s
  StoppingRule latency;     // one call on the host clock, until its work is done; and cold-L2 samples
  StoppingRule cpu;         // CPU entries: batches of calls on the host clock
  double cpu_sample_s = 0;
  ThrottleRule throttle;
  double energy_window_s = 0;  // the energy counter is read over at least this much of the headline's
                               // back-to-back batches (calls of sample_s and longer)
  Json json() const;
};
const Protocol& protocol();

enum class StopReason { none, noise, plateau, timeout };
const char* stop_reason_name(StopReason reason);

// Relative standard deviation (n - 1) of the first `count` samples; NaN below two samples.
double relative_noise(const std::vector<double>& samples, std::size_t count);
double median_of(std::vector<double> values);

// Whether a phase stops after its latest sample: `samples` per-call seconds, `measured_s` the time
// they measured in all, `elapsed_s` wall time since the phase began.
StopReason stop_reason(const StoppingRule& rule, const std::vector<double>& samples, double measured_s,
                       double elapsed_s);

// Whether the latest windows have settled: per-call times (and SM clocks, NaN when unknown).
bool settled(const WarmupRule& rule, const std::vector<double>& window_call_s, const std::vector<double>& window_clock_mhz);

// Calls in one sample or batch of `target_s` for calls of `call_s`, between 1 and `max_calls`.
int calls_for(double target_s, double call_s, int max_calls);
// The most calls in one back-to-back batch (warm-up, long calls' samples, CPU samples).
constexpr int kMaxBatchCalls = 10000;

// Whether a sample at `clock_mhz` was throttled below rule.threshold x `busy_mhz` (false when either is unknown).
bool throttled(const ThrottleRule& rule, double clock_mhz, double busy_mhz);

// The clock a sample's clock is held against: the one the warm-up settled at, or the GPU's maximum where
// the warm-up read none. A power-capped GPU's steady clock for heavy work can sit near 75% of the
// maximum: measured against the maximum, its ordinary state would count as throttled and every
// recovery pause would let the next samples run as bursts.
double throttle_reference_mhz(double settled_clock_mhz, double max_clock_mhz);

// One sample: seconds per call, the time it measured (calls x per call, or the sample's span), and
// its calls.
struct Sample {
  double call_s = 0;
  double measured_s = 0;
  int calls = 1;
  static Sample of(double seconds, int calls) { return Sample{seconds / calls, seconds, calls}; }
};

// What the loop can do and read, as functions (a GPU, a CPU, or a test's fakes).
struct SampleHooks {
  std::function<Sample()> take;
  std::function<double()> clock_mhz;     // the SM clock now; NaN when unknown
  std::function<double()> now_s;         // a wall clock
  std::function<void(double)> pause;     // leave the device idle this long
};

struct PhaseRecord {
  std::vector<double> samples_s;  // per call, the kept samples in order
  StopReason reason = StopReason::none;
  double noise = kUnknown;
  double measured_s = 0;
  double elapsed_s = 0;
  int throttled_samples = 0;  // dropped, each followed by a recovery pause
  int calls_per_sample = 1;
  double median_s() const { return median_of(samples_s); }
  bool converged() const { return reason == StopReason::noise || reason == StopReason::plateau; }
  Json json() const;
};

// Takes samples until the rule stops; throttled samples are dropped and followed by a pause.
PhaseRecord run_phase(const StoppingRule& rule, const ThrottleRule& throttle, double busy_mhz, const SampleHooks& hooks);

// The warm-up's hooks: `run_batch(calls)` starts that many calls back to back and returns the batch
// that finished meanwhile (this one, or with batches kept queued one ahead, the one before it).
struct WarmupHooks {
  std::function<Sample(int calls)> run_batch;
  std::function<double()> clock_mhz;
  std::function<double()> now_s;
};

struct WarmupRecord {
  double burst_call_s = kUnknown;  // per call in the first batch, before the GPU has warmed up
  std::vector<double> window_call_s;
  std::vector<double> window_clock_mhz;
  bool settled = false;
  double elapsed_s = 0;
  double settled_call_s() const { return window_call_s.empty() ? burst_call_s : window_call_s.back(); }
  // The SM clock of the last window (NaN when unknown): the entry's own steady clock.
  double settled_clock_mhz() const { return window_clock_mhz.empty() ? kUnknown : window_clock_mhz.back(); }
  Json json() const;
};

// Runs batches until the windows settle or rule.max_s has passed; `first_call_s` sizes the batches.
WarmupRecord run_warmup(const WarmupRule& rule, double first_call_s, const WarmupHooks& hooks);

// The energy counter where it was seen to change: (seconds, joules).
struct EnergyTick {
  double t_s = 0;
  double energy_j = 0;
};
struct PowerEstimate {
  double power_w = kUnknown;
  double uncertainty_w = kUnknown;  // half the two halves' difference plus the ticks' timing uncertainty
  double window_s = 0;               // from the first tick to the last
  int ticks = 0;
};
// Mean power between the first and last tick; `poll_gap_s`, the longest gap between two readings,
// bounds when each tick happened.
PowerEstimate power_from_ticks(const std::vector<EnergyTick>& ticks, double poll_gap_s);

}  // namespace gpubench
