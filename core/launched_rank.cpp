#include "core/launched_rank.hpp"

#include <cerrno>
#include <cstdlib>
#include <stdexcept>

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

}  // namespace gpubench
