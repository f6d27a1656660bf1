#include "harness/ranks.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <thread>

#include "core/json.hpp"
#include "core/rank_channel.hpp"
#include "harness/study.hpp"

#if GPUBENCH_HAVE_CUDA
#include <cuda_runtime.h>
#endif

namespace gpubench {
namespace {

// Rank 0's orders, one byte each and what follows it.
constexpr char kPrepare = 'p';  // + the entry's name
constexpr char kCalls = 'c';    // + how many
constexpr char kFinish = 'f';
// A rank's outcome of a step done on every rank: "" or one of these + the reason.
constexpr char kSkipped = 's';
constexpr char kFailed = 'e';

struct Ranks {
  std::unique_ptr<RankChannel> channel;
  int on_this_node = 1;
  std::string json;  // rank 0's record of every rank
};

Ranks& ranks() {
  static Ranks state;
  return state;
}

// Of every rank's text, the first non-empty one with its rank named after its first `kind_chars`
// characters ("" when all are empty), on every rank.
std::string first_from_any_rank(RankChannel& channel, const std::string& mine, std::size_t kind_chars) {
  const std::vector<std::string> all = channel.gather(mine);
  std::string first;
  for (std::size_t rank = 0; rank < all.size() && first.empty(); ++rank) {
    if (!all[rank].empty())
      first = all[rank].substr(0, kind_chars) + "rank " + std::to_string(rank) + ": " + all[rank].substr(kind_chars);
  }
  return channel.broadcast(first);
}

std::string host_name() {
  char name[256] = {};
  return ::gethostname(name, sizeof name - 1) == 0 ? name : "unknown";
}

std::string cpu_model() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);) {
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  }
  return "";
}

#if GPUBENCH_HAVE_CUDA
// The only GPU the process sees (a launcher that gives each task its own), else device <local rank>.
std::string choose_gpu(int local_rank) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) return "cannot count the CUDA devices";
  const int device = count == 1 ? 0 : local_rank;
  if (device >= count)
    return "local rank " + std::to_string(local_rank) + " of a node whose processes see " + std::to_string(count) +
           " GPUs: start at most one rank per GPU on each node";
  const cudaError_t status = cudaSetDevice(device);
  return status == cudaSuccess ? "" : std::string("cudaSetDevice: ") + cudaGetErrorString(status);
}

Json gpu_json() {
  int device = 0, driver = 0;
  cudaDeviceProp properties{};
  char pci_bus_id[32] = {};
  if (cudaGetDevice(&device) != cudaSuccess || cudaGetDeviceProperties(&properties, device) != cudaSuccess ||
      cudaDeviceGetPCIBusId(pci_bus_id, sizeof pci_bus_id, device) != cudaSuccess || cudaDriverGetVersion(&driver) != cudaSuccess)
    return nullptr;
  char uuid[48];
  const auto* u = reinterpret_cast<const unsigned char*>(properties.uuid.bytes);
  std::snprintf(uuid, sizeof uuid, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0], u[1],
                u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
  return {{"device", device},
          {"name", properties.name},
          {"uuid", uuid},
          {"pci_bus_id", pci_bus_id},
          {"memory_bytes", properties.totalGlobalMem},
          {"cuda_driver_version", driver}};
}
#endif

// Who this rank is: its node (host, CPU) and its GPU, or why it has none; as JSON text, which the
// channel carries to rank 0.
std::string identity_json(const LaunchedRank& rank, const std::string& host, const std::string& gpu_reason) {
  Json gpu = nullptr;
#if GPUBENCH_HAVE_CUDA
  if (gpu_reason.empty()) gpu = gpu_json();
#endif
  return dump_json({{"rank", rank.rank},
                    {"local_rank", rank.local_rank},
                    {"host", host},
                    {"cpu", cpu_model()},
                    {"logical_cpus", std::thread::hardware_concurrency()},
                    {"gpu", gpu},
                    {"gpu_reason", text_or_null(gpu_reason)}});
}

std::string joined(const std::vector<std::string>& parts, const std::string& separator) {
  std::string out;
  for (const std::string& part : parts) out += (out.empty() ? "" : separator) + part;
  return out;
}

