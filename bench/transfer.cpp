// The transfer study: what each kind of host memory delivers across the link, what small
// copies cost, and what host memory itself delivers, so a report can set one against the other.
//   copy_engine: cudaMemcpyAsync host->device, device->host, both at once (two streams), and
//                device->device, from and to every host memory kind;
//   sm_copy:     a kernel reading or writing mapped pinned host memory (zero-copy);
//   memcpy_1thread, memcpy_all_threads: host memory bandwidth (memcpy, one thread and all);
//   host_register: the one-time cost of cudaHostRegister on memory that has been written.
// Every entry is timed on the host clock from the call to its completion as the caller sees
// it (a stream synchronize): API overhead, the driver's staging of pageable memory and the
// DMA itself; allocation, filling and verification are outside. Each configuration's copy
// is checked byte for byte once, on its warm-up run.
// Entries: transfer/<engine>/<cpu|gpu>/<host memory>/<direction>/n:<bytes>; docs/interface.md.
#include <benchmark/benchmark.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness/gpu_telemetry.hpp"
#include "core/host_memory.hpp"
#include "core/json.hpp"
#include "core/random.hpp"
#include "harness/study_main.hpp"
#include "harness/study_options.hpp"
#include "core/system.hpp"

#if GPUBENCH_HAVE_CUDA
#include "harness/gpu_entry.hpp"
#include "core/gpu_runtime.hpp"
#include "sm_copy.cuh"
#endif

