// `chock mcp wrap`: the reference MCP servers (server-filesystem and
// server-everything, from the npm registry) inside a sandbox, behind
// Chock's relay, driven by the official SDK's client.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include "mcp_support.hpp"

namespace chock::test::mcp {
namespace {

// Node is a JIT: the servers need sandbox.jit; get-sum is taken away.
const char* const kServerProject =
    ".{ .policy = .{ .rules = .{ .{ .action = \"sandbox.jit\", .decision = .allow },"
    " .{ .action = \"mcp.everything.tool.get-sum\", .decision = .deny } } } }\n";

std::string server_js(const std::string& package) {
  return clients_dir() + "/node_modules/@modelcontextprotocol/" + package + "/dist/index.js";
}

void init_server_project(Fixture& f) {
  f.init_git();
  write_file(f.file("chock.zon"), kServerProject);
  f.commit_all("servers");
  bind_clients(f);
}

TEST(McpWrap, TheFilesystemServerSeesTheProjectAndNothingOfTheHostsHome) {
  SKIP_WITHOUT_MCP_CLIENTS();
  Fixture f;
  init_server_project(f);
  // A host file outside the project, readable by this user.
  TempDir outside("chock-mcp-host");
  write_file(outside / "secret.txt", "host secret\n");
  auto at_project =
      sdk(f, chock_mcp_plan(f, {"wrap", "fs", "--", "node", server_js("server-filesystem"), f.project()},
                            {call("list_directory", {{"path", f.project()}}),
                             call("read_text_file", {{"path", f.file("a.txt")}})}));
  ASSERT_EQ(at_project.size(), 2U);
  EXPECT_NE(text_of(at_project[0]["result"]).find("a.txt"), std::string::npos) << at_project[0].dump();
  EXPECT_NE(text_of(at_project[1]["result"]).find("alpha"), std::string::npos) << at_project[1].dump();

  // Pointed at /, the server allows every path, and still finds no home, /root or host file.
  const std::string home = std::getenv("HOME") != nullptr ? std::getenv("HOME") : "/root";
  Output raw;
  auto at_root = sdk(
      f,
      chock_mcp_plan(f, {"wrap", "fs", "--", "node", server_js("server-filesystem"), "/"},
                     {call("list_directory", {{"path", "/"}}),
                      call("read_text_file", {{"path", outside / "secret.txt"}}),
                      call("list_directory", {{"path", "/root"}}), call("list_directory", {{"path", home}})}),
      &raw);
  ASSERT_EQ(at_root.size(), 4U) << describe(raw);
  const std::string top = text_of(at_root[0]["result"]);
  EXPECT_NE(top.find("[DIR] usr"), std::string::npos) << top;
  EXPECT_EQ(top.find("[DIR] root"), std::string::npos) << top;
  EXPECT_EQ(top.find("[DIR] home"), std::string::npos) << top;
  for (std::size_t i = 1; i < 4; ++i) {
    const std::string t = at_root[i].dump();
    EXPECT_TRUE(at_root[i]["result"].value("isError", false) || at_root[i].contains("error")) << t;
    EXPECT_NE(t.find("ENOENT"), std::string::npos) << t;
    EXPECT_EQ(t.find("host secret"), std::string::npos) << t;
  }
}

TEST(McpWrap, EverythingEchoesThroughTheRelayAndADeniedToolIsGone) {
  SKIP_WITHOUT_MCP_CLIENTS();
  Fixture f;
  init_server_project(f);
  RunOptions env = fixture_env(f);
  Output raw;
  auto steps = sdk(f,
                   chock_mcp_plan(f,
                                  {"wrap", "everything", "--env", "GREETING=hi", "--", "node",
                                   server_js("server-everything"), "stdio"},
                                  {{{"list", true}},
                                   call("echo", {{"message", "through chock"}}),
                                   call("get-sum", {{"a", 1}, {"b", 2}}),
                                   call("get-env")}),
                   &raw);
  ASSERT_EQ(steps.size(), 4U) << describe(raw);
  const Json& tools = steps[0]["tools"];
  EXPECT_NE(std::find(tools.begin(), tools.end(), "echo"), tools.end()) << steps[0].dump();
  EXPECT_EQ(std::find(tools.begin(), tools.end(), "get-sum"), tools.end()) << steps[0].dump();
  EXPECT_NE(text_of(steps[1]["result"]).find("Echo: through chock"), std::string::npos) << steps[1].dump();
  EXPECT_EQ(steps[2]["error"]["code"], -32602) << steps[2].dump();
  EXPECT_NE(steps[2]["error"]["message"].get<std::string>().find("mcp.everything.tool.get-sum = deny"),
            std::string::npos);
  // Only PATH, LANG, TERM, HOME, Chock's own and what --env named: never the client's.
  Json env_seen = Json::parse(text_of(steps[3]["result"]), nullptr, false);
  ASSERT_TRUE(env_seen.is_object()) << steps[3].dump();
  EXPECT_EQ(env_seen.value("GREETING", ""), "hi");
  EXPECT_EQ(env_seen.value("HOME", ""), "/run/chock/cache/home");
  for (const auto& [name, value] : env_seen.items())
    EXPECT_TRUE(name == "PATH" || name == "LANG" || name == "TERM" || name == "HOME" || name == "TMPDIR" ||
                name == "GREETING" || name.starts_with("CHOCK_") || name == "XDG_CACHE_HOME")
        << name;
  EXPECT_FALSE(env_seen.contains("XDG_DATA_HOME"));
}

// Every process whose command line holds `mark`.
std::vector<pid_t> processes_with(const std::string& mark) {
  std::vector<pid_t> found;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(entry.path() / "cmdline");
    std::string cmdline((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (cmdline.find(mark) != std::string::npos) found.push_back(std::stoi(name));
  }
  return found;
}

bool alive(pid_t pid) {
  return ::kill(pid, 0) == 0 || errno == EPERM;
}

TEST(McpWrap, KillingTheClientEndsTheServersWholeSandbox) {
  SKIP_WITHOUT_MCP_CLIENTS();
  Fixture f;
  init_server_project(f);
  const std::string mark = "chock-mcp-mark-" + std::to_string(std::random_device{}());
  // The server under a shell whose command line carries the mark; a daemon of it too.
  Json plan = chock_mcp_plan(f,
                             {"wrap", "everything", "--", "sh", "-c",
                              "sleep 1000 & node \"$0\" stdio; : " + mark, server_js("server-everything")},
                             {call("echo", {{"message", "up"}})});
  plan["hold"] = true;
  TempDir dir("chock-mcp-kill");
  write_file(dir / "plan.json", plan.dump());
  RunOptions env = fixture_env(f);
  env.env["PLAN"] = dir / "plan.json";
  env.env["OUT"] = dir / "out";
  env.env["CLIENT"] = clients_dir() + "/sdk_client.mjs";
  Output started =
      run_process({"sh", "-c", "node \"$CLIENT\" \"$PLAN\" >\"$OUT\" 2>&1 </dev/null & echo $!"}, env);
  const pid_t client = std::stoi(started.out);
  std::vector<pid_t> server;
  for (int i = 0; i < 600 && read_file(dir / "out").find("\"pid\"") == std::string::npos; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ASSERT_NE(read_file(dir / "out").find("Echo: up"), std::string::npos) << read_file(dir / "out");
  server = processes_with(mark);
  ASSERT_FALSE(server.empty());
  // The shell's children (node, sleep) as well.
  std::vector<pid_t> tree = server;
  for (pid_t p : server) {
    std::ifstream kids("/proc/" + std::to_string(p) + "/task/" + std::to_string(p) + "/children");
    for (pid_t k; kids >> k;) tree.push_back(k);
  }
  ASSERT_GE(tree.size(), 3U);
  ASSERT_EQ(::kill(client, SIGKILL), 0);
  bool gone = false;
  for (int i = 0; i < 200 && !gone; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    gone = std::none_of(tree.begin(), tree.end(), alive);
  }
  EXPECT_TRUE(gone) << "the wrapped server's processes outlived its client";
  EXPECT_TRUE(processes_with(mark).empty());
}

// A wrapped server inside the sandbox answers with a line nested 150,000
// deep: the host-side relay died with SIGSEGV copying it. It drops that
// line, says so in one line, and relays the server's next answer.
TEST(McpWrap, DeepJsonFromTheWrappedServerIsRefusedNotACrash) {
  Fixture f;
  f.init_git();
  const std::string server =
      R"(read -r line; printf '{"jsonrpc":"2.0","id":1,"result":'; )"
      R"(head -c 150000 /dev/zero | tr '\0' '['; head -c 150000 /dev/zero | tr '\0' ']'; printf '}\n'; )"
      R"(printf '{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18","capabilities":{},)"
      R"("serverInfo":{"name":"deep","version":"1"}}}\n')";
  // The client's input stays open until the answer is out: the relay ends a
  // server two seconds after its client has gone.
  TempDir dir("chock-mcp-deep");
  RunOptions o = fixture_env(f);
  o.env["OUT"] = dir / "out";
  o.env["CHOCK"] = chock_binary();
  o.env["SERVER"] = server;
  o.env["INIT"] =
      R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{}}})";
  Output out = run_process(
      {"sh", "-c",
       R"({ printf '%s\n' "$INIT"; i=0; while [ $i -lt 600 ] && ! grep -q serverInfo "$OUT"; )"
       R"(do sleep 0.1; i=$((i+1)); done; } | "$CHOCK" mcp wrap deep -- sh -c "$SERVER" >"$OUT")"},
      o);
  out.out = read_file(dir / "out");
  EXPECT_EQ(out.status, 0) << describe(out);
  // The answers; the relay's own word at the run's end (the session it removed) aside.
  std::vector<Json> lines;
  std::size_t notes = 0;
  std::istringstream in(out.out);
  for (std::string line; std::getline(in, line);) {
    Json j = Json::parse(line, nullptr, false);
    if (j.is_object() && j.value("method", "") == "notifications/message")
      ++notes;
    else
      lines.push_back(std::move(j));
  }
  EXPECT_EQ(notes, 1U) << describe(out);
  ASSERT_EQ(lines.size(), 1U) << describe(out);
  EXPECT_EQ(lines[0]["id"], 1);
  EXPECT_EQ(lines[0]["result"]["serverInfo"]["name"], "deep") << lines[0].dump();
  std::size_t told = 0;
  std::istringstream err(out.err);
  for (std::string line; std::getline(err, line);) {
    if (line.find("the server deep wrote a line") == std::string::npos) continue;
    ++told;
    EXPECT_LT(line.size(), 400U) << "the line quotes too much of what the server wrote";
  }
  EXPECT_EQ(told, 1U) << describe(out);
}

}  // namespace
}  // namespace chock::test::mcp
