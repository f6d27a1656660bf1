// The precision study: what each number format buys in speed and costs in accuracy.
// C = A*B for square sizes in every precision an implementation offers; every entry is
// timed on uniform [-1, 1) inputs and verified on those and on standard-normal inputs
// against an FP64 product of the original FP32 values, so the recorded error includes the
// rounding of the inputs into the format. Modes: host (CPU), resident and transfer_pinned
// (GPU; the copies move the encoded operands, so narrower formats copy fewer bytes).
// Entries: precision/<impl>/<cpu|gpu>/<mode>/<precision>/n:<n>; docs/interface.md.
#include <benchmark/benchmark.h>
#include <cblas.h>

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "harness/gpu_telemetry.hpp"
#include "core/json.hpp"
#include "core/precision.hpp"
#include "core/precision_codec.hpp"
#include "core/random.hpp"
#include "core/reference.hpp"
#include "harness/study_main.hpp"
#include "harness/study_options.hpp"
#include "core/verify.hpp"
#include "gemm_openblas_precisions.hpp"

#if GPUBENCH_HAVE_CUDA
#include "harness/gpu_entry.hpp"
#include "core/gpu_runtime.hpp"
#include "gemm_cublas_precisions.hpp"
#include "matmul_wmma.cuh"
#endif

