// The GPU entry of a study whose call reads FP32 inputs and writes one FP32 output, in the
// modes every such study has (Mode):
//   resident           inputs copied to the device once, untimed; the timed call is the compute alone
//   transfer_pinned    each call copies the inputs in, computes and copies the output out, from and to
//                      cudaMallocHost memory
//   transfer_pageable  the same from the problem's own (written) vectors and into a written vector
// The GPU counterpart of ThreadPlacedCpuEntry (cpu_entry.hpp).
#pragma once

#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/gpu_runtime.hpp"
#include "harness/study.hpp"

namespace gpubench {

// Checks that the device holds inputs and output before allocating them, makes the first call
// on poisoned outputs (all-ones bytes are NaN, on the device and on the host) and brings its
// output to the host for the study to check with `output()`. Link traffic is reported for the
// transfer modes; the study reports the rest (memory traffic, flop, the verdict).
class GpuFp32Entry : public PreparedEntry {
 public:
  using Call = std::function<void(const std::vector<const float*>& inputs, float* output)>;  // device pointers
  GpuFp32Entry(const std::vector<const std::vector<float>*>& inputs, std::size_t output_elements,
               const std::string& mode, Call call);
  void run_once() override;
  const float* output() const { return host_output_; }

 private:
  bool copies_;
  std::deque<DeviceBuffer<float>> device_inputs_;  // a deque: built in place, never moved
  std::vector<const float*> device_input_pointers_;
  std::unique_ptr<DeviceBuffer<float>> device_output_;
  std::vector<const float*> host_inputs_;
  std::deque<PinnedBuffer<float>> pinned_inputs_;
  std::unique_ptr<PinnedBuffer<float>> pinned_output_;
  std::vector<float> pageable_output_;
  float* host_output_ = nullptr;
  Call call_;
};

}  // namespace gpubench
