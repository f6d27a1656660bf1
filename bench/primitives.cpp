// The primitives study: the parallel primitives GPU programs are built of (reduce, inclusive scan,
// sort of 32-bit keys, of key-value pairs and of 64-bit keys, transform), in every library that has
// them, from 1 Ki to 1 Gi elements:
//   thrust         Thrust as it is usually called (thrust::device): temporary storage cudaMalloc'd and
//                  cudaFree'd in every call, a synchronisation at its end, reduce's sum copied back
//   thrust_cached  the same calls through a caching allocator (thrust::cuda::par(allocator))
//   cub            CUB's device API, its temporary storage allocated once, nothing synchronised
//   std_seq        the C++ standard algorithms, one thread
//   std_par        the same with std::execution::par (TBB), where the build has TBB
//   gnu_parallel   the same in libstdc++'s parallel mode (OpenMP), in every GCC build
// so that what Thrust's convenience costs (allocation, synchronisation) is told from the primitive.
// GPU entries run resident (operands in device memory: the call alone) and transfer_pinned (every
// call copies its inputs in and its outputs out, pinned host memory). Sorts work in place: an entry
// restores its unsorted keys before every call, outside the timed region, so each call is timed on
// the host clock from the call to its completion. Every first call is checked exactly.
// Entries: primitives/<primitive>/<device>/<mode>/<library>/n:<elements>; docs/interface.md.
#include <omp.h>

#include <cstdint>
#include <cstring>
#include <deque>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "core/first_touch.hpp"
#include "core/host_memory.hpp"
#include "core/json.hpp"
#include "core/primitives_check.hpp"
#include "core/random.hpp"
#include "harness/study.hpp"
#include "primitives_cpu.hpp"

#if GPUBENCH_HAVE_CUDA
#include "core/gpu_runtime.hpp"
#include "primitives_cub.cuh"
#include "primitives_thrust.cuh"
#endif

