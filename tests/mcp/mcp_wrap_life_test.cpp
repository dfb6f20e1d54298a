// A wrapped server's life (`chock mcp wrap`): its session removed when it
// leaves no work, kept while it holds work, kept for good with --keep and
// continued with --session, so what it keeps in its workspace lasts; the
// client told at the end of each run what became of the session; a server
// installed in the project's ignored node_modules run where .carry shows
// it. Driven by the official SDK's client and the reference servers.
#include <sys/stat.h>
#include <unistd.h>

#include <regex>
#include <sstream>

#include "mcp_support.hpp"

namespace chock::test::mcp {
namespace {

const char* const kJitProject =
    ".{ .policy = .{ .rules = .{ .{ .action = \"sandbox.jit\", .decision = .allow } } } }\n";

std::string server_js(const std::string& package) {
  return clients_dir() + "/node_modules/@modelcontextprotocol/" + package + "/dist/index.js";
}

std::vector<std::string> wrap_fs(const Fixture& f, const std::vector<std::string>& flags) {
  std::vector<std::string> args{"wrap", "fs"};
  args.insert(args.end(), flags.begin(), flags.end());
  args.insert(args.end(), {"--", "node", server_js("server-filesystem"), f.project()});
  return args;
}

Json close_step() {
  return Json{{"close", true}};
}

// The relay's own notifications/message among a close step's logs.
std::vector<Json> chock_logs(const Json& closed) {
  std::vector<Json> mine;
  for (const auto& l : closed.value("logs", Json::array()))
    if (l.value("logger", "") == "chock") mine.push_back(l);
  return mine;
}

// The session the end-of-run line names ("session ID ..."), or "".
std::string session_named(const std::string& line) {
  std::smatch m;
  static const std::regex named("session ([a-z0-9]{8})");
  return std::regex_search(line, m, named) ? m[1].str() : "";
}

Json sessions(const Fixture& f) {
  Output o = f.chock({"workspace", "list", "--json"});
  EXPECT_EQ(o.status, 0) << describe(o);
  return Json::parse(o.out, nullptr, false);
}

void init_project(Fixture& f, bool git, const std::string& zon = kJitProject) {
  git ? f.init_git() : f.init_plain();
  write_file(f.file("chock.zon"), zon);
  if (git) f.commit_all("chock.zon");
  bind_clients(f);
}

TEST(McpWrapLife, KeepAndSessionLetWhatTheServerWroteLastAcrossItsRuns) {
  SKIP_WITHOUT_MCP_CLIENTS();
  Fixture f;
  init_project(f, true);
  Output raw;
  auto first = sdk(
      f,
      chock_mcp_plan(f, wrap_fs(f, {"--keep"}),
                     {call("create_directory", {{"path", f.file("state")}}),
                      call("write_file", {{"path", f.file("state/graph.json")}, {"content", "{\"n\": 1}"}}),
                      close_step()}),
      &raw);
  ASSERT_EQ(first.size(), 3U) << describe(raw);
  EXPECT_FALSE(first[1]["result"].value("isError", false)) << first[1].dump();
  const auto logs = chock_logs(first[2]);
  ASSERT_EQ(logs.size(), 1U) << first[2].dump() << describe(raw);
  EXPECT_EQ(logs[0]["level"], "info");
  const std::string line = logs[0]["data"];
  const std::string id = session_named(line);
  ASSERT_FALSE(id.empty()) << line;
  // Named, with what it holds and what to do about it.
  EXPECT_NE(line.find("kept"), std::string::npos) << line;
  EXPECT_NE(line.find("uncommitted change(s) (state/graph.json)"), std::string::npos) << line;
  EXPECT_NE(line.find("`chock apply " + id + "`"), std::string::npos) << line;
  EXPECT_NE(line.find("--session " + id), std::string::npos) << line;
  EXPECT_NE(raw.err.find(line.substr(line.find("session "))), std::string::npos) << describe(raw);
  // Written in the session, never in the project.
  EXPECT_FALSE(exists(f.file("state/graph.json")));

  // The next run in that session reads it back.
  auto second =
      sdk(f, chock_mcp_plan(f, wrap_fs(f, {"--session", id}),
                            {call("read_text_file", {{"path", f.file("state/graph.json")}}), close_step()}));
  ASSERT_EQ(second.size(), 2U);
  EXPECT_EQ(second[0]["result"]["content"][0]["text"], "{\"n\": 1}") << second[0].dump();
  const auto again = chock_logs(second[1]);
  ASSERT_EQ(again.size(), 1U) << second[1].dump();
  EXPECT_EQ(session_named(again[0]["data"]), id);

  // A run of its own starts from the project: nothing of that session's.
  auto fresh = sdk(
      f, chock_mcp_plan(f, wrap_fs(f, {}), {call("read_text_file", {{"path", f.file("state/graph.json")}})}));
  ASSERT_EQ(fresh.size(), 1U);
  EXPECT_NE(fresh[0].dump().find("ENOENT"), std::string::npos) << fresh[0].dump();
  // And it left no session behind: only the kept one is there.
  const Json list = sessions(f);
  ASSERT_TRUE(list.is_array());
  ASSERT_EQ(list.size(), 1U) << list.dump();
  EXPECT_EQ(list[0]["id"], id);
}

TEST(McpWrapLife, ARunThatLeftNothingLeavesNoSessionAndOneThatWroteKeepsItsWork) {
  SKIP_WITHOUT_MCP_CLIENTS();
  Fixture f;
  init_project(f, true);
  Output raw;
  auto echoed =
      sdk(f,
          chock_mcp_plan(f, {"wrap", "everything", "--", "node", server_js("server-everything"), "stdio"},
                         {call("echo", {{"message", "hi"}}), close_step()}),
          &raw);
  ASSERT_EQ(echoed.size(), 2U) << describe(raw);
  const auto removed = chock_logs(echoed[1]);
  ASSERT_EQ(removed.size(), 1U) << echoed[1].dump() << describe(raw);
  EXPECT_NE(removed[0]["data"].get<std::string>().find(" removed: "), std::string::npos) << removed[0].dump();
  EXPECT_EQ(sessions(f).size(), 0U) << sessions(f).dump();

  // A server never commits: what it wrote in a git session keeps the session.
  auto wrote = sdk(f,
                   chock_mcp_plan(f, wrap_fs(f, {}),
                                  {call("write_file", {{"path", f.file("notes.md")}, {"content", "kept\n"}}),
                                   close_step()}),
                   &raw);
  ASSERT_EQ(wrote.size(), 2U) << describe(raw);
  const auto kept = chock_logs(wrote[1]);
  ASSERT_EQ(kept.size(), 1U) << wrote[1].dump() << describe(raw);
  const std::string line = kept[0]["data"];
  const std::string id = session_named(line);
  ASSERT_FALSE(id.empty()) << line;
  EXPECT_NE(line.find("kept: 1 uncommitted change(s) (notes.md)"), std::string::npos) << line;
  EXPECT_NE(line.find("`chock apply " + id + "`"), std::string::npos) << line;
  ASSERT_EQ(sessions(f).size(), 1U);
  // What the line says to do brings the work onto the branch.
  Output commit = f.chock({"run", "--session", id, "--", "sh", "-c", "git add -A && git commit -qm MESSAGE"});
  ASSERT_EQ(commit.status, 0) << describe(commit);
  Output applied = f.chock({"apply", id, "--yes"});
  ASSERT_EQ(applied.status, 0) << describe(applied);
  EXPECT_EQ(read_file(f.file("notes.md")), "kept\n");
}

TEST(McpWrapLife, AnOverlaySessionsChangesAreNamedWithAdopt) {
  SKIP_WITHOUT_MCP_CLIENTS();
  Fixture f;
  init_project(f, false);
  Output raw;
  auto wrote = sdk(f,
                   chock_mcp_plan(f, wrap_fs(f, {}),
                                  {call("write_file", {{"path", f.file("notes.md")}, {"content", "kept\n"}}),
                                   close_step()}),
                   &raw);
  ASSERT_EQ(wrote.size(), 2U) << describe(raw);
  const auto kept = chock_logs(wrote[1]);
  ASSERT_EQ(kept.size(), 1U) << wrote[1].dump() << describe(raw);
  const std::string line = kept[0]["data"];
  const std::string id = session_named(line);
  ASSERT_FALSE(id.empty()) << line;
  EXPECT_NE(line.find("`chock workspace adopt " + id + "`"), std::string::npos) << line;
  EXPECT_FALSE(exists(f.file("notes.md")));
  Output adopted = f.chock({"workspace", "adopt", id});
  ASSERT_EQ(adopted.status, 0) << describe(adopted);
  EXPECT_EQ(read_file(f.file(".chock-adopted/" + id + "/notes.md")), "kept\n");
}

// The server ends by itself (not its client): the relay still says what
// became of the session before its own output ends.
TEST(McpWrapLife, AServerThatExitsByItselfStillHasItsSessionNamed) {
  SKIP_WITHOUT_MCP_CLIENTS();
  Fixture f;
  init_project(f, true);
  const std::string server =
      R"(read -r line; echo made > made.txt; )"
      R"(printf '{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18","capabilities":{},)"
      R"("serverInfo":{"name":"brief","version":"1"}}}\n')";
  Raw r = raw_client(f, {"mcp", "wrap", "brief", "--", "sh", "-c", server},
                     {initialize_line(1, "2025-06-18")}, 1);
  ASSERT_FALSE(r.timed_out) << describe(r.process);
  const Json answer = answer_to(r.lines, 1);
  ASSERT_TRUE(answer.is_object()) << r.process.out;
  // The relay declared logging for a server that did not.
  EXPECT_TRUE(answer["result"]["capabilities"].contains("logging")) << answer.dump();
  ASSERT_EQ(r.notifications.size(), 1U) << r.process.out << r.stderr_text;
  const Json& n = r.notifications[0];
  EXPECT_EQ(n["method"], "notifications/message");
  EXPECT_EQ(n["params"]["logger"], "chock");
  const std::string line = n["params"]["data"];
  const std::string id = session_named(line);
  ASSERT_FALSE(id.empty()) << line;
  EXPECT_EQ(line.find("the MCP server brief: session " + id + " kept: 1 uncommitted change(s) (made.txt)"),
            0U)
      << line;
}

// The server names the files it writes: a name that would act on the
// person's terminal (an escape sequence, a line break that could forge a
// line of Chock's) is shown escaped, in the client's line and on stderr.
TEST(McpWrapLife, AFileNameTheServerChoseIsShownEscapedNeverActedOn) {
  SKIP_WITHOUT_MCP_CLIENTS();
  Fixture f;
  init_project(f, true);
  const std::string server =
      R"sh(read -r line; printf x > "$(printf 'a\033[2Jb\nchock: session forged')"; )sh"
      R"(printf '{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18","capabilities":{},)"
      R"("serverInfo":{"name":"sly","version":"1"}}}\n')";
  Raw r =
      raw_client(f, {"mcp", "wrap", "sly", "--", "sh", "-c", server}, {initialize_line(1, "2025-06-18")}, 1);
  ASSERT_EQ(r.notifications.size(), 1U) << r.process.out << r.stderr_text;
  const std::string line = r.notifications[0]["params"]["data"];
  EXPECT_NE(line.find("(a\\x1b[2Jb\\nchock: session forged)"), std::string::npos) << line;
  EXPECT_EQ(line.find('\x1b'), std::string::npos);
  EXPECT_EQ(line.find('\n'), std::string::npos);
  EXPECT_EQ(r.stderr_text.find('\x1b'), std::string::npos) << r.stderr_text;
  EXPECT_EQ(r.stderr_text.find("\nchock: session forged"), std::string::npos) << r.stderr_text;
}

