// The collectives study: NCCL's all-reduce (sum), all-gather, reduce-scatter, broadcast (root 0) and
// all-to-all (ncclSend/ncclRecv of one chunk per peer, grouped) in FP32, one rank per GPU, over
// message sizes 2^3 to 2^33 bytes, after nccl-tests. Ranks: started alone, this process drives every
// visible GPU (ncclCommInitAll, each call a group over the devices); started as one of several ranks
// (mpirun, srun, torchrun), it drives the GPU the skeleton chose by its local rank (ncclCommInitRank,
// NCCL's unique id broadcast over the rank channel) and rank 0 alone measures, the others making the
// same calls on its orders (harness/ranks.hpp). Modes: out of place and in place, each
// enqueued call by call or replayed as a CUDA graph captured once (one collective per launch).
//   n is log2 of the message size in bytes (the study's sizes pass 2^31; the size axis is an int):
//   nccl-tests' size, the larger of a rank's two buffers (core/collectives.hpp).
// Timing: CUDA events on the default (legacy) stream of rank 0's GPU, which orders itself with the
// communicators' blocking streams, so the events bracket rank 0's collective: a collective ends on
// every rank together, and nccl-tests reports the slowest rank the same way. Inputs and check as in
// nccl-tests: each rank's input is filled on its own GPU from a seed (element by element, a
// counter-based generator), and each entry's first call is checked on every rank's GPU against
// values recomputed there from the seeds of the ranks that contribute (copies exactly, sums within a
// stated bound; kernels/collective_data.cuh), so no process holds any rank's input on the host; rank
// 0 reports the worst rank's errors and the first wrong rank. Algorithm and bus bandwidth are
// derived by the driver from the counters message_bytes and bus_factor (nccl-tests' formulas,
// docs/methodology.md).
// Entries: collectives/<collective>/gpu/<placement>/fp32/n:<log2 bytes>; docs/interface.md.
#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "core/collectives.hpp"
#include "core/gpu_runtime.hpp"
#include "core/json.hpp"
#include "core/random.hpp"
#include "core/rank_channel.hpp"
#include "harness/ranks.hpp"
#include "harness/study.hpp"
#include "collective_data.cuh"

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

// --- the communicators: the GPUs this process drives, made once for the process --------------
struct Member {
  int rank = 0;  // in the collective
  int device = 0;
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;  // blocking: the legacy default stream orders with it
};

struct Communicators {
  int ranks = 0;                // of the collective
  std::vector<Member> members;  // this process's, the first on the GPU the timed loop's events are on
};

// Alone: every visible GPU, one rank each.
Communicators* every_visible_gpu() {
  auto made = std::make_unique<Communicators>();
  CUDA_CHECK(cudaGetDeviceCount(&made->ranks));
  std::vector<ncclComm_t> comms(made->ranks);
  nccl_check(ncclCommInitAll(comms.data(), made->ranks, nullptr), "ncclCommInitAll");
  for (int device = 0; device < made->ranks; ++device) {
    CUDA_CHECK(cudaSetDevice(device));
    Member member{device, device, comms[device], nullptr};
    CUDA_CHECK(cudaStreamCreate(&member.stream));
    made->members.push_back(member);
  }
  CUDA_CHECK(cudaSetDevice(0));
  return made.release();
}

// One of several ranks: the current GPU (the skeleton's choice), rank 0's unique id on every rank.
Communicators* this_ranks_gpu(RankChannel& channel) {
  auto made = std::make_unique<Communicators>();
  made->ranks = channel.ranks().size;
  Member member;
  member.rank = channel.ranks().rank;
  ncclUniqueId id{};
  on_every_rank([&] {
    CUDA_CHECK(cudaGetDevice(&member.device));
    if (member.rank == 0) nccl_check(ncclGetUniqueId(&id), "ncclGetUniqueId");
  });
  const std::string sent = channel.broadcast(std::string(reinterpret_cast<const char*>(&id), sizeof id));
  std::memcpy(&id, sent.data(), sizeof id);
  nccl_check(ncclCommInitRank(&member.comm, made->ranks, id, member.rank), "ncclCommInitRank");
  CUDA_CHECK(cudaStreamCreate(&member.stream));
  made->members.push_back(member);
  return made.release();
}

