// Long work says where it is: making a workspace of many files prints
// "files done of files total" on a terminal, and nothing when stderr is not one.
#include "support.hpp"

namespace chock::test::ws {
namespace {

// A repository of `n` files (one blob, many names), made without writing them.
void init_many_files(Fixture& f, int n) {
  git_ok(f.project(), {"init", "-q", "-b", "main"});
  const std::string blob = git(f.project(), {"hash-object", "-w", "--stdin"}, "same\n").out.substr(0, 40);
  std::string listing;
  for (int i = 0; i < n; ++i)
    listing += "100644 " + blob + "\td" + std::to_string(i / 1000) + "/f" + std::to_string(i) + "\n";
  ASSERT_EQ(git(f.project(), {"update-index", "--index-info"}, listing).status, 0);
  const std::string tree = git_ok(f.project(), {"write-tree"});
  const std::string commit = git_ok(f.project(), {"commit-tree", tree, "-m", "many"});
  git_ok(f.project(), {"update-ref", "refs/heads/main", commit});
}

// CHOCK_PROGRESS_AFTER_MS=0: the step reports from its start, so the test
// does not depend on how fast this disk writes files.
TEST(Progress, ACheckoutSaysHowFarItIsOnATerminalAndNothingElsewhere) {
  Fixture f;
  init_many_files(f, 3000);
  ::setenv("CHOCK_PROGRESS_AFTER_MS", "0", 1);
  Output tty = f.on_terminal({"run", "--", "true"}, "");
  Output piped = f.chock({"run", "--", "true"});
  ::unsetenv("CHOCK_PROGRESS_AFTER_MS");
  ASSERT_EQ(tty.status, 0) << describe(tty);
  EXPECT_NE(tty.out.find("\rchock: checking out "), std::string::npos) << describe(tty);
  EXPECT_NE(tty.out.find(": 0 of 3000 files"), std::string::npos) << describe(tty);
  EXPECT_NE(tty.out.find(": 3000 of 3000 files\r\n"), std::string::npos) << describe(tty);
  ASSERT_EQ(piped.status, 0) << describe(piped);
  EXPECT_EQ(piped.err.find("checking out"), std::string::npos) << describe(piped);
  // Under a second, the default, a small checkout says nothing even on a terminal.
  Fixture small;
  small.init_git();
  Output quick = small.on_terminal({"run", "--", "true"}, "");
  EXPECT_EQ(quick.status, 0) << describe(quick);
  EXPECT_EQ(quick.out.find("checking out"), std::string::npos) << describe(quick);
}

}  // namespace
}  // namespace chock::test::ws
