// The collectives study: NCCL's all-reduce (sum), all-gather, reduce-scatter, broadcast (root 0) and
// all-to-all (ncclSend/ncclRecv of one chunk per peer, grouped) in FP32 across every visible GPU,
// driven by this one process (ncclCommInitAll: one rank per GPU, each call a group over the devices),
// over message sizes 2^3 to 2^33 bytes, after nccl-tests. Modes: out of place and in place, each
// enqueued call by call or replayed as a CUDA graph captured once (one collective per launch).
//   n is log2 of the message size in bytes (the study's sizes pass 2^31; the size axis is an int):
//   nccl-tests' size, the larger of a rank's two buffers (core/collectives.hpp).
// Timing: CUDA events on the default (legacy) stream of GPU 0, which orders itself with the
// communicators' blocking streams, so the events bracket rank 0's collective: a collective ends on
// every rank together, and nccl-tests reports the slowest rank the same way. Each entry's first call
// is checked on every rank against the host's expected values (copies exactly, sums within a stated
// bound) on random inputs; algorithm and bus bandwidth are derived by the driver from the counters
// message_bytes and bus_factor (nccl-tests' formulas, docs/methodology.md).
// One process per GPU (a launcher's ranks) is refused for now: the timed loop chooses its number of
// calls from what it measures, which every rank would choose differently, and a collective must be
// called the same number of times on every rank.
// Entries: collectives/<collective>/gpu/<placement>/fp32/n:<log2 bytes>; docs/interface.md.
#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/collectives.hpp"
#include "core/gpu_runtime.hpp"
#include "core/json.hpp"
#include "core/launched_rank.hpp"
#include "core/random.hpp"
#include "harness/study.hpp"

namespace gpubench {
namespace {

constexpr int kSmallestLog2 = 3;   // 8 B: two FP32 values
constexpr int kLargestLog2 = 33;   // 8 GiB

void nccl_check(ncclResult_t result, const char* what) {
  if (result != ncclSuccess) throw std::runtime_error(std::string(what) + ": " + ncclGetErrorString(result));
}

// Whether n is the log2 of a message size the study has (a --sizes shared with other studies may hold others).
bool is_message_size(int n) { return n >= kSmallestLog2 && n <= kLargestLog2; }

struct CollectiveRow : Implementation {
  Collective collective;
};

enum class Placement { out_of_place, in_place };
struct ModeInfo {
  const char* id;
  Placement placement;
  bool graph;
};
constexpr ModeInfo kModes[] = {
    {"out_of_place", Placement::out_of_place, false},
    {"in_place", Placement::in_place, false},
    {"out_of_place_graph", Placement::out_of_place, true},
    {"in_place_graph", Placement::in_place, true},
};

const ModeInfo& mode_info(const std::string& id) {
  for (const ModeInfo& mode : kModes) {
    if (id == mode.id) return mode;
  }
  throw std::invalid_argument("unknown mode " + id);
}

std::vector<std::string> all_modes() {
  std::vector<std::string> ids;
  for (const ModeInfo& mode : kModes) ids.push_back(mode.id);
  return ids;
}

const std::vector<CollectiveRow>& table() {
  static const std::vector<CollectiveRow> all = [] {
    const std::vector<std::string> placements = {"out_of_place", "in_place"};
    // ncclSend and ncclRecv on one buffer would overwrite chunks not yet sent: all-to-all is out of place.
    const std::vector<std::string> out_of_place_only = {"out_of_place", "out_of_place_graph"};
    std::vector<CollectiveRow> rows;
    for (Collective collective : {Collective::all_reduce, Collective::all_gather, Collective::reduce_scatter,
                                  Collective::broadcast, Collective::all_to_all}) {
      CollectiveRow row;
      row.id = collective_name(collective);
      row.device = Device::gpu;
      row.modes = collective == Collective::all_to_all ? out_of_place_only : all_modes();
      row.precisions = {"fp32"};
      row.collective = collective;
      row.runs_at = is_message_size;
      rows.push_back(row);
    }
    return rows;
  }();
  return all;
}

// --- the communicators: one per visible GPU, made once for the process -----------------------
struct Communicators {
  std::vector<ncclComm_t> comms;
  std::vector<cudaStream_t> streams;  // blocking streams: the legacy default stream orders with them

