#include "cli/terminal.hpp"
#include "util/io.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>

namespace chock::cli {

namespace {

// All of `n` bytes to `fd`, or false.
bool write_all(int fd, const char* data, std::size_t n) {
  return chock::write_all(fd, std::string_view(data, n), "the terminal").has_value();
}

}  // namespace

Expected<TerminalRelay> TerminalRelay::prepare(Config& config) {
  return prepare(config.stdio, config.pass_stdin);
}

Expected<TerminalRelay> TerminalRelay::prepare(std::array<int, 3>& stdio, bool pass_stdin) {
  TerminalRelay t;
  const bool tty_in = ::isatty(0) == 1 && pass_stdin;
  const bool tty_out = ::isatty(1) == 1;
  const bool tty_err = ::isatty(2) == 1;
  if (!tty_in && !tty_out && !tty_err) return t;
  for (int fd = 0; fd < 3; ++fd) {
    termios now{};
    if (::isatty(fd) == 1 && ::tcgetattr(fd, &now) == 0) t.saved_[fd] = now;
  }
  t.master_.reset(::posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC));
  if (!t.master_) return sys_error("posix_openpt, for the call's own terminal");
  if (::grantpt(t.master_.get()) != 0 || ::unlockpt(t.master_.get()) != 0)
    return sys_error("unlockpt, for the call's own terminal");
  char name[128];
  if (::ptsname_r(t.master_.get(), name, sizeof name) != 0)
    return sys_error("ptsname, for the call's own terminal");
  t.slave_.reset(::open(name, O_RDWR | O_NOCTTY | O_CLOEXEC));
  if (!t.slave_) return sys_error("open", name);
  // The call's terminal starts as the caller's looks: its settings and size.
  const int like = tty_out ? 1 : tty_err ? 2 : 0;
  // Output is not processed twice: the caller's terminal turns "\n" into
  // "\r\n" itself, so the bytes it gets are the program's own.
  if (t.saved_[like]) {
    termios inner = *t.saved_[like];
    inner.c_oflag &= ~static_cast<tcflag_t>(OPOST);
    (void)::tcsetattr(t.slave_.get(), TCSANOW, &inner);
  }
  winsize size{};
  if (::ioctl(like, TIOCGWINSZ, &size) == 0) (void)::ioctl(t.slave_.get(), TIOCSWINSZ, &size);
  if (tty_in) stdio[0] = t.slave_.get();
  if (tty_out) stdio[1] = t.slave_.get();
  if (tty_err) stdio[2] = t.slave_.get();
  t.out_fd_ = tty_out ? 1 : 2;
  t.input_ = tty_in;
  int pipe[2];
  if (::pipe2(pipe, O_CLOEXEC) != 0) return sys_error("pipe, for the terminal relay");
  t.stop_[0].reset(pipe[0]);
  t.stop_[1].reset(pipe[1]);
  return t;
}

void TerminalRelay::start() {
  if (!active()) return;
  slave_.reset();  // the call holds it now; its end reads as EIO on the master
  if (input_ && saved_[0]) {
    // Keystrokes go to the call one by one; its own terminal echoes them.
    // ISIG stays on: Ctrl-C still reaches chock, which cancels the call.
    termios raw = *saved_[0];
    raw.c_lflag &= ~static_cast<tcflag_t>(ICANON | ECHO | IEXTEN);
    raw.c_cc[VMIN] = 1;
    raw.c_cc[VTIME] = 0;
    (void)::tcsetattr(0, TCSANOW, &raw);
  }
  thread_ = std::thread([this] { relay(); });
}

void TerminalRelay::relay() {
  char buf[16384];
  bool input_open = input_;
  bool stopping = false;
  auto stop_by = std::chrono::steady_clock::time_point::max();
  for (;;) {
    pollfd fds[3] = {
        {master_.get(), POLLIN, 0}, {stop_[0].get(), POLLIN, 0}, {input_open ? 0 : -1, POLLIN, 0}};
    // Once the call has ended, what it wrote is drained; a process of it that
    // still held the terminal is gone within moments, so the wait is bounded.
    int timeout = -1;
    if (stopping) {
      auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(stop_by - std::chrono::steady_clock::now());
      if (left.count() <= 0) return;
      timeout = static_cast<int>(left.count());
    }
    int n = ::poll(fds, 3, timeout);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    if ((fds[0].revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
      ssize_t r = ::read(master_.get(), buf, sizeof buf);
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) return;  // EIO: every holder of the call's terminal has closed it
      if (!write_all(out_fd_, buf, static_cast<std::size_t>(r))) return;
    }
    if ((fds[1].revents & (POLLIN | POLLHUP)) != 0 && !stopping) {
      stopping = true;
      input_open = false;
      stop_by = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    }
    if (input_open && (fds[2].revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
      ssize_t r = ::read(0, buf, sizeof buf);
      input_open = r > 0 && write_all(master_.get(), buf, static_cast<std::size_t>(r));
    }
  }
}

void TerminalRelay::finish() {
  if (!active()) return;
  if (thread_.joinable()) {
    (void)!::write(stop_[1].get(), "s", 1);
    thread_.join();
  }
  // Whatever the call did, the caller's terminal is as it was.
  for (int fd = 0; fd < 3; ++fd)
    if (saved_[fd]) (void)::tcsetattr(fd, TCSANOW, &*saved_[fd]);
  master_.reset();
}

TerminalRelay::~TerminalRelay() {
  finish();
}

}  // namespace chock::cli
