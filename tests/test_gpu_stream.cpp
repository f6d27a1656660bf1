// The stream study's GPU kernels: every operation of our two kernels and of Thrust, FP32 and FP64,
// passes the study's check (bit for bit but dot) at sizes that leave elements past the last 16-byte
// vector, at one block and at many (a dot's block sums added by the second kernel), and writes
// nothing past the n-th element. Without a usable GPU every test reports itself skipped.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/gpu_runtime.hpp"
#include "core/random.hpp"
#include "core/stream.hpp"
#include "core/system.hpp"
#include "stream_kernels.cuh"
#include "stream_thrust.cuh"

namespace gpubench {
namespace {

class GpuStreamTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string reason = gpu_unavailable_reason();
    if (!reason.empty()) GTEST_SKIP() << "no GPU: " << reason;
  }
};

// 1 element, fewer than a vector, a vector and some, one block's worth and some, and many blocks.
const std::size_t kSizes[] = {1, 3, 5, 1027, (1u << 20) + 3, (1u << 23) + 1};

template <typename T>
struct Kernel {
  const char* name;
  StreamFn<T> run;
};

template <typename T>
std::vector<Kernel<T>> kernels() {
  return {{"grid_stride", stream_grid_stride}, {"one_per_thread", stream_one_per_thread}, {"thrust", stream_thrust}};
}

// Runs `op` by `kernel` on random arrays of n on the device, z poisoned (all-ones bytes, NaN) one
// element past n, and checks it as the study does; z[n] must still be NaN (dot: z[1..] is its scratch).
template <typename T>
void expect_passes(const Kernel<T>& kernel, StreamOp op, std::size_t n) {
  const std::vector<float> drawn_x = random_uniform(n, n), drawn_y = random_uniform(n, n + 1);
  const std::vector<T> x(drawn_x.begin(), drawn_x.end()), y(drawn_y.begin(), drawn_y.end());
  const T scalar = static_cast<T>(1.0 + 0.5 * random_uniform(1, n + 2)[0]);
  DeviceBuffer<T> dx(n), dy(n), dz(n + 1);
  CUDA_CHECK(cudaMemcpy(dx.get(), x.data(), dx.bytes(), cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(dy.get(), y.data(), dy.bytes(), cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemset(dz.get(), 0xFF, dz.bytes()));
  kernel.run(op, dx.get(), dy.get(), dz.get(), n, scalar);
  CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<T> z(n + 1);
  CUDA_CHECK(cudaMemcpy(z.data(), dz.get(), dz.bytes(), cudaMemcpyDeviceToHost));
  const Verification v = verify_stream(op, x.data(), y.data(), z.data(), n, scalar);
  EXPECT_TRUE(v.passed()) << kernel.name << " " << stream_op_name(op) << " at n = " << n << ": " << v.describe();
  if (op != StreamOp::dot) EXPECT_TRUE(std::isnan(z[n])) << kernel.name << " wrote past the end at n = " << n;
}

template <typename T>
void expect_every_kernel_passes() {
  for (const Kernel<T>& kernel : kernels<T>())
    for (StreamOp op : all_stream_ops())
      for (std::size_t n : kSizes) expect_passes(kernel, op, n);
}

TEST_F(GpuStreamTest, EveryKernelPassesTheCheckInFp32) { expect_every_kernel_passes<float>(); }

TEST_F(GpuStreamTest, EveryKernelPassesTheCheckInFp64) { expect_every_kernel_passes<double>(); }

TEST_F(GpuStreamTest, OurKernelsRefuseMisalignedArrays) {
  DeviceBuffer<float> a(64), b(64), c(64);
  EXPECT_THROW(stream_grid_stride(StreamOp::copy, a.get() + 1, b.get(), c.get(), 32, 1.0f), std::invalid_argument);
  EXPECT_THROW(stream_one_per_thread(StreamOp::add, a.get(), b.get(), c.get() + 2, 32, 1.0f), std::invalid_argument);
}

TEST_F(GpuStreamTest, NothingIsLaunchedForNoElements) {
  stream_grid_stride(StreamOp::triad, static_cast<const float*>(nullptr), nullptr, static_cast<float*>(nullptr), 0,
                     1.0f);
  stream_one_per_thread(StreamOp::dot, static_cast<const double*>(nullptr), nullptr, static_cast<double*>(nullptr), 0,
                        1.0);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
}

}  // namespace
}  // namespace gpubench
