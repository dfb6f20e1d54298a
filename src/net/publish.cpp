#include "net/publish.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <chrono>

#include "net/relay.hpp"
#include "util/fd_passing.hpp"
#include "util/syscalls.hpp"

namespace chock::net {

namespace {

// How long a connection waits for the call's server to accept it.
constexpr int kConnectTimeoutMs = 5000;

Expected<std::uint16_t> parse_port(const std::string& whole, std::string_view text, bool zero_ok) {
  unsigned value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || value > 65535 ||
      (value == 0 && !zero_ok))
    return Error{"--publish " + whole + ": `" + std::string(text) + "` is not a port (1 to 65535)", "", 0,
                 Errc::bad_config};
  return static_cast<std::uint16_t>(value);
}

void set_nonblocking(int fd) {
  const int flags = fcntl(fd, F_GETFL);
  if (flags >= 0) fcntl(fd, F_SETFL, flags | O_NONBLOCK);
}

// A listener on `family`'s loopback; -errno on failure.
int listen_loopback(int family, std::uint16_t port) {
  UniqueFd fd(::socket(family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd) return -errno;
  const int one = 1;
  setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  int rc = 0;
  if (family == AF_INET) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    rc = ::bind(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof a);
  } else {
    setsockopt(fd.get(), IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
    sockaddr_in6 a{};
    a.sin6_family = AF_INET6;
    a.sin6_port = htons(port);
    a.sin6_addr = in6addr_loopback;
    rc = ::bind(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof a);
  }
  if (rc != 0 || ::listen(fd.get(), 128) != 0) return -errno;
  return fd.release();
}

std::uint16_t bound_port(int fd) {
  sockaddr_storage a{};
  socklen_t len = sizeof a;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) return 0;
  return ntohs(a.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6&>(a).sin6_port
                                       : reinterpret_cast<sockaddr_in&>(a).sin_port);
}

std::string peer_text(const sockaddr_storage& a) {
  char text[INET6_ADDRSTRLEN] = {};
  if (a.ss_family == AF_INET6) {
    const auto& in6 = reinterpret_cast<const sockaddr_in6&>(a);
    inet_ntop(AF_INET6, &in6.sin6_addr, text, sizeof text);
    return "[" + std::string(text) + "]:" + std::to_string(ntohs(in6.sin6_port));
  }
  const auto& in = reinterpret_cast<const sockaddr_in&>(a);
  inet_ntop(AF_INET, &in.sin_addr, text, sizeof text);
  return std::string(text) + ":" + std::to_string(ntohs(in.sin_port));
}

// The maker's life after fork: system calls only. Joins the call's user
// and network namespaces, says whether it could (an int: 0 or errno), then
// answers each byte on `channel` with a fresh TCP socket of that namespace.
[[noreturn]] void maker_main(int channel, int pidfd, pid_t parent) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(1);
  // Nothing of the caller's but the two descriptors goes with it: they are
  // moved to 0 and 1, everything above is closed.
  const int c = ::fcntl(channel, F_DUPFD_CLOEXEC, 3);
  const int p = ::fcntl(pidfd, F_DUPFD_CLOEXEC, 3);
  if (c < 0 || p < 0 || ::dup2(c, 0) != 0 || ::dup2(p, 1) != 1) ::_exit(1);
  ::syscall(SYS_close_range, 2U, ~0U, 0U);
  int status = 0;
  // A caller of the host's own user namespace holds every capability in the
  // call's, which it owns; root may also enter the network alone.
  if (::setns(1, CLONE_NEWUSER | CLONE_NEWNET) != 0 && ::setns(1, CLONE_NEWNET) != 0) status = errno;
  ::close(1);
  (void)!::send(0, &status, sizeof status, MSG_NOSIGNAL);
  if (status != 0) ::_exit(1);
  for (;;) {
    char request = 0;
    const ssize_t n = ::recv(0, &request, 1, 0);
    if (n == 0 || (n < 0 && errno != EINTR)) ::_exit(0);
    if (n < 0) continue;
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    int error = fd < 0 ? errno : 0;
    iovec iov{&error, sizeof error};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    FdControl control;
    if (fd >= 0) attach_fd(msg, control, fd);
    (void)!::sendmsg(0, &msg, MSG_NOSIGNAL);
    if (fd >= 0) ::close(fd);
  }
}

