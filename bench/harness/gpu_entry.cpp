#include "harness/gpu_entry.hpp"

#include <algorithm>
#include <limits>
#include <utility>

namespace gpubench {

GpuFp32Entry::GpuFp32Entry(const std::vector<const std::vector<float>*>& inputs, std::size_t output_elements,
                           const std::string& mode, Call call)
    : copies_(copies_timed(mode)), call_(std::move(call)) {
  double device_bytes = 4.0 * output_elements;
  for (const std::vector<float>* input : inputs) device_bytes += 4.0 * input->size();
  require_device_memory(device_bytes);
  double input_bytes = 0;
  for (const std::vector<float>* input : inputs) {
    device_inputs_.emplace_back(input->size());
    device_input_pointers_.push_back(device_inputs_.back().get());
    input_bytes += static_cast<double>(device_inputs_.back().bytes());
    if (copies_from_pinned(mode)) {
      pinned_inputs_.emplace_back(input->size());
      std::copy(input->begin(), input->end(), pinned_inputs_.back().get());
      host_inputs_.push_back(pinned_inputs_.back().get());
    } else {
      host_inputs_.push_back(input->data());
    }
  }
  device_output_ = std::make_unique<DeviceBuffer<float>>(output_elements);
  if (copies_from_pinned(mode)) {
    pinned_output_ = std::make_unique<PinnedBuffer<float>>(output_elements);
    host_output_ = pinned_output_->get();
  } else {
    pageable_output_.resize(output_elements);  // written: every page mapped before a copy lands in it
    host_output_ = pageable_output_.data();
  }
  if (!copies_) {
    for (std::size_t k = 0; k < device_inputs_.size(); ++k)
      CUDA_CHECK(cudaMemcpy(device_inputs_[k].get(), host_inputs_[k], device_inputs_[k].bytes(),
                            cudaMemcpyHostToDevice));
  }
  CUDA_CHECK(cudaMemset(device_output_->get(), 0xFF, device_output_->bytes()));
  std::fill(host_output_, host_output_ + output_elements, std::numeric_limits<float>::quiet_NaN());
  run_once();
  CUDA_CHECK(cudaDeviceSynchronize());
  if (!copies_)
    CUDA_CHECK(cudaMemcpy(host_output_, device_output_->get(), device_output_->bytes(), cudaMemcpyDeviceToHost));
  if (copies_) add_link_traffic(input_bytes, static_cast<double>(device_output_->bytes()));
}

void GpuFp32Entry::run_once() {
  if (copies_) {
    for (std::size_t k = 0; k < device_inputs_.size(); ++k)
      CUDA_CHECK(cudaMemcpyAsync(device_inputs_[k].get(), host_inputs_[k], device_inputs_[k].bytes(),
                                 cudaMemcpyHostToDevice, 0));
  }
  call_(device_input_pointers_, device_output_->get());
  if (copies_)
    CUDA_CHECK(cudaMemcpyAsync(host_output_, device_output_->get(), device_output_->bytes(), cudaMemcpyDeviceToHost,
                               0));
}

}  // namespace gpubench
