#include "harness/gpu_entry.hpp"

#include <cstring>

namespace gpubench {

namespace {

std::vector<std::size_t> sizes_of(const std::vector<GpuBufferEntry::HostInput>& inputs) {
  std::vector<std::size_t> bytes;
  for (const GpuBufferEntry::HostInput& input : inputs) bytes.push_back(input.bytes);
  return bytes;
}

}  // namespace

GpuBufferEntry::GpuBufferEntry(const std::vector<HostInput>& inputs, std::size_t output_bytes, const std::string& mode)
    : plan_(plan_gpu_entry(mode, sizes_of(inputs), output_bytes)) {
  const double free_before = require_device_memory(plan_.device_bytes());
  for (const HostInput& input : inputs) {
    device_inputs_.emplace_back(input.bytes);
    device_input_pointers_.push_back(device_inputs_.back().get());
  }
  device_output_ = std::make_unique<DeviceBuffer<unsigned char>>(output_bytes);
  device_bytes_taken_ = free_before - static_cast<double>(device_free_bytes());
  for (const HostInput& input : inputs) {
    if (plan_.pinned_host) {
      pinned_inputs_.emplace_back(input.bytes);
      std::memcpy(pinned_inputs_.back().get(), input.data, input.bytes);
      host_inputs_.push_back(pinned_inputs_.back().get());
    } else {
      host_inputs_.push_back(input.data);
    }
  }
  if (plan_.pinned_host) {
    pinned_output_ = std::make_unique<PinnedBuffer<unsigned char>>(output_bytes);
    host_output_ = pinned_output_->get();
  } else {
    pageable_output_.resize(output_bytes);  // written: every page mapped before a copy lands in it
    host_output_ = pageable_output_.data();
  }
  if (!plan_.copies_timed) {
    for (std::size_t k = 0; k < device_inputs_.size(); ++k)
      CUDA_CHECK(cudaMemcpy(device_inputs_[k].get(), host_inputs_[k], device_inputs_[k].bytes(),
                            cudaMemcpyHostToDevice));
  }
}

void GpuBufferEntry::first_call() {
  CUDA_CHECK(cudaMemset(device_output_->get(), 0xFF, device_output_->bytes()));
  std::memset(host_output_, 0xFF, device_output_->bytes());
  run_once();
  CUDA_CHECK(cudaDeviceSynchronize());
  if (!plan_.copies_timed)
    CUDA_CHECK(cudaMemcpy(host_output_, device_output_->get(), device_output_->bytes(), cudaMemcpyDeviceToHost));
  add_link_traffic(plan_.h2d_bytes(), plan_.d2h_bytes());
}

void GpuBufferEntry::run_once() {
  if (plan_.copies_timed) {
    for (std::size_t k = 0; k < device_inputs_.size(); ++k)
      CUDA_CHECK(cudaMemcpyAsync(device_inputs_[k].get(), host_inputs_[k], device_inputs_[k].bytes(),
                                 cudaMemcpyHostToDevice, 0));
  }
  compute();
  if (plan_.copies_timed)
    CUDA_CHECK(cudaMemcpyAsync(host_output_, device_output_->get(), device_output_->bytes(), cudaMemcpyDeviceToHost,
                               0));
}

}  // namespace gpubench
