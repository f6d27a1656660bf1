#include "core/rank_channel.hpp"

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <thread>

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#if GPUBENCH_HAVE_MPI
#define OMPI_SKIP_MPICXX 1  // MPI's C interface only: its C++ bindings are deprecated and unused here
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>
#endif

namespace gpubench {
namespace {

using Deadline = std::chrono::steady_clock::time_point;

Deadline deadline_after(double seconds) {
  return std::chrono::steady_clock::now() +
         std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(seconds));
}

std::runtime_error socket_error(const std::string& what) {
  return std::runtime_error("rank channel: " + what + ": " + std::strerror(errno));
}

// --- TCP: a star around rank 0, each message its length (8 bytes) then its bytes ---------------
class Socket {
 public:
  explicit Socket(int fd = -1) : fd_(fd) {}
  Socket(Socket&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  Socket& operator=(Socket&& other) noexcept {
    std::swap(fd_, other.fd_);
    return *this;
  }
  ~Socket() {
    if (fd_ >= 0) ::close(fd_);
  }
  int fd() const { return fd_; }

  void send_all(const void* data, std::size_t bytes) const {
    const char* next = static_cast<const char*>(data);
    while (bytes > 0) {
      const ssize_t sent = ::send(fd_, next, bytes, MSG_NOSIGNAL);
      if (sent < 0 && errno == EINTR) continue;
      if (sent <= 0) throw socket_error("send");
      next += sent;
      bytes -= static_cast<std::size_t>(sent);
    }
  }
  void receive_all(void* data, std::size_t bytes) const {
    char* next = static_cast<char*>(data);
    while (bytes > 0) {
      const ssize_t got = ::recv(fd_, next, bytes, 0);
      if (got < 0 && errno == EINTR) continue;
      if (got == 0) throw std::runtime_error("rank channel: the other rank closed the connection (it ended or failed)");
      if (got < 0) throw socket_error("receive");
      next += got;
      bytes -= static_cast<std::size_t>(got);
    }
  }
  void send_message(const std::string& bytes) const {
    const std::uint64_t length = bytes.size();
    send_all(&length, sizeof length);
    send_all(bytes.data(), bytes.size());
  }
  std::string receive_message() const {
    std::uint64_t length = 0;
    receive_all(&length, sizeof length);
    std::string bytes(length, '\0');
    receive_all(bytes.data(), bytes.size());
    return bytes;
  }

 private:
  int fd_;
};

// Small messages both ways, each waited for: Nagle's delay would hold every order back.
void no_delay(const Socket& socket) {
  const int on = 1;
  if (::setsockopt(socket.fd(), IPPROTO_TCP, TCP_NODELAY, &on, sizeof on) != 0) throw socket_error("TCP_NODELAY");
}

bool wait_readable(int fd, Deadline deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
  pollfd request{fd, POLLIN, 0};
  return left.count() > 0 && ::poll(&request, 1, static_cast<int>(left.count())) > 0;
}

class TcpChannel : public RankChannel {
 public:
  TcpChannel(const LaunchedRank& ranks, const std::string& address, int port, double timeout_s)
      : RankChannel(ranks, "tcp") {
    const Deadline deadline = deadline_after(timeout_s);
    if (ranks.rank == 0) {
      accept_peers(port, deadline);
    } else {
      to_root_ = connect_to(address, port, deadline);
      const std::int32_t rank = ranks.rank;
      to_root_.send_all(&rank, sizeof rank);
    }
  }

  std::string broadcast(const std::string& bytes) override {
    if (ranks().rank != 0) return to_root_.receive_message();
    for (std::size_t peer = 1; peer < peers_.size(); ++peer) peers_[peer].send_message(bytes);
    return bytes;
  }

  std::vector<std::string> gather(const std::string& mine) override {
    if (ranks().rank != 0) {
      to_root_.send_message(mine);
      return {};
    }
    std::vector<std::string> all{mine};
    for (std::size_t peer = 1; peer < peers_.size(); ++peer) all.push_back(peers_[peer].receive_message());
    return all;
  }