namespace gpubench {
namespace {

struct Implementation {
  const char* id;
  bool on_gpu;
  std::vector<Precision> precisions;
  PrecisionGemmFn run;
  int max_size;            // 0: no cap
  const char* cap_reason;
};

const std::vector<Implementation>& implementations() {
  static const std::vector<Implementation> all = {
      {"openblas", false, {Precision::fp64, Precision::fp32, Precision::bf16}, gemm_openblas_precision, 4096,
       "a CPU GEMM at 8192 takes one to several seconds per call and precision is the GPU's question here; "
       "the matmul study measures OpenBLAS to 8192"},
#if GPUBENCH_HAVE_CUDA
      {"cublas",
       true,
       {Precision::fp32, Precision::tf32, Precision::fp16, Precision::fp16_acc16, Precision::bf16,
        Precision::fp8_e4m3, Precision::int8},
       gemm_cublas_precision,
       0,
       nullptr},
      {"wmma_kernel", true, {Precision::fp16}, gemm_wmma_precision, 0, nullptr},
#endif
  };
  return all;
}

std::vector<std::string> modes_of(const Implementation& impl) {
  if (!impl.on_gpu) return {"host"};
  return {"resident", "transfer_pinned"};
}

const std::vector<int>& default_sizes() {
  static const std::vector<int> sizes = {256, 512, 1024, 2048, 4096, 8192, 16384};
  return sizes;
}

// --- inputs and references, shared by every entry of one size ---------------------
enum class Distribution { uniform, normal };

struct Operands {
  std::vector<float> a, b;
  MatmulReference reference;
};

struct PrecisionProblem {
  MatmulShape shape;
  Operands uniform, normal;
  const Operands& of(Distribution d) const { return d == Distribution::uniform ? uniform : normal; }
};

Operands make_operands(MatmulShape shape, Distribution distribution) {
  const std::uint64_t base = distribution == Distribution::uniform ? 0 : 10;
  auto draw = distribution == Distribution::uniform ? random_uniform : random_normal;
  Operands out;
  out.a = draw(shape.a_elements(), configuration_seed(shape.n, base + 0));
  out.b = draw(shape.b_elements(), configuration_seed(shape.n, base + 1));
  out.reference = matmul_reference_fp64(out.a.data(), out.b.data(), shape, ReferencePolicy{},
                                        configuration_seed(shape.n, base + 2));
  return out;
}

// Peak host bytes of one size: two distributions of FP32 operands (16 n^2), their encoded
// copies (up to 32 n^2 for FP64), an output and its FP64 decoding (16 n^2), and the
// reference's upcast B while it is computed.
double host_bytes_needed(int n) { return 72.0 * n * n; }

const PrecisionProblem* problem_or_skip(benchmark::State& state, int n) {
  static std::unique_ptr<PrecisionProblem> current;
  if (!host_memory_fits(state, host_bytes_needed(n))) return nullptr;
  if (!current || current->shape.n != n) {
    current.reset();
    auto problem = std::make_unique<PrecisionProblem>();
    problem->shape = {n, n, n};
    problem->uniform = make_operands(problem->shape, Distribution::uniform);
    problem->normal = make_operands(problem->shape, Distribution::normal);
    current = std::move(problem);
  }
  return current.get();
}

// Both distributions' operands in one precision's format, kept while consecutive entries
// (the modes of one precision) use them: encoding a 16384^2 pair takes seconds.
struct EncodedProblem {
  EncodedOperands uniform, normal;
};

const EncodedProblem& encoded_for(const PrecisionProblem& problem, Precision precision) {
  static std::unique_ptr<EncodedProblem> current;
  static std::pair<int, Precision> key{0, Precision::fp32};
  if (!current || key != std::make_pair(problem.shape.n, precision)) {
    current.reset();
    auto encoded = std::make_unique<EncodedProblem>();
    encoded->uniform = encode_operands(precision, problem.uniform.a, problem.uniform.b, problem.shape);
    encoded->normal = encode_operands(precision, problem.normal.a, problem.normal.b, problem.shape);
    current = std::move(encoded);
    key = {problem.shape.n, precision};
  }
  return *current;
}

// --- verification ------------------------------------------------------------------
struct Verdict {
  Verification uniform, normal;
  bool passed() const { return uniform.passed() && normal.passed(); }
  std::string describe() const {
    return "uniform inputs: " + uniform.describe() + "; normal inputs: " + normal.describe();
  }
};

std::map<std::string, Verdict>& verdicts() {
  static std::map<std::string, Verdict> by_entry;
  return by_entry;
}

// The DGEMM reference cannot judge DGEMM itself: an FP64 output is checked against rows
// summed in long double instead (kept per operand set, as the CPU caps FP64 at 4096).
const MatmulReference& reference_for(Precision precision, const Operands& operands) {
  constexpr int kExtendedRows = 16;
  static std::map<const Operands*, MatmulReference> extended;
  if (precision != Precision::fp64) return operands.reference;
  const MatmulShape shape = operands.reference.shape;
  auto found = extended.find(&operands);
  if (found == extended.end() || found->second.shape.n != shape.n) {
    extended[&operands] = matmul_reference_extended(operands.a.data(), operands.b.data(), shape, kExtendedRows,
                                                    configuration_seed(shape.n, 20));
    found = extended.find(&operands);
  }
  return found->second;
}

Verification check_output(Precision precision, const void* c, const EncodedOperands& encoded,
                          const Operands& operands) {
  const MatmulShape shape = operands.reference.shape;
  const std::vector<double> values = decode_output(precision, c, shape.c_elements(), encoded);
  return verify_matmul(values.data(), reference_for(precision, operands), precision_tolerance(precision, shape.k));
}

void report_counters(benchmark::State& state, Precision precision, const MatmulShape& shape, const Verdict& verdict,
                     double bytes_transferred) {
  state.counters["flop"] = shape.flop();
  state.counters["bytes_transferred"] = bytes_transferred;
  state.counters["rel_fro_error"] = verdict.uniform.rel_fro_error;
  state.counters["max_rel_error"] = verdict.uniform.max_rel_error;
  state.counters["rel_fro_error_normal"] = verdict.normal.rel_fro_error;
  state.counters["max_rel_error_normal"] = verdict.normal.max_rel_error;
  state.counters["tolerance"] = precision_tolerance(precision, shape.k).rel_fro;
  state.counters["n"] = shape.n;
}

std::vector<std::uint8_t> output_buffer(Precision precision, const MatmulShape& shape) {
  return std::vector<std::uint8_t>(shape.c_elements() * precision_info(precision).output_bytes, 0xFF);  // NaN-poisoned
}

// --- CPU entries -----------------------------------------------------------------------
void run_cpu_entry(benchmark::State& state, const Implementation& impl, Precision precision, int n,
                   const std::string& name) {
  const std::string unsupported = openblas_precision_unsupported_reason(precision);
  if (!unsupported.empty()) {
    state.SkipWithError(("skipped: " + unsupported).c_str());
    return;
  }
  const PrecisionProblem* problem = problem_or_skip(state, n);
  if (!problem) return;
  const MatmulShape shape = problem->shape;
  const EncodedProblem& encoded = encoded_for(*problem, precision);
  const EncodedOperands& uniform = encoded.uniform;
  std::vector<std::uint8_t> c = output_buffer(precision, shape);
  auto found = verdicts().find(name);
  if (found == verdicts().end()) {
    Verdict verdict;
    impl.run(precision, uniform.a.data(), uniform.b.data(), c.data(), shape, uniform.dequant);
    verdict.uniform = check_output(precision, c.data(), uniform, problem->uniform);
    const EncodedOperands& normal = encoded.normal;
    impl.run(precision, normal.a.data(), normal.b.data(), c.data(), shape, normal.dequant);
    verdict.normal = check_output(precision, c.data(), normal, problem->normal);
    found = verdicts().emplace(name, verdict).first;
  }
  if (!found->second.passed()) {
    state.SkipWithError(("wrong result: " + found->second.describe()).c_str());
    return;
  }
  for (auto _ : state) {
    impl.run(precision, uniform.a.data(), uniform.b.data(), c.data(), shape, uniform.dequant);
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
  }
  report_counters(state, precision, shape, found->second, 0.0);
  state.counters["threads"] = openblas_get_num_threads();
}

#if GPUBENCH_HAVE_CUDA
// --- GPU entries -----------------------------------------------------------------------
GpuCapability this_gpu() {
  static const GpuCapability capability = [] {
    int device = 0;
    GpuCapability c;
    CUDA_CHECK(cudaGetDevice(&device));
    CUDA_CHECK(cudaDeviceGetAttribute(&c.major, cudaDevAttrComputeCapabilityMajor, device));
    CUDA_CHECK(cudaDeviceGetAttribute(&c.minor, cudaDevAttrComputeCapabilityMinor, device));
    return c;
  }();
  return capability;
}

std::string gpu_entry_unsupported_reason(Precision precision, const MatmulShape& shape) {
  const std::string reason = gpu_precision_unsupported_reason(precision, this_gpu());
  if (!reason.empty()) return reason;
  const bool tensor_core_integer_or_fp8 = precision == Precision::fp8_e4m3 || precision == Precision::int8;
  if (tensor_core_integer_or_fp8 && (shape.m % 16 || shape.n % 16 || shape.k % 16))
    return "cuBLASLt FP8/INT8 GEMMs here need dimensions that are multiples of 16";
  return "";
}

double device_operand_bytes(Precision precision, const MatmulShape& shape) {
  const PrecisionInfo& info = precision_info(precision);
  return static_cast<double>(info.input_bytes) * (shape.a_elements() + shape.b_elements()) +
         static_cast<double>(info.output_bytes) * shape.c_elements();
}

// Device copies of one distribution's encoded operands and its dequantization factors.
struct DeviceOperands {
  DeviceBuffer<std::uint8_t> a, b;
  DeviceBuffer<float> dequant;
  explicit DeviceOperands(const EncodedOperands& host)
      : a(host.a.size()), b(host.b.size()), dequant(2 * kDequantStride) {
    upload(host);
  }
  void upload(const EncodedOperands& host) {
    CUDA_CHECK(cudaMemcpy(a.get(), host.a.data(), a.bytes(), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(b.get(), host.b.data(), b.bytes(), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(dequant.get(), host.dequant, dequant.bytes(), cudaMemcpyHostToDevice));
  }
};

Verification run_and_check_on_gpu(const Implementation& impl, Precision precision, const EncodedOperands& encoded,
                                  const Operands& operands, DeviceOperands& device, DeviceBuffer<std::uint8_t>& c) {
  const MatmulShape shape = operands.reference.shape;
  device.upload(encoded);
  CUDA_CHECK(cudaMemset(c.get(), 0xFF, c.bytes()));  // NaN in every float format: unwritten elements fail
  impl.run(precision, device.a.get(), device.b.get(), c.get(), shape, device.dequant.get());
  std::vector<std::uint8_t> host_c(c.bytes());
  CUDA_CHECK(cudaMemcpy(host_c.data(), c.get(), c.bytes(), cudaMemcpyDeviceToHost));
  return check_output(precision, host_c.data(), encoded, operands);
}

// Device buffers, pinned host copies and the verdict of one entry. Google Benchmark calls
// an entry's function once per repetition (and more while it sizes the iteration count);
// at 16384 allocating, pinning and uploading gigabytes each time would take longer than
// the measurement, so the last entry's state is kept until the next entry starts.
struct GpuEntryState {
  std::string name;
  std::unique_ptr<DeviceOperands> device;
  std::unique_ptr<DeviceBuffer<std::uint8_t>> c;
  std::unique_ptr<PinnedBuffer<std::uint8_t>> pinned_a, pinned_b, pinned_c;
  Verdict verdict;
};

std::unique_ptr<GpuEntryState> prepare_gpu_entry(const Implementation& impl, Precision precision, bool copies_timed,
                                                 const PrecisionProblem& problem, const std::string& name) {
  const MatmulShape shape = problem.shape;
  require_device_memory(device_operand_bytes(precision, shape));
  const EncodedProblem& encoded = encoded_for(problem, precision);
  auto state = std::make_unique<GpuEntryState>();
  state->name = name;
  state->device = std::make_unique<DeviceOperands>(encoded.uniform);
  state->c = std::make_unique<DeviceBuffer<std::uint8_t>>(shape.c_elements() * precision_info(precision).output_bytes);
  state->verdict.normal = run_and_check_on_gpu(impl, precision, encoded.normal, problem.normal, *state->device, *state->c);
  state->verdict.uniform = run_and_check_on_gpu(impl, precision, encoded.uniform, problem.uniform, *state->device,
                                                *state->c);  // leaves the uniform operands on the device
  if (copies_timed) {
    state->pinned_a = std::make_unique<PinnedBuffer<std::uint8_t>>(encoded.uniform.a.size());
    state->pinned_b = std::make_unique<PinnedBuffer<std::uint8_t>>(encoded.uniform.b.size());
    state->pinned_c = std::make_unique<PinnedBuffer<std::uint8_t>>(state->c->bytes());
    std::copy(encoded.uniform.a.begin(), encoded.uniform.a.end(), state->pinned_a->get());
    std::copy(encoded.uniform.b.begin(), encoded.uniform.b.end(), state->pinned_b->get());
  }
  return state;
}

void run_gpu_entry(benchmark::State& state, const Implementation& impl, Precision precision, const std::string& mode,
                   int n, const std::string& name) {
  static std::unique_ptr<GpuEntryState> current;
  guard_gpu_entry(state, [&] {
    const MatmulShape shape{n, n, n};
    const std::string unsupported = gpu_entry_unsupported_reason(precision, shape);
    if (!unsupported.empty()) {
      state.SkipWithError(("skipped: " + unsupported).c_str());
      return;
    }
    const PrecisionProblem* problem = problem_or_skip(state, n);
    if (!problem) return;
    const bool copies_timed = mode == "transfer_pinned";
    if (!current || current->name != name) {
      current.reset();  // free the previous entry's device and pinned memory first
      current = prepare_gpu_entry(impl, precision, copies_timed, *problem, name);
    }
    if (!current->verdict.passed()) {
      state.SkipWithError(("wrong result: " + current->verdict.describe()).c_str());
      return;
    }
    DeviceOperands& device = *current->device;
    DeviceBuffer<std::uint8_t>& c = *current->c;
    const auto run_once = [&] {
      if (copies_timed) {
        CUDA_CHECK(cudaMemcpyAsync(device.a.get(), current->pinned_a->get(), device.a.bytes(), cudaMemcpyHostToDevice, 0));
        CUDA_CHECK(cudaMemcpyAsync(device.b.get(), current->pinned_b->get(), device.b.bytes(), cudaMemcpyHostToDevice, 0));
      }
      impl.run(precision, device.a.get(), device.b.get(), c.get(), shape, device.dequant.get());
      if (copies_timed) CUDA_CHECK(cudaMemcpyAsync(current->pinned_c->get(), c.get(), c.bytes(), cudaMemcpyDeviceToHost, 0));
    };
    run_once();  // warm-up of this mode
    CUDA_CHECK(cudaDeviceSynchronize());

    EventTimer timer;
    TelemetryWindow telemetry;  // clocks, power, energy and utilization over the timed loop
    for (auto _ : state) {
      timer.start();
      run_once();
      state.SetIterationTime(timer.stop_seconds());
    }
    telemetry.report(state);
    const double copied = copies_timed ? static_cast<double>(device.a.bytes() + device.b.bytes() + c.bytes()) : 0.0;
    report_counters(state, precision, shape, current->verdict, copied);
  }, [&] { current.reset(); });
}
#endif  // GPUBENCH_HAVE_CUDA

// --- registration and description ----------------------------------------------------
std::string entry_name(const Implementation& impl, const std::string& mode, Precision precision, int n) {
  return std::string("precision/") + impl.id + (impl.on_gpu ? "/gpu/" : "/cpu/") + mode + "/" +
         precision_info(precision).name + "/n:" + std::to_string(n);
}

void register_entry(const Implementation& impl, const std::string& mode, Precision precision, int n) {
  const std::string name = entry_name(impl, mode, precision, n);
  benchmark::internal::Benchmark* entry = nullptr;
  if (impl.on_gpu) {
#if GPUBENCH_HAVE_CUDA
    entry = benchmark::RegisterBenchmark(name.c_str(), [&impl, mode, precision, n, name](benchmark::State& state) {
      run_gpu_entry(state, impl, precision, mode, n, name);
    });
    entry->UseManualTime();
#endif
  } else {
    entry = benchmark::RegisterBenchmark(name.c_str(), [&impl, precision, n, name](benchmark::State& state) {
      run_cpu_entry(state, impl, precision, n, name);
    });
    entry->UseRealTime();  // multithreaded: the wall clock
  }
  entry->Unit(benchmark::kMicrosecond);
}

void register_entries(const StudyOptions& options, bool gpu_usable) {
  for (int n : options.sizes.empty() ? default_sizes() : options.sizes) {
    for (const Implementation& impl : implementations()) {
      const int cap = size_cap(options, impl.id, impl.max_size);
      if (!is_selected(options.impls, impl.id) || (cap > 0 && n > cap)) continue;
      if (impl.on_gpu && (!gpu_usable || options.cpu_only)) continue;
      // Modes innermost: consecutive entries share one precision's encoded operands.
      for (Precision precision : impl.precisions)
        for (const std::string& mode : modes_of(impl))
          if (is_selected(options.modes, mode)) register_entry(impl, mode, precision, n);
    }
  }
}

std::string describe_precision(const PrecisionInfo& info) {
  const std::string note = cpu_precision_note(info.id);
  return "{\"id\": " + json_string(info.name) + ", \"inputs\": " + json_string(info.inputs) +
         ", \"accumulate\": " + json_string(info.accumulate) + ", \"output\": " + json_string(info.output) +
         ", \"tensor_cores\": " + (info.tensor_cores ? "true" : "false") +
         ", \"unit_roundoff_inputs\": " + json_number(info.input_roundoff) +
         ", \"unit_roundoff_accumulate\": " + json_number(info.accumulate_roundoff) +
         ", \"unit_roundoff_output\": " + json_number(info.output_roundoff) +
         ", \"tolerance\": " + json_string(tolerance_rule()) +
         ", \"cpu_note\": " + (note.empty() ? "null" : json_string(note)) + "}";
}

std::string describe_implementation(const Implementation& impl) {
  return "{" + implementation_fields(impl.id, impl.on_gpu, modes_of(impl), impl.max_size, impl.cap_reason) +
         ", \"precisions\": " +
         json_list(impl.precisions, [](Precision p) { return json_string(precision_info(p).name); }) + "}";
}

std::string describe_study() {
  return "\"default_sizes\": " + json_list(default_sizes(), [](int n) { return std::to_string(n); }) +
         ", \"implementations\": " + json_list(implementations(), describe_implementation) +
         ", \"precisions\": " + json_list(all_precisions(), describe_precision);
}

}  // namespace
}  // namespace gpubench

int main(int argc, char** argv) {
  using namespace gpubench;
  StudyDefinition study;
  study.name = "precision";
  for (const Implementation& impl : implementations()) study.impl_ids.push_back(impl.id);
  study.modes = {"host", "resident", "transfer_pinned"};
  study.batch_axis = false;
  study.describe = describe_study;
  study.register_entries = register_entries;
  return study_main(argc, argv, study);
}