namespace gpubench {
namespace {

// --- what is measured --------------------------------------------------------------------
enum class Engine { copy_engine, sm_copy, memcpy_1thread, memcpy_all_threads, host_register };
enum class Memory {
  pageable,
  pageable_first_touch,
  pageable_zero_page,
  pageable_thp,
  pinned,
  registered,
  write_combined,
  device
};
enum class Direction { h2d, d2h, bidirectional, d2d, h2h, register_memory };

struct Named {
  const char* id;
  const char* description;
};

const Named& engine_info(Engine e) {
  static const Named all[] = {
      {"copy_engine", "cudaMemcpyAsync: the GPU's copy engines (DMA); pageable memory is staged by the driver"},
      {"sm_copy", "a kernel moving 16-byte words to or from mapped pinned host memory (zero-copy)"},
      {"memcpy_1thread", "memcpy on one host thread"},
      {"memcpy_all_threads", "memcpy split over all host threads (OpenMP)"},
      {"host_register", "cudaHostRegister of written pageable memory (the one-time cost of pinning it)"},
  };
  return all[static_cast<int>(e)];
}

const Named& memory_info(Memory m) {
  static const Named all[] = {
      {"pageable", "mmap'd memory that has been written: every page mapped"},
      {"pageable_first_touch",
       "a fresh mapping for every copy, never written: what a new allocation costs (a page fault per page)"},
      {"pageable_zero_page",
       "one mapping that is never written, copied from again and again: every page reads as the kernel's "
       "shared zero page, which copies faster than real data (the pitfall of timing untouched buffers)"},
      {"pageable_thp", "written memory on a 2 MiB boundary with madvise(MADV_HUGEPAGE)"},
      {"pinned", "cudaHostAlloc (page-locked, mapped)"},
      {"registered", "written mmap'd memory page-locked with cudaHostRegister (mapped)"},
      {"write_combined", "cudaHostAlloc with cudaHostAllocWriteCombined (uncached for the host, mapped)"},
      {"device", "device memory (cudaMalloc)"},
  };
  return all[static_cast<int>(m)];
}

const Named& direction_info(Direction d) {
  static const Named all[] = {
      {"h2d", "host to device"},
      {"d2h", "device to host"},
      {"bidirectional", "host to device and device to host at once, on two streams; bytes counts both"},
      {"d2d", "device to device; bytes counts the copy once (the memory reads and writes it twice)"},
      {"h2h", "host to host; bytes counts the copy once (memory reads and writes it twice)"},
      {"register", "no copy: pinning the buffer"},
  };
  return all[static_cast<int>(d)];
}

struct Configuration {
  Engine engine;
  Memory memory;
  Direction direction;
  bool on_gpu() const { return engine != Engine::memcpy_1thread && engine != Engine::memcpy_all_threads; }
};

const std::vector<Configuration>& configurations() {
  using E = Engine;
  using M = Memory;
  using D = Direction;
  static const std::vector<Configuration> all = [] {
    std::vector<Configuration> c;
    for (M m : {M::pageable, M::pageable_first_touch, M::pageable_zero_page, M::pageable_thp, M::pinned,
                M::registered, M::write_combined})
      c.push_back({E::copy_engine, m, D::h2d});
    // Write-combined memory is for data the host writes and the GPU reads: no d2h into it.
    for (M m : {M::pageable, M::pageable_first_touch, M::pageable_thp, M::pinned, M::registered})
      c.push_back({E::copy_engine, m, D::d2h});
    for (M m : {M::pageable, M::pinned}) c.push_back({E::copy_engine, m, D::bidirectional});
    c.push_back({E::copy_engine, M::device, D::d2d});
    for (M m : {M::pinned, M::registered, M::write_combined}) c.push_back({E::sm_copy, m, D::h2d});
    for (M m : {M::pinned, M::registered}) c.push_back({E::sm_copy, m, D::d2h});
    c.push_back({E::memcpy_1thread, M::pageable, D::h2h});
    c.push_back({E::memcpy_all_threads, M::pageable, D::h2h});
    c.push_back({E::host_register, M::registered, D::register_memory});
    return c;
  }();
  return all;
}

const std::vector<int>& default_sizes() {  // 4 KiB to 1 GiB in steps of 4
  static const std::vector<int> sizes = [] {
    std::vector<int> s;
    for (long bytes = 4L << 10; bytes <= 1L << 30; bytes *= 4) s.push_back(static_cast<int>(bytes));
    return s;
  }();
  return sizes;
}

std::string entry_name(const Configuration& c, int bytes) {
  return std::string("transfer/") + engine_info(c.engine).id + (c.on_gpu() ? "/gpu/" : "/cpu/") +
         memory_info(c.memory).id + "/" + direction_info(c.direction).id + "/n:" + std::to_string(bytes);
}

// Bytes that cross the link (or are copied) per call.
double bytes_moved(const Configuration& c, std::size_t bytes) {
  if (c.direction == Direction::register_memory) return 0.0;
  return static_cast<double>(bytes) * (c.direction == Direction::bidirectional ? 2 : 1);
}

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// --- host memory copies (every machine) ------------------------------------------------
void parallel_memcpy(std::uint8_t* destination, const std::uint8_t* source, std::size_t bytes) {
  const int threads = omp_get_max_threads();
  const std::size_t share = (bytes + threads - 1) / threads;
#pragma omp parallel for schedule(static)
  for (int t = 0; t < threads; ++t) {
    const std::size_t begin = std::min(bytes, t * share), end = std::min(bytes, begin + share);
    std::memcpy(destination + begin, source + begin, end - begin);
  }
}

void run_host_copy_entry(benchmark::State& state, const Configuration& c, std::size_t bytes) {
  if (!host_memory_fits(state, 2.0 * bytes)) return;
  MappedHostBuffer source(bytes), destination(bytes);
  const std::uint64_t seed = configuration_seed(bytes, 0);
  fill_random_bytes(source.get(), bytes, seed);
  fill_random_bytes(destination.get(), bytes, seed + 1);  // differs: a copy that did nothing fails
  const bool all_threads = c.engine == Engine::memcpy_all_threads;
  const auto copy = [&] {
    if (all_threads) {
      parallel_memcpy(destination.get(), source.get(), bytes);
    } else {
      std::memcpy(destination.get(), source.get(), bytes);
    }
  };
  copy();  // warm-up, checked
  const std::size_t wrong = first_difference(destination.get(), source.get(), bytes);
  if (wrong != bytes) {
    state.SkipWithError(("wrong result: byte " + std::to_string(wrong) + " differs after the copy").c_str());
    return;
  }
  for (auto _ : state) {
    const auto start = Clock::now();
    copy();
    benchmark::ClobberMemory();
    state.SetIterationTime(seconds_since(start));
  }
  state.counters["bytes_transferred"] = bytes_moved(c, bytes);
  state.counters["n"] = static_cast<double>(bytes);
  state.counters["threads"] = all_threads ? omp_get_max_threads() : 1;
}

#if GPUBENCH_HAVE_CUDA
// --- host memory the GPU copies from and to ------------------------------------------------
// The driver refused to pin or register host memory (a locked-memory limit, too little memory):
// a property of the machine and the size, reported as a skip.
void pin_or_skip(cudaError_t status, const char* what, std::size_t bytes) {
  if (status == cudaSuccess) return;
  cudaGetLastError();  // not sticky: clear it so the next entry starts clean
  throw GpuEntrySkipped(std::string(what) + " of " + format_bytes(static_cast<double>(bytes)) + " failed: " +
                       cudaGetErrorName(status) + " (" + cudaGetErrorString(status) + ")");
}

// One kind of host buffer: mmap'd (pageable kinds, registered) or cudaHostAlloc'd.
class HostAllocation {
 public:
  HostAllocation(Memory kind, std::size_t bytes) : bytes_(bytes) {
    if (kind == Memory::pinned || kind == Memory::write_combined) {
      const unsigned flags = cudaHostAllocMapped | (kind == Memory::write_combined ? cudaHostAllocWriteCombined : 0);
      pin_or_skip(cudaHostAlloc(reinterpret_cast<void**>(&pinned_), bytes, flags), "cudaHostAlloc", bytes);
      return;
    }
    mapped_ = std::make_unique<MappedHostBuffer>(bytes, kind == Memory::pageable_thp);
    if (kind == Memory::pageable_thp) advice_ = mapped_->advise_huge_pages();
  }
  ~HostAllocation() {
    if (registered_) cudaHostUnregister(mapped_->get());
    if (pinned_) cudaFreeHost(pinned_);
  }
  HostAllocation(const HostAllocation&) = delete;
  HostAllocation& operator=(const HostAllocation&) = delete;

