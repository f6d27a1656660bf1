// The vector_add study's CPU baselines: every element of C the exact FP32 sum, at sizes that leave
// remainders past any vector width and thread share, and no element outside C written.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "core/random.hpp"
#include "core/verify.hpp"
#include "vector_add_cpu.hpp"

namespace gpubench {
namespace {

struct CpuVectorAdd {
  const char* name;
  VectorAddFn run;
};
void PrintTo(const CpuVectorAdd& impl, std::ostream* out) { *out << impl.name; }

class CpuVectorAddTest : public ::testing::TestWithParam<CpuVectorAdd> {};

TEST_P(CpuVectorAddTest, EveryElementIsTheExactSum) {
  for (std::size_t count : {std::size_t{1}, std::size_t{31}, std::size_t{1000}, (std::size_t{1} << 20) + 3}) {
    const std::vector<float> a = random_uniform(count, count), b = random_uniform(count, count + 1);
    std::vector<float> expected(count), c(count + 1, std::numeric_limits<float>::quiet_NaN());
    for (std::size_t i = 0; i < count; ++i) expected[i] = a[i] + b[i];
    GetParam().run(a.data(), b.data(), c.data(), count);
    const Verification v = verify_exact(c.data(), expected.data(), count);
    EXPECT_TRUE(v.passed()) << GetParam().name << " at " << count << ": " << v.describe();
    EXPECT_TRUE(std::isnan(c[count])) << GetParam().name << " wrote past the end at " << count;
  }
}

INSTANTIATE_TEST_SUITE_P(Baselines, CpuVectorAddTest,
                         ::testing::Values(CpuVectorAdd{"loop_1thread", vector_add_loop},
                                           CpuVectorAdd{"loop_all_threads", vector_add_parallel}),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace gpubench