Communicators& communicators() {
  // Never freed: NCCL and the CUDA runtime may be gone at exit.
  static Communicators* made = rank_channel() ? this_ranks_gpu(*rank_channel()) : every_visible_gpu();
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

// One (collective, size): its buffers' elements and the seed every rank's input is drawn from.
struct CollectiveProblem {
  CollectiveCounts counts;
  std::uint64_t seed = 0;
};

// This process's ranks' buffers, each on its GPU; in place, NCCL's conventions: all-gather's input
// is the rank's slice of its output, reduce-scatter's output the rank's slice of its input, the
// others one buffer. Made in two steps, each on every rank at once (harness/ranks.hpp): the buffers
// (and the graph), then the first call and its check.
class CollectiveEntry : public PreparedEntry {
 public:
  CollectiveEntry(const CollectiveRow& row, const ModeInfo& mode, const CollectiveProblem& problem)
      : row_(row), mode_(mode), counts_(problem.counts), seed_(problem.seed), comms_(communicators()) {
    for (const Member& member : comms_.members) allocate(member);
    CUDA_CHECK(cudaSetDevice(timing_device()));
    if (mode_.graph) capture();
    counters["message_bytes"] = static_cast<double>(counts_.message_bytes());
    counters["ranks"] = comms_.ranks;
    counters["bus_factor"] = bus_bandwidth_factor(row_.collective, comms_.ranks);
    // Per GPU: its input read and its output written, at the least.
    add_memory_traffic(4.0 * static_cast<double>(counts_.send), 4.0 * static_cast<double>(counts_.recv));
  }

  // The first call, and this process's ranks' outputs checked, each on its GPU after the call on its
  // stream: one line per rank for rank 0.
  std::vector<std::string> first_call() {
    run_once();
    std::vector<std::string> verdicts;
    for (std::size_t i = 0; i < comms_.members.size(); ++i) {
      const Member& member = comms_.members[i];
      CUDA_CHECK(cudaSetDevice(member.device));
      verdicts.push_back(verdict_line(
          check_collective_output(row_.collective, recv_[i], seed_, comms_.ranks, member.rank, counts_, member.stream)));
    }
    CUDA_CHECK(cudaSetDevice(timing_device()));
    return verdicts;
  }

  // Every rank's verdict line, in rank order: the worst rank's errors; the first wrong rank's reason.
  void record_verdicts(const std::vector<std::string>& lines) {
    double rel_fro = 0, max_rel = 0;
    for (std::size_t rank = 0; rank < lines.size(); ++rank) {
      char* rest = nullptr;
      const double fro = std::strtod(lines[rank].c_str(), &rest);
      const double max = std::strtod(rest, &rest);
      if (std::isnan(fro) || fro > rel_fro) rel_fro = fro;
      if (std::isnan(max) || max > max_rel) max_rel = max;
      if (*rest && wrong_result.empty()) wrong_result = "rank " + std::to_string(rank) + ": " + (rest + 1);
    }
    counters["rel_fro_error"] = rel_fro;
    counters["max_rel_error"] = max_rel;
  }

  void run_once() override {
    if (!mode_.graph) return enqueue();
    // Each graph launched from its own GPU; the timing GPU current again for the timed loop's events.
    for (std::size_t i = 0; i < comms_.members.size(); ++i) {
      CUDA_CHECK(cudaSetDevice(comms_.members[i].device));
      CUDA_CHECK(cudaGraphLaunch(graphs_[i].get(), comms_.members[i].stream));
    }
    CUDA_CHECK(cudaSetDevice(timing_device()));
  }

 private:
  bool single_buffer() const { return mode_.placement == Placement::in_place; }
  int timing_device() const { return comms_.members.front().device; }

  // "<rel_fro_error> <max_rel_error>", and " <why>" when wrong: a verdict as text, for the rank channel.
  static std::string verdict_line(const CollectiveVerification& verdict) {
    char errors[64];
    std::snprintf(errors, sizeof errors, "%.17g %.17g", verdict.errors.rel_fro_error, verdict.errors.max_rel_error);
    return errors + (verdict.passed() ? "" : " " + verdict.describe());
  }

  void allocate(const Member& member) {
    CUDA_CHECK(cudaSetDevice(member.device));
    const std::size_t largest = std::max(counts_.send, counts_.recv);
    require_device_memory(4.0 * (single_buffer() ? largest : counts_.send + counts_.recv));
    buffers_.push_back(std::make_unique<DeviceBuffer<float>>(single_buffer() ? largest : counts_.recv));
    float* recv = buffers_.back()->get();
    float* send = recv;
    if (!single_buffer()) {
      buffers_.push_back(std::make_unique<DeviceBuffer<float>>(counts_.send));
      send = buffers_.back()->get();
    } else if (row_.collective == Collective::all_gather) {
      send = recv + static_cast<std::size_t>(member.rank) * counts_.send;
    } else if (row_.collective == Collective::reduce_scatter) {
      recv = send + static_cast<std::size_t>(member.rank) * counts_.recv;
    }
    // Poisoned first (all-ones bytes are NaN), so that an element never written fails the check; then
    // the input (in place, all-gather's lies in the output), both on the legacy default stream, which
    // the communicator's blocking stream orders itself with. Waited for, so that a fault shows in
    // this step, which every rank takes together.
    CUDA_CHECK(cudaMemset(recv, 0xFF, 4 * counts_.recv));
    fill_collective_input(send, counts_.send, seed_, member.rank, nullptr);
    CUDA_CHECK(cudaStreamSynchronize(nullptr));
    send_.push_back(send);
    recv_.push_back(recv);
  }

  // One collective on every rank of this process, a group over its devices (one thread drives them all).
  void enqueue() {
    nccl_check(ncclGroupStart(), "ncclGroupStart");
    for (std::size_t i = 0; i < comms_.members.size(); ++i) call(i);
    nccl_check(ncclGroupEnd(), "ncclGroupEnd");
  }

  void call(std::size_t i) {
    ncclComm_t comm = comms_.members[i].comm;
    cudaStream_t stream = comms_.members[i].stream;
    const float* send = send_[i];
    float* recv = recv_[i];
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
        const std::size_t chunk = counts_.send / static_cast<std::size_t>(comms_.ranks);
        for (int peer = 0; peer < comms_.ranks; ++peer) {
          nccl_check(ncclSend(send + peer * chunk, chunk, ncclFloat, peer, comm, stream), "ncclSend");
          nccl_check(ncclRecv(recv + peer * chunk, chunk, ncclFloat, peer, comm, stream), "ncclRecv");
        }
        return;
      }
    }
  }

  // One collective captured on every member's stream at once, as nccl-tests captures (its -G option).
  void capture() {
    for (const Member& member : comms_.members) {
      CUDA_CHECK(cudaSetDevice(member.device));
      CUDA_CHECK(cudaStreamBeginCapture(member.stream, cudaStreamCaptureModeThreadLocal));
    }
    CUDA_CHECK(cudaSetDevice(timing_device()));
    try {
      enqueue();
    } catch (...) {
      end_captures();  // no stream left capturing for the next entry
      throw;
    }
    end_captures();
    for (std::size_t i = 0; i < comms_.members.size(); ++i) {
      CUDA_CHECK(cudaSetDevice(comms_.members[i].device));
      cudaGraphExec_t exec = nullptr;
      CUDA_CHECK(cudaGraphInstantiate(&exec, captured_[i].get(), 0));
      graphs_.emplace_back(exec);
    }
    CUDA_CHECK(cudaSetDevice(timing_device()));
  }

  // Ends every member's capture, whatever happened to the others, keeping what each captured.
  void end_captures() {
    cudaError_t first_error = cudaSuccess;
    for (const Member& member : comms_.members) {
      cudaGraph_t graph = nullptr;
      const cudaError_t ended = cudaStreamEndCapture(member.stream, &graph);
      captured_.emplace_back(graph);
      if (first_error == cudaSuccess) first_error = ended;
    }
    CUDA_CHECK(first_error);
  }

  const CollectiveRow& row_;
  const ModeInfo& mode_;
  CollectiveCounts counts_;
  std::uint64_t seed_;
  Communicators& comms_;
  std::vector<std::unique_ptr<DeviceBuffer<float>>> buffers_;
  std::vector<const float*> send_;  // per member
  std::vector<float*> recv_;
  std::vector<Graph> captured_;
  std::vector<GraphExec> graphs_;  // declared after captured_: destroyed before the graphs they came from
};

