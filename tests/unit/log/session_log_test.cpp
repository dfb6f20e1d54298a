// The session log on a real state directory: the chain, the head file, and
// each way of tampering with a log that verify must name.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <span>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "log/session_log.hpp"
#include "util/sha256.hpp"

namespace chock::log {
namespace {

// "2026-12-02T16:33:08.170Z": digits where the pattern has 'd' (std::regex
// trips GCC 12's -Wmaybe-uninitialized under the sanitizers).
bool is_rfc3339_millis(const std::string& ts) {
  const std::string shape = "dddd-dd-ddTdd:dd:dd.dddZ";
  if (ts.size() != shape.size()) return false;
  for (std::size_t i = 0; i < ts.size(); ++i) {
    bool ok = shape[i] == 'd' ? (ts[i] >= '0' && ts[i] <= '9') : ts[i] == shape[i];
    if (!ok) return false;
  }
  return true;
}

namespace stdfs = std::filesystem;

std::vector<std::string> read_lines(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

void write_lines(const std::string& path, const std::vector<std::string>& lines) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  for (const auto& line : lines) out << line << '\n';
}

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string head_of(const std::string& log_path) {
  return log_path.substr(0, log_path.size() - std::string(".jsonl").size()) + ".head";
}

class SessionLogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (stdfs::temp_directory_path() / "chock-log-test-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    root_ = stdfs::canonical(pattern).string();  // open() resolves the project's path too
    if (const char* old = std::getenv("XDG_STATE_HOME")) saved_state_ = old;
    ::setenv("XDG_STATE_HOME", (root_ + "/state").c_str(), 1);
    project_ = root_ + "/projects/app";
    stdfs::create_directories(project_);
  }
  void TearDown() override {
    if (saved_state_) {
      ::setenv("XDG_STATE_HOME", saved_state_->c_str(), 1);
    } else {
      ::unsetenv("XDG_STATE_HOME");
    }
    std::error_code ignored;
    stdfs::remove_all(root_, ignored);
  }

  // A log of five events, as a session writes them.
  std::string five_events(const std::string& session = "s1") {
    auto log = SessionLog::open(project_, session);
    EXPECT_TRUE(log) << log.error().message();
    if (!log) return {};
    const std::vector<std::pair<std::string_view, nlohmann::json>> events{
        {event::kSessionStart, {{"project", project_}}},
        {event::kSessionConfig, {{"chock_zon_sha256", sha256_hex("")}, {"allow_dirty", false}}},
        {event::kSandboxOpen, {{"write_execute", "strict"}, {"decision", "ask"}}},
        {event::kToolCall, {{"argv", {"make", "test"}}}},
        {event::kToolResult, {{"exit", 0}, {"duration_ms", 812}}},
    };
    for (const auto& [name, fields] : events) {
      auto appended = log->append(name, fields);
      EXPECT_TRUE(appended) << appended.error().message();
    }
    return log->path();
  }

  Verification verified(const std::string& path) {
    auto v = verify(path);
    EXPECT_TRUE(v) << v.error().message();
    return v ? *v : Verification{};
  }

