// The launch_overhead study: what a kernel launch costs, and how much of a chain of small kernels the
// GPU spends idle between them. A call is a chain of n kernels on one stream, timed on the host clock
// from the first launch to the stream's synchronisation (the latency protocol), launched four ways:
//   sync_each  each kernel launched and waited for (cudaStreamSynchronize) before the next;
//   stream     the n kernels launched back to back, then one synchronisation;
//   graph      the n launches captured once into a CUDA graph, replayed by one cudaGraphLaunch;
//   fused      one kernel doing the n kernels' work (the chain's arithmetic in one launch).
// Two kernels: empty_kernel (one thread, nothing to do: the launch alone) and add_kernel (x[i] += v_k on
// 2^16 floats, a few microseconds of real work). Every add_kernel stamps its span on the GPU's global
// timer, so each call also reports the kernels' own device time (kernel_busy_s) and the span from the
// first kernel's start to the last one's end (chain_span_s): what of the call's wall time the GPU was
// busy, and what were gaps. Each entry's result is checked bit for bit against the host's additions
// (a kernel skipped or run out of order changes it), and every kernel's span must have been stamped.
// Entries: launch_overhead/<empty_kernel|add_kernel>/gpu/<mode>/<none|fp32>/n:<kernels>; docs/interface.md.
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/json.hpp"
#include "harness/study.hpp"

#if GPUBENCH_HAVE_CUDA
#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <limits>
#include <queue>
#include <type_traits>

#include "core/gpu_runtime.hpp"
#include "core/random.hpp"
#include "core/verify.hpp"
#include "launch_chain.cuh"
#endif

namespace gpubench {
namespace {

constexpr int kMaxKernels = 10000;
constexpr std::size_t kElements = 1u << 16;  // each add_kernel's array: 256 KiB, in the L2 cache

enum class Launch { sync_each, stream, graph, fused };
struct LaunchInfo {
  Launch launch;
  const char* id;
  const char* description;
};

const std::vector<LaunchInfo>& launches() {
  static const std::vector<LaunchInfo> all = {
      {Launch::sync_each, "sync_each", "each kernel launched, then cudaStreamSynchronize, before the next"},
      {Launch::stream, "stream", "the n kernels launched back to back on the stream, then one cudaStreamSynchronize"},
      {Launch::graph, "graph",
       "the n launches captured once into a CUDA graph (instantiated and uploaded untimed), each call one "
       "cudaGraphLaunch and one cudaStreamSynchronize"},
      {Launch::fused, "fused", "one kernel doing the chain's n additions per element, then one cudaStreamSynchronize"},
  };
  return all;
}

const LaunchInfo& launch_named(const std::string& id) {
  for (const LaunchInfo& info : launches())
    if (id == info.id) return info;
  throw std::logic_error("launch_overhead: no launch mode " + id);
}

std::vector<std::string> launch_ids(const std::vector<Launch>& chosen) {
  std::vector<std::string> ids;
  for (Launch launch : chosen) ids.push_back(launches()[static_cast<int>(launch)].id);
  return ids;
}

struct ChainKernel : Implementation {
  bool adds = false;  // add_kernel; else empty_kernel
  const char* description;
};

const std::vector<ChainKernel>& table() {
  static const std::vector<ChainKernel> all = [] {
    const char* cap = "a longer chain says nothing a chain of 10000 does not, and its graph takes seconds to build";
    std::vector<ChainKernel> rows;
#if GPUBENCH_HAVE_CUDA
    rows.push_back({{"empty_kernel", Device::gpu, launch_ids({Launch::sync_each, Launch::stream, Launch::graph}),
                     {"none"}, kMaxKernels, cap},
                    false,
                    "a kernel of one thread that does nothing: the launch, its scheduling and its completion alone"});
    rows.push_back({{"add_kernel", Device::gpu,
                     launch_ids({Launch::sync_each, Launch::stream, Launch::graph, Launch::fused}), {"fp32"},
                     kMaxKernels, cap},
                    true,
                    "x[i] += v_k on 2^16 FP32 elements (64 blocks of 256 threads, 4 elements a thread), v_k random of "
                    "magnitude 0.5 to 1, "
                    "each kernel stamping its span on the global timer"});
#else
    static_cast<void>(cap);
#endif
    return rows;
  }();
  return all;
}

#if GPUBENCH_HAVE_CUDA
using HostClock = std::chrono::steady_clock;

// The median of the values added so far, kept in two heaps (values come one per timed call, and the
// timed loop may make tens of thousands).
class RunningMedian {
 public:
  void add(double value) {
    if (low_.empty() || value <= low_.top()) {
      low_.push(value);
    } else {
      high_.push(value);
    }
    if (low_.size() > high_.size() + 1) {
      high_.push(low_.top());
      low_.pop();
    } else if (high_.size() > low_.size()) {
      low_.push(high_.top());
      high_.pop();
    }
  }
  double median() const {
    if (low_.empty()) return std::numeric_limits<double>::quiet_NaN();
    return low_.size() > high_.size() ? low_.top() : (low_.top() + high_.top()) / 2;
  }

