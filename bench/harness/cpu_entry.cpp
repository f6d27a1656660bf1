#include "harness/cpu_entry.hpp"

#include <limits>
#include <utility>

namespace gpubench {

ThreadPlacedCpuEntry::ThreadPlacedCpuEntry(const std::vector<const std::vector<float>*>& inputs,
                                           std::size_t output_elements, Call call)
    : output_(output_elements, std::numeric_limits<float>::quiet_NaN()), call_(std::move(call)) {
  for (const std::vector<float>* input : inputs) {
    inputs_.emplace_back(*input);
    input_pointers_.push_back(inputs_.back().data());
  }
  run_once();
}

}  // namespace gpubench
