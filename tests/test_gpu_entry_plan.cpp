// The GPU entry's plan (harness/gpu_entry_plan.hpp): what each mode copies and where its host side lives,
// and the bytes it allocates and moves. The entry itself needs a GPU (test_gpu_vector_add.cpp).
#include "harness/gpu_entry_plan.hpp"

#include <gtest/gtest.h>

#include <stdexcept>

#include "harness/study.hpp"

namespace gpubench {
namespace {

TEST(GpuEntryPlan, ResidentCopiesNothingInItsCalls) {
  const GpuEntryPlan plan = plan_gpu_entry(mode_name(Mode::resident), {4000, 2000}, 300);
  EXPECT_FALSE(plan.copies_timed);
  EXPECT_FALSE(plan.pinned_host);
  EXPECT_EQ(plan.device_bytes(), 6300.0);
  EXPECT_EQ(plan.h2d_bytes(), 0.0);
  EXPECT_EQ(plan.d2h_bytes(), 0.0);
}

TEST(GpuEntryPlan, TransferModesCopyEveryInputInAndTheOutputOut) {
  for (const Mode mode : {Mode::transfer_pinned, Mode::transfer_pageable}) {
    const GpuEntryPlan plan = plan_gpu_entry(mode_name(mode), {4000, 2000}, 300);
    EXPECT_TRUE(plan.copies_timed) << mode_name(mode);
    EXPECT_EQ(plan.pinned_host, mode == Mode::transfer_pinned) << mode_name(mode);
    EXPECT_EQ(plan.device_bytes(), 6300.0) << mode_name(mode);
    EXPECT_EQ(plan.h2d_bytes(), 6000.0) << mode_name(mode);
    EXPECT_EQ(plan.d2h_bytes(), 300.0) << mode_name(mode);
  }
}

TEST(GpuEntryPlan, AnOutputOnlyEntryCopiesOnlyItsOutput) {
  const GpuEntryPlan plan = plan_gpu_entry(mode_name(Mode::transfer_pageable), {}, 512);
  EXPECT_EQ(plan.device_bytes(), 512.0);
  EXPECT_EQ(plan.h2d_bytes(), 0.0);
  EXPECT_EQ(plan.d2h_bytes(), 512.0);
}

TEST(GpuEntryPlan, RefusesModesThatAreNotAGpuEntrys) {
  EXPECT_THROW(plan_gpu_entry(mode_name(Mode::host), {4}, 4), std::invalid_argument);
  EXPECT_THROW(plan_gpu_entry("pinned", {4}, 4), std::invalid_argument);
}

}  // namespace
}  // namespace gpubench
