// The chunked pipeline on real streams: pipelined SAXPY and matmul give the serial result
// and match their references for several chunk and stream counts (chunks that do not
// divide n included), from pinned and pageable memory. Without a usable GPU every test
// reports itself skipped.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <list>
#include <memory>
#include <stdexcept>
#include <vector>

#include "core/gpu_runtime.hpp"
#include "core/random.hpp"
#include "core/reference.hpp"
#include "core/system.hpp"
#include "core/verify.hpp"
#include "cublas_handle.hpp"
#include "overlap_pipeline.hpp"

namespace gpubench {
namespace {

constexpr int kN = 300;        // rows: 7, 64 and 128 chunks leave remainders
constexpr int kMatmulN = 257;  // odd, straddles every GEMM tile size

const std::vector<PipelineSpec>& pipelined_specs() {
  static const std::vector<PipelineSpec> specs = {
      {7, 1, true, true}, {7, 2, true, true}, {7, 4, true, true}, {64, 2, true, true}, {128, 4, true, true}};
  return specs;
}

std::string describe(const PipelineSpec& spec, bool pinned) {
  return std::to_string(spec.chunks) + " chunks on " + std::to_string(spec.streams) + " streams, " +
         (pinned ? "pinned" : "pageable");
}

// The arrays of one workload: random inputs, device arrays, and host buffers in the chosen memory.
class TestArrays {
 public:
  TestArrays(int n, bool matmul, bool pinned) : elements_(static_cast<std::size_t>(n) * n), pinned_(pinned) {
    arrays_.n = n;
    for (int k = 0; k < (matmul ? 3 : 2); ++k) device_[k] = std::make_unique<DeviceBuffer<float>>(elements_);
    for (int k = 0; k < 2; ++k) {
      inputs_[k] = random_uniform(elements_, configuration_seed(n, k));
      arrays_.host_in[k] = host_buffer(inputs_[k], pinned_in_[k]);
      arrays_.device_in[k] = device_[k]->get();
    }
    arrays_.host_out = host_buffer(std::vector<float>(elements_, 0.0f), pinned_out_);
    arrays_.device_out = device_[matmul ? 2 : 1]->get();  // SAXPY works in place on y
  }

  const OverlapArrays& arrays() const { return arrays_; }
  const std::vector<float>& input(int k) const { return inputs_[k]; }

  // Poisons the device arrays and the host output (all-ones bytes are NaN), runs, and
  // returns what reached the host.
  std::vector<float> run(PipelineStreams& streams, const ChunkedOperation& op, const PipelineSpec& spec) {
    for (const auto& buffer : device_)
      if (buffer) CUDA_CHECK(cudaMemset(buffer->get(), 0xFF, buffer->bytes()));
    CUDA_CHECK(cudaDeviceSynchronize());  // the pipeline's non-blocking streams do not wait for stream 0
    std::fill(arrays_.host_out, arrays_.host_out + elements_, std::numeric_limits<float>::quiet_NaN());
    EXPECT_GT(streams.run(op, spec), 0.0);
    return std::vector<float>(arrays_.host_out, arrays_.host_out + elements_);
  }

 private:
  // `values` in pinned memory (kept in `pinned`) or in a pageable vector that has been written.
  float* host_buffer(const std::vector<float>& values, std::unique_ptr<PinnedBuffer<float>>& pinned) {
    if (!pinned_) {
      pageable_.push_back(values);
      return pageable_.back().data();
    }
    pinned = std::make_unique<PinnedBuffer<float>>(values.size());
    std::copy(values.begin(), values.end(), pinned->get());
    return pinned->get();
  }

