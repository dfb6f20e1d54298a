#include "cli/outcome.hpp"

#include "chock/session.hpp"

#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>

namespace chock::cli {

namespace {

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
           const std::string& deadline, const std::function<bool(const std::string&)>& said) {
  for (const auto& line : session::end_lines(r, argv, deadline, said))
    std::fprintf(stderr, "chock: %s\n", line.c_str());
  write_result_file(result_file, r);
  return r.exit_status();
}

void write_result(const Result& result, const std::string& result_file) {
  write_result_file(result_file, result);
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