 private:
  std::priority_queue<double> low_;                                              // the lower half, largest on top
  std::priority_queue<double, std::vector<double>, std::greater<double>> high_;  // the upper half, smallest on top
};

struct GraphExecDeleter {
  void operator()(cudaGraphExec_t exec) const { cudaGraphExecDestroy(exec); }
};

cudaStream_t chain_stream() {
  static const cudaStream_t stream = [] {
    cudaStream_t made = nullptr;
    CUDA_CHECK(cudaStreamCreateWithFlags(&made, cudaStreamNonBlocking));
    return made;
  }();
  return stream;
}

double timer_step_s() {
  static const double step = global_timer_step_s();
  return step;
}

// The chain's inputs: x uniform in [-1, 1), and n values of magnitude 0.5 to 1 (none small enough for
// an addition to round away), with what x holds after one call: the same additions in the same order.
struct ChainProblem {
  std::vector<float> x, values, after_one_call;
};

ChainProblem chain_problem(int kernels) {
  ChainProblem p;
  p.x = random_uniform(kElements, configuration_seed(kernels, 0));
  for (float u : random_uniform(kernels, configuration_seed(kernels, 1)))
    p.values.push_back(std::copysign(0.5f + 0.5f * std::fabs(u), u));
  p.after_one_call = p.x;
  for (float& element : p.after_one_call)
    for (float value : p.values) element += value;
  return p;
}

// One entry: its chain of kernels set up on the study's stream, its first call checked.
class LaunchChain : public PreparedEntry {
 public:
  LaunchChain(const ChainKernel& kernel, Launch launch, int kernels)
      : adds_(kernel.adds), launch_(launch), kernels_(kernels), stream_(chain_stream()) {
    if (adds_) set_up_additions();
    if (launch_ == Launch::graph) capture_graph();
    const std::string wrong = warm_up();
    if (!wrong.empty()) wrong_result = wrong;
    report();
  }
  void run_once() override {
    switch (launch_) {
      case Launch::sync_each:
        for (int k = 0; k < kernels_; ++k) {
          launch_kernel(k);
          CUDA_CHECK(cudaStreamSynchronize(stream_));
        }
        return;
      case Launch::stream:
        for (int k = 0; k < kernels_; ++k) launch_kernel(k);
        return;
      case Launch::graph:
        CUDA_CHECK(cudaGraphLaunch(graph_.get(), stream_));
        return;
      case Launch::fused:
        add_values_fused_kernel(x_->get(), kElements, values_->get(), kernels_, spans_->get(), stream_);
        return;
    }
  }

  // From x's initial values, one call checked bit for bit and every kernel's span stamped.
  std::string warm_up() override {
    if (!adds_) {
      run_once();
      CUDA_CHECK(cudaStreamSynchronize(stream_));
      return "";
    }
    CUDA_CHECK(cudaMemcpyAsync(x_->get(), problem_.x.data(), x_->bytes(), cudaMemcpyHostToDevice, stream_));
    reset_spans();
    run_once();
    std::vector<float> x(kElements);
    CUDA_CHECK(cudaMemcpyAsync(x.data(), x_->get(), x_->bytes(), cudaMemcpyDeviceToHost, stream_));
    read_spans();
    const Verification verdict = verify_exact(x.data(), problem_.after_one_call.data(), kElements);
    set_verdict(verdict);
    if (!verdict.passed()) return verdict.describe();
    for (std::size_t k = 0; k < host_spans_.size(); ++k)
      if (host_spans_[k].start_ns == kUnstamped.start_ns || host_spans_[k].end_ns < host_spans_[k].start_ns)
        return "kernel " + std::to_string(k) + " of the chain left no span on the global timer";
    return "";
  }

