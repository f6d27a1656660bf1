#include "harness/timed_loop.hpp"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>
#include <stdexcept>
#include <thread>

#include "core/json.hpp"
#include "core/system.hpp"
#include "harness/gpu_telemetry.hpp"
#include "harness/ranks.hpp"

#if GPUBENCH_HAVE_CUDA
#include <cuda_runtime.h>

#include "core/cuda_check.hpp"
#include "core/device_timing.hpp"
#include "core/gpu_runtime.hpp"
#endif

namespace gpubench {
namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

void sleep_s(double seconds) { std::this_thread::sleep_for(std::chrono::duration<double>(seconds)); }

double unknown() { return kUnknown; }


// The SM clock for the throttle filter and the warm-up, or NaN without NVML.
double sm_clock_mhz() {
  const TelemetryRecorder& recorder = TelemetryRecorder::instance();
  return recorder.running() ? recorder.sm_clock_mhz() : kUnknown;
}

// The most calls rank 0 orders at once in a launch of several ranks. A follower enqueues its calls
// before it answers and rank 0 enqueues its own only after the answer, so the follower's calls wait on
// the GPU for rank 0's; an order longer than the CUDA launch queue (about a thousand kernels) would block
// the follower's host in mid-order and never be answered (a 64 KiB all-reduce's warm-up batch is
// thousands of calls). In orders of this many the follower is never more than one order ahead.
constexpr int kCallsPerOrder = 256;

// Makes `calls` calls of `call`, the other ranks' first, order by order; `begin` runs after the first
// order is answered, before the first call (where the timing starts).
template <class Begin, class Call>
void call_in_orders(int calls, Begin&& begin, Call&& call) {
  const int per_order = rank_channel() ? kCallsPerOrder : std::max(calls, 1);
  order_calls(std::min(per_order, calls));
  begin();
  for (int done = 0; done < calls;) {
    if (done > 0) order_calls(std::min(per_order, calls - done));
    const int now = std::min(per_order, calls - done);
    for (int i = 0; i < now; ++i) call();
    done += now;
  }
}

// `calls` calls on the host clock: around the loop (work on this thread and its helpers), or the
// sum of the entry's own timed calls (entries with untimed work between calls, or GPU work the
// clock waits for).
double host_timed_calls(PreparedEntry& entry, Clock clock, int calls) {
  if (clock == Clock::wall) {
    double start = 0;
    call_in_orders(calls, [&] { start = now_s(); }, [&] {
      entry.run_once();
      benchmark::ClobberMemory();
    });
    return now_s() - start;
  }
  double total = 0;
  call_in_orders(calls, [] {}, [&] { total += entry.timed_call(clock); });
  return total;
}

// The host-clock protocols, "latency" (GPU) and "cpu".
EntryMeasurement measure_on_host(PreparedEntry& entry, Clock clock, bool on_gpu, TelemetryWindow& telemetry) {
  const Protocol& rules = protocol();
  EntryMeasurement m;
  m.protocol = on_gpu ? "latency" : "cpu";
  if (on_gpu && clock != Clock::host) clock = Clock::host_to_completion;  // the host waits for the work
  const TelemetryRecorder& recorder = TelemetryRecorder::instance();
  if (on_gpu && recorder.running()) m.busy_clock_mhz = recorder.max_sm_clock_mhz();
  const double first_call_s = host_timed_calls(entry, clock, 1);
  m.warmup = run_warmup(rules.warmup, first_call_s,
                        {[&](int calls) { return Sample::of(host_timed_calls(entry, clock, calls), calls); },
                         on_gpu ? sm_clock_mhz : unknown, now_s});
  m.steady_clock_mhz = throttle_reference_mhz(m.warmup.settled_clock_mhz(), m.busy_clock_mhz);
  if (on_gpu) telemetry.open();
  const int calls = on_gpu ? 1 : calls_for(rules.cpu_sample_s, m.warmup.settled_call_s(), kMaxBatchCalls);
  const SampleHooks hooks{[&] { return Sample::of(host_timed_calls(entry, clock, calls), calls); },
                          on_gpu ? sm_clock_mhz : unknown, now_s, sleep_s};
  m.headline = run_phase(on_gpu ? rules.latency : rules.cpu, rules.throttle, m.steady_clock_mhz, hooks);
  m.headline.calls_per_sample = calls;
  m.energy_note = on_gpu ? "not measured: host-observed calls leave the GPU idle between them" : "";
  return m;
}

#if GPUBENCH_HAVE_CUDA
// What a process keeps across its GPU entries: the blocking kernel's flags, the L2 flush buffer,
// the idle power seen before the first entry.
struct GpuInstruments {
  EventTimer events;
  StreamHold hold;
  L2Flush l2;
  double idle_power_w = kUnknown;
};

GpuInstruments& gpu_instruments() {
  static GpuInstruments* instruments = [] {
    auto* made = new GpuInstruments();  // never freed: the CUDA runtime may be gone at exit
    const TelemetryRecorder& recorder = TelemetryRecorder::instance();
    if (recorder.running()) made->idle_power_w = recorder.power_w();
    return made;
  }();
  return *instruments;
}

// Enqueues `calls` back-to-back calls between the timer's events (the other ranks' first, order by order).
void enqueue_calls(PreparedEntry& entry, int calls, EventTimer& events) {
  call_in_orders(calls, [&] { events.start(); }, [&] { entry.run_once(); });
  events.stop();
}

// NVML's energy counter, read whenever the host waits for the device, kept where it was seen to
// change: both ends of the energy window are then synchronous with the work.
class EnergyPoller {
 public:
  EnergyPoller() : last_energy_(TelemetryRecorder::instance().energy_j()), last_poll_(now_s()) {}
  static bool available() {
    const TelemetryRecorder& recorder = TelemetryRecorder::instance();
    return recorder.running() && !std::isnan(recorder.energy_j());
  }
  void poll() {
    const double energy = TelemetryRecorder::instance().energy_j(), t = now_s();
    poll_gap_ = std::max(poll_gap_, t - last_poll_);
    last_poll_ = t;
    if (energy != last_energy_) ticks_.push_back({t, energy});
    last_energy_ = energy;
  }
  PowerEstimate estimate() const { return power_from_ticks(ticks_, poll_gap_); }

