#include "net/relay.hpp"

#include <fcntl.h>
#include <linux/netfilter_ipv4.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "net/filtered.hpp"
#include "util/fd_passing.hpp"

namespace chock::net {

namespace {

constexpr int kOriginalDst = 80;  // SO_ORIGINAL_DST and IP6T_SO_ORIGINAL_DST
// Each direction of a link moves through a pipe of this size: 256 KiB gave
// 1.6 GB/s through the relay here, and bounds what a call's 512 links can
// pin in the kernel to 256 MiB (bench/README.md).
constexpr std::size_t kPipeSize = 256 << 10;

// A write to a socket whose peer has gone raises SIGPIPE in the thread that
// wrote (splice takes no MSG_NOSIGNAL), and its default ends the process:
// blocked, it stays pending on this thread and goes with it.
void hold_sigpipe() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

void set_nonblocking(int fd) {
  const int flags = fcntl(fd, F_GETFL);
  if (flags >= 0) fcntl(fd, F_SETFL, flags | O_NONBLOCK);
}

// Closes with a reset, so the program's side sees ECONNRESET at once.
void reset(UniqueFd& fd) {
  linger l{1, 0};
  setsockopt(fd.get(), SOL_SOCKET, SO_LINGER, &l, sizeof l);
  fd.reset();
}

std::optional<sockaddr_storage> original_destination(int fd) {
  sockaddr_storage local{};
  socklen_t len = sizeof local;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) != 0) return std::nullopt;
  sockaddr_storage orig{};
  len = sizeof orig;
  const int level = local.ss_family == AF_INET6 ? SOL_IPV6 : SOL_IP;
  if (getsockopt(fd, level, kOriginalDst, &orig, &len) != 0) return std::nullopt;
  return orig;
}

std::uint16_t port_of(const sockaddr_storage& a) {
  return ntohs(a.ss_family == AF_INET6 ? reinterpret_cast<const sockaddr_in6&>(a).sin6_port
                                       : reinterpret_cast<const sockaddr_in&>(a).sin_port);
}

// Not redirected: the destination is the listener itself.
bool is_relay_itself(const sockaddr_storage& a) {
  if (port_of(a) != kRelayPort) return false;
  if (a.ss_family == AF_INET)
    return reinterpret_cast<const sockaddr_in&>(a).sin_addr.s_addr == htonl(INADDR_LOOPBACK);
  return a.ss_family == AF_INET6 && IN6_IS_ADDR_LOOPBACK(&reinterpret_cast<const sockaddr_in6&>(a).sin6_addr);
}

struct Direction {
  Direction(int source, int sink) : from(source), to(sink) {}
  int from;
  int to;
  UniqueFd pipe_in, pipe_out;
  std::size_t buffered = 0;
  bool ended = false;  // the source said EOF
  bool done = false;   // and all of it was passed on, and `to` shut for writing
  std::uint64_t bytes = 0;
};

bool open_pipe(Direction& d) {
  int p[2];
  if (pipe2(p, O_CLOEXEC | O_NONBLOCK) != 0) return false;
  d.pipe_out.reset(p[0]);
  d.pipe_in.reset(p[1]);
  fcntl(p[1], F_SETPIPE_SZ, static_cast<int>(kPipeSize));  // best effort: the default is 64 KiB
  return true;
}

