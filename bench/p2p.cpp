// The p2p study: what the links between the GPUs of a machine, and between the host and each
// GPU, deliver, after NVIDIA's nvbandwidth. For every route (an ordered GPU pair, the host to a
// GPU, a GPU to the host):
//   copy_engine: cudaMemcpyPeerAsync / cudaMemcpyAsync, the copy engines (DMA);
//   sm_copy:     a kernel moving 16-byte words, run by the GPU that receives (it reads its peer's
//                memory with peer access enabled) or, to the host, by the GPU that sends (it
//                writes mapped pinned host memory);
// one way, and both ways at once (each direction on its own stream of the GPU that runs it).
// Small copies give the route's latency, large ones its bandwidth. Every entry is timed on the
// host clock from the call until every stream it used has finished; allocation, filling and
// checking are outside. Each entry's copy is checked byte for byte on its warm-up run, against
// random contents distinct on both sides. How each pair is connected (NVML: common ancestor,
// NVLink or PCIe, the link's theoretical rate) goes into --describe's "topology", and the rate
// into each entry's counters, so that the report gives each route's fraction of its link.
// Entries: p2p/<engine>/gpu/<one_way|both_ways>/<source>-<destination>/n:<bytes>; docs/interface.md.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "core/host_memory.hpp"
#include "core/json.hpp"
#include "core/random.hpp"
#include "core/system.hpp"
#include "harness/nvml_topology.hpp"
#include "harness/study.hpp"

#if GPUBENCH_HAVE_CUDA
#include "core/gpu_runtime.hpp"
#include "sm_copy.cuh"
#endif

namespace gpubench {
namespace {

// --- routes ------------------------------------------------------------------------------
constexpr int kHost = -1;  // the host as a route's end

struct Route {
  int source = kHost;
  int destination = kHost;