void run_calls(PreparedEntry* entry, int calls) {
  if (!entry) throw std::runtime_error("rank 0 ordered calls of an entry this rank has not prepared");
  for (int i = 0; i < calls; ++i) entry->run_once();
}

}  // namespace

RankChannel* rank_channel() { return ranks().channel.get(); }
int ranks_on_this_node() { return ranks().on_this_node; }
bool following() { return rank_channel() && rank_channel()->ranks().rank != 0; }
void write_ranks(const std::string& path) {
  if (ranks().json.empty() || path.empty()) return;
  std::ofstream out(path);
  out << ranks().json << "\n";
  if (!out) throw std::runtime_error("cannot write " + path);
}

void order_calls(int calls) {
  RankChannel* channel = rank_channel();
  if (!channel) return;
  channel->broadcast(kCalls + std::to_string(calls));
  channel->gather("");  // each follower answers once its calls are enqueued
}

void order_prepare(const std::string& name) {
  if (rank_channel()) rank_channel()->broadcast(kPrepare + name);
}

void on_every_rank(const std::function<void()>& step) {
  RankChannel* channel = rank_channel();
  if (!channel) return step();
  std::exception_ptr failure;
  std::string outcome;
  try {
    step();
  } catch (const std::exception&) {
    failure = std::current_exception();
    const EntryFailure read = entry_failure(failure);
    outcome = (read.skipped ? kSkipped : kFailed) + read.reason;
  }
  const std::string first = first_from_any_rank(*channel, outcome, 1);
  if (first.empty()) return;
  if (failure) std::rethrow_exception(failure);
  if (first[0] == kSkipped) throw EntrySkipped(first.substr(1));
  throw std::runtime_error(first.substr(1));
}

std::string join_ranks(const std::string& gpu_reason) {
  Ranks& state = ranks();
  state.channel = open_rank_channel();
  if (!state.channel) return gpu_reason;
  RankChannel& channel = *state.channel;
  std::string reason = gpu_reason;
#if GPUBENCH_HAVE_CUDA
  if (reason.empty()) reason = choose_gpu(channel.ranks().local_rank);
#endif
  const std::string host = host_name();
  const std::vector<std::string> identities = channel.gather(identity_json(channel.ranks(), host, reason));
  if (channel.ranks().rank == 0) {
    Json identified = Json::array();
    for (const std::string& identity : identities) identified.push_back(Json::parse(identity));
    state.json = dump_json({{"launcher", channel.ranks().launcher},
                            {"transport", channel.transport()},
                            {"size", channel.ranks().size},
                            {"ranks", identified}});
  }
  const std::string hosts = channel.broadcast(joined(channel.gather(host), "\n"));  // every rank's, everywhere
  std::size_t same_host = 0;
  for (std::size_t start = 0; start <= hosts.size();) {
    const std::size_t end = std::min(hosts.find('\n', start), hosts.size());
    same_host += hosts.compare(start, end - start, host) == 0;
    start = end + 1;
  }
  state.on_this_node = static_cast<int>(same_host);
  return first_from_any_rank(channel, reason, 0);
}

void follow(const StudyDefinition& study, const std::vector<Entry>& entries) {
  std::unique_ptr<PreparedEntry> prepared;
  while (true) {
    const std::string order = rank_channel()->broadcast("");
    const std::string argument = order.substr(1);
    if (order[0] == kFinish) return;
    if (order[0] == kCalls) {
      run_calls(prepared.get(), std::stoi(argument));
      rank_channel()->gather("");
      continue;
    }
    prepared.reset();  // the previous entry's memory goes first, as on rank 0
    const auto entry = std::find_if(entries.begin(), entries.end(), [&](const Entry& e) { return e.name == argument; });
    if (entry == entries.end()) throw std::runtime_error("rank 0 prepares " + argument + ", which this rank did not select");
    try {
      prepared = study.prepare(*entry);
    } catch (const std::exception&) {
      // Rank 0 has the reason: the study's own steps on every rank told it.
    }
  }
}

void leave_ranks() {
  if (!rank_channel()) return;
  if (!following()) rank_channel()->broadcast(std::string(1, kFinish));
  ranks().channel.reset();
}

}  // namespace gpubench
