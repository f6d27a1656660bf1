// The launch_overhead study's kernels (kernels/launch_chain.cu): a chain of additions gives the host's
// additions bit for bit, a skipped kernel changes the result, the fused kernel gives the chain's
// result, a captured graph replays the chain, every kernel stamps its span on the global timer, and
// the timer moves in steps far below a kernel's length. Without a usable GPU every test reports itself
// skipped.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/gpu_runtime.hpp"
#include "core/random.hpp"
#include "core/system.hpp"
#include "core/verify.hpp"
#include "launch_chain.cuh"

namespace gpubench {
namespace {

class GpuLaunchChainTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string reason = gpu_unavailable_reason();
    if (!reason.empty()) GTEST_SKIP() << "no GPU: " << reason;
    CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  }
  void TearDown() override {
    if (stream_) cudaStreamDestroy(stream_);
  }

  // x after `times` passes of the additions of `values`, in order, on the host.
  static std::vector<float> added(std::vector<float> x, const std::vector<float>& values, int times = 1) {
    for (int pass = 0; pass < times; ++pass)
      for (float& element : x)
        for (float value : values) element += value;
    return x;
  }

  std::vector<float> download(const DeviceBuffer<float>& x, std::size_t n) {
    std::vector<float> values(n);
    CUDA_CHECK(cudaMemcpyAsync(values.data(), x.get(), n * sizeof(float), cudaMemcpyDeviceToHost, stream_));
    CUDA_CHECK(cudaStreamSynchronize(stream_));
    return values;
  }

  std::vector<KernelSpan> spans(const DeviceBuffer<KernelSpan>& stamped, std::size_t count) {
    std::vector<KernelSpan> found(count);
    CUDA_CHECK(cudaMemcpyAsync(found.data(), stamped.get(), count * sizeof(KernelSpan), cudaMemcpyDeviceToHost,
                               stream_));
    CUDA_CHECK(cudaStreamSynchronize(stream_));
    return found;
  }

  void upload(DeviceBuffer<float>& x, const std::vector<float>& values) {
    CUDA_CHECK(cudaMemcpyAsync(x.get(), values.data(), values.size() * sizeof(float), cudaMemcpyHostToDevice, stream_));
  }

  void unstamp(DeviceBuffer<KernelSpan>& stamped, std::size_t count) {
    const std::vector<KernelSpan> fresh(count, kUnstamped);
    CUDA_CHECK(cudaMemcpyAsync(stamped.get(), fresh.data(), count * sizeof(KernelSpan), cudaMemcpyHostToDevice,
                               stream_));
    CUDA_CHECK(cudaStreamSynchronize(stream_));
  }

  cudaStream_t stream_ = nullptr;
};

constexpr std::size_t kOdd = 1000;  // not a whole number of blocks
const std::vector<float> kValues = {0.75f, -0.5f, 0.625f, -0.875f, 0.5625f, 0.9375f, -0.6875f};

TEST_F(GpuLaunchChainTest, AChainIsTheHostsAdditionsAndEveryKernelStampsItsSpan) {
  const std::vector<float> x0 = random_uniform(kOdd, 3);
  DeviceBuffer<float> x(kOdd);
  DeviceBuffer<KernelSpan> stamped(kValues.size());
  upload(x, x0);
  unstamp(stamped, kValues.size());
  for (std::size_t k = 0; k < kValues.size(); ++k) add_value_kernel(x.get(), kOdd, kValues[k], stamped.get() + k, stream_);
  const std::vector<float> found = download(x, kOdd), expected = added(x0, kValues);
  EXPECT_TRUE(verify_exact(found.data(), expected.data(), kOdd).passed());
  const std::vector<KernelSpan> span = spans(stamped, kValues.size());
  for (std::size_t k = 0; k < span.size(); ++k) {
    EXPECT_NE(span[k].start_ns, kUnstamped.start_ns) << "kernel " << k;
    EXPECT_GE(span[k].end_ns, span[k].start_ns) << "kernel " << k;
    if (k > 0) EXPECT_GE(span[k].start_ns, span[k - 1].end_ns) << "kernel " << k << " overlaps the one before";
  }
}

TEST_F(GpuLaunchChainTest, ASkippedKernelChangesTheResult) {
  const std::vector<float> x0 = random_uniform(kOdd, 4);
  DeviceBuffer<float> x(kOdd);
  DeviceBuffer<KernelSpan> stamped(kValues.size());
  upload(x, x0);
  for (std::size_t k = 1; k < kValues.size(); ++k) add_value_kernel(x.get(), kOdd, kValues[k], stamped.get() + k, stream_);
  const std::vector<float> found = download(x, kOdd), expected = added(x0, kValues);
  EXPECT_FALSE(verify_exact(found.data(), expected.data(), kOdd).passed());
}

TEST_F(GpuLaunchChainTest, TheFusedKernelIsTheChainBitForBit) {
  const std::vector<float> x0 = random_uniform(kOdd, 5);
  DeviceBuffer<float> x(kOdd), values(kValues.size());
  DeviceBuffer<KernelSpan> stamped(1);
  upload(x, x0);
  upload(values, kValues);
  unstamp(stamped, 1);
  add_values_fused_kernel(x.get(), kOdd, values.get(), static_cast<int>(kValues.size()), stamped.get(), stream_);
  const std::vector<float> found = download(x, kOdd), expected = added(x0, kValues);
  EXPECT_TRUE(verify_exact(found.data(), expected.data(), kOdd).passed());
  const KernelSpan span = spans(stamped, 1)[0];
  EXPECT_GE(span.end_ns, span.start_ns);
  EXPECT_NE(span.start_ns, kUnstamped.start_ns);
}

TEST_F(GpuLaunchChainTest, ACapturedGraphReplaysTheChain) {
  const std::vector<float> x0 = random_uniform(kOdd, 6);
  DeviceBuffer<float> x(kOdd);
  DeviceBuffer<KernelSpan> stamped(kValues.size());
  cudaGraph_t graph = nullptr;
  CUDA_CHECK(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
  for (std::size_t k = 0; k < kValues.size(); ++k) add_value_kernel(x.get(), kOdd, kValues[k], stamped.get() + k, stream_);
  CUDA_CHECK(cudaStreamEndCapture(stream_, &graph));
  std::size_t nodes = 0;
  CUDA_CHECK(cudaGraphGetNodes(graph, nullptr, &nodes));
  EXPECT_EQ(nodes, kValues.size());
  cudaGraphExec_t replay = nullptr;
  CUDA_CHECK(cudaGraphInstantiate(&replay, graph, 0));
  upload(x, x0);
  for (int pass = 0; pass < 2; ++pass) CUDA_CHECK(cudaGraphLaunch(replay, stream_));
  const std::vector<float> found = download(x, kOdd), expected = added(x0, kValues, 2);
  EXPECT_TRUE(verify_exact(found.data(), expected.data(), kOdd).passed());
  CUDA_CHECK(cudaGraphExecDestroy(replay));
  CUDA_CHECK(cudaGraphDestroy(graph));
}

TEST_F(GpuLaunchChainTest, EmptyKernelsLaunchAndComplete) {
  for (int k = 0; k < 100; ++k) empty_kernel(stream_);
  EXPECT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
}

TEST_F(GpuLaunchChainTest, TheGlobalTimerMovesInStepsFarBelowAKernel) {
  const double step = global_timer_step_s();
  EXPECT_GT(step, 0.0);
  EXPECT_LE(step, 2e-6);  // 32 ns to 1 us on the GPUs documented; a kernel of the chain lasts microseconds
}

}  // namespace
}  // namespace gpubench
