// The matmul study: C = A*B in FP32, square sizes, every CPU baseline against every GPU
// implementation, and every GPU implementation in three modes:
//   resident           inputs already on the device; the timed region is the compute alone
//   transfer_pinned    copy A and B in, compute, copy C out, from cudaMallocHost memory
//   transfer_pageable  the same from ordinary (touched) host memory
// Entries are named matmul/<impl>/<device>/<mode>/fp32/n:<n>; docs/interface.md has the rest.
#include <algorithm>
#include <limits>
#include <memory>
#include <vector>

#include "core/random.hpp"
#include "core/reference.hpp"
#include "core/verify.hpp"
#include "harness/cpu_entry.hpp"
#include "harness/study.hpp"
#include "matmul_blocked.hpp"
#include "matmul_naive.hpp"
#include "matmul_openblas.hpp"

#if GPUBENCH_HAVE_CUDA
#include "core/gpu_runtime.hpp"
#include "matmul_cublas.hpp"
#include "matmul_naive.cuh"
#include "matmul_tiled.cuh"
#endif

namespace gpubench {
namespace {

struct MatmulImplementation : Implementation {
  MatmulFp32Fn run;
};

std::vector<MatmulImplementation> implementations() {
  const std::vector<std::string> cpu = {mode_name(Mode::host)};
  const std::vector<std::string> gpu = mode_names({Mode::resident, Mode::transfer_pinned, Mode::transfer_pageable});
  const std::vector<std::string> fp32 = {"fp32"};
  return {
      {{"openblas", Device::cpu, cpu, fp32, 0, "", openblas_threads}, matmul_openblas},
      {{"blocked_loop", Device::cpu, cpu, fp32, 4096,
        "a call at 8192 is 1.1 TFLOP, seconds on a CPU; OpenBLAS covers the CPU side at that size",
        openmp_threads},
       matmul_blocked_loop},
      {{"naive_loop", Device::cpu, cpu, fp32, 512,
        "one thread without blocking: a call at 1024 takes seconds and says nothing new about the crossover",
        one_thread},
       matmul_naive_loop},
#if GPUBENCH_HAVE_CUDA
      {{"cublas", Device::gpu, gpu, fp32}, matmul_cublas},
      {{"tiled_kernel", Device::gpu, gpu, fp32}, matmul_tiled_kernel},
      {{"naive_kernel", Device::gpu, gpu, fp32}, matmul_naive_kernel},
#endif
  };
}

const std::vector<MatmulImplementation>& table() {
  static const std::vector<MatmulImplementation> all = implementations();
  return all;
}

// Inputs and FP64 reference for one size, shared by every implementation at that size
// so that all of them are timed and checked on the same random data.
const MatmulProblem& problem_for(int n) {
  static ProblemCache<int, MatmulProblem> cache;
  // Host bytes at the peak: operands, a CPU entry's copies of them, an output, the FP64
  // reference and its upcast operands.
  require_host_memory(44.0 * n * n);
  return cache.get(n, [n] { return random_matmul_problem({n, n, n}, n); });
}

Verification checked(const float* c, const MatmulProblem& problem) {
  return verify_matmul(c, problem.reference, accumulation_tolerance(kFp32UnitRoundoff, problem.shape.k));
}

// A and B read once, C written once, in FP32.
void report_traffic(PreparedEntry& entry, const MatmulShape& s) {
  entry.counters["flop"] = s.flop();
  entry.add_memory_traffic(4.0 * (s.a_elements() + s.b_elements()), 4.0 * s.c_elements());
}

#if GPUBENCH_HAVE_CUDA
// Resident: operands copied once, untimed. Transfer modes: A and B copied in and C out in every
// call, from pinned (cudaMallocHost) memory or from the problem's own written vectors.
class GpuMatmul : public PreparedEntry {
 public:
  GpuMatmul(const MatmulImplementation& impl, const std::string& mode, const MatmulProblem& problem)
      : impl_(impl), shape_(problem.shape), copies_(copies_timed(mode)),
        a_(allocate(shape_.a_elements())), b_(shape_.b_elements()), c_(shape_.c_elements()),
        pageable_c_(shape_.c_elements()) {
    host_a_ = problem.a.data();
    host_b_ = problem.b.data();
    host_c_ = pageable_c_.data();
    if (copies_from_pinned(mode)) {
      pinned_a_ = pinned_copy_of(problem.a);
      pinned_b_ = pinned_copy_of(problem.b);
      pinned_c_ = std::make_unique<PinnedBuffer<float>>(shape_.c_elements());
      host_a_ = pinned_a_->get();
      host_b_ = pinned_b_->get();
      host_c_ = pinned_c_->get();
    }
    if (!copies_) {
      CUDA_CHECK(cudaMemcpy(a_.get(), host_a_, a_.bytes(), cudaMemcpyHostToDevice));
      CUDA_CHECK(cudaMemcpy(b_.get(), host_b_, b_.bytes(), cudaMemcpyHostToDevice));
    }
    // The first call on poisoned outputs (all-ones bytes are NaN), checked.
    CUDA_CHECK(cudaMemset(c_.get(), 0xFF, c_.bytes()));
    std::fill(host_c_, host_c_ + shape_.c_elements(), std::numeric_limits<float>::quiet_NaN());
    run_once();
    CUDA_CHECK(cudaDeviceSynchronize());
    if (!copies_) CUDA_CHECK(cudaMemcpy(host_c_, c_.get(), c_.bytes(), cudaMemcpyDeviceToHost));
    set_verdict(checked(host_c_, problem));
    report_traffic(*this, shape_);
    if (copies_) add_link_traffic(static_cast<double>(a_.bytes() + b_.bytes()), static_cast<double>(c_.bytes()));
  }