 private:
  void accept_peers(int port, Deadline deadline) {
    Socket listener(::socket(AF_INET, SOCK_STREAM, 0));
    if (listener.fd() < 0) throw socket_error("socket");
    const int on = 1;
    ::setsockopt(listener.fd(), SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);  // a port the last launch left in TIME_WAIT
    sockaddr_in any{};
    any.sin_family = AF_INET;
    any.sin_addr.s_addr = htonl(INADDR_ANY);
    any.sin_port = htons(static_cast<std::uint16_t>(port));
    if (::bind(listener.fd(), reinterpret_cast<sockaddr*>(&any), sizeof any) != 0)
      throw socket_error("rank 0 cannot listen on port " + std::to_string(port));
    if (::listen(listener.fd(), ranks().size) != 0) throw socket_error("listen");
    peers_.resize(static_cast<std::size_t>(ranks().size));
    for (int joined = 1; joined < ranks().size; ++joined) {
      if (!wait_readable(listener.fd(), deadline))
        throw std::runtime_error("rank channel: " + std::to_string(joined - 1) + " of " + std::to_string(ranks().size - 1) +
                                 " ranks reached rank 0 in time (are MASTER_ADDR and MASTER_PORT the same for all?)");
      Socket peer(::accept(listener.fd(), nullptr, nullptr));
      if (peer.fd() < 0) throw socket_error("accept");
      no_delay(peer);
      std::int32_t rank = -1;
      peer.receive_all(&rank, sizeof rank);
      if (rank < 1 || rank >= ranks().size || peers_[static_cast<std::size_t>(rank)].fd() >= 0)
        throw std::runtime_error("rank channel: a peer says it is rank " + std::to_string(rank) + " of " +
                                 std::to_string(ranks().size) + " (or came twice)");
      peers_[static_cast<std::size_t>(rank)] = std::move(peer);
    }
  }

  // Rank 0 may not listen yet: refused connections are tried again until the deadline.
  static Socket connect_to(const std::string& address, int port, Deadline deadline) {
    addrinfo hints{};
    hints.ai_family = AF_INET;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    const int resolved = ::getaddrinfo(address.c_str(), std::to_string(port).c_str(), &hints, &found);
    if (resolved != 0)
      throw std::runtime_error("rank channel: cannot resolve MASTER_ADDR " + address + ": " + gai_strerror(resolved));
    std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> owned(found, freeaddrinfo);
    while (true) {
      Socket socket(::socket(found->ai_family, found->ai_socktype, found->ai_protocol));
      if (socket.fd() < 0) throw socket_error("socket");
      if (::connect(socket.fd(), found->ai_addr, found->ai_addrlen) == 0) {
        no_delay(socket);
        return socket;
      }
      if (std::chrono::steady_clock::now() > deadline)
        throw socket_error("cannot reach rank 0 at " + address + ":" + std::to_string(port));
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }

  Socket to_root_;             // the other ranks' connection to rank 0
  std::vector<Socket> peers_;  // rank 0's, by rank (entry 0 unused)
};

#if GPUBENCH_HAVE_MPI
void mpi_check(int result, const char* what) {
  if (result != MPI_SUCCESS) throw std::runtime_error(std::string("rank channel: ") + what + " failed (" + std::to_string(result) + ")");
}

// One channel per process: MPI is initialised when it opens and finalised when it closes.
class MpiChannel : public RankChannel {
 public:
  explicit MpiChannel(const std::string& launcher) : RankChannel(world(launcher), "mpi") {}
  ~MpiChannel() override { MPI_Finalize(); }

  std::string broadcast(const std::string& bytes) override {
    unsigned long long length = bytes.size();
    mpi_check(MPI_Bcast(&length, 1, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD), "MPI_Bcast");
    std::string received = ranks().rank == 0 ? bytes : std::string(length, '\0');
    mpi_check(MPI_Bcast(received.data(), static_cast<int>(length), MPI_BYTE, 0, MPI_COMM_WORLD), "MPI_Bcast");
    return received;
  }

