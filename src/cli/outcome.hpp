// What `chock sandbox` and `chock run` say about a call's end, and how the
// caller's Ctrl-C reaches it.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "chock/error.hpp"
#include "chock/result.hpp"
#include "util/fd.hpp"

namespace chock::cli {

// Prints Chock's own line about how the call ended (a signal, a setup step,
// a missing command, a timeout), writes `result_file` if given, and returns
// the exit status for `chock`.
// `deadline` says which deadline a timed-out call met ("30 min, Chock's default");
// a line `said` already (a refusal said as it happened) is not said again.
int finish(const Result& result, const std::vector<std::string>& argv, const std::string& result_file,
           const std::string& deadline = {}, const std::function<bool(const std::string&)>& said = {});

// Writes `result_file` (if given) with the call's result as JSON.
void write_result(const Result& result, const std::string& result_file);

// A failure before anything started: one line, the --result file, 125.
int refuse(const Error& error, const std::string& result_file);

// While alive, SIGINT, SIGTERM and SIGHUP are blocked and readable from
// fd(); the call is cancelled when it becomes readable.
class CancelSignals {
 public:
  CancelSignals();
  ~CancelSignals();
  CancelSignals(const CancelSignals&) = delete;
  CancelSignals& operator=(const CancelSignals&) = delete;
  [[nodiscard]] int fd() const { return fd_.get(); }

 private:
  UniqueFd fd_;
};

}  // namespace chock::cli