// Connects `fd` (non-blocking) to 127.0.0.1:port, waiting at most the
// timeout or until `stop` is readable; 0 or errno.
int connect_inside(int fd, std::uint16_t port, int stop) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) return 0;
  if (errno != EINPROGRESS) return errno;
  pollfd p[2] = {{fd, POLLOUT, 0}, {stop, POLLIN, 0}};
  if (::poll(p, 2, kConnectTimeoutMs) <= 0 || p[1].revents != 0) return ETIMEDOUT;
  int error = 0;
  socklen_t len = sizeof error;
  if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &len) != 0) return errno;
  return error;
}

}  // namespace

Expected<PortSpec> parse_port_spec(const std::string& text) {
  PortSpec spec;
  const auto colon = text.find(':');
  if (colon != std::string::npos) {
    auto host = parse_port(text, std::string_view(text).substr(0, colon), false);
    if (!host) return std::move(host).error();
    spec.host_port = *host;
  }
  auto call = parse_port(text, colon == std::string::npos ? text : text.substr(colon + 1), false);
  if (!call) return std::move(call).error();
  spec.call_port = *call;
  return spec;
}

Expected<Published> listen_published(const PortSpec& spec) {
  Published out;
  out.call_port = spec.call_port;
  const int v4 = listen_loopback(AF_INET, spec.host_port);
  if (v4 < 0) {
    errno = -v4;
    return sys_error("publish the call's port " + std::to_string(spec.call_port) + ": listen on",
                     "127.0.0.1:" + std::to_string(spec.host_port));
  }
  out.v4.reset(v4);
  out.host_port = bound_port(v4);
  // The same port on [::1]: taken there, it is a refusal too; no IPv6 loopback
  // at all (EADDRNOTAVAIL, EAFNOSUPPORT) leaves IPv4 alone.
  const int v6 = listen_loopback(AF_INET6, out.host_port);
  if (v6 >= 0) {
    out.v6.reset(v6);
  } else if (-v6 == EADDRINUSE) {
    errno = EADDRINUSE;
    return sys_error("publish the call's port " + std::to_string(spec.call_port) + ": listen on",
                     "[::1]:" + std::to_string(out.host_port));
  }
  return out;
}

Expected<SocketMaker> SocketMaker::start(int keeper_pidfd) {
  if (keeper_pidfd < 0) return Error{"publish a port: the call has no process to join", "", ESRCH};
  int pair[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0)
    return sys_error("publish a port: socketpair");
  UniqueFd ours(pair[0]), theirs(pair[1]);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) return sys_error("publish a port: fork the socket maker");
  if (pid == 0) maker_main(theirs.get(), keeper_pidfd, parent);
  UniqueFd pidfd(sys::pidfd_open(pid, 0));
  theirs.reset();
  int status = EPROTO;
  pollfd p{ours.get(), POLLIN, 0};
  if (::poll(&p, 1, kConnectTimeoutMs) != 1 || ::recv(ours.get(), &status, sizeof status, 0) != sizeof status)
    status = EPROTO;
  SocketMaker maker(std::move(ours), std::move(pidfd));
  if (status != 0) {
    errno = status;
    return sys_error("publish a port: join the call's network namespace");
  }
  maker.ask_next();
  return maker;
}

SocketMaker::~SocketMaker() {
  channel_.reset();  // the maker's recv sees the end and it exits
  if (!pidfd_) return;
  sys::pidfd_send_signal(pidfd_.get(), SIGKILL);
  siginfo_t info{};
  ::waitid(static_cast<idtype_t>(P_PIDFD), static_cast<id_t>(pidfd_.get()), &info, WEXITED);
}

// One socket is always asked for ahead: a connection takes the one made
// while the last was served, and asks for the next, never waiting on the maker.
void SocketMaker::ask_next() {
  const char request = 's';
  (void)!::send(channel_.get(), &request, 1, MSG_NOSIGNAL);
}

UniqueFd SocketMaker::make() {
  std::lock_guard lock(*mutex_);
  if (!channel_) return {};
  int error = 0;
  iovec iov{&error, sizeof error};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  FdControl control;
  expect_fd(msg, control);
  if (::recvmsg(channel_.get(), &msg, MSG_CMSG_CLOEXEC) != sizeof error) return {};
  UniqueFd made(received_fd(msg));
  ask_next();
  return made;
}

