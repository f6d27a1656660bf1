// The timed loop of every entry, on the rules of measurement.hpp. Three protocols:
//   - throughput (GPU entries on the device clock, operands resident): warm up until time and clock
//     settle; then the headline's samples of device time: short calls held behind a blocking
//     kernel, so launch latency is excluded; longer ones in back-to-back batches that keep the GPU
//     busy, for at least the energy window, over which NVML's energy counter is read; beside it,
//     the host-observed latency of one call and, where the working set fits in L2, the device time
//     with L2 flushed before each call;
//   - latency (GPU entries whose timed region holds copies, or timed on the host clock): warm up,
//     then single calls on the host clock until their work is done (the headline);
//   - cpu: warm up, then batches of calls on the host clock.
// Every sample taken below the throttle threshold of the busy clock is dropped after a pause.
// Run by several ranks (harness/ranks.hpp), rank 0 alone takes these decisions and orders the same
// calls of the other ranks before each batch.
#pragma once

#include <memory>
#include <string>

#include "harness/measurement.hpp"
#include "harness/study.hpp"

namespace gpubench {

class TelemetryWindow;

struct EntryMeasurement {
  std::string protocol;  // "throughput", "latency" or "cpu": what the headline is
  WarmupRecord warmup;
  PhaseRecord headline;
  PhaseRecord latency;  // throughput entries: one call as a host program sees it
  PhaseRecord cold_l2;  // throughput entries whose working set fits in L2 (or is unknown)
  bool held = false;    // the headline's samples were held behind the blocking kernel (short calls)
  bool measured_cold = false;
  double working_set_bytes = kUnknown;
  double l2_bytes = kUnknown;
  double busy_clock_mhz = kUnknown;    // the maximum SM clock (clock_limited's reference)
  double steady_clock_mhz = kUnknown;  // the throttle threshold's reference (throttle_reference_mhz)
  PowerEstimate power;               // over the energy window
  double sustained_call_s = kUnknown;  // per call over the energy window
  double idle_power_w = kUnknown;      // before the process's first GPU entry
  std::string energy_note;             // why no energy was measured
  double setup_s = kUnknown;           // wall time of preparing the entry (inputs, first call and check)

  double headline_s() const { return headline.median_s(); }
  Json json() const;
};

// Measures a prepared entry (its first call made and checked) on the protocol its clock and mode
// call for; `telemetry` is opened over the sustained part. Throws EntrySkipped-free runtime errors
// only for failures (a CUDA error, every sample throttled).
EntryMeasurement measure_entry(PreparedEntry& entry, const Entry& point, Clock clock, TelemetryWindow& telemetry);

}  // namespace gpubench
