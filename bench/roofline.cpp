// The roofline study: one kernel whose arithmetic intensity is a parameter. For each of n
// elements, y = x, then k times y = y*a + x (core/fma_chain.hpp): k fused multiply-adds per
// element read, 2k FLOP per 2 x (element bytes) of memory traffic. Swept over k (the batch axis,
// FMAs per element: 1 to 1024), the rate follows the memory bandwidth while k is small and the FMA
// units' peak once it is large; where it turns is the measured ridge point. FP32, FP16 (the GPU:
// __hfma2 on half2 pairs, no tensor cores) and FP64, on the GPU (kernels/fma_chain.cu, arrays
// resident) and on every host thread (baselines/fma_chain_openmp.cpp). Every entry's first call is
// checked against x times the chain's factor, within the rounding a chain of its length allows.
// Entries: roofline/<fma_kernel|fma_loop>/<gpu|cpu>/<resident|host>/<precision>/n:<elements>/batch:<k>.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/fma_chain.hpp"
#include "core/json.hpp"
#include "core/precision_codec.hpp"
#include "core/random.hpp"
#include "harness/cpu_entry.hpp"
#include "harness/study.hpp"
#include "fma_chain_openmp.hpp"

#if GPUBENCH_HAVE_CUDA
#include "harness/gpu_entry.hpp"
#include "fma_chain.cuh"
#endif

namespace gpubench {
namespace {

// Precisions in entry order, with what they store: FP16 as binary16 bits.
struct ChainPrecision {
  const char* id;
  int element_bytes;
  const char* gpu;
  const char* cpu;
};

const std::vector<ChainPrecision>& chain_precisions() {
  static const std::vector<ChainPrecision> all = {
      {"fp32", 4, "fmaf per element, 4 per 16-byte vector", "vfmadd on FP32 vectors"},
      {"fp16", 2, "__hfma2 on half2 pairs (two elements per instruction), no tensor cores",
       "FP16 FMAs where the CPU has them (AVX512-FP16); otherwise an FP32 multiply-add rounded to FP16 at each step "
       "(the conversions vectorised)"},
      {"fp64", 8, "fma per element, 2 per 16-byte vector", "vfmadd on FP64 vectors"},
  };
  return all;
}

std::vector<std::string> precision_ids() {
  std::vector<std::string> ids;
  for (const ChainPrecision& p : chain_precisions()) ids.push_back(p.id);
  return ids;
}

struct ChainImplementation : Implementation {
  FmaChainFn<float> fp32;
  FmaChainFn<std::uint16_t> fp16;
  FmaChainFn<double> fp64;
};

const std::vector<ChainImplementation>& table() {
  static const std::vector<ChainImplementation> all = {
#if GPUBENCH_HAVE_CUDA
      {{"fma_kernel", Device::gpu, mode_names({Mode::resident}), precision_ids()}, fma_chain_kernel, fma_chain_kernel,
       fma_chain_kernel},
#endif
      {{"fma_loop", Device::cpu, mode_names({Mode::host}), precision_ids(), 0, "", openmp_threads}, fma_chain_openmp,
       fma_chain_openmp, fma_chain_openmp},
  };
  return all;
}

template <typename T>
FmaChainFn<T> function_of(const ChainImplementation& impl) {
  if constexpr (std::is_same_v<T, float>) {
    return impl.fp32;
  } else if constexpr (std::is_same_v<T, double>) {
    return impl.fp64;
  } else {
    return impl.fp16;
  }
}

// --- the problem: x and a for one size and precision, shared by every k --------------------
struct ChainProblem {
  std::vector<float> x32;
  std::vector<std::uint16_t> x16;
  std::vector<double> x64;
  double a = 0;  // as stored in the precision

