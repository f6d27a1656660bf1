// The stream study: the memory bandwidth each level of the memory hierarchy delivers, after
// BabelStream. Five kernels (copy, scale, add, triad, dot; core/stream.hpp) in FP32 and FP64 over
// arrays of n elements, n swept from 2^10 (4 KiB of FP32 per array, in the caches) to 2^30 (4 GiB
// of FP32, in device or host DRAM):
//   grid_stride, one_per_thread   our kernels (kernels/stream_kernels.cu), 16-byte vector loads
//   thrust                        thrust::transform and thrust::inner_product (kernels/stream_thrust.cu)
//   openmp                        OpenMP loops on every host thread (baselines/stream_openmp.cpp)
// each GPU one resident (the arrays on the device; its time the kernel's) and transfer_pinned
// (the inputs copied in and the output out from pinned memory in every call). Bytes are counted as
// STREAM counts them: each array the kernel reads or writes once per call. Every entry's first call
// is checked against the inputs it was given: bit for bit for copy, scale, add and triad, dot within
// the rounding of its sum. Entries: stream/<op>_<kernel>/<device>/<mode>/<fp32|fp64>/n:<elements>.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/first_touch.hpp"
#include "core/json.hpp"
#include "core/random.hpp"
#include "core/stream.hpp"
#include "core/system.hpp"
#include "harness/cpu_entry.hpp"
#include "harness/nvml.hpp"
#include "harness/study.hpp"
#include "stream_openmp.hpp"

#if GPUBENCH_HAVE_CUDA
#include "core/gpu_runtime.hpp"
#include "stream_kernels.cuh"
#include "stream_thrust.cuh"
#endif

namespace gpubench {
namespace {

const std::vector<std::string> kPrecisions = {"fp32", "fp64"};

// --- the implementation table: every operation by every kernel --------------------------
struct Kernel {
  const char* id;
  Device device;
  const char* description;
  StreamFn<float> fp32;
  StreamFn<double> fp64;
  // Its dot returns the sum to the host, waiting for the device: it cannot be queued behind the timed
  // loop's blocking kernel, and is timed on the host clock to completion.
  bool dot_waits = false;
};

const std::vector<Kernel>& kernels() {
  static const std::vector<Kernel> all = {
#if GPUBENCH_HAVE_CUDA
      {"grid_stride", Device::gpu,
       "our kernel: as many blocks as the GPU holds at once, each thread striding over the arrays in 16-byte "
       "vectors; dot: 1024-thread blocks, two vectors in flight per thread, block sums added by the last block to "
       "finish",
       stream_grid_stride, stream_grid_stride},
      {"one_per_thread", Device::gpu,
       "our kernel: one 16-byte vector per thread, as many blocks as the arrays need; dot: block sums added by the "
       "last block to finish",
       stream_one_per_thread, stream_one_per_thread},
      {"thrust", Device::gpu,
       "thrust::transform (par_nosync, enqueued as a kernel launch is); dot: thrust::inner_product, which returns "
       "its sum to the host and so waits for the device (timed on the host clock to completion)",
       stream_thrust, stream_thrust, true},
#endif
      {"openmp", Device::cpu,
       "OpenMP loops on every host thread, schedule(static) over the elements whose pages each thread first "
       "wrote, vectorised; dot: a reduction in the element type",
       stream_openmp, stream_openmp},
  };
  return all;
}

struct StreamImplementation : Implementation {
  StreamOp op = StreamOp::copy;
  const Kernel* kernel = nullptr;
};

StreamImplementation implementation(StreamOp op, const Kernel& kernel) {
  StreamImplementation row;
  row.id = std::string(stream_op_name(op)) + "_" + kernel.id;
  row.device = kernel.device;
  row.modes = kernel.device == Device::gpu ? mode_names({Mode::resident, Mode::transfer_pinned})
                                           : mode_names({Mode::host});
  row.precisions = kPrecisions;
  if (kernel.device == Device::cpu) row.threads = openmp_threads;
  row.op = op;
  row.kernel = &kernel;
  return row;
}

const std::vector<StreamImplementation>& table() {
  static const std::vector<StreamImplementation> all = [] {
    std::vector<StreamImplementation> rows;
    for (StreamOp op : all_stream_ops())
      for (const Kernel& kernel : kernels()) rows.push_back(implementation(op, kernel));
    return rows;
  }();
  return all;
}

template <typename T>
StreamFn<T> function_of(const Kernel& kernel) {
  if constexpr (std::is_same_v<T, float>) {
    return kernel.fp32;
  } else {
    return kernel.fp64;
  }
}

// --- the problem: random arrays, shared by every entry at one size and precision ---------
struct StreamProblem {
  std::vector<float> x32, y32;
  std::vector<double> x64, y64;
  double scalar = 0;

