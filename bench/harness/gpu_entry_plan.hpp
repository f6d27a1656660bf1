// What a GPU entry (gpu_entry.hpp) holds and copies, from its mode and its buffers' sizes: the part
// of the entry that needs no GPU, so that it is tested everywhere (tests/test_gpu_entry_plan.cpp).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace gpubench {

struct GpuEntryPlan {
  bool copies_timed = false;  // transfer modes: every call copies the inputs in and the output out
  bool pinned_host = false;   // transfer_pinned: the host side is cudaMallocHost memory
  std::vector<std::size_t> input_bytes;
  std::size_t output_bytes = 0;

  double total_input_bytes() const;
  // Device memory the entry's buffers take: each input and the output once.
  double device_bytes() const { return total_input_bytes() + static_cast<double>(output_bytes); }
  // Link traffic of one call: the transfer modes' copies, nothing for resident.
  double h2d_bytes() const { return copies_timed ? total_input_bytes() : 0.0; }
  double d2h_bytes() const { return copies_timed ? static_cast<double>(output_bytes) : 0.0; }
};

// Throws std::invalid_argument for a mode other than resident, transfer_pinned or transfer_pageable.
GpuEntryPlan plan_gpu_entry(const std::string& mode, std::vector<std::size_t> input_bytes, std::size_t output_bytes);

}  // namespace gpubench
