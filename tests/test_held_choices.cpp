#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>

#include "harness/held_choices.hpp"

namespace gpubench {
namespace {

// A file of its own under the test's temporary folder, removed at the start and the end.
class HeldChoicesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = ::testing::TempDir() + "held_choices_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".tsv";
    std::remove(path_.c_str());
  }
  void TearDown() override { std::remove(path_.c_str()); }

  std::string read_all() const {
    std::ifstream in(path_);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  }

  std::string path_;
};

TEST_F(HeldChoicesTest, AMissingFileHoldsNothing) {
  HeldChoices choices;
  choices.open(path_);
  EXPECT_FALSE(choices.find("conv2d/cudnn_nchw/fp32/n:7/batch:1").has_value());
}

TEST_F(HeldChoicesTest, ALaterProcessTakesTheFirstChoice) {
  HeldChoices first;
  first.open(path_);
  first.record("conv2d/a/fp32/n:7/batch:1", "12 k2=3 k15=1");
  first.record("conv2d/a/fp32/n:7/batch:1", "9");  // held already: the first choice stays
  first.record("conv2d/b/tf32/n:56/batch:32", "57");
  EXPECT_EQ(read_all(), "conv2d/a/fp32/n:7/batch:1\t12 k2=3 k15=1\nconv2d/b/tf32/n:56/batch:32\t57\n");

  HeldChoices later;  // as the next trial's process opens the file
  later.open(path_);
  EXPECT_EQ(later.find("conv2d/a/fp32/n:7/batch:1").value_or(""), "12 k2=3 k15=1");
  EXPECT_EQ(later.find("conv2d/b/tf32/n:56/batch:32").value_or(""), "57");
  EXPECT_FALSE(later.find("conv2d/b/tf32/n:56/batch:1").has_value());
}

TEST_F(HeldChoicesTest, NoFileRecordsNothing) {
  HeldChoices choices;
  choices.open("");
  choices.record("key", "12");
  EXPECT_FALSE(choices.find("key").has_value());
}

TEST_F(HeldChoicesTest, RefusesADamagedFileAndTabsInAChoice) {
  std::ofstream(path_) << "conv2d/a/fp32/n:7/batch:1 12\n";  // a space, not a tab
  HeldChoices choices;
  EXPECT_THROW(choices.open(path_), std::runtime_error);
  std::remove(path_.c_str());
  choices.open(path_);
  EXPECT_THROW(choices.record("key", "12\t13"), std::invalid_argument);
  EXPECT_THROW(choices.record("key\nother", "12"), std::invalid_argument);
}

}  // namespace
}  // namespace gpubench
