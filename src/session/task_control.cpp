#include "session/task_control.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdio>

#include "util/fd_passing.hpp"

namespace chock::session {

namespace {

// How long either side waits for the other's message.
constexpr int kAnswerTimeoutMs = 10000;
constexpr std::size_t kMaxMessage = 1024;

// `path` as a socket address. A session's directory may be deeper than
// sun_path holds, so the address goes through the directory's descriptor
// (`dir`, kept open by the caller while the address is used).
Expected<sockaddr_un> address_of(const std::string& path, UniqueFd& dir) {
  const auto slash = path.rfind('/');
  if (slash == std::string::npos) return Error{"the task's door is not a full path", path};
  dir.reset(::open(path.substr(0, slash).c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!dir) return sys_error("open the task's directory", path.substr(0, slash));
  const std::string short_path = "/proc/self/fd/" + std::to_string(dir.get()) + path.substr(slash);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  if (short_path.size() >= sizeof a.sun_path) return Error{"the task's door has too long a name", path};
  std::snprintf(a.sun_path, sizeof a.sun_path, "%s", short_path.c_str());
  return a;
}

bool wait_readable(int fd, int stop) {
  pollfd p[2] = {{fd, POLLIN, 0}, {stop, POLLIN, 0}};
  return ::poll(p, stop >= 0 ? 2 : 1, kAnswerTimeoutMs) > 0 && p[0].revents != 0 &&
         (stop < 0 || p[1].revents == 0);
}

// "HOST_PORT CALL_PORT".
bool parse_ports(std::string_view text, net::Published& port) {
  const auto space = text.find(' ');
  if (space == std::string_view::npos) return false;
  auto number = [](std::string_view t, std::uint16_t& out) {
    const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), out);
    return ec == std::errc() && end == t.data() + t.size() && out != 0;
  };
  return number(text.substr(0, space), port.host_port) && number(text.substr(space + 1), port.call_port);
}

bool is_listener(int fd) {
  int listening = 0;
  socklen_t len = sizeof listening;
  return ::getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) == 0 && listening == 1;
}

}  // namespace

std::string control_path(const std::string& lock) {
  const std::string suffix = ".lock";
  const bool has =
      lock.size() > suffix.size() && lock.compare(lock.size() - suffix.size(), suffix.size(), suffix) == 0;
  return (has ? lock.substr(0, lock.size() - suffix.size()) : lock) + ".door";
}

Expected<std::unique_ptr<TaskControl>> TaskControl::open(const std::string& path, Serve serve) {
  std::unique_ptr<TaskControl> c(new TaskControl());
  c->serve_ = std::move(serve);
  UniqueFd dir;
  auto a = address_of(path, dir);
  if (!a) return std::move(a).error();
  c->listener_.reset(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  c->stop_.reset(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!c->listener_ || !c->stop_) return sys_error("make the task's door", path);
  ::unlink(path.c_str());
  const mode_t was = ::umask(077);  // 0600 from its first moment
  const int bound = ::bind(c->listener_.get(), reinterpret_cast<sockaddr*>(&*a), sizeof *a);
  ::umask(was);
  if (bound != 0 || ::listen(c->listener_.get(), 4) != 0) return sys_error("open the task's door", path);
  c->path_ = path;
  c->loop_ = std::thread([t = c.get()] { t->serve_loop(); });
  return c;
}

TaskControl::~TaskControl() {
  stop();
}

void TaskControl::stop() noexcept {
  if (stop_) {
    const std::uint64_t one = 1;
    (void)!::write(stop_.get(), &one, sizeof one);
  }
  if (loop_.joinable()) loop_.join();
  if (!path_.empty()) ::unlink(path_.c_str());
  path_.clear();
  listener_.reset();
}

void TaskControl::serve_loop() {
  for (;;) {
    pollfd p[2] = {{listener_.get(), POLLIN, 0}, {stop_.get(), POLLIN, 0}};
    if (::poll(p, 2, -1) < 0 && errno != EINTR) return;
    if (p[1].revents != 0) return;
    if (p[0].revents == 0) continue;
    UniqueFd client(::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC));
    if (client) answer(client.get());
  }
}

void TaskControl::answer(int client) {
  auto reply = [client](const std::string& text) {
    (void)!::send(client, text.data(), text.size(), MSG_NOSIGNAL);
  };
  // Only the person who runs the task (or root) may open its ports.
  ucred peer{};
  socklen_t len = sizeof peer;
  if (::getsockopt(client, SOL_SOCKET, SO_PEERCRED, &peer, &len) != 0 ||
      (peer.uid != ::geteuid() && peer.uid != 0)) {
    reply("error: only the task's own user may publish its ports");
    return;
  }
  if (!wait_readable(client, stop_.get())) return;
  char text[kMaxMessage];
  iovec iov{text, sizeof text};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  FdsControl control;
  expect_fds(msg, control);
  const ssize_t n = ::recvmsg(client, &msg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
  int fds[kMaxPassedFds];
  const int count = n >= 0 ? received_fds(msg, fds) : 0;
  UniqueFd held[kMaxPassedFds];
  for (int i = 0; i < count; ++i) held[i].reset(fds[i]);
  net::Published port;
  if (n <= 0 || count < 1 || count > 2 ||
      !parse_ports(std::string_view(text, static_cast<std::size_t>(n)), port)) {
    reply("error: the request is not HOST_PORT CALL_PORT with the listeners");
    return;
  }
  port.v4 = std::move(held[0]);
  if (count == 2) port.v6 = std::move(held[1]);
  if (!is_listener(port.v4.get()) || (port.v6 && !is_listener(port.v6.get()))) {
    reply("error: what came is not a listening socket");
    return;
  }
  auto served = serve_(std::move(port));
  reply(served ? std::string("ok") : "error: " + served.error().message());
}

Expected<void> hand_to_runner(const std::string& path, const net::Published& port) {
  UniqueFd dir;
  auto a = address_of(path, dir);
  if (!a) return std::move(a).error();
  UniqueFd s(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
  if (!s) return sys_error("reach the task's runner: socket");
  if (::connect(s.get(), reinterpret_cast<sockaddr*>(&*a), sizeof *a) != 0)
    return Error{"the task's runner does not answer: the task is not running", path, errno};
  std::string text = std::to_string(port.host_port) + " " + std::to_string(port.call_port);
  iovec iov{text.data(), text.size()};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  const int fds[2] = {port.v4.get(), port.v6.get()};
  FdsControl control;
  attach_fds(msg, control, fds, port.v6 ? 2 : 1);
  if (::sendmsg(s.get(), &msg, MSG_NOSIGNAL) < 0)
    return sys_error("hand the ports to the task's runner", path);
  if (!wait_readable(s.get(), -1)) return Error{"the task's runner did not answer in time", path, ETIMEDOUT};
  char reply[kMaxMessage];
  const ssize_t n = ::recv(s.get(), reply, sizeof reply, 0);
  if (n <= 0) return Error{"the task's runner ended before it answered", path, n < 0 ? errno : 0};
  const std::string answer(reply, static_cast<std::size_t>(n));
  if (answer == "ok") return {};
  const std::string prefix = "error: ";
  return Error{answer.rfind(prefix, 0) == 0 ? answer.substr(prefix.size()) : answer, "", 0, Errc::bad_config};
}

}  // namespace chock::session
