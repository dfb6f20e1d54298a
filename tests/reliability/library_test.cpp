// The library's own load: chock::run from four threads of one process, and
// from a program that ignores SIGCHLD. Apart from the suites that run the
// chock binary, so that CI also builds and runs it under AddressSanitizer,
// whose LeakSanitizer reports at exit what the calls leaked.
#include <dirent.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "chock/sandbox.hpp"
#include "reliability_support.hpp"

namespace chock::test::reliability {
namespace {

// The library from threads of one process: no descriptor and no memory
// growth past a warm-up.
std::size_t open_fds() {
  std::size_t n = 0;
  if (DIR* d = ::opendir("/proc/self/fd")) {
    while (dirent* e = ::readdir(d))
      if (e->d_name[0] != '.') ++n;
    ::closedir(d);
  }
  return n - 1;
}

std::size_t rss_kib() {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);)
    if (line.starts_with("VmRSS:")) return std::stoul(line.substr(6));
  return 0;
}

TEST(Library, RunsFromFourThreadsGrowNoDescriptorsOrMemory) {
  const std::size_t per_thread = profile_count(50, 250);
  Config c;
  c.argv = {"/bin/true"};
  for (int i = 0; i < 8; ++i) ASSERT_TRUE(chock::run(c)) << "warm-up";
  const std::size_t fds = open_fds();
  const std::size_t rss = rss_kib();
  std::atomic<std::size_t> failures{0};
  std::mutex first_mutex;
  std::string first;  // what the first failed call said
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (std::size_t i = 0; i < per_thread; ++i) {
        auto r = chock::run(c);
        if (r && r->exit_status() == 0) continue;
        if (failures++ == 0) {
          std::lock_guard<std::mutex> hold(first_mutex);
          first = !r ? r.error().message()
                  : r->setup_failure
                      ? "setup failed at " + r->setup_failure->step + ": " +
                            std::strerror(r->setup_failure->code) + " " + r->setup_failure->detail
                      : "exit status " + std::to_string(r->exit_status());
        }
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0U) << "the first: " << first;
  EXPECT_EQ(open_fds(), fds);
#if defined(__SANITIZE_ADDRESS__)
  // AddressSanitizer keeps freed memory out of use for a while (its
  // quarantine), so VmRSS grows by design; its LeakSanitizer judges at exit.
#else
  // Some growth is the allocator's arenas of the four threads; a leak of a
  // call's plan (kilobytes) times the calls would pass this.
  EXPECT_LT(rss_kib(), rss + 16 * 1024) << "VmRSS " << rss << " KiB before, " << rss_kib() << " after";
#endif
  std::printf(
      "reliability: %zu library calls from 4 threads; descriptors %zu before, %zu after; VmRSS %zu KiB "
      "before, %zu after\n",
      4 * per_thread, fds, open_fds(), rss, rss_kib());
}

// A program that ignores SIGCHLD has its children reaped by the kernel at
// once: the library must not depend on waiting for them itself.
TEST(Library, RunsInAProgramThatIgnoresSigchld) {
  struct sigaction old {};
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  ASSERT_EQ(::sigaction(SIGCHLD, &ignore, &old), 0);
  Config c;
  c.argv = {"/bin/sh", "-c", "exit 3"};
  auto exited = chock::run(c);
  c.argv = {"/bin/sh", "-c", "kill -TERM $$"};
  auto signalled = chock::run(c);
  ::sigaction(SIGCHLD, &old, nullptr);
  ASSERT_TRUE(exited) << exited.error().message();
  EXPECT_EQ(exited->exit_code, 3);
  EXPECT_FALSE(exited->report_lost);
  ASSERT_TRUE(signalled) << signalled.error().message();
  EXPECT_EQ(signalled->signal, SIGTERM);
}

}  // namespace
}  // namespace chock::test::reliability
