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

#include "core/first_touch.hpp"
#include "core/host_memory.hpp"
#include "core/json.hpp"
#include "core/random.hpp"
#include "core/system.hpp"
#include "harness/study.hpp"

#if GPUBENCH_HAVE_CUDA
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

std::vector<Engine> all_engines() {
  return {Engine::copy_engine, Engine::sm_copy, Engine::memcpy_1thread, Engine::memcpy_all_threads,
          Engine::host_register};
}

std::vector<Memory> all_memories() {
  std::vector<Memory> memories;
  for (int m = 0; m <= static_cast<int>(Memory::device); ++m) memories.push_back(static_cast<Memory>(m));
  return memories;
}

std::vector<Direction> all_directions() {
  std::vector<Direction> directions;
  for (int d = 0; d <= static_cast<int>(Direction::register_memory); ++d)
    directions.push_back(static_cast<Direction>(d));
  return directions;
}

bool on_gpu(Engine e) { return e != Engine::memcpy_1thread && e != Engine::memcpy_all_threads; }

struct Configuration {
  Engine engine;
  Memory memory;
  Direction direction;
};

// Every configuration, in entry order; they are no cross product of the axes.
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

// The configuration an entry names (its mode slot the memory kind, its precision slot the direction).
Configuration configuration_of(Engine engine, const std::string& memory, const std::string& direction) {
  for (const Configuration& c : configurations())
    if (c.engine == engine && memory_info(c.memory).id == memory && direction_info(c.direction).id == direction)
      return c;
  throw std::logic_error("transfer: no configuration " + memory + "/" + direction);
}

bool sized_for_16_byte_words(int n) { return n % 16 == 0; }  // what the zero-copy kernel moves

// --- the implementation table ------------------------------------------------------------
struct TransferImplementation : Implementation {
  Engine engine = Engine::copy_engine;
};

void add_once(std::vector<std::string>& values, const std::string& value) {
  if (std::find(values.begin(), values.end(), value) == values.end()) values.push_back(value);
}

// An engine's row: its memory kinds and directions, and the pairs of them it runs, in entry order.
TransferImplementation implementation(Engine engine) {
  TransferImplementation row;
  row.id = engine_info(engine).id;
  row.device = on_gpu(engine) ? Device::gpu : Device::cpu;
  row.engine = engine;
  if (engine == Engine::memcpy_1thread) row.threads = one_thread;
  if (engine == Engine::memcpy_all_threads) row.threads = openmp_threads;
  if (engine == Engine::sm_copy) row.runs_at = sized_for_16_byte_words;
  for (const Configuration& c : configurations()) {
    if (c.engine != engine) continue;
    add_once(row.modes, memory_info(c.memory).id);
    add_once(row.precisions, direction_info(c.direction).id);
    row.combinations.emplace_back(memory_info(c.memory).id, direction_info(c.direction).id);
  }
  return row;
}

const std::vector<TransferImplementation>& table() {
  static const std::vector<TransferImplementation> all = [] {
    std::vector<TransferImplementation> rows;
    for (Engine engine : all_engines()) rows.push_back(implementation(engine));
    return rows;
  }();
  return all;
}

// Traffic of one call. Memory: what the copy reads and writes in device memory (host memory for
// host copies). The link: what crosses it each way. A copy that does not cross the link (d2d,
// h2h) still reports its size as bytes_transferred: the driver's bandwidths of those copies (the
// device memory roof, host memory bandwidth) are bytes_transferred over time.
void report_traffic(PreparedEntry& entry, Direction direction, std::size_t bytes) {
  const double n = static_cast<double>(bytes);
  switch (direction) {
    case Direction::h2d:
      entry.add_memory_traffic(0, n);
      entry.add_link_traffic(n, 0);
      return;
    case Direction::d2h:
      entry.add_memory_traffic(n, 0);
      entry.add_link_traffic(0, n);
      return;
    case Direction::bidirectional:
      entry.add_memory_traffic(n, n);
      entry.add_link_traffic(n, n);
      return;
    case Direction::d2d:
    case Direction::h2h:
      entry.add_memory_traffic(n, n);
      entry.counters["bytes_transferred"] = n;
      return;
    case Direction::register_memory:  // pinning moves no data
      entry.add_memory_traffic(0, 0);
      return;
  }
}

using HostClock = std::chrono::steady_clock;
double seconds_since(HostClock::time_point start) {
  return std::chrono::duration<double>(HostClock::now() - start).count();
}

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

