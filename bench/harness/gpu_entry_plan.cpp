#include "harness/gpu_entry_plan.hpp"

#include <numeric>
#include <stdexcept>
#include <utility>

#include "harness/study.hpp"

namespace gpubench {

double GpuEntryPlan::total_input_bytes() const {
  return std::accumulate(input_bytes.begin(), input_bytes.end(), 0.0,
                         [](double sum, std::size_t bytes) { return sum + static_cast<double>(bytes); });
}

GpuEntryPlan plan_gpu_entry(const std::string& mode, std::vector<std::size_t> input_bytes, std::size_t output_bytes) {
  if (mode != mode_name(Mode::resident) && !copies_timed(mode))
    throw std::invalid_argument("a GPU entry runs resident, transfer_pinned or transfer_pageable, not '" + mode + "'");
  GpuEntryPlan plan;
  plan.copies_timed = copies_timed(mode);
  plan.pinned_host = copies_from_pinned(mode);
  plan.input_bytes = std::move(input_bytes);
  plan.output_bytes = output_bytes;
  return plan;
}

}  // namespace gpubench