  int ranks() const { return static_cast<int>(comms.size()); }
};

Communicators& communicators() {
  static Communicators* made = [] {
    auto* all = new Communicators();  // never freed: NCCL and the CUDA runtime may be gone at exit
    int devices = 0;
    CUDA_CHECK(cudaGetDeviceCount(&devices));
    all->comms.resize(devices);
    nccl_check(ncclCommInitAll(all->comms.data(), devices, nullptr), "ncclCommInitAll");
    all->streams.resize(devices);
    for (int device = 0; device < devices; ++device) {
      CUDA_CHECK(cudaSetDevice(device));
      CUDA_CHECK(cudaStreamCreate(&all->streams[device]));
    }
    CUDA_CHECK(cudaSetDevice(0));
    return all;
  }();
  return *made;
}

// --- one entry -----------------------------------------------------------------------------
struct GraphDeleter {
  void operator()(cudaGraph_t graph) const { cudaGraphDestroy(graph); }
};
struct GraphExecDeleter {
  void operator()(cudaGraphExec_t graph) const { cudaGraphExecDestroy(graph); }
};
using Graph = std::unique_ptr<std::remove_pointer_t<cudaGraph_t>, GraphDeleter>;
using GraphExec = std::unique_ptr<std::remove_pointer_t<cudaGraphExec_t>, GraphExecDeleter>;

// Each rank's buffers on its GPU; in place, NCCL's conventions: all-gather's input is the rank's
// slice of its output, reduce-scatter's output the rank's slice of its input, the others one buffer.
class CollectiveEntry : public PreparedEntry {
 public:
  CollectiveEntry(const CollectiveRow& row, const ModeInfo& mode, const CollectiveCounts& counts,
                  const std::vector<std::vector<float>>& inputs)
      : row_(row), mode_(mode), counts_(counts), comms_(communicators()) {
    for (int rank = 0; rank < comms_.ranks(); ++rank) allocate(rank, inputs[rank]);
    CUDA_CHECK(cudaSetDevice(0));
    if (mode_.graph) capture();
    run_once();
    check(inputs);
    counters["message_bytes"] = static_cast<double>(counts_.message_bytes());
    counters["ranks"] = comms_.ranks();
    counters["bus_factor"] = bus_bandwidth_factor(row_.collective, comms_.ranks());
    // Per GPU: its input read and its output written, at the least.
    add_memory_traffic(4.0 * static_cast<double>(counts_.send), 4.0 * static_cast<double>(counts_.recv));
  }

  void run_once() override {
    if (!mode_.graph) return enqueue();
    // Each graph launched from its own GPU; GPU 0 current again for the timed loop's events.
    for (int rank = 0; rank < comms_.ranks(); ++rank) {
      CUDA_CHECK(cudaSetDevice(rank));
      CUDA_CHECK(cudaGraphLaunch(graphs_[rank].get(), comms_.streams[rank]));
    }
    CUDA_CHECK(cudaSetDevice(0));
  }

 private:
  bool single_buffer() const { return mode_.placement == Placement::in_place; }

  void allocate(int rank, const std::vector<float>& input) {
    CUDA_CHECK(cudaSetDevice(rank));
    const std::size_t largest = std::max(counts_.send, counts_.recv);
    require_device_memory(4.0 * (single_buffer() ? largest : counts_.send + counts_.recv));
    buffers_.push_back(std::make_unique<DeviceBuffer<float>>(single_buffer() ? largest : counts_.recv));
    float* recv = buffers_.back()->get();
    float* send = recv;
    if (!single_buffer()) {
      buffers_.push_back(std::make_unique<DeviceBuffer<float>>(counts_.send));
      send = buffers_.back()->get();
    } else if (row_.collective == Collective::all_gather) {
      send = recv + static_cast<std::size_t>(rank) * counts_.send;
    } else if (row_.collective == Collective::reduce_scatter) {
      recv = send + static_cast<std::size_t>(rank) * counts_.recv;
    }
    // Poisoned first (all-ones bytes are NaN), so that an element never written fails the check.
    CUDA_CHECK(cudaMemset(recv, 0xFF, 4 * counts_.recv));
    CUDA_CHECK(cudaMemcpy(send, input.data(), 4 * counts_.send, cudaMemcpyHostToDevice));
    send_.push_back(send);
    recv_.push_back(recv);
  }

