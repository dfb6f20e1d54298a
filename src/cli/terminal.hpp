// The call never holds the person's terminal. When any of chock's own
// descriptors 0 to 2 is a terminal, the call gets a pseudo-terminal of its
// own in its place (so isatty and colours still work) and chock relays its
// output, and its input only with --stdin. Whatever the program does to its
// terminal (stty -echo, TIOCEXCL, a read of keystrokes through fd 2) it does
// to that one; the caller's terminal settings are put back after the call.
// What it writes passes TerminalFilter (util/terminal_filter.hpp) unless
// --raw-terminal: nothing that makes the terminal answer, writes its
// clipboard or title, or outlives the call; and unless --stdin, whatever the
// terminal queued as input meanwhile is flushed, never read by the shell.
//
// Nor the person's output files: a stdout or stderr that is a regular file
// (or anything but a terminal, a pipe, a socket or /dev/null) is the call's
// to truncate or chmod through its descriptor, so the call gets a pipe and
// chock appends what comes through it to the file.
#pragma once

#include <termios.h>

#include <array>
#include <optional>
#include <set>
#include <thread>

#include "chock/config.hpp"
#include "chock/error.hpp"
#include "policy/policy.hpp"
#include "util/fd.hpp"
#include "util/terminal_filter.hpp"

namespace chock::cli {

// The OSC numbers (0 to 9999) a person allowed with terminal.osc.<n> rows
// (policy::person_allows); none without a row that names terminal.*.
[[nodiscard]] std::set<int> osc_allowed(const policy::Table& table);

class TerminalRelay {
 public:
  // Before the spawn: when a terminal is among 0 to 2, opens a pty and
  // points config.stdio at its far end; a pipe in place of an output file.
  // Otherwise does nothing. `raw`: the program's bytes pass unfiltered.
  // `osc`: the OSC numbers that pass (osc_allowed).
  [[nodiscard]] static Expected<TerminalRelay> prepare(Config& config, bool raw, std::set<int> osc = {});
  // The same for a call of the session engine: its stdio, and whether its stdin is the caller's.
  [[nodiscard]] static Expected<TerminalRelay> prepare(std::array<int, 3>& stdio, bool pass_stdin, bool raw,
                                                       std::set<int> osc = {});

  TerminalRelay() = default;
  TerminalRelay(TerminalRelay&&) = default;
  TerminalRelay& operator=(TerminalRelay&&) = delete;
  TerminalRelay(const TerminalRelay&) = delete;
  TerminalRelay& operator=(const TerminalRelay&) = delete;
  ~TerminalRelay();

  // After the spawn: lets go of the far ends and starts relaying.
  void start();
  // After the call: relays what is left, stops, puts back the terminal
  // modes the call left changed and the caller's terminal settings, and
  // flushes the terminal's input unless it was the call's.
  void finish();

  [[nodiscard]] bool active() const { return master_ || files_[0].read || files_[1].read; }

 private:
  // An output file of chock's (1 or 2) and the pipe the call writes instead.
  struct File {
    UniqueFd read, write;  // `write` is the program's, until start()
    int to = -1;
  };

  Expected<void> open_terminal(std::array<int, 3>& stdio, bool tty_in, bool tty_out, bool tty_err);
  Expected<void> pipe_files(std::array<int, 3>& stdio);
  void relay();

  UniqueFd master_;
  UniqueFd slave_;
  int out_fd_ = 1;                                 // where the program's output goes: the caller's terminal
  bool input_ = false;                             // --stdin with a terminal on 0: keystrokes go to the call
  bool flush_input_ = false;                       // no --stdin: the terminal's input was never the call's
  std::optional<TerminalFilter> filter_;           // none with --raw-terminal
  std::array<File, 2> files_;                      // for chock's 1 and 2
  UniqueFd stop_[2];                               // a pipe: written by finish() to end the relay
  std::array<std::optional<termios>, 3> saved_{};  // the caller's settings, per descriptor
  std::thread thread_;
};

}  // namespace chock::cli
