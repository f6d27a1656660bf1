#include "core/launched_rank.hpp"

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <thread>

#include <sys/stat.h>
#include <unistd.h>

namespace gpubench {
namespace {

struct LauncherVariables {
  const char* launcher;
  const char* rank;
  const char* size;
  const char* local_rank;
  const char* step_size;  // the size of the launch step where it differs from `size`; nullptr: none
};

// Slurm: SLURM_NTASKS may be the allocation's task count; srun sets SLURM_STEP_NUM_TASKS, the tasks of
// the step it started, which wins where set.
constexpr LauncherVariables kLaunchers[] = {
    {"open_mpi", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK", nullptr},
    {"slurm", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "SLURM_STEP_NUM_TASKS"},
    {"torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK", nullptr},
};

int integer_variable(const EnvironmentReader& read, const char* name) {
  const char* text = read(name);
  if (!text) throw std::invalid_argument(std::string(name) + " is not set");
  char* end = nullptr;
  errno = 0;
  const long value = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || errno == ERANGE || value < 0 || value > 1 << 30) {
    throw std::invalid_argument(std::string(name) + "=" + text + " is not a non-negative integer");
  }
  return static_cast<int>(value);
}

bool exists(const std::string& path) {
  struct stat info;
  return ::stat(path.c_str(), &info) == 0;
}

}  // namespace

const char* process_environment(const char* name) { return std::getenv(name); }

std::optional<LaunchedRank> rank_from_environment(const EnvironmentReader& read) {
  for (const LauncherVariables& names : kLaunchers) {
    if (!read(names.rank)) continue;
    LaunchedRank found;
    found.launcher = names.launcher;
    found.rank = integer_variable(read, names.rank);
    found.size = integer_variable(read, names.step_size && read(names.step_size) ? names.step_size : names.size);
    found.local_rank = integer_variable(read, names.local_rank);
    if (found.size < 1 || found.rank >= found.size || found.local_rank >= found.size) {
      throw std::invalid_argument(std::string(names.launcher) + ": rank " + std::to_string(found.rank) +
                                  " and local rank " + std::to_string(found.local_rank) + " of " +
                                  std::to_string(found.size) + " ranks");
    }
    return found;
  }
  return std::nullopt;
}

void publish_blob(const std::string& path, const std::vector<unsigned char>& bytes) {
  if (exists(path)) throw std::runtime_error(path + " exists already: each launch needs a path of its own");
  const std::string temporary = path + ".writing." + std::to_string(::getpid());
  {
    std::ofstream out(temporary, std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    if (!out.flush()) throw std::runtime_error("cannot write " + temporary);
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    std::remove(temporary.c_str());
    throw std::runtime_error("cannot rename " + temporary + " to " + path);
  }
}

std::vector<unsigned char> await_blob(const std::string& path, std::size_t size, double timeout_s) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (!exists(path)) {
    if (std::chrono::steady_clock::now() > deadline) {
      throw std::runtime_error("rank 0 wrote no " + path + " within " + std::to_string(timeout_s) + " s");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::ifstream in(path, std::ios::binary);
  std::vector<unsigned char> bytes(size + 1);  // one more: a longer file is detected, not truncated
  in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (static_cast<std::size_t>(in.gcount()) != size) {
    throw std::runtime_error(path + " holds " + std::to_string(in.gcount()) + " bytes, not " + std::to_string(size));
  }
  bytes.resize(size);
  return bytes;
}

}  // namespace gpubench
