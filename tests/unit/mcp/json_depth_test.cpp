// JSON nested past kMaxJsonDepth is refused before nlohmann builds a value:
// a copy of a value 150,000 levels deep (300 KB) recurses once a level and
// overflows the stack. Each reader of JSON a call, a client, a server or a
// damaged file can shape says so in words, and the level under the limit
// still reads.
#include <gtest/gtest.h>

#include <string>

#include "log/session_log.hpp"
#include "mcp/jsonrpc.hpp"
#include "util/json.hpp"
#include "workspace/session_record.hpp"

namespace chock {
namespace {

constexpr std::size_t kDeep = 150000;

// `levels` arrays around `inside`.
std::string nested(std::size_t levels, const std::string& inside = "0") {
  return std::string(levels, '[') + inside + std::string(levels, ']');
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(JsonDepth, DeepJsonIsRefusedBeforeAValueIsBuilt) {
  auto deep = parse_json(nested(kDeep));
  ASSERT_FALSE(deep);
  EXPECT_EQ(deep.error().what, "JSON nested deeper than 64 levels");
  EXPECT_EQ(deep.error().kind, Errc::hostile_content);
  // One level past the limit is enough, objects counting as arrays do.
  EXPECT_FALSE(parse_json(nested(65)));
  std::string objects;
  for (std::size_t i = 0; i < 65; ++i) objects += R"({"a":)";
  EXPECT_FALSE(parse_json(objects + "1" + std::string(65, '}')));
  // The neighbours: as deep as the limit, and as wide as anything.
  auto at_limit = parse_json(R"({"a":)" + nested(63) + "}");
  ASSERT_TRUE(at_limit) << at_limit.error().message();
  EXPECT_TRUE(at_limit->is_object());
  EXPECT_TRUE(parse_json(nested(64)));
  std::string wide = "[0";
  for (int i = 0; i < 100000; ++i) wide += ",[1]";
  auto many = parse_json(wide + "]");
  ASSERT_TRUE(many);
  EXPECT_EQ(many->size(), 100001U);
  auto broken = parse_json("{\"a\":");
  ASSERT_FALSE(broken);
  EXPECT_EQ(broken.error().what, "not JSON");
}

TEST(JsonDepth, DeepJsonLineIsRefusedNotACrash) {
  using namespace mcp;
  // A request whose params, and a response whose result, are copied into the message.
  for (const std::string& line :
       {R"({"jsonrpc":"2.0","id":5,"method":"tools/call","params":)" + nested(kDeep) + "}",
        R"({"jsonrpc":"2.0","id":5,"result":)" + nested(kDeep) + "}", nested(kDeep)}) {
    Parsed p = parse_line(line);
    EXPECT_FALSE(p.message);
    ASSERT_TRUE(p.reply);
    EXPECT_EQ((*p.reply)["error"]["code"], code::parse_error);
    EXPECT_EQ((*p.reply)["error"]["message"], "the line is JSON nested deeper than 64 levels");
    EXPECT_EQ(serialize(*p.reply).find('\n'), serialize(*p.reply).size() - 1);
  }
  // The neighbour: params as deep as the limit allows are a message.
  Parsed ok = parse_line(R"({"jsonrpc":"2.0","id":6,"method":"tools/call","params":)" + nested(62) + "}");
  ASSERT_TRUE(ok.message);
  EXPECT_EQ(ok.message->id, 6);
  EXPECT_TRUE(ok.message->params.is_array());
}

TEST(JsonDepth, DeepSessionRecordAndLogLineAreDamagedNotCrashes) {
  const std::string record =
      R"({"adopted_run":-1,"always":)" + nested(kDeep) +
      R"(,"applied":"","base":"5a0e","carry":[],"common_dir":"/p/.git","created":1,"deny":[],"id":"s1",)"
      R"("kind":"git","last_run":1,"lower":"","owner":1000,"project":"/p"})";
  auto parsed = workspace::parse_session_record(record, "s1", "/d/s1");
  ASSERT_FALSE(parsed);
  EXPECT_EQ(parsed.error().message(), "is damaged (JSON nested deeper than 64 levels)");
  const std::string line = R"({"ts":"2026-12-05T01:00:00Z","event":"session.start","session":"s1","prev":")" +
                           std::string(64, '0') + R"(","x":)" + nested(kDeep) + "}\n";
  const log::Verification v = log::verify_chain(line, std::nullopt, "s1.head");
  EXPECT_FALSE(v.ok);
  EXPECT_EQ(v.bad_line, 1U);
  EXPECT_TRUE(has(v.problem, "line 1: JSON nested deeper than 64 levels")) << v.problem;
}

}  // namespace
}  // namespace chock