// The problem of one (collective, size): its counts, and a seed of its own, from the size and the collective.
CollectiveProblem problem_for(const CollectiveRow& row, int log2_bytes, int ranks) {
  const CollectiveCounts counts = collective_counts(row.collective, std::size_t{1} << log2_bytes, ranks);
  if (counts.send == 0 || counts.recv == 0) {
    throw EntrySkipped("a message of 2^" + std::to_string(log2_bytes) + " bytes holds less than one FP32 value per rank of " +
                       std::to_string(ranks));
  }
  const std::uint64_t configuration =
      static_cast<std::uint64_t>(log2_bytes) * 16 + static_cast<std::uint64_t>(row.collective);
  return {counts, configuration_seed(configuration, 0)};
}

// Several ranks: each step on every rank at once, so that a rank that cannot go on (no memory for
// its buffers) stops every rank before the first call, which would wait for it.
std::unique_ptr<PreparedEntry> prepare(const Entry& entry) {
  const auto& row = row_of<CollectiveRow>(entry);
  const ModeInfo& mode = mode_info(entry.mode);
  // Every rank decides alike, before any collective call. Captured across processes, the first
  // entry never finished on a 2-GPU H200 node (NCCL 2.28, ranks over TCP), even with one call made
  // uncaptured before the capture: a skip that says so, not a launch that waits for good.
  if (mode.graph && rank_channel()) {
    throw EntrySkipped("graph modes run where one process drives every GPU: with one process per GPU they waited "
                       "for good (NCCL 2.28); out_of_place and in_place measure these ranks");
  }
  const Communicators& comms = communicators();
  std::unique_ptr<CollectiveEntry> made;
  on_every_rank([&] {
    made = std::make_unique<CollectiveEntry>(row, mode, problem_for(row, entry.n, comms.ranks));
  });
  std::vector<std::string> verdicts;
  on_every_rank([&] { verdicts = made->first_call(); });
  if (RankChannel* channel = rank_channel()) verdicts = channel->gather(verdicts.front());
  if (!verdicts.empty()) made->record_verdicts(verdicts);  // rank 0's entry; the others' are never reported
  return made;
}

