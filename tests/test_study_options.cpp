#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "harness/study_options.hpp"

namespace gpubench {
namespace {

StudyOptions parse(std::vector<std::string> args, std::vector<std::string>* left = nullptr) {
  args.insert(args.begin(), "study");
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  int argc = static_cast<int>(args.size());
  StudyOptions options = parse_study_options(&argc, argv.data());
  if (left) left->assign(argv.begin() + 1, argv.begin() + argc);
  return options;
}

TEST(StudyOptions, ParsesSizesImplsModesCaps) {
  std::vector<std::string> left;
  const StudyOptions o = parse({"--sizes=64,200,8192", "--benchmark_repetitions=3", "--impls=cublas,openblas",
                                "--modes=resident", "--caps=naive_loop=0,blocked_loop=2048", "--cpu-only"},
                               &left);
  EXPECT_EQ(o.sizes, (std::vector<int>{64, 200, 8192}));
  EXPECT_EQ(o.impls, (std::vector<std::string>{"cublas", "openblas"}));
  EXPECT_EQ(o.modes, (std::vector<std::string>{"resident"}));
  EXPECT_EQ(o.caps.at("naive_loop"), 0);
  EXPECT_EQ(o.caps.at("blocked_loop"), 2048);
  EXPECT_TRUE(o.cpu_only);
  EXPECT_EQ(left, (std::vector<std::string>{"--benchmark_repetitions=3"}));  // passed on to Google Benchmark
}

TEST(StudyOptions, RejectsBadSizes) {
  for (const char* bad : {"abc", "0", "-5", "64,,128", "64,", "", "99999999999", "12x"}) {
    EXPECT_THROW(parse_sizes(bad), UsageError) << bad;
  }
}

TEST(StudyOptions, SizesTakeBinarySuffixes) {
  EXPECT_EQ(parse_sizes("4KiB,4K,64MiB,1GiB,1G,100"),
            (std::vector<int>{4096, 4096, 64 << 20, 1 << 30, 1 << 30, 100}));
  for (const char* bad : {"KiB", "4kib", "4KB", "2GiB", "0KiB", "-1K", "1.5MiB", "4 KiB"}) {
    EXPECT_THROW(parse_sizes(bad), UsageError) << bad;
  }
}

TEST(StudyOptions, TakesAHeldChoicesFile) {
  EXPECT_EQ(parse({"--held-choices=/tmp/run/held_choices.tsv"}).held_choices, "/tmp/run/held_choices.tsv");
  EXPECT_EQ(parse({}).held_choices, "");
  EXPECT_THROW(parse({"--held-choices="}), UsageError);
}

TEST(StudyOptions, TakesAnArtifactsDirectory) {
  EXPECT_EQ(parse({"--artifacts-dir=/tmp/run"}).artifacts_dir, "/tmp/run");
  EXPECT_EQ(parse({}).artifacts_dir, "");
  EXPECT_THROW(parse({"--artifacts-dir="}), UsageError);
}

TEST(StudyOptions, RejectsUnknownFlagsAndBadCaps) {
  EXPECT_THROW(parse({"--size=64"}), UsageError);
  EXPECT_THROW(parse({"--caps=naive_loop"}), UsageError);
  EXPECT_THROW(parse({"--caps=naive_loop=-1"}), UsageError);
  EXPECT_THROW(parse({"--impls=,"}), UsageError);
}

}  // namespace
}  // namespace gpubench