namespace gpubench {
namespace {

// --- the primitives ---------------------------------------------------------------------
enum class Primitive { reduce, inclusive_scan, sort_u32, sort_pairs, sort_u64, transform };

// What a call does with each array its function takes: reads it, writes it, sorts it in place, or
// (reduce's sum) writes one value to host memory, which it is for every implementation.
enum class Role { input, output, in_place, host_result };

struct Operand {
  Role role;
  std::size_t element_bytes;
  const char* what;
};

struct PrimitiveInfo {
  Primitive primitive;
  const char* id;
  const char* description;
  std::vector<Operand> operands;  // in the order the function takes them
};

const std::vector<PrimitiveInfo>& primitives() {
  static const std::vector<PrimitiveInfo> all = {
      {Primitive::reduce, "reduce", "the sum of uint32 values, modulo 2^32 (exact in any order)",
       {{Role::input, 4, "values"}, {Role::host_result, 4, "sum"}}},
      {Primitive::inclusive_scan, "inclusive_scan", "the prefix sums of uint32 values, modulo 2^32",
       {{Role::input, 4, "values"}, {Role::output, 4, "prefix sums"}}},
      {Primitive::sort_u32, "sort_u32", "uint32 keys sorted ascending, in place", {{Role::in_place, 4, "keys"}}},
      {Primitive::sort_pairs, "sort_pairs",
       "uint32 keys sorted ascending in place, a uint32 value moving with each (its key's position in the input)",
       {{Role::in_place, 4, "keys"}, {Role::in_place, 4, "values"}}},
      {Primitive::sort_u64, "sort_u64", "uint64 keys sorted ascending, in place", {{Role::in_place, 8, "keys"}}},
      {Primitive::transform, "transform", "y = a*x + b on FP32 values, one fused multiply-add each",
       {{Role::input, 4, "x"}, {Role::output, 4, "y"}}},
  };
  return all;
}

bool sorts_in_place(const PrimitiveInfo& p) {
  for (const Operand& o : p.operands)
    if (o.role == Role::in_place) return true;
  return false;
}

std::size_t operand_bytes(const Operand& o, std::size_t n) {
  return o.element_bytes * (o.role == Role::host_result ? 1 : n);
}

double array_bytes(const PrimitiveInfo& p, std::size_t n) {
  double bytes = 0;
  for (const Operand& o : p.operands)
    if (o.role != Role::host_result) bytes += static_cast<double>(operand_bytes(o, n));
  return bytes;
}

const char* role_name(Role role) {
  switch (role) {
    case Role::input: return "input";
    case Role::output: return "output";
    case Role::in_place: return "in_place";
    case Role::host_result: return "host_result";
  }
  return "?";
}

// --- the libraries ------------------------------------------------------------------------
struct Library {
  std::string id;
  Device device;
  std::string description;
  PrimitiveFunctions functions;
  std::string unavailable;  // why this build cannot run it; "" when it can
  int (*threads)() = nullptr;
  TemporaryStorageUse (*storage_use)() = nullptr;  // its temporary storage, where it can be observed
  void (*release_storage)() = nullptr;
};

const std::vector<Library>& libraries() {
  static const std::vector<Library> all = [] {
    std::vector<Library> found;
#if GPUBENCH_HAVE_CUDA
    found.push_back({"thrust", Device::gpu,
                     "Thrust with thrust::device, as usually called: temporary storage from cudaMalloc and cudaFree "
                     "(which waits for the device) in every call, a synchronisation before each call returns, "
                     "reduce's sum copied to the host",
                     thrust_primitives()});
    found.push_back({"thrust_cached", Device::gpu,
                     "the same Thrust calls with thrust::cuda::par(allocator), a cache of device blocks kept across "
                     "calls: no allocation once the first call has filled it, still a synchronisation per call "
                     "(no transform: it takes no temporary storage)",
                     thrust_cached_primitives(), "", nullptr, thrust_cache_use, thrust_cache_release});
    found.push_back({"cub", Device::gpu,
                     "CUB's device API (DeviceReduce::Sum, DeviceScan::InclusiveSum, DeviceRadixSort::SortKeys and "
                     "SortPairs, DeviceTransform::Transform) with its temporary storage allocated once: nothing "
                     "allocated or synchronised in a call; reduce's sum copied to pinned host memory on the stream",
                     cub_primitives(), "", nullptr, cub_workspace_use, cub_workspace_release});
#endif
    found.push_back({"std_seq", Device::cpu,
                     "std::reduce, std::inclusive_scan, std::sort and std::transform without an execution policy: one "
                     "thread (pairs sorted as 64-bit words, key high)",
                     std_seq_primitives(), "", one_thread});
    found.push_back({"std_par", Device::cpu, "the same with std::execution::par: GCC's parallel algorithms on TBB",
                     std_par_primitives(), std_par_unavailable_reason(), std_par_threads});
    found.push_back({"gnu_parallel", Device::cpu,
                     "the same algorithms in libstdc++'s parallel mode (__gnu_parallel::accumulate, partial_sum, sort, "
                     "transform) on OpenMP's threads: a parallel CPU in every GCC build, with TBB or without",
                     gnu_parallel_primitives(), "", gnu_parallel_threads});
    return found;
  }();
  return all;
}

bool has(const PrimitiveFunctions& f, Primitive primitive) {
  switch (primitive) {
    case Primitive::reduce: return f.reduce;
    case Primitive::inclusive_scan: return f.inclusive_scan;
    case Primitive::sort_u32: return f.sort_u32;
    case Primitive::sort_pairs: return f.sort_pairs;
    case Primitive::sort_u64: return f.sort_u64;
    case Primitive::transform: return f.transform;
  }
  return false;
}

// The CPU sorts are capped where one call takes seconds.
std::pair<int, std::string> cap(const Library& library, const PrimitiveInfo& p) {
  if (!sorts_in_place(p) || library.device == Device::gpu) return {0, ""};
  if (library.id == "std_seq")
    return {1 << 22, "std::sort on one thread takes over a second per call beyond 2^22 keys; std_par and "
                     "gnu_parallel cover the CPU above"};
  return {1 << 28, "2^28 keys are the sort the issue compares with the GPU; 2^30 take tens of seconds per call"};
}

// --- the implementation table: one row per primitive and library -------------------------
struct PrimitivesImplementation : Implementation {
  const PrimitiveInfo* primitive = nullptr;
  const Library* library = nullptr;
};

std::vector<PrimitivesImplementation> implementations() {
  const std::vector<std::string> cpu = {mode_name(Mode::host)};
  const std::vector<std::string> gpu = mode_names({Mode::resident, Mode::transfer_pinned});
  std::vector<PrimitivesImplementation> rows;
  for (const PrimitiveInfo& p : primitives())
    for (const Library& library : libraries()) {
      // A library that cannot run here keeps its rows: its entries are skipped with the reason.
      if (!has(library.functions, p.primitive) && library.unavailable.empty()) continue;
      PrimitivesImplementation row;
      row.id = p.id;
      row.device = library.device;
      row.modes = library.device == Device::gpu ? gpu : cpu;
      row.precisions = {library.id};
      std::tie(row.max_size, row.cap_reason) = cap(library, p);
      row.threads = library.threads;
      row.primitive = &p;
      row.library = &library;
      rows.push_back(row);
    }
  return rows;
}

const std::vector<PrimitivesImplementation>& table() {
  static const std::vector<PrimitivesImplementation> all = implementations();
  return all;
}

// --- inputs and references ----------------------------------------------------------------
// Uniform in [-1, 1) on a grid of 2^-23, from random bits on all threads (std::uniform_real_distribution
// on one thread takes tens of seconds at 2^30 values).
std::vector<float> uniform_floats(std::size_t n, std::uint64_t seed) {
  std::vector<float> values(n);
  fill_random_bytes(reinterpret_cast<std::uint8_t*>(values.data()), n * sizeof(float), seed);
#pragma omp parallel for schedule(static)
  for (std::size_t i = 0; i < n; ++i) {
    std::uint32_t bits;
    std::memcpy(&bits, &values[i], sizeof bits);
    values[i] = static_cast<float>(bits >> 8) * 0x1p-23f - 1.0f;
  }
  return values;
}

template <typename T>
std::vector<T> random_words(std::size_t n, std::uint64_t seed) {
  std::vector<T> words(n);
  fill_random_bytes(reinterpret_cast<std::uint8_t*>(words.data()), n * sizeof(T), seed);
  return words;
}

// One primitive's inputs at one size and what its output must be, shared by every library and mode.
struct PrimitiveProblem {
  std::size_t n = 0;
  std::vector<std::uint32_t> keys32;     // reduce, inclusive_scan, sort_u32, sort_pairs
  std::vector<std::uint32_t> positions;  // sort_pairs' values: 0, 1, ..., n - 1
  std::vector<std::uint64_t> keys64;     // sort_u64
  std::vector<float> x;                  // transform
  float a = 0, b = 0;                    // transform's coefficients, a in [0.5, 2), b in [-1, 1)
  std::uint32_t sum = 0;
  std::vector<std::uint32_t> sorted32;
  std::vector<std::uint64_t> sorted64;
  std::vector<const void*> initial;  // per operand: what it holds before a call (nullptr: an output)
};

PrimitiveProblem make_problem(Primitive primitive, std::size_t n) {
  PrimitiveProblem problem;
  problem.n = n;
  switch (primitive) {
    case Primitive::reduce:
      problem.keys32 = random_words<std::uint32_t>(n, configuration_seed(n, 400));
      problem.sum = wrapping_sum(problem.keys32.data(), n);
      problem.initial = {problem.keys32.data(), nullptr};
      break;
    case Primitive::inclusive_scan:
      problem.keys32 = random_words<std::uint32_t>(n, configuration_seed(n, 400));
      problem.initial = {problem.keys32.data(), nullptr};
      break;
    case Primitive::sort_u32:
    case Primitive::sort_pairs:
      problem.keys32 = random_words<std::uint32_t>(n, configuration_seed(n, 400));
      problem.sorted32 = sorted_keys(problem.keys32);
      problem.initial = {problem.keys32.data()};
      if (primitive == Primitive::sort_pairs) {
        problem.positions.resize(n);
        for (std::size_t i = 0; i < n; ++i) problem.positions[i] = static_cast<std::uint32_t>(i);
        problem.initial.push_back(problem.positions.data());
      }
      break;
    case Primitive::sort_u64:
      problem.keys64 = random_words<std::uint64_t>(n, configuration_seed(n, 401));
      problem.sorted64 = sorted_keys(problem.keys64);
      problem.initial = {problem.keys64.data()};
      break;
    case Primitive::transform: {
      problem.x = uniform_floats(n, configuration_seed(n, 402));
      const std::vector<float> coefficients = random_uniform(2, configuration_seed(n, 403));
      problem.a = 1.25f + 0.75f * coefficients[0];
      problem.b = coefficients[1];
      problem.initial = {problem.x.data(), nullptr};
      break;
    }
  }
  return problem;
}

// Host bytes at the peak: the inputs and the reference, and an entry's own copies of its arrays
// (CPU: placed copies and the unsorted keys it restores; GPU: pinned sources and destinations).
double host_bytes_needed(const PrimitiveInfo& p, std::size_t n) { return 5.0 * array_bytes(p, n); }

const PrimitiveProblem& problem_for(const PrimitiveInfo& p, int n) {
  static ProblemCache<std::pair<int, int>, PrimitiveProblem> cache;
  const auto count = static_cast<std::size_t>(n);
  require_host_memory(host_bytes_needed(p, count));
  return cache.get({static_cast<int>(p.primitive), n}, [&p, count] { return make_problem(p.primitive, count); });
}

// --- one call, its check and its traffic ---------------------------------------------------
struct CallScalars {
  std::size_t n;
  float a, b;
};

template <typename T>
T* as(void* array) {
  return static_cast<T*>(array);
}

template <typename T>
const T* as(const void* array) {
  return static_cast<const T*>(array);
}

// The library's function of the primitive on `arrays` (one per operand, in order).
void call(const PrimitiveFunctions& f, Primitive primitive, const std::vector<void*>& arrays, CallScalars s) {
  switch (primitive) {
    case Primitive::reduce: return f.reduce(as<std::uint32_t>(arrays[0]), s.n, as<std::uint32_t>(arrays[1]));
    case Primitive::inclusive_scan:
      return f.inclusive_scan(as<std::uint32_t>(arrays[0]), as<std::uint32_t>(arrays[1]), s.n);
    case Primitive::sort_u32: return f.sort_u32(as<std::uint32_t>(arrays[0]), s.n);
    case Primitive::sort_pairs: return f.sort_pairs(as<std::uint32_t>(arrays[0]), as<std::uint32_t>(arrays[1]), s.n);
    case Primitive::sort_u64: return f.sort_u64(as<std::uint64_t>(arrays[0]), s.n);
    case Primitive::transform: return f.transform(as<float>(arrays[0]), as<float>(arrays[1]), s.n, s.a, s.b);
  }
}

// "" when the arrays after a call (host memory, one per operand; inputs may be null) are what the
// primitive must produce from the problem's inputs.
std::string check(Primitive primitive, const PrimitiveProblem& problem, const std::vector<const void*>& after) {
  switch (primitive) {
    case Primitive::reduce: return check_sum(*as<std::uint32_t>(after[1]), problem.sum);
    case Primitive::inclusive_scan:
      return check_inclusive_scan(problem.keys32.data(), as<std::uint32_t>(after[1]), problem.n);
    case Primitive::sort_u32: return check_sorted(as<std::uint32_t>(after[0]), problem.sorted32);
    case Primitive::sort_pairs:
      return check_sorted_pairs(problem.keys32.data(), problem.sorted32, as<std::uint32_t>(after[0]),
                                as<std::uint32_t>(after[1]));
    case Primitive::sort_u64: return check_sorted(as<std::uint64_t>(after[0]), problem.sorted64);
    case Primitive::transform:
      return check_affine_transform(problem.x.data(), as<float>(after[1]), problem.n, problem.a, problem.b);
  }
  return "unknown primitive";
}

// The first call's verdict: what is wrong, or exactness (the errors every study reports are 0: each
// check compares element for element).
void report_verdict(PreparedEntry& entry, const std::string& wrong) {
  entry.wrong_result = wrong;
  if (!wrong.empty()) return;
  entry.counters["rel_fro_error"] = 0;
  entry.counters["max_rel_error"] = 0;
}

// Compulsory traffic of one call: each array read once and written once as its role says (a sort
// reads and writes its keys once, whatever passes it makes), reduce's sum written once; across the
// link, with copies, what is read goes in and what is written comes out (the sum always does).
void report_traffic(PreparedEntry& entry, const PrimitiveInfo& p, std::size_t n, bool on_gpu, bool copies) {
  double read = 0, written = 0, to_device = 0, to_host = 0;
  for (const Operand& o : p.operands) {
    const auto bytes = static_cast<double>(operand_bytes(o, n));
    if (o.role == Role::input || o.role == Role::in_place) read += bytes;
    if (o.role != Role::input) written += bytes;
    if (o.role == Role::host_result) {
      to_host += bytes;
    } else if (copies) {
      if (o.role != Role::output) to_device += bytes;
      if (o.role != Role::input) to_host += bytes;
    }
  }
  entry.add_memory_traffic(read, written);
  if (on_gpu) entry.add_link_traffic(to_device, to_host);
  entry.counters["elements"] = static_cast<double>(n);
}

// --- CPU entries --------------------------------------------------------------------------
// Copies in the static split of ThreadPlacedArray's first touch: each thread copies the pages it placed.
void placed_copy(std::uint8_t* to, const std::uint8_t* from, std::size_t bytes, int threads) {
#pragma omp parallel for schedule(static) num_threads(threads)
  for (std::size_t i = 0; i < bytes; ++i) to[i] = from[i];
}

// Its own copies of the arrays, placed by as many OpenMP threads as the library runs (TBB splits
// the work its own way: on one socket it makes no difference). Sorts restore their unsorted keys
// before every call, untimed, and are timed call by call.
class CpuPrimitive : public PreparedEntry {
 public:
  CpuPrimitive(const PrimitivesImplementation& impl, const PrimitiveProblem& problem)
      : impl_(impl), scalars_{problem.n, problem.a, problem.b}, threads_(impl.threads()) {
    const PrimitiveInfo& p = *impl.primitive;
    for (std::size_t k = 0; k < p.operands.size(); ++k) {
      const Operand& o = p.operands[k];
      if (o.role == Role::host_result) {
        arrays_.push_back(&result_);
        continue;
      }
      const std::size_t bytes = operand_bytes(o, problem.n);
      std::uint8_t* array = placed(bytes);  // all-ones: an element never written fails the check
      if (o.role != Role::output)
        placed_copy(array, static_cast<const std::uint8_t*>(problem.initial[k]), bytes, threads_);
      if (o.role == Role::in_place) {
        restores_.push_back({array, placed(bytes), bytes});
        placed_copy(restores_.back().unsorted, array, bytes, threads_);
      }
      arrays_.push_back(array);
    }
    if (!restores_.empty()) own_clock = Clock::host;  // untimed restores between calls
    result_ = ~problem.sum;                            // what reduce must overwrite
    restore();
    run_once();
    std::vector<const void*> after(arrays_.begin(), arrays_.end());
    report_verdict(*this, check(p.primitive, problem, after));
    report_traffic(*this, p, problem.n, false, false);
  }