class HostCopy : public PreparedEntry {
 public:
  HostCopy(Engine engine, std::size_t bytes)
      : all_threads_(engine == Engine::memcpy_all_threads), bytes_(bytes), source_(bytes), destination_(bytes) {
    const std::uint64_t seed = configuration_seed(bytes, 0);
    fill_random_bytes(source_.get(), bytes, seed);
    fill_random_bytes(destination_.get(), bytes, seed + 1);  // differs: a copy that did nothing fails
    run_once();  // the first call, checked
    const std::size_t wrong = first_difference(destination_.get(), source_.get(), bytes);
    if (wrong != bytes) wrong_result = "byte " + std::to_string(wrong) + " differs after the copy";
    report_traffic(*this, Direction::h2h, bytes);
  }

  void run_once() override {
    if (all_threads_) {
      parallel_memcpy(destination_.get(), source_.get(), bytes_);
    } else {
      std::memcpy(destination_.get(), source_.get(), bytes_);
    }
  }

 private:
  bool all_threads_;
  std::size_t bytes_;
  MappedHostBuffer source_, destination_;
};

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

void wait_for_streams() {
  CUDA_CHECK(cudaStreamSynchronize(stream(0)));
  CUDA_CHECK(cudaStreamSynchronize(stream(1)));
}

bool moves_to_device(Direction d) { return d == Direction::h2d || d == Direction::bidirectional; }
bool moves_to_host(Direction d) { return d == Direction::d2h || d == Direction::bidirectional; }

// Host bytes at peak: a source and a destination, the expected contents of both sides, the
// device's fill and the check's download.
double host_bytes_needed(std::size_t n) { return 5.0 * n; }

// A copy by the copy engines or the zero-copy kernel. Buffers with distinct random contents on
// each side, so a copy that moved nothing, or moved the wrong bytes, fails the check; a
// never-written source is zeros by definition. First-touch memory is a fresh mapping for every
// call, made and unmade outside the timed region. No call is made here: the warm-up before each
// timed loop is the checked call.
class GpuCopy : public PreparedEntry {
 public:
  GpuCopy(const Configuration& c, std::size_t n) : c_(c), bytes_(n) {
    const std::uint64_t seed = configuration_seed(n, 100 + static_cast<int>(c.memory));
    require_device_memory(2.0 * n);
    std::vector<std::uint8_t> device_fill(n);
    if (moves_to_device(c.direction) || c.direction == Direction::d2d) {
      device_destination_ = std::make_unique<DeviceBuffer<std::uint8_t>>(n);
      fill_random_bytes(device_fill.data(), n, seed + 1);
      CUDA_CHECK(cudaMemcpy(device_destination_->get(), device_fill.data(), n, cudaMemcpyHostToDevice));
    }
    if (moves_to_host(c.direction) || c.direction == Direction::d2d) {
      device_source_ = std::make_unique<DeviceBuffer<std::uint8_t>>(n);
      fill_random_bytes(device_fill.data(), n, seed + 2);
      CUDA_CHECK(cudaMemcpy(device_source_->get(), device_fill.data(), n, cudaMemcpyHostToDevice));
      if (c.direction == Direction::d2d) expected_on_device_ = device_fill;
      if (moves_to_host(c.direction)) expected_on_host_ = std::move(device_fill);
    }
    // cudaMemcpy from pageable memory returns once the bytes are staged, before they land, and the copies
    // under test run on non-blocking streams, which do not wait for it: the fills must have landed first.
    CUDA_CHECK(cudaDeviceSynchronize());
    if (moves_to_device(c.direction)) {
      if (!first_touch()) host_source_ = host_buffer(c.memory, n, seed + 3);
      if (host_source_ && c.memory != Memory::pageable_zero_page) {
        expected_on_device_.assign(host_source_->data(), host_source_->data() + n);  // one pass, not zeros first
      } else {
        expected_on_device_.assign(n, 0);  // what a never-written source holds
      }
    }
    if (moves_to_host(c.direction) && !first_touch()) host_destination_ = host_buffer(c.memory, n, seed + 4);
    report_huge_pages();
    report_traffic(*this, c.direction, n);
    // The memory roof: device time of back-to-back copies, on the default stream the timed loop's
    // events and blocking kernel use (a host clock would add its ~12 us floor to every copy).
    if (c.direction == Direction::d2d) own_clock = Clock::device_events;
  }

