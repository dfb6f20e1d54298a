// main() for the integration suites. ctest runs each suite twice: as the
// caller (".root") and dropped to an unprivileged uid (".user"). A ".root" run
// by someone who is not root skips, with exit 77, rather than repeating the
// unprivileged run under the wrong name.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

int main(int argc, char** argv) {
  const char* expect_root = std::getenv("CHOCK_TEST_EXPECT_ROOT");
  if (expect_root != nullptr && *expect_root == '1' && geteuid() != 0) {
    std::fprintf(stderr, "skipped: this run is the root caller's, and this process is not root\n");
    return 77;
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
