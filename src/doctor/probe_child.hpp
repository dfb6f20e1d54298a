// The harness every irreversible probe runs in: a forked child does one
// thing with system calls only and reports each step through a pipe as a
// fixed-size note; the parent collects the notes and how the child ended (a
// child killed by a signal is reported by the signal's name).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "util/fd.hpp"

namespace chock::doctor {

// One step of a probe, as the child saw it. Fixed size, written with one
// write(2) below PIPE_BUF, so a note is never torn or interleaved.
struct Note {
  int ok = 0;           // 1: the step did what the probe expected
  int error = 0;        // errno of the step, 0 when there was none
  long long value = 0;  // a number the step measured (bytes written, a pid, a resource)
  char step[64] = {};   // what was done: "unshare(CLONE_NEWUSER)"
};

// The child's side. Every member is async-signal-safe.
class Reporter {
 public:
  explicit Reporter(int fd) noexcept : fd_(fd) {}
  void ok(const char* step, long long value = 0) const noexcept;
  // Records the failed step with `error` (usually errno) and returns false,
  // so a probe can `return out.fail(...)`.
  bool fail(const char* step, int error, long long value = 0) const noexcept;
  [[nodiscard]] int fd() const noexcept { return fd_; }

 private:
  void send(int ok, const char* step, int error, long long value) const noexcept;
  int fd_;
};

struct ChildResult {
  std::vector<Note> notes;
  std::optional<int> exit_code;
  std::optional<int> signal;
  bool timed_out = false;
  std::string harness_error;  // the child could not be started: "fork: EAGAIN"

  // The first note that failed, or nullptr.
  [[nodiscard]] const Note* failure() const;
  // The last note, or nullptr.
  [[nodiscard]] const Note* last() const;
  // Every note ok, at least one of them, and the child exited 0.
  [[nodiscard]] bool passed() const;
  // How it went wrong, in words: "unshare(CLONE_NEWUSER): ENOSPC", "killed by
  // SIGSEGV after mmap", "timed out", "exited 1 without a report".
  [[nodiscard]] std::string describe() const;
};

// "SIGSYS" for 31; "signal 64" for one without a name.
[[nodiscard]] std::string signal_name(int sig);
// "step: ERRNO", or just "step" when the note carries no errno.
[[nodiscard]] std::string note_text(const Note& note);

using ProbeBody = void (*)(const void* context, const Reporter& out) noexcept;

// Forks; the child runs `body(context, reporter)` and _exits 0. Everything the
// body uses must be built before this call. The child is killed after
// `timeout`, and dies with the caller (PR_SET_PDEATHSIG).
[[nodiscard]] ChildResult run_child(ProbeBody body, const void* context, std::chrono::milliseconds timeout);

// The same with a lambda `void(const Reporter&) noexcept`; it is called in
// the child only, so it may capture by reference.
template <class F>
[[nodiscard]] ChildResult run_child(const F& body,
                                    std::chrono::milliseconds timeout = std::chrono::milliseconds(10000)) {
  return run_child([](const void* c, const Reporter& out) noexcept { (*static_cast<const F*>(c))(out); },
                   &body, timeout);
}

// A grandchild inside a probe (the first process of a pid namespace, a child
// made with CLONE_PIDFD) ends here: no atexit handlers, no stdio flush.
[[noreturn]] void child_exit(int code) noexcept;

}  // namespace chock::doctor
