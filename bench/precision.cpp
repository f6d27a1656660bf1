// The precision study: what each number format buys in speed and costs in accuracy.
// C = A*B for square sizes in every precision an implementation offers; every entry is
// timed on uniform [-1, 1) inputs and verified on those and on standard-normal inputs
// against an FP64 product of the original FP32 values, so the recorded error includes the
// rounding of the inputs into the format. Modes: host (CPU), resident and transfer_pinned
// (GPU; the copies move the encoded operands, so narrower formats copy fewer bytes).
// Entries: precision/<impl>/<cpu|gpu>/<mode>/<precision>/n:<n>; docs/interface.md.
#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "core/first_touch.hpp"
#include "core/json.hpp"
#include "core/precision.hpp"
#include "core/precision_codec.hpp"
#include "core/random.hpp"
#include "core/reference.hpp"
#include "core/verify.hpp"
#include "harness/cublaslt_choice.hpp"
#include "harness/study.hpp"
#include "matmul_openblas_precisions.hpp"

#if GPUBENCH_HAVE_CUDA
#include "core/gpu_runtime.hpp"
#include "matmul_cublas_precisions.hpp"
#include "matmul_wmma.cuh"
#endif

namespace gpubench {
namespace {

#if GPUBENCH_HAVE_CUDA
// The library's plan for the entry's problem on its device buffers, made before the first call
// (harness/cublaslt_choice.hpp).
using PlanFn = const CublasLtGemm& (*)(Precision precision, MatmulShape shape, CublasLtAlignment alignment,
                                       const float* dequant);
#endif

struct PrecisionImplementation : Implementation {
  PrecisionGemmFn run;
#if GPUBENCH_HAVE_CUDA
  PlanFn plan = nullptr;  // null: no library choice to hold and report
#endif
};

std::vector<std::string> names_of(const std::vector<Precision>& precisions) {
  std::vector<std::string> names;
  for (Precision precision : precisions) names.push_back(precision_info(precision).name);
  return names;
}

std::vector<PrecisionImplementation> implementations() {
  const std::vector<std::string> cpu = {mode_name(Mode::host)};
  const std::vector<std::string> gpu = mode_names({Mode::resident, Mode::transfer_pinned});
  return {
      {{"openblas", Device::cpu, cpu, names_of({Precision::fp64, Precision::fp32, Precision::bf16}), 4096,
        "a CPU GEMM at 8192 takes one to several seconds per call and precision is the GPU's question here; "
        "the matmul study measures OpenBLAS to 8192",
        openblas_threads},
       gemm_openblas_precision},
#if GPUBENCH_HAVE_CUDA
      {{"cublas", Device::gpu, gpu,
        names_of({Precision::fp32, Precision::tf32, Precision::fp16, Precision::fp16_acc16, Precision::bf16,
                  Precision::fp8_e4m3, Precision::int8})},
       gemm_cublas_precision, held_cublaslt_plan},
      {{"wmma_kernel", Device::gpu, gpu, names_of({Precision::fp16})}, gemm_wmma_precision},
#endif
  };
}

const std::vector<PrecisionImplementation>& table() {
  static const std::vector<PrecisionImplementation> all = implementations();
  return all;
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
// copies (up to 32 n^2 for FP64), a CPU entry's copies of the uniform ones (up to 16 n^2),
// an output (up to 8 n^2) and the two references (16 n^2 where they hold every row); the
// reference's upcast B (8 n^2) exists only while it is computed, before any encoded copy.
double host_bytes_needed(int n) { return 88.0 * n * n; }

const PrecisionProblem& problem_for(int n) {
  static ProblemCache<int, PrecisionProblem> cache;
  require_host_memory(host_bytes_needed(n));
  return cache.get(n, [n] {
    PrecisionProblem problem;
    problem.shape = {n, n, n};
    problem.uniform = make_operands(problem.shape, Distribution::uniform);
    problem.normal = make_operands(problem.shape, Distribution::normal);
    return problem;
  });
}

// Both distributions' operands in one precision's format, kept while consecutive entries
// (the modes of one precision) use them: encoding a 16384^2 pair takes seconds.
struct EncodedProblem {
  EncodedOperands uniform, normal;
};

const EncodedProblem& encoded_for(const PrecisionProblem& problem, Precision precision) {
  static ProblemCache<std::pair<int, Precision>, EncodedProblem> cache;
  return cache.get({problem.shape.n, precision}, [&problem, precision] {
    EncodedProblem encoded;
    encoded.uniform = encode_operands(precision, problem.uniform.a, problem.uniform.b, problem.shape);
    encoded.normal = encode_operands(precision, problem.normal.a, problem.normal.b, problem.shape);
    return encoded;
  });
}

// --- verification and counters -----------------------------------------------------
struct Verdict {
  Verification uniform, normal;
  bool passed() const { return uniform.passed() && normal.passed(); }
  std::string describe() const {
    return "uniform inputs: " + uniform.describe() + "; normal inputs: " + normal.describe();
  }
};

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
  return verify_encoded_output(precision, c, encoded, reference_for(precision, operands),
                               precision_tolerance(precision, operands.reference.shape.k));
}

// The errors on both distributions, the tolerance, and the compulsory memory traffic: A and B
// read once in the input format, C written once in the output format (int8: 1-byte inputs,
// a 4-byte INT32 output).
void report(PreparedEntry& entry, Precision precision, const MatmulShape& shape, const Verdict& verdict) {
  entry.counters["flop"] = shape.flop();
  entry.counters["rel_fro_error"] = verdict.uniform.rel_fro_error;
  entry.counters["max_rel_error"] = verdict.uniform.max_rel_error;
  entry.counters["rel_fro_error_normal"] = verdict.normal.rel_fro_error;
  entry.counters["max_rel_error_normal"] = verdict.normal.max_rel_error;
  entry.counters["tolerance"] = precision_tolerance(precision, shape.k).rel_fro;
  if (!verdict.passed()) entry.wrong_result = verdict.describe();
  const GemmOperandBytes bytes = gemm_operand_bytes(precision, shape);
  entry.add_memory_traffic(bytes.inputs, static_cast<double>(bytes.output));
}

// --- CPU entries -----------------------------------------------------------------------
// Entries hold the cached encoded operands by reference: the skeleton drops an entry before it
// prepares the next, the only time the cache changes. The timed call runs on the entry's own
// copies of the uniform operands and an output, first written by the OpenMP threads
// (core/first_touch.hpp), OpenBLAS's threads being spread over the same cores.
class CpuPrecisionGemm : public PreparedEntry {
 public:
  CpuPrecisionGemm(const PrecisionImplementation& impl, Precision precision, const PrecisionProblem& problem)
      : impl_(impl), precision_(precision), shape_(problem.shape), encoded_(encoded_for(problem, precision)),
        a_(encoded_.uniform.a), b_(encoded_.uniform.b), c_(gemm_operand_bytes(precision, shape_).output, 0xFF) {  // NaN-poisoned
    Verdict verdict;
    run_once();
    verdict.uniform = check_output(precision_, c_.data(), encoded_.uniform, problem.uniform);
    impl_.run(precision_, encoded_.normal.a.data(), encoded_.normal.b.data(), c_.data(), shape_,
              encoded_.normal.dequant);
    verdict.normal = check_output(precision_, c_.data(), encoded_.normal, problem.normal);
    report(*this, precision_, shape_, verdict);
  }