  // Page-locks written mmap'd memory (Memory::registered), after it was filled.
  void register_pages() {
    pin_or_skip(cudaHostRegister(mapped_->get(), bytes_, cudaHostRegisterMapped), "cudaHostRegister", bytes_);
    registered_ = true;
  }
  std::uint8_t* data() const { return pinned_ ? pinned_ : mapped_->get(); }
  // The device's address of mapped host memory, for the zero-copy kernel.
  void* device_view() const {
    void* view = nullptr;
    CUDA_CHECK(cudaHostGetDevicePointer(&view, data(), 0));
    return view;
  }
  const std::string& huge_page_advice() const { return advice_; }

 private:
  std::size_t bytes_;
  std::uint8_t* pinned_ = nullptr;
  std::unique_ptr<MappedHostBuffer> mapped_;
  bool registered_ = false;
  std::string advice_;
};

// A host buffer of `kind`, written with `seed`'s bytes unless it is one that is never written.
std::unique_ptr<HostAllocation> host_buffer(Memory kind, std::size_t bytes, std::uint64_t seed) {
  auto buffer = std::make_unique<HostAllocation>(kind, bytes);
  if (kind == Memory::pageable_first_touch || kind == Memory::pageable_zero_page) return buffer;
  fill_random_bytes(buffer->data(), bytes, seed);
  if (kind == Memory::registered) buffer->register_pages();
  return buffer;
}

cudaStream_t new_stream() {
  cudaStream_t s = nullptr;
  CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  return s;
}

cudaStream_t stream(int index) {  // two streams, so both directions can run at once
  static const cudaStream_t streams[2] = {new_stream(), new_stream()};
  return streams[index];
}

// Everything one GPU entry copies between, kept across Google Benchmark's repeated calls.
struct GpuTransfer {
  std::string name;
  Configuration c{};
  std::size_t bytes = 0;
  std::vector<std::uint8_t> expected_on_device, expected_on_host;  // what each side must hold after a copy
  std::unique_ptr<HostAllocation> host_source, host_destination;
  std::unique_ptr<DeviceBuffer<std::uint8_t>> device_source, device_destination;
  double huge_page_bytes = -1;
};

bool moves_to_device(Direction d) { return d == Direction::h2d || d == Direction::bidirectional; }
bool moves_to_host(Direction d) { return d == Direction::d2h || d == Direction::bidirectional; }

void enqueue(const GpuTransfer& t, HostAllocation* fresh) {
  const Configuration& c = t.c;
  const std::size_t n = t.bytes;
  if (c.direction == Direction::d2d) {
    CUDA_CHECK(cudaMemcpyAsync(t.device_destination->get(), t.device_source->get(), n, cudaMemcpyDeviceToDevice,
                               stream(0)));
    return;
  }
  const bool first_touch = c.memory == Memory::pageable_first_touch;
  if (moves_to_device(c.direction)) {
    HostAllocation& from = first_touch ? *fresh : *t.host_source;
    if (c.engine == Engine::sm_copy) {
      sm_copy(t.device_destination->get(), from.device_view(), n, stream(0));
    } else {
      CUDA_CHECK(cudaMemcpyAsync(t.device_destination->get(), from.data(), n, cudaMemcpyHostToDevice, stream(0)));
    }
  }
  if (moves_to_host(c.direction)) {
    HostAllocation& to = first_touch ? *fresh : *t.host_destination;
    if (c.engine == Engine::sm_copy) {
      sm_copy(to.device_view(), t.device_source->get(), n, stream(1));
    } else {
      CUDA_CHECK(cudaMemcpyAsync(to.data(), t.device_source->get(), n, cudaMemcpyDeviceToHost, stream(1)));
    }
  }
}

void wait_for_streams() {
  CUDA_CHECK(cudaStreamSynchronize(stream(0)));
  CUDA_CHECK(cudaStreamSynchronize(stream(1)));
}

// Empty when both sides hold what the copy should have left there; otherwise what differs.
std::string check(const GpuTransfer& t, const HostAllocation* fresh) {
  const std::size_t n = t.bytes;
  if (!t.expected_on_device.empty()) {
    std::vector<std::uint8_t> on_device(n);
    CUDA_CHECK(cudaMemcpy(on_device.data(), t.device_destination->get(), n, cudaMemcpyDeviceToHost));
    const std::size_t wrong = first_difference(on_device.data(), t.expected_on_device.data(), n);
    if (wrong != n) return "device byte " + std::to_string(wrong) + " differs after the copy";
  }
  if (!t.expected_on_host.empty()) {
    const HostAllocation& to = fresh ? *fresh : *t.host_destination;
    const std::size_t wrong = first_difference(to.data(), t.expected_on_host.data(), n);
    if (wrong != n) return "host byte " + std::to_string(wrong) + " differs after the copy";
  }
  return "";
}

// Buffers with distinct random contents on each side, so a copy that moved nothing, or moved
// the wrong bytes, fails the check. A never-written source is zeros by definition.
std::unique_ptr<GpuTransfer> prepare_transfer(const Configuration& c, std::size_t n, const std::string& name) {
  auto t = std::make_unique<GpuTransfer>();
  t->name = name;
  t->c = c;
  t->bytes = n;
  const std::uint64_t seed = configuration_seed(n, 100 + static_cast<int>(c.memory));
  const bool first_touch = c.memory == Memory::pageable_first_touch;
  const bool host_involved = c.direction != Direction::d2d;
  require_device_memory(2.0 * n);
  std::vector<std::uint8_t> device_fill(n);
  if (moves_to_device(c.direction) || c.direction == Direction::d2d) {
    t->device_destination = std::make_unique<DeviceBuffer<std::uint8_t>>(n);
    fill_random_bytes(device_fill.data(), n, seed + 1);
    CUDA_CHECK(cudaMemcpy(t->device_destination->get(), device_fill.data(), n, cudaMemcpyHostToDevice));
  }
  if (moves_to_host(c.direction) || c.direction == Direction::d2d) {
    t->device_source = std::make_unique<DeviceBuffer<std::uint8_t>>(n);
    fill_random_bytes(device_fill.data(), n, seed + 2);
    CUDA_CHECK(cudaMemcpy(t->device_source->get(), device_fill.data(), n, cudaMemcpyHostToDevice));
    if (c.direction == Direction::d2d) t->expected_on_device = device_fill;
    if (moves_to_host(c.direction)) t->expected_on_host = std::move(device_fill);
  }
  if (host_involved && moves_to_device(c.direction)) {
    if (!first_touch) t->host_source = host_buffer(c.memory, n, seed + 3);
    t->expected_on_device.assign(n, 0);  // what a never-written source holds
    if (t->host_source && c.memory != Memory::pageable_zero_page)
      std::copy(t->host_source->data(), t->host_source->data() + n, t->expected_on_device.begin());
  }
  if (moves_to_host(c.direction) && !first_touch) t->host_destination = host_buffer(c.memory, n, seed + 4);
  const HostAllocation* thp = t->host_source ? t->host_source.get() : t->host_destination.get();
  if (c.memory == Memory::pageable_thp && thp) {
    if (!thp->huge_page_advice().empty()) throw GpuError(thp->huge_page_advice());
    t->huge_page_bytes = huge_page_bytes(thp->data(), n);
  }
  return t;
}

// Host bytes at peak: a source and a destination, the expected contents of both sides, the
// device's fill and the check's download.
double host_bytes_needed(std::size_t n) { return 5.0 * n; }

void time_transfer(benchmark::State& state, GpuTransfer& t) {
  const bool first_touch = t.c.memory == Memory::pageable_first_touch;
  const auto fresh_buffer = [&] {
    return first_touch ? std::make_unique<HostAllocation>(Memory::pageable_first_touch, t.bytes) : nullptr;
  };
  {
    auto fresh = fresh_buffer();
    enqueue(t, fresh.get());  // warm-up, checked
    wait_for_streams();
    const std::string wrong = check(t, fresh.get());
    if (!wrong.empty()) {
      state.SkipWithError(("wrong result: " + wrong).c_str());
      return;
    }
  }
  TelemetryWindow telemetry;  // clocks, power, energy and utilization over the timed loop
  for (auto _ : state) {
    auto fresh = fresh_buffer();  // mapped outside the timed region, unmapped after it
    const auto start = Clock::now();
    enqueue(t, fresh.get());
    wait_for_streams();
    state.SetIterationTime(seconds_since(start));
  }
  telemetry.report(state);
}

void time_registration(benchmark::State& state, std::size_t n) {
  MappedHostBuffer buffer(n);
  fill_random_bytes(buffer.get(), n, configuration_seed(n, 200));
  for (auto _ : state) {
    const auto start = Clock::now();
    pin_or_skip(cudaHostRegister(buffer.get(), n, cudaHostRegisterMapped), "cudaHostRegister", n);
    state.SetIterationTime(seconds_since(start));
    CUDA_CHECK(cudaHostUnregister(buffer.get()));
  }
}

void run_gpu_entry(benchmark::State& state, const Configuration& c, std::size_t n, const std::string& name) {
  static std::unique_ptr<GpuTransfer> current;
  guard_gpu_entry(state, [&] {
    if (!host_memory_fits(state, host_bytes_needed(n))) return;
    if (c.engine == Engine::host_register) {
      time_registration(state, n);
    } else {
      if (!current || current->name != name) {
        current.reset();  // the previous entry's memory goes first
        current = prepare_transfer(c, n, name);
      }
      time_transfer(state, *current);
      if (current->huge_page_bytes >= 0) state.counters["huge_page_bytes"] = current->huge_page_bytes;
    }
    state.counters["bytes_transferred"] = bytes_moved(c, n);
    state.counters["n"] = static_cast<double>(n);
  }, [&] { current.reset(); });
}
#endif  // GPUBENCH_HAVE_CUDA

// --- registration and description ----------------------------------------------------
void register_entry(const Configuration& c, int n) {
  const std::string name = entry_name(c, n);
  benchmark::internal::Benchmark* entry = nullptr;
  if (c.on_gpu()) {
#if GPUBENCH_HAVE_CUDA
    entry = benchmark::RegisterBenchmark(name.c_str(), [c, n, name](benchmark::State& state) {
      run_gpu_entry(state, c, static_cast<std::size_t>(n), name);
    });
#endif
  } else {
    entry = benchmark::RegisterBenchmark(name.c_str(), [c, n](benchmark::State& state) {
      run_host_copy_entry(state, c, static_cast<std::size_t>(n));
    });
  }
  entry->UseManualTime()->Unit(benchmark::kMicrosecond);
}

bool sized_for_16_byte_words(int n) { return n % 16 == 0; }

void register_entries(const StudyOptions& options, bool gpu_usable) {
  for (int n : options.sizes.empty() ? default_sizes() : options.sizes)
    for (const Configuration& c : configurations()) {
      if (!is_selected(options.impls, engine_info(c.engine).id) || !is_selected(options.modes, memory_info(c.memory).id))
        continue;
      if (c.on_gpu() && (!gpu_usable || options.cpu_only)) continue;
      if (c.engine == Engine::sm_copy && !sized_for_16_byte_words(n)) continue;  // the kernel moves 16-byte words
      register_entry(c, n);
    }
}

std::vector<Engine> all_engines() {
  return {Engine::copy_engine, Engine::sm_copy, Engine::memcpy_1thread, Engine::memcpy_all_threads,
          Engine::host_register};
}

std::string describe_engine(Engine e) {
  std::vector<std::string> memories;
  for (const Configuration& c : configurations())
    if (c.engine == e && std::find(memories.begin(), memories.end(), memory_info(c.memory).id) == memories.end())
      memories.push_back(memory_info(c.memory).id);
  const Configuration any{e, Memory::pageable, Direction::h2h};
  return "{" + implementation_fields(engine_info(e).id, any.on_gpu(), memories, 0, nullptr) +
         ", \"description\": " + json_string(engine_info(e).description) + "}";
}

std::string describe_named(const Named& named) {
  return "{\"id\": " + json_string(named.id) + ", \"description\": " + json_string(named.description) + "}";
}

std::string describe_study() {
  std::vector<Memory> memories;
  for (int m = 0; m <= static_cast<int>(Memory::device); ++m) memories.push_back(static_cast<Memory>(m));
  std::vector<Direction> directions;
  for (int d = 0; d <= static_cast<int>(Direction::register_memory); ++d) directions.push_back(static_cast<Direction>(d));
  const auto configuration = [](const Configuration& c) {
    return "{\"impl\": " + json_string(engine_info(c.engine).id) + ", \"mode\": " + json_string(memory_info(c.memory).id) +
           ", \"direction\": " + json_string(direction_info(c.direction).id) + "}";
  };
  return "\"axes\": {\"impl\": \"copy engine or method\", \"mode\": \"host memory kind\", "
         "\"precision\": \"direction\", \"n\": \"bytes per copy\"}"
         ", \"timed_region\": " +
         json_string("host clock from the call to its completion (stream synchronize); allocation, filling and "
                     "checking excluded") +
         ", \"default_sizes\": " + json_list(default_sizes(), [](int n) { return std::to_string(n); }) +
         ", \"implementations\": " + json_list(all_engines(), describe_engine) +
         ", \"memory_kinds\": " + json_list(memories, [](Memory m) { return describe_named(memory_info(m)); }) +
         ", \"directions\": " + json_list(directions, [](Direction d) { return describe_named(direction_info(d)); }) +
         ", \"configurations\": " + json_list(configurations(), configuration) +
         ", \"transparent_hugepage\": " + json_string(transparent_hugepage_setting());
}

}  // namespace
}  // namespace gpubench

int main(int argc, char** argv) {
  using namespace gpubench;
  StudyDefinition study;
  study.name = "transfer";
  for (Engine e : all_engines()) study.impl_ids.push_back(engine_info(e).id);
  for (int m = 0; m <= static_cast<int>(Memory::device); ++m) study.modes.push_back(memory_info(static_cast<Memory>(m)).id);
  study.batch_axis = false;
  study.describe = describe_study;
  study.register_entries = register_entries;
  return study_main(argc, argv, study);
}