 private:
  std::vector<EnergyTick> ticks_;
  double last_energy_, last_poll_, poll_gap_ = 0;
};

// Device seconds of `calls` back-to-back calls, enqueued and waited for.
double device_batch(PreparedEntry& entry, int calls) {
  EventTimer& events = gpu_instruments().events;
  enqueue_calls(entry, calls, events);
  return events.wait_seconds();
}

// Back-to-back batches, each between its own events, the next enqueued before the last is waited
// for: the device does not idle while the host reads clocks and the energy counter between samples
// (NVML calls can take milliseconds), so a long call's samples are its sustained rate, not bursts
// after idle gaps that let a power-capped GPU recover its clock. The references' _device_batches
// time the same way.
class QueuedBatches {
 public:
  explicit QueuedBatches(PreparedEntry& entry) : entry_(entry) {}
  QueuedBatches(const QueuedBatches&) = delete;
  QueuedBatches& operator=(const QueuedBatches&) = delete;

  // Enqueues a batch of `calls` and returns the one queued before it once done (the first call
  // queues two), polling the energy counter while it runs if given.
  Sample next(int calls, EnergyPoller* energy = nullptr) {
    if (pending_ < 0) {
      enqueue(0, calls);
      pending_ = 0;
    }
    const int finishing = pending_;
    enqueue(1 - finishing, calls);
    EventTimer& timer = timers_[finishing];
    const double seconds = energy ? timer.wait_seconds([energy] { energy->poll(); }) : timer.wait_seconds();
    pending_ = 1 - finishing;
    return Sample::of(seconds, calls_[finishing]);
  }