  // The host clock from the first launch to the stream's synchronisation; the spans are reset before
  // and read after it, and their medians reported.
  double timed_call(Clock) override {
    if (adds_) reset_spans();
    const auto start = HostClock::now();
    run_once();
    CUDA_CHECK(cudaStreamSynchronize(stream_));
    const double seconds = std::chrono::duration<double>(HostClock::now() - start).count();
    if (adds_) record_spans();
    return seconds;
  }

 private:
  void set_up_additions() {
    problem_ = chain_problem(kernels_);
    require_device_memory(4.0 * (kElements + kernels_) + sizeof(KernelSpan) * kernels_);
    x_ = std::make_unique<DeviceBuffer<float>>(kElements);
    values_ = std::make_unique<DeviceBuffer<float>>(problem_.values.size());
    CUDA_CHECK(cudaMemcpy(values_->get(), problem_.values.data(), values_->bytes(), cudaMemcpyHostToDevice));
    const std::size_t span_count = launch_ == Launch::fused ? 1 : static_cast<std::size_t>(kernels_);
    spans_ = std::make_unique<DeviceBuffer<KernelSpan>>(span_count);
    unstamped_ = std::make_unique<PinnedBuffer<KernelSpan>>(span_count);
    std::fill(unstamped_->get(), unstamped_->get() + span_count, kUnstamped);
    stamped_ = std::make_unique<PinnedBuffer<KernelSpan>>(span_count);
    host_spans_.resize(span_count);
  }

  void launch_kernel(int k) {
    if (adds_) {
      add_value_kernel(x_->get(), kElements, problem_.values[k], spans_->get() + k, stream_);
    } else {
      empty_kernel(stream_);
    }
  }