// How the entries' bus bandwidth follows from their counters.
constexpr const char* kBusBandwidthRule =
    "algorithm bandwidth (message_bytes / time) x bus_factor: all_reduce 2(n-1)/n, all_gather, reduce_scatter and "
    "all_to_all (n-1)/n, broadcast 1 (nccl-tests, doc/PERFORMANCE.md)";

Json describe_study() {
  int nccl_version = 0;
  nccl_check(ncclGetVersion(&nccl_version), "ncclGetVersion");
  return {{"nccl_version", nccl_version},
          {"operation", "sum"},
          {"root", 0},
          {"size_meaning",
           "log2 of the message size in bytes: the larger of a rank's send and receive buffers (nccl-tests' size)"},
          {"ranks",
           "one per GPU: started alone, every visible GPU driven by this process (ncclCommInitAll); started as "
           "several ranks (mpirun, srun, torchrun), one process per GPU (ncclCommInitRank), rank 0 measuring"},
          {"timed_region",
           "one collective on every rank: CUDA events on rank 0's GPU's default stream, which orders itself with the "
           "communicators' streams"},
          {"bus_bandwidth", kBusBandwidthRule},
          {"check",
           "every rank's output of the first call, on its own GPU: each rank's input filled there from a seed (SplitMix64, "
           "uniform in [-1, 1)), each output element recomputed there from the contributing ranks' seeds; copies exactly, "
           "sums within 2(n-1) u sum_r |x_r| of the FP64 sum (u = 2^-24), element by element"}};
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
  study.axes.n_unit = "log2 bytes";
  // The driver's default suite: every collective out of place at 2^16 (64 KiB: latency-bound) and 2^28 (256
  // MiB: near the links' rate on NVLink), 10 entries; --quick: 2^24. The 8 GiB all-reduce of the issue's
  // target and torch.distributed's beside it: --sizes 33 --impls all_reduce. In place, CUDA graphs and the
  // sweep from 8 B to 8 GiB: --full.
  study.quick.sizes = {24};
  study.quick.modes = {"out_of_place"};
  study.suite.sizes = {16, 28};
  study.suite.modes = {"out_of_place"};
  study.counters = {
      {"message_bytes", "bytes", "2^n: the larger of a rank's send and receive buffers (nccl-tests' size)"},
      {"ranks", "count", "the ranks (GPUs) taking part"},
      {"bus_factor", "ratio", "nccl-tests' factor from algorithm to bus bandwidth: all_reduce 2(n-1)/n, all_gather, "
                              "reduce_scatter and all_to_all (n-1)/n, broadcast 1, n the ranks"},
      {"memory_read_bytes", "bytes", "each GPU's input once, at the least: its send buffer"},
      {"memory_written_bytes", "bytes", "each GPU's output once, at the least: its receive buffer"},
      {"rel_fro_error", "ratio", "the worst rank's output against the FP64 sum (copies exactly)"},
      {"max_rel_error", "ratio", "the worst rank's max |output - reference| / max |reference|"}};
  study.rules = {{"bus_bandwidth", kBusBandwidthRule}};
  study.prepare = prepare;
  study.describe = describe_study;
  study.ranks_together = true;
  return study;
}

}  // namespace
}  // namespace gpubench

int main(int argc, char** argv) { return gpubench::run_study(argc, argv, gpubench::definition()); }