  // Waits for the batch still queued: before a pause, or before anything else uses the device.
  void drain() {
    if (pending_ >= 0) timers_[pending_].wait_seconds();
    pending_ = -1;
  }

 private:
  void enqueue(int slot, int calls) {
    enqueue_calls(entry_, calls, timers_[slot]);
    calls_[slot] = calls;
  }

  PreparedEntry& entry_;
  EventTimer timers_[2];
  int calls_[2] = {0, 0};
  int pending_ = -1;  // the slot of the oldest batch not yet waited for; -1 when none is queued
};

// One sample of `calls` calls held behind the blocking kernel; falls back for good to unheld
// samples once the hold times out (a call that waits for the device cannot be enqueued behind it).
Sample held_sample(PreparedEntry& entry, int calls, bool& held, bool flush_l2) {
  GpuInstruments& gpu = gpu_instruments();
  if (flush_l2) gpu.l2.flush();
  if (held) {
    gpu.hold.hold();
    enqueue_calls(entry, calls, gpu.events);
    gpu.hold.release();
    const double seconds = gpu.events.wait_seconds();
    if (!gpu.hold.timed_out()) return Sample::of(seconds, calls);
    held = false;
    if (flush_l2) gpu.l2.flush();
  }
  return Sample::of(device_batch(entry, calls), calls);
}

double host_observed_call(PreparedEntry& entry) {
  CUDA_CHECK(cudaDeviceSynchronize());
  order_calls(1);
  const double start = now_s();
  entry.run_once();
  CUDA_CHECK(cudaDeviceSynchronize());
  return now_s() - start;
}

// The "throughput" protocol.
EntryMeasurement measure_on_device(PreparedEntry& entry, TelemetryWindow& telemetry) {
  const Protocol& rules = protocol();
  GpuInstruments& gpu = gpu_instruments();
  const TelemetryRecorder& recorder = TelemetryRecorder::instance();
  EntryMeasurement m;
  m.protocol = "throughput";
  m.idle_power_w = gpu.idle_power_w;
  if (recorder.running()) m.busy_clock_mhz = recorder.max_sm_clock_mhz();
  const double first_call_s = device_batch(entry, 1);
  // One queue of batches from the warm-up into a long call's samples: the GPU's load never pauses.
  QueuedBatches batches(entry);
  m.warmup = run_warmup(rules.warmup, first_call_s,
                        {[&](int calls) { return batches.next(calls); }, sm_clock_mhz, now_s});
  m.steady_clock_mhz = throttle_reference_mhz(m.warmup.settled_clock_mhz(), m.busy_clock_mhz);
  telemetry.open();
  const double call_s = m.warmup.settled_call_s();
  m.held = call_s < rules.sample_s;
  if (m.held) batches.drain();
  // Long calls are sampled in back-to-back batches: the GPU stays busy, and the phase, made to last
  // the energy window, is the window the energy counter is read over.
  StoppingRule rule = rules.throughput;
  std::optional<EnergyPoller> energy;
  if (m.held) {
    m.energy_note = "not measured: calls shorter than " + format_number(rules.sample_s * 1e6) + " us";
  } else if (!EnergyPoller::available()) {
    m.energy_note = "not measured: NVML gives no energy counter here";
  } else {
    energy.emplace();
    rule.min_time_s = std::max(rule.min_time_s, rules.energy_window_s);
  }
  const int calls = m.held ? calls_for(rules.sample_s, call_s, rules.max_calls_per_sample)
                           : calls_for(rules.warmup.batch_s, call_s, kMaxBatchCalls);
  m.headline = run_phase(rule, rules.throttle, m.steady_clock_mhz,
                         {[&] {
                            return m.held ? held_sample(entry, calls, m.held, false)
                                          : batches.next(calls, energy ? &*energy : nullptr);
                          },
                          sm_clock_mhz, now_s,
                          [&](double seconds) {
                            batches.drain();  // idle means idle: nothing left queued during the pause
                            sleep_s(seconds);
                          }});
  batches.drain();
  m.headline.calls_per_sample = calls;
  if (energy) {
    m.power = energy->estimate();
    m.sustained_call_s = m.headline.measured_s / (static_cast<double>(m.headline.samples_s.size()) * calls);
    if (std::isnan(m.power.power_w)) m.energy_note = "not measured: the energy counter moved fewer than 3 times";
  }
  m.latency = run_phase(rules.latency, rules.throttle, m.steady_clock_mhz,
                        {[&] { return Sample::of(host_observed_call(entry), 1); }, sm_clock_mhz, now_s, sleep_s});
  m.l2_bytes = static_cast<double>(gpu.l2.l2_bytes());
  const auto counter = entry.counters.find("memory_read_bytes");
  if (counter != entry.counters.end())
    m.working_set_bytes = counter->second + entry.counters.at("memory_written_bytes");
  // Where the working set fits in L2 (or nobody knows it), warm samples are L2 hits a longer
  // pipeline would not get: measure each call after a flush as well.
  m.measured_cold = std::isnan(m.working_set_bytes) || m.working_set_bytes <= m.l2_bytes;
  if (m.measured_cold) {
    bool held = true;  // one call: held, or its launch latency would be in it
    m.cold_l2 = run_phase(rules.latency, rules.throttle, m.steady_clock_mhz,
                          {[&] { return held_sample(entry, 1, held, true); }, sm_clock_mhz, now_s, sleep_s});
  }
  return m;
}
#endif

}  // namespace