  // The n launches, captured once; a graph that did not record every launch is an error. A launch
  // that fails ends the capture first, so the stream is usable by the next entry.
  void capture_graph() {
    cudaGraph_t graph = nullptr;
    CUDA_CHECK(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
    try {
      for (int k = 0; k < kernels_; ++k) launch_kernel(k);
    } catch (...) {
      if (cudaStreamEndCapture(stream_, &graph) == cudaSuccess && graph) cudaGraphDestroy(graph);
      throw;
    }
    CUDA_CHECK(cudaStreamEndCapture(stream_, &graph));
    std::size_t nodes = 0;
    cudaGraphExec_t made = nullptr;
    cudaError_t status = cudaGraphGetNodes(graph, nullptr, &nodes);
    if (status == cudaSuccess) status = cudaGraphInstantiate(&made, graph, 0);
    cudaGraphDestroy(graph);
    CUDA_CHECK(status);
    graph_.reset(made);
    if (nodes != static_cast<std::size_t>(kernels_))
      throw GpuError("the captured graph holds " + std::to_string(nodes) + " kernels, not " +
                     std::to_string(kernels_));
    CUDA_CHECK(cudaGraphUpload(graph_.get(), stream_));
    CUDA_CHECK(cudaStreamSynchronize(stream_));
  }

  void reset_spans() {
    CUDA_CHECK(cudaMemcpyAsync(spans_->get(), unstamped_->get(), spans_->bytes(), cudaMemcpyHostToDevice, stream_));
    CUDA_CHECK(cudaStreamSynchronize(stream_));
  }

  void read_spans() {
    CUDA_CHECK(cudaMemcpyAsync(stamped_->get(), spans_->get(), spans_->bytes(), cudaMemcpyDeviceToHost, stream_));
    CUDA_CHECK(cudaStreamSynchronize(stream_));
    std::copy(stamped_->get(), stamped_->get() + host_spans_.size(), host_spans_.begin());
  }

  // The kernels' own time (the sum of their spans: kernels on one stream do not overlap) and the
  // chain's span, first start to last end.
  void record_spans() {
    read_spans();
    double busy_ns = 0;
    unsigned long long first = kUnstamped.start_ns, last = 0;
    for (const KernelSpan& span : host_spans_) {
      busy_ns += static_cast<double>(span.end_ns - span.start_ns);
      first = std::min(first, span.start_ns);
      last = std::max(last, span.end_ns);
    }
    busy_.add(busy_ns * 1e-9);
    chain_.add(static_cast<double>(last - first) * 1e-9);
    counters["kernel_busy_s"] = busy_.median();
    counters["chain_span_s"] = chain_.median();
  }

  void report() {
    const bool fused = launch_ == Launch::fused;
    counters["kernels"] = fused ? 1 : kernels_;
    counters["host_launches"] = launch_ == Launch::sync_each || launch_ == Launch::stream ? kernels_ : 1;
    counters["host_synchronizations"] = launch_ == Launch::sync_each ? kernels_ : 1;
    if (!adds_) {
      add_memory_traffic(0, 0);
      return;
    }
    counters["elements"] = static_cast<double>(kElements);
    counters["timer_step_s"] = timer_step_s();
    // A chain's kernels each read and write x; the fused kernel once, and reads the values.
    const double passes = fused ? 1.0 : kernels_;
    add_memory_traffic(4.0 * kElements * passes + (fused ? 4.0 * kernels_ : 0.0), 4.0 * kElements * passes);
  }

  bool adds_;
  Launch launch_;
  int kernels_;
  cudaStream_t stream_;
  ChainProblem problem_;
  std::unique_ptr<DeviceBuffer<float>> x_, values_;
  std::unique_ptr<DeviceBuffer<KernelSpan>> spans_;
  std::unique_ptr<PinnedBuffer<KernelSpan>> unstamped_, stamped_;
  std::vector<KernelSpan> host_spans_;
  std::unique_ptr<std::remove_pointer_t<cudaGraphExec_t>, GraphExecDeleter> graph_;
  RunningMedian busy_, chain_;
};
#endif  // GPUBENCH_HAVE_CUDA

std::unique_ptr<PreparedEntry> prepare(const Entry& entry) {
#if GPUBENCH_HAVE_CUDA
  return std::make_unique<LaunchChain>(row_of<ChainKernel>(entry), launch_named(entry.mode).launch, entry.n);
#else
  static_cast<void>(entry);
  throw EntrySkipped("built without CUDA");  // not reached: the study has no rows without it
#endif
}

Json describe_kernel(const Implementation& impl) {
  return {{"description", static_cast<const ChainKernel&>(impl).description}};
}

// What kernel_busy_s and chain_span_s measure.
constexpr const char* kBusyRule =
    "kernel_busy_s: the median over the entry's timed calls of the sum of its kernels' spans (first block's start "
    "to last block's end on %globaltimer, whose smallest step is timer_step_s); chain_span_s: the median of the "
    "first kernel's start to the last kernel's end";

Json describe_study() {
  const auto launch = [](const LaunchInfo& info) { return Json{{"id", info.id}, {"description", info.description}}; };
  return {{"launches", array_of(launches(), launch)},
          {"elements", kElements},
          {"timed_region",
           "host clock from the first launch to cudaStreamSynchronize's return on a non-blocking stream; resetting "
           "and reading the kernels' spans, the graph's capture and the checks excluded"},
          {"busy_rule", kBusyRule}};
}

StudyDefinition definition() {
  StudyDefinition study;
  study.name = "launch_overhead";
  study.implementations = rows(table());
  study.modes = launch_ids({Launch::sync_each, Launch::stream, Launch::graph, Launch::fused});
  study.default_sizes = {1, 10, 100, 1000};
  study.axes.n = "kernels";
  study.axes.n_unit = "kernels";  // in the chain
  // The driver's default suite: chains of 1 kernel (an empty kernel's launch and synchronisation, the
  // classic latency) and of 100 (the time per kernel of each way of launching, the busy share of a
  // small-kernel chain): 14 host-timed entries. --quick: 100. Chains of 10 and 1000: --full.
  study.quick.sizes = {100};
  study.suite.sizes = {1, 100};
  study.counters = {
      {"kernels", "count", "kernels the call runs: n, 1 fused"},
      {"host_launches", "count", "launches the host makes: n launched one by one, 1 as a graph or fused"},
      {"host_synchronizations", "count", "n synchronising after each kernel, else 1"},
      {"elements", "elements", "each kernel's array, where the kernels add (elements)"},
      {"memory_read_bytes", "bytes", "each kernel reads x once (4 x elements), the fused kernel once and the n "
                                     "values; 0 for the empty kernel"},
      {"memory_written_bytes", "bytes", "each kernel writes x once (4 x elements), the fused kernel once"},
      kRelFroErrorCounter,
      kMaxRelErrorCounter,
      {"kernel_busy_s", "s", kBusyRule},
      {"chain_span_s", "s", kBusyRule},
      {"timer_step_s", "s", "the smallest step of %globaltimer seen on this GPU"}};
  study.rules = {{"busy_rule", kBusyRule}};
  study.gpu_clock = Clock::host_to_completion;
  study.prepare = prepare;
  study.describe = describe_study;
  study.describe_implementation = describe_kernel;
  return study;
}

}  // namespace
}  // namespace gpubench

int main(int argc, char** argv) { return gpubench::run_study(argc, argv, gpubench::definition()); }
