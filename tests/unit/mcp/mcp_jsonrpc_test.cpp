// The JSON-RPC layer both MCP faces read through, and the relay's reading of
// a third-party server's tool list.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <thread>

#include "mcp/jsonrpc.hpp"
#include "mcp/wrap.hpp"

namespace chock::mcp {
namespace {

int error_code_of(const Parsed& p) {
  return p.reply ? (*p.reply)["error"].value("code", 0) : 0;
}

TEST(McpJsonRpc, RequestsNotificationsAndResponsesAreTold) {
  Parsed r = parse_line(R"({"jsonrpc":"2.0","id":7,"method":"tools/list","params":{}})");
  ASSERT_TRUE(r.message);
  EXPECT_EQ(r.message->kind, Message::Kind::request);
  EXPECT_EQ(r.message->id, 7);
  Parsed n = parse_line(R"({"jsonrpc":"2.0","method":"notifications/initialized"})");
  ASSERT_TRUE(n.message);
  EXPECT_EQ(n.message->kind, Message::Kind::notification);
  Parsed a = parse_line(R"({"jsonrpc":"2.0","id":"x","result":{"ok":1}})");
  ASSERT_TRUE(a.message);
  EXPECT_EQ(a.message->kind, Message::Kind::response);
  EXPECT_EQ(a.message->result["ok"], 1);
  EXPECT_FALSE(parse_line("   ").message);
  EXPECT_FALSE(parse_line("   ").reply);
}

TEST(McpJsonRpc, MalformedLinesGetTheirErrorAndKeepTheRequestsId) {
  EXPECT_EQ(error_code_of(parse_line("not json")), code::parse_error);
  EXPECT_EQ(error_code_of(parse_line("[]")), code::invalid_request);
  // MCP never lets a request's id be null (JSON-RPC would make it a notification).
  Parsed null_id = parse_line(R"({"jsonrpc":"2.0","id":null,"method":"ping"})");
  EXPECT_FALSE(null_id.message);
  EXPECT_EQ(error_code_of(null_id), code::invalid_request);
  EXPECT_TRUE((*null_id.reply)["id"].is_null());
  EXPECT_EQ(error_code_of(parse_line("42")), code::invalid_request);
  EXPECT_EQ(error_code_of(parse_line(R"({"jsonrpc":"1.0","id":1,"method":"ping"})")), code::invalid_request);
  EXPECT_EQ(error_code_of(parse_line(R"({"jsonrpc":"2.0","id":{"a":1},"method":"ping"})")),
            code::invalid_request);
  Parsed bad_params = parse_line(R"({"jsonrpc":"2.0","id":9,"method":"tools/call","params":5})");
  EXPECT_EQ(error_code_of(bad_params), code::invalid_params);
  EXPECT_EQ((*bad_params.reply)["id"], 9);
  // A notification with bad params has nobody to answer.
  Parsed quiet = parse_line(R"({"jsonrpc":"2.0","method":"x","params":"s"})");
  EXPECT_FALSE(quiet.message);
  EXPECT_FALSE(quiet.reply);
}

TEST(McpJsonRpc, ABatchIsEachOfItsValuesReadAsALine) {
  Parsed b = parse_line(R"([{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"n"},7,[1]])");
  ASSERT_TRUE(b.batch);
  EXPECT_FALSE(b.message);
  EXPECT_FALSE(b.reply);
  ASSERT_EQ(b.items.size(), 4U);
  EXPECT_EQ(b.items[0].message->kind, Message::Kind::request);
  EXPECT_EQ(b.items[1].message->kind, Message::Kind::notification);
  EXPECT_EQ(error_code_of(b.items[2]), code::invalid_request);
  EXPECT_EQ(error_code_of(b.items[3]), code::invalid_request);  // no batch in a batch
}

TEST(McpJsonRpc, AMessageIsOneLineWhateverItsStringsHold) {
  const std::string line = serialize(response(1, {{"text", "a\nb\r\x01\xff"}}));
  EXPECT_EQ(line.find('\n'), line.size() - 1);
  EXPECT_NE(line.find("\\n"), std::string::npos);
  EXPECT_TRUE(parse_line(line).message);
}

TEST(McpJsonRpc, TheVersionIsTheClientsWhenSpokenElseTheNewest) {
  EXPECT_EQ(negotiate_version("2025-03-26"), "2025-03-26");
  EXPECT_EQ(negotiate_version("2025-06-18"), "2025-06-18");
  EXPECT_EQ(negotiate_version("2025-11-25"), "2025-11-25");
  EXPECT_EQ(negotiate_version("1999-01-01"), "2025-11-25");
  EXPECT_EQ(negotiate_version(nullptr), "2025-11-25");
}

TEST(McpJsonRpc, ALineOverTheLimitIsDroppedAndTheNextOneRead) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  std::thread writer([fd = fds[1]] {
    const std::string big(300000, 'x');
    std::string all = "first\n" + big + "\nsecond\nlast-without-newline";
    for (std::size_t at = 0; at < all.size();) {
      const ssize_t n = ::write(fd, all.data() + at, all.size() - at);
      if (n <= 0) break;
      at += static_cast<std::size_t>(n);
    }
    ::close(fd);
  });
  LineReader reader(fds[0], 100000);
  auto a = reader.next();
  ASSERT_TRUE(a);
  EXPECT_EQ(a->text, "first");
  auto b = reader.next();
  ASSERT_TRUE(b);
  EXPECT_TRUE(b->too_long);
  auto c = reader.next();
  ASSERT_TRUE(c);
  EXPECT_EQ(c->text, "second");
  auto d = reader.next();
  ASSERT_TRUE(d);
  EXPECT_EQ(d->text, "last-without-newline");
  EXPECT_FALSE(reader.next());
  writer.join();
  ::close(fds[0]);
}

policy::Table table_with(const std::string& action, policy::Decision d) {
  policy::Table t;
  t.add(policy::Layer::project, policy::Rule{action, d, "test"});
  return t;
}

TEST(McpToolFilter, ADeniedToolLeavesTheListAndItsCallIsRefused) {
  ToolFilter f("everything", table_with("mcp.everything.tool.get-sum", policy::Decision::deny));
  auto list = parse_line(R"({"jsonrpc":"2.0","id":3,"method":"tools/list"})");
  EXPECT_FALSE(f.from_client(*list.message));
  // Another answer first (servers answer out of order): passed as it came.
  auto other = parse_line(R"({"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"get-sum"}]}})");
  EXPECT_FALSE(f.from_server(*other.message));
  auto answer = parse_line(
      R"({"jsonrpc":"2.0","id":3,"result":{"tools":[{"name":"echo"},{"name":"get-sum"}],"nextCursor":"c"}})");
  auto filtered = f.from_server(*answer.message);
  ASSERT_TRUE(filtered);
  EXPECT_EQ((*filtered)["result"]["tools"].size(), 1U);
  EXPECT_EQ((*filtered)["result"]["tools"][0]["name"], "echo");
  EXPECT_EQ((*filtered)["result"]["nextCursor"], "c");
  auto call = parse_line(R"({"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"get-sum"}})");
  auto refused = f.from_client(*call.message);
  ASSERT_TRUE(refused);
  EXPECT_EQ((*refused)["id"], 4);
  EXPECT_NE((*refused)["error"]["message"].get<std::string>().find("mcp.everything.tool.get-sum = deny"),
            std::string::npos);
  auto allowed = parse_line(R"({"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"echo"}})");
  EXPECT_FALSE(f.from_client(*allowed.message));
}

