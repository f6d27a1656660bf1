// The vector_add study's kernels: every element of C the exact FP32 sum, and nothing past its end
// written, at sizes around a block (256 threads) and the one-block kernel's 1024 threads, and past
// them; and its GPU entry (harness/gpu_entry.hpp) in every mode. Without a usable GPU every test
// reports itself skipped.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/gpu_runtime.hpp"
#include "core/random.hpp"
#include "core/system.hpp"
#include "core/verify.hpp"
#include "harness/gpu_entry.hpp"
#include "vector_add.cuh"

namespace gpubench {
namespace {

struct GpuVectorAdd {
  const char* name;
  VectorAddFn run;
};
void PrintTo(const GpuVectorAdd& impl, std::ostream* out) { *out << impl.name; }

class GpuVectorAddTest : public ::testing::TestWithParam<GpuVectorAdd> {
 protected:
  void SetUp() override {
    const std::string reason = gpu_unavailable_reason();
    if (!reason.empty()) GTEST_SKIP() << "no GPU: " << reason;
  }
};

TEST_P(GpuVectorAddTest, EveryElementIsTheExactSum) {
  for (std::size_t count : {std::size_t{1}, std::size_t{255}, std::size_t{1024}, std::size_t{1025},
                            std::size_t{4096 + 7}, (std::size_t{3} << 20) + 1}) {
    const std::vector<float> a = random_uniform(count, count), b = random_uniform(count, count + 1);
    std::vector<float> expected(count);
    for (std::size_t i = 0; i < count; ++i) expected[i] = a[i] + b[i];
    DeviceBuffer<float> da(count), db(count), dc(count + 1);  // one element past C: must stay poisoned
    CUDA_CHECK(cudaMemcpy(da.get(), a.data(), da.bytes(), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(db.get(), b.data(), db.bytes(), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemset(dc.get(), 0xFF, dc.bytes()));  // all-ones bytes: NaN
    GetParam().run(da.get(), db.get(), dc.get(), count);
    CUDA_CHECK(cudaDeviceSynchronize());
    std::vector<float> c(count + 1);
    CUDA_CHECK(cudaMemcpy(c.data(), dc.get(), dc.bytes(), cudaMemcpyDeviceToHost));
    const Verification v = verify_exact(c.data(), expected.data(), count);
    EXPECT_TRUE(v.passed()) << GetParam().name << " at " << count << ": " << v.describe();
    EXPECT_TRUE(std::isnan(c[count])) << GetParam().name << " wrote past the end at " << count;
  }
}

TEST_P(GpuVectorAddTest, NothingToAddIsNoLaunch) {
  GetParam().run(nullptr, nullptr, nullptr, 0);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
}

class GpuEntryTest : public ::testing::TestWithParam<Mode> {
 protected:
  void SetUp() override {
    const std::string reason = gpu_unavailable_reason();
    if (!reason.empty()) GTEST_SKIP() << "no GPU: " << reason;
  }
};

// The entry's first call lands the exact sum on the host, a later call repeats it, and the link traffic
// is the transfer modes' alone.
TEST_P(GpuEntryTest, FirstCallIsCheckedAndCopiesAreCounted) {
  const std::size_t count = (std::size_t{1} << 20) + 5;
  const std::vector<float> a = random_uniform(count, 3), b = random_uniform(count, 4);
  std::vector<float> expected(count);
  for (std::size_t i = 0; i < count; ++i) expected[i] = a[i] + b[i];
  const std::string mode = mode_name(GetParam());
  const auto add = [count](const std::vector<const float*>& in, float* c) {
    vector_add_kernel(in[0], in[1], c, count);
  };
  GpuFp32Entry entry({&a, &b}, count, mode, add);
  const Verification first = verify_exact(entry.output(), expected.data(), count);
  EXPECT_TRUE(first.passed()) << mode << ": " << first.describe();
  entry.run_once();
  CUDA_CHECK(cudaDeviceSynchronize());
  if (copies_timed(mode)) EXPECT_TRUE(verify_exact(entry.output(), expected.data(), count).passed()) << mode;
  EXPECT_EQ(entry.counters.at("h2d_bytes"), copies_timed(mode) ? 8.0 * count : 0.0) << mode;
  EXPECT_EQ(entry.counters.at("d2h_bytes"), copies_timed(mode) ? 4.0 * count : 0.0) << mode;
}

INSTANTIATE_TEST_SUITE_P(Modes, GpuEntryTest,
                         ::testing::Values(Mode::resident, Mode::transfer_pinned, Mode::transfer_pageable),
                         [](const auto& info) { return std::string(mode_name(info.param)); });

INSTANTIATE_TEST_SUITE_P(Kernels, GpuVectorAddTest,
                         ::testing::Values(GpuVectorAdd{"kernel", vector_add_kernel},
                                           GpuVectorAdd{"one_block_kernel", vector_add_one_block}),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace gpubench