  bool between_gpus() const { return source != kHost && destination != kHost; }
  // The GPU whose stream runs the copy: the receiving GPU between GPUs (a read of its peer's
  // memory), else the route's GPU.
  int runner() const { return destination != kHost ? destination : source; }
  Route reversed() const { return {destination, source}; }
};

std::string endpoint_name(int end) { return end == kHost ? "host" : "gpu" + std::to_string(end); }
std::string route_name(const Route& r) { return endpoint_name(r.source) + "-" + endpoint_name(r.destination); }

// The GPUs this process sees (CUDA_VISIBLE_DEVICES applies); 0 without a usable GPU.
int visible_gpus() {
  static const int count = [] {
    int n = 0;
#if GPUBENCH_HAVE_CUDA
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
      cudaGetLastError();
      n = 0;
    }
#endif
    return n;
  }();
  return count;
}

// Every route, in entry order: each GPU from and to the host, then every ordered GPU pair. With
// fewer than two GPUs the pair gpu0-gpu1 stands for them all, so that a run says why it has none.
std::vector<Route> routes() {
  std::vector<Route> all;
  const int gpus = std::max(1, visible_gpus());
  for (int g = 0; g < gpus; ++g) {
    all.push_back({kHost, g});
    all.push_back({g, kHost});
  }
  if (gpus < 2) all.push_back({0, 1});
  for (int a = 0; a < gpus; ++a)
    for (int b = 0; b < gpus; ++b)
      if (a != b && gpus >= 2) all.push_back({a, b});
  return all;
}

Route route_of(const std::string& name) {
  for (const Route& r : routes())
    if (route_name(r) == name) return r;
  throw std::logic_error("p2p: no route " + name);
}

// Both ways at once is one entry per pair of ends: under the route from the host, or from the
// lower-numbered GPU.
bool runs_both_ways(const Route& r) {
  return r.source == kHost || (r.between_gpus() && r.source < r.destination);
}

// --- what is measured --------------------------------------------------------------------
enum class Engine { copy_engine, sm_copy };
struct Named {
  const char* id;
  const char* description;
};

const Named& engine_info(Engine e) {
  static const Named all[] = {
      {"copy_engine", "cudaMemcpyPeerAsync between GPUs, cudaMemcpyAsync with the host: the copy engines (DMA)"},
      {"sm_copy",
       "a kernel moving 16-byte words: run by the receiving GPU, reading its peer's memory (peer access "
       "enabled), or by the GPU itself reading or writing mapped pinned host memory"},
  };
  return all[static_cast<int>(e)];
}

const Named& direction_info(bool both_ways) {
  static const Named one{"one_way", "the source's buffer to the destination's"};
  static const Named both{"both_ways",
                          "both directions at once, each on a stream of the GPU that runs it; bytes counts both"};
  return both_ways ? both : one;
}

bool sized_for_16_byte_words(int n) { return n % 16 == 0; }  // what the SM copy kernel moves

struct P2pImplementation : Implementation {
  Engine engine = Engine::copy_engine;
};

P2pImplementation implementation(Engine engine) {
  P2pImplementation row;
  row.id = engine_info(engine).id;
  row.device = Device::gpu;
  row.engine = engine;
  if (engine == Engine::sm_copy) row.runs_at = sized_for_16_byte_words;
  row.modes = {direction_info(false).id, direction_info(true).id};
  for (const Route& r : routes()) {
    row.precisions.push_back(route_name(r));
    row.combinations.emplace_back(direction_info(false).id, route_name(r));
    if (runs_both_ways(r)) row.combinations.emplace_back(direction_info(true).id, route_name(r));
  }
  return row;
}

const std::vector<P2pImplementation>& table() {
  static const std::vector<P2pImplementation> all = {implementation(Engine::copy_engine),
                                                     implementation(Engine::sm_copy)};
  return all;
}

// --- topology ----------------------------------------------------------------------------
const std::vector<nvml::DeviceLinks>& gpu_links() {
  static const std::vector<nvml::DeviceLinks> all = [] {
    std::vector<nvml::DeviceLinks> links;
    for (int g = 0; g < visible_gpus(); ++g) links.push_back(nvml::device_links(g));
    return links;
  }();
  return all;
}

nvml::PairTopology topology_of(const Route& r) {
  static std::map<std::pair<int, int>, nvml::PairTopology> known;
  const std::pair<int, int> key{std::min(r.source, r.destination), std::max(r.source, r.destination)};
  auto found = known.find(key);
  if (found == known.end())
    found = known.emplace(key, nvml::pair_topology(key.first, key.second, gpu_links()[key.first],
                                                   gpu_links()[key.second])).first;
  return found->second;
}

// The theoretical rate one way of the link a route crosses; 0 when NVML did not give it.
double link_rate(const Route& r) {
  if (r.between_gpus()) return topology_of(r).link_bytes_per_s;
  return gpu_links()[r.runner()].pcie_bytes_per_s();
}

std::string link_label(const Route& r) {
  if (!r.between_gpus()) return "pcie";
  const nvml::PairTopology t = topology_of(r);
  return t.link + ", common ancestor " + t.common_ancestor;
}

#if GPUBENCH_HAVE_CUDA
// --- buffers on either end ---------------------------------------------------------------
// Makes `device` current for a scope and restores the previous one: the skeleton's timed loop
// and telemetry work on device 0.
class CurrentDevice {
 public:
  explicit CurrentDevice(int device) {
    CUDA_CHECK(cudaGetDevice(&previous_));
    CUDA_CHECK(cudaSetDevice(device));
  }
  ~CurrentDevice() { cudaSetDevice(previous_); }
  CurrentDevice(const CurrentDevice&) = delete;
  CurrentDevice& operator=(const CurrentDevice&) = delete;

 private:
  int previous_ = 0;
};

// `bytes` on one end: device memory of a GPU, or pinned host memory every GPU maps (portable).
class EndBuffer {
 public:
  EndBuffer(int end, std::size_t bytes) : end_(end) {
    if (end == kHost) {
      CUDA_CHECK(cudaHostAlloc(&data_, bytes, cudaHostAllocMapped | cudaHostAllocPortable));
      return;
    }
    CurrentDevice on(end);
    require_device_memory(static_cast<double>(bytes));
    CUDA_CHECK(cudaMalloc(&data_, bytes));
  }
  ~EndBuffer() {  // no CUDA_CHECK here: a destructor must not throw
    if (end_ == kHost) {
      cudaFreeHost(data_);
      return;
    }
    int previous = 0;
    cudaGetDevice(&previous);
    cudaSetDevice(end_);
    cudaFree(data_);
    cudaSetDevice(previous);
  }
  EndBuffer(const EndBuffer&) = delete;
  EndBuffer& operator=(const EndBuffer&) = delete;

