#include "cli/outcome.hpp"

#include "sandbox/kill_naming.hpp"
#include "util/escape.hpp"

#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>

namespace chock::cli {

namespace {

std::string signal_words(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  const char* desc = sigdescr_np(sig);
  std::string out = abbrev != nullptr ? std::string("SIG") + abbrev : "signal " + std::to_string(sig);
  if (desc != nullptr) out += std::string(" (") + desc + ")";
  return out;
}

// The JSON is built only when a file asks for it: start-up is timed, and
// the result's JSON is some 100,000 instructions.
void write_result_file(const std::string& path, const Result& r) {
  if (path.empty()) return;
  std::ofstream f(path, std::ios::trunc);
  f << r.to_json() << "\n";
  if (!f)
    std::fprintf(stderr, "chock: could not write the result file %s: %s\n", path.c_str(),
                 std::strerror(errno));
}

}  // namespace

int finish(const Result& r, const std::vector<std::string>& argv, const std::string& result_file,
           const std::string& deadline) {
  const std::string command = argv.empty() ? std::string("the command") : argv[0];
  if (r.setup_failure) {
    std::fprintf(stderr, "chock: sandbox setup failed at %s: %s (%s)%s%s\n", r.setup_failure->step.c_str(),
                 errno_name(r.setup_failure->code), std::strerror(r.setup_failure->code),
                 r.setup_failure->detail.empty() ? "" : ": ", r.setup_failure->detail.c_str());
  } else if (r.exec_error) {
    if (*r.exec_error == ENOENT || *r.exec_error == ENOTDIR) {
      std::fprintf(stderr, "chock: %s: command not found in the sandbox\n", command.c_str());
    } else {
      std::fprintf(stderr, "chock: %s: cannot be run in the sandbox: %s (%s)\n", command.c_str(),
                   errno_name(*r.exec_error), std::strerror(*r.exec_error));
    }
  } else if (r.timed_out) {
    std::fprintf(stderr, "chock: the call ran past its timeout%s%s and every process of it was stopped\n",
                 deadline.empty() ? "" : " of ", deadline.c_str());
  } else if (r.cancelled) {
    std::fprintf(stderr, "chock: the call was cancelled and every process of it was stopped\n");
  } else if (std::string named = kill_message(r.limits); !named.empty()) {
    std::fprintf(stderr, "%s\n", named.c_str());
  } else if (r.signal) {
    std::fprintf(stderr, "chock: the program was killed by %s\n", signal_words(*r.signal).c_str());
  } else if (r.report_lost) {
    // Never a silent 125: the keeper ended without saying how the program did.
    std::fprintf(stderr,
                 "chock: the sandbox's report of the program's end was lost; the status %d is the sandbox "
                 "keeper's own, not necessarily the program's\n",
                 r.exit_code.value_or(-1));
  } else if (!r.exit_code) {
    // Never a silent 125: the keeper's report of the program's end did not come.
    std::fprintf(stderr,
                 "chock: the call ended without a status Chock could read (the sandbox's report of the "
                 "program's end was lost)\n");
  }
  // The program's own words ("Could not resolve host", "Network is
  // unreachable") do not say that the sandbox refused it.
  for (const auto& line : r.network_refusals) std::fprintf(stderr, "chock: %s\n", printable(line).c_str());
  if (r.network_unreachable > 0 && r.network_filtered)
    std::fprintf(
        stderr,
        "chock: the call tried to reach an address directly (%llu packet%s found no route): a filtered "
        "call reaches the network only through names its own resolver answered, by the sandbox's "
        "design, not a fault in the command\n",
        static_cast<unsigned long long>(r.network_unreachable), r.network_unreachable == 1 ? "" : "s");
  else if (r.network_unreachable > 0)
    std::fprintf(stderr,
                 "chock: the call tried to reach the network (%llu packet%s found no route): a call has no "
                 "network but its own loopback, by the sandbox's design, not a fault in the command; "
                 "`--net host` (or `.network = .host` in chock.zon) gives it the host's\n",
                 static_cast<unsigned long long>(r.network_unreachable),
                 r.network_unreachable == 1 ? "" : "s");
  if (r.write_execute_refused > 0)
    std::fprintf(
        stderr,
        "chock: the sandbox refused %llu writable and executable mapping%s (write-xor-execute): a JIT "
        "(Node, Deno, Bun, the JVM, .NET) needs `sandbox.jit = allow` in chock.zon (--allow-jit for "
        "chock sandbox), or its own switch to run without one (node --jitless)\n",
        static_cast<unsigned long long>(r.write_execute_refused), r.write_execute_refused == 1 ? "" : "s");
  write_result_file(result_file, r);
  return r.exit_status();
}

int refuse(const Error& error, const std::string& result_file) {
  std::fprintf(stderr, "chock: %s\n", error.message().c_str());
  if (!result_file.empty()) {
    Result r;
    r.setup_failure = SetupFailure{"prepare", error.code, error.message()};
    write_result_file(result_file, r);
  }
  return 125;
}

CancelSignals::CancelSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGHUP);
  sigprocmask(SIG_BLOCK, &set, nullptr);
  fd_.reset(signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK));
}

CancelSignals::~CancelSignals() {
  // Consume what arrived, or unblocking would deliver it and kill us now.
  signalfd_siginfo info{};
  while (fd_ && read(fd_.get(), &info, sizeof info) == static_cast<ssize_t>(sizeof info)) {
  }
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGHUP);
  sigprocmask(SIG_UNBLOCK, &set, nullptr);
}

}  // namespace chock::cli
