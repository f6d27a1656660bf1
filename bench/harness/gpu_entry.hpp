// The GPU entry of a study whose call reads inputs and writes one output, each a typed array, in
// the modes every such study has (Mode):
//   resident           inputs copied to the device once, untimed; the timed call is the compute alone
//   transfer_pinned    each call copies the inputs in, computes and copies the output out, from and to
//                      cudaMallocHost memory (copies of the problem's inputs made once, untimed)
//   transfer_pageable  the same from the problem's own (written) vectors and into a written vector
// The GPU counterpart of ThreadPlacedEntry (cpu_entry.hpp).
//
// What the harness guarantees, so that a study only hands it values and checks the answer:
// - the device memory for every input and the output is checked free before the first buffer is
//   allocated (require_device_memory: a skip, not a crash), and device_bytes_taken() says what the
//   buffers took;
// - the first call, made here, runs on poisoned outputs: all-ones bytes on the device and on the
//   host (NaN in every float format; a count that fails a check otherwise), so an element the call
//   never writes fails the check; the study checks it on the host with `output()` (after the
//   call's own copy in the transfer modes, after an untimed copy in resident);
// - run_once() enqueues on the default stream exactly the timed work: in the transfer modes the
//   inputs' copies in, the call, the output's copy out; in resident the call alone. No
//   synchronisation, allocation or other copy happens in it;
// - the transfer modes report their link traffic (h2d_bytes, d2h_bytes); the study reports the
//   rest (memory traffic, flop, the verdict).
#pragma once

#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/gpu_runtime.hpp"
#include "harness/gpu_entry_plan.hpp"
#include "harness/study.hpp"

namespace gpubench {

// The buffers, the copies and the first call, on untyped bytes; GpuEntry gives them their types.
class GpuBufferEntry : public PreparedEntry {
 public:
  struct HostInput {
    const void* data;
    std::size_t bytes;
  };
  void run_once() final;
  // Free device memory before the entry's buffers less free memory after them.
  double device_bytes_taken() const { return device_bytes_taken_; }

 protected:
  GpuBufferEntry(const std::vector<HostInput>& inputs, std::size_t output_bytes, const std::string& mode);
  // The call on the device buffers, as the study gave it: the derived constructor, once its call is
  // set, runs first_call().
  virtual void compute() = 0;
  void first_call();
  const std::vector<const void*>& device_inputs() const { return device_input_pointers_; }
  void* device_output() const { return device_output_->get(); }
  const void* host_output() const { return host_output_; }

 private:
  GpuEntryPlan plan_;
  double device_bytes_taken_ = 0;
  std::deque<DeviceBuffer<unsigned char>> device_inputs_;  // deques: built in place, never moved
  std::vector<const void*> device_input_pointers_;
  std::unique_ptr<DeviceBuffer<unsigned char>> device_output_;
  std::vector<const void*> host_inputs_;
  std::deque<PinnedBuffer<unsigned char>> pinned_inputs_;
  std::unique_ptr<PinnedBuffer<unsigned char>> pinned_output_;
  std::vector<unsigned char> pageable_output_;
  void* host_output_ = nullptr;
};

// Inputs of element type In (the problem's vectors), an output of `output_elements` of Out. The call
// gets device pointers; no inputs is an output-only entry.
template <typename In, typename Out = In>
class GpuEntry final : public GpuBufferEntry {
  static_assert(std::is_trivially_copyable_v<In> && std::is_trivially_copyable_v<Out>, "copied as bytes");

 public:
  using Call = std::function<void(const std::vector<const In*>& inputs, Out* output)>;
  GpuEntry(const std::vector<const std::vector<In>*>& inputs, std::size_t output_elements, const std::string& mode,
           Call call)
      : GpuBufferEntry(host_inputs(inputs), output_elements * sizeof(Out), mode), call_(std::move(call)),
        output_(static_cast<Out*>(device_output())) {
    for (const void* input : device_inputs()) inputs_.push_back(static_cast<const In*>(input));
    first_call();
  }
  // The first call's output on the host (and, in the transfer modes, the latest call's once it completed).
  const Out* output() const { return static_cast<const Out*>(host_output()); }

 private:
  static std::vector<HostInput> host_inputs(const std::vector<const std::vector<In>*>& inputs) {
    std::vector<HostInput> host;
    for (const std::vector<In>* input : inputs) host.push_back({input->data(), input->size() * sizeof(In)});
    return host;
  }
  void compute() override { call_(inputs_, output_); }

  Call call_;
  std::vector<const In*> inputs_;
  Out* output_;
};

using GpuFp32Entry = GpuEntry<float>;

}  // namespace gpubench
