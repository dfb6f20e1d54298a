// The policy table: matching, specificity, the fold over the three layers,
// the action checks and the name builders.
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "policy/policy.hpp"

namespace chock::policy {
namespace {

constexpr Decision D = Decision::deny;
constexpr Decision Q = Decision::ask;
constexpr Decision A = Decision::allow;

struct Written {
  Layer layer;
  const char* action;
  Decision decision;
};

Table table_of(const std::vector<Written>& rules) {
  Table table;
  int n = 0;
  for (const auto& r : rules) table.add(r.layer, Rule{r.action, r.decision, "rule " + std::to_string(++n)});
  return table;
}

struct Case {
  const char* name;
  std::vector<Written> rules;
  const char* action;
  Decision expected;
  Layer deciding_layer;
  std::optional<std::string> deciding_action;  // nullopt: the layer's default decided
};

void check(const Case& c) {
  SCOPED_TRACE(c.name);
  Answer answer = table_of(c.rules).decide(c.action);
  EXPECT_EQ(answer.decision, c.expected) << decision_name(answer.decision);
  EXPECT_EQ(answer.deciding_layer, c.deciding_layer) << layer_name(answer.deciding_layer);
  ASSERT_EQ(answer.deciding_rule.has_value(), c.deciding_action.has_value());
  if (c.deciding_action) {
    EXPECT_EQ(answer.deciding_rule->action, *c.deciding_action);
  }
  ASSERT_EQ(answer.layers.size(), 3u);
  EXPECT_EQ(answer.layers[0].layer, Layer::bundle);
  EXPECT_EQ(answer.layers[1].layer, Layer::project);
  EXPECT_EQ(answer.layers[2].layer, Layer::command_line);
}

constexpr Layer B = Layer::bundle;
constexpr Layer P = Layer::project;
constexpr Layer C = Layer::command_line;

TEST(PolicyTable, MostSpecificRuleOfALayerWins) {
  const std::vector<Case> cases{
      {"exact beats a pattern",
       {{P, "net.connect.*", A}, {P, "net.connect.com.github.443", D}},
       "net.connect.com.github.443",
       D,
       P,
       "net.connect.com.github.443"},
      {"exact beats a pattern written after it",
       {{P, "net.connect.com.github.443", A}, {P, "net.connect.*", D}},
       "net.connect.com.github.443",
       A,
       P,
       "net.connect.com.github.443"},
      {"longer pattern beats shorter",
       {{P, "net.*", D}, {P, "net.connect.com.*", A}},
       "net.connect.com.github.443",
       A,
       P,
       "net.connect.com.*"},
      {"longer pattern beats shorter (narrower one longer)",
       {{P, "net.*", A}, {P, "net.connect.com.*", D}},
       "net.connect.com.github.443",
       D,
       P,
       "net.connect.com.*"},
      {"a tie goes to the narrower decision",
       {{P, "sandbox.jit", A}, {P, "sandbox.jit", D}},
       "sandbox.jit",
       D,
       P,
       "sandbox.jit"},
      {"a pattern tie goes to the narrower decision",
       {{P, "net.*", Q}, {P, "net.*", A}},
       "net.fetch.com.x",
       Q,
       P,
       "net.*"},
  };
  for (const auto& c : cases) check(c);
}

TEST(PolicyTable, PatternMatchesBelowItsPrefixOnly) {
  const std::vector<Case> cases{
      {"x.* matches x.y", {{P, "device.*", D}}, "device.usb", D, P, "device.*"},
      {"x.* matches x.y.z", {{P, "device.*", D}}, "device.usb.1d50.6018", D, P, "device.*"},
      {"x.* does not match x", {{P, "device.*", D}}, "device", Q, P, std::nullopt},
      {"x.* does not match xy", {{P, "device.*", D}}, "devices.usb", Q, P, std::nullopt},
      {"a malformed pattern only names itself", {{P, "*", A}}, "sandbox.jit", Q, P, std::nullopt},
      {"a.*.b is no pattern", {{P, "net.*.443", A}}, "net.connect.443", Q, P, std::nullopt},
  };
  for (const auto& c : cases) check(c);
}

TEST(PolicyTable, FoldIsTheMinimumOverTheLayers) {
  const std::vector<Case> cases{
      {"an action nobody names answers ask", {}, "sandbox.jit", Q, P, std::nullopt},
      {"rules elsewhere leave an unnamed action at ask",
       {{B, "net.*", A}, {P, "workspace.apply", A}},
       "sandbox.jit",
       Q,
       P,
       std::nullopt},
      {"the project allows", {{P, "sandbox.jit", A}}, "sandbox.jit", A, P, "sandbox.jit"},
      {"a project cannot raise what the bundle denied",
       {{B, "sandbox.jit", D}, {P, "sandbox.jit", A}},
       "sandbox.jit",
       D,
       B,
       "sandbox.jit"},
      {"a project cannot raise what the bundle held to ask",
       {{B, "net.*", Q}, {P, "net.connect.com.x.443", A}},
       "net.connect.com.x.443",
       Q,
       B,
       "net.*"},
      {"the bundle alone cannot raise the project's default",
       {{B, "sandbox.jit", A}},
       "sandbox.jit",
       Q,
       P,
       std::nullopt},
      {"equal answers: bundle before project",
       {{B, "sandbox.jit", D}, {P, "sandbox.jit", D}},
       "sandbox.jit",
       D,
       B,
       "sandbox.jit"},
      {"equal answers: a rule before a default", {{C, "sandbox.jit", Q}}, "sandbox.jit", Q, C, "sandbox.jit"},
      {"the person's row replaces the project's: it widens",
       {{P, "workspace.apply", D}, {C, "workspace.apply", A}},
       "workspace.apply",
       A,
       C,
       "workspace.apply"},
      {"the person's row opens what the project never named",
       {{C, "net.connect.com.example.443", A}},
       "net.connect.com.example.443",
       A,
       C,
       "net.connect.com.example.443"},
      {"the person's pattern replaces the project's exact row",
       {{P, "net.connect.com.example.443", D}, {C, "net.connect.com.example.*", A}},
       "net.connect.com.example.443",
       A,
       C,
       "net.connect.com.example.*"},
      {"the person's row is held under the bundle's deny",
       {{B, "net.connect.com.example.*", D}, {C, "net.connect.com.example.443", A}},
       "net.connect.com.example.443",
       D,
       B,
       "net.connect.com.example.*"},
      {"the person's row is held under the bundle's ask",
       {{B, "net.*", Q}, {P, "net.connect.com.example.443", D}, {C, "net.connect.com.example.443", A}},
       "net.connect.com.example.443",
       Q,
       B,
       "net.*"},
      {"a person's row for another action leaves the project's",
       {{P, "workspace.apply", D}, {C, "sandbox.jit", A}},
       "workspace.apply",
       D,
       P,
       "workspace.apply"},
      {"the command line can narrow",
       {{P, "workspace.apply", A}, {C, "workspace.apply", D}},
       "workspace.apply",
       D,
       C,
       "workspace.apply"},
      {"the command line narrows allow to ask",
       {{P, "net.*", A}, {C, "net.connect.*", Q}},
       "net.connect.com.x.443",
       Q,
       C,
       "net.connect.*"},
  };
  for (const auto& c : cases) check(c);
}

TEST(PolicyTable, APersonsRowMarksTheProjectsAnswerReplaced) {
  Table table = table_of({{P, "net.connect.com.example.443", D}, {C, "net.connect.com.example.443", A}});
  Answer answer = table.decide("net.connect.com.example.443");
  ASSERT_EQ(answer.layers.size(), 3u);
  EXPECT_FALSE(answer.layers[0].replaced);
  EXPECT_TRUE(answer.layers[1].replaced);
  EXPECT_EQ(answer.layers[1].decision, D);  // still reported: explain shows what was replaced
  EXPECT_FALSE(answer.layers[2].replaced);
  // No person's row: nothing is replaced.
  Answer plain = table.decide("net.connect.com.example.80");
  for (const auto& l : plain.layers) EXPECT_FALSE(l.replaced) << layer_name(l.layer);
}

TEST(PolicyTable, EachLayerReportsItsOwnAnswer) {
  Table table = table_of({{B, "sandbox.*", D}, {P, "sandbox.jit", A}});
  Answer answer = table.decide("sandbox.jit");
  ASSERT_EQ(answer.layers.size(), 3u);
  EXPECT_EQ(answer.layers[0].decision, D);
  ASSERT_TRUE(answer.layers[0].rule);
  EXPECT_EQ(answer.layers[0].rule->origin, "rule 1");
  EXPECT_EQ(answer.layers[1].decision, A);
  EXPECT_EQ(answer.layers[2].decision, A);  // the command line's default
  EXPECT_FALSE(answer.layers[2].rule);
  EXPECT_EQ(table.entries().size(), 2u);
}

// What a call may write to the person's terminal is the person's to allow:
// the project's own allow does not count; the bundle's deny holds, and the
// project's unless the person's own row replaces it (as in every fold).
TEST(PolicyTable, OnlyAPersonsAllowCountsForTheTerminal) {
  const char* osc = "terminal.osc.52";
  EXPECT_FALSE(person_allows(table_of({}), osc));
  EXPECT_FALSE(person_allows(table_of({{Layer::project, osc, A}}), osc));
  EXPECT_FALSE(person_allows(table_of({{Layer::project, "terminal.*", A}}), osc));
  EXPECT_TRUE(person_allows(table_of({{Layer::command_line, osc, A}}), osc));
  EXPECT_TRUE(person_allows(table_of({{Layer::command_line, "terminal.osc.*", A}}), osc));
  EXPECT_TRUE(person_allows(table_of({{Layer::bundle, osc, A}}), osc));
  EXPECT_TRUE(person_allows(table_of({{Layer::command_line, osc, A}, {Layer::project, osc, D}}), osc));
  EXPECT_FALSE(person_allows(table_of({{Layer::bundle, osc, A}, {Layer::project, osc, D}}), osc));
  EXPECT_FALSE(person_allows(table_of({{Layer::command_line, osc, D}, {Layer::bundle, osc, A}}), osc));
  EXPECT_FALSE(
      person_allows(table_of({{Layer::command_line, osc, A}, {Layer::bundle, "terminal.*", D}}), osc));
  EXPECT_FALSE(person_allows(table_of({{Layer::command_line, "terminal.osc.8", A}}), osc));
}

TEST(PolicyDecision, NamesParseBack) {
  for (Decision d : {D, Q, A}) {
    auto parsed = parse_decision(decision_name(d));
    ASSERT_TRUE(parsed) << decision_name(d);
    EXPECT_EQ(*parsed, d);
  }
  auto bad = parse_decision("yes");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().kind, Errc::bad_config);
  EXPECT_NE(bad.error().message().find("\"yes\""), std::string::npos) << bad.error().message();
  EXPECT_FALSE(parse_decision("Allow"));
  EXPECT_STREQ(layer_name(Layer::command_line), "command line");
}

TEST(PolicyValidate, AcceptsNamesAndTrailingPatterns) {
  for (const char* good : {"sandbox.jit", "workspace.apply", "net.connect.com.github.443", "net.connect.*",
                           "net.*", "device.usb.1d50.6018", "mcp.my_server-2.network", "x"}) {
    EXPECT_TRUE(validate_action(good)) << good;
  }
}

TEST(PolicyValidate, RefusesWithAMessageNamingTheAction) {
  struct Bad {
    const char* action;
    const char* says;
  };
  const std::vector<Bad> cases{
      {"*", "bare *"},
      {"a.*.b", "whole last label"},
      {"a.b*", "whole last label"},
      {"*.b", "whole last label"},
      {"A.b", "upper case 'A'"},
      {"a..b", "label 2 is empty"},
      {"a.b.", "trailing dot"},
      {".a", "leading dot"},
      {"net.connect.com.git hub", "label 4 has \\x20"},
      {"a.b!", "'!'"},
      {"", "empty"},
  };
  for (const auto& c : cases) {
    auto r = validate_action(c.action);
    ASSERT_FALSE(r) << c.action;
    EXPECT_EQ(r.error().kind, Errc::bad_config);
    std::string message = r.error().message();
    if (c.action[0] != '\0') {
      EXPECT_NE(message.find(std::string("\"") + c.action + "\""), std::string::npos) << message;
    }
    EXPECT_NE(message.find(c.says), std::string::npos) << message;
  }
}

TEST(PolicyNames, BuildersMakeTheDocumentedNames) {
  EXPECT_EQ(net_connect("github.com", 443), "net.connect.com.github.443");
  EXPECT_EQ(net_connect("API.GitHub.com.", 22), "net.connect.com.github.api.22");
  EXPECT_EQ(net_fetch("pypi.org"), "net.fetch.org.pypi");
  EXPECT_EQ(device_usb(0x1d50, 0x6018), "device.usb.1d50.6018");
  EXPECT_EQ(device_usb(0x1, 0xABCD), "device.usb.0001.abcd");
  EXPECT_EQ(device_path("/dev/ttyACM0"), "device.path.dev.tty_41_43_4d0");
  EXPECT_EQ(device_path("/dev/kvm"), "device.path.dev.kvm");
  EXPECT_EQ(device_path("/dev/dri/renderD128"), "device.path.dev.dri.render_44128");
  EXPECT_EQ(device_tty_serial("A6008isP"), "device.tty.serial._416008is_50");
  EXPECT_EQ(device_tty(0x0403, 0x6001), "device.tty.0403.6001");
  EXPECT_EQ(mcp_network("github"), "mcp.github.network");
  EXPECT_EQ(mcp_network("my.server"), "mcp.my_2eserver.network");
}

TEST(PolicyNames, EveryBuiltNameIsValidAndAddsNoLabelOrPattern) {
  const std::vector<std::string> names{
      net_connect("github.com", 443),
      net_connect("*.evil", 1),
      net_connect("a..b", 80),
      net_connect("::1", 8080),
      net_connect("", 0),
      net_fetch("x_y.example"),
      device_path("/dev/bus/usb/001/004"),
      device_path(""),
      mcp_network("a.*"),
      mcp_network("Name With Spaces"),
  };
  for (const auto& name : names) EXPECT_TRUE(validate_action(name)) << name;
  // A host's dots are labels; a server's are not.
  EXPECT_EQ(net_connect("*.evil", 1), "net.connect.evil._2a.1");
  EXPECT_EQ(mcp_network("a.*"), "mcp.a_2e_2a.network");
}

TEST(PolicyNames, TheLabelEscapeIsReversibleAndKeepsCaseApart) {
  const std::vector<std::string> values{"/dev/ttyACM0", "/dev/ttyacm0",          "a_b", "", "_",
                                        "-x-",          std::string("\0\xff", 2)};
  for (const auto& value : values) {
    auto back = unescape_label(escape_label(value));
    ASSERT_TRUE(back) << value;
    EXPECT_EQ(*back, value);
  }
  EXPECT_NE(escape_label("/dev/ttyACM0"), escape_label("/dev/ttyacm0"));
  EXPECT_NE(escape_label(""), escape_label("_"));
  for (const char* not_an_escape : {"", "_2", "_zz", "_2F", "_61", "a.b"}) {
    EXPECT_FALSE(unescape_label(not_an_escape)) << not_an_escape;
  }
}

}  // namespace
}  // namespace chock::policy