// One step of a direction; false when the link is broken (a reset, an error).
bool step(Direction& d, short from_events) {
  if (!d.ended && (from_events & (POLLIN | POLLHUP | POLLERR)) != 0) {
    ssize_t n =
        splice(d.from, nullptr, d.pipe_in.get(), nullptr, kPipeSize, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
    if (n > 0) d.buffered += static_cast<std::size_t>(n);
    if (n == 0) d.ended = true;
    if (n < 0 && errno != EAGAIN && errno != EINTR) return false;
  }
  // Written at once, not after another poll: the peer can nearly always take
  // it (non-blocking: EAGAIN when it cannot), and a request's round trip
  // saves a turn of the loop each way.
  if (d.buffered > 0) {
    ssize_t n =
        splice(d.pipe_out.get(), nullptr, d.to, nullptr, d.buffered, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
    if (n > 0) {
      d.buffered -= static_cast<std::size_t>(n);
      d.bytes += static_cast<std::uint64_t>(n);
    }
    if (n < 0 && errno != EAGAIN && errno != EINTR) return false;
  }
  if (d.ended && d.buffered == 0 && !d.done) {
    shutdown(d.to, SHUT_WR);
    d.done = true;
  }
  return true;
}

}  // namespace

Pumped pump(int a, int b, int stop) {
  Direction ab(a, b), ba(b, a);
  Pumped out;
  if (!open_pipe(ab) || !open_pipe(ba)) return out;
  while (!ab.done || !ba.done) {
    // A direction reads while its pipe has room and writes while it holds
    // bytes: a slow reader holds back the writer (backpressure).
    pollfd fds[3] = {{a, 0, 0}, {b, 0, 0}, {stop, POLLIN, 0}};
    if (!ab.ended && ab.buffered < kPipeSize) fds[0].events |= POLLIN;
    if (!ba.ended && ba.buffered < kPipeSize) fds[1].events |= POLLIN;
    if (ab.buffered > 0) fds[1].events |= POLLOUT;
    if (ba.buffered > 0) fds[0].events |= POLLOUT;
    if (poll(fds, 3, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (fds[2].revents != 0) break;
    if (!step(ab, fds[0].revents) || !step(ba, fds[1].revents)) break;
  }
  out.a_to_b = ab.bytes;
  out.b_to_a = ba.bytes;
  return out;
}

Relay::Relay(std::shared_ptr<Judge> judge, RelaySockets sockets)
    : judge_(std::move(judge)), sockets_(std::move(sockets)), stop_(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
  if (!stop_) throw std::system_error(errno, std::generic_category(), "eventfd for the relay");
  if (sockets_.broker) {
    // Before the program runs: a descriptor it sends is refused at its
    // sendmsg (EPERM) rather than parked in this socket, where its own broker
    // end would keep the broker open for ever (issue 53).
    refuse_passed_fds(sockets_.broker.get());
    set_nonblocking(sockets_.broker.get());
  }
  // accept4 takes the next connection or answers EAGAIN: never waits for one.
  for (const UniqueFd* listener : {&sockets_.relay4, &sockets_.relay6})
    if (*listener) set_nonblocking(listener->get());
  loop_ = std::thread([this] { serve(); });
  if (sockets_.broker) broker_ = std::thread([this] { serve_broker(); });
}

Relay::~Relay() {
  stop();
}

void Relay::stop() noexcept {
  if (stopped_.exchange(true)) return;
  const std::uint64_t one = 1;
  (void)!write(stop_.get(), &one, sizeof one);
  if (loop_.joinable()) loop_.join();
  if (broker_.joinable()) broker_.join();
  // No thread starts a link now; each one sees stop_ and ends.
  std::list<std::thread> links;
  {
    std::lock_guard lock(mutex_);
    links.swap(links_);
  }
  for (auto& t : links)
    if (t.joinable()) t.join();
  {
    std::lock_guard lock(mutex_);
    ended_.clear();  // what those threads said of themselves, into the list gone
  }
  // The call's sockets go with its call, not with this object.
  sockets_ = RelaySockets{};
}

std::vector<std::string> Relay::refusals() const {
  std::lock_guard lock(mutex_);
  std::vector<std::string> out = refusals_;
  if (map_.refused() > 0)
    out.push_back("the call's resolver refused " + std::to_string(map_.refused()) +
                  " questions for new names: a call may ask for " + std::to_string(SyntheticMap::kMaxNames) +
                  " names, and this one asked for more");
  if (refusals_dropped_ > 0)
    out.push_back("and " + std::to_string(refusals_dropped_) + " more refusals, not listed (at most " +
                  std::to_string(kMaxRefusals) + " are)");
  return out;
}

bool Relay::add_refusal(const std::string& line) {
  if (std::find(refusals_.begin(), refusals_.end(), line) != refusals_.end()) return false;
  // A call can make up names without end: what Chock keeps of them is bounded.
  if (refusals_.size() >= kMaxRefusals) {
    ++refusals_dropped_;
    return false;
  }
  refusals_.push_back(line);
  return true;
}

void Relay::refuse(const std::string& line) {
  bool first = false;
  {
    std::lock_guard lock(mutex_);
    first = add_refusal(line);
  }
  if (first) tell(line);
}

void Relay::tell(const std::string& line) const {
  if (judge_->options().refused) judge_->options().refused(line);
}

void Relay::serve() {
  hold_sigpipe();
  for (;;) {
    pollfd fds[4] = {{stop_.get(), POLLIN, 0},
                     {sockets_.stub.get(), POLLIN, 0},
                     {sockets_.relay4.get(), POLLIN, 0},
                     {sockets_.relay6.get(), POLLIN, 0}};
    if (poll(fds, 4, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[0].revents != 0) return;
    if (fds[1].revents != 0) answer_queries();
    if (fds[2].revents != 0) accept_links(sockets_.relay4.get());
    if (fds[3].revents != 0) accept_links(sockets_.relay6.get());
  }
}

void Relay::answer_queries() {
  for (int i = 0; i < 64; ++i) {
    std::uint8_t message[1500];
    sockaddr_storage from{};
    socklen_t len = sizeof from;
    const ssize_t n = recvfrom(sockets_.stub.get(), message, sizeof message, MSG_DONTWAIT,
                               reinterpret_cast<sockaddr*>(&from), &len);
    if (n < 0) return;
    struct Refused {
      Host host;
      Ruling ruling;
    };
    std::vector<Refused> refused;
    const StubPolicy policy = [&](const Host& host) {
      Ruling r = judge_->judge_name(host);
      if (!r.allowed) refused.push_back({host, r});
      return StubName{r.allowed, true, true};
    };
    std::optional<std::vector<std::uint8_t>> answer;
    bool past_cap = false;
    {
      std::lock_guard lock(mutex_);
      const std::uint64_t refused_before = map_.refused();
      answer = stub_answer({message, static_cast<std::size_t>(n)}, map_, policy);
      past_cap = refused_before == 0 && map_.refused() > 0;
    }
    if (past_cap)
      judge_->record("net.resolver", {{"refused", "the call asked for more than " +
                                                      std::to_string(SyntheticMap::kMaxNames) + " names"},
                                      {"names", SyntheticMap::kMaxNames}});
    if (answer)
      sendto(sockets_.stub.get(), answer->data(), answer->size(), MSG_DONTWAIT,
             reinterpret_cast<const sockaddr*>(&from), len);
    for (const auto& r : refused) {
      const std::string why =
          !r.ruling.refusal.empty() ? r.ruling.refusal : "the policy says " + r.ruling.decision;
      const std::string action = connect_action(r.host, 443);
      std::string line = "the call's resolver refused " + r.host.text;
      line += " (" + why + "); to allow it, add .{ .action = \"";
      line += action;
      line +=
          "\", .decision = .allow } (with the port the program uses) to chock.zon, or pass --policy-rule ";
      line += action;
      line += "=allow";
      bool first = false;
      {
        std::lock_guard lock(mutex_);
        first = add_refusal(line);
      }
      if (first) {
        tell(line);
        judge_->record("net.connect", {{"name", r.host.text},
                                       {"action", "net.connect." + r.host.labels + ".*"},
                                       {"decision", r.ruling.decision},
                                       {"rule", r.ruling.rule},
                                       {"refused", why},
                                       {"stage", "resolver"}});
        judge_->tally(r.host.text, false, 0, 0);
      }
    }
  }
}

std::vector<std::thread> Relay::take_ended_links() {
  std::vector<std::thread> out;
  out.reserve(ended_.size());
  for (auto it : ended_) {
    out.push_back(std::move(*it));
    links_.erase(it);
  }
  ended_.clear();
  return out;
}

bool Relay::start_link(std::function<void()> body) {
  std::vector<std::thread> ended;
  bool started = false;
  {
    std::lock_guard lock(mutex_);
    // An ended link's thread is joined here, so its stack does not wait for the call's end.
    ended = take_ended_links();
    if (links_.size() < static_cast<std::size_t>(kMaxLinks) && !stopped_) {
      // Made under the lock: the thread's last step, under it too, finds itself in links_.
      auto it = links_.emplace(links_.end());
      try {
        *it = std::thread([this, it, body = std::move(body)] {
          hold_sigpipe();
          body();
          std::lock_guard done(mutex_);
          ended_.push_back(it);
        });
        started = true;
      } catch (const std::system_error&) {
        links_.erase(it);
      }
    }
  }
  for (auto& t : ended) t.join();
  return started;
}

void Relay::accept_links(int listener) {
  for (int i = 0; i < 64; ++i) {
    auto inside = std::make_shared<UniqueFd>(accept4(listener, nullptr, nullptr, SOCK_CLOEXEC));
    if (!*inside || stopped_) return;
    if (!start_link([this, inside] { link(std::move(*inside)); })) {
      reset(*inside);
      refuse("a connection was refused: the relay already carries " + std::to_string(kMaxLinks) + " links");
    }
  }
}

void Relay::link(UniqueFd inside) {
  const auto orig = original_destination(inside.get());
  if (!orig || is_relay_itself(*orig)) {
    reset(inside);
    refuse(
        "a connection straight to the relay's own port was refused: a program reaches the network only by a "
        "name the call's resolver answered");
    return;
  }
  std::optional<std::string> name;
  {
    std::lock_guard lock(mutex_);
    name = map_.name_for(*orig);
  }
  if (!name) {
    reset(inside);
    refuse("a connection to " + address_text(*orig) + " was refused: no name of the call's resolver has it");
    return;
  }
  auto host = parse_host(*name);
  if (!host) {
    reset(inside);
    return;
  }
  auto c = judge_->connect(*host, port_of(*orig), stop_.get());
  if (!c) {
    reset(inside);
    refuse(c.error().message());
    return;
  }
  set_nonblocking(inside.get());
  set_nonblocking(c->fd());
  const Pumped moved = pump(inside.get(), c->fd(), stop_.get());
  c->count(moved.b_to_a, moved.a_to_b);
}

// What the broker owes the call for one request: "refused", or "ok" with
// the call's end of a stream, whose other end a link joins to the
// connection once the answer is sent.
struct Relay::Answer {
  std::string text = "refused";
  UniqueFd theirs, ours;
  std::shared_ptr<Connection> connection;
};

void Relay::serve_broker() {
  hold_sigpipe();
  const int broker = sockets_.broker.get();
  std::list<Answer> unread;  // in order; sent as the call reads
  std::uint64_t asked = 0;
  for (;;) {
    const auto events = static_cast<short>(POLLIN | (unread.empty() ? 0 : POLLOUT));
    pollfd fds[2] = {{stop_.get(), POLLIN, 0}, {broker, events, 0}};
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (fds[0].revents != 0) break;
    if ((fds[1].revents & POLLOUT) != 0 && !send_answers(unread)) break;
    if ((fds[1].revents & POLLIN) == 0) {
      if ((fds[1].revents & (POLLHUP | POLLERR | POLLNVAL)) != 0) break;
      continue;
    }
    char request[300];
    iovec iov{request, sizeof request};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    FdsControl control;
    expect_fds(msg, control);
    const ssize_t n = recvmsg(broker, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    // Refused at the sender where the kernel can (SO_PASSRIGHTS); else closed here, at once.
    if (n >= 0) close_received_fds(msg);
    if (n < 0) {
      if (errno == EAGAIN || errno == EINTR) continue;
      break;
    }
    // A SOCK_SEQPACKET message may be empty: only with the hang-up is it the end.
    if (n == 0 && (fds[1].revents & POLLHUP) != 0) break;
    ++asked;
    unread.push_back(answer(std::string(request, static_cast<std::size_t>(n))));
    if (!send_answers(unread)) break;
    if (unread.size() > kMaxUnreadAnswers) {
      refuse("the call lost its broker (CHOCK_BROKER_FD): a program of it asked " + std::to_string(asked) +
             " times without reading the answers, and Chock keeps at most " +
             std::to_string(kMaxUnreadAnswers) + " answers unread");
      break;
    }
  }
  // Its next read is the end and its next send EPIPE; the answers not sent
  // go, with their connections.
  shutdown(broker, SHUT_RDWR);
}

Relay::Answer Relay::answer(const std::string& request) {
  Answer a;
  auto target = parse_host_port(request);
  if (!target) return a;
  auto c = judge_->connect(target->first, target->second, stop_.get());
  if (!c) {
    refuse(c.error().message());
    return a;
  }
  int pair[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) return a;
  a.ours.reset(pair[0]);
  a.theirs.reset(pair[1]);
  refuse_passed_fds(a.ours.get());  // the call writes into the other end
  a.text = "ok";
  a.connection = std::make_shared<Connection>(std::move(*c));
  return a;
}

bool Relay::send_answers(std::list<Answer>& unread) {
  while (!unread.empty()) {
    Answer& a = unread.front();
    iovec iov{a.text.data(), a.text.size()};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    FdControl control;
    if (a.theirs) attach_fd(msg, control, a.theirs.get());
    if (sendmsg(sockets_.broker.get(), &msg, MSG_DONTWAIT | MSG_NOSIGNAL) < 0) {
      if (errno == EINTR) continue;
      return errno == EAGAIN;  // full: the rest waits for the call to read
    }
    if (a.connection) {
      // The connection moves into the link's thread with our end of the pair.
      auto conn = std::move(a.connection);
      auto end = std::make_shared<UniqueFd>(std::move(a.ours));
      const bool linked = start_link([this, conn, end] {
        set_nonblocking(end->get());
        set_nonblocking(conn->fd());
        const Pumped moved = pump(end->get(), conn->fd(), stop_.get());
        conn->count(moved.b_to_a, moved.a_to_b);
        conn->close();
      });
      if (!linked)
        refuse("a stream the broker handed out was closed: the relay already carries " +
               std::to_string(kMaxLinks) + " links");
    }
    unread.pop_front();
  }
  return true;
}

}  // namespace chock::net
