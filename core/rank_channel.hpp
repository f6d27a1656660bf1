// The host channel between the ranks of one launch (one process per GPU): a broadcast of a few
// bytes from rank 0 and a gather of strings to rank 0, what a study run by several processes needs
// to agree (NCCL's unique id, rank 0's orders, the ranks' verdicts and identities). CPU-only, so
// that CI tests the launch without a GPU.
//   - Over MPI where the binary was built with it (GPUBENCH_HAVE_MPI) and an MPI launcher started
//     it (mpirun, or srun --mpi=pmix): Open MPI's bootstrap already spans the nodes.
//   - Otherwise over TCP, a star around rank 0, whose address is MASTER_ADDR and MASTER_PORT, as
//     torchrun sets them (and a Slurm script exports them: docs/multi-gpu.md). Chosen over a file on
//     a shared path because rank 0's orders travel before every batch of calls: a socket carries
//     them in microseconds, where a file is polled; and MASTER_ADDR names the interface the ranks
//     reach rank 0 on, which rank 0 cannot tell itself.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/launched_rank.hpp"

namespace gpubench {

class RankChannel {
 public:
  virtual ~RankChannel() = default;
  const LaunchedRank& ranks() const { return ranks_; }
  const std::string& transport() const { return transport_; }  // "mpi" or "tcp"

  // Rank 0's `bytes` on every rank (the others' argument is ignored).
  virtual std::string broadcast(const std::string& bytes) = 0;
  // Every rank's `mine` in rank order on rank 0; empty on the others.
  virtual std::vector<std::string> gather(const std::string& mine) = 0;

 protected:
  RankChannel(LaunchedRank ranks, std::string transport) : ranks_(std::move(ranks)), transport_(std::move(transport)) {}

 private:
  LaunchedRank ranks_;
  std::string transport_;
};

// Whether an MPI launcher started this process (its variables: OMPI_COMM_WORLD_SIZE, PMIX_RANK,
// PMI_RANK), so that MPI_Init finds its world rather than making one of its own.
bool started_by_mpi_launcher(const EnvironmentReader& read = process_environment);

// The TCP port the ranks meet at without MPI: GPUBENCH_RANK_PORT where set, else MASTER_PORT, or the
// port above it where torchrun's agent holds MASTER_PORT for its own store (TORCHELASTIC_USE_AGENT_STORE=True:
// its workers' torch.distributed joins that store; a process of ours could only fail to bind it). Throws
// std::runtime_error where neither is set or the value is no port number.
int rank_meeting_port(const EnvironmentReader& read = process_environment);

// The channel of this launch, opened by every rank at once (collective): over MPI where built with
// it and started by an MPI launcher (rank, size and local rank then MPI's own), else over TCP from
// the launcher's rank variables (rank_from_environment) and MASTER_ADDR/MASTER_PORT. nullptr where
// this process is alone (no launcher, or one rank). Throws std::runtime_error when the ranks cannot
// meet: MASTER_ADDR/MASTER_PORT unset, or a rank not reached within `timeout_s`.
std::unique_ptr<RankChannel> open_rank_channel(double timeout_s = 120);

// The TCP star itself, for the tests: rank 0 listens on `port` (of every interface), the others
// connect to `address`:`port`.
std::unique_ptr<RankChannel> open_tcp_channel(const LaunchedRank& ranks, const std::string& address, int port,
                                              double timeout_s);

}  // namespace gpubench
