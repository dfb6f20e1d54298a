// The test internet the network suites run in (tests/support/net/world.sh):
// where its logs are, and what its servers were asked.
#pragma once

#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "process.hpp"

namespace chock::test {

// Skips the test, naming why, when the world could not be made.
#define CHOCK_NEED_WORLD()                                                         \
  do {                                                                             \
    if (const char* why = std::getenv("CHOCK_WORLD_MISSING")) GTEST_SKIP() << why; \
  } while (0)
#define CHOCK_NEED_TLS()                                                          \
  do {                                                                            \
    if (const char* why = std::getenv("CHOCK_WORLD_NO_TLS")) GTEST_SKIP() << why; \
  } while (0)

std::string world_dir();
// How many queries the test DNS server got for `name` (any type).
int dns_queries(const std::string& name);
// The local addresses the HTTP servers were reached at, one per request, in order.
std::vector<std::string> http_locals();

using Rules = std::vector<std::pair<std::string, std::string>>;

// A project directory with a chock.zon of `rules` (lines of the .policy.rules list).
class NetProject {
 public:
  explicit NetProject(const Rules& rules);
  [[nodiscard]] const std::string& path() const { return dir_.path(); }
  // `chock fetch --project DIR ARGS...`
  Output fetch(const std::vector<std::string>& args, const RunOptions& options = {}) const;

 private:
  TempDir dir_;
};

}  // namespace chock::test