// The SDK's close: the server's input ends, SIGTERM 2 s later, SIGKILL 2 s
// after that. A server that outlives its input is ended, and the SIGTERM
// that may come meanwhile ends the relay's wait, not the relay: the client
// still hears what became of the session.
TEST(McpWrapLife, AServerThatOutlivesItsInputIsEndedAndTheClientStillHearsTheEnd) {
  SKIP_WITHOUT_MCP_CLIENTS();
  Fixture f;
  init_project(f, true);
  const std::string server =
      R"(read -r line; )"
      R"(printf '{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},)"
      R"("serverInfo":{"name":"stubborn","version":"1"}}}\n'; trap '' TERM HUP; exec sleep 1000)";
  Output raw;
  auto steps =
      sdk(f, chock_mcp_plan(f, {"wrap", "stubborn", "--", "sh", "-c", server}, {close_step()}), &raw);
  ASSERT_EQ(steps.size(), 1U) << describe(raw);
  const Json& closed = steps[0]["closed"];
  EXPECT_TRUE(closed["signal"].is_null()) << steps[0].dump() << describe(raw);
  const auto logs = chock_logs(steps[0]);
  ASSERT_EQ(logs.size(), 1U) << steps[0].dump() << describe(raw);
  EXPECT_NE(logs[0]["data"].get<std::string>().find(" removed: "), std::string::npos) << logs[0].dump();
  EXPECT_EQ(sessions(f).size(), 0U);
}