  template <typename T>
  const std::vector<T>& x() const {
    if constexpr (std::is_same_v<T, float>) {
      return x32;
    } else {
      return x64;
    }
  }
  template <typename T>
  const std::vector<T>& y() const {
    if constexpr (std::is_same_v<T, float>) {
      return y32;
    } else {
      return y64;
    }
  }
};

// x and y uniform in [-1, 1), the scalar in [0.5, 1.5); FP64 arrays hold the same values as FP32's.
const StreamProblem& problem_for(int n, const std::string& precision) {
  static ProblemCache<std::pair<int, std::string>, StreamProblem> cache;
  return cache.get({n, precision}, [n, &precision] {
    // At the peak: x and y, a CPU entry's or a pinned entry's three arrays and the output brought
    // back for the check. Checked before the arrays exist: once they do, the memory they hold is no
    // longer available.
    require_host_memory((precision == "fp64" ? 8.0 : 4.0) * 6 * n);
    StreamProblem problem;
    const std::uint64_t x_seed = configuration_seed(n, 0), y_seed = configuration_seed(n, 1);
    problem.scalar = 1.0 + 0.5 * random_uniform(1, configuration_seed(n, 2))[0];
    if (precision == "fp64") {  // the FP32 draws, written as FP64 directly
      problem.x64 = random_uniform_as<double>(n, x_seed);
      problem.y64 = random_uniform_as<double>(n, y_seed);
    } else {
      problem.x32 = random_uniform(n, x_seed);
      problem.y32 = random_uniform(n, y_seed);
    }
    return problem;
  });
}

// STREAM's bytes, the FLOP and the size of one array.
template <typename T>
void report_counters(PreparedEntry& entry, StreamOp op, std::size_t n) {
  const double array = static_cast<double>(n) * sizeof(T);
  entry.add_memory_traffic(stream_arrays_read(op) * array, stream_arrays_written(op) * array);
  entry.counters["flop"] = stream_flop_per_element(op) * n;
  entry.counters["array_bytes"] = array;
}

template <typename T>
Verification checked(StreamOp op, const StreamProblem& problem, const T* z) {
  const std::vector<T>& x = problem.x<T>();
  return verify_stream(op, x.data(), problem.y<T>().data(), z, x.size(), static_cast<T>(problem.scalar));
}

template <typename T>
std::unique_ptr<PreparedEntry> prepare_cpu(const StreamImplementation& impl, const StreamProblem& problem) {
  const StreamOp op = impl.op;
  const std::size_t n = problem.x<T>().size();
  std::vector<const std::vector<T>*> inputs = {&problem.x<T>()};
  if (stream_reads_y(op)) inputs.push_back(&problem.y<T>());
  const StreamFn<T> run = function_of<T>(*impl.kernel);
  const T scalar = static_cast<T>(problem.scalar);
  auto entry = std::make_unique<ThreadPlacedEntry<T>>(inputs, n, [=](const std::vector<const T*>& in, T* z) {
    run(op, in[0], in.size() > 1 ? in[1] : nullptr, z, n, scalar);
  });
  entry->set_verdict(checked(op, problem, entry->output()));
  report_counters<T>(*entry, op, n);
  return entry;
}

#if GPUBENCH_HAVE_CUDA
// Resident: x and y copied to the device once, untimed. transfer_pinned: every call copies the
// arrays the operation reads in from pinned memory and its output (dot: the one sum) back.
// Its own class, not the harness's GpuEntry: z is larger than what comes back (the dot keeps its block
// sums there) and y is on the device for every operation but copied only for those that read it.
template <typename T>
class GpuStream : public PreparedEntry {
 public:
  GpuStream(const StreamImplementation& impl, const std::string& mode, const StreamProblem& problem)
      : op_(impl.op), run_(function_of<T>(*impl.kernel)), n_(problem.x<T>().size()),
        scalar_(static_cast<T>(problem.scalar)), copies_(copies_timed(mode)),
        returned_(op_ == StreamOp::dot ? 1 : n_), x_(device_arrays(n_)), y_(n_), z_(n_) {
    const std::vector<T>& x = problem.x<T>();
    const std::vector<T>& y = problem.y<T>();
    if (copies_) {
      pinned_x_ = pinned_copy_of(x);
      if (stream_reads_y(op_)) pinned_y_ = pinned_copy_of(y);
      pinned_z_ = std::make_unique<PinnedBuffer<T>>(returned_);
    } else {
      CUDA_CHECK(cudaMemcpy(x_.get(), x.data(), x_.bytes(), cudaMemcpyHostToDevice));
      CUDA_CHECK(cudaMemcpy(y_.get(), y.data(), y_.bytes(), cudaMemcpyHostToDevice));
    }
    // The first call on a poisoned output (all-ones bytes are NaN), checked.
    CUDA_CHECK(cudaMemset(z_.get(), 0xFF, z_.bytes()));
    if (pinned_z_) std::fill(pinned_z_->get(), pinned_z_->get() + returned_, static_cast<T>(NAN));
    run_once();
    CUDA_CHECK(cudaDeviceSynchronize());
    // What comes back only (the dot: its one sum), in a buffer the OpenMP threads first write: a
    // gigabyte-sized std::vector would be zeroed by this thread alone.
    ThreadPlacedArray<T> z(returned_, static_cast<T>(NAN));
    if (copies_) {
      std::copy(pinned_z_->get(), pinned_z_->get() + returned_, z.data());
    } else {
      CUDA_CHECK(cudaMemcpy(z.data(), z_.get(), returned_ * sizeof(T), cudaMemcpyDeviceToHost));
    }
    set_verdict(checked(op_, problem, z.data()));
    report_counters<T>(*this, op_, n_);
    const double array = static_cast<double>(n_) * sizeof(T);
    if (copies_) add_link_traffic(stream_arrays_read(op_) * array, static_cast<double>(returned_) * sizeof(T));
    if (impl.kernel->dot_waits && op_ == StreamOp::dot) own_clock = Clock::host_to_completion;
  }

