// The primitives study's GPU libraries: Thrust (thrust::device), Thrust through its caching
// allocator and CUB's device API compute every primitive exactly on random inputs of odd sizes; the
// cache and CUB's workspace stop allocating once filled; and what the study explains its timings
// with holds: CUB's calls do not wait for the device, Thrust's do. Without a usable GPU every test
// reports itself skipped.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <numeric>
#include <ostream>
#include <string>
#include <vector>

#include "core/device_timing.hpp"
#include "core/gpu_runtime.hpp"
#include "core/host_memory.hpp"
#include "core/primitives_check.hpp"
#include "core/system.hpp"
#include "primitives_cub.cuh"
#include "primitives_thrust.cuh"

namespace gpubench {
namespace {

template <typename T>
std::vector<T> random_words(std::size_t n, std::uint64_t seed) {
  std::vector<T> words(n);
  fill_random_bytes(reinterpret_cast<std::uint8_t*>(words.data()), n * sizeof(T), seed);
  return words;
}

template <typename T>
std::unique_ptr<DeviceBuffer<T>> on_device(const std::vector<T>& values) {
  auto buffer = std::make_unique<DeviceBuffer<T>>(values.size());
  CUDA_CHECK(cudaMemcpy(buffer->get(), values.data(), buffer->bytes(), cudaMemcpyHostToDevice));
  return buffer;
}

template <typename T>
std::vector<T> on_host(const DeviceBuffer<T>& buffer, std::size_t n) {
  std::vector<T> values(n);
  CUDA_CHECK(cudaMemcpy(values.data(), buffer.get(), n * sizeof(T), cudaMemcpyDeviceToHost));
  return values;
}

struct Library {
  const char* name;
  PrimitiveFunctions (*functions)();
  void (*release)();
};

void PrintTo(const Library& library, std::ostream* out) { *out << library.name; }  // the test's name, not bytes

class GpuPrimitivesTest : public ::testing::TestWithParam<Library> {
 protected:
  void SetUp() override {
    const std::string reason = gpu_unavailable_reason();
    if (!reason.empty()) GTEST_SKIP() << "no GPU: " << reason;
  }
  void TearDown() override {
    if (GetParam().release) GetParam().release();
  }
};

// Every primitive the library has, on random inputs of n elements in device memory, each output
// checked on the host.
void expect_primitives_right(const PrimitiveFunctions& f, std::size_t n) {
  SCOPED_TRACE("n = " + std::to_string(n));
  const auto values = random_words<std::uint32_t>(n, n);
  const auto device_values = on_device(values);
  PinnedBuffer<std::uint32_t> sum(1);
  *sum.get() = ~wrapping_sum(values.data(), n);
  f.reduce(device_values->get(), n, sum.get());
  CUDA_CHECK(cudaDeviceSynchronize());
  EXPECT_EQ(check_sum(*sum.get(), wrapping_sum(values.data(), n)), "");

  DeviceBuffer<std::uint32_t> scanned(n);
  CUDA_CHECK(cudaMemset(scanned.get(), 0xFF, scanned.bytes()));
  f.inclusive_scan(device_values->get(), scanned.get(), n);
  EXPECT_EQ(check_inclusive_scan(values.data(), on_host(scanned, n).data(), n), "");

  const auto reference = sorted_keys(values);
  auto keys = on_device(values);
  f.sort_u32(keys->get(), n);
  EXPECT_EQ(check_sorted(on_host(*keys, n).data(), reference), "");

  keys = on_device(values);
  std::vector<std::uint32_t> positions(n);
  std::iota(positions.begin(), positions.end(), 0u);
  const auto pair_values = on_device(positions);
  f.sort_pairs(keys->get(), pair_values->get(), n);
  EXPECT_EQ(check_sorted_pairs(values.data(), reference, on_host(*keys, n).data(), on_host(*pair_values, n).data()),
            "");

  const auto wide = random_words<std::uint64_t>(n, n + 1);
  const auto wide_keys = on_device(wide);
  f.sort_u64(wide_keys->get(), n);
  EXPECT_EQ(check_sorted(on_host(*wide_keys, n).data(), sorted_keys(wide)), "");

  if (!f.transform) return;
  std::vector<float> x(n);
  for (std::size_t i = 0; i < n; ++i) x[i] = static_cast<float>(values[i] >> 8) * 0x1p-23f - 1.0f;
  const auto device_x = on_device(x);
  DeviceBuffer<float> y(n);
  CUDA_CHECK(cudaMemset(y.get(), 0xFF, y.bytes()));
  f.transform(device_x->get(), y.get(), n, 1.3f, -0.25f);
  EXPECT_EQ(check_affine_transform(x.data(), on_host(y, n).data(), n, 1.3f, -0.25f), "");
}

TEST_P(GpuPrimitivesTest, EveryPrimitiveIsExact) {
  for (std::size_t n : {std::size_t{1}, std::size_t{1000}, std::size_t{65537}, (std::size_t{1} << 20) + 3})
    expect_primitives_right(GetParam().functions(), n);
}

INSTANTIATE_TEST_SUITE_P(Libraries, GpuPrimitivesTest,
                         ::testing::Values(Library{"thrust", thrust_primitives, nullptr},
                                           Library{"thrust_cached", thrust_cached_primitives, thrust_cache_release},
                                           Library{"cub", cub_primitives, cub_workspace_release}),
                         [](const ::testing::TestParamInfo<Library>& info) { return info.param.name; });

class GpuPrimitiveStorageTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string reason = gpu_unavailable_reason();
    if (!reason.empty()) GTEST_SKIP() << "no GPU: " << reason;
    thrust_cache_release();  // counting from zero
    cub_workspace_release();
  }
  void TearDown() override {
    thrust_cache_release();
    cub_workspace_release();
  }
};