  void run_once() override { call(impl_.library->functions, impl_.primitive->primitive, arrays_, scalars_); }

  double timed_call(Clock clock) override {
    restore();
    return PreparedEntry::timed_call(clock);
  }

 private:
  struct Restore {
    std::uint8_t* array;
    std::uint8_t* unsorted;
    std::size_t bytes;
  };

  std::uint8_t* placed(std::size_t bytes) {
    placed_.emplace_back(bytes, std::uint8_t{0xFF}, threads_);
    return placed_.back().data();
  }

  void restore() {
    for (const Restore& r : restores_) placed_copy(r.array, r.unsorted, r.bytes, threads_);
  }

  const PrimitivesImplementation& impl_;
  CallScalars scalars_;
  int threads_;
  std::deque<ThreadPlacedArray<std::uint8_t>> placed_;  // a deque: built in place, never moved
  std::vector<void*> arrays_;
  std::vector<Restore> restores_;
  std::uint32_t result_ = 0;
};

#if GPUBENCH_HAVE_CUDA
// --- GPU entries --------------------------------------------------------------------------
// resident: the arrays in device memory, filled once; sorts keep an unsorted copy on the device and
// restore their keys from it before every call (untimed), and are timed on the host clock from the
// call to its completion; the others on the device clock. transfer_pinned: every call copies what
// it reads in from pinned memory and what it writes out to other pinned memory, so the sources
// stay unsorted. reduce's sum goes to pinned host memory in both. Its own class, not the harness's
// GpuEntry: operands are read, written or both (sorts in place), and a result can land in host memory.
class GpuPrimitive : public PreparedEntry {
 public:
  GpuPrimitive(const PrimitivesImplementation& impl, const std::string& mode, const PrimitiveProblem& problem)
      : impl_(impl), scalars_{problem.n, problem.a, problem.b}, copies_(copies_timed(mode)) {
    const PrimitiveInfo& p = *impl.primitive;
    const double arrays = array_bytes(p, problem.n);
    // The arrays, their unsorted copies, and the sorts' second buffers.
    require_device_memory(sorts_in_place(p) ? 3 * arrays : arrays);
    for (std::size_t k = 0; k < p.operands.size(); ++k) add_operand(p.operands[k], problem, k);
    if (!copies_ && !restores_.empty()) own_clock = Clock::host_to_completion;
    report_verdict(*this, first_call_checked(problem));
    if (wrong_result.empty()) count_temporary_storage();
    report_traffic(*this, p, problem.n, true, copies_);
  }