  void run_once() override {
    const std::size_t n = bytes_;
    if (c_.direction == Direction::d2d) {
      CUDA_CHECK(cudaMemcpyAsync(device_destination_->get(), device_source_->get(), n, cudaMemcpyDeviceToDevice, 0));
      return;
    }
    if (moves_to_device(c_.direction)) {
      HostAllocation& from = first_touch() ? *fresh_ : *host_source_;
      if (c_.engine == Engine::sm_copy) {
        sm_copy(device_destination_->get(), from.device_view(), n, stream(0));
      } else {
        CUDA_CHECK(cudaMemcpyAsync(device_destination_->get(), from.data(), n, cudaMemcpyHostToDevice, stream(0)));
      }
    }
    if (moves_to_host(c_.direction)) {
      HostAllocation& to = first_touch() ? *fresh_ : *host_destination_;
      if (c_.engine == Engine::sm_copy) {
        sm_copy(to.device_view(), device_source_->get(), n, stream(1));
      } else {
        CUDA_CHECK(cudaMemcpyAsync(to.data(), device_source_->get(), n, cudaMemcpyDeviceToHost, stream(1)));
      }
    }
  }

  // Every warm-up is checked byte for byte.
  std::string warm_up() override {
    fresh_ = fresh_buffer();
    run_once();
    wait_for_streams();
    const std::string wrong = check();
    fresh_.reset();
    return wrong;
  }

  // The host clock from the call to both streams' completion; a fresh mapping is made before
  // and unmapped after it.
  double timed_call(Clock) override {
    fresh_ = fresh_buffer();
    const auto start = HostClock::now();
    run_once();
    wait_for_streams();
    const double seconds = seconds_since(start);
    fresh_.reset();
    return seconds;
  }

 private:
  bool first_touch() const { return c_.memory == Memory::pageable_first_touch; }

  std::unique_ptr<HostAllocation> fresh_buffer() const {
    return first_touch() ? std::make_unique<HostAllocation>(Memory::pageable_first_touch, bytes_) : nullptr;
  }

  // huge_page_bytes: how much of the huge-page-advised buffer huge pages back.
  void report_huge_pages() {
    const HostAllocation* thp = host_source_ ? host_source_.get() : host_destination_.get();
    if (c_.memory != Memory::pageable_thp || !thp) return;
    if (!thp->huge_page_advice().empty()) throw GpuError(thp->huge_page_advice());
    const double backed = huge_page_bytes(thp->data(), bytes_);
    if (backed >= 0) counters["huge_page_bytes"] = backed;
  }

  // Empty when both sides hold what the copy should have left there; otherwise what differs.
  std::string check() const {
    const std::size_t n = bytes_;
    if (!expected_on_device_.empty()) {
      ThreadPlacedArray<std::uint8_t> on_device(n, 0);  // zeroed by the OpenMP threads, not this one alone
      CUDA_CHECK(cudaMemcpy(on_device.data(), device_destination_->get(), n, cudaMemcpyDeviceToHost));
      const std::size_t wrong = first_difference(on_device.data(), expected_on_device_.data(), n);
      if (wrong != n) return "device byte " + std::to_string(wrong) + " differs after the copy";
    }
    if (!expected_on_host_.empty()) {
      const HostAllocation& to = fresh_ ? *fresh_ : *host_destination_;
      const std::size_t wrong = first_difference(to.data(), expected_on_host_.data(), n);
      if (wrong != n) return "host byte " + std::to_string(wrong) + " differs after the copy";
    }
    return "";
  }

  Configuration c_;
  std::size_t bytes_;
  std::vector<std::uint8_t> expected_on_device_, expected_on_host_;  // what each side must hold after a copy
  std::unique_ptr<HostAllocation> host_source_, host_destination_, fresh_;
  std::unique_ptr<DeviceBuffer<std::uint8_t>> device_source_, device_destination_;
};

// cudaHostRegister of written memory, timed alone: each registration is undone after its time
// is taken. No untimed call comes first: there is nothing to check, and every registration is
// one that is measured.
class HostRegistration : public PreparedEntry {
 public:
  explicit HostRegistration(std::size_t n) : buffer_(n) {
    fill_random_bytes(buffer_.get(), n, configuration_seed(n, 200));
    report_traffic(*this, Direction::register_memory, n);
  }

  void run_once() override {
    pin_or_skip(cudaHostRegister(buffer_.get(), buffer_.bytes(), cudaHostRegisterMapped), "cudaHostRegister",
                buffer_.bytes());
  }

