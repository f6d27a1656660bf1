// The utilization summary on synthetic NVML readings (which fall inside a window, on
// which clock, mean and max), and the sampler on a machine without NVML.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "harness/gpu_utilization.hpp"

namespace gpubench {
namespace {

constexpr std::uint64_t kWallStart = 1'700'000'000'000'000;  // microseconds since 1970
constexpr std::uint64_t kBootStart = 86'400'000'000;         // a day after boot

// The moment `offset_us` after the tests' start, on both clocks.
HostTime at(std::uint64_t offset_us) { return HostTime{kWallStart + offset_us, kBootStart + offset_us}; }

std::vector<UtilizationReading> readings(std::uint64_t clock_start,
                                         const std::vector<std::pair<std::uint64_t, double>>& at_percent) {
  std::vector<UtilizationReading> out;
  for (const auto& [offset_us, percent] : at_percent) out.push_back({clock_start + offset_us, percent});
  return out;
}

TEST(UtilizationSummary, KeepsReadingsOnBothEdgesAndDropsThoseOutside) {
  const auto gpu = readings(kWallStart, {{0, 100}, {1, 10}, {500'000, 40}, {1'000'000, 70}, {1'000'001, 100}});
  const auto memory = readings(kWallStart, {{0, 20}, {500'000, 30}, {1'000'000, 40}});
  const auto before = readings(kWallStart - 1, {{0, 100}});
  std::vector<UtilizationReading> gpu_with_earlier = before;
  gpu_with_earlier.insert(gpu_with_earlier.end(), gpu.begin(), gpu.end());

  const UtilizationSummary s = summarize_utilization(gpu_with_earlier, memory, at(0), at(1'000'000));
  EXPECT_TRUE(s.available);
  EXPECT_EQ(s.samples, 3);  // gpu has 4 inside, memory 3: the fewer
  EXPECT_DOUBLE_EQ(s.gpu_percent_mean, (100 + 10 + 40 + 70) / 4.0);
  EXPECT_DOUBLE_EQ(s.gpu_percent_max, 100);
  EXPECT_DOUBLE_EQ(s.memory_percent_mean, 30);
}

TEST(UtilizationSummary, NoReadingInsideTheWindowGivesNoSamplesAndNoFigures) {
  const auto gpu = readings(kWallStart, {{2'000'000, 90}});
  const auto memory = readings(kWallStart, {{2'000'000, 50}});
  const UtilizationSummary s = summarize_utilization(gpu, memory, at(0), at(1'000'000));
  EXPECT_TRUE(s.available);
  EXPECT_EQ(s.samples, 0);
  EXPECT_EQ(s.gpu_percent_mean, 0);
  EXPECT_EQ(s.gpu_percent_max, 0);
  EXPECT_EQ(s.memory_percent_mean, 0);
}

TEST(UtilizationSummary, NoReadingsAtAll) {
  const UtilizationSummary s = summarize_utilization({}, {}, at(0), at(1'000'000));
  EXPECT_TRUE(s.available);
  EXPECT_EQ(s.samples, 0);
}

TEST(UtilizationSummary, FollowsTheClockOfTheTimestamps) {
  // Drivers that stamp time since boot: the same window, read on the boot clock.
  const auto gpu = readings(kBootStart, {{250'000, 60}, {750'000, 80}});
  const auto memory = readings(kBootStart, {{250'000, 10}, {750'000, 30}});
  const UtilizationSummary s = summarize_utilization(gpu, memory, at(0), at(1'000'000));
  EXPECT_EQ(s.samples, 2);
  EXPECT_DOUBLE_EQ(s.gpu_percent_mean, 70);
  EXPECT_DOUBLE_EQ(s.gpu_percent_max, 80);
  EXPECT_DOUBLE_EQ(s.memory_percent_mean, 20);
}

TEST(UtilizationSummary, HostTimeReadsBothClocks) {
  const HostTime first = host_time_now();
  const HostTime second = host_time_now();
  EXPECT_GT(first.wall_us, kWallStart);  // after November 2023
  EXPECT_GT(first.since_boot_us, 0u);
  EXPECT_GE(second.since_boot_us, first.since_boot_us);
}

TEST(UtilizationSampler, WithoutNvmlSaysSoAndSamplesNothing) {
  if (void* nvml = dlopen("libnvidia-ml.so.1", RTLD_LAZY | RTLD_LOCAL)) {
    dlclose(nvml);
    GTEST_SKIP() << "this machine has NVML";
  }
  UtilizationSampler& sampler = UtilizationSampler::instance();
  sampler.start();
  const UtilizationSummary s = sampler.stop();
  EXPECT_FALSE(s.available);
  EXPECT_NE(s.reason.find("NVML"), std::string::npos) << s.reason;
  EXPECT_EQ(s.samples, 0);
  EXPECT_EQ(utilization_unavailable_reason(), s.reason);
}

TEST(UtilizationSampler, StopWithoutStartIsAnError) {
  UtilizationSampler& sampler = UtilizationSampler::instance();
  sampler.start();
  sampler.stop();
  EXPECT_THROW(sampler.stop(), std::logic_error);
}

}  // namespace
}  // namespace gpubench