  void run_once() override {
    if (copies_) {
      CUDA_CHECK(cudaMemcpyAsync(x_.get(), pinned_x_->get(), x_.bytes(), cudaMemcpyHostToDevice, 0));
      if (pinned_y_) CUDA_CHECK(cudaMemcpyAsync(y_.get(), pinned_y_->get(), y_.bytes(), cudaMemcpyHostToDevice, 0));
    }
    run_(op_, x_.get(), y_.get(), z_.get(), n_, scalar_);
    if (copies_)
      CUDA_CHECK(cudaMemcpyAsync(pinned_z_->get(), z_.get(), returned_ * sizeof(T), cudaMemcpyDeviceToHost, 0));
  }

 private:
  // Checks that the three arrays fit before the first is allocated.
  static std::size_t device_arrays(std::size_t n) {
    require_device_memory(3.0 * n * sizeof(T));
    return n;
  }

  StreamOp op_;
  StreamFn<T> run_;
  std::size_t n_;
  T scalar_;
  bool copies_;
  std::size_t returned_;  // elements of z a transfer mode copies back
  DeviceBuffer<T> x_, y_, z_;
  std::unique_ptr<PinnedBuffer<T>> pinned_x_, pinned_y_, pinned_z_;  // transfer_pinned's host side
};
#endif  // GPUBENCH_HAVE_CUDA

template <typename T>
std::unique_ptr<PreparedEntry> prepare_typed(const StreamImplementation& impl, const Entry& entry,
                                             const StreamProblem& problem) {
#if GPUBENCH_HAVE_CUDA
  if (impl.on_gpu()) return std::make_unique<GpuStream<T>>(impl, entry.mode, problem);
#endif
  static_cast<void>(entry);
  return prepare_cpu<T>(impl, problem);
}

std::unique_ptr<PreparedEntry> prepare(const Entry& entry) {
  const auto& impl = row_of<StreamImplementation>(entry);
  const StreamProblem& problem = problem_for(entry.n, entry.precision);
  if (entry.precision == "fp64") return prepare_typed<double>(impl, entry, problem);
  return prepare_typed<float>(impl, entry, problem);
}

// Each size's entries precision by precision, so that consecutive entries share their arrays.
std::vector<Entry> arrange(std::vector<Entry> selected) {
  const auto rank = [](const Entry& e) {
    return std::make_pair(e.n, std::find(kPrecisions.begin(), kPrecisions.end(), e.precision) - kPrecisions.begin());
  };
  std::stable_sort(selected.begin(), selected.end(), [&](const Entry& a, const Entry& b) { return rank(a) < rank(b); });
  return selected;
}

// --- description ------------------------------------------------------------------------
// A count the system gave, or null where it gave none (0 or -1).
Json count_or_null(long value) { return value > 0 ? Json(value) : Json(nullptr); }

// How the GPU's theoretical memory bandwidth (peak_bytes_per_s) is computed.
constexpr const char* kPeakRule =
    "NVML's maximum memory clock (nvmlDeviceGetMaxClockInfo, NVML_CLOCK_MEM) x the memory bus width "
    "(nvmlDeviceGetMemoryBusWidth) x 2 transfers per clock / 8 bits per byte";
// How the entries' bytes are counted (memory_read_bytes, memory_written_bytes).
constexpr const char* kBytesRule =
    "STREAM's count: each array the operation reads or writes, once per call (copy and scale 2 arrays, add and "
    "triad 3, dot 2), n x the element's bytes each";

Json gpu_memory() {
  const std::string reason = gpu_unavailable_reason();
  Json out = availability(reason);
  if (!reason.empty()) return out;
#if GPUBENCH_HAVE_CUDA
  out["l2_bytes"] = count_or_null(device_attribute(cudaDevAttrL2CacheSize));
#endif
  const nvml::MemoryPeak peak = nvml::memory_peak();
  out["peak_bytes_per_s"] = peak.bytes_per_s > 0 ? Json(peak.bytes_per_s) : Json(nullptr);
  out["max_memory_clock_mhz"] = count_or_null(peak.max_clock_mhz);
  out["bus_width_bits"] = count_or_null(peak.bus_width_bits);
  out["transfers_per_clock"] = nvml::MemoryPeak::kTransfersPerClock;
  out["peak_note"] = text_or_null(peak.unavailable_reason);
  out["peak_rule"] = kPeakRule;
  return out;
}

Json host_memory() {
  return {{"l1d_bytes", count_or_null(sysconf(_SC_LEVEL1_DCACHE_SIZE))},
          {"l2_bytes", count_or_null(sysconf(_SC_LEVEL2_CACHE_SIZE))},
          {"l3_bytes", count_or_null(sysconf(_SC_LEVEL3_CACHE_SIZE))},
          {"threads", openmp_threads()},
          {"note", "cache sizes as glibc reports them (sysconf): L1d and L2 per core, L3 per socket on most CPUs"}};
}

Json describe_study() {
  const auto operation = [](StreamOp op) {
    return Json{{"id", stream_op_name(op)},
                {"formula", stream_formula(op)},
                {"arrays_read", stream_arrays_read(op)},
                {"arrays_written", stream_arrays_written(op)},
                {"flop_per_element", stream_flop_per_element(op)}};
  };
  const auto kernel = [](const Kernel& k) {
    return Json{{"id", k.id}, {"device", device_name(k.device)}, {"description", k.description}};
  };
  return {{"operations", array_of(all_stream_ops(), operation)},
          {"kernels", array_of(kernels(), kernel)},
          {"bytes_rule", kBytesRule},
          {"memory_hierarchy", {{"gpu", gpu_memory()}, {"host", host_memory()}}}};
}

Json describe_row(const Implementation& impl) {
  const auto& row = static_cast<const StreamImplementation&>(impl);
  return {{"operation", stream_op_name(row.op)}, {"kernel", row.kernel->id}};
}

StudyDefinition definition() {
  StudyDefinition study;
  study.name = "stream";
  study.implementations = rows(table());
  study.modes = mode_names({Mode::host, Mode::resident, Mode::transfer_pinned});
  study.default_sizes = geometric(1L << 10, 1L << 30, 2);  // 4 KiB to 4 GiB of FP32 per array
  study.axes.n = "elements";
  study.axes.n_unit = "elements";  // of each array
  // The driver's default suite: an L2 size (2^20 elements: 8 to 24 MiB a call, warm in the 50-60 MB L2)
  // and an HBM size (2^25, BabelStream's default: 256 to 768 MiB a call, at least 4x the L2 of an H100 or
  // H200), triad by our one-vector-per-thread kernel and dot by our grid-stride one (each our faster on
  // the H100: run stream-kernels-h100-20261124, committed in 39cf32a), triad by Thrust and by OpenMP,
  // resident and on the host: 16 entries. --quick: the HBM size. The other operations and kernels, the
  // transfer-inclusive mode and the sweep from 2^10 to 2^30 elements: --full, or --impls/--modes/--sizes.
  study.suite.sizes = {1 << 20, 1 << 25};
  study.suite.impls = {"triad_one_per_thread", "dot_grid_stride", "triad_thrust", "triad_openmp"};
  study.suite.modes = mode_names({Mode::resident, Mode::host});
  study.quick = study.suite;
  study.quick.sizes = {1 << 25};
  study.counters = {{"flop", "FLOP", "the operation's flop_per_element x n (copy 0, scale and add 1, triad and dot 2)"},
                    {"array_bytes", "bytes", "one array: n x the element's bytes (4 in FP32, 8 in FP64)"},
                    {"memory_read_bytes", "bytes", kBytesRule},
                    {"memory_written_bytes", "bytes", kBytesRule},
                    kRelFroErrorCounter,
                    kMaxRelErrorCounter};
  study.rules = {{"bytes_rule", kBytesRule},
                 {"bandwidth", "(memory_read_bytes + memory_written_bytes) / time: STREAM's bytes a second"},
                 {"peak_rule", kPeakRule}};
  study.prepare = prepare;
  study.arrange = arrange;
  study.describe = describe_study;
  study.describe_implementation = describe_row;
  return study;
}

}  // namespace
}  // namespace gpubench

int main(int argc, char** argv) { return gpubench::run_study(argc, argv, gpubench::definition()); }
