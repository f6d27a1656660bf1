// The NVML utilization sampler and the telemetry recorder against a GPU kept busy with cuBLAS. Without a usable GPU
// the test reports itself skipped.
#include <gtest/gtest.h>

#include <chrono>

#include "core/gpu_runtime.hpp"
#include "harness/gpu_telemetry.hpp"
#include "harness/gpu_utilization.hpp"
#include "core/system.hpp"
#include "matmul_cublas.hpp"

namespace gpubench {
namespace {

class GpuUtilizationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string reason = gpu_unavailable_reason();
    if (!reason.empty()) GTEST_SKIP() << "no GPU: " << reason;
  }
};

// Runs SGEMMs back to back for `duration`; the host waits only every `kCallsPerWait`
// calls, so the GPU never runs dry.
void keep_gpu_busy(std::chrono::duration<double> duration) {
  constexpr int kN = 2048;
  constexpr int kCallsPerWait = 20;
  const MatmulShape shape{kN, kN, kN};
  DeviceBuffer<float> a(shape.a_elements()), b(shape.b_elements()), c(shape.c_elements());
  CUDA_CHECK(cudaMemset(a.get(), 0, a.bytes()));
  CUDA_CHECK(cudaMemset(b.get(), 0, b.bytes()));
  const auto until = std::chrono::steady_clock::now() + duration;
  while (std::chrono::steady_clock::now() < until) {
    for (int call = 0; call < kCallsPerWait; ++call) matmul_cublas(a.get(), b.get(), c.get(), shape);
    CUDA_CHECK(cudaDeviceSynchronize());
  }
}

TEST_F(GpuUtilizationTest, BusyGpuReadsAsMostlyBusy) {
  UtilizationSampler& sampler = UtilizationSampler::instance();
  ASSERT_EQ(utilization_unavailable_reason(), "");
  // Busy before the window too: NVML's first reading inside it covers a period that began before it.
  keep_gpu_busy(std::chrono::milliseconds(200));
  sampler.start();
  keep_gpu_busy(std::chrono::milliseconds(500));
  const UtilizationSummary busy = sampler.stop();
  ASSERT_TRUE(busy.available) << busy.reason;
  EXPECT_GE(busy.samples, 1);
  EXPECT_GT(busy.gpu_percent_mean, 50) << busy.samples << " samples, max " << busy.gpu_percent_max;
  EXPECT_LE(busy.gpu_percent_max, 100);
}

// The recorder samples every interval, and over a busy window the SM clock is up, power is
// drawn and the energy counter rises in step with power x time.
TEST_F(GpuUtilizationTest, TelemetryOfABusyWindow) {
  TelemetryRecorder& recorder = TelemetryRecorder::instance();
  ASSERT_EQ(recorder.unavailable_reason(), "");
  recorder.start();
  ASSERT_TRUE(recorder.running());
  keep_gpu_busy(std::chrono::milliseconds(200));
  const double start_s = recorder.now_s();
  const double start_energy_j = recorder.energy_j();
  keep_gpu_busy(std::chrono::milliseconds(1000));
  const double end_s = recorder.now_s();
  const TelemetrySummary s = recorder.summary_between(start_s, end_s);
  EXPECT_GE(s.samples, 8);  // every 100 ms
  EXPECT_GT(s.sm_clock_mhz, 500);
  EXPECT_GT(s.power_w, 50);
  EXPECT_GT(s.temperature_c_max, 0);
  if (!std::isnan(start_energy_j)) {
    const double energy_j = recorder.energy_j() - start_energy_j;
    // The counter and the power readings are NVML's own, averaged differently: agree within 2x.
    EXPECT_GT(energy_j, 0.5 * s.power_w * (end_s - start_s));
    EXPECT_LT(energy_j, 2.0 * s.power_w * (end_s - start_s));
  }
}

}  // namespace
}  // namespace gpubench
