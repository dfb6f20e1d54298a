// --net filtered against --net none, in one run: a call's start-up, and
// against the direct veth path of the test internet, a connection's latency
// and the throughput of a 100 MiB transfer through Chock's relay. Needs the
// test internet:
//   build/bin/chock-test-world build/bin/relay_bench
// (figures in bench/README.md).
//
// The measurements inside a call are made by this same binary, run in the
// call as `relay_bench --in-call connect|get ...`, which prints its figure.
#include <arpa/inet.h>
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "chock/net.hpp"
#include "chock/sandbox.hpp"

namespace {

using Clock = std::chrono::steady_clock;
constexpr std::uint64_t kTransfer = 100ULL << 20;
constexpr int kConnects = 500;

// ---- inside a call (or on the host, for the direct path) -------------------

sockaddr_storage lookup(const char* host, const char* port) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_family = AF_INET;
  addrinfo* found = nullptr;
  sockaddr_storage out{};
  if (getaddrinfo(host, port, &hints, &found) != 0) {
    std::fprintf(stderr, "relay_bench: %s does not resolve\n", host);
    std::exit(2);
  }
  std::memcpy(&out, found->ai_addr, found->ai_addrlen);
  freeaddrinfo(found);
  return out;
}

// Connect, then read to the end: port 9 accepts and closes at once, so the
// end arrives once the whole path is up (through the relay: the judge, its
// lookup, its dial) and down again. The median of kConnects, in µs.
double connect_median_us(const char* host) {
  const sockaddr_storage to = lookup(host, "9");
  std::vector<double> us;
  for (int i = 0; i < kConnects; ++i) {
    const auto start = Clock::now();
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (connect(fd, reinterpret_cast<const sockaddr*>(&to), sizeof(sockaddr_in)) != 0) return -1;
    char byte;
    while (read(fd, &byte, 1) > 0) {
    }
    const linger now{1, 0};
    setsockopt(fd, SOL_SOCKET, SO_LINGER, &now, sizeof now);
    close(fd);
    us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - start).count());
  }
  std::sort(us.begin(), us.end());
  return us[us.size() / 2];
}

// One GET of kTransfer bytes over HTTP/1.0; the seconds from connect to the
// last byte, or -1 when fewer bytes came.
double transfer_seconds(const char* host) {
  const sockaddr_storage to = lookup(host, "80");
  const auto start = Clock::now();
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (connect(fd, reinterpret_cast<const sockaddr*>(&to), sizeof(sockaddr_in)) != 0) return -1;
  const std::string request = "GET /stream?n=" + std::to_string(kTransfer) + " HTTP/1.0\r\nHost: www\r\n\r\n";
  if (write(fd, request.data(), request.size()) != static_cast<ssize_t>(request.size())) return -1;
  std::vector<char> buf(1 << 20);
  std::uint64_t got = 0;
  for (ssize_t n; (n = read(fd, buf.data(), buf.size())) > 0;) got += static_cast<std::uint64_t>(n);
  close(fd);
  const double s = std::chrono::duration<double>(Clock::now() - start).count();
  return got >= kTransfer ? s : -1;  // the headers come on top
}

// ---- the benchmarks --------------------------------------------------------

bool in_world(benchmark::State& state) {
  if (std::getenv("CHOCK_WORLD") != nullptr) return true;
  state.SkipWithError("run inside the test internet: build/bin/chock-test-world build/bin/relay_bench");
  return false;
}

std::string self_dir() {
  char path[4096];
  const ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
  path[n > 0 ? n : 0] = '\0';
  std::string p(path);
  return p.substr(0, p.rfind('/'));
}

chock::Config call(chock::Network network, std::vector<std::string> argv) {
  chock::Config c;
  c.argv = std::move(argv);
  c.env = std::vector<std::string>{"PATH=/usr/bin:/bin"};
  c.network = network;
  c.binds.push_back({self_dir(), "", chock::Access::read_only});
  chock::net::JudgeOptions once;
  once.lookup_once = true;  // as chock run's judge
  if (network == chock::Network::filtered)
    c.judge = std::make_shared<chock::net::Judge>(
        [](const std::string& action) {
          const bool ok = action.starts_with("net.connect.test.chock.");
          return chock::net::Ruling{ok, ok ? "allow" : "deny", "bench",
                                    ok ? "" : action + " is denied by the bench"};
        },
        once);
  return c;
}