Publisher::Publisher(std::vector<Published> ports, SocketMaker maker, Record record)
    : ports_(std::move(ports)), maker_(std::move(maker)), record_(std::move(record)) {
  stop_.reset(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  wake_.reset(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  loop_ = std::thread([this] { serve(); });
}

Expected<void> Publisher::add(Published port) {
  {
    std::lock_guard lock(mutex_);
    if (stopped_.load()) return Error{"the task has ended: its ports are closed", "", 0, Errc::bad_config};
    pending_.push_back(std::move(port));
  }
  const std::uint64_t one = 1;
  if (::write(wake_.get(), &one, sizeof one) != sizeof one)
    return sys_error("wake the published ports' loop");
  return {};
}

Publisher::~Publisher() {
  stop();
}

void Publisher::stop() noexcept {
  {
    std::lock_guard lock(mutex_);  // add() sees it stopped, or its port is in pending_
    if (stopped_.exchange(true)) return;
  }
  const std::uint64_t one = 1;
  (void)!::write(stop_.get(), &one, sizeof one);
  if (loop_.joinable()) loop_.join();
  // The host ports refuse from here on, before the links end.
  ports_.clear();
  std::list<std::thread> links;
  {
    std::lock_guard lock(mutex_);
    pending_.clear();
    links.swap(links_);
    ended_.clear();
  }
  for (auto& t : links)
    if (t.joinable()) t.join();
}

void Publisher::serve() {
  // A write to a peer that has gone must not end the caller (splice has no
  // MSG_NOSIGNAL); the links' threads inherit the mask.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  std::vector<pollfd> fds;
  std::vector<std::uint16_t> call_ports;
  auto watch = [&] {
    fds = {{stop_.get(), POLLIN, 0}, {wake_.get(), POLLIN, 0}};
    call_ports = {0, 0};
    for (const auto& p : ports_)
      for (const UniqueFd* fd : {&p.v4, &p.v6})
        if (*fd) {
          fds.push_back({fd->get(), POLLIN, 0});
          call_ports.push_back(p.call_port);
        }
  };
  watch();
  for (;;) {
    if (::poll(fds.data(), fds.size(), -1) < 0 && errno != EINTR) return;
    if (fds[0].revents != 0) return;
    if (fds[1].revents != 0) {
      std::uint64_t added = 0;
      (void)!::read(wake_.get(), &added, sizeof added);
      {
        std::lock_guard lock(mutex_);
        for (auto& p : pending_) ports_.push_back(std::move(p));
        pending_.clear();
      }
      watch();
      continue;
    }
    for (std::size_t i = 2; i < fds.size(); ++i) {
      if (fds[i].revents == 0) continue;
      UniqueFd client(::accept4(fds[i].fd, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK));
      if (!client) continue;
      join_ended();
      if (live_.load() >= kMaxLinks) continue;  // closed: the browser retries
      ++live_;
      std::lock_guard lock(mutex_);
      links_.emplace_back();
      auto at = std::prev(links_.end());
      *at = std::thread([this, at, fd = client.release(), port = call_ports[i]] {
        link(UniqueFd(fd), port);
        std::lock_guard done(mutex_);
        ended_.push_back(at);
      });
    }
  }
}

void Publisher::join_ended() {
  std::vector<std::list<std::thread>::iterator> ended;
  {
    std::lock_guard lock(mutex_);
    ended.swap(ended_);
  }
  for (auto it : ended) it->join();
  std::lock_guard lock(mutex_);
  for (auto it : ended) links_.erase(it);
}

void Publisher::link(UniqueFd client, std::uint16_t call_port) {
  const auto start = std::chrono::steady_clock::now();
  sockaddr_storage from{};
  socklen_t len = sizeof from;
  getpeername(client.get(), reinterpret_cast<sockaddr*>(&from), &len);
  sockaddr_storage local{};
  len = sizeof local;
  getsockname(client.get(), reinterpret_cast<sockaddr*>(&local), &len);
  nlohmann::json fields = {{"from", peer_text(from)}, {"to", peer_text(local)}, {"call_port", call_port}};
  UniqueFd inside = maker_.make();
  const int error = inside ? connect_inside(inside.get(), call_port, stop_.get()) : EPROTO;
  if (error != 0) {
    // Refused, never redirected: the call's port has nothing listening.
    fields["refused"] = std::string(errno_name(error));
    linger l{1, 0};
    setsockopt(client.get(), SOL_SOCKET, SO_LINGER, &l, sizeof l);
  } else {
    set_nonblocking(inside.get());
    // A small answer written in pieces (headers, then body) is not held back
    // by Nagle on either leg: the relay must not add a wait the direct path lacks.
    const int one = 1;
    setsockopt(client.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    setsockopt(inside.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    const Pumped moved = pump(client.get(), inside.get(), stop_.get());
    fields["bytes_in"] = moved.a_to_b;
    fields["bytes_out"] = moved.b_to_a;
  }
  fields["duration_ms"] =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  if (record_) record_("publish.connection", fields);
  --live_;
}

}  // namespace chock::net
