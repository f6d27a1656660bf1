// A launched rank with nothing but the launch to do, for the launch tests (tests/python/test_launch.py):
// the ranks meet over the rank channel (core/rank_channel.hpp: MPI under an MPI launcher where built
// with it, else TCP to MASTER_ADDR:MASTER_PORT), rank 0 broadcasts a random id as NCCL's unique id
// would be, and gathers every rank's report of who it is and what it received, printed by rank 0 as
// one JSON line per rank. No GPU: mpirun, srun and plain processes with a launcher's variables all drive it.
#include <cstdio>
#include <exception>
#include <random>
#include <string>

#include "core/json.hpp"
#include "core/rank_channel.hpp"

namespace {

constexpr std::size_t kIdBytes = 128;  // NCCL_UNIQUE_ID_BYTES

std::string hex(const std::string& bytes) {
  static const char digits[] = "0123456789abcdef";
  std::string text;
  for (unsigned char byte : bytes) {
    text += digits[byte >> 4];
    text += digits[byte & 15];
  }
  return text;
}

}  // namespace

int main() {
  try {
    const auto channel = gpubench::open_rank_channel(60);
    if (!channel) {
      std::fprintf(stderr, "gpubench_rank_probe: not one of several ranks (no launcher's rank variables, or one rank)\n");
      return 2;
    }
    const gpubench::LaunchedRank& me = channel->ranks();
    std::string id(kIdBytes, '\0');
    std::random_device random;  // a different id each launch, as ncclGetUniqueId's
    for (char& byte : id) byte = static_cast<char>(random());
    id = channel->broadcast(id);
    const std::string report = gpubench::dump_json({{"rank", me.rank},
                                                    {"size", me.size},
                                                    {"local_rank", me.local_rank},
                                                    {"launcher", me.launcher},
                                                    {"transport", channel->transport()},
                                                    {"id", hex(id)}});
    for (const std::string& line : channel->gather(report)) std::printf("%s\n", line.c_str());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gpubench_rank_probe: %s\n", e.what());
    return 1;
  }
}
