#include "doctor/probe_child.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "chock/error.hpp"

namespace chock::doctor {

void Reporter::send(int ok, const char* step, int error, long long value) const noexcept {
  Note note;
  note.ok = ok;
  note.error = error;
  note.value = value;
  // No strncpy: it pads, and which libc functions are async-signal-safe is a
  // short list; a loop is certainly safe.
  std::size_t i = 0;
  for (; step != nullptr && step[i] != '\0' && i + 1 < sizeof note.step; ++i) note.step[i] = step[i];
  note.step[i] = '\0';
  while (::write(fd_, &note, sizeof note) < 0 && errno == EINTR) {
  }
}

void Reporter::ok(const char* step, long long value) const noexcept {
  const int saved = errno;
  send(1, step, 0, value);
  errno = saved;
}

bool Reporter::fail(const char* step, int error, long long value) const noexcept {
  send(0, step, error, value);
  return false;
}

void child_exit(int code) noexcept {
  ::_exit(code);
}

const Note* ChildResult::failure() const {
  for (const Note& n : notes)
    if (n.ok == 0) return &n;
  return nullptr;
}

const Note* ChildResult::last() const {
  return notes.empty() ? nullptr : &notes.back();
}

bool ChildResult::passed() const {
  return harness_error.empty() && !timed_out && !notes.empty() && failure() == nullptr && exit_code &&
         *exit_code == 0;
}

std::string signal_name(int sig) {
  const char* abbrev = ::sigabbrev_np(sig);
  return abbrev != nullptr ? std::string("SIG") + abbrev : "signal " + std::to_string(sig);
}

std::string note_text(const Note& note) {
  std::string out = note.step;
  if (note.error != 0) out += std::string(": ") + errno_name(note.error);
  return out;
}

std::string ChildResult::describe() const {
  if (!harness_error.empty()) return harness_error;
  if (const Note* f = failure()) return note_text(*f);
  std::string after = notes.empty() ? std::string() : std::string(" after ") + notes.back().step;
  if (timed_out) return "the probe did not finish in time" + after;
  if (signal) return "killed by " + signal_name(*signal) + after;
  if (exit_code && *exit_code != 0) return "exited " + std::to_string(*exit_code) + after;
  if (notes.empty()) return "the probe ended without a report";
  return "ok";
}

namespace {

// Reads whole notes until the child closes its end, or the deadline passes.
bool collect(int fd, std::chrono::steady_clock::time_point deadline, std::vector<Note>& notes) {
  std::string pending;
  char buf[sizeof(Note) * 8];
  for (;;) {
    auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd, POLLIN, 0};
    int ready = ::poll(&p, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) return false;
    if (ready < 0) return true;  // nothing more can be read: what came is what there is
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return true;
    pending.append(buf, static_cast<std::size_t>(n));
    while (pending.size() >= sizeof(Note)) {
      Note note;
      std::memcpy(&note, pending.data(), sizeof note);
      note.step[sizeof note.step - 1] = '\0';
      notes.push_back(note);
      pending.erase(0, sizeof note);
    }
  }
}

}  // namespace

ChildResult run_child(ProbeBody body, const void* context, std::chrono::milliseconds timeout) {
  ChildResult result;
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    result.harness_error = std::string("pipe2: ") + errno_name(errno);
    return result;
  }
  UniqueFd read_end(fds[0]);
  UniqueFd write_end(fds[1]);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    result.harness_error = std::string("fork: ") + errno_name(errno);
    return result;
  }
  if (pid == 0) {
    // The child: system calls only from here on.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
    if (::getppid() != parent) ::_exit(126);  // the caller died before the line above
    ::close(read_end.get());
    Reporter out(write_end.get());
    body(context, out);
    ::_exit(0);
  }
  write_end.reset();
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  if (!collect(read_end.get(), deadline, result.notes)) {
    result.timed_out = true;
    ::kill(pid, SIGKILL);  // not reaped yet, so the pid is still this child's
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status) && !result.timed_out) result.signal = WTERMSIG(status);
  return result;
}

}  // namespace chock::doctor