// A second sort of the same size asks for the same storage and gets it without cudaMalloc.
template <typename Use>
void expect_second_call_reuses(const PrimitiveFunctions& f, Use use) {
  const std::size_t n = 1 << 20;
  const auto keys = on_device(random_words<std::uint32_t>(n, 5));
  f.sort_u32(keys->get(), n);
  CUDA_CHECK(cudaDeviceSynchronize());
  const TemporaryStorageUse first = use();
  EXPECT_GE(first.requests, 1);
  EXPECT_GE(first.bytes_requested, 4.0 * n);  // a radix sort's second buffer at least
  EXPECT_GE(first.device_allocations, 1);
  f.sort_u32(keys->get(), n);
  CUDA_CHECK(cudaDeviceSynchronize());
  const TemporaryStorageUse second = use();
  EXPECT_EQ(second.requests, 2 * first.requests);
  EXPECT_DOUBLE_EQ(second.bytes_requested, 2 * first.bytes_requested);
  EXPECT_EQ(second.device_allocations, first.device_allocations);
}

TEST_F(GpuPrimitiveStorageTest, ThrustCacheStopsAllocatingOnceFilled) {
  expect_second_call_reuses(thrust_cached_primitives(), thrust_cache_use);
  thrust_cache_release();
  EXPECT_EQ(thrust_cache_use().requests, 0);
}

TEST_F(GpuPrimitiveStorageTest, CubWorkspaceStopsAllocatingOnceGrown) {
  expect_second_call_reuses(cub_primitives(), cub_workspace_use);
  cub_workspace_release();
  EXPECT_EQ(cub_workspace_use().device_allocations, 0);
}

// Whether `call` waits for the device: it is issued behind a kernel that holds the default stream
// until released or 20 ms pass; a call that waits can only return once the hold has timed out.
template <typename Call>
bool waits_for_device(Call call) {
  StreamHold hold;
  call();  // once before: storage allocated, modules loaded
  CUDA_CHECK(cudaDeviceSynchronize());
  hold.hold();
  call();
  hold.release();
  CUDA_CHECK(cudaDeviceSynchronize());
  return hold.timed_out();
}

TEST_F(GpuPrimitiveStorageTest, CubCallsDoNotWaitThrustCallsDo) {
  const std::size_t n = 1 << 16;
  const auto values = on_device(random_words<std::uint32_t>(n, 6));
  DeviceBuffer<std::uint32_t> out(n);
  PinnedBuffer<std::uint32_t> sum(1);
  const PrimitiveFunctions cub = cub_primitives(), thrust = thrust_primitives(), cached = thrust_cached_primitives();
  EXPECT_FALSE(waits_for_device([&] { cub.reduce(values->get(), n, sum.get()); }));
  EXPECT_FALSE(waits_for_device([&] { cub.inclusive_scan(values->get(), out.get(), n); }));
  EXPECT_FALSE(waits_for_device([&] { cub.sort_u32(out.get(), n); }));
  // reduce returns its sum to the host; the others synchronise before returning.
  EXPECT_TRUE(waits_for_device([&] { thrust.reduce(values->get(), n, sum.get()); }));
  EXPECT_TRUE(waits_for_device([&] { cached.reduce(values->get(), n, sum.get()); }));
  EXPECT_TRUE(waits_for_device([&] { thrust.inclusive_scan(values->get(), out.get(), n); }));
  EXPECT_TRUE(waits_for_device([&] { cached.inclusive_scan(values->get(), out.get(), n); }));
}

}  // namespace
}  // namespace gpubench
