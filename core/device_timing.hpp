// Device-side instruments of the timed loop: a blocking kernel that holds the default stream
// while the host enqueues the timed calls behind it (so their device time excludes launch
// latency, as nvbench's blocking kernel does), and an L2 flush for cold-cache samples.
#pragma once

#include <cstddef>

namespace gpubench {

class StreamHold {
 public:
  StreamHold();
  ~StreamHold();
  StreamHold(const StreamHold&) = delete;
  StreamHold& operator=(const StreamHold&) = delete;

  // Enqueues the blocking kernel on the default stream; it spins until `release` or its timeout.
  void hold();
  void release();
  // After the held work completed: whether the kernel gave up waiting (the host took longer than
  // the timeout to enqueue, or a call waited for the device itself): the sample is not held.
  bool timed_out() const;

 private:
  volatile int* release_flag_ = nullptr;  // mapped pinned memory the kernel polls
  volatile int* timed_out_flag_ = nullptr;
};

// Evicts the L2 cache by writing a buffer twice its size on the default stream.
class L2Flush {
 public:
  L2Flush();
  ~L2Flush();
  L2Flush(const L2Flush&) = delete;
  L2Flush& operator=(const L2Flush&) = delete;

  void flush();
  std::size_t l2_bytes() const { return l2_bytes_; }

 private:
  std::size_t l2_bytes_ = 0;
  void* buffer_ = nullptr;
  int value_ = 0;
};

}  // namespace gpubench