  template <typename T>
  const std::vector<T>& x() const {
    if constexpr (std::is_same_v<T, float>) {
      return x32;
    } else if constexpr (std::is_same_v<T, double>) {
      return x64;
    } else {
      return x16;
    }
  }
};

// x uniform in [-1, 1) and a uniform in [0.5, 0.75), both rounded to the precision: the chain
// stays within 4|x| and keeps x's sign and size in its result at every k.
const ChainProblem& problem_for(int n, const std::string& precision) {
  static ProblemCache<std::pair<int, std::string>, ChainProblem> cache;
  return cache.get({n, precision}, [n, &precision] {
    // x, a CPU entry's copies of it and its output, the check's copy, the draws; checked before x exists.
    require_host_memory(40.0 * n);
    ChainProblem problem;
    const std::vector<float> x = random_uniform(n, configuration_seed(n, 10));
    const double a = 0.625 + 0.125 * random_uniform(1, configuration_seed(n, 11))[0];
    if (precision == "fp16") {
      problem.x16.reserve(n);
      for (float v : x) problem.x16.push_back(float_to_half_bits(v));
      problem.a = half_bits_to_float(float_to_half_bits(static_cast<float>(a)));
    } else if (precision == "fp64") {
      problem.x64.assign(x.begin(), x.end());
      problem.a = a;
    } else {
      problem.x32 = x;
      problem.a = static_cast<float>(a);
    }
    return problem;
  });
}

template <typename T>
void report_counters(PreparedEntry& entry, std::size_t n, int k) {
  const double array = static_cast<double>(n) * sizeof(T);
  entry.counters["flop"] = 2.0 * k * static_cast<double>(n);
  entry.add_memory_traffic(array, array);
  entry.counters["array_bytes"] = array;
  entry.counters["tensor_cores"] = 0;  // FMAs on the CUDA cores: the datasheet's rate without tensor cores applies
}

template <typename T>
Verification checked(const ChainProblem& problem, const T* y, int k) {
  const std::vector<T>& x = problem.x<T>();
  return verify_fma_chain(x.data(), y, x.size(), k, fma_chain_stored<T>(problem.a));
}

// x copied in once, untimed (to the device; on the CPU, into pages its threads placed); y written by
// every call; the first call checked.
template <typename T>
std::unique_ptr<PreparedEntry> prepare_typed(const ChainImplementation& impl, const std::string& mode,
                                             const ChainProblem& problem, int k) {
  const FmaChainFn<T> run = function_of<T>(impl);
  const std::size_t n = problem.x<T>().size();
  const T a = fma_chain_stored<T>(problem.a);
  const std::vector<const std::vector<T>*> inputs = {&problem.x<T>()};
  const auto call = [=](const std::vector<const T*>& in, T* y) { run(in[0], y, n, k, a); };
  const auto reported = [&problem, n, k](auto entry) -> std::unique_ptr<PreparedEntry> {
    entry->set_verdict(checked(problem, entry->output(), k));
    report_counters<T>(*entry, n, k);
    return entry;
  };
#if GPUBENCH_HAVE_CUDA
  if (impl.on_gpu()) return reported(std::make_unique<GpuEntry<T>>(inputs, n, mode, call));
#endif
  static_cast<void>(mode);
  return reported(std::make_unique<ThreadPlacedEntry<T>>(inputs, n, call));
}

std::unique_ptr<PreparedEntry> prepare(const Entry& entry) {
  const auto& impl = row_of<ChainImplementation>(entry);
  const ChainProblem& problem = problem_for(entry.n, entry.precision);
  if (entry.precision == "fp16") return prepare_typed<std::uint16_t>(impl, entry.mode, problem, entry.batch);
  if (entry.precision == "fp64") return prepare_typed<double>(impl, entry.mode, problem, entry.batch);
  return prepare_typed<float>(impl, entry.mode, problem, entry.batch);
}

// Each size's entries precision by precision (every k of it), so that consecutive entries share x.
std::vector<Entry> arrange(std::vector<Entry> selected) {
  const std::vector<std::string> order = precision_ids();
  const auto rank = [&order](const Entry& e) {
    return std::make_pair(e.n, std::find(order.begin(), order.end(), e.precision) - order.begin());
  };
  std::stable_sort(selected.begin(), selected.end(), [&](const Entry& a, const Entry& b) { return rank(a) < rank(b); });
  return selected;
}

// The arithmetic intensity of an entry, from its counters.
constexpr const char* kIntensityRule =
    "2k FLOP per element over 2 x its bytes of memory traffic (x read, y written): k / element bytes FLOP per byte";

Json describe_study() {
  const auto precision = [](const ChainPrecision& p) {
    return Json{{"id", p.id}, {"element_bytes", p.element_bytes}, {"gpu", p.gpu}, {"cpu", p.cpu}};
  };
  return {{"chain", "y = x, then k times y = y*a + x (fused multiply-adds), x uniform in [-1, 1), a in [0.5, 0.75)"},
          {"intensity_rule", kIntensityRule},
          {"tolerance",
           "largest |y - x*(a^k + ... + a + 1)| over the largest |x*(a^k + ... + 1)| within 4 u min(k, 1/(1-a)), u "
           "the precision's unit roundoff"},
          {"precisions", array_of(chain_precisions(), precision)}};
}

StudyDefinition definition() {
  StudyDefinition study;
  study.name = "roofline";
  study.implementations = rows(table());
  study.modes = mode_names({Mode::host, Mode::resident});
  // 2^25 elements: 64 MiB of FP16 to 256 MiB of FP64 per array, past the GPU's L2 (50-60 MB) in
  // every precision.
  study.default_sizes = {1 << 25};
  study.default_batches = geometric(1, 1024, 2);
  study.axes.n = "elements";
  study.axes.batch = "fma_per_element";
  study.axes.n_unit = "elements";
  study.axes.batch_unit = "FMA";  // a chain's fused multiply-adds on each element
  // The driver's default suite: one size past the L2 in every precision, k FMAs per element on both sides of
  // the ridge (an H100's datasheet puts it near k = 80 in each precision): k = 16 on the bandwidth (k = 1
  // reached no more: within 0.5% of k = 16 in each precision in the H100 run 20261127-084333), 128 just
  // past the ridge, 1024 on the FMA units (the FP32 and FP64 peaks); the GPU only: the CPU's chains at
  // k = 1024 take tenths of a second a call. --quick: k = 1 and 1024. --full: k = 1, 2, 4, ..., 1024 on both.
  study.quick.sizes = {1 << 25};
  study.quick.batches = {1, 1024};
  study.quick.impls = {"fma_kernel"};
  study.suite.sizes = {1 << 25};
  study.suite.batches = {16, 128, 1024};
  study.suite.impls = {"fma_kernel"};
  study.counters = {{"flop", "FLOP", "2 k n: k fused multiply-adds on each of n elements"},
                    {"array_bytes", "bytes", "one array: n x the element's bytes"},
                    {"memory_read_bytes", "bytes", "x once: array_bytes"},
                    {"memory_written_bytes", "bytes", "y once: array_bytes"},
                    {"tensor_cores", "flag",
                     "0: the FMAs run on the CUDA cores, so the datasheet's rate without tensor cores applies"},
                    kRelFroErrorCounter,
                    kMaxRelErrorCounter};
  study.rules = {{"intensity_rule", kIntensityRule}};
  study.prepare = prepare;
  study.arrange = arrange;
  study.describe = describe_study;
  return study;
}

}  // namespace
}  // namespace gpubench

int main(int argc, char** argv) { return gpubench::run_study(argc, argv, gpubench::definition()); }
