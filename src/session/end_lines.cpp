// What Chock says of a call's end beyond its exit status (chock/session.hpp).
#include <signal.h>

#include <cstring>

#include "chock/session.hpp"
#include "sandbox/kill_naming.hpp"
#include "sandbox/program_hints.hpp"
#include "util/escape.hpp"

namespace chock::session {

namespace {

std::string signal_words(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  const char* desc = sigdescr_np(sig);
  std::string out = abbrev != nullptr ? std::string("SIG") + abbrev : "signal " + std::to_string(sig);
  if (desc != nullptr) out += std::string(" (") + desc + ")";
  return out;
}

std::string plural(std::uint64_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

// " to `chromium`": the program the keeper named (already printable).
std::string of_program(const std::string& program) {
  return program.empty() ? std::string() : " to `" + printable(program) + "`";
}

// The first line: how the call ended, where that needs saying.
std::string how_it_ended(const Result& r, const std::string& command, const std::string& deadline) {
  if (r.setup_failure)
    return "sandbox setup failed at " + r.setup_failure->step + ": " + errno_name(r.setup_failure->code) +
           " (" + std::strerror(r.setup_failure->code) + ")" +
           (r.setup_failure->detail.empty() ? "" : ": " + r.setup_failure->detail);
  if (r.exec_error) {
    if (*r.exec_error == ENOENT || *r.exec_error == ENOTDIR)
      return command + ": command not found in the sandbox";
    return command + ": cannot be run in the sandbox: " + errno_name(*r.exec_error) + " (" +
           std::strerror(*r.exec_error) + ")";
  }
  if (r.timed_out)
    return "the call ran past its timeout" + (deadline.empty() ? "" : " of " + deadline) +
           " and every process of it was stopped";
  if (r.cancelled) return "the call was cancelled and every process of it was stopped";
  // Before the SIGKILL it ended with: what ended it was Chock, and why.
  if (r.never_ending)
    return "the call could never end, so Chock ended it at once: `" +
           printable(r.never_ending_after.command) + "` (pid " + std::to_string(r.never_ending_after.pid) +
           ") was killed for calling `" + printable(r.never_ending_after.call) +
           "`, which the sandbox refuses, and every process left was stopped or waiting on another "
           "process of the call";
  if (std::string named = kill_message(r.limits); !named.empty())
    return named.starts_with("chock: ") ? named.substr(7) : named;
  if (r.signal) return "the program was killed by " + signal_words(*r.signal);
  // Never a silent 125: the keeper ended without saying how the program did.
  if (r.report_lost)
    return "the sandbox's report of the program's end was lost; the status " +
           std::to_string(r.exit_code.value_or(-1)) +
           " is the sandbox keeper's own, not necessarily the program's";
  if (!r.exit_code)
    return "the call ended without a status Chock could read (the sandbox's report of the program's end was "
           "lost)";
  return {};
}

}  // namespace

std::vector<std::string> end_lines(const Result& r, const std::vector<std::string>& argv,
                                   const std::string& deadline,
                                   const std::function<bool(const std::string&)>& said) {
  std::vector<std::string> lines;
  const std::string command = argv.empty() ? std::string("the command") : printable(argv[0]);
  std::string first = how_it_ended(r, command, deadline);
  // A program that exited 0 went on past what the network refused: its line
  // must not read as the cause of a failure there was none of.
  const bool passed = first.empty() && r.exit_code == 0;
  if (!first.empty()) lines.push_back(std::move(first));
  auto network = [&](std::string line) {
    lines.push_back(passed ? "note: " + line + "; the program went on, and exited 0" : std::move(line));
  };
  // The program's own words ("Could not resolve host", "Network is
  // unreachable") do not say that the sandbox refused it.
  for (const auto& line : r.network_refusals)
    if (std::string shown = printable(line); !said || !said(shown)) network(std::move(shown));
  if (r.network_unreachable > 0 && r.network_filtered)
    network("the call tried to reach an address directly (" +
            plural(r.network_unreachable, "packet", "packets") +
            " found no route): a filtered call reaches the network only through names its own "
            "resolver answered, by the sandbox's design, not a fault in the command");
  else if (r.network_unreachable > 0)
    network("the call tried to reach the network (" + plural(r.network_unreachable, "packet", "packets") +
            " found no route): a call has no network but its own loopback, by the sandbox's design, "
            "not a fault in the command; `--net host` (or `.network = .host` in chock.zon) gives it "
            "the host's");
  // LeakSanitizer's tracer, by its exact flags; any other such clone is said
  // as what it is, never as LeakSanitizer.
  if (r.sanitizer_tracer_refused > 0)
    lines.push_back(
        "LeakSanitizer cannot look for leaks in a call: its tracer is a process made with "
        "clone(CLONE_UNTRACED), which the sandbox refuses (" +
        plural(r.sanitizer_tracer_refused, "time", "times") +
        "); run with ASAN_OPTIONS=detect_leaks=0 (LSAN_OPTIONS=detect_leaks=0 for -fsanitize=leak)");
  if (r.untraced_clone_refused > r.sanitizer_tracer_refused)
    lines.push_back("the sandbox refused " +
                    plural(r.untraced_clone_refused - r.sanitizer_tracer_refused, "clone", "clones") +
                    " with CLONE_UNTRACED (EPERM): a process made so would escape the sandbox's watch "
                    "of the call");
  // Said at once by the keeper too; here again with the count, last, so the
  // summary a person reads after a hang ends with the cause.
  if (r.write_execute_refused > 0)
    lines.push_back("the sandbox refused " +
                    plural(r.write_execute_refused, "writable and executable mapping",
                           "writable and executable mappings") +
                    " (write-xor-execute)" + of_program(r.write_execute_program) + ": " +
                    program_hints::kJitReason +
                    program_hints::without_jit(program_hints::kind_of(r.write_execute_program.c_str())));
  if (r.user_namespace_refused > 0)
    lines.push_back(
        "the sandbox refused " + plural(r.user_namespace_refused, "user namespace", "user namespaces") +
        of_program(r.user_namespace_program) + " (ENOSPC): " + program_hints::kNestedSandboxReason +
        program_hints::without_own_sandbox(program_hints::kind_of(r.user_namespace_program.c_str())));
  return lines;
}

}  // namespace chock::session
