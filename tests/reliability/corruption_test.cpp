// Corruption: a session whose record is damaged or gone, or whose log ends
// in a cut line. Each is named with its file and what to do; nothing of the
// session is touched; every other session still lists and works; a cut log
// line is found by `sessions verify` and later calls still chain.
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

#include "reliability_support.hpp"
#include "support.hpp"

namespace chock::test::reliability {
namespace {

using ws::describe;
using ws::Fixture;

std::string new_session(const Fixture& f) {
  return ws::kept_session(f, "echo work > work.txt");
}

TEST(Corruption, ADamagedSessionRecordIsNamedAndEveryOtherSessionStillListsAndWorks) {
  Fixture f;
  f.init_git();
  const std::string cut = new_session(f), garbled = new_session(f), gone = new_session(f),
                    good = new_session(f);
  const std::string json = "/session.json";
  const std::string text = test::read_file(f.sessions() + "/" + cut + json);
  write_file(f.sessions() + "/" + cut + json, text.substr(0, text.size() / 2), 0600);
  write_file(f.sessions() + "/" + garbled + json, "{\"id\": 12, \"kind\": [", 0600);
  ASSERT_EQ(::unlink((f.sessions() + "/" + gone + json).c_str()), 0);
  for (const auto& id : {cut, garbled, gone}) {
    const std::string dir = f.sessions() + "/" + id;
    Output o = f.run({"--session", id}, "echo ran");
    EXPECT_NE(o.status, 0) << describe(o);
    EXPECT_EQ(o.out, "");
    EXPECT_EQ(lines_in(o.err), 1U) << describe(o);
    EXPECT_TRUE(has(o.err, "chock: session " + id + ": " + dir + "/session.json ")) << describe(o);
    EXPECT_TRUE(has(o.err, "nothing in it is lost")) << describe(o);
    Output removed = f.chock({"workspace", "remove", id, "--force"});
    EXPECT_NE(removed.status, 0) << describe(removed);
    EXPECT_TRUE(has(removed.err, dir + "/session.json")) << describe(removed);
    EXPECT_TRUE(exists(dir + "/upper/work.txt")) << "a damaged session's work was removed";
  }
  Output list = f.chock({"workspace", "list"});
  EXPECT_EQ(list.status, 0) << describe(list);
  for (const auto& id : {cut, garbled, gone, good}) EXPECT_TRUE(has(list.out, id)) << list.out;
  Output works = f.run({"--session", good}, "cat work.txt");
  EXPECT_EQ(works.status, 0) << describe(works);
  EXPECT_EQ(works.out, "work\n");
}

TEST(Corruption, ASessionWithAMissingPartIsNamedAndTheOthersWork) {
  Fixture f;
  f.init_git();
  const std::string broken = new_session(f), good = new_session(f);
  // Its own layer over the shared base.
  remove_tree(f.sessions() + "/" + broken + "/upper");
  Output o = f.run({"--session", broken}, "echo ran");
  EXPECT_NE(o.status, 0) << describe(o);
  EXPECT_EQ(o.out, "");
  EXPECT_EQ(lines_in(o.err), 1U) << describe(o);
  EXPECT_TRUE(has(o.err, broken)) << describe(o);
  Output list = f.chock({"workspace", "list"});
  EXPECT_EQ(list.status, 0) << describe(list);
  EXPECT_TRUE(has(list.out, broken) && has(list.out, good)) << list.out;
  Output works = f.run({"--session", good}, "cat work.txt");
  EXPECT_EQ(works.status, 0) << describe(works);
}

// The shared base of a commit removed by hand under its sessions: a call
// says in one line that it is gone and how to keep the session's commits.
TEST(Corruption, ASessionWhoseSharedBaseIsGoneSaysSoInOneLine) {
  Fixture f;
  f.init_git();
  const std::string id = new_session(f);
  const std::string bases = f.data() + "/chock/bases";
  ASSERT_EQ(run_process({"sh", "-c", "rm -rf " + bases + "/*-*[0-9a-f]"}).status, 0);
  Output o = f.run({"--session", id}, "echo ran");
  EXPECT_EQ(o.status, 125) << describe(o);
  EXPECT_EQ(o.out, "");
  EXPECT_EQ(lines_in(o.err), 1U) << describe(o);
  EXPECT_TRUE(has(o.err, "its shared base is gone")) << describe(o);
  EXPECT_TRUE(has(o.err, "chock workspace remove " + id + " --force")) << describe(o);
}

// A log whose last write was cut (chock killed, the disk full): verify names
// the line; the next call closes it and chains from its bytes; verify then
// says the log has a torn line and that every other line verifies.
TEST(Corruption, ACutLogLineIsFoundAndLaterCallsStillChain) {
  Fixture f;
  f.init_git();
  const std::string id = new_session(f);
  const std::string log = ws::log_path(f, id);
  ASSERT_FALSE(log.empty());
  const std::size_t before = ws::log_lines(f, id).size();
  {
    std::ofstream out(log, std::ios::binary | std::ios::app);
    out << "{\"ts\":\"2026-12-05T01:02:03Z\",\"event\":\"tool.res";
  }
  Output cut = f.chock({"sessions", "verify", id});
  EXPECT_NE(cut.status, 0) << describe(cut);
  EXPECT_TRUE(has(cut.out + cut.err, "has no newline at its end")) << describe(cut);
  Output call = f.run({"--session", id}, "cat work.txt");
  EXPECT_EQ(call.status, 0) << describe(call);
  Output again = f.run({"--session", id}, "true");
  EXPECT_EQ(again.status, 0) << describe(again);
  auto lines = ws::log_lines(f, id);
  EXPECT_GT(lines.size(), before + 2);
  EXPECT_TRUE(has(lines[before + 1], "\"torn_line\":" + std::to_string(before + 1))) << lines[before + 1];
  Output torn = f.chock({"sessions", "verify", id});
  EXPECT_NE(torn.status, 0) << describe(torn);
  EXPECT_TRUE(has(torn.out + torn.err, "line " + std::to_string(before + 1) + " is torn")) << describe(torn);
  EXPECT_TRUE(has(torn.out + torn.err, "every other line verifies, to line " + std::to_string(lines.size())))
      << describe(torn);
}

}  // namespace
}  // namespace chock::test::reliability