  // One collective on every rank, a group over the devices (one thread drives them all).
  void enqueue() {
    nccl_check(ncclGroupStart(), "ncclGroupStart");
    for (int rank = 0; rank < comms_.ranks(); ++rank) call(rank);
    nccl_check(ncclGroupEnd(), "ncclGroupEnd");
  }

  void call(int rank) {
    ncclComm_t comm = comms_.comms[rank];
    cudaStream_t stream = comms_.streams[rank];
    const float* send = send_[rank];
    float* recv = recv_[rank];
    switch (row_.collective) {
      case Collective::all_reduce:
        return nccl_check(ncclAllReduce(send, recv, counts_.recv, ncclFloat, ncclSum, comm, stream), "ncclAllReduce");
      case Collective::all_gather:
        return nccl_check(ncclAllGather(send, recv, counts_.send, ncclFloat, comm, stream), "ncclAllGather");
      case Collective::reduce_scatter:
        return nccl_check(ncclReduceScatter(send, recv, counts_.recv, ncclFloat, ncclSum, comm, stream),
                          "ncclReduceScatter");
      case Collective::broadcast:
        return nccl_check(ncclBroadcast(send, recv, counts_.recv, ncclFloat, 0, comm, stream), "ncclBroadcast");
      case Collective::all_to_all: {
        const std::size_t chunk = counts_.send / static_cast<std::size_t>(comms_.ranks());
        for (int peer = 0; peer < comms_.ranks(); ++peer) {
          nccl_check(ncclSend(send + peer * chunk, chunk, ncclFloat, peer, comm, stream), "ncclSend");
          nccl_check(ncclRecv(recv + peer * chunk, chunk, ncclFloat, peer, comm, stream), "ncclRecv");
        }
        return;
      }
    }
  }

  // One collective captured on every rank's stream at once, as nccl-tests captures (its -G option).
  void capture() {
    for (int rank = 0; rank < comms_.ranks(); ++rank) {
      CUDA_CHECK(cudaSetDevice(rank));
      CUDA_CHECK(cudaStreamBeginCapture(comms_.streams[rank], cudaStreamCaptureModeThreadLocal));
    }
    CUDA_CHECK(cudaSetDevice(0));
    try {
      enqueue();
    } catch (...) {
      end_captures();  // no stream left capturing for the next entry
      throw;
    }
    end_captures();
    for (int rank = 0; rank < comms_.ranks(); ++rank) {
      CUDA_CHECK(cudaSetDevice(rank));
      cudaGraphExec_t exec = nullptr;
      CUDA_CHECK(cudaGraphInstantiate(&exec, captured_[rank].get(), 0));
      graphs_.emplace_back(exec);
    }
    CUDA_CHECK(cudaSetDevice(0));
  }

  // Ends every rank's capture, whatever happened to the others, keeping what each captured.
  void end_captures() {
    cudaError_t first_error = cudaSuccess;
    for (int rank = 0; rank < comms_.ranks(); ++rank) {
      cudaGraph_t graph = nullptr;
      const cudaError_t ended = cudaStreamEndCapture(comms_.streams[rank], &graph);
      captured_.emplace_back(graph);
      if (first_error == cudaSuccess) first_error = ended;
    }
    CUDA_CHECK(first_error);
  }

  // The first call's output on every rank, in rank order: the first rank that fails gives the entry's
  // verdict, naming itself; else the last rank's errors are reported.
  void check(const std::vector<std::vector<float>>& inputs) {
    for (int rank = 0; rank < comms_.ranks(); ++rank) {
      CUDA_CHECK(cudaSetDevice(rank));
      CUDA_CHECK(cudaStreamSynchronize(comms_.streams[rank]));
    }
    CUDA_CHECK(cudaSetDevice(0));
    std::vector<float> output(counts_.recv);
    for (int rank = 0; rank < comms_.ranks() && wrong_result.empty(); ++rank) {
      CUDA_CHECK(cudaMemcpy(output.data(), recv_[rank], 4 * counts_.recv, cudaMemcpyDefault));
      const Verification verdict = verify_collective(row_.collective, output.data(), inputs, rank, counts_);
      set_verdict(verdict);
      if (!wrong_result.empty()) wrong_result = "rank " + std::to_string(rank) + ": " + wrong_result;
    }
  }