  std::string root_;
  std::string project_;
  std::optional<std::string> saved_state_;
};

TEST_F(SessionLogTest, FiveEventsMakeAValidChain) {
  std::string path = five_events();
  Verification v = verified(path);
  EXPECT_TRUE(v.ok) << v.problem;
  EXPECT_EQ(v.lines, 5u);
  EXPECT_EQ(v.bad_line, 0u);

  EXPECT_EQ(path, root_ + "/state/chock/sessions/" + project_key(project_) + "/s1.jsonl");
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_EQ(::stat(stdfs::path(path).parent_path().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);

  auto lines = read_lines(path);
  ASSERT_EQ(lines.size(), 5u);
  // ts, event, session, prev come first and in that order, then the fields.
  EXPECT_EQ(lines[0].rfind("{\"ts\":\"", 0), 0u) << lines[0];
  EXPECT_NE(lines[0].find("\",\"event\":\"session.start\",\"session\":\"s1\",\"prev\":\"" +
                          std::string(64, '0') + "\",\"project\":"),
            std::string::npos)
      << lines[0];
  auto first = nlohmann::json::parse(lines[0]);
  EXPECT_TRUE(is_rfc3339_millis(first["ts"].get<std::string>())) << first["ts"];
  for (std::size_t i = 1; i < lines.size(); ++i) {
    EXPECT_EQ(nlohmann::json::parse(lines[i])["prev"], sha256_hex(lines[i - 1])) << "line " << i + 1;
  }
  auto head = nlohmann::json::parse(read_bytes(head_of(path)));
  EXPECT_EQ(head["lines"], 5);
  EXPECT_EQ(head["last"], sha256_hex(lines[4]));
}

TEST_F(SessionLogTest, AnEditedLineBreaksTheNextLinesPrev) {
  std::string path = five_events();
  auto lines = read_lines(path);
  auto at = lines[2].find("strict");
  ASSERT_NE(at, std::string::npos);
  lines[2][at] = 'S';  // still JSON, still its own prev: only line 4 can tell
  write_lines(path, lines);
  Verification v = verified(path);
  EXPECT_FALSE(v.ok);
  EXPECT_EQ(v.lines, 5u);
  EXPECT_EQ(v.bad_line, 4u);
  EXPECT_EQ(v.problem,
            "line 4: prev does not match the SHA-256 of line 3 (line 3 was edited, or a line after it was "
            "removed)");
}

TEST_F(SessionLogTest, ARemovedLineIsNamed) {
  std::string path = five_events();
  auto lines = read_lines(path);
  lines.erase(lines.begin() + 1);
  write_lines(path, lines);
  Verification v = verified(path);
  EXPECT_FALSE(v.ok);
  EXPECT_EQ(v.bad_line, 2u);
  EXPECT_EQ(v.problem.rfind("line 2: prev does not match the SHA-256 of line 1", 0), 0u) << v.problem;
}

TEST_F(SessionLogTest, ARemovedFirstLineIsNamed) {
  std::string path = five_events();
  auto lines = read_lines(path);
  lines.erase(lines.begin());
  write_lines(path, lines);
  Verification v = verified(path);
  EXPECT_FALSE(v.ok);
  EXPECT_EQ(v.bad_line, 1u);
  EXPECT_EQ(v.problem, "line 1: prev is not 64 zeros (lines before it were removed)");
}

TEST_F(SessionLogTest, ARemovedLastLineShowsThroughTheHeadFile) {
  std::string path = five_events();
  auto lines = read_lines(path);
  lines.pop_back();
  write_lines(path, lines);
  Verification v = verified(path);
  EXPECT_FALSE(v.ok);
  EXPECT_EQ(v.lines, 4u);
  EXPECT_EQ(v.bad_line, 5u);
  EXPECT_EQ(v.problem, "the log ends at line 4 but its head file says 5 lines (the last line was removed)");

  // Appending would hide the removal under a fresh, valid chain: refused.
  auto log = SessionLog::open(project_, "s1");
  ASSERT_TRUE(log) << log.error().message();
  auto appended = log->append(event::kSessionEnd, {});
  ASSERT_FALSE(appended);
  EXPECT_NE(appended.error().message().find("does not agree with its head file"), std::string::npos)
      << appended.error().message();
  EXPECT_EQ(read_lines(path).size(), 4u);
}

TEST_F(SessionLogTest, AnEditedLastLineShowsThroughTheHeadFile) {
  std::string path = five_events();
  auto lines = read_lines(path);
  // The duration's digits, not a "812" that the line's hashes may hold by chance.
  auto at = lines[4].find("\"duration_ms\":812");
  ASSERT_NE(at, std::string::npos) << lines[4];
  lines[4][at + std::string("\"duration_ms\":").size()] = '9';
  write_lines(path, lines);
  Verification v = verified(path);
  EXPECT_FALSE(v.ok);
  EXPECT_EQ(v.bad_line, 5u);
  EXPECT_EQ(v.problem.rfind("line 5: its SHA-256 is not the one the head file holds", 0), 0u) << v.problem;
}

TEST_F(SessionLogTest, ALineThatIsNotJsonIsNamed) {
  std::string path = five_events();
  auto lines = read_lines(path);
  lines[2] = "tool.call make test";
  write_lines(path, lines);
  Verification v = verified(path);
  EXPECT_FALSE(v.ok);
  EXPECT_EQ(v.bad_line, 3u);
  EXPECT_EQ(v.problem, "line 3: not JSON");
}

TEST_F(SessionLogTest, AMissingHeadFileIsAProblem) {
  std::string path = five_events();
  ASSERT_TRUE(stdfs::remove(head_of(path)));
  Verification v = verified(path);
  EXPECT_FALSE(v.ok);
  EXPECT_NE(v.problem.find("head file " + head_of(path) + " is missing"), std::string::npos) << v.problem;
}

// A write cut short (chock killed, the disk full) leaves a line without its
// newline: verify names it, the next append closes it and chains from its
// bytes, and the log then says it has a torn line, forever, while an edit of
// that line still shows.
TEST_F(SessionLogTest, ACutLineIsNamedAndTheNextAppendChainsPastIt) {
  std::string path = five_events();
  {
    std::ofstream out(path, std::ios::binary | std::ios::app);
    out << "{\"ts\":\"2025-";
  }
  Verification v = verified(path);
  EXPECT_FALSE(v.ok);
  EXPECT_EQ(v.bad_line, 6u);
  EXPECT_EQ(v.problem.rfind("line 6: has no newline at its end", 0), 0u) << v.problem;
  auto log = SessionLog::open(project_, "s1");
  ASSERT_TRUE(log);
  auto appended = log->append(event::kSessionEnd, {});
  ASSERT_TRUE(appended) << appended.error().message();
  ASSERT_TRUE(log->append(event::kToolCall, {{"argv", {"true"}}}));
  v = verified(path);
  EXPECT_FALSE(v.ok);
  EXPECT_EQ(v.lines, 8u);
  EXPECT_EQ(v.bad_line, 6u);
  EXPECT_EQ(v.torn_lines, std::vector<std::size_t>{6});
  EXPECT_NE(v.problem.find("line 6 is torn"), std::string::npos) << v.problem;
  EXPECT_NE(v.problem.find("every other line verifies, to line 8"), std::string::npos) << v.problem;
  auto lines = read_lines(path);
  ASSERT_EQ(lines.size(), 8u);
  EXPECT_EQ(lines[5], "{\"ts\":\"2025-");
  EXPECT_NE(lines[6].find("\"torn_line\":6"), std::string::npos) << lines[6];
  // The torn bytes are in the chain: changing them shows at the line after.
  lines[5] = "{\"ts\":\"2026-";
  write_lines(path, lines);
  v = verified(path);
  EXPECT_FALSE(v.ok);
  EXPECT_EQ(v.bad_line, 6u);
  EXPECT_EQ(v.problem, "line 6: not JSON") << v.problem;
}

TEST_F(SessionLogTest, AWriterThatStoppedBeforeItsHeadIsContinued) {
  auto log = SessionLog::open(project_, "s1");
  ASSERT_TRUE(log);
  ASSERT_TRUE(log->append(event::kSessionStart, {}));
  ASSERT_TRUE(log->append(event::kToolCall, {}));
  std::string head_two = read_bytes(head_of(log->path()));
  ASSERT_TRUE(log->append(event::kToolResult, {}));
  // As if the third append had stopped between its line and its head file.
  std::ofstream(head_of(log->path()), std::ios::binary | std::ios::trunc) << head_two;
  // The chain is whole: the head is one line behind (a full disk does this
  // too: the line fits in the room reserved for it, its head file does not).
  Verification lagging = verified(log->path());
  EXPECT_TRUE(lagging.ok) << lagging.problem;
  EXPECT_TRUE(lagging.head_behind);
  EXPECT_EQ(lagging.lines, 3u);
  // Two lines past it is not a stopped writer.
  const std::string head_one =
      nlohmann::json{{"lines", 1}, {"last", sha256_hex(read_lines(log->path()).at(0))}}.dump() + "\n";
  std::ofstream(head_of(log->path()), std::ios::binary | std::ios::trunc) << head_one;
  Verification two = verified(log->path());
  EXPECT_FALSE(two.ok);
  EXPECT_EQ(two.problem.rfind("the log has 3 lines but its head file says 1", 0), 0u) << two.problem;
  std::ofstream(head_of(log->path()), std::ios::binary | std::ios::trunc) << head_two;

  auto appended = log->append(event::kSessionEnd, {});
  ASSERT_TRUE(appended) << appended.error().message();
  Verification v = verified(log->path());
  EXPECT_TRUE(v.ok) << v.problem;
  EXPECT_EQ(v.lines, 4u);
}

TEST_F(SessionLogTest, TwoWritersAppendingAlternatelyKeepOneChain) {
  auto first = SessionLog::open(project_, "shared");
  auto second = SessionLog::open(project_, "shared");
  ASSERT_TRUE(first);
  ASSERT_TRUE(second);
  ASSERT_EQ(first->path(), second->path());
  for (int i = 0; i < 6; ++i) {
    SessionLog& writer = i % 2 == 0 ? *first : *second;
    auto appended = writer.append(event::kToolCall, {{"call", i}});
    ASSERT_TRUE(appended) << appended.error().message();
  }
  Verification v = verified(first->path());
  EXPECT_TRUE(v.ok) << v.problem;
  EXPECT_EQ(v.lines, 6u);
}

// Lines held while a sandbox starts go out under one lock; each still chains
// from the one before it, after a cut line and after another writer's line.
TEST_F(SessionLogTest, LinesAppendedTogetherChainOneByOne) {
  std::string path = five_events();
  {
    std::ofstream out(path, std::ios::binary | std::ios::app);
    out << "{\"ts\":\"2025-";
  }
  auto log = SessionLog::open(project_, "s1");
  auto other = SessionLog::open(project_, "s1");
  ASSERT_TRUE(log);
  ASSERT_TRUE(other);
  const std::vector<SessionLog::Entry> batch{SessionLog::entry(event::kSessionConfig, {{"n", 1}}),
                                             SessionLog::entry(event::kSandboxOpen, {{"n", 2}}),
                                             SessionLog::entry(event::kToolCall, {{"n", 3}})};
  auto appended = log->append(std::span<const SessionLog::Entry>(batch));
  ASSERT_TRUE(appended) << appended.error().message();
  ASSERT_TRUE(other->append(event::kToolResult, {{"n", 4}}));
  appended = log->append(std::span<const SessionLog::Entry>(batch).first(2));
  ASSERT_TRUE(appended) << appended.error().message();

  Verification v = verified(path);
  EXPECT_EQ(v.lines, 12u);
  EXPECT_EQ(v.torn_lines, std::vector<std::size_t>{6});
  EXPECT_NE(v.problem.find("every other line verifies, to line 12"), std::string::npos) << v.problem;
  auto lines = read_lines(path);
  ASSERT_EQ(lines.size(), 12u);
  EXPECT_EQ(nlohmann::json::parse(lines[6])["torn_line"], 6) << lines[6];
  EXPECT_FALSE(nlohmann::json::parse(lines[7]).contains("torn_line")) << lines[7];
  for (std::size_t i = 7; i < lines.size(); ++i)
    EXPECT_EQ(nlohmann::json::parse(lines[i])["prev"], sha256_hex(lines[i - 1])) << "line " << i + 1;
  const std::vector<int> order{1, 2, 3, 4, 1, 2};
  for (std::size_t i = 0; i < order.size(); ++i)
    EXPECT_EQ(nlohmann::json::parse(lines[6 + i])["n"], order[i]) << lines[6 + i];
  auto head = nlohmann::json::parse(read_bytes(head_of(path)));
  EXPECT_EQ(head["lines"], 12);
  EXPECT_EQ(head["last"], sha256_hex(lines[11]));
  // Nothing at all for none.
  ASSERT_TRUE(log->append(std::span<const SessionLog::Entry>()));
  EXPECT_EQ(read_lines(path).size(), 12u);
}

TEST_F(SessionLogTest, ProjectsOfTheSameNameGetTheirOwnFolders) {
  std::string other = root_ + "/elsewhere/app";
  stdfs::create_directories(other);
  std::string a = project_key(project_);
  std::string b = project_key(other);
  EXPECT_NE(a, b);
  EXPECT_EQ(a.rfind("app-", 0), 0u) << a;
  EXPECT_EQ(b.rfind("app-", 0), 0u) << b;
  EXPECT_EQ(a.size(), std::string("app-").size() + 12);
  EXPECT_EQ(a, "app-" + sha256_hex(project_).substr(0, 12));
  EXPECT_EQ(project_key("/srv/my proj!/"), "my_proj_-" + sha256_hex("/srv/my proj!").substr(0, 12));
  EXPECT_EQ(project_key("/").rfind("root-", 0), 0u);

  auto in_a = SessionLog::open(project_, "same");
  auto in_b = SessionLog::open(other, "same");
  ASSERT_TRUE(in_a);
  ASSERT_TRUE(in_b);
  EXPECT_NE(in_a->path(), in_b->path());
  // One project named by another path (here a symlink) is still one folder.
  stdfs::create_directory_symlink(project_, root_ + "/link");
  auto via_link = SessionLog::open(root_ + "/link", "same");
  ASSERT_TRUE(via_link);
  EXPECT_EQ(via_link->path(), in_a->path());
}

TEST_F(SessionLogTest, FindLogLooksInEveryProjectFolder) {
  std::string path = five_events("k3f9x2ab");
  auto found = find_log("k3f9x2ab");
  ASSERT_TRUE(found) << found.error().message();
  EXPECT_EQ(*found, path);
  auto missing = find_log("nosuch");
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message().find("'nosuch'"), std::string::npos) << missing.error().message();
}

TEST_F(SessionLogTest, RefusesWhatWouldMakeABadLine) {
  EXPECT_FALSE(SessionLog::open(project_, "../escape"));
  EXPECT_FALSE(SessionLog::open(root_ + "/no/such/project", "s1"));
  auto log = SessionLog::open(project_, "s1");
  ASSERT_TRUE(log);
  auto reserved = log->append(event::kToolCall, {{"prev", "0"}});
  ASSERT_FALSE(reserved);
  EXPECT_NE(reserved.error().message().find("\"prev\""), std::string::npos) << reserved.error().message();
  EXPECT_FALSE(log->append(event::kToolCall, nlohmann::json::array({1, 2})));
  EXPECT_FALSE(log->append("Tool Call", {}));
  // Bytes that are not UTF-8 (a program's output) are replaced, not refused.
  ASSERT_TRUE(log->append(event::kToolResult, {{"stderr", std::string("caf\xe9")}}));
  Verification v = verified(log->path());
  EXPECT_TRUE(v.ok) << v.problem;
  EXPECT_EQ(v.lines, 1u);
}

TEST_F(SessionLogTest, StateDirFollowsXdgThenHome) {
  auto with_xdg = state_dir();
  ASSERT_TRUE(with_xdg);
  EXPECT_EQ(*with_xdg, root_ + "/state/chock");
  std::optional<std::string> saved_home;
  if (const char* home = std::getenv("HOME")) saved_home = home;
  ::setenv("XDG_STATE_HOME", "relative/ignored", 1);
  ::setenv("HOME", "/home/someone", 1);
  auto from_home = state_dir();
  if (saved_home) {
    ::setenv("HOME", saved_home->c_str(), 1);
  } else {
    ::unsetenv("HOME");
  }
  ASSERT_TRUE(from_home);
  EXPECT_EQ(*from_home, "/home/someone/.local/state/chock");
}

}  // namespace
}  // namespace chock::log
