// A connection through the network judge (action judged by the policy
// table, name resolved by c-ares, every address checked, the checked address
// dialled) against a plain connect(2) to the same address, in the same run.
// Needs the test internet: run it as
//   build/bin/chock-test-world build/bin/net_bench
// (figures in bench/README.md). Port 9 of the test internet accepts and closes
// at once, so the figures are Chock's and the kernel's, not a server's.
#include <arpa/inet.h>
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstdlib>

#include "chock/net.hpp"
#include "policy/policy.hpp"

namespace {

bool in_world(benchmark::State& state) {
  if (std::getenv("CHOCK_WORLD") != nullptr) return true;
  state.SkipWithError("run inside the test internet: build/bin/chock-test-world build/bin/net_bench");
  return false;
}

// Closed with a reset, so that thousands of connections leave no TIME_WAIT
// behind to run the ephemeral ports out; the same for both sides of the comparison.
void reset_on_close(int fd) {
  const linger now{1, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &now, sizeof now);
}

chock::net::Judge judge_from_table() {
  static chock::policy::Table table = [] {
    chock::policy::Table t;
    t.add(chock::policy::Layer::project,
          {"net.connect.test.chock.*", chock::policy::Decision::allow, "bench"});
    t.add(chock::policy::Layer::project,
          {"net.connect.ip4.198.51.*", chock::policy::Decision::allow, "bench"});
    return t;
  }();
  return chock::net::Judge([](const std::string& action) {
    const auto a = table.decide(action);
    return chock::net::Ruling{a.decision == chock::policy::Decision::allow,
                              chock::policy::decision_name(a.decision),
                              a.deciding_rule ? a.deciding_rule->origin : "", ""};
  });
}

void PlainConnect(benchmark::State& state) {
  if (!in_world(state)) return;
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(9);
  ::inet_pton(AF_INET, "198.51.100.10", &to.sin_addr);
  for (auto _ : state) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const int r = ::connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to);
    reset_on_close(fd);
    ::close(fd);
    if (r != 0) {
      state.SkipWithError("connect failed");
      break;
    }
  }
}
BENCHMARK(PlainConnect)->Unit(benchmark::kMicrosecond)->Iterations(2000);

// The judge's whole path to `host`:9: the action decided by the table, the
// name resolved (an address is its own answer), every address checked, dialled.
void JudgedConnect(benchmark::State& state, const char* host_text) {
  if (!in_world(state)) return;
  auto judge = judge_from_table();
  const auto host = *chock::net::parse_host(host_text);
  for (auto _ : state) {
    auto c = judge.connect(host, 9);
    if (!c) {
      state.SkipWithError(c.error().message().c_str());
      break;
    }
    reset_on_close(c->fd());
  }
}
BENCHMARK_CAPTURE(JudgedConnect, Address, "198.51.100.10")->Unit(benchmark::kMicrosecond)->Iterations(2000);
BENCHMARK_CAPTURE(JudgedConnect, Name, "www.chock.test")->Unit(benchmark::kMicrosecond)->Iterations(2000);

void ResolveName(benchmark::State& state) {
  if (!in_world(state)) return;
  const auto host = *chock::net::parse_host("www.chock.test");
  for (auto _ : state) {
    auto found = chock::net::resolve(host, std::chrono::milliseconds(2000));
    if (!found) {
      state.SkipWithError(found.error().message().c_str());
      break;
    }
  }
}
BENCHMARK(ResolveName)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