  ~GpuPrimitive() override {
    if (!impl_.library->release_storage) return;
    try {
      impl_.library->release_storage();
    } catch (const GpuError&) {
      // A device that failed in a call fails here too; the entry already says so.
    }
  }

  void run_once() override {
    for (const Copy& in : copies_in_)
      CUDA_CHECK(cudaMemcpyAsync(in.to, in.from, in.bytes, cudaMemcpyHostToDevice, 0));
    call(impl_.library->functions, impl_.primitive->primitive, arrays_, scalars_);
    for (const Copy& out : copies_out_)
      CUDA_CHECK(cudaMemcpyAsync(out.to, out.from, out.bytes, cudaMemcpyDeviceToHost, 0));
  }

  std::string warm_up() override {
    restore();
    return PreparedEntry::warm_up();
  }

  double timed_call(Clock clock) override {
    restore();
    CUDA_CHECK(cudaDeviceSynchronize());
    return PreparedEntry::timed_call(clock);
  }

 private:
  struct Copy {
    void* to;
    const void* from;
    std::size_t bytes;
  };

  void add_operand(const Operand& o, const PrimitiveProblem& problem, std::size_t k) {
    const std::size_t bytes = operand_bytes(o, problem.n);
    if (o.role == Role::host_result) {
      pinned_.emplace_back(bytes);
      arrays_.push_back(pinned_.back().get());
      host_after_.push_back(pinned_.back().get());
      return;
    }
    device_.emplace_back(bytes);
    void* array = device_.back().get();
    arrays_.push_back(array);
    host_after_.push_back(nullptr);
    const void* initial = problem.initial[k];
    if (copies_) {
      if (o.role != Role::output) {
        pinned_.emplace_back(bytes);
        std::memcpy(pinned_.back().get(), initial, bytes);
        copies_in_.push_back({array, pinned_.back().get(), bytes});
      }
      if (o.role != Role::input) {
        pinned_.emplace_back(bytes);
        copies_out_.push_back({pinned_.back().get(), array, bytes});
        host_after_.back() = pinned_.back().get();
      }
      return;
    }
    if (o.role != Role::output) CUDA_CHECK(cudaMemcpy(array, initial, bytes, cudaMemcpyHostToDevice));
    if (o.role == Role::in_place) {
      device_.emplace_back(bytes);
      CUDA_CHECK(cudaMemcpy(device_.back().get(), array, bytes, cudaMemcpyDeviceToDevice));
      restores_.push_back({array, device_.back().get(), bytes});
    }
    if (o.role != Role::input) downloads_.push_back({k, bytes});
  }

