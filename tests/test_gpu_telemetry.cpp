// The per-entry telemetry summary on synthetic samples (which fall inside a window, medians,
// means, limit fractions, unread quantities), the series JSON, and the recorder without NVML.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "harness/gpu_telemetry.hpp"

namespace gpubench {
namespace {

TelemetrySample sample(double t_s, double sm_mhz, double power_w, double temperature_c, std::uint64_t reasons) {
  TelemetrySample s;
  s.t_s = t_s;
  s.unix_s = 1.7e9 + t_s;
  s.sm_clock_mhz = sm_mhz;
  s.mem_clock_mhz = 2619;
  s.power_w = power_w;
  s.temperature_c = temperature_c;
  s.reasons_known = true;
  s.reasons = reasons;
  return s;
}

TEST(TelemetrySummary, OnlyTheSamplesInsideTheWindowBothEdgesIncluded) {
  const std::vector<TelemetrySample> samples = {
      sample(0.9, 345, 70, 30, kReasonGpuIdle),  // before: idle, must not pull the median down
      sample(1.0, 1980, 300, 40, 0),
      sample(1.1, 1755, 350, 45, 0x4),           // SW power cap
      sample(1.2, 1980, 310, 44, 0),
      sample(1.3, 1600, 340, 47, 0x20),          // SW thermal slowdown
      sample(1.4, 345, 70, 50, kReasonGpuIdle),  // after
  };
  const TelemetrySummary s = summarize_telemetry(samples, 1.0, 1.3);
  EXPECT_EQ(s.samples, 4);
  EXPECT_DOUBLE_EQ(s.sm_clock_mhz, (1755 + 1980) / 2.0);  // median of an even count
  EXPECT_DOUBLE_EQ(s.mem_clock_mhz, 2619);
  EXPECT_DOUBLE_EQ(s.power_w, (300 + 350 + 310 + 340) / 4.0);
  EXPECT_DOUBLE_EQ(s.temperature_c_max, 47);
  EXPECT_DOUBLE_EQ(s.power_limited_fraction, 0.25);
  EXPECT_DOUBLE_EQ(s.thermal_limited_fraction, 0.25);
}

TEST(TelemetrySummary, HardwareSlowdownAndPowerBrakeCount) {
  const std::vector<TelemetrySample> samples = {sample(0, 1000, 300, 40, 0x8), sample(0.1, 1000, 300, 40, 0x80),
                                                sample(0.2, 1980, 300, 40, 0)};
  const TelemetrySummary s = summarize_telemetry(samples, 0, 1);
  EXPECT_NEAR(s.thermal_limited_fraction, 1.0 / 3, 1e-12);
  EXPECT_NEAR(s.power_limited_fraction, 1.0 / 3, 1e-12);
  EXPECT_DOUBLE_EQ(s.sm_clock_mhz, 1000);
}

TEST(TelemetrySummary, UnreadQuantitiesStayUnread) {
  TelemetrySample s = sample(0.5, 1500, kNotRead, kNotRead, 0);
  s.reasons_known = false;
  const TelemetrySummary summary = summarize_telemetry({s}, 0, 1);
  EXPECT_EQ(summary.samples, 1);
  EXPECT_DOUBLE_EQ(summary.sm_clock_mhz, 1500);
  EXPECT_TRUE(std::isnan(summary.power_w));
  EXPECT_TRUE(std::isnan(summary.temperature_c_max));
  EXPECT_TRUE(std::isnan(summary.power_limited_fraction));  // no reasons known: unknown, not 0
}

TEST(TelemetrySummary, NoSampleInsideGivesNoFigures) {
  const TelemetrySummary s = summarize_telemetry({sample(5, 1980, 300, 40, 0)}, 0, 1);
  EXPECT_EQ(s.samples, 0);
  EXPECT_TRUE(std::isnan(s.sm_clock_mhz));
  EXPECT_TRUE(std::isnan(s.power_w));
  EXPECT_TRUE(std::isnan(s.thermal_limited_fraction));
}

TEST(TelemetrySeries, SamplesAsJsonWithNullForUnread) {
  TelemetrySample s = sample(0.25, 1980, 301.5, 41, 0x4);
  s.energy_j = kNotRead;
  const Json series = Json::parse(dump_json(telemetry_series_json({s}, "")));
  EXPECT_EQ(series["source"], "nvml") << series;
  EXPECT_EQ(series["interval_s"], 0.1) << series;
  ASSERT_EQ(series["samples"].size(), 1u) << series;
  const Json& written = series["samples"][0];
  EXPECT_EQ(written["sm_clock_mhz"], 1980) << series;
  EXPECT_EQ(written["power_w"], 301.5) << series;
  EXPECT_TRUE(written["energy_j"].is_null()) << series;  // NaN: not read
  EXPECT_EQ(written["reasons"], 4) << series;
}

TEST(TelemetrySeries, UnavailableSaysWhyAndEscapes) {
  const std::string text = dump_json(telemetry_series_json({}, "no \"NVML\" here"));
  EXPECT_EQ(text, R"({"source":"nvml","unavailable":"no \"NVML\" here"})");
}

TEST(TelemetryRecorder, WithoutNvmlSaysSoAndWindowsReportNothing) {
  if (void* nvml = dlopen("libnvidia-ml.so.1", RTLD_LAZY | RTLD_LOCAL)) {
    dlclose(nvml);
    GTEST_SKIP() << "this machine has NVML";
  }
  TelemetryRecorder& recorder = TelemetryRecorder::instance();
  recorder.start();
  EXPECT_FALSE(recorder.running());
  EXPECT_NE(recorder.unavailable_reason().find("NVML"), std::string::npos) << recorder.unavailable_reason();
  EXPECT_TRUE(recorder.samples().empty());
}

}  // namespace
}  // namespace gpubench