  std::size_t elements_;
  bool pinned_;
  std::vector<float> inputs_[2];
  std::unique_ptr<DeviceBuffer<float>> device_[3];
  std::unique_ptr<PinnedBuffer<float>> pinned_in_[2], pinned_out_;
  std::list<std::vector<float>> pageable_;  // a list: the pointers handed out stay valid
  OverlapArrays arrays_;
};

// SAXPY's a, random in [1, 2) as in the study: never small enough for a*x to vanish against y.
float random_a(std::uint64_t seed) { return 1.5f + 0.5f * random_uniform(1, seed)[0]; }

bool bitwise_equal(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

class GpuOverlapTest : public ::testing::TestWithParam<bool> {  // the parameter: pinned host memory
 protected:
  void SetUp() override {
    const std::string reason = gpu_unavailable_reason();
    if (!reason.empty()) GTEST_SKIP() << "no GPU: " << reason;
  }
};

TEST_P(GpuOverlapTest, PipelinedSaxpyEqualsTheSerialRunAndTheExactResult) {
  const bool pinned = GetParam();
  TestArrays w(kN, false, pinned);
  const float a = random_a(7);
  std::vector<float> expected(w.input(0).size());
  for (std::size_t i = 0; i < expected.size(); ++i) expected[i] = std::fma(a, w.input(0)[i], w.input(1)[i]);
  PipelineStreams streams(4);
  const ChunkedOperation op = saxpy_operation(a, w.arrays());
  const std::vector<float> serial = w.run(streams, op, PipelineSpec{1, 1, true, true});
  EXPECT_TRUE(bitwise_equal(serial, expected)) << "serial, " << (pinned ? "pinned" : "pageable");
  for (const PipelineSpec& spec : pipelined_specs())
    EXPECT_TRUE(bitwise_equal(w.run(streams, op, spec), serial)) << describe(spec, pinned);
}

TEST_P(GpuOverlapTest, PipelinedMatmulMatchesItsFp64Reference) {
  const bool pinned = GetParam();
  TestArrays w(kMatmulN, true, pinned);
  const MatmulShape shape{kMatmulN, kMatmulN, kMatmulN};
  const MatmulReference ref = matmul_reference_fp64(w.input(0).data(), w.input(1).data(), shape, ReferencePolicy{}, 1);
  const Tolerance tolerance = accumulation_tolerance(kFp32UnitRoundoff, kMatmulN);
  PipelineStreams streams(4);
  LaneWorkspaces workspaces(4);
  const ChunkedOperation op = matmul_operation(w.arrays(), workspaces);
  std::vector<PipelineSpec> specs = pipelined_specs();
  specs.push_back({1, 1, true, true});
  for (const PipelineSpec& spec : specs) {
    const std::vector<float> c = w.run(streams, op, spec);
    const Verification v = verify_matmul(c.data(), ref, tolerance);
    EXPECT_TRUE(v.passed()) << describe(spec, pinned) << ": " << v.describe();
  }
  cudaStream_t handle_stream = nullptr;
  CUBLAS_CHECK(cublasGetStream(cublas_handle(), &handle_stream));
  EXPECT_EQ(handle_stream, nullptr) << "the shared cuBLAS handle was left on a pipeline stream";
}

TEST_P(GpuOverlapTest, CopyOnlyMovesTheDataAndComputeOnlyComputesInPlace) {
  const bool pinned = GetParam();
  TestArrays w(kN, false, pinned);
  const float a = random_a(8);
  PipelineStreams streams(4);
  const ChunkedOperation op = saxpy_operation(a, w.arrays());
  EXPECT_TRUE(bitwise_equal(w.run(streams, op, PipelineSpec{7, 4, true, false}), w.input(1)))
      << "copy_only must return y unchanged";

  for (int k = 0; k < 2; ++k)
    CUDA_CHECK(cudaMemcpy(w.arrays().device_in[k], w.input(k).data(), w.input(k).size() * sizeof(float),
                          cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaDeviceSynchronize());
  streams.run(op, PipelineSpec{7, 4, false, true});
  std::vector<float> y(w.input(1).size());
  CUDA_CHECK(cudaMemcpy(y.data(), w.arrays().device_out, y.size() * sizeof(float), cudaMemcpyDeviceToHost));
  for (std::size_t i = 0; i < y.size(); ++i)
    ASSERT_EQ(y[i], std::fma(a, w.input(0)[i], w.input(1)[i])) << "element " << i;
}

TEST_P(GpuOverlapTest, RefusesChunksThatWouldBeEmpty) {
  TestArrays w(8, false, GetParam());
  PipelineStreams streams(2);
  const ChunkedOperation op = saxpy_operation(random_a(9), w.arrays());
  EXPECT_THROW(streams.run(op, PipelineSpec{9, 1, true, true}), std::invalid_argument);
  EXPECT_THROW(streams.run(op, PipelineSpec{4, 4, true, true}), std::invalid_argument);
}

INSTANTIATE_TEST_SUITE_P(HostMemory, GpuOverlapTest, ::testing::Values(true, false),
                         [](const auto& info) { return std::string(info.param ? "Pinned" : "Pageable"); });

}  // namespace
}  // namespace gpubench
