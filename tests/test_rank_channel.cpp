// The rank channel's TCP transport between processes (core/rank_channel.hpp): rank 0 here, the other
// ranks forked, each exiting 0 only when what it received is what rank 0 sent; and when MPI is the
// transport. Under mpirun and env-launched processes: tests/python/test_launch.py.
#include <gtest/gtest.h>

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/rank_channel.hpp"

namespace gpubench {
namespace {

constexpr int kRanks = 3;
constexpr double kTimeoutS = 30;

// A port no one listens on now: the kernel's choice for a socket bound to port 0.
int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0)
    throw std::runtime_error("no free port");
  ::close(fd);
  return ntohs(address.sin_port);
}

LaunchedRank rank_of(int rank) {
  LaunchedRank launched;
  launched.rank = rank;
  launched.size = kRanks;
  launched.local_rank = rank;
  launched.launcher = "test";
  return launched;
}

// Forks ranks 1..kRanks-1, each running `follower` on its channel (exit status 0: it held); rank 0
// runs `root` on its own; returns the followers' exit statuses.
std::vector<int> run_ranks(int port, const std::function<bool(RankChannel&)>& follower,
                           const std::function<void(RankChannel&)>& root) {
  std::vector<pid_t> children;
  for (int rank = kRanks - 1; rank >= 1; --rank) {  // connecting before rank 0 listens: retried
    const pid_t pid = ::fork();
    if (pid == 0) {
      bool held = false;
      try {
        held = follower(*open_tcp_channel(rank_of(rank), "127.0.0.1", port, kTimeoutS));
      } catch (...) {
      }
      ::_exit(held ? 0 : 1);
    }
    children.push_back(pid);
  }
  root(*open_tcp_channel(rank_of(0), "127.0.0.1", port, kTimeoutS));
  std::vector<int> statuses;
  for (pid_t pid : children) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    statuses.push_back(WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  }
  return statuses;
}

const std::string kId("\0\1nccl id with zero bytes\0\xff", 28);

TEST(TcpRankChannel, BroadcastReachesEveryRankAndGatherComesInRankOrder) {
  std::vector<std::string> gathered;
  const auto follower = [](RankChannel& channel) {
    const bool id = channel.broadcast("ignored") == kId;
    const bool orders = channel.broadcast("") == "c12" && channel.broadcast("") == std::string(1, 'f');
    const bool empty = channel.gather("from rank " + std::to_string(channel.ranks().rank)).empty();
    return id && orders && empty && channel.transport() == "tcp";
  };
  const auto root = [&](RankChannel& channel) {
    EXPECT_EQ(channel.broadcast(kId), kId);
    channel.broadcast("c12");
    channel.broadcast("f");
    gathered = channel.gather("from rank 0");
  };
  EXPECT_EQ(run_ranks(free_port(), follower, root), std::vector<int>(kRanks - 1, 0));
  EXPECT_EQ(gathered, (std::vector<std::string>{"from rank 0", "from rank 1", "from rank 2"}));
}

TEST(TcpRankChannel, ARankThatEndsIsAnErrorNotAHang) {
  const auto follower = [](RankChannel&) { return true; };  // leaves at once: its socket closes
  const auto root = [](RankChannel& channel) { EXPECT_THROW(channel.gather(""), std::runtime_error); };
  run_ranks(free_port(), follower, root);
}

TEST(TcpRankChannel, NoRankZeroWithinTheTimeout) {
  EXPECT_THROW(open_tcp_channel(rank_of(1), "127.0.0.1", free_port(), 0.3), std::runtime_error);
}

TEST(TcpRankChannel, MissingRanksWithinTheTimeout) {
  EXPECT_THROW(open_tcp_channel(rank_of(0), "127.0.0.1", free_port(), 0.3), std::runtime_error);
}

TEST(RankChannel, MpiOnlyUnderAnMpiLauncher) {
  const auto reader = [](std::map<std::string, std::string> variables) {
    return [variables](const char* name) -> const char* {
      const auto found = variables.find(name);
      return found == variables.end() ? nullptr : found->second.c_str();
    };
  };
  EXPECT_TRUE(started_by_mpi_launcher(reader({{"OMPI_COMM_WORLD_SIZE", "2"}})));
  EXPECT_TRUE(started_by_mpi_launcher(reader({{"PMIX_RANK", "0"}, {"SLURM_PROCID", "0"}})));  // srun --mpi=pmix
  EXPECT_FALSE(started_by_mpi_launcher(reader({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}})));
  EXPECT_FALSE(started_by_mpi_launcher(reader({{"RANK", "0"}, {"WORLD_SIZE", "2"}})));  // torchrun
}

TEST(RankChannel, MeetingPortStepsAsideFromTorchrunsStore) {
  const auto reader = [](std::map<std::string, std::string> variables) {
    return [variables = std::move(variables)](const char* name) -> const char* {
      const auto found = variables.find(name);
      return found == variables.end() ? nullptr : found->second.c_str();
    };
  };
  EXPECT_EQ(rank_meeting_port(reader({{"MASTER_PORT", "29500"}})), 29500);
  EXPECT_EQ(rank_meeting_port(reader({{"MASTER_PORT", "29500"}, {"TORCHELASTIC_USE_AGENT_STORE", "True"}})), 29501);
  EXPECT_EQ(rank_meeting_port(reader({{"MASTER_PORT", "29500"}, {"TORCHELASTIC_USE_AGENT_STORE", "False"}})), 29500);
  EXPECT_EQ(rank_meeting_port(reader({{"MASTER_PORT", "29500"}, {"GPUBENCH_RANK_PORT", "4000"},
                                      {"TORCHELASTIC_USE_AGENT_STORE", "True"}})),
            4000);
  EXPECT_THROW(rank_meeting_port(reader({})), std::runtime_error);
  EXPECT_THROW(rank_meeting_port(reader({{"MASTER_PORT", "port"}})), std::runtime_error);
  EXPECT_THROW(rank_meeting_port(reader({{"MASTER_PORT", "70000"}})), std::runtime_error);
}

}  // namespace
}  // namespace gpubench