TEST(McpRelayLogging, ItDeclaresLoggingForAServerWithoutAndAnswersItsSetLevel) {
  RelayLogging log;
  EXPECT_FALSE(
      log.from_client(*parse_line(R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{}})").message));
  EXPECT_TRUE(log.message("info", "a line"));  // info until the client says otherwise
  EXPECT_FALSE(log.message("debug", "a line"));
  auto init = log.from_server(
      *parse_line(R"({"jsonrpc":"2.0","id":1,"result":{"capabilities":{"tools":{}},"serverInfo":{}}})")
           .message);
  ASSERT_TRUE(init);
  EXPECT_TRUE((*init)["result"]["capabilities"].contains("logging"));
  EXPECT_TRUE((*init)["result"]["capabilities"].contains("tools"));
  // The relay declared it: it answers, and the level holds for its lines.
  auto set = log.from_client(
      *parse_line(R"({"jsonrpc":"2.0","id":2,"method":"logging/setLevel","params":{"level":"error"}})")
           .message);
  ASSERT_TRUE(set);
  EXPECT_EQ((*set)["id"], 2);
  EXPECT_TRUE((*set)["result"].is_object());
  EXPECT_FALSE(log.message("warning", "a line"));
  auto n = log.message("error", "a line");
  ASSERT_TRUE(n);
  EXPECT_EQ((*n)["method"], "notifications/message");
  EXPECT_EQ((*n)["params"]["logger"], "chock");
  auto bad = log.from_client(
      *parse_line(R"({"jsonrpc":"2.0","id":3,"method":"logging/setLevel","params":{"level":"loud"}})")
           .message);
  ASSERT_TRUE(bad);
  EXPECT_EQ((*bad)["error"]["code"], -32602);
  EXPECT_FALSE(log.message("warning", "a line"));  // a bad level changes nothing
}

TEST(McpRelayLogging, AServerThatDeclaresLoggingAnswersSetLevelAndTheRelayReadsIt) {
  RelayLogging log;
  EXPECT_FALSE(log.from_client(*parse_line(R"({"jsonrpc":"2.0","id":"i","method":"initialize"})").message));
  // Another answer first: not the initialize answer, passed as it came.
  EXPECT_FALSE(
      log.from_server(*parse_line(R"({"jsonrpc":"2.0","id":5,"result":{"capabilities":{}}})").message));
  EXPECT_FALSE(log.from_server(
      *parse_line(R"({"jsonrpc":"2.0","id":"i","result":{"capabilities":{"logging":{}}}})").message));
  EXPECT_FALSE(log.from_client(
      *parse_line(R"({"jsonrpc":"2.0","id":2,"method":"logging/setLevel","params":{"level":"critical"}})")
           .message));
  EXPECT_FALSE(log.message("error", "a line"));
  EXPECT_TRUE(log.message("critical", "a line"));
}

TEST(McpToolFilter, ToolNamesBecomeLabelsThatNoOtherNameShares) {
  EXPECT_EQ(policy::mcp_tool("fs", "read_text_file"), "mcp.fs.tool.read_text_file");
  EXPECT_EQ(policy::mcp_tool("fs", "get-sum"), "mcp.fs.tool.get-sum");
  // What an escape could have made is escaped itself, so "a/b" and "a_2fb" differ.
  EXPECT_EQ(policy::mcp_tool("fs", "a/b"), "mcp.fs.tool.a_2fb");
  EXPECT_EQ(policy::mcp_tool("fs", "a_2fb"), "mcp.fs.tool.a_5f2fb");
  EXPECT_EQ(policy::mcp_tool("fs", "Read.File"), "mcp.fs.tool._52ead_2e_46ile");
  EXPECT_EQ(policy::mcp_tool("fs", "*"), "mcp.fs.tool._2a");
  EXPECT_NE(policy::mcp_tool("fs", ""), policy::mcp_tool("fs", "_"));
  EXPECT_TRUE(policy::validate_action(policy::mcp_tool("my server", "x.y")).has_value());
}

}  // namespace
}  // namespace chock::mcp
