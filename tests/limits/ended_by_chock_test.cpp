// Issue 53, class 9: a call stopped by Chock itself (its --timeout, a
// SIGTERM or SIGINT to chock) lost what the keeper had counted: the
// write-xor-execute refusals, the filter's kills and the memory peak read 0
// in --result, and no line said why the program had hung. The keeper is now
// asked to end the call and report, as at any end.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "process.hpp"

namespace {

using chock::test::Output;
using chock::test::program;
using chock::test::TempDir;

struct Ended {
  Output out;
  nlohmann::json result;
};

// One rwx mapping refused, one process killed by the filter (ptrace), then
// 96 MiB held for `seconds`; under `chock sandbox FLAGS`, which `signal`
// (when not 0) reaches 4 s after its start.
Ended run_call(const std::vector<std::string>& flags, unsigned seconds, int signal = 0) {
  TempDir dir("chock-ended");
  const std::string result = dir / "result.json";
  std::vector<std::string> args{"sandbox", "--ro", chock::test::stage_dir(), "--result", result};
  args.insert(args.end(), flags.begin(), flags.end());
  args.insert(args.end(),
              {"--", "sh", "-c", "\"$0\" mmap_rwx; \"$0\" ptrace; \"$1\" hold 96 " + std::to_string(seconds),
               program("attack"), program("limit-bomb")});
  chock::test::RunOptions o;
  o.signal = signal;
  o.signal_after = std::chrono::milliseconds(4000);
  Ended e;
  e.out = chock::test::chock(args, o);
  if (chock::test::exists(result)) e.result = nlohmann::json::parse(chock::test::read_file(result));
  return e;
}

void expect_counted(const Ended& e, const std::string& how) {
  SCOPED_TRACE(how);
  ASSERT_TRUE(e.result.is_object()) << e.out.err;
  EXPECT_EQ(e.result["write_execute_refused"], 1) << e.result.dump();
  EXPECT_EQ(e.result["filter_kills"]["count"], 1) << e.result.dump();
  ASSERT_EQ(e.result["filter_kills"]["first"].size(), 1U) << e.result.dump();
  EXPECT_EQ(e.result["filter_kills"]["first"][0]["call"], "ptrace");
  // Measured by the keeper where no cgroup of Chock's bounds memory.
  if (e.result["limits"].contains("memory_measured")) {
    EXPECT_GE(e.result["limits"]["memory_measured"]["peak"].get<std::uint64_t>(), 96ULL << 20)
        << e.result.dump();
  }
  EXPECT_NE(
      e.out.err.find("chock: the sandbox refused 1 writable and executable mapping (write-xor-execute)"),
      std::string::npos)
      << e.out.err;
  EXPECT_NE(e.out.err.find("was killed for calling `ptrace`, which the sandbox refuses"), std::string::npos)
      << e.out.err;
}

TEST(EndedByChock, ATimeoutOrASignalToChockLosesNoneOfTheCallsCounters) {
  // The neighbour: the same call ending on its own.
  const Ended own = run_call({}, 1);
  EXPECT_EQ(own.out.status, 0) << own.out.err;
  expect_counted(own, "ended on its own");

  const Ended timeout = run_call({"--timeout", "4"}, 100);
  EXPECT_EQ(timeout.out.status, 128 + SIGKILL) << timeout.out.err;
  EXPECT_EQ(timeout.result["timed_out"], true) << timeout.result.dump();
  EXPECT_NE(timeout.out.err.find("chock: the call ran past its timeout"), std::string::npos)
      << timeout.out.err;
  expect_counted(timeout, "--timeout");

  for (int signal : {SIGTERM, SIGINT}) {
    const Ended cancelled = run_call({}, 100, signal);
    EXPECT_EQ(cancelled.result["cancelled"], true) << cancelled.result.dump() << cancelled.out.err;
    EXPECT_NE(cancelled.out.err.find("chock: the call was cancelled"), std::string::npos)
        << cancelled.out.err;
    expect_counted(cancelled, sigabbrev_np(signal));
  }
}

}  // namespace
