// The CPU entry of a study whose call reads inputs of one element type and writes one output of it.
#pragma once

#include <cstddef>
#include <cstdint>
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
// `output()`. `threads` (0: all OpenMP threads) place the pages: the implementation's own.
// T: float, double, std::uint16_t (FP16 bits): all-ones bytes are a NaN in each; or std::uint8_t
// (bytes of counts: all-ones is above any limit the study checks against).
template <typename T>
class ThreadPlacedEntry : public PreparedEntry {
 public:
  using Call = std::function<void(const std::vector<const T*>& inputs, T* output)>;
  ThreadPlacedEntry(const std::vector<const std::vector<T>*>& inputs, std::size_t output_elements, Call call,
                    int threads = 0);
  void run_once() override { call_(input_pointers_, output_.data()); }
  const T* output() const { return output_.data(); }

 private:
  std::deque<ThreadPlacedArray<T>> inputs_;  // a deque: built in place, never moved
  std::vector<const T*> input_pointers_;
  ThreadPlacedArray<T> output_;
  Call call_;
};

using ThreadPlacedCpuEntry = ThreadPlacedEntry<float>;
extern template class ThreadPlacedEntry<float>;
extern template class ThreadPlacedEntry<double>;
extern template class ThreadPlacedEntry<std::uint16_t>;
extern template class ThreadPlacedEntry<std::uint8_t>;

}  // namespace gpubench
