// cuDNN's forward convolution (graph API, measured engine choice) against the FP64 sums of
// verify_conv2d and the CPU direct loop, on small random shapes, both layouts and every
// precision; planted faults must fail, and fp32 must not take a tensor-core engine. The
// GPU tests report themselves skipped without a usable GPU; the status test needs only the
// cuDNN library and runs everywhere it is built (the storage format's tests are CPU tests,
// in test_conv2d_cpu.cpp).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "conv2d_direct_loop.hpp"
#include "relative_difference.hpp"
#include "core/gpu_runtime.hpp"
#include "core/precision.hpp"
#include "core/precision_codec.hpp"
#include "core/random.hpp"
#include "core/system.hpp"
#include "conv2d_cpu.hpp"
#include "conv2d_cudnn.hpp"
#include "cudnn_check.hpp"

namespace gpubench {
namespace {

// --- without a GPU --------------------------------------------------------------------------
TEST(CudnnStatus, NotSupportedIsASkipAllocationFailureDoesNotFitOthersAreErrors) {
  EXPECT_THROW(CUDNN_CHECK(CUDNN_STATUS_NOT_SUPPORTED_SHAPE), CudnnUnsupported);
  EXPECT_THROW(CUDNN_CHECK(CUDNN_STATUS_NOT_SUPPORTED), CudnnUnsupported);
  EXPECT_THROW(CUDNN_CHECK(CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED), GpuOutOfMemory);
  try {
    CUDNN_CHECK(CUDNN_STATUS_BAD_PARAM);
    ADD_FAILURE() << "no exception";
  } catch (const CudnnUnsupported&) {
    ADD_FAILURE() << "a bad parameter is a fault, not a skip";
  } catch (const GpuOutOfMemory&) {
    ADD_FAILURE() << "a bad parameter is a fault, not a skip";
  } catch (const GpuError& e) {
    EXPECT_NE(std::string(e.what()).find("CUDNN_STATUS_BAD_PARAM"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(CUDNN_CHECK(CUDNN_STATUS_SUCCESS));
}

// --- on the GPU -------------------------------------------------------------------------------
// Random FP32 inputs in the given layout, run through cuDNN in a precision.
struct Problem {
  Conv2dShape shape;
  TensorLayout layout;
  std::vector<float> input, filter;

  Problem(Conv2dShape s, TensorLayout l, std::uint64_t seed)
      : shape(s),
        layout(l),
        input(random_uniform(s.input_elements(), configuration_seed(seed, 0))),
        filter(random_uniform(s.filter_elements(), configuration_seed(seed, 1))) {}

  // As the study verifies: FP64 sums of these FP32 inputs, within the precision's bound
  // (the rounding of FP16 and TF32 inputs is part of the error it allows).
  Verification verify(const std::vector<float>& output, Precision precision) const {
    Verification v = verify_conv2d(output.data(), input.data(), filter.data(), shape, layout, 3);
    v.tolerance = precision_tolerance(precision, shape.accumulation_length());
    return v;
  }
};

std::unique_ptr<DeviceBuffer<std::uint8_t>> upload(const std::vector<std::uint8_t>& bytes) {
  auto buffer = std::make_unique<DeviceBuffer<std::uint8_t>>(bytes.size());
  CUDA_CHECK(cudaMemcpy(buffer->get(), bytes.data(), bytes.size(), cudaMemcpyHostToDevice));
  return buffer;
}

// cuDNN's output, decoded to FP32, from an output buffer poisoned with NaN. `plan_layout`
// is the layout cuDNN is told the tensors have (a planted fault when it is not the problem's).
// `tensor_cores`, when given, is set to whether the chosen engine uses them.
std::vector<float> run_cudnn(const Problem& p, Precision precision, TensorLayout plan_layout,
                             bool* tensor_cores = nullptr) {
  const auto input = upload(encode_conv2d_tensor(p.input, precision));
  const auto filter = upload(encode_conv2d_tensor(p.filter, precision));
  DeviceBuffer<std::uint8_t> output(p.shape.output_elements() * conv2d_element_bytes(precision));
  const CudnnConv2dPlan plan(p.shape, plan_layout, precision, input->get(), filter->get(), output.get());
  EXPECT_GE(plan.engine(), 0);
  EXPECT_EQ(plan.engine_description().rfind("engine " + std::to_string(plan.engine()), 0), 0u)
      << plan.engine_description();
  if (tensor_cores) *tensor_cores = plan.tensor_cores();
  CUDA_CHECK(cudaMemset(output.get(), 0xFF, output.bytes()));
  plan.run(input->get(), filter->get(), output.get());
  std::vector<std::uint8_t> bytes(output.bytes());
  CUDA_CHECK(cudaMemcpy(bytes.data(), output.get(), bytes.size(), cudaMemcpyDeviceToHost));
  return decode_conv2d_tensor(bytes, precision);
}

std::string describe(const Conv2dShape& s, TensorLayout layout, Precision precision) {
  return "N" + std::to_string(s.batch) + " C" + std::to_string(s.in_channels) + " K" + std::to_string(s.out_channels) +
         " " + std::to_string(s.height) + "x" + std::to_string(s.width) + " R" + std::to_string(s.kernel) + " stride " +
         std::to_string(s.stride) + " pad " + std::to_string(s.padding) + " " + layout_name(layout) + " " +
         precision_info(precision).name;
}

using testing::conv2d_direct_loop;
using testing::max_relative_difference;

// 1x1, 3x3, 5x5 and the ResNet stem's 7x7 stride 2; strides 1 and 2; padding 0 to 3;
// odd image sizes; 3 input channels (the stem) and the study's channel counts.
// {batch, in_channels, out_channels, height, width, kernel, stride, padding}
std::vector<Conv2dShape> test_shapes() {
  return {{1, 8, 16, 9, 9, 3, 1, 1},    {3, 16, 8, 10, 7, 3, 2, 1}, {2, 32, 64, 7, 7, 1, 1, 0},
          {2, 8, 8, 12, 12, 1, 2, 0},   {1, 8, 16, 11, 13, 5, 1, 2}, {2, 3, 16, 15, 15, 7, 2, 3},
          {4, 64, 64, 14, 14, 3, 1, 1}, {2, 512, 256, 7, 7, 1, 1, 0}};
}

// One layout and precision: every combination is a test case.
struct GpuConvCase {
  TensorLayout layout;
  Precision precision;

  std::string name() const { return std::string(layout_name(layout)) + "_" + precision_info(precision).name; }
};
void PrintTo(const GpuConvCase& c, std::ostream* out) { *out << c.name(); }

std::vector<GpuConvCase> all_cases() {
  std::vector<GpuConvCase> cases;
  for (TensorLayout layout : {TensorLayout::nchw, TensorLayout::nhwc})
    for (Precision precision : {Precision::fp32, Precision::tf32, Precision::fp16}) cases.push_back({layout, precision});
  return cases;
}

class GpuConv2dTest : public ::testing::TestWithParam<GpuConvCase> {
 protected:
  void SetUp() override {
    const std::string reason = gpu_unavailable_reason();
    if (!reason.empty()) GTEST_SKIP() << "no GPU: " << reason;
  }
  TensorLayout layout() const { return GetParam().layout; }
  Precision precision() const { return GetParam().precision; }
};

TEST_P(GpuConv2dTest, MatchesFp64SumsAndTheDirectLoop) {
  for (const Conv2dShape& shape : test_shapes()) {
    const Problem problem(shape, layout(), shape.in_channels * 131 + shape.height);
    std::vector<float> gpu;
    try {
      gpu = run_cudnn(problem, precision(), layout());
    } catch (const std::exception& e) {  // a CUDA fault is sticky: name the shape and stop
      FAIL() << describe(shape, layout(), precision()) << ": " << e.what();
    }
    const Verification v = problem.verify(gpu, precision());
    EXPECT_TRUE(v.passed()) << describe(shape, layout(), precision()) << ": " << v.describe();
    // The CPU reference, itself within the FP32 bound of the FP64 sums.
    std::vector<float> direct(shape.output_elements());
    conv2d_direct_loop(problem.input.data(), problem.filter.data(), direct.data(), shape, layout());
    const double fp32_bound = accumulation_tolerance(kFp32UnitRoundoff, shape.accumulation_length()).max_rel;
    EXPECT_LE(max_relative_difference(gpu, direct), v.tolerance.max_rel + fp32_bound)
        << describe(shape, layout(), precision());
  }
}

TEST_P(GpuConv2dTest, CatchesAPlantedWrongElement) {
  const Conv2dShape shape{2, 16, 24, 10, 10, 3, 1, 1};
  const Problem problem(shape, layout(), 17);
  std::vector<float> gpu = run_cudnn(problem, precision(), layout());
  ASSERT_TRUE(problem.verify(gpu, precision()).passed());
  float largest = 0;
  for (float value : gpu) largest = std::fmax(largest, std::fabs(value));
  // 3% of the largest output, ten times the FP16 bound (about 2.9e-3 here): every precision must catch it.
  gpu[gpu.size() / 3] += 0.03f * largest;
  const Verification v = problem.verify(gpu, precision());
  EXPECT_FALSE(v.passed()) << v.describe();
  EXPECT_EQ(v.non_finite, 0u);
}

TEST_P(GpuConv2dTest, CatchesTensorsGivenInTheOtherLayout) {
  // cuDNN told the wrong layout reads every tensor wrongly: the verification must notice.
  const Conv2dShape shape{2, 16, 24, 10, 10, 3, 1, 1};
  const Problem problem(shape, layout(), 19);
  const TensorLayout other = layout() == TensorLayout::nchw ? TensorLayout::nhwc : TensorLayout::nchw;
  EXPECT_FALSE(problem.verify(run_cudnn(problem, precision(), other), precision()).passed());
}

INSTANTIATE_TEST_SUITE_P(Cudnn, GpuConv2dTest, ::testing::ValuesIn(all_cases()),
                         [](const auto& info) { return info.param.name(); });

TEST(CudnnFp32, TakesNoTensorCoreEngine) {
  const std::string reason = gpu_unavailable_reason();
  if (!reason.empty()) GTEST_SKIP() << "no GPU: " << reason;
  // Shapes where a TF32 tensor-core engine would be the fastest if fp32 allowed one: the
  // study's 3x3 and 1x1 layers at a small batch.
  for (TensorLayout layout : {TensorLayout::nchw, TensorLayout::nhwc})
    for (const Conv2dShape& shape :
         {Conv2dShape{8, 64, 64, 56, 56, 3, 1, 1}, Conv2dShape{16, 512, 2048, 7, 7, 1, 1, 0}}) {
      const Problem problem(shape, layout, 23);
      bool tensor_cores = true;
      const std::vector<float> gpu = run_cudnn(problem, Precision::fp32, layout, &tensor_cores);
      EXPECT_FALSE(tensor_cores) << describe(shape, layout, Precision::fp32);
      const Verification v = problem.verify(gpu, Precision::fp32);
      EXPECT_TRUE(v.passed()) << describe(shape, layout, Precision::fp32) << ": " << v.describe();
    }
}

// A later trial's process, given the first one's engine, runs that engine without timing the others;
// an engine the heuristics do not propose here is autotuned past and said so.
TEST(CudnnHeldEngine, IsTakenWhenProposedAndNamedWhenNot) {
  const std::string reason = gpu_unavailable_reason();
  if (!reason.empty()) GTEST_SKIP() << "no GPU: " << reason;
  const Conv2dShape shape{4, 64, 64, 14, 14, 3, 1, 1};
  const Problem problem(shape, TensorLayout::nhwc, 29);
  const auto input = upload(encode_conv2d_tensor(problem.input, Precision::tf32));
  const auto filter = upload(encode_conv2d_tensor(problem.filter, Precision::tf32));
  DeviceBuffer<std::uint8_t> output(shape.output_elements() * conv2d_element_bytes(Precision::tf32));
  const auto plan = [&](const std::optional<std::string>& held) {
    return std::make_unique<CudnnConv2dPlan>(shape, TensorLayout::nhwc, Precision::tf32, input->get(), filter->get(),
                                             output.get(), held);
  };
  const auto autotuned = plan(std::nullopt);
  EXPECT_FALSE(autotuned->engine_held());
  const auto held = plan(autotuned->engine_choice());
  EXPECT_TRUE(held->engine_held()) << held->engine_description();
  EXPECT_EQ(held->engine_choice(), autotuned->engine_choice());
  EXPECT_NE(held->engine_description().find("held from an earlier process"), std::string::npos);
  const auto unknown = plan(std::string("999999 k1=1"));
  EXPECT_FALSE(unknown->engine_held());
  EXPECT_NE(unknown->engine_description().find("the held engine 999999 k1=1 was not usable here"), std::string::npos)
      << unknown->engine_description();
}

}  // namespace
}  // namespace gpubench
