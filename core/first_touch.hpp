// Host arrays whose pages are first written by the OpenMP threads that compute on them. Linux
// places a page on the NUMA node of the thread that first writes it, so an array written by
// one thread (a std::vector's zero fill, a copy on the main thread) lives on that thread's
// node and the threads of the other sockets read it across the interconnect; on one socket
// it costs nothing. The CPU entries of every study hold their inputs and outputs in these.
#pragma once

#include <omp.h>

#include <cstddef>
#include <memory>
#include <type_traits>
#include <vector>

#include "core/host_memory.hpp"

namespace gpubench {

// `count` elements of a fresh mapping (no page touched before), written once here by all
// OpenMP threads in the split of `schedule(static)` over the elements: each thread writes one
// contiguous share, in thread order. A loop of the same schedule over the rows of a
// row-major matrix (or the items of a batch) gives each thread the rows whose pages it
// placed, to within a page; for a library with its own threads (OpenBLAS) the pages are at
// least spread over the threads rather than all on one. `threads` (0: all of them) writes
// with that many threads instead: an implementation on one thread computes on pages its own
// thread placed.
template <typename T>
class ThreadPlacedArray {
  static_assert(std::is_trivially_copyable_v<T>, "filled and copied as plain memory");

 public:
  ThreadPlacedArray(std::size_t count, T value, int threads = 0) : memory_(bytes_for(count)), count_(count) {
    T* out = data();
#pragma omp parallel for schedule(static) num_threads(writers(threads))
    for (std::size_t i = 0; i < count; ++i) out[i] = value;
  }
  explicit ThreadPlacedArray(const std::vector<T>& source, int threads = 0)
      : memory_(bytes_for(source.size())), count_(source.size()) {
    const T* in = source.data();
    T* out = data();
#pragma omp parallel for schedule(static) num_threads(writers(threads))
    for (std::size_t i = 0; i < count_; ++i) out[i] = in[i];
  }

  T* data() { return reinterpret_cast<T*>(memory_.get()); }
  const T* data() const { return reinterpret_cast<const T*>(memory_.get()); }
  std::size_t size() const { return count_; }

 private:
  static std::size_t bytes_for(std::size_t count) { return count ? count * sizeof(T) : 1; }  // mmap takes no 0
  static int writers(int threads) { return threads > 0 ? threads : omp_get_max_threads(); }

  MappedHostBuffer memory_;
  std::size_t count_;
};

// A work buffer of at least `count` elements kept in `buffer` across calls and replaced (by a
// thread-placed, zeroed one) only when too small: a timed call neither allocates nor takes
// first-touch page faults once the first call has grown it.
template <typename T>
T* grown(std::unique_ptr<ThreadPlacedArray<T>>& buffer, std::size_t count) {
  if (!buffer || buffer->size() < count) {
    buffer.reset();  // the old one goes first
    buffer = std::make_unique<ThreadPlacedArray<T>>(count, T{});
  }
  return buffer->data();
}

}  // namespace gpubench