  // Enqueues the copies back of the unsorted keys (resident sorts).
  void restore() {
    for (const Copy& r : restores_) CUDA_CHECK(cudaMemcpyAsync(r.to, r.from, r.bytes, cudaMemcpyDeviceToDevice, 0));
  }

  // The first call, on outputs poisoned with all-ones bytes (NaN in FP32) and a sum set to what it
  // must not be, checked on the host.
  std::string first_call_checked(const PrimitiveProblem& problem) {
    for (std::size_t k = 0; k < arrays_.size(); ++k) {
      const Operand& o = impl_.primitive->operands[k];
      if (o.role == Role::output) CUDA_CHECK(cudaMemset(arrays_[k], 0xFF, operand_bytes(o, scalars_.n)));
      if (o.role == Role::host_result) *as<std::uint32_t>(arrays_[k]) = ~problem.sum;
    }
    for (const Copy& out : copies_out_) std::memset(out.to, 0xFF, out.bytes);
    restore();
    run_once();
    CUDA_CHECK(cudaDeviceSynchronize());
    std::deque<std::vector<std::uint8_t>> downloaded;
    for (const auto& [k, bytes] : downloads_) {
      downloaded.emplace_back(bytes);
      CUDA_CHECK(cudaMemcpy(downloaded.back().data(), arrays_[k], bytes, cudaMemcpyDeviceToHost));
      host_after_[k] = downloaded.back().data();
    }
    const std::string wrong = check(impl_.primitive->primitive, problem, host_after_);
    for (const auto& [k, bytes] : downloads_) host_after_[k] = nullptr;
    return wrong;
  }

