// The host memory kinds of the transfer study, checked for what they are: a fresh mapping
// has no page and reads as zeros, a written one is resident, the THP request is made on a
// huge-page boundary, and the random fill and comparison catch a changed byte.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "core/host_memory.hpp"
#include "core/system.hpp"
#include "host_memory_probes.hpp"

namespace gpubench {
namespace {

constexpr std::size_t kBytes = 8u << 20;

TEST(HostMemory, FreshMappingHasNoPagesAndReadsAsZeros) {
  MappedHostBuffer fresh(kBytes);
  EXPECT_EQ(resident_fraction(fresh.get(), kBytes), 0.0);
  EXPECT_TRUE(all_zero(fresh.get(), kBytes));  // reads map the shared zero page, nothing is written
  fresh.get()[kBytes / 2] = 1;
  EXPECT_FALSE(all_zero(fresh.get(), kBytes));
}

TEST(HostMemory, WrittenMappingIsResident) {
  MappedHostBuffer written(kBytes);
  fill_random_bytes(written.get(), kBytes, 7);
  EXPECT_EQ(resident_fraction(written.get(), kBytes), 1.0);
}

TEST(HostMemory, HugePageRequestIsAlignedAndAnswered) {
  MappedHostBuffer huge(kBytes, true);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(huge.get()) % kHugePageBytes, 0u);
  EXPECT_EQ(huge.advise_huge_pages(), "");
  fill_random_bytes(huge.get(), kBytes, 8);
  const double backed = huge_page_bytes(huge.get(), kBytes);
  ASSERT_GE(backed, 0.0);  // smaps was readable
  // Whether the kernel gives huge pages depends on its setting and free memory; it can be told.
  if (transparent_hugepage_setting() == "never") EXPECT_EQ(backed, 0.0);
  EXPECT_LE(backed, static_cast<double>(kBytes) + kHugePageBytes);
}

TEST(HostMemory, ParsesTheTransparentHugepageSetting) {
  EXPECT_EQ(parse_transparent_hugepage_setting("always [madvise] never\n"), "madvise");
  EXPECT_EQ(parse_transparent_hugepage_setting("[always] madvise never"), "always");
  EXPECT_EQ(parse_transparent_hugepage_setting(""), "unknown");
  EXPECT_EQ(parse_transparent_hugepage_setting("always madvise never"), "unknown");
}

TEST(HostMemory, RandomFillIsReproducibleAndComparisonFindsTheFirstChange) {
  std::vector<std::uint8_t> a(1000003), b(a.size());
  fill_random_bytes(a.data(), a.size(), 42);
  fill_random_bytes(b.data(), b.size(), 42);
  EXPECT_EQ(first_difference(a.data(), b.data(), a.size()), a.size());
  EXPECT_FALSE(all_zero(a.data(), a.size()));
  b[777777] ^= 0x10;
  b[900000] ^= 0x01;
  EXPECT_EQ(first_difference(a.data(), b.data(), a.size()), 777777u);
  fill_random_bytes(b.data(), b.size(), 43);
  EXPECT_LT(first_difference(a.data(), b.data(), a.size()), 16u);  // another seed differs at once
}

}  // namespace
}  // namespace gpubench

namespace gpubench {
namespace {

TEST(System, AMachineWithoutAnNvidiaDriverIsSaidToHaveNone) {
  if (std::ifstream("/proc/driver/nvidia/version")) GTEST_SKIP() << "an NVIDIA driver is loaded here";
  const std::string reason = gpu_unavailable_reason();
#if GPUBENCH_HAVE_CUDA
  EXPECT_EQ(reason, "no NVIDIA GPU driver is loaded on this machine (no GPU to measure)");
#else
  EXPECT_NE(reason.find("no GPU side"), std::string::npos) << reason;
#endif
}

}  // namespace
}  // namespace gpubench
