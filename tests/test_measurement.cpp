// The measurement rules on synthetic samples: the stopping rule, the warm-up's settling, the
// throttle filter inside a phase, and power from the energy counter's ticks.
#include <gtest/gtest.h>

#include <cmath>
#include <deque>
#include <fstream>
#include <string>
#include <vector>

#include "harness/measurement.hpp"

namespace gpubench {
namespace {

const StoppingRule kRule{0.01, 10, 0.0, 100.0, 0.02};

std::vector<double> alternating(int count, double centre, double half_spread) {
  std::vector<double> values;
  for (int i = 0; i < count; ++i) values.push_back(centre + (i % 2 ? half_spread : -half_spread));
  return values;
}

TEST(StoppingRule, QuietSamplesStopAtTheMinimumCount) {
  const std::vector<double> quiet = alternating(10, 1.0, 0.001);
  EXPECT_EQ(stop_reason(kRule, std::vector<double>(quiet.begin(), quiet.begin() + 9), 9, 1), StopReason::none);
  EXPECT_EQ(stop_reason(kRule, quiet, 10, 1), StopReason::noise);
}

TEST(StoppingRule, TheMinimumTimeHoldsTheStop) {
  StoppingRule rule = kRule;
  rule.min_time_s = 0.5;
  const std::vector<double> quiet = alternating(20, 1e-3, 1e-6);
  EXPECT_EQ(stop_reason(rule, quiet, 0.02, 0.03), StopReason::none);
  EXPECT_EQ(stop_reason(rule, quiet, 0.5, 0.6), StopReason::noise);
}

TEST(StoppingRule, NoiseThatStopsShrinkingIsAPlateau) {
  // 10% noise, the same in every block of samples: more samples cannot bring it under 1%.
  const std::vector<double> noisy = alternating(40, 1.0, 0.1);
  EXPECT_EQ(stop_reason(kRule, std::vector<double>(noisy.begin(), noisy.begin() + 39), 39, 1), StopReason::none);
  EXPECT_EQ(stop_reason(kRule, noisy, 40, 1), StopReason::plateau);
}

TEST(StoppingRule, ADriftTimesOut) {
  std::vector<double> drifting;
  for (int i = 0; i < 60; ++i) drifting.push_back(1.0 + 0.05 * i);  // the noise keeps growing
  EXPECT_EQ(stop_reason(kRule, drifting, 60, 99), StopReason::none);
  EXPECT_EQ(stop_reason(kRule, drifting, 60, 100), StopReason::timeout);
}

// The cases the reference scripts' Python rule is tested on too (scripts/reference_timing.py): the
// two implement one rule. After the i-th sample, measured_s is the sum of the first i of
// measured_s_per_sample (one number: i times it) and elapsed_s is i x elapsed_s_per_sample.
TEST(StoppingRule, TheCasesSharedWithThePythonRule) {
  std::ifstream file(std::string(GPUBENCH_SOURCE_DIR) + "/tests/python/fixtures/stopping_rule_cases.json");
  ASSERT_TRUE(file) << "the shared fixture is missing";
  const Json cases = Json::parse(file);
  ASSERT_FALSE(cases.empty());
  for (const Json& c : cases) {
    const Json& r = c["rule"];
    const StoppingRule rule{r["max_noise"].get<double>(), r["min_samples"].get<int>(), r["min_time_s"].get<double>(),
                            r["timeout_s"].get<double>(), r["plateau_tolerance"].get<double>()};
    const Json& measured = c["measured_s_per_sample"];
    const std::string name = c["name"].get<std::string>();
    std::vector<double> samples;
    double measured_s = 0;
    StopReason reason = StopReason::none;
    for (const Json& sample : c["samples_s"]) {
      samples.push_back(sample.get<double>());
      measured_s += measured.is_array() ? measured[samples.size() - 1].get<double>() : measured.get<double>();
      reason = stop_reason(rule, samples, measured_s, samples.size() * c["elapsed_s_per_sample"].get<double>());
      if (reason != StopReason::none) break;
    }
    EXPECT_EQ(samples.size(), c["expect"]["stop_after"].get<std::size_t>()) << name;
    EXPECT_EQ(stop_reason_name(reason), c["expect"]["reason"].get<std::string>()) << name;
  }
}

TEST(StoppingRule, NoiseOfConstantSamplesIsZero) {
  EXPECT_EQ(relative_noise(std::vector<double>(5, 2.0), 5), 0.0);
  EXPECT_TRUE(std::isnan(relative_noise({1.0}, 1)));
  EXPECT_NEAR(relative_noise({1.0, 3.0}, 2), std::sqrt(2.0) / 2, 1e-12);
}

TEST(Warmup, SettlesWhenTheLastWindowsAgree) {
  const WarmupRule rule{0.01, 0.05, 3, 0.01, 0.0, 10.0};
  EXPECT_FALSE(settled(rule, {1.0, 1.005}, {}));
  EXPECT_TRUE(settled(rule, {2.0, 1.0, 1.005, 1.009}, {}));
  EXPECT_FALSE(settled(rule, {1.0, 1.005, 1.02}, {}));  // still rising
  EXPECT_FALSE(settled(rule, {1.1, 1.05, 1.02}, {}));   // still falling
  EXPECT_TRUE(settled(rule, {1.0, 1.05, 1.01}, {}));    // up and down: noise, not a drift
  // The time agrees but the clock is still falling.
  EXPECT_FALSE(settled(rule, {1.0, 1.0, 1.0}, {1980, 1900, 1800}));
  EXPECT_TRUE(settled(rule, {1.0, 1.0, 1.0}, {kUnknown, kUnknown, kUnknown}));
}

// A device whose calls slow down from 0.8 to 1.0 ms over its first 0.5 s, then hold.
struct SaggingDevice {
  double clock_s = 0;
  double call_s() const { return clock_s < 0.5 ? 0.8e-3 + 0.4e-3 * clock_s : 1.0e-3; }
  double run(int calls) {
    double total = 0;
    for (int i = 0; i < calls; ++i) {
      const double t = call_s();
      total += t;
      clock_s += t;
    }
    return total;
  }
};

TEST(Warmup, RunsUntilTheTimeStopsDriftingAndKeepsTheBurst) {
  SaggingDevice device;
  const WarmupRule rule{0.01, 0.05, 3, 0.01, 0.15, 3.0};
  const WarmupRecord record = run_warmup(rule, 0.8e-3, {[&](int calls) { return Sample::of(device.run(calls), calls); }, [] { return kUnknown; },
                                                        [&] { return device.clock_s; }});
  EXPECT_TRUE(record.settled);
  EXPECT_NEAR(record.burst_call_s, 0.8e-3, 0.01e-3);
  EXPECT_GE(record.elapsed_s, 0.5);  // not settled while it drifted
  EXPECT_NEAR(record.settled_call_s(), 1.0e-3, 1e-9);
}

TEST(Warmup, CountsTheCallsOfTheBatchThatFinishedWhenBatchesAreQueuedAhead) {
  // Each run_batch queues a batch and returns the one queued before it, as the GPU loop does: the
  // first batch (sized from a slow first call) has fewer calls than the rest, and the windows must
  // count each finished batch's own calls, not the ones just asked for.
  double clock_s = 0;
  std::deque<int> queued;
  const auto finish = [&](int calls) {
    const double seconds = calls * 1e-3;
    clock_s += seconds;
    return Sample::of(seconds, calls);
  };
  const WarmupRule rule{0.01, 0.05, 3, 0.01, 0.15, 3.0};
  const WarmupRecord record = run_warmup(rule, 5e-3,
                                         {[&](int calls) {
                                            if (queued.empty()) queued.push_back(calls);
                                            queued.push_back(calls);
                                            const int finished = queued.front();
                                            queued.pop_front();
                                            return finish(finished);
                                          },
                                          [] { return kUnknown; }, [&] { return clock_s; }});
  EXPECT_TRUE(record.settled);
  for (double window_call_s : record.window_call_s) EXPECT_NEAR(window_call_s, 1e-3, 1e-12);
}

TEST(Warmup, GivesUpAtItsLimit) {
  double clock_s = 0;
  int batch = 0;
  const WarmupRule rule{0.01, 0.05, 3, 0.01, 0.15, 1.0};
  const WarmupRecord record = run_warmup(rule, 1e-3,
                                         {[&](int calls) {  // every batch 1% slower than the one before
                                            const double t = calls * 1e-3 * std::pow(1.01, ++batch);
                                            clock_s += t;
                                            return Sample::of(t, calls);
                                          },
                                          [] { return kUnknown; }, [&] { return clock_s; }});
  EXPECT_FALSE(record.settled);
  EXPECT_GE(record.elapsed_s, 1.0);
}

TEST(Throttle, IsHeldAgainstTheClockTheWarmupSettledAt) {
  WarmupRecord warmup;
  EXPECT_TRUE(std::isnan(warmup.settled_clock_mhz()));
  EXPECT_EQ(throttle_reference_mhz(warmup.settled_clock_mhz(), 1980), 1980);  // no reading: the maximum
  warmup.window_clock_mhz = {1980, 1575, 1470};
  const double reference = throttle_reference_mhz(warmup.settled_clock_mhz(), 1980);
  EXPECT_EQ(reference, 1470);
  // A power-capped GEMM's steady 1440 MHz is below 75% of 1980 but not of its own steady clock.
  const ThrottleRule rule{0.75, 0.05};
  EXPECT_TRUE(throttled(rule, 1440, 1980));
  EXPECT_FALSE(throttled(rule, 1440, reference));
  EXPECT_TRUE(throttled(rule, 1000, reference));
}

TEST(Phase, ThrottledSamplesAreDroppedAfterAPause) {
  // Every third sample is taken at 1000 MHz on a GPU whose busy clock is 1980 MHz.
  int taken = 0;
  double wall_s = 0, paused_s = 0;
  const SampleHooks hooks{[&] {
                            ++taken;
                            wall_s += 1e-3;
                            return Sample{taken % 3 == 0 ? 5e-3 : 1e-3, 1e-3};
                          },
                          [&] { return taken % 3 == 0 ? 1000.0 : 1980.0; }, [&] { return wall_s; },
                          [&](double seconds) { paused_s += seconds; }};
  const ThrottleRule throttle{0.75, 0.05};
  const PhaseRecord record = run_phase(kRule, throttle, 1980.0, hooks);
  EXPECT_EQ(record.reason, StopReason::noise);
  EXPECT_EQ(record.samples_s.size(), 10u);
  EXPECT_EQ(record.throttled_samples, 4);  // samples 3, 6, 9, 12 of 14
  EXPECT_DOUBLE_EQ(paused_s, 4 * 0.05);
  EXPECT_DOUBLE_EQ(record.median_s(), 1e-3);  // the slow throttled samples are not in it
}

TEST(Phase, WithoutAClockReadingNothingIsDropped) {
  double wall_s = 0;
  const SampleHooks hooks{[&] {
                            wall_s += 1e-3;
                            return Sample{1e-3, 1e-3};
                          },
                          [] { return kUnknown; }, [&] { return wall_s; }, [](double) {}};
  const PhaseRecord record = run_phase(kRule, ThrottleRule{0.75, 0.05}, 1980.0, hooks);
  EXPECT_EQ(record.throttled_samples, 0);
  EXPECT_TRUE(record.converged());
}

TEST(Phase, EverySampleThrottledEndsEmptyAtTheTimeout) {
  double wall_s = 0;
  const SampleHooks hooks{[&] {
                            wall_s += 1.0;
                            return Sample{1e-3, 1e-3};
                          },
                          [] { return 900.0; }, [&] { return wall_s; }, [](double) {}};
  const PhaseRecord record = run_phase(kRule, ThrottleRule{0.75, 0.05}, 1980.0, hooks);
  EXPECT_TRUE(record.samples_s.empty());
  EXPECT_EQ(record.reason, StopReason::timeout);
}

TEST(CallsPerSample, BetweenOneAndTheMaximum) {
  EXPECT_EQ(calls_for(1e-4, 5e-6, 32), 20);
  EXPECT_EQ(calls_for(1e-4, 1e-6, 32), 32);
  EXPECT_EQ(calls_for(1e-4, 1e-3, 32), 1);
  EXPECT_EQ(calls_for(1e-4, kUnknown, 32), 1);
}

TEST(Power, FromTheCounterTicks) {
  // 500 W, the counter moving every 100 ms, read every 1 ms.
  std::vector<EnergyTick> ticks;
  for (int i = 0; i <= 10; ++i) ticks.push_back({0.1 * i, 1000.0 + 50.0 * i});
  const PowerEstimate estimate = power_from_ticks(ticks, 1e-3);
  EXPECT_NEAR(estimate.power_w, 500.0, 1e-9);
  EXPECT_NEAR(estimate.uncertainty_w, 500.0 * 2 * 1e-3 / 1.0, 1e-9);
  EXPECT_NEAR(estimate.window_s, 1.0, 1e-12);
  EXPECT_EQ(estimate.ticks, 11);
}

TEST(Power, UnevenHalvesWidenTheUncertainty) {
  const std::vector<EnergyTick> ticks = {{0.0, 0.0}, {0.5, 200.0}, {1.0, 500.0}};  // 400 W, then 600 W
  const PowerEstimate estimate = power_from_ticks(ticks, 0.0);
  EXPECT_NEAR(estimate.power_w, 500.0, 1e-9);
  EXPECT_NEAR(estimate.uncertainty_w, 100.0, 1e-9);
}

TEST(Power, TooFewTicksSayNothing) {
  EXPECT_TRUE(std::isnan(power_from_ticks({{0.0, 0.0}, {1.0, 5.0}}, 0.0).power_w));
}

}  // namespace
}  // namespace gpubench