TEST(McpWrapLife, TheEndOfRunComesAtTheLevelTheClientSet) {
  SKIP_WITHOUT_MCP_CLIENTS();
  Fixture f;
  init_project(f, true);
  // server-everything declares logging: the level goes to it, and the relay reads it too.
  auto everything =
      sdk(f, chock_mcp_plan(f, {"wrap", "everything", "--", "node", server_js("server-everything"), "stdio"},
                            {{{"set_level", "warning"}}, close_step()}));
  ASSERT_EQ(everything.size(), 2U);
  EXPECT_EQ(everything[0]["level_set"], "warning") << everything[0].dump();
  EXPECT_TRUE(chock_logs(everything[1]).empty()) << everything[1].dump();
  // server-filesystem declares none: the relay answers logging/setLevel itself.
  auto quiet = sdk(f, chock_mcp_plan(f, wrap_fs(f, {"--keep"}), {{{"set_level", "error"}}, close_step()}));
  ASSERT_EQ(quiet.size(), 2U);
  EXPECT_EQ(quiet[0]["level_set"], "error") << quiet[0].dump();
  EXPECT_TRUE(chock_logs(quiet[1]).empty()) << quiet[1].dump();
  auto told = sdk(f, chock_mcp_plan(f, wrap_fs(f, {"--keep"}), {{{"set_level", "info"}}, close_step()}));
  ASSERT_EQ(told.size(), 2U);
  EXPECT_EQ(told[0]["level_set"], "info") << told[0].dump();
  ASSERT_EQ(chock_logs(told[1]).size(), 1U) << told[1].dump();
  EXPECT_NE(chock_logs(told[1])[0]["data"].get<std::string>().find("kept: no work yet"), std::string::npos);
}