  std::string warm_up() override { return ""; }

  double timed_call(Clock) override {
    const auto start = HostClock::now();
    run_once();
    const double seconds = seconds_since(start);
    CUDA_CHECK(cudaHostUnregister(buffer_.get()));
    return seconds;
  }

 private:
  MappedHostBuffer buffer_;
};

std::unique_ptr<PreparedEntry> prepare_gpu(const Configuration& c, std::size_t n) {
  require_host_memory(host_bytes_needed(n));
  if (c.engine == Engine::host_register) return std::make_unique<HostRegistration>(n);
  return std::make_unique<GpuCopy>(c, n);
}
#endif  // GPUBENCH_HAVE_CUDA

std::unique_ptr<PreparedEntry> prepare(const Entry& entry) {
  const auto& impl = row_of<TransferImplementation>(entry);
  const Configuration c = configuration_of(impl.engine, entry.mode, entry.precision);
  const auto n = static_cast<std::size_t>(entry.n);
  if (!impl.on_gpu()) {
    require_host_memory(2.0 * n);  // a source and a destination
    return std::make_unique<HostCopy>(c.engine, n);
  }
#if GPUBENCH_HAVE_CUDA
  return prepare_gpu(c, n);
#else
  throw EntrySkipped("built without CUDA");  // not reached: no GPU entry is selected in such a build
#endif
}

// --- description -------------------------------------------------------------------------
Json describe_named(const Named& named) { return {{"id", named.id}, {"description", named.description}}; }

Json describe_study() {
  const auto configuration = [](const Configuration& c) {
    return Json{{"impl", engine_info(c.engine).id},
                {"mode", memory_info(c.memory).id},
                {"direction", direction_info(c.direction).id}};
  };
  return {{"timed_region",
           "host clock from the call to its completion (stream synchronize); allocation, filling and checking "
           "excluded"},
          {"memory_kinds", array_of(all_memories(), [](Memory m) { return describe_named(memory_info(m)); })},
          {"directions", array_of(all_directions(), [](Direction d) { return describe_named(direction_info(d)); })},
          {"configurations", array_of(configurations(), configuration)},
          {"transparent_hugepage", transparent_hugepage_setting()}};
}

Json describe_engine(const Implementation& impl) {
  const Engine engine = static_cast<const TransferImplementation&>(impl).engine;
  return {{"description", engine_info(engine).description}};
}

StudyDefinition definition() {
  StudyDefinition study;
  study.name = "transfer";
  study.implementations = rows(table());
  for (Memory m : all_memories()) study.modes.push_back(memory_info(m).id);
  study.default_sizes = geometric(4L << 10, 1L << 30, 4);  // 4 KiB to 1 GiB
  study.axes = {"engine", "host_memory", "direction", "bytes"};
  study.axes.n_unit = "bytes";
  study.axes.about = {{"impl", "copy engine or method"},
                      {"mode", "host memory kind"},
                      {"precision", "direction"},
                      {"n", "bytes per copy"}};
  // The driver's default suite: 4 KiB, where a copy's fixed cost dominates, and 64 MiB, past the GPU's L2
  // (50-60 MB) and near each link's plateau; --quick: 1 MiB. --full sweeps 4 KiB to 1 GiB.
  study.quick.sizes = {1 << 20};
  study.suite.sizes = {4 << 10, 64 << 20};
  study.counters = {
      {"memory_read_bytes", "bytes", "what the copy reads in device memory (host memory for a host copy): n for "
                                     "d2h, both ways, d2d and h2h, 0 for h2d and host_register"},
      {"memory_written_bytes", "bytes", "what it writes there: n for h2d, both ways, d2d and h2h, 0 for d2h and "
                                        "host_register"},
      {"bytes_transferred", "bytes", "what crosses the link, both ways together (h2d_bytes + d2h_bytes: n, 2n both "
                                     "ways); a copy that does not cross it (d2d, h2h) its size n"},
      {"huge_page_bytes", "bytes", "how much of the huge-page-advised buffer huge pages back (pageable_thp)"}};
  study.rules = {{"bandwidth", "bytes_transferred / time"}};
  study.cpu_clock = Clock::host;
  study.gpu_clock = Clock::host_to_completion;
  study.prepare = prepare;
  study.describe = describe_study;
  study.describe_implementation = describe_engine;
  return study;
}

}  // namespace
}  // namespace gpubench

int main(int argc, char** argv) { return gpubench::run_study(argc, argv, gpubench::definition()); }