  // What one more (untimed) call asks of the library's temporary storage, where it can be observed:
  // temporary_bytes and temporary_requests, and temporary_device_allocations (cudaMalloc calls:
  // 0 once storage is cached or preallocated).
  void count_temporary_storage() {
    if (!impl_.library->storage_use) return;
    restore();
    const TemporaryStorageUse before = impl_.library->storage_use();
    run_once();
    CUDA_CHECK(cudaDeviceSynchronize());
    const TemporaryStorageUse after = impl_.library->storage_use();
    counters["temporary_bytes"] = after.bytes_requested - before.bytes_requested;
    counters["temporary_requests"] = static_cast<double>(after.requests - before.requests);
    counters["temporary_device_allocations"] =
        static_cast<double>(after.device_allocations - before.device_allocations);
  }

  const PrimitivesImplementation& impl_;
  CallScalars scalars_;
  bool copies_;
  std::deque<DeviceBuffer<std::uint8_t>> device_;  // deques: built in place, never moved
  std::deque<PinnedBuffer<std::uint8_t>> pinned_;
  std::vector<void*> arrays_;                       // what the function gets, one per operand
  std::vector<const void*> host_after_;             // where each operand's result can be read on the host
  std::vector<Copy> copies_in_, copies_out_, restores_;
  std::vector<std::pair<std::size_t, std::size_t>> downloads_;  // (operand, bytes) brought back to check
};
#endif  // GPUBENCH_HAVE_CUDA

std::unique_ptr<PreparedEntry> prepare(const Entry& entry) {
  const auto& impl = row_of<PrimitivesImplementation>(entry);
  if (!impl.library->unavailable.empty()) throw EntrySkipped(impl.library->unavailable);
  const PrimitiveProblem& problem = problem_for(*impl.primitive, entry.n);
#if GPUBENCH_HAVE_CUDA
  if (impl.on_gpu()) return std::make_unique<GpuPrimitive>(impl, entry.mode, problem);
#endif
  return std::make_unique<CpuPrimitive>(impl, problem);
}

// --- description ----------------------------------------------------------------------------
Json describe_primitive(const PrimitiveInfo& p) {
  const auto operand = [](const Operand& o) {
    return Json{{"what", o.what}, {"role", role_name(o.role)}, {"element_bytes", o.element_bytes}};
  };
  return {{"id", p.id},
          {"description", p.description},
          {"in_place", sorts_in_place(p)},
          {"operands", array_of(p.operands, operand)}};
}

Json describe_library(const Library& library) {
  Json described = {{"id", library.id}, {"device", device_name(library.device)}, {"description", library.description}};
  described.update(availability(library.unavailable));
  return described;
}

// The entries' memory_read_bytes and memory_written_bytes.
constexpr const char* kMemoryTrafficRule =
    "compulsory bytes of one call: each input and in-place array read once, each output and in-place array "
    "written once (a radix sort's passes move more)";

Json describe_study() {
  return {{"primitives", array_of(primitives(), describe_primitive)},
          {"libraries", array_of(libraries(), describe_library)},
          {"timed_region",
           "GPU resident: device time on CUDA events of back-to-back calls (the throughput protocol), except sorts; "
           "sorts (in place) and every transfer_pinned entry: the host clock from the call to its completion, one "
           "call at a time, a sort's keys restored from an unsorted copy before each call outside it; CPU: the host "
           "clock, sorts call by call after the same untimed restore"},
          {"verification",
           "every entry's first call, exactly: the sum and prefix sums modulo 2^32, sorted keys equal to the input "
           "sorted by libstdc++'s parallel-mode sort, pairs whose values are their keys' input positions each once, "
           "the transform bit for bit against std::fma"},
          {"memory_traffic", kMemoryTrafficRule}};
}

Json describe_implementation(const Implementation& impl) {
  const auto& row = static_cast<const PrimitivesImplementation&>(impl);
  return {{"library", row.library->id}, {"primitive", row.primitive->id}};
}

StudyDefinition definition() {
  StudyDefinition study;
  study.name = "primitives";
  study.implementations = rows(table());
  study.modes = mode_names({Mode::host, Mode::resident, Mode::transfer_pinned});
  study.default_sizes = geometric(1L << 10, 1L << 30, 4);  // 1 Ki to 1 Gi elements
  study.axes = {"primitive", "mode", "library", "elements"};
  study.axes.n_unit = "elements";
  // The driver's default suite: reduce of 2^26 uint32 values (256 MiB, the Thrust-against-a-copy
  // question) by every library, resident and with pinned copies, and on the CPU: 8 entries. --quick: 2^20.
  // The other primitives (scan, the three sorts, transform) and the sweep from 2^10 to 2^30 elements, where
  // the crossovers and the sort of 2^28 keys lie: --full, or --impls/--sizes (std::sort alone takes seconds
  // a call there).
  study.quick.sizes = {1 << 20};
  study.quick.impls = {"reduce"};
  study.suite.sizes = {1 << 26};
  study.suite.impls = {"reduce"};
  study.counters = {
      {"elements", "elements", "n"},
      {"memory_read_bytes", "bytes", kMemoryTrafficRule},
      {"memory_written_bytes", "bytes", kMemoryTrafficRule},
      {"rel_fro_error", "ratio", "0: every check is exact (element for element)"},
      {"max_rel_error", "ratio", "0: every check is exact"},
      {"temporary_bytes", "bytes", "temporary storage one more (untimed) call asks of the library, where it can be "
                                   "observed"},
      {"temporary_requests", "count", "the library's requests for temporary storage in that call"},
      {"temporary_device_allocations", "count", "cudaMalloc calls in that call (0 once storage is cached or "
                                                "preallocated)"}};
  study.prepare = prepare;
  study.describe = describe_study;
  study.describe_implementation = describe_implementation;
  return study;
}

}  // namespace
}  // namespace gpubench

int main(int argc, char** argv) { return gpubench::run_study(argc, argv, gpubench::definition()); }
