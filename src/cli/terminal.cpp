#include "cli/terminal.hpp"
#include "util/io.hpp"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <string>

namespace chock::cli {

namespace {

// Whether the call may hold chock's output descriptor `fd` itself: a
// terminal is replaced by a pty anyway; a pipe or socket of no name and
// /dev/null give it nothing to truncate or chmod. A file, a named FIFO or
// any other device does.
bool needs_pipe(int fd) {
  struct stat st {};
  if (::fstat(fd, &st) != 0 || ::isatty(fd) == 1) return false;
  if (S_ISSOCK(st.st_mode)) return false;
  if (S_ISCHR(st.st_mode)) return st.st_rdev != makedev(1, 3);
  if (S_ISFIFO(st.st_mode)) {
    // An anonymous pipe reads "pipe:[N]"; a FIFO of the file system, its path.
    char link[64];
    const std::string proc = "/proc/self/fd/" + std::to_string(fd);
    const ssize_t n = ::readlink(proc.c_str(), link, sizeof link);
    return !(n > 5 && std::string_view(link, 5) == "pipe:");
  }
  return true;
}

bool same_file(int a, int b) {
  struct stat sa {};
  struct stat sb {};
  return ::fstat(a, &sa) == 0 && ::fstat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

}  // namespace

std::set<int> osc_allowed(const policy::Table& table) {
  std::set<int> out;
  const bool named = std::any_of(table.entries().begin(), table.entries().end(),
                                 [](const auto& e) { return e.rule.action.starts_with("terminal."); });
  if (!named) return out;
  for (int n = 0; n < 10000; ++n)
    if (policy::person_allows(table, policy::kTerminalOscPrefix + std::to_string(n))) out.insert(n);
  return out;
}

Expected<TerminalRelay> TerminalRelay::prepare(Config& config, bool raw, std::set<int> osc) {
  return prepare(config.stdio, config.pass_stdin, raw, std::move(osc));
}

Expected<TerminalRelay> TerminalRelay::prepare(std::array<int, 3>& stdio, bool pass_stdin, bool raw,
                                               std::set<int> osc) {
  TerminalRelay t;
  const bool tty_in = ::isatty(0) == 1 && pass_stdin;
  const bool tty_out = ::isatty(1) == 1;
  const bool tty_err = ::isatty(2) == 1;
  if (tty_in || tty_out || tty_err) {
    if (auto r = t.open_terminal(stdio, tty_in, tty_out, tty_err); !r) return std::move(r).error();
    if (!raw) t.filter_.emplace(TerminalFilter::Options{std::move(osc)});
    t.flush_input_ = !pass_stdin;
  }
  if (auto r = t.pipe_files(stdio); !r) return std::move(r).error();
  if (!t.active()) return t;
  int pipe[2];
  if (::pipe2(pipe, O_CLOEXEC) != 0) return sys_error("pipe, for the terminal relay");
  t.stop_[0].reset(pipe[0]);
  t.stop_[1].reset(pipe[1]);
  return t;
}

Expected<void> TerminalRelay::open_terminal(std::array<int, 3>& stdio, bool tty_in, bool tty_out,
                                            bool tty_err) {
  for (int fd = 0; fd < 3; ++fd) {
    termios now{};
    if (::isatty(fd) == 1 && ::tcgetattr(fd, &now) == 0) saved_[fd] = now;
  }
  master_.reset(::posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC));
  if (!master_) return sys_error("posix_openpt, for the call's own terminal");
  if (::grantpt(master_.get()) != 0 || ::unlockpt(master_.get()) != 0)
    return sys_error("unlockpt, for the call's own terminal");
  char name[128];
  if (::ptsname_r(master_.get(), name, sizeof name) != 0)
    return sys_error("ptsname, for the call's own terminal");
  slave_.reset(::open(name, O_RDWR | O_NOCTTY | O_CLOEXEC));
  if (!slave_) return sys_error("open", name);
  // The call's terminal starts as the caller's looks: its settings and size.
  const int like = tty_out ? 1 : tty_err ? 2 : 0;
  // Output is not processed twice: the caller's terminal turns "\n" into
  // "\r\n" itself, so the bytes it gets are the program's own.
  if (saved_[like]) {
    termios inner = *saved_[like];
    inner.c_oflag &= ~static_cast<tcflag_t>(OPOST);
    (void)::tcsetattr(slave_.get(), TCSANOW, &inner);
  }
  winsize size{};
  if (::ioctl(like, TIOCGWINSZ, &size) == 0) (void)::ioctl(slave_.get(), TIOCSWINSZ, &size);
  if (tty_in) stdio[0] = slave_.get();
  if (tty_out) stdio[1] = slave_.get();
  if (tty_err) stdio[2] = slave_.get();
  out_fd_ = tty_out ? 1 : 2;
  input_ = tty_in;
  return {};
}

Expected<void> TerminalRelay::pipe_files(std::array<int, 3>& stdio) {
  for (int fd : {1, 2}) {
    if (stdio[static_cast<std::size_t>(fd)] != fd || !needs_pipe(fd)) continue;
    // 2>&1 into one file: one pipe, so the order of the two stays the program's.
    if (fd == 2 && files_[0].write && same_file(1, 2)) {
      stdio[2] = files_[0].write.get();
      continue;
    }
    int p[2];
    if (::pipe2(p, O_CLOEXEC) != 0) return sys_error("pipe, for the call's output file");
    File& f = files_[static_cast<std::size_t>(fd - 1)];
    f.read.reset(p[0]);
    f.write.reset(p[1]);
    f.to = fd;
    stdio[static_cast<std::size_t>(fd)] = p[1];
  }
  return {};
}

void TerminalRelay::start() {
  if (!active()) return;
  slave_.reset();  // the call holds it now; its end reads as EIO on the master
  for (File& f : files_) f.write.reset();
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
  // A FIFO whose reader left: EPIPE here, never a SIGPIPE that ends chock.
  sigset_t pipe_signal;
  sigemptyset(&pipe_signal);
  sigaddset(&pipe_signal, SIGPIPE);
  ::pthread_sigmask(SIG_BLOCK, &pipe_signal, nullptr);
  char buf[16384];
  std::string passed;
  // Sources: the call's terminal, then its two output pipes. Each one is
  // read to its end; a destination that fails is not written again, but
  // its source is still drained so the call never blocks on it.
  const int from[3] = {master_.get(), files_[0].read.get(), files_[1].read.get()};
  const int to[3] = {out_fd_, files_[0].to, files_[1].to};
  bool open[3] = {from[0] >= 0, from[1] >= 0, from[2] >= 0};
  bool writable[3] = {true, true, true};
  bool input_open = input_;
  bool stopping = false;
  auto stop_by = std::chrono::steady_clock::time_point::max();
  while (open[0] || open[1] || open[2]) {
    pollfd fds[5] = {{open[0] ? from[0] : -1, POLLIN, 0},
                     {open[1] ? from[1] : -1, POLLIN, 0},
                     {open[2] ? from[2] : -1, POLLIN, 0},
                     {stopping ? -1 : stop_[0].get(), POLLIN, 0},  // its byte stays: once seen, left out
                     {input_open ? 0 : -1, POLLIN, 0}};
    // Once the call has ended, what it wrote is drained. A pipe holds all of
    // it already (its processes are gone; the keeper, which still holds the
    // pipe until its own slower exit, is not waited for): read until empty.
    // A terminal's bytes may still be on their way through its line
    // discipline: read until its last holder is gone, a bounded wait.
    int timeout = -1;
    if (stopping) {
      auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(stop_by - std::chrono::steady_clock::now());
      if (left.count() <= 0) return;
      timeout = open[0] ? static_cast<int>(left.count()) : 0;
    }
    int n = ::poll(fds, 5, timeout);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    for (int i = 0; i < 3; ++i) {
      if ((fds[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
      ssize_t r = ::read(from[i], buf, sizeof buf);
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) {  // EIO on the master: every holder of the call's terminal has closed it
        open[i] = false;
        continue;
      }
      std::string_view bytes(buf, static_cast<std::size_t>(r));
      if (i == 0 && filter_) {
        passed.clear();
        filter_->feed(bytes, passed);
        bytes = passed;
      }
      if (writable[i] && !bytes.empty())
        writable[i] = chock::write_all(to[i], bytes, "the call's output").has_value();
    }
    if ((fds[3].revents & (POLLIN | POLLHUP)) != 0 && !stopping) {
      stopping = true;
      input_open = false;
      stop_by = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    }
    if (input_open && (fds[4].revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
      ssize_t r = ::read(0, buf, sizeof buf);
      input_open =
          r > 0 && chock::write_all(master_.get(), std::string_view(buf, static_cast<std::size_t>(r)),
                                    "the call's terminal")
                       .has_value();
    }
  }
}

void TerminalRelay::finish() {
  if (!active()) return;
  if (thread_.joinable()) {
    (void)!::write(stop_[1].get(), "s", 1);
    thread_.join();
  }
  if (master_) {
    // The alternate screen, cursor, keypad, mouse, paste... as the call found them.
    if (filter_) (void)chock::write_all(out_fd_, filter_->finish(), "the terminal");
    // Whatever the call did, the caller's terminal is as it was, and what
    // the terminal queued as input meanwhile (answers to queries the call
    // made, keystrokes not meant for the shell) is never read by the shell.
    for (int fd = 0; fd < 3; ++fd) {
      if (!saved_[fd]) continue;
      (void)::tcsetattr(fd, TCSANOW, &*saved_[fd]);
      if (flush_input_) (void)::tcflush(fd, TCIFLUSH);
    }
  }
  master_.reset();
  for (File& f : files_) f.read.reset();
}

TerminalRelay::~TerminalRelay() {
  finish();
}

}  // namespace chock::cli