TEST(McpWrapLife, AServerInTheProjectsIgnoredNodeModulesRunsWhereCarryShowsIt) {
  SKIP_WITHOUT_MCP_CLIENTS();
  Fixture f;
  f.init_git();
  write_file(f.file(".gitignore"), "node_modules/\n");
  write_file(f.file("chock.zon"), kJitProject);
  f.commit_all("chock.zon");
  ::mkdir(f.file("node_modules").c_str(), 0755);
  ::mkdir(f.file("node_modules/tiny-mcp").c_str(), 0755);
  ::mkdir(f.file("node_modules/.bin").c_str(), 0755);
  write_file(f.file("node_modules/tiny-mcp/server.js"), tiny_server_js());
  ::chmod(f.file("node_modules/tiny-mcp/server.js").c_str(), 0755);
  ASSERT_EQ(::symlink("../tiny-mcp/server.js", f.file("node_modules/.bin/tiny-mcp").c_str()), 0);
  auto wrap = [](const std::vector<std::string>& flags) {
    std::vector<std::string> args{"wrap", "tiny"};
    args.insert(args.end(), flags.begin(), flags.end());
    args.insert(args.end(), {"--", "node", "node_modules/.bin/tiny-mcp"});
    return args;
  };

  // Not carried: a git workspace is a checkout, without what git ignores.
  Output raw;
  auto absent = sdk(f, chock_mcp_plan(f, wrap({}), {call("where")}), &raw);
  EXPECT_NE(raw.status, 0) << describe(raw);  // the client could not connect
  EXPECT_NE(raw.err.find("Cannot find module"), std::string::npos) << describe(raw);
  EXPECT_NE(raw.err.find("add .carry = .{ \"node_modules\" } to chock.zon"), std::string::npos)
      << describe(raw);

  write_file(f.file("chock.zon"),
             ".{ .carry = .{ \"node_modules\" }, .policy = .{ .rules = .{ .{ .action = \"sandbox.jit\", "
             ".decision = .allow } } } }\n");
  f.commit_all("carry node_modules");
  auto carried =
      sdk(f,
          chock_mcp_plan(f, wrap({"--keep"}),
                         {call("where"), call("remember", {{"text", "the build needs make"}}), close_step()}),
          &raw);
  ASSERT_EQ(carried.size(), 3U) << describe(raw);
  EXPECT_EQ(carried[0]["result"]["content"][0]["text"],
            "tiny, at " + f.file("node_modules/tiny-mcp/server.js"))
      << carried[0].dump();
  EXPECT_NE(raw.err.find("carried copy-on-write from the project: node_modules"), std::string::npos)
      << describe(raw);
  // What it wrote in the carried directory is the session's, never work, and never in the project.
  const auto kept = chock_logs(carried[2]);
  ASSERT_EQ(kept.size(), 1U) << carried[2].dump();
  const std::string id = session_named(kept[0]["data"]);
  EXPECT_NE(kept[0]["data"].get<std::string>().find("kept: no work yet"), std::string::npos)
      << kept[0].dump();
  EXPECT_FALSE(exists(f.file("node_modules/tiny-mcp/memory.jsonl")));

  // Its next run in the session remembers; npx finds the same copy without the network.
  auto again = sdk(f,
                   chock_mcp_plan(f, {"wrap", "tiny", "--session", id, "--", "npx", "--offline", "tiny-mcp"},
                                  {call("recall")}),
                   &raw);
  ASSERT_EQ(again.size(), 1U) << describe(raw);
  EXPECT_EQ(again[0]["result"]["content"][0]["text"], "\"the build needs make\"\n") << again[0].dump();
  // A run of its own starts from the project's node_modules, and leaves no session.
  auto fresh = sdk(f, chock_mcp_plan(f, wrap({}), {call("recall")}));
  ASSERT_EQ(fresh.size(), 1U);
  EXPECT_EQ(fresh[0]["result"]["content"][0]["text"], "nothing") << fresh[0].dump();
  const Json list = sessions(f);
  ASSERT_EQ(list.size(), 1U) << list.dump();
  EXPECT_EQ(list[0]["id"], id);
}