  void* get() const { return data_; }
  // The address a kernel uses: device memory's own, mapped host memory's device view (UVA).
  void* device_view() const {
    if (end_ != kHost) return data_;
    void* view = nullptr;
    CUDA_CHECK(cudaHostGetDevicePointer(&view, data_, 0));
    return view;
  }
  void write(const std::vector<std::uint8_t>& bytes) {
    CUDA_CHECK(cudaMemcpy(data_, bytes.data(), bytes.size(), cudaMemcpyDefault));
    // From pageable memory cudaMemcpy returns once the bytes are staged, before they land on the GPU, and
    // the copies under test run on non-blocking streams, which do not wait for it: wait here, or a late
    // fill can overwrite what the copy wrote (seen once on an H200 under other tests' load).
    if (end_ != kHost) {
      CurrentDevice on(end_);
      CUDA_CHECK(cudaDeviceSynchronize());
    }
  }
  std::vector<std::uint8_t> read(std::size_t bytes) const {
    std::vector<std::uint8_t> out(bytes);
    CUDA_CHECK(cudaMemcpy(out.data(), data_, bytes, cudaMemcpyDefault));
    return out;
  }

 private:
  int end_;
  void* data_ = nullptr;
};

// Two streams per GPU, made on it once: one for each direction of a both-ways entry.
cudaStream_t stream_of(int device, int direction) {
  static std::map<std::pair<int, int>, cudaStream_t> streams;
  const std::pair<int, int> key{device, direction};
  auto found = streams.find(key);
  if (found == streams.end()) {
    CurrentDevice on(device);
    cudaStream_t s = nullptr;
    CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    found = streams.emplace(key, s).first;
  }
  return found->second;
}

bool can_access_peer(int device, int peer) {
  int can = 0;
  CUDA_CHECK(cudaDeviceCanAccessPeer(&can, device, peer));
  return can != 0;
}

// Lets `device` map `peer`'s memory, once per ordered pair; a pair already enabled is fine.
void enable_peer_access(int device, int peer) {
  CurrentDevice on(device);
  const cudaError_t status = cudaDeviceEnablePeerAccess(peer, 0);
  if (status == cudaErrorPeerAccessAlreadyEnabled) {
    cudaGetLastError();
    return;
  }
  CUDA_CHECK(status);
}

// One direction of an entry: a source buffer holding random bytes, a destination holding other
// random bytes, and the stream of the GPU that runs the copy.
struct Leg {
  Leg(const Route& r, std::size_t bytes, std::uint64_t seed)
      : route(r), source(r.source, bytes), destination(r.destination, bytes), expected(bytes) {
    fill_random_bytes(expected.data(), bytes, seed);
    source.write(expected);
    std::vector<std::uint8_t> other(bytes);
    fill_random_bytes(other.data(), bytes, seed + 1);  // differs: a copy that did nothing fails
    destination.write(other);
  }
  Route route;
  EndBuffer source, destination;
  std::vector<std::uint8_t> expected;  // what the destination must hold after a copy
  cudaStream_t stream = nullptr;
};

class RouteCopy : public PreparedEntry {
 public:
  RouteCopy(Engine engine, const Route& route, bool both_ways, std::size_t n) : engine_(engine), bytes_(n) {
    const std::vector<Route> directions =
        both_ways ? std::vector<Route>{route, route.reversed()} : std::vector<Route>{route};
    for (std::size_t d = 0; d < directions.size(); ++d) {
      legs_.push_back(std::make_unique<Leg>(directions[d], n, configuration_seed(n, 300 + 2 * d)));
      legs_.back()->stream = stream_of(directions[d].runner(), static_cast<int>(d));
    }
    report(route, static_cast<double>(n));
  }

  void run_once() override {
    for (const auto& leg : legs_) {
      CurrentDevice on(leg->route.runner());
      if (engine_ == Engine::sm_copy) {
        sm_copy(leg->destination.device_view(), leg->source.device_view(), bytes_, leg->stream);
      } else if (leg->route.between_gpus()) {
        CUDA_CHECK(cudaMemcpyPeerAsync(leg->destination.get(), leg->route.destination, leg->source.get(),
                                       leg->route.source, bytes_, leg->stream));
      } else {
        CUDA_CHECK(cudaMemcpyAsync(leg->destination.get(), leg->source.get(), bytes_, cudaMemcpyDefault, leg->stream));
      }
    }
  }

