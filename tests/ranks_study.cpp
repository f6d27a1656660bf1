// A study run by several ranks together (StudyDefinition::ranks_together) whose entries do nothing but
// count their calls on the CPU, for the launch tests (tests/python/test_launch.py): rank 0 measures,
// the others follow its orders (harness/ranks.hpp), and each rank prints how many calls it made,
// which must be the same on every rank (nothing where it made none: --describe, --benchmark_list_tests). At n = 2, rank 1 cannot set its entry up: every rank skips it.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdio>
#include <memory>

#include "core/rank_channel.hpp"
#include "harness/ranks.hpp"
#include "harness/study.hpp"

namespace gpubench {
namespace {

constexpr int kFailingSize = 2;
constexpr int kFailingRank = 1;

long calls_made = 0;
int this_rank = 0;

// About 20 us of host work: the timed loop batches calls by what it measures.
class CountingEntry : public PreparedEntry {
 public:
  void run_once() override {
    ++calls_made;
    const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(20);
    while (std::chrono::steady_clock::now() < until) benchmark::ClobberMemory();
  }
};

std::unique_ptr<PreparedEntry> prepare(const Entry& entry) {
  this_rank = rank_channel() ? rank_channel()->ranks().rank : 0;
  on_every_rank([&] {
    if (entry.n == kFailingSize && this_rank == kFailingRank) throw EntrySkipped("cannot set up size 2");
  });
  return std::make_unique<CountingEntry>();
}

const std::vector<Implementation>& table() {
  static const std::vector<Implementation> all = [] {
    Implementation count;
    count.id = "count";
    count.modes = {"host"};
    count.precisions = {"none"};
    count.threads = one_thread;
    return std::vector<Implementation>{count};
  }();
  return all;
}

StudyDefinition definition() {
  StudyDefinition study;
  study.name = "ranks_test";
  study.implementations = rows(table());
  study.modes = {"host"};
  study.default_sizes = {1, kFailingSize, 3};
  study.prepare = prepare;
  study.ranks_together = true;
  return study;
}

}  // namespace
}  // namespace gpubench

int main(int argc, char** argv) {
  const int status = gpubench::run_study(argc, argv, gpubench::definition());
  if (gpubench::calls_made > 0) std::printf("{\"rank\": %d, \"calls\": %ld}\n", gpubench::this_rank, gpubench::calls_made);
  return status;
}
