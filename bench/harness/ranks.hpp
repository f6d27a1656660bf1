// A study run by several processes at once, one per GPU (StudyDefinition::ranks_together, started by
// mpirun, srun or torchrun as several ranks; docs/multi-gpu.md): rank 0 alone runs the skeleton
// (Google Benchmark, the timed loop, the outputs) and, before each step that calls the entry, orders
// the other ranks, the followers, to make the same calls over the rank channel
// (core/rank_channel.hpp). So every rank calls each collective equally often, and no follower
// decides anything: how many warm-up batches, samples and calls is what rank 0 measured. The entry's
// calls are its run_once (an entry of such a study keeps the default warm_up and timed_call).
// Alone, every function here costs one pointer test.
#pragma once

#include <exception>
#include <functional>
#include <string>
#include <vector>

namespace gpubench {

class RankChannel;
struct Entry;
struct StudyDefinition;

// The launch's channel where this process runs a study together with other ranks; nullptr alone.
RankChannel* rank_channel();
// The ranks sharing this process's node (its host name), 1 alone.
int ranks_on_this_node();

// Rank 0, before its own calls: tells the followers to make `calls` calls of the entry, and returns
// once each has enqueued them, so that rank 0's timed calls never wait for a follower still
// receiving its order. Alone, and on a follower: nothing.
void order_calls(int calls);

// Runs `step` on every rank; where it threw on any rank, throws on every rank (the failing rank its
// own exception, the others the first failing rank's reason, as a skip or an error as it was), so
// that no rank goes on into a collective call the others left. A study puts everything that may
// fail on one rank alone before its first collective step inside one. Alone: step().
void on_every_rank(const std::function<void()>& step);

// --- for the skeleton (study.cpp) ---------------------------------------------------------------
// How the skeleton's guard reports a failure: a skip (its reason after "skipped: ") or an error.
struct EntryFailure {
  bool skipped = false;
  bool out_of_device_memory = false;  // a failed allocation leaves a CUDA error to clear
  std::string reason;
};
EntryFailure entry_failure(const std::exception_ptr& failure);

// Opens the channel (every rank at once) where this process is one of several ranks; each rank takes
// its GPU by local rank (the only one it sees, else device <local rank>) and sends rank 0 who it is.
// Returns why the ranks cannot use their GPUs (the first rank's reason, naming it; `gpu_reason` is
// this rank's own), "" when all can. Throws std::runtime_error when the ranks cannot meet.
std::string join_ranks(const std::string& gpu_reason);
// Whether this process follows rank 0 (a rank other than 0 of a study run together).
bool following();
// Rank 0: writes every rank's host, node and GPU, one JSON object, to `path` (the driver folds it
// into results.json); alone, or with no path, nothing. The file is written before any entry runs, so
// that a launch whose GPUs cannot be used still records who took part.
void write_ranks(const std::string& path);
// Rank 0 before its first entry: the entry `name` is prepared next (study.prepare on every rank).
void order_prepare(const std::string& name);
// A follower: prepares and calls the entries rank 0 orders, from `entries` (every rank selects the
// same, from the same flags), until rank 0 says it has finished.
void follow(const StudyDefinition& study, const std::vector<Entry>& entries);
// Rank 0: the followers may finish. Every rank: the channel closes (MPI is finalised).
void leave_ranks();

}  // namespace gpubench