  std::vector<std::string> gather(const std::string& mine) override {
    const bool root = ranks().rank == 0;
    const int length = static_cast<int>(mine.size());
    std::vector<int> lengths(root ? ranks().size : 0), offsets(lengths.size());
    mpi_check(MPI_Gather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, 0, MPI_COMM_WORLD), "MPI_Gather");
    int total = 0;
    for (std::size_t rank = 0; rank < lengths.size(); ++rank) {
      offsets[rank] = total;
      total += lengths[rank];
    }
    std::string all(static_cast<std::size_t>(total), '\0');
    mpi_check(MPI_Gatherv(mine.data(), length, MPI_BYTE, all.data(), lengths.data(), offsets.data(), MPI_BYTE, 0,
                          MPI_COMM_WORLD),
              "MPI_Gatherv");
    std::vector<std::string> each;
    for (std::size_t rank = 0; rank < lengths.size(); ++rank)
      each.push_back(all.substr(static_cast<std::size_t>(offsets[rank]), static_cast<std::size_t>(lengths[rank])));
    return each;
  }

 private:
  // MPI's own rank and size; the local rank is the rank among the processes sharing this node's memory.
  static LaunchedRank world(const std::string& launcher) {
    mpi_check(MPI_Init(nullptr, nullptr), "MPI_Init");
    LaunchedRank ranks;
    ranks.launcher = launcher;
    mpi_check(MPI_Comm_rank(MPI_COMM_WORLD, &ranks.rank), "MPI_Comm_rank");
    mpi_check(MPI_Comm_size(MPI_COMM_WORLD, &ranks.size), "MPI_Comm_size");
    MPI_Comm node;
    mpi_check(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node), "MPI_Comm_split_type");
    mpi_check(MPI_Comm_rank(node, &ranks.local_rank), "MPI_Comm_rank");
    MPI_Comm_free(&node);
    return ranks;
  }
};
#endif

int port_number(const char* name, const char* text) {
  char* end = nullptr;
  const long port = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || port < 1 || port > 65535)
    throw std::runtime_error(std::string(name) + "=" + text + " is not a port number");
  return static_cast<int>(port);
}

}  // namespace

int rank_meeting_port(const EnvironmentReader& read) {
  if (const char* chosen = read("GPUBENCH_RANK_PORT")) return port_number("GPUBENCH_RANK_PORT", chosen);
  const char* master = read("MASTER_PORT");
  if (!master) throw std::runtime_error("MASTER_PORT is not set");
  const int port = port_number("MASTER_PORT", master);
  const char* agent_store = read("TORCHELASTIC_USE_AGENT_STORE");
  if (agent_store && std::string(agent_store) == "True") {
    if (port == 65535) throw std::runtime_error("MASTER_PORT=65535 is torchrun's store: set GPUBENCH_RANK_PORT");
    return port + 1;
  }
  return port;
}

bool started_by_mpi_launcher(const EnvironmentReader& read) {
  return read("OMPI_COMM_WORLD_SIZE") || read("PMIX_RANK") || read("PMI_RANK");
}

std::unique_ptr<RankChannel> open_tcp_channel(const LaunchedRank& ranks, const std::string& address, int port,
                                              double timeout_s) {
  return std::make_unique<TcpChannel>(ranks, address, port, timeout_s);
}

std::unique_ptr<RankChannel> open_rank_channel(double timeout_s) {
  const std::optional<LaunchedRank> launched = rank_from_environment();
#if GPUBENCH_HAVE_MPI
  if (started_by_mpi_launcher()) {
    auto channel = std::make_unique<MpiChannel>(launched ? launched->launcher : "mpi");
    if (channel->ranks().size > 1) return channel;
    return nullptr;  // one rank: MPI_Finalize as the channel goes
  }
#endif
  if (!launched || launched->size < 2) return nullptr;
  const char* address = std::getenv("MASTER_ADDR");
  if (!address || !(std::getenv("MASTER_PORT") || std::getenv("GPUBENCH_RANK_PORT")))
    throw std::runtime_error("started by " + launched->launcher + " as rank " + std::to_string(launched->rank) + " of " +
                             std::to_string(launched->size) +
                             " without MPI: set MASTER_ADDR and MASTER_PORT (rank 0's host and a free port) for "
                             "the ranks to meet, or start under mpirun or srun --mpi=pmix");
  return open_tcp_channel(*launched, address, rank_meeting_port(), timeout_s);
}

}  // namespace gpubench
