// The README's main job, as written there: the sample project is built and
// tested inside, a change is committed inside and applied.
#include <unistd.h>

#include "support.hpp"

namespace chock::test::ws {
namespace {

TEST(Readme, TheMainJobRunsOnTheSampleProject) {
  const std::string sample = CHOCK_EXAMPLES_DIR "/greeter";
  if (::access((sample + "/Makefile").c_str(), R_OK) != 0)
    GTEST_SKIP() << sample << " is not readable by this uid (the source tree is private)";
  if (::access("/usr/bin/make", X_OK) != 0 || ::access("/usr/bin/cc", X_OK) != 0)
    GTEST_SKIP() << "make and cc are not installed (scripts/install-deps installs build-essential)";
  Fixture f;
  for (const char* name : {"Makefile", "greet.c", "greet_test.c", ".gitignore"})
    write_file(f.file(name), read_file(sample + "/" + name));
  git_ok(f.project(), {"init", "-q", "-b", "main"});
  f.commit_all("greeter");

  Output once = f.chock({"run", "--", "make", "test"});
  ASSERT_EQ(once.status, 0) << describe(once);
  EXPECT_NE(once.out.find("greet_test: ok"), std::string::npos) << once.out;
  EXPECT_NE(once.err.find("chock: session " + session_id(once) + " removed: its call left no commit"),
            std::string::npos)
      << describe(once);
  Output test = f.chock({"run", "--keep", "--", "make", "test"});
  ASSERT_EQ(test.status, 0) << describe(test);
  std::string id = session_id(test);
  EXPECT_NE(test.err.find("continue it with --session " + id), std::string::npos) << describe(test);
  EXPECT_FALSE(exists(f.file("greet_test"))) << "the build reached the project";

  Output change =
      f.chock({"run", "--session", id, "--", "sh", "-c",
               "sed -i s/Hello/Hi/ greet.c greet_test.c && make test && git commit -qam 'Say hi'"});
  ASSERT_EQ(change.status, 0) << describe(change);
  Output apply = f.chock({"apply", id, "--yes"});
  ASSERT_EQ(apply.status, 0) << describe(apply);
  EXPECT_EQ(git_ok(f.project(), {"log", "-1", "--format=%s"}), "Say hi");
  EXPECT_NE(read_file(f.file("greet.c")).find("Hi, %s!"), std::string::npos);
  Output prune = f.chock({"workspace", "prune"});
  EXPECT_EQ(prune.status, 0) << describe(prune);
  EXPECT_NE(prune.err.find("pruned 1 session(s)"), std::string::npos) << describe(prune);
}

}  // namespace
}  // namespace chock::test::ws
