// One process per GPU, started by a launcher: which rank this process is, from the launcher's
// environment (core/rank_channel.hpp carries what the ranks exchange). CPU-only, so that CI tests
// the launch without a GPU.
#pragma once

#include <functional>
#include <optional>
#include <string>

namespace gpubench {

struct LaunchedRank {
  int rank = 0;
  int size = 1;
  int local_rank = 0;    // among the ranks of its node: which of the node's GPUs it drives
  std::string launcher;  // "slurm", "open_mpi" or "torchrun": whose variables said it
};

// Reads one environment variable; nullptr where unset (std::getenv by default).
using EnvironmentReader = std::function<const char*(const char*)>;
const char* process_environment(const char* name);

// The rank from the first launcher whose rank variable is set: Open MPI (OMPI_COMM_WORLD_RANK,
// _SIZE, _LOCAL_RANK; first, since mpirun inside a Slurm allocation inherits the batch step's SLURM_*),
// Slurm (SLURM_PROCID, SLURM_STEP_NUM_TASKS where srun set it else SLURM_NTASKS, SLURM_LOCALID), then
// torchrun's RANK, WORLD_SIZE, LOCAL_RANK.
// nullopt where none is set. Throws std::invalid_argument when that launcher's variables are
// incomplete, not integers, or inconsistent (a rank outside 0..size-1).
std::optional<LaunchedRank> rank_from_environment(const EnvironmentReader& read = process_environment);

}  // namespace gpubench