  void run_once() override {
    if (copies_) {
      CUDA_CHECK(cudaMemcpyAsync(a_.get(), host_a_, a_.bytes(), cudaMemcpyHostToDevice, 0));
      CUDA_CHECK(cudaMemcpyAsync(b_.get(), host_b_, b_.bytes(), cudaMemcpyHostToDevice, 0));
    }
    impl_.run(a_.get(), b_.get(), c_.get(), shape_);
    if (copies_) CUDA_CHECK(cudaMemcpyAsync(host_c_, c_.get(), c_.bytes(), cudaMemcpyDeviceToHost, 0));
  }

 private:
  // Checks that the three device buffers fit before the first is allocated.
  std::size_t allocate(std::size_t a_elements) {
    require_device_memory(4.0 * (a_elements + shape_.b_elements() + shape_.c_elements()));
    return a_elements;
  }

  const MatmulImplementation& impl_;
  MatmulShape shape_;
  bool copies_;
  DeviceBuffer<float> a_, b_, c_;
  std::vector<float> pageable_c_;
  std::unique_ptr<PinnedBuffer<float>> pinned_a_, pinned_b_, pinned_c_;
  const float* host_a_ = nullptr;
  const float* host_b_ = nullptr;
  float* host_c_ = nullptr;
};
#endif  // GPUBENCH_HAVE_CUDA

std::unique_ptr<PreparedEntry> prepare(const Entry& entry) {
  const auto& impl = row_of<MatmulImplementation>(entry);
  const MatmulProblem& problem = problem_for(entry.n);
#if GPUBENCH_HAVE_CUDA
  if (impl.on_gpu()) return std::make_unique<GpuMatmul>(impl, entry.mode, problem);
#endif
  auto cpu = std::make_unique<ThreadPlacedCpuEntry>(
      std::vector{&problem.a, &problem.b}, problem.shape.c_elements(),
      [&impl, &problem](const std::vector<const float*>& in, float* c) { impl.run(in[0], in[1], c, problem.shape); });
  cpu->set_verdict(checked(cpu->output(), problem));
  report_traffic(*cpu, problem.shape);
  return cpu;
}

StudyDefinition definition() {
  StudyDefinition study;
  study.name = "matmul";
  study.implementations = rows(table());
  study.modes = mode_names({Mode::host, Mode::resident, Mode::transfer_pinned, Mode::transfer_pageable});
  // 200 is the size of the well-known "GPU only a few times faster, copies eat the gain"
  // experiment; the driver adds points around each crossover.
  study.default_sizes = {64, 128, 200, 256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192};
  // The driver's default suite (every study within about ten minutes on one H100) and --quick (within
  // two minutes: every implementation runs and is checked, no crossover found). Only matmul compares
  // the GPU with the CPU at every size, and the driver adds points around each crossover.
  study.quick.sizes = {256};
  study.suite.sizes = {64, 256, 1024, 4096};
  study.counters = {{"flop", "FLOP", "2 n^3 a call"},
                    {"memory_read_bytes", "bytes", "A and B once: 2 x 4 n^2"},
                    {"memory_written_bytes", "bytes", "C once: 4 n^2"},
                    kRelFroErrorCounter,
                    kMaxRelErrorCounter};
  study.prepare = prepare;
  study.describe = [] { return Json{{"precision", "fp32"}}; };
  return study;
}

}  // namespace
}  // namespace gpubench

int main(int argc, char** argv) { return gpubench::run_study(argc, argv, gpubench::definition()); }