// What a call printed on stdout (its one figure), or -1.
double figure_of(chock::Config c) {
  int out[2];
  if (pipe2(out, O_CLOEXEC) != 0) return -1;
  c.stdio = {0, out[1], 2};
  auto r = chock::run(c);
  close(out[1]);
  char text[64] = {};
  const ssize_t n = read(out[0], text, sizeof text - 1);
  close(out[0]);
  if (!r || r->exit_status() != 0 || n <= 0) return -1;
  return std::atof(text);
}

void CallStart(benchmark::State& state, chock::Network network) {
  if (!in_world(state)) return;
  const chock::Config c = call(network, {"/bin/true"});
  for (auto _ : state) {
    auto r = chock::run(c);
    if (!r || r->exit_status() != 0) {
      state.SkipWithError("the call failed");
      break;
    }
  }
}
BENCHMARK_CAPTURE(CallStart, None, chock::Network::none)->Unit(benchmark::kMillisecond)->Iterations(200);
BENCHMARK_CAPTURE(CallStart, Filtered, chock::Network::filtered)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(200);

// The two, one after the other in the same loop, so both see the same
// machine: the medians of each, and of the difference of each pair.
void CallStartInterleaved(benchmark::State& state) {
  if (!in_world(state)) return;
  const chock::Config none = call(chock::Network::none, {"/bin/true"});
  const chock::Config filtered = call(chock::Network::filtered, {"/bin/true"});
  std::vector<double> a, b, extra;
  for (auto _ : state) {
    const auto t0 = Clock::now();
    auto r1 = chock::run(none);
    const auto t1 = Clock::now();
    auto r2 = chock::run(filtered);
    const auto t2 = Clock::now();
    if (!r1 || !r2 || r1->exit_status() != 0 || r2->exit_status() != 0) {
      state.SkipWithError("a call failed");
      break;
    }
    a.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    b.push_back(std::chrono::duration<double, std::milli>(t2 - t1).count());
    extra.push_back(b.back() - a.back());
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0.0 : v[v.size() / 2];
  };
  state.counters["none_ms"] = median(a);
  state.counters["filtered_ms"] = median(b);
  state.counters["extra_ms"] = median(extra);
}
BENCHMARK(CallStartInterleaved)->Unit(benchmark::kMillisecond)->Iterations(300);

void ConnectDirect(benchmark::State& state) {
  if (!in_world(state)) return;
  for (auto _ : state) state.SetIterationTime(connect_median_us("198.51.100.10") / 1e6);
}
BENCHMARK(ConnectDirect)->UseManualTime()->Unit(benchmark::kMicrosecond)->Iterations(1);

void ConnectThroughRelay(benchmark::State& state) {
  if (!in_world(state)) return;
  const std::string self = self_dir() + "/relay_bench";
  for (auto _ : state) {
    const double us =
        figure_of(call(chock::Network::filtered, {self, "--in-call", "connect", "www.chock.test"}));
    if (us < 0) {
      state.SkipWithError("the call failed");
      break;
    }
    state.SetIterationTime(us / 1e6);
  }
}
BENCHMARK(ConnectThroughRelay)->UseManualTime()->Unit(benchmark::kMicrosecond)->Iterations(1);

void TransferDirect(benchmark::State& state) {
  if (!in_world(state)) return;
  for (auto _ : state) state.SetIterationTime(transfer_seconds("198.51.100.10"));
  state.SetBytesProcessed(static_cast<std::int64_t>(kTransfer) * state.iterations());
}
BENCHMARK(TransferDirect)->UseManualTime()->Unit(benchmark::kMillisecond)->Iterations(1);

void TransferThroughRelay(benchmark::State& state) {
  if (!in_world(state)) return;
  const std::string self = self_dir() + "/relay_bench";
  for (auto _ : state) {
    const double s = figure_of(call(chock::Network::filtered, {self, "--in-call", "get", "www.chock.test"}));
    if (s < 0) {
      state.SkipWithError("the transfer failed");
      break;
    }
    state.SetIterationTime(s);
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(kTransfer) * state.iterations());
}
BENCHMARK(TransferThroughRelay)->UseManualTime()->Unit(benchmark::kMillisecond)->Iterations(1);

}  // namespace

int main(int argc, char** argv) {
  if (argc == 4 && std::strcmp(argv[1], "--in-call") == 0) {
    const double v =
        std::strcmp(argv[2], "connect") == 0 ? connect_median_us(argv[3]) : transfer_seconds(argv[3]);
    std::printf("%.6f\n", v);
    return v < 0 ? 1 : 0;
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
