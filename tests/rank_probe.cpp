// A launched rank with nothing but the launch to do, for the launch tests (tests/python/test_launch.py):
// its rank from the launcher's environment and the id rank 0 publishes through the file named by its
// argument (core/launched_rank.hpp), printed as one JSON line. No GPU, no MPI library: the launcher's
// environment is all it reads, so mpirun, srun and plain processes with the variables set all drive it.
#include <cstdio>
#include <exception>
#include <random>
#include <string>
#include <vector>

#include "core/json.hpp"
#include "core/launched_rank.hpp"

namespace {

constexpr std::size_t kIdBytes = 128;  // NCCL_UNIQUE_ID_BYTES
constexpr double kWaitS = 60;

std::string hex(const std::vector<unsigned char>& bytes) {
  static const char digits[] = "0123456789abcdef";
  std::string text;
  for (unsigned char byte : bytes) {
    text += digits[byte >> 4];
    text += digits[byte & 15];
  }
  return text;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: gpubench_rank_probe ID_FILE\n");
    return 2;
  }
  try {
    const auto launched = gpubench::rank_from_environment();
    if (!launched) {
      std::fprintf(stderr, "gpubench_rank_probe: no launcher's rank variables are set\n");
      return 2;
    }
    std::vector<unsigned char> id(kIdBytes);
    if (launched->rank == 0) {
      std::random_device random;  // a different id each launch, as ncclGetUniqueId's
      for (unsigned char& byte : id) byte = static_cast<unsigned char>(random());
      gpubench::publish_blob(argv[1], id);
    } else {
      id = gpubench::await_blob(argv[1], kIdBytes, kWaitS);
    }
    std::printf("{\"rank\": %d, \"size\": %d, \"local_rank\": %d, \"launcher\": %s, \"id\": \"%s\"}\n", launched->rank,
                launched->size, launched->local_rank, gpubench::json_string(launched->launcher).c_str(),
                hex(id).c_str());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gpubench_rank_probe: %s\n", e.what());
    return 1;
  }
}
