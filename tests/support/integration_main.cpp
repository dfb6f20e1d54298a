// main() for the integration suites. ctest runs each suite twice: as the
// caller (".root") and dropped to an unprivileged uid (".user"). A ".root" run
// by someone who is not root skips, with exit 77, rather than repeating the
// unprivileged run under the wrong name.
//
// Every suite runs with a HOME and XDG directories of its own, made here and
// removed at the end: a test that forgets to point Chock (or npm, or git) at
// its temporary directory writes there, never into the person's home. CI
// checks that a run left nothing in $HOME (.ci/run).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "process.hpp"

int main(int argc, char** argv) {
  const char* expect_root = std::getenv("CHOCK_TEST_EXPECT_ROOT");
  if (expect_root != nullptr && *expect_root == '1' && geteuid() != 0) {
    std::fprintf(stderr, "skipped: this run is the root caller's, and this process is not root\n");
    return 77;
  }
#ifdef CHOCK_TEST_IN_WORLD
  // The network suites run inside the test internet (tests/support/net/world.sh).
  if (std::getenv("CHOCK_WORLD") == nullptr && std::getenv("CHOCK_WORLD_MISSING") == nullptr) {
    const std::string world = chock::test::program("chock-test-world");
    std::vector<char*> args{const_cast<char*>("sh"), const_cast<char*>(world.c_str())};
    for (int i = 0; i < argc; ++i) args.push_back(argv[i]);
    args.push_back(nullptr);
    ::execv("/bin/sh", args.data());
    std::perror("chock: exec chock-test-world");
    return 1;
  }
#endif
  const chock::test::TempDir home("chock-test-home");
  for (const auto& [name, sub] : {std::pair<const char*, const char*>{"HOME", ""},
                                  {"XDG_DATA_HOME", "/.local/share"},
                                  {"XDG_STATE_HOME", "/.local/state"},
                                  {"XDG_CONFIG_HOME", "/.config"},
                                  {"XDG_CACHE_HOME", "/.cache"}})
    ::setenv(name, (home.path() + sub).c_str(), 1);
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
