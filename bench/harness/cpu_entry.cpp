#include "harness/cpu_entry.hpp"

#include <cstring>
#include <utility>

namespace gpubench {
namespace {

template <typename T>
T poison() {
  T value;
  std::memset(&value, 0xFF, sizeof value);  // a NaN in every IEEE format
  return value;
}

}  // namespace

template <typename T>
ThreadPlacedEntry<T>::ThreadPlacedEntry(const std::vector<const std::vector<T>*>& inputs, std::size_t output_elements,
                                        Call call, int threads)
    : output_(output_elements, poison<T>(), threads), call_(std::move(call)) {
  for (const std::vector<T>* input : inputs) {
    inputs_.emplace_back(*input, threads);
    input_pointers_.push_back(inputs_.back().data());
  }
  run_once();
}

template class ThreadPlacedEntry<float>;
template class ThreadPlacedEntry<double>;
template class ThreadPlacedEntry<std::uint16_t>;
template class ThreadPlacedEntry<std::uint8_t>;

}  // namespace gpubench