TEST(McpWrapLife, AllowDirtyShowsTheServersAndTheToolsThePersonsUncommittedWork) {
  SKIP_WITHOUT_MCP_CLIENTS();
  Fixture f;
  init_project(f, true);
  write_file(f.file("a.txt"), "alpha, edited and not committed\n");
  // Chock's own file tools.
  auto dirty = sdk(f, chock_mcp_plan(f, {"--allow-dirty"}, {call("read_file", {{"path", "a.txt"}})}));
  ASSERT_EQ(dirty.size(), 1U);
  EXPECT_NE(text_of(dirty[0]["result"]).find("alpha, edited and not committed"), std::string::npos)
      << dirty[0].dump();
  auto clean = sdk(f, chock_mcp_plan(f, {}, {call("read_file", {{"path", "a.txt"}})}));
  ASSERT_EQ(clean.size(), 1U);
  EXPECT_EQ(text_of(clean[0]["result"]).find("edited"), std::string::npos) << clean[0].dump();
  EXPECT_NE(text_of(clean[0]["result"]).find("alpha"), std::string::npos) << clean[0].dump();
  // A wrapped server, whose run that wrote nothing leaves no session: the
  // person's uncommitted work it began with is theirs, not the server's.
  const std::size_t before = sessions(f).size();
  auto wrapped = sdk(f, chock_mcp_plan(f, wrap_fs(f, {"--allow-dirty"}),
                                       {call("read_text_file", {{"path", f.file("a.txt")}})}));
  ASSERT_EQ(wrapped.size(), 1U);
  EXPECT_EQ(wrapped[0]["result"]["content"][0]["text"], "alpha, edited and not committed\n")
      << wrapped[0].dump();
  EXPECT_EQ(sessions(f).size(), before) << sessions(f).dump();
  // What it writes is its work, and only that is named.
  auto wrote = sdk(
      f, chock_mcp_plan(f, wrap_fs(f, {"--allow-dirty"}),
                        {call("write_file", {{"path", f.file("new.txt")}, {"content", "n"}}), close_step()}));
  ASSERT_EQ(wrote.size(), 2U);
  const auto kept = chock_logs(wrote[1]);
  ASSERT_EQ(kept.size(), 1U) << wrote[1].dump();
  EXPECT_NE(kept[0]["data"].get<std::string>().find("kept: 1 uncommitted change(s) (new.txt)"),
            std::string::npos)
      << kept[0].dump();
  EXPECT_EQ(sessions(f).size(), before + 1);
  auto committed =
      sdk(f, chock_mcp_plan(f, wrap_fs(f, {}), {call("read_text_file", {{"path", f.file("a.txt")}})}));
  ASSERT_EQ(committed.size(), 1U);
  EXPECT_EQ(committed[0]["result"]["content"][0]["text"], "alpha\n") << committed[0].dump();
}

TEST(McpWrapLife, KeepAndSessionAreOneOrTheOtherAndAllowDirtyIsForANewSession) {
  Fixture f;
  f.init_git();
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"mcp", "wrap", "x", "--keep", "--session", "abcdefgh", "--", "true"},
           {"mcp", "wrap", "x", "--allow-dirty", "--session", "abcdefgh", "--", "true"},
           {"mcp", "--allow-dirty", "--session", "abcdefgh"}}) {
    Output o = f.chock(args);
    EXPECT_EQ(o.status, 2) << describe(o);
    EXPECT_TRUE(o.err.starts_with("chock: ")) << describe(o);
    EXPECT_NE(o.err.find("excludes"), std::string::npos) << describe(o);
    EXPECT_EQ(std::count(o.err.begin(), o.err.end(), '\n'), 1) << describe(o);
  }
}

}  // namespace
}  // namespace chock::test::mcp
