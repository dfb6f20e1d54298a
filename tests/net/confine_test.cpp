// chock-fetch-hop confines itself before it reads a byte of the web
// (sandbox::confine_fetcher): the code that parses a hostile server's bytes
// reads only the CA store and its own libraries, writes nothing, and has no
// network but the socket Chock dialled for it. Each attack runs in a forked
// child under that same confinement, and each neighbour it must leave alone
// still works.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/io_uring.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <functional>
#include <string>
#include <utility>

#include "chock/net.hpp"
#include "sandbox/fetcher_confinement.hpp"
#include "sandbox/landlock.hpp"
#include "sandbox/seccomp.hpp"
#include "world.hpp"

namespace chock::test {
namespace {

int dialled(const char* address, std::uint16_t port) {
  auto host = net::parse_host(address);
  auto fd = net::dial(host->address, port, std::chrono::milliseconds(3000));
  return fd ? *fd : -fd.error().code;
}

// `body` in a forked child; its exit status (0: every check held).
int in_child(const std::function<int()>& body) {
  const pid_t child = ::fork();
  if (child == 0) ::_exit(body());
  int status = 0;
  if (child < 0 || ::waitpid(child, &status, 0) != child || !WIFEXITED(status)) return -1;
  return WEXITSTATUS(status);
}

// errno of `call` when it failed, 0 when it did not.
int error_of(long result) {
  return result < 0 ? errno : 0;
}

bool can_read(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char c = 0;
  const bool read = ::read(fd, &c, 1) >= 0;
  ::close(fd);
  return read;
}

// A GET on a connected socket: whether an HTTP status line came back.
bool http_answers(int fd) {
  const std::string request = "GET /whoami HTTP/1.0\r\nHost: www.chock.test\r\n\r\n";
  if (::send(fd, request.data(), request.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(request.size()))
    return false;
  char answer[16] = {};
  return ::recv(fd, answer, sizeof answer - 1, MSG_WAITALL) > 0 && std::strncmp(answer, "HTTP/1.", 7) == 0;
}

// The file the C library was loaded from, as this process maps it.
std::string loaded_libc() {
  std::ifstream maps("/proc/self/maps");
  for (std::string line; std::getline(maps, line);)
    if (const auto at = line.find(" /"); at != std::string::npos && line.find("libc.so") != std::string::npos)
      return line.substr(at + 1);
  return "";
}

// A CA store of the test's own: a bundle, a directory with a hashed link
// to a certificate elsewhere, and a secret beside them that is not part of it.
class CaStore {
 public:
  CaStore() {
    write_file(dir_ / "bundle.pem", "bundle\n");
    ::mkdir((dir_ / "certs").c_str(), 0755);
    ::mkdir((dir_ / "share").c_str(), 0755);
    write_file(dir_ / "share/one.crt", "one\n");
    EXPECT_EQ(::symlink((dir_ / "share/one.crt").c_str(), (dir_ / "certs/1a2b3c4d.0").c_str()), 0);
    write_file(dir_ / "credentials.json", "{\"host\":\"secret\"}\n", 0600);
  }
  [[nodiscard]] std::string operator/(const std::string& name) const { return dir_ / name; }

 private:
  TempDir dir_{"chock-fetcher-ca"};
};

TEST(Fetcher, ConfinedFetcherReadsOnlyItsCaStoreAndLibraries) {
  if (landlock::probe_abi() < 1) GTEST_SKIP() << "no Landlock in this kernel";
  const CaStore ca;
  const std::string libc = loaded_libc();
  ASSERT_FALSE(libc.empty());
  ASSERT_TRUE(can_read(ca / "credentials.json"));
  ASSERT_TRUE(can_read("/etc/passwd"));
  const int status = in_child([&] {
    auto confined = sandbox::confine_fetcher(ca / "bundle.pem", ca / "certs");
    if (!confined) return 10;
    // The attacks: a secret beside the store, the host's files, a listing, a write.
    if (::open((ca / "credentials.json").c_str(), O_RDONLY) >= 0 || errno != EACCES) return 11;
    if (::open("/etc/passwd", O_RDONLY) >= 0 || errno != EACCES) return 12;
    if (::open("/", O_RDONLY | O_DIRECTORY) >= 0 || errno != EACCES) return 13;
    if (::open((ca / "written").c_str(), O_WRONLY | O_CREAT, 0644) >= 0 || errno != EACCES) return 14;
    if (::open("/proc/self/environ", O_RDONLY) >= 0 || errno != EACCES) return 15;
    // The neighbours: the bundle, a certificate through its hashed link, the directory, libc.
    if (!can_read(ca / "bundle.pem")) return 20;
    if (!can_read(ca / "certs/1a2b3c4d.0")) return 21;
    if (::open((ca / "certs").c_str(), O_RDONLY | O_DIRECTORY) < 0) return 22;
    if (!can_read(libc)) return 23;
    return 0;
  });
  EXPECT_EQ(status, 0) << "10 not confined; 11-15 an attack was not refused with EACCES (the secret, "
                          "/etc/passwd, listing /, a write, /proc); 20-23 the CA store or libc was refused";
  EXPECT_FALSE(exists(ca / "written"));
}

// The peer `fd` is connected to, as "address:port" ("" when none).
std::string peer_of(int fd) {
  sockaddr_in peer{};
  socklen_t size = sizeof peer;
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &size) != 0 || peer.sin_family != AF_INET)
    return "";
  char text[INET_ADDRSTRLEN] = {};
  ::inet_ntop(AF_INET, &peer.sin_addr, text, sizeof text);
  return std::string(text) + ":" + std::to_string(ntohs(peer.sin_port));
}

TEST(Fetcher, ConfinedFetcherHasNoNetworkButTheSocketItWasGiven) {
  CHOCK_NEED_WORLD();
  if (landlock::probe_abi() < 1) GTEST_SKIP() << "no Landlock in this kernel";
  const int dialled_fd = dialled("198.51.100.10", 80);
  ASSERT_GE(dialled_fd, 0) << std::strerror(-dialled_fd);
  const int status = in_child([&] {
    // Where the fetcher has it.
    const int given = sandbox::kFetcherSocketFd;
    if (::dup2(dialled_fd, given) != given) return 9;
    auto confined = sandbox::confine_fetcher("", "");
    if (!confined) return 10;
    // No new socket of any family: UDP (which Landlock cannot see), TCP, IPv6, unix, netlink, packet.
    for (const auto& [family, type] : {std::pair{AF_INET, SOCK_DGRAM},
                                       {AF_INET, SOCK_STREAM},
                                       {AF_INET6, SOCK_DGRAM},
                                       {AF_UNIX, SOCK_STREAM},
                                       {AF_NETLINK, SOCK_RAW},
                                       {AF_PACKET, SOCK_RAW}})
      if (error_of(::socket(family, type, 0)) != EPERM) return 11;
    // The given socket cannot be aimed elsewhere: a connect (to another
    // port, or AF_UNSPEC to let go of its peer) does nothing (libcurl's
    // connect of it waits on a socket that is already connected), nor can
    // TCP Fast Open send to another port or a bind name a local one.
    sockaddr_in other{};
    other.sin_family = AF_INET;
    other.sin_port = htons(443);
    ::inet_pton(AF_INET, "198.51.100.10", &other.sin_addr);
    sockaddr unspec{};
    unspec.sa_family = AF_UNSPEC;
    if (error_of(::connect(given, &unspec, sizeof unspec)) != EINPROGRESS) return 12;
    if (error_of(::connect(given, reinterpret_cast<sockaddr*>(&other), sizeof other)) != EINPROGRESS)
      return 13;
    if (peer_of(given) != "198.51.100.10:80") return 14;
    if (error_of(::sendto(given, "x", 1, MSG_FASTOPEN, reinterpret_cast<sockaddr*>(&other), sizeof other)) !=
        EPERM)
      return 15;
    if (error_of(::bind(given, reinterpret_cast<sockaddr*>(&other), sizeof other)) != EPERM) return 16;
    // Any other descriptor's connect is refused: here a unix socket pair's.
    int pair[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) return 20;
    if (error_of(::connect(pair[0], reinterpret_cast<sockaddr*>(&other), sizeof other)) != EPERM) return 17;
    // No ring to make sockets past the filter.
    io_uring_params params{};
    if (error_of(::syscall(SYS_io_uring_setup, 4, &params)) != EPERM) return 18;
    // The neighbour: the given socket carries a request and its answer.
    if (!http_answers(given)) return 21;
    return 0;
  });
  ::close(dialled_fd);
  EXPECT_EQ(status, 0) << "9 no dup2; 10 not confined; 11 a socket was made; 12-14 a connect of the given "
                          "socket did something; 15-16 it was sent elsewhere or bound; 17 another "
                          "descriptor's connect was not refused; 18 an io_uring ring was made; 20 no unix "
                          "pair (libcurl's wake-up); 21 the given socket did not carry a GET";
}

// Landlock alone, without the filter: no TCP connect or bind on any port,
// on a kernel that handles TCP (ABI 4+), so a socket made past the filter
// would reach nothing either.
TEST(Fetcher, ConfinedFetcherLandlockRefusesEveryTcpPort) {
  CHOCK_NEED_WORLD();
  if (landlock::probe_abi() < 4) GTEST_SKIP() << "Landlock ABI 4 (TCP ports) is not in this kernel";
  const int given = dialled("198.51.100.10", 80);
  ASSERT_GE(given, 0) << std::strerror(-given);
  const int before = dialled("198.51.100.10", 443);  // both ports answer before the confinement
  ASSERT_GE(before, 0) << std::strerror(-before);
  ::close(before);
  const int status = in_child([&] {
    auto confined = landlock::confine_fetcher({});
    if (!confined || confined->handled_net == 0) return 10;
    for (std::uint16_t port : {80, 443})
      if (dialled("198.51.100.10", port) != -EACCES) return 11;
    const int s = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in any{};
    any.sin_family = AF_INET;
    any.sin_port = htons(8080);
    if (s < 0 || error_of(::bind(s, reinterpret_cast<sockaddr*>(&any), sizeof any)) != EACCES) return 12;
    if (!http_answers(given)) return 20;
    return 0;
  });
  ::close(given);
  EXPECT_EQ(status, 0) << "10 TCP not handled; 11 a connect was not refused with EACCES; 12 a bind was not; "
                          "20 the socket dialled before did not carry a GET";
}

}  // namespace
}  // namespace chock::test