  std::string warm_up() override {
    run_once();
    wait();
    return check();
  }

  double timed_call(Clock) override {
    const auto start = std::chrono::steady_clock::now();
    run_once();
    wait();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }

 private:
  void wait() const {
    for (const auto& leg : legs_) CUDA_CHECK(cudaStreamSynchronize(leg->stream));
  }

  // Empty when every destination holds its source's bytes; otherwise where it differs.
  std::string check() const {
    for (const auto& leg : legs_) {
      const std::vector<std::uint8_t> held = leg->destination.read(bytes_);
      const std::size_t wrong = first_difference(held.data(), leg->expected.data(), bytes_);
      if (wrong != bytes_)
        return route_name(leg->route) + ": byte " + std::to_string(wrong) + " differs after the copy";
    }
    return "";
  }

  // Traffic: bytes_transferred counts every direction; the link's rate, one way, times the
  // directions is the entry's roof (link_peak_bytes_per_s, absent when NVML did not give it).
  void report(const Route& route, double n) {
    const double legs = static_cast<double>(legs_.size());
    if (route.between_gpus()) {
      add_memory_traffic(n * legs, n * legs);  // each GPU's memory: read on one end, written on the other
      counters["bytes_transferred"] = n * legs;
    } else {
      const bool both = legs_.size() == 2;
      const double to_gpu = route.source == kHost || both ? n : 0, to_host = route.destination == kHost || both ? n : 0;
      add_memory_traffic(to_host, to_gpu);
      add_link_traffic(to_gpu, to_host);
    }
    const double rate = link_rate(route);
    if (rate > 0) counters["link_peak_bytes_per_s"] = rate * legs;
    counters["peer_access"] = route.between_gpus() && can_access_peer(route.destination, route.source) ? 1 : 0;
    label = link_label(route);
  }