  const CollectiveRow& row_;
  const ModeInfo& mode_;
  CollectiveCounts counts_;
  Communicators& comms_;
  std::vector<std::unique_ptr<DeviceBuffer<float>>> buffers_;
  std::vector<const float*> send_;
  std::vector<float*> recv_;
  std::vector<Graph> captured_;
  std::vector<GraphExec> graphs_;  // declared after captured_: destroyed before the graphs they came from
};

// Every rank's input for one (collective, size): random, seeded by the size, the collective and the rank.
struct CollectiveProblem {
  CollectiveCounts counts;
  std::vector<std::vector<float>> inputs;
};

const CollectiveProblem& problem_for(const CollectiveRow& row, int log2_bytes, int ranks) {
  static ProblemCache<std::pair<int, int>, CollectiveProblem> cache;
  const CollectiveCounts counts = collective_counts(row.collective, std::size_t{1} << log2_bytes, ranks);
  if (counts.send == 0 || counts.recv == 0) {
    throw EntrySkipped("a message of 2^" + std::to_string(log2_bytes) + " bytes holds less than one FP32 value per rank of " +
                       std::to_string(ranks));
  }
  // Host bytes at the peak: every rank's input, one output read back and the check's expected copy.
  require_host_memory(4.0 * (static_cast<double>(counts.send) * ranks + 2.0 * static_cast<double>(counts.recv)));
  return cache.get({static_cast<int>(row.collective), log2_bytes}, [&] {
    CollectiveProblem problem;
    problem.counts = counts;
    for (int rank = 0; rank < ranks; ++rank) {
      const std::uint64_t configuration = static_cast<std::uint64_t>(log2_bytes) * 16 + static_cast<std::uint64_t>(row.collective);
      problem.inputs.push_back(random_uniform_parallel(counts.send, configuration_seed(configuration, rank)));
    }
    return problem;
  });
}

// A process started as one of several ranks by a launcher: refused (see the top of this file).
void refuse_launched_ranks() {
  const std::optional<LaunchedRank> launched = rank_from_environment();
  if (launched && launched->size > 1) {
    throw EntrySkipped("started by " + launched->launcher + " as rank " + std::to_string(launched->rank) + " of " +
                       std::to_string(launched->size) +
                       ": one process per GPU is not supported yet; start one process per node, which drives "
                       "every GPU it sees");
  }
}

std::unique_ptr<PreparedEntry> prepare(const Entry& entry) {
  refuse_launched_ranks();
  const auto& row = row_of<CollectiveRow>(entry);
  const Communicators& comms = communicators();
  const CollectiveProblem& problem = problem_for(row, entry.n, comms.ranks());
  return std::make_unique<CollectiveEntry>(row, mode_info(entry.mode), problem.counts, problem.inputs);
}

std::string describe_study() {
  int nccl_version = 0;
  nccl_check(ncclGetVersion(&nccl_version), "ncclGetVersion");
  return "\"nccl_version\": " + std::to_string(nccl_version) + ", \"operation\": \"sum\", \"root\": 0" +
         ", \"size_meaning\": " + json_string("log2 of the message size in bytes: the larger of a rank's send and receive "
                                              "buffers (nccl-tests' size)") +
         ", \"ranks\": " + json_string("every visible GPU, one rank each, driven by one process (ncclCommInitAll)") +
         ", \"timed_region\": " + json_string("one collective on every rank: CUDA events on GPU 0's default stream, "
                                              "which orders itself with the communicators' streams") +
         ", \"bus_bandwidth\": " + json_string("algorithm bandwidth (message_bytes / time) x bus_factor: all_reduce "
                                               "2(n-1)/n, all_gather, reduce_scatter and all_to_all (n-1)/n, broadcast 1 "
                                               "(nccl-tests, doc/PERFORMANCE.md)") +
         ", \"check\": " + json_string("every rank's output of the first call: copies exactly, sums within 2(n-1) u "
                                       "sum_r |x_r| of the FP64 sum (u = 2^-24)");
}

StudyDefinition definition() {
  StudyDefinition study;
  study.name = "collectives";
  study.implementations = rows(table());
  study.modes = all_modes();
  for (int n = kSmallestLog2; n <= kLargestLog2; ++n) study.default_sizes.push_back(n);
  study.axes.impl = "collective";
  study.axes.mode = "placement";
  study.axes.n = "log2_bytes";
  study.prepare = prepare;
  study.describe = describe_study;
  return study;
}

}  // namespace
}  // namespace gpubench

int main(int argc, char** argv) { return gpubench::run_study(argc, argv, gpubench::definition()); }
