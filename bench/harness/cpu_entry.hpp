// The CPU entry of a study whose call reads FP32 inputs and writes one FP32 output.
#pragma once

#include <cstddef>
#include <deque>
#include <functional>
#include <vector>

#include "core/first_touch.hpp"
#include "harness/study.hpp"

namespace gpubench {

// Holds its own copies of the problem's inputs and its output, each first written by the
// OpenMP threads (core/first_touch.hpp): the problem's vectors, shared with the GPU entries,
// were written by one thread. The output is poisoned with NaN (an element the call never
// writes fails the check) and the first call is made here, for the study to check with
// `output()`.
class ThreadPlacedCpuEntry : public PreparedEntry {
 public:
  using Call = std::function<void(const std::vector<const float*>& inputs, float* output)>;
  ThreadPlacedCpuEntry(const std::vector<const std::vector<float>*>& inputs, std::size_t output_elements, Call call);
  void run_once() override { call_(input_pointers_, output_.data()); }
  const float* output() const { return output_.data(); }

 private:
  std::deque<ThreadPlacedArray<float>> inputs_;  // a deque: built in place, never moved
  std::vector<const float*> input_pointers_;
  ThreadPlacedArray<float> output_;
  Call call_;
};

}  // namespace gpubench