  Engine engine_;
  std::size_t bytes_;
  std::vector<std::unique_ptr<Leg>> legs_;
};

std::unique_ptr<PreparedEntry> prepare_gpu(Engine engine, const Route& route, bool both_ways, std::size_t n) {
  if (route.between_gpus()) {
    if (visible_gpus() < 2) throw EntrySkipped("one GPU visible");
    const bool direct = can_access_peer(route.destination, route.source) &&
                        (!both_ways || can_access_peer(route.source, route.destination));
    if (engine == Engine::sm_copy && !direct)
      throw EntrySkipped("no peer access between " + endpoint_name(route.source) + " and " +
                         endpoint_name(route.destination) + " (cudaDeviceCanAccessPeer)");
    if (direct) {
      enable_peer_access(route.destination, route.source);
      if (both_ways) enable_peer_access(route.source, route.destination);
    }
  }
  // Host bytes at peak: both ends' contents and the check's download, per direction.
  require_host_memory(3.0 * n * (both_ways ? 2 : 1));
  return std::make_unique<RouteCopy>(engine, route, both_ways, n);
}
#endif  // GPUBENCH_HAVE_CUDA

std::unique_ptr<PreparedEntry> prepare(const Entry& entry) {
  const auto& impl = row_of<P2pImplementation>(entry);
#if GPUBENCH_HAVE_CUDA
  return prepare_gpu(impl.engine, route_of(entry.precision), entry.mode == direction_info(true).id,
                     static_cast<std::size_t>(entry.n));
#else
  (void)impl;
  throw EntrySkipped("built without CUDA");  // not reached: no GPU entry is selected in such a build
#endif
}

// --- description -------------------------------------------------------------------------
Json describe_named(const Named& named) { return {{"id", named.id}, {"description", named.description}}; }

// A rate NVML gave, or null where it gave none.
Json optional_rate(double bytes_per_s) { return bytes_per_s > 0 ? Json(bytes_per_s) : Json(nullptr); }

Json describe_gpu(int g) {
  const nvml::DeviceLinks& l = gpu_links()[g];
  return {{"gpu", endpoint_name(g)},
          {"pci_bus_id", l.pci_bus_id},
          {"pcie_generation", l.pcie_generation},
          {"pcie_width", l.pcie_width},
          {"pcie_bytes_per_s", optional_rate(l.pcie_bytes_per_s())},
          {"nvlinks_active", l.nvlinks_active},
          {"nvlink_version", l.nvlink_version},
          {"nvlink_bytes_per_s", optional_rate(l.nvlink_bytes_per_s)},
          {"unavailable_reason", text_or_null(l.unavailable_reason)}};
}

Json describe_pair(const Route& r) {
  const nvml::PairTopology t = topology_of(r);
  return {{"pair", route_name(r)},
          {"common_ancestor", t.common_ancestor},
          {"link", t.link},
          {"link_bytes_per_s", optional_rate(t.link_bytes_per_s)},
          {"unavailable_reason", text_or_null(t.unavailable_reason)}};
}

Json describe_topology() {
  std::vector<int> gpus;
  std::vector<Route> pairs;
  for (int g = 0; g < visible_gpus(); ++g) gpus.push_back(g);
  for (const Route& r : routes())
    if (r.between_gpus() && visible_gpus() >= 2 && r.source < r.destination) pairs.push_back(r);
  return {{"visible_gpus", visible_gpus()},
          {"gpus", array_of(gpus, describe_gpu)},
          {"pairs", array_of(pairs, describe_pair)}};
}

Json describe_study() {
  return {{"timed_region",
           "host clock from the call until every stream it used has finished; allocation, filling and checking "
           "excluded"},
          {"directions",
           array_of(std::vector<bool>{false, true}, [](bool both) { return describe_named(direction_info(both)); })},
          {"topology", describe_topology()}};
}

Json describe_engine(const Implementation& impl) {
  return {{"description", engine_info(static_cast<const P2pImplementation&>(impl).engine).description}};
}

StudyDefinition definition() {
  StudyDefinition study;
  study.name = "p2p";
  study.implementations = rows(table());
  study.modes = {direction_info(false).id, direction_info(true).id};
  study.default_sizes = geometric(16, 1L << 30, 4);  // 16 B (latency) to 1 GiB (bandwidth)
  study.axes = {"engine", "direction", "route", "bytes"};
  study.axes.n_unit = "bytes";
  study.axes.about = {{"impl", "copy engine or SM kernel"},
                      {"mode", "one way or both ways at once"},
                      {"precision", "route: <source>-<destination>, each host or gpu<index>"},
                      {"n", "bytes per copy"}};
  // The driver's default suite: the copy engines at 16 B (each route's latency) and 64 MiB (its bandwidth,
  // as transfer's largest suite copy), one way and both ways. On one GPU that is 6 measured entries (the
  // host to the GPU, both ways, the GPU to the host) and the pair entries skipped ("one GPU visible"); on
  // N GPUs it grows with the N(N-1) ordered pairs (8 GPUs: 216 entries, an estimated two minutes a trial at
  // half a second an entry). The SM kernel and the sweep from 16 B to 1 GiB: --full, or --impls/--sizes.
  study.quick.sizes = {64 << 20};
  study.quick.impls = {"copy_engine"};
  study.suite.sizes = {16, 64 << 20};
  study.suite.impls = {"copy_engine"};
  study.counters = {
      {"memory_read_bytes", "bytes", "between GPUs: n a leg (each GPU's memory read on one end); with the host: n "
                                     "where the copy reads the GPU (to the host, or both ways), else 0"},
      {"memory_written_bytes", "bytes", "between GPUs: n a leg; with the host: n where the copy writes the GPU"},
      {"bytes_transferred", "bytes", "every direction's bytes: n one way, 2n both ways (between GPUs too, where "
                                     "nothing crosses the host link)"},
      {"link_peak_bytes_per_s", "bytes/s", "the theoretical rate of the route's link one way (NVML: NVLink links x "
                                           "their rate, or PCIe generation x width) times the directions; absent "
                                           "where NVML did not give it"},
      {"peer_access", "flag", "1 where the destination GPU can access the source's memory (cudaDeviceCanAccessPeer)"}};
  study.rules = {{"bandwidth", "bytes_transferred / time"},
                 {"fraction_of_link", "bytes_transferred / time / link_peak_bytes_per_s"}};
  study.gpu_clock = Clock::host_to_completion;
  study.prepare = prepare;
  study.describe = describe_study;
  study.describe_implementation = describe_engine;
  return study;
}

}  // namespace
}  // namespace gpubench

int main(int argc, char** argv) { return gpubench::run_study(argc, argv, gpubench::definition()); }