  void run_once() override {
    impl_.run(precision_, a_.data(), b_.data(), c_.data(), shape_, encoded_.uniform.dequant);
  }

 private:
  const PrecisionImplementation& impl_;
  Precision precision_;
  MatmulShape shape_;
  const EncodedProblem& encoded_;
  ThreadPlacedArray<std::uint8_t> a_, b_, c_;
};

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

// The encoded operands, once the device buffers for them are known to fit.
const EncodedProblem& encoded_fitting_device(const PrecisionProblem& problem, Precision precision) {
  require_device_memory(gemm_operand_bytes(precision, problem.shape).total());
  return encoded_for(problem, precision);
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

// Both distributions checked (the uniform one last, so its operands stay on the device), then
// for transfer_pinned pinned copies of the uniform operands, which every timed call copies in
// with C copied out. Its own class, not the harness's GpuEntry: two operand sets are checked through
// one set of device buffers, with the scaled formats' dequantisation factors beside them.
class GpuPrecisionGemm : public PreparedEntry {
 public:
  GpuPrecisionGemm(const PrecisionImplementation& impl, Precision precision, const std::string& mode,
                   const PrecisionProblem& problem)
      : impl_(impl), precision_(precision), shape_(problem.shape), copies_(copies_timed(mode)),
        encoded_(encoded_fitting_device(problem, precision)), device_(encoded_.uniform),
        c_(gemm_operand_bytes(precision, shape_).output) {
    const CublasLtGemm* plan =
        impl_.plan ? &impl_.plan(precision_, shape_, CublasLtAlignment::of(device_.a.get(), device_.b.get(), c_.get()),
                                 device_.dequant.get())
                   : nullptr;
    // Where both outputs come back to: pages first written by the OpenMP threads, once (C of 8192^2
    // is up to 256 MiB, which one thread would take a while to zero).
    ThreadPlacedArray<std::uint8_t> host_c(c_.bytes(), std::uint8_t{0});
    Verdict verdict;
    verdict.normal = run_and_check(encoded_.normal, problem.normal, host_c);
    verdict.uniform = run_and_check(encoded_.uniform, problem.uniform, host_c);
    report(*this, precision_, shape_, verdict);
    if (plan) report_cublaslt_choice(*this, *plan);
    if (copies_) {
      pin_uniform_operands();
      add_link_traffic(static_cast<double>(device_.a.bytes() + device_.b.bytes()), static_cast<double>(c_.bytes()));
    }
  }

  void run_once() override {
    if (copies_) {
      CUDA_CHECK(cudaMemcpyAsync(device_.a.get(), pinned_a_->get(), device_.a.bytes(), cudaMemcpyHostToDevice, 0));
      CUDA_CHECK(cudaMemcpyAsync(device_.b.get(), pinned_b_->get(), device_.b.bytes(), cudaMemcpyHostToDevice, 0));
    }
    impl_.run(precision_, device_.a.get(), device_.b.get(), c_.get(), shape_, device_.dequant.get());
    if (copies_) CUDA_CHECK(cudaMemcpyAsync(pinned_c_->get(), c_.get(), c_.bytes(), cudaMemcpyDeviceToHost, 0));
  }

 private:
  // One call on `encoded` uploaded over the device operands and a NaN-poisoned C (all-ones
  // bytes are NaN in every float format: unwritten elements fail), checked.
  Verification run_and_check(const EncodedOperands& encoded, const Operands& operands,
                             ThreadPlacedArray<std::uint8_t>& host_c) {
    device_.upload(encoded);
    CUDA_CHECK(cudaMemset(c_.get(), 0xFF, c_.bytes()));
    impl_.run(precision_, device_.a.get(), device_.b.get(), c_.get(), shape_, device_.dequant.get());
    CUDA_CHECK(cudaMemcpy(host_c.data(), c_.get(), c_.bytes(), cudaMemcpyDeviceToHost));
    return check_output(precision_, host_c.data(), encoded, operands);
  }

  void pin_uniform_operands() {
    const EncodedOperands& uniform = encoded_.uniform;
    pinned_a_ = pinned_copy_of(uniform.a);
    pinned_b_ = pinned_copy_of(uniform.b);
    pinned_c_ = std::make_unique<PinnedBuffer<std::uint8_t>>(c_.bytes());
  }

  const PrecisionImplementation& impl_;
  Precision precision_;
  MatmulShape shape_;
  bool copies_;
  const EncodedProblem& encoded_;
  DeviceOperands device_;
  DeviceBuffer<std::uint8_t> c_;
  std::unique_ptr<PinnedBuffer<std::uint8_t>> pinned_a_, pinned_b_, pinned_c_;
};
#endif  // GPUBENCH_HAVE_CUDA

// What the device or library cannot run is skipped before the inputs are built.
std::unique_ptr<PreparedEntry> prepare(const Entry& entry) {
  const auto& impl = row_of<PrecisionImplementation>(entry);
  const Precision precision = precision_named(entry.precision);
#if GPUBENCH_HAVE_CUDA
  if (impl.on_gpu()) {
    const std::string unsupported = gpu_entry_unsupported_reason(precision, MatmulShape{entry.n, entry.n, entry.n});
    if (!unsupported.empty()) throw EntrySkipped(unsupported);
    return std::make_unique<GpuPrecisionGemm>(impl, precision, entry.mode, problem_for(entry.n));
  }
#endif
  const std::string unsupported = openblas_precision_unsupported_reason(precision);
  if (!unsupported.empty()) throw EntrySkipped(unsupported);
  return std::make_unique<CpuPrecisionGemm>(impl, precision, problem_for(entry.n));
}

// --- description ---------------------------------------------------------------------
Json describe_precision(const PrecisionInfo& info) {
  return {{"id", info.name},
          {"inputs", info.inputs},
          {"accumulate", info.accumulate},
          {"output", info.output},
          {"input_bytes", info.input_bytes},
          {"output_bytes", info.output_bytes},
          {"tensor_cores", info.tensor_cores},
          {"unit_roundoff_inputs", info.input_roundoff},
          {"unit_roundoff_accumulate", info.accumulate_roundoff},
          {"unit_roundoff_output", info.output_roundoff},
          {"tolerance", tolerance_rule()},
          {"cpu_note", text_or_null(cpu_precision_note(info.id))}};
}

Json describe_study() { return {{"precisions", array_of(all_precisions(), describe_precision)}}; }

StudyDefinition definition() {
  StudyDefinition study;
  study.name = "precision";
  study.implementations = rows(table());
  study.modes = mode_names({Mode::host, Mode::resident, Mode::transfer_pinned});
  study.default_sizes = {256, 512, 1024, 2048, 4096, 8192, 16384};
  // The driver's default suite: 4096, where each precision is compared with PyTorch (8192 as well with
  // --sizes 4096,8192: its 16 GPU entries and their references took 80 s of the ten minutes on the H100),
  // the GPU's implementations with the data resident: the peaks and the tensor-core speedups. OpenBLAS FP32
  // at 4096 is the matmul study's too, and its FP64 entry (a third of this study's time, most of it the
  // extended reference that checks it) and the copies around each precision's GEMM are left to --full.
  // Without a usable GPU the driver runs every implementation the machine can (OpenBLAS, in host mode).
  study.quick.sizes = {1024};
  study.suite.sizes = {4096};
#if GPUBENCH_HAVE_CUDA
  study.suite.impls = {"cublas", "wmma_kernel"};
#endif
  study.suite.modes = mode_names({Mode::host, Mode::resident});
  study.counters = {
      {"flop", "FLOP", "2 n^3 a call"},
      {"memory_read_bytes", "bytes", "A and B once, in the input format: 2 n^2 x its bytes"},
      {"memory_written_bytes", "bytes", "C once, in the output format (int8: a 4-byte INT32): n^2 x its bytes"},
      {"rel_fro_error", "ratio", "||C - C_ref||_F / ||C_ref||_F on the timed uniform [-1, 1) inputs, against the FP64 "
                                 "product of the FP32 values (the inputs' rounding included)"},
      {"max_rel_error", "ratio", "max |C - C_ref| / max |C_ref| on the uniform inputs"},
      {"rel_fro_error_normal", "ratio", "rel_fro_error on standard-normal inputs (checked, not timed)"},
      {"max_rel_error_normal", "ratio", "max_rel_error on the standard-normal inputs"},
      {"tolerance", "ratio", "the rel_fro_error the entry is held to: " + tolerance_rule()}};
  for (CounterRule& rule : cublaslt_choice_counters()) study.counters.push_back(std::move(rule));  // cublas entries
  study.prepare = prepare;
  study.describe = describe_study;
  return study;
}

}  // namespace
}  // namespace gpubench

int main(int argc, char** argv) { return gpubench::run_study(argc, argv, gpubench::definition()); }
