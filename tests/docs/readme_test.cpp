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
  // A --keep session is pruned when named (unnamed, prune leaves it).
  Output prune = f.chock({"workspace", "prune", id});
  EXPECT_EQ(prune.status, 0) << describe(prune);
  EXPECT_NE(prune.err.find("pruned 1 session(s)"), std::string::npos) << describe(prune);
}

// The walk-through of README.md's "The main job", its lines as written, in
// one shell: the paths it names are a temporary directory's, and ID is the
// one session left after the --keep line (the first call's was removed).
TEST(Readme, TheWalkThroughRunsLineByLineAsWritten) {
  const std::string examples = CHOCK_EXAMPLES_DIR;
  const std::string readme = examples.substr(0, examples.rfind('/')) + "/README.md";
  if (::access(readme.c_str(), R_OK) != 0 || ::access((examples + "/greeter/Makefile").c_str(), R_OK) != 0)
    GTEST_SKIP() << readme << " is not readable by this uid (the source tree is private)";
  if (::access("/usr/bin/make", X_OK) != 0 || ::access("/usr/bin/cc", X_OK) != 0)
    GTEST_SKIP() << "make and cc are not installed (scripts/install-deps installs build-essential)";
  const std::string text = read_file(readme);
  const auto section = text.find("## The main job");
  ASSERT_NE(section, std::string::npos);
  const auto begin = text.find("```sh\n", section);
  const auto end = text.find("```\n", begin + 6);
  ASSERT_NE(begin, std::string::npos);
  ASSERT_NE(end, std::string::npos);
  std::string block = text.substr(begin + 6, end - begin - 6);
  TempDir dir("chock-walk");
  auto replace_all = [&](const std::string& from, const std::string& to) {
    for (auto at = block.find(from); at != std::string::npos; at = block.find(from, at + to.size()))
      block.replace(at, from.size(), to);
  };
  ASSERT_NE(block.find("chock=$PWD/build/bin/chock"), std::string::npos) << block;
  replace_all("chock=$PWD/build/bin/chock", "chock=" + chock_binary());
  replace_all("cp -r examples/greeter", "cp -r " + examples + "/greeter");
  replace_all("/tmp/greeter", dir.path() + "/greeter");
  replace_all(" ID ", " \"$id\" ");
  // After the line that keeps a session, ID is that session.
  const std::string keep_line = "$chock run --keep -- make test";
  const auto keep = block.find(keep_line);
  ASSERT_NE(keep, std::string::npos) << block;
  block.insert(block.find('\n', keep) + 1, "id=$(ls \"$XDG_DATA_HOME/chock/workspaces\")\n");
  RunOptions o;
  o.cwd = dir.path();
  o.env = {{"XDG_DATA_HOME", dir.path() + "/data"},
           {"XDG_STATE_HOME", dir.path() + "/state"},
           {"XDG_CONFIG_HOME", dir.path() + "/config"},
           {"GIT_CONFIG_GLOBAL", "/dev/null"}};
  o.timeout = std::chrono::seconds(120);
  Output walk = run_process({"sh", "-ec", block}, o);
  ASSERT_EQ(walk.status, 0) << block << "\n" << describe(walk);
  EXPECT_NE(walk.out.find("greet_test: ok"), std::string::npos) << describe(walk);
  EXPECT_NE(walk.err.find("removed: its call left no commit"), std::string::npos) << describe(walk);
  EXPECT_NE(walk.err.find("chock: applied 1 commit of session "), std::string::npos) << describe(walk);
  EXPECT_NE(walk.err.find("chock: pruned 1 session(s)"), std::string::npos) << describe(walk);
  EXPECT_NE(read_file(dir.path() + "/greeter/greet.c").find("Hi, %s!"), std::string::npos);
}

}  // namespace
}  // namespace chock::test::ws
