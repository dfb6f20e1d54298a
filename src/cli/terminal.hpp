// The call never holds the person's terminal. When any of chock's own
// descriptors 0 to 2 is a terminal, the call gets a pseudo-terminal of its
// own in its place (so isatty and colours still work) and chock relays its
// output, and its input only with --stdin. Whatever the program does to its
// terminal (stty -echo, TIOCEXCL, a read of keystrokes through fd 2) it does
// to that one; the caller's terminal settings are put back after the call.
#pragma once

#include <termios.h>

#include <array>
#include <optional>
#include <thread>

#include "chock/config.hpp"
#include "chock/error.hpp"
#include "util/fd.hpp"

namespace chock::cli {

class TerminalRelay {
 public:
  // Before the spawn: when a terminal is among 0 to 2, opens a pty and
  // points config.stdio at its far end. Otherwise does nothing.
  [[nodiscard]] static Expected<TerminalRelay> prepare(Config& config);
  // The same for a call of the session engine: its stdio, and whether its stdin is the caller's.
  [[nodiscard]] static Expected<TerminalRelay> prepare(std::array<int, 3>& stdio, bool pass_stdin);

  TerminalRelay() = default;
  TerminalRelay(TerminalRelay&&) = default;
  TerminalRelay& operator=(TerminalRelay&&) = delete;
  TerminalRelay(const TerminalRelay&) = delete;
  TerminalRelay& operator=(const TerminalRelay&) = delete;
  ~TerminalRelay();

  // After the spawn: lets go of the far end and starts relaying.
  void start();
  // After the call: relays what is left, stops, and puts the caller's
  // terminal settings back.
  void finish();

  [[nodiscard]] bool active() const { return master_.get() >= 0; }

 private:
  void relay();

  UniqueFd master_;
  UniqueFd slave_;
  int out_fd_ = 1;                                 // where the program's output goes: the caller's terminal
  bool input_ = false;                             // --stdin with a terminal on 0: keystrokes go to the call
  UniqueFd stop_[2];                               // a pipe: written by finish() to end the relay
  std::array<std::optional<termios>, 3> saved_{};  // the caller's settings, per descriptor
  std::thread thread_;
};

}  // namespace chock::cli
