#include "session/program_io.hpp"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>

namespace chock::session {

namespace {

Expected<std::array<UniqueFd, 2>> make_pipe() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return sys_error("pipe, for the program's stdio");
  return std::array<UniqueFd, 2>{UniqueFd(fds[0]), UniqueFd(fds[1])};
}

}  // namespace

Expected<ProgramIo> ProgramIo::prepare(const std::optional<std::string>& input, Output output,
                                       Config& config) {
  ProgramIo io;
  if (input) {
    auto p = make_pipe();
    if (!p) return std::move(p).error();
    io.in_read_ = std::move((*p)[0]);
    io.in_write_ = std::move((*p)[1]);
    // The program may never read: its end closing must not kill the engine.
    (void)::fcntl(io.in_write_.get(), F_SETFL, O_NONBLOCK);
    io.input_ = *input;
    config.stdio[0] = io.in_read_.get();
    config.pass_stdin = true;
  }
  if (output) {
    for (int stream : {1, 2}) {
      auto p = make_pipe();
      if (!p) return std::move(p).error();
      (stream == 1 ? io.out_read_ : io.err_read_) = std::move((*p)[0]);
      (stream == 1 ? io.out_write_ : io.err_write_) = std::move((*p)[1]);
      config.stdio[static_cast<std::size_t>(stream)] = (stream == 1 ? io.out_write_ : io.err_write_).get();
    }
    io.output_ = std::move(output);
  }
  return io;
}

ProgramIo::~ProgramIo() {
  finish();
}

void ProgramIo::start() {
  in_read_.reset();
  out_write_.reset();
  err_write_.reset();
  if (!in_write_ && !out_read_ && !err_read_) return;
  if (input_.empty()) in_write_.reset();
  thread_ = std::thread([this] { move_bytes(); });
}

void ProgramIo::finish() {
  if (thread_.joinable()) thread_.join();
  in_read_.reset();
  out_write_.reset();
  err_write_.reset();
}

void ProgramIo::move_bytes() {
  // A program that leaves its stdin unread closes it: EPIPE here, never a
  // SIGPIPE for the process that embeds the engine (a signal a write raises
  // is this thread's, and goes with it while blocked).
  sigset_t pipe_signal;
  sigemptyset(&pipe_signal);
  sigaddset(&pipe_signal, SIGPIPE);
  ::pthread_sigmask(SIG_BLOCK, &pipe_signal, nullptr);
  std::size_t written = 0;
  char buf[65536];
  for (;;) {
    pollfd fds[3] = {{in_write_ ? in_write_.get() : -1, POLLOUT, 0},
                     {out_read_ ? out_read_.get() : -1, POLLIN, 0},
                     {err_read_ ? err_read_.get() : -1, POLLIN, 0}};
    if (!in_write_ && !out_read_ && !err_read_) return;
    if (::poll(fds, 3, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[0].revents != 0) {
      const ssize_t n = ::write(in_write_.get(), input_.data() + written, input_.size() - written);
      if (n > 0) written += static_cast<std::size_t>(n);
      if ((n < 0 && errno != EAGAIN && errno != EINTR) || written == input_.size()) in_write_.reset();
    }
    for (int stream : {1, 2}) {
      UniqueFd& from = stream == 1 ? out_read_ : err_read_;
      if (fds[stream].revents == 0) continue;
      const ssize_t n = ::read(from.get(), buf, sizeof buf);
      if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (n <= 0) {
        from.reset();
        continue;
      }
      output_(stream, std::string_view(buf, static_cast<std::size_t>(n)));
    }
  }
}

}  // namespace chock::session
