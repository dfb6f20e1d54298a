// The JSON Schema checker `chock mcp` checks tool arguments with: against
// the official JSON-Schema-Test-Suite (Debian's json-schema-test-suite), for
// every case whose schema keeps to the keywords it reads, and against the
// schemas Chock publishes.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "mcp/schema.hpp"
#include "mcp/server.hpp"

namespace chock::mcp {
namespace {

const char* const kSuite = "/usr/share/json-schema-test-suite/tests/draft7";

Json read_json(const std::string& path) {
  std::ifstream in(path);
  std::stringstream all;
  all << in.rdbuf();
  return Json::parse(all.str(), nullptr, false);
}

TEST(McpSchema, AgreesWithTheJsonSchemaTestSuiteOnItsKeywords) {
  if (!std::filesystem::is_directory(kSuite))
    GTEST_SKIP() << kSuite
                 << " is missing: apt-get install json-schema-test-suite (scripts/install-deps does)";
  int checked = 0, groups_skipped = 0;
  for (const char* keyword :
       {"type", "properties", "required", "additionalProperties", "items", "minItems", "maxItems",
        "minLength", "maxLength", "pattern", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
        "enum", "const", "anyOf", "boolean_schema"}) {
    const Json groups = read_json(std::string(kSuite) + "/" + keyword + ".json");
    ASSERT_TRUE(groups.is_array()) << keyword;
    for (const auto& group : groups) {
      const Json& schema = group["schema"];
      if (schema::unsupported(schema)) {
        ++groups_skipped;  // $ref, patternProperties, a tuple of items...
        continue;
      }
      for (const auto& t : group["tests"]) {
        const bool valid = !schema::check(schema, t["data"]);
        EXPECT_EQ(valid, t["valid"].get<bool>())
            << keyword << ": " << group["description"] << " / " << t["description"] << ": "
            << schema::check(schema, t["data"]).value_or("(valid)");
        ++checked;
      }
    }
  }
  // Most of the suite's cases for these keywords stay in the subset (181 of Debian 12's 2.0.0).
  EXPECT_GT(checked, 150) << groups_skipped << " groups were outside the subset";
}

TEST(McpSchema, KeywordsOutsideTheSubsetAreNamed) {
  EXPECT_EQ(schema::unsupported(Json{{"type", "string"}, {"format", "uri"}}), "format");
  EXPECT_EQ(schema::unsupported(Json{{"properties", {{"a", {{"$ref", "#/x"}}}}}}), "properties.a.$ref");
  EXPECT_TRUE(schema::unsupported(Json{{"items", Json::array({Json::object()})}}));
  EXPECT_EQ(schema::unsupported(Json{{"pattern", "("}}), "pattern");
  EXPECT_FALSE(schema::unsupported(Json{{"type", "object"}, {"additionalProperties", false}}));
}

Json definition(const std::string& name) {
  for (const auto& t : tool_definitions())
    if (t["name"] == name) return t;
  return nullptr;
}

TEST(McpSchema, EverySchemaChockPublishesIsInTheSubset) {
  int outputs = 0;
  for (const auto& t : tool_definitions()) {
    EXPECT_EQ(schema::unsupported(t["inputSchema"]), std::nullopt) << t["name"];
    EXPECT_EQ(t["inputSchema"]["type"], "object") << t["name"];
    EXPECT_EQ(t["inputSchema"]["additionalProperties"], false) << t["name"];
    if (!t.contains("outputSchema")) continue;
    EXPECT_EQ(schema::unsupported(t["outputSchema"]), std::nullopt) << t["name"];
    ++outputs;
  }
  // run_command, task_output, the six file tools, workspace_status.
  EXPECT_EQ(outputs, 9);
}

TEST(McpSchema, ABadArgumentIsRefusedNamingTheField) {
  const Json run = definition("run_command")["inputSchema"];
  const Json read = definition("read_file")["inputSchema"];
  // The two: a parameter nobody published, and a line 0.
  auto shell = schema::check(run, Json{{"argv", {"ls"}}, {"shell", true}});
  ASSERT_TRUE(shell);
  EXPECT_EQ(shell->rfind(
                "shell: not a parameter (the parameters are argv, background, cwd, publish, timeout_s)", 0),
            0U)
      << *shell;
  auto offset = schema::check(read, Json{{"path", "a"}, {"offset", 0}});
  ASSERT_TRUE(offset);
  EXPECT_EQ(*offset, "offset: 0 is below the minimum, 1");
  EXPECT_EQ(schema::check(run, Json::object()), "argv: required, and missing");
  EXPECT_EQ(schema::check(run, Json{{"argv", Json::array()}}), "argv: at least 1 item(s), not 0");
  EXPECT_EQ(schema::check(run, Json{{"argv", {"ls", 3}}}), "argv[1]: a string, not 3");
  EXPECT_EQ(schema::check(run, Json{{"argv", {"ls"}}, {"timeout_s", 0}}), "timeout_s: 0 is not above 0");
  EXPECT_EQ(schema::check(run, Json{{"argv", {"ls"}}, {"publish", {"80a"}}}),
            "publish[0]: \"80a\" does not match ^([0-9]{1,5}:)?[0-9]{1,5}$");
  EXPECT_EQ(schema::check(read, Json{{"path", "a"}, {"limit", 1e300}}),
            "limit: 1e+300 is above the maximum, 2147483647");
  EXPECT_EQ(schema::check(read, Json{{"path", "a"}, {"offset", "3"}}), "offset: an integer, not \"3\"");
  EXPECT_EQ(schema::check(definition("write_memory")["inputSchema"],
                          Json{{"name", "n"}, {"kind", "rumour"}, {"description", "d"}, {"body", "b"}}),
            "kind: \"rumour\" is not one of insight, code_fact, convention, gotcha, dead_end, environment");
  // Their allowed neighbours.
  EXPECT_EQ(schema::check(run, Json{{"argv", {"ls"}}, {"timeout_s", 0.5}, {"publish", {"8080:80"}}}),
            std::nullopt);
  EXPECT_EQ(schema::check(read, Json{{"path", "a"}, {"offset", 1}, {"limit", 2.0}}), std::nullopt);
}

TEST(McpSchema, AHostileValueIsQuotedShortAndEscaped) {
  const Json run = definition("run_command")["inputSchema"];
  auto bad =
      schema::check(run, Json{{"argv", {"ls"}}, {std::string("x\n\x1b[2J") + std::string(500, 'y'), 1}});
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->find('\n'), std::string::npos);
  EXPECT_EQ(bad->find('\x1b'), std::string::npos);
  EXPECT_LT(bad->size(), 200U);
  // A megabyte against a pattern is refused at once, never handed to the regex engine.
  const auto began = std::chrono::steady_clock::now();
  auto long_port = schema::check(Json{{"type", "string"}, {"pattern", "^([0-9]{1,5}:)?[0-9]{1,5}$"}},
                                 Json(std::string(1 << 20, '1')));
  EXPECT_TRUE(long_port);
  EXPECT_LT(std::chrono::steady_clock::now() - began, std::chrono::seconds(1));
  EXPECT_LT(long_port->size(), 200U);
}

}  // namespace
}  // namespace chock::mcp