Json EntryMeasurement::json() const {
  Json out = {{"protocol", protocol},
              {"warmup", warmup.json()},
              {"headline", headline.json()},
              {"busy_clock_mhz", busy_clock_mhz},
              {"steady_clock_mhz", steady_clock_mhz},
              {"setup_s", setup_s}};
  if (protocol == "throughput") {
    out["held"] = held;
    out["latency"] = latency.json();
    out["cold_l2"] = measured_cold ? cold_l2.json() : Json(nullptr);
    out["working_set_bytes"] = working_set_bytes;
    out["l2_bytes"] = l2_bytes;
  }
  if (protocol == "cpu") {
    out["energy"] = nullptr;
  } else if (std::isnan(power.power_w)) {
    out["energy"] = {{"note", energy_note}};
  } else {
    const double energy_j = power.power_w * sustained_call_s;
    out["energy"] = {{"power_w", power.power_w},
                     {"uncertainty_w", power.uncertainty_w},
                     {"window_s", power.window_s},
                     {"ticks", power.ticks},
                     {"sustained_call_s", sustained_call_s},
                     {"j_per_call", energy_j},
                     {"j_per_call_uncertainty", power.uncertainty_w * sustained_call_s},
                     {"idle_power_w", idle_power_w},
                     {"j_per_call_above_idle", (power.power_w - idle_power_w) * sustained_call_s}};
  }
  return out;
}

EntryMeasurement measure_entry(PreparedEntry& entry, const Entry& point, Clock clock, TelemetryWindow& telemetry) {
  const bool on_gpu = point.impl->on_gpu();
  const bool device_protocol = on_gpu && clock == Clock::device_events && !copies_timed(point.mode);
#if GPUBENCH_HAVE_CUDA
  EntryMeasurement m = device_protocol ? measure_on_device(entry, telemetry) : measure_on_host(entry, clock, on_gpu, telemetry);
#else
  static_cast<void>(device_protocol);  // no GPU entries are registered without CUDA
  EntryMeasurement m = measure_on_host(entry, clock, on_gpu, telemetry);
#endif
  if (m.headline.samples_s.empty())
    throw std::runtime_error("every sample was taken below " + format_number(protocol().throttle.threshold * 100) +
                             "% of the SM clock the warm-up settled at (throttled)");
  return m;
}

}  // namespace gpubench
