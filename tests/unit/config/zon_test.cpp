// The ZON reader: every literal it reads, and every malformed input refused
// with the line and column of what is wrong.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "config/zon.hpp"

namespace {

using chock::zon::Value;

// A canonical text for a value: {a=1,b=[.x,"s"]}, f1.5 for floats, strings
// quoted with bytes outside printable ASCII as \xNN.
std::string render(const Value& v) {
  switch (v.kind) {
    case Value::Kind::null:
      return "null";
    case Value::Kind::boolean:
      return v.boolean ? "true" : "false";
    case Value::Kind::integer:
      return (v.negative ? "-" : "") + std::to_string(v.magnitude);
    case Value::Kind::floating: {
      char text[64];
      std::snprintf(text, sizeof text, "f%g", v.floating);
      return text;
    }
    case Value::Kind::string: {
      std::string out = "\"";
      for (char c : v.text) {
        const auto u = static_cast<unsigned char>(c);
        if (c == '\n') {
          out += "\\n";
        } else if (c == '"' || c == '\\') {
          out += '\\';
          out += c;
        } else if (u < 0x20 || u >= 0x7f) {
          char hex[8];
          std::snprintf(hex, sizeof hex, "\\x%02x", u);
          out += hex;
        } else {
          out += c;
        }
      }
      return out + "\"";
    }
    case Value::Kind::enum_literal:
      return "." + v.text;
    case Value::Kind::struct_literal: {
      std::string out = "{";
      for (std::size_t i = 0; i < v.fields.size(); ++i)
        out += (i > 0 ? "," : "") + v.fields[i].name + "=" + render(v.fields[i].value);
      return out + "}";
    }
    case Value::Kind::tuple: {
      std::string out = "[";
      for (std::size_t i = 0; i < v.items.size(); ++i) out += (i > 0 ? "," : "") + render(v.items[i]);
      return out + "]";
    }
  }
  return "?";
}

std::string parsed(std::string_view text) {
  auto v = chock::zon::parse(text, "t.zon");
  if (!v) return "error: " + v.error().message();
  return render(*v);
}

std::string refusal(std::string_view text) {
  auto v = chock::zon::parse(text, "t.zon");
  if (v) return "parsed as " + render(*v);
  return v.error().message();
}

std::string nested(int levels) {
  std::string s;
  for (int i = 0; i < levels; ++i) s += ".{";
  for (int i = 0; i < levels; ++i) s += "}";
  return s;
}

struct Case {
  std::string input;
  std::string expected;
};

TEST(ZonRead, EachLiteralKind) {
  const std::vector<Case> cases = {
      {".{}", "[]"},
      {".{ .a = 1 }", "{a=1}"},
      {".{ .a = 1, }", "{a=1}"},
      {".{ .a = 1, .b = \"x\", .c = .allow, .d = true, .e = false, .f = null }",
       "{a=1,b=\"x\",c=.allow,d=true,e=false,f=null}"},
      {".{ 1, 2, 3, }", "[1,2,3]"},
      {".{ .a, .b }", "[.a,.b]"},
      {".{ .a = .{}, .b = .{ .{} } }", "{a=[],b=[[]]}"},
      {"\"hi\"", "\"hi\""},
      {"\"\"", "\"\""},
      {R"("\n\r\t\\\'\"")", R"("\n\x0d\x09\\'\"")"},
      {R"("\x41\x7e\xff")", R"("A~\xff")"},
      {R"("\u{41}\u{e9}\u{1F600}\u{10FFFF}")", R"("A\xc3\xa9\xf0\x9f\x98\x80\xf4\x8f\xbf\xbf")"},
      {"\"h\xc3\xa9llo \xe2\x82\xac\"", R"("h\xc3\xa9llo \xe2\x82\xac")"},
      {"\"a\tb\"", R"("a\x09b")"},
      {"0", "0"},
      {"-0", "0"},
      {"42", "42"},
      {"-42", "-42"},
      {"0x1F", "31"},
      {"0xff_FF", "65535"},
      {"0o17", "15"},
      {"0b1010_1010", "170"},
      {"1_000_000", "1000000"},
      {"18446744073709551615", "18446744073709551615"},
      {"-9223372036854775808", "-9223372036854775808"},
      {"0xFFFFFFFFFFFFFFFF", "18446744073709551615"},
      {"1.5", "f1.5"},
      {"-2.5e3", "f-2500"},
      {"1e3", "f1000"},
      {"0.25", "f0.25"},
      {"1_0.2_5", "f10.25"},
      {"6.5E-1", "f0.65"},
      {"true", "true"},
      {".deny", ".deny"},
      {"// a comment\n.{ // after the brace\n  .a = 1, // after a field\n}\n// at the end", "{a=1}"},
      {"//\n.{}//", "[]"},
      {".{ .a // the name\n  = // the value\n  1 }", "{a=1}"},
      {"// caf\xc3\xa9\n.{}", "[]"},
      {".{ .s =\n    \\\\line one\n    \\\\line \"two\" \\n\n    ,\n}",
       R"({s="line one\nline \"two\" \\n"})"},
      {".{ .s = \\\\crlf\r\n  \\\\ends\r\n}", R"({s="crlf\nends"})"},
      {".{ .s = \\\\a\n  // a comment between the lines\n  \\\\b\n}", R"({s="a\nb"})"},
      {"\\\\", R"("")"},
      {".{ .s = \\\\\n}", R"({s=""})"},
      {".{ .policy = .{ .rules = .{ .{ .action = \"sandbox.jit\", .decision = .allow }, }, }, }",
       R"({policy={rules=[{action="sandbox.jit",decision=.allow}]}})"},
      {"\t.{\r\n\t.a\t=\t1\r\n}\r\n", "{a=1}"},
      {".{ .a = -1, .b = .{ -0x10, 0b1 } }", "{a=-1,b=[-16,1]}"},
  };
  for (const Case& c : cases) EXPECT_EQ(parsed(c.input), c.expected) << c.input;
}

TEST(ZonRead, SixtyFourLevelsAreRead) {
  auto v = chock::zon::parse(nested(chock::zon::kMaxDepth), "t.zon");
  ASSERT_TRUE(v) << v.error().message();
  const Value* inner = &*v;
  int depth = 1;
  while (!inner->items.empty()) {
    inner = &inner->items[0];
    ++depth;
  }
  EXPECT_EQ(depth, 64);
}

TEST(ZonRead, NodesKnowTheirLineAndColumn) {
  const std::string text =
      ".{\n"
      "    .name = \"x\",\n"
      "    .list = .{ 1, -2, .e },\n"
      "    .s = \\\\one\n"
      "        \\\\two\n"
      "    ,\n"
      "}\n";
  auto v = chock::zon::parse(text, "t.zon");
  ASSERT_TRUE(v) << v.error().message();
  EXPECT_EQ(v->at.line, 1u);
  EXPECT_EQ(v->at.column, 1u);
  ASSERT_EQ(v->fields.size(), 3u);
  const auto& name = v->fields[0];
  EXPECT_EQ(name.at.line, 2u);
  EXPECT_EQ(name.at.column, 5u);
  EXPECT_EQ(name.value.at.line, 2u);
  EXPECT_EQ(name.value.at.column, 13u);
  const auto& list = v->fields[1].value;
  EXPECT_EQ(list.at.column, 13u);
  ASSERT_EQ(list.items.size(), 3u);
  EXPECT_EQ(list.items[1].at.line, 3u);
  EXPECT_EQ(list.items[1].at.column, 19u);
  EXPECT_EQ(list.items[2].at.column, 23u);
  const auto& s = v->fields[2].value;
  EXPECT_EQ(s.at.line, 4u);
  EXPECT_EQ(s.at.column, 10u);
  EXPECT_EQ(s.text, "one\ntwo");
  ASSERT_NE(v->find("list"), nullptr);
  EXPECT_EQ(v->find("missing"), nullptr);
}

TEST(ZonRefuse, EachMalformedInputAtItsPosition) {
  const std::string escapes = "; the escapes are \\n \\r \\t \\\\ \\' \\\" \\xNN \\u{NNNNNN}";
  const std::vector<Case> cases = {
      {"\"abc", "t.zon:1:1: error: unterminated string"},
      {".{ .a = \"abc\n}", "t.zon:1:9: error: unterminated string"},
      {"\"abc\\", "t.zon:1:5: error: bad escape: '\\' at the end of a line"},
      {R"("a\qb")", "t.zon:1:3: error: bad escape '\\q'" + escapes},
      {"\"a\\\x01\"", "t.zon:1:3: error: bad escape '\\' before byte 0x01" + escapes},
      {R"("\x4")", "t.zon:1:2: error: bad escape '\\x': it takes exactly two hex digits, as in \\x41"},
      {R"("\xg0")", "t.zon:1:2: error: bad escape '\\x': it takes exactly two hex digits, as in \\x41"},
      {R"("\u41")", "t.zon:1:2: error: bad escape '\\u': it is written \\u{1F600}, one to six hex digits"},
      {R"("\u{}")", "t.zon:1:2: error: bad escape '\\u': it is written \\u{1F600}, one to six hex digits"},
      {R"("\u{1234567}")",
       "t.zon:1:2: error: bad escape '\\u': it is written \\u{1F600}, one to six hex digits"},
      {R"("\u{41")", "t.zon:1:2: error: bad escape '\\u': it is written \\u{1F600}, one to six hex digits"},
      {R"("ab\u{110000}")", "t.zon:1:4: error: bad escape: \\u{110000} is not a Unicode scalar value"},
      {R"("\u{D800}")", "t.zon:1:2: error: bad escape: \\u{D800} is not a Unicode scalar value"},
      {"\"a\x01z\"",
       "t.zon:1:3: error: control character (byte 0x01) in a string; write it as an escape such as \\x01"},
      {"\"a\rz\"",
       "t.zon:1:3: error: control character (byte 0x0d) in a string; write it as an escape such as \\x0d"},
      {"\"\xff\"", "t.zon:1:2: error: invalid UTF-8 in a string"},
      {"\"\xc0\xaf\"", "t.zon:1:2: error: invalid UTF-8 in a string"},
      {"\"\xed\xa0\x80\"", "t.zon:1:2: error: invalid UTF-8 in a string"},
      {"\"\xe2\x82\"", "t.zon:1:2: error: invalid UTF-8 in a string"},
      {"\"\xf4\x90\x80\x80\"", "t.zon:1:2: error: invalid UTF-8 in a string"},
      {"\\\\a\xff", "t.zon:1:4: error: invalid UTF-8 in a multiline string"},
      {"\\\\a\x7f",
       "t.zon:1:4: error: control character (byte 0x7f) in a multiline string, which has no "
       "escapes; write it in a \"...\" string as \\x7f"},
      {"// \xff\n.{}", "t.zon:1:4: error: invalid UTF-8 in a comment"},
      {".{ .a = 1 .b = 2 }", "t.zon:1:11: error: expected ',' or '}', found '.b'"},
      {".{ 1 2 }", "t.zon:1:6: error: expected ',' or '}', found a number"},
      {".{\n  .a = 1\n  .b = 2,\n}", "t.zon:3:3: error: expected ',' or '}', found '.b'"},
      {".{ .a = 1",
       "t.zon:1:10: error: expected ',' or '}', found the end of the file (the .{ at 1:1 is not closed)"},
      {".{ .a = .{ 1,", "t.zon:1:14: error: expected a value, found the end of the file"},
      {".{ .a = 1, 2 }", "t.zon:1:12: error: expected a field such as '.name = value', found a number"},
      {".{ .b = 1, .a }", "t.zon:1:15: error: expected '=' after '.a', found '}'"},
      {".{ .a == 1 }", "t.zon:1:7: error: expected ',' or '}', found '='"},
      {".{ .a = }", "t.zon:1:9: error: expected a value, found '}'"},
      {".{ , }", "t.zon:1:4: error: expected a value, found ','"},
      {"", "t.zon:1:1: error: expected a value, found the end of the file"},
      {"  // only a comment\n", "t.zon:2:1: error: expected a value, found the end of the file"},
      {".{} x", "t.zon:1:5: error: expected the end of the file after the value, found 'x'"},
      {".{} .{}", "t.zon:1:5: error: expected the end of the file after the value, found '.'"},
      {"foo",
       "t.zon:1:1: error: unknown word 'foo'; a value is a string, a number, .name, .{ ... }, true, false or "
       "null"},
      {".", "t.zon:1:1: error: expected a name or '{' after '.'"},
      {".{ .a = @x }", "t.zon:1:9: error: expected a value, found '@'"},
      {".{ .a = \x01 }", "t.zon:1:9: error: expected a value, found byte 0x01"},
      {"\\x", "t.zon:1:1: error: expected a value, found '\\'"},
      {".{ .a = 1, .a = 2 }", "t.zon:1:12: error: duplicate field '.a' (first at 1:4)"},
      {".{\n  .limits = .{},\n  .network = .none,\n  .limits = .{},\n}",
       "t.zon:4:3: error: duplicate field '.limits' (first at 2:3)"},
      {"18446744073709551616", "t.zon:1:1: error: integer too large"},
      {"-9223372036854775809", "t.zon:1:1: error: integer too large"},
      {".{ .a = 0x1_0000_0000_0000_0000 }", "t.zon:1:9: error: integer too large"},
      {".{ .a = 99999999999999999999999999 }", "t.zon:1:9: error: integer too large"},
      {"1e999", "t.zon:1:1: error: float out of range"},
      {"01", "t.zon:1:1: error: a number cannot start with 0 (for octal, write 0o1)"},
      {"1__0", "t.zon:1:2: error: '_' must sit between digits"},
      {"1_", "t.zon:1:2: error: '_' must sit between digits"},
      {"0x_1", "t.zon:1:3: error: '_' must sit between digits"},
      {"0x", "t.zon:1:3: error: expected a base-16 digit, found the end of the file"},
      {"1e", "t.zon:1:3: error: expected a base-10 digit, found the end of the file"},
      {"0b102", "t.zon:1:5: error: invalid character '2' in a base-2 number"},
      {"12abc", "t.zon:1:3: error: invalid character 'a' in a base-10 number"},
      {"0X10", "t.zon:1:2: error: invalid character 'X' in a base-10 number"},
      {"- 1", "t.zon:1:1: error: expected a digit after '-'"},
      {"0x1.8", "t.zon:1:1: error: hex floats are not read here; write the number in decimal"},
      {nested(65), "t.zon:1:129: error: nested too deeply (more than 64 levels of .{ })"},
      {".{ .a = \"x" + std::string(1, '\0') + "\" }", "t.zon:1:11: error: a NUL byte"},
      {std::string(1, '\0'), "t.zon:1:1: error: a NUL byte"},
  };
  for (const Case& c : cases) {
    auto v = chock::zon::parse(c.input, "t.zon");
    ASSERT_FALSE(v) << c.input << " parsed as " << render(*v);
    EXPECT_EQ(v.error().message(), c.expected) << c.input;
    // The whole text is in `what`, so message() prints it as it is.
    EXPECT_TRUE(v.error().path.empty());
    EXPECT_EQ(v.error().code, 0);
  }
}

TEST(ZonRefuse, AFileOver64KiB) {
  // Lines of 100 bytes: byte 65536 (0-based) is on line 656, column 37.
  std::string line = "//" + std::string(97, 'x') + "\n";
  std::string text;
  while (text.size() < 65 * 1024) text += line;
  EXPECT_EQ(refusal(text),
            "t.zon:656:37: error: the file is longer than 65536 bytes (64 KiB), the most Chock reads");
  // Exactly at the cap is read.
  std::string at_cap = ".{}";
  at_cap.resize(chock::zon::kMaxInputBytes, ' ');
  EXPECT_EQ(parsed(at_cap), "[]");
}

// Every prefix and many one-byte changes of a real file: each either reads
// or is refused with a positioned message, and none crashes.
TEST(ZonRefuse, TruncatedAndMutatedFilesAreRefusedCleanly) {
  const std::string file =
      ".{\n"
      "    .policy = .{ .rules = .{ .{ .action = \"sandbox.jit\", .decision = .allow } } },\n"
      "    .deny_read = .{ \".env\", \"a\\u{e9}\\x41\" },\n"
      "    .limits = .{ .processes = 0x100, .memory = \\\\4GiB\n"
      "    },\n"
      "    .n = -1_0.5e2, // done\n"
      "}\n";
  ASSERT_TRUE(chock::zon::parse(file, "t.zon"));
  auto check = [](const std::string& text) {
    auto v = chock::zon::parse(text, "t.zon");
    if (v) return;
    const std::string m = v.error().message();
    EXPECT_EQ(m.rfind("t.zon:", 0), 0u) << m;
    EXPECT_NE(m.find(": error: "), std::string::npos) << m;
  };
  for (std::size_t n = 0; n < file.size(); ++n) {
    const std::string prefix = file.substr(0, n);
    auto v = chock::zon::parse(prefix, "t.zon");
    // Every prefix short of the closing brace leaves the outer struct open.
    if (n + 1 < file.size()) {
      EXPECT_FALSE(v) << prefix;
    }
    check(prefix);
  }
  const char replacements[] = {'\0', '"', '\\', '.', '{', '}', ',', '=', '\n', 'x', '9', '\xff', '/'};
  for (std::size_t i = 0; i < file.size(); ++i)
    for (char r : replacements) {
      std::string mutated = file;
      mutated[i] = r;
      check(mutated);
    }
}

TEST(ZonRead, KindNamesAndOrigins) {
  EXPECT_STREQ(chock::zon::kind_name(Value::Kind::integer), "an integer");
  EXPECT_STREQ(chock::zon::kind_name(Value::Kind::string), "a string");
  EXPECT_EQ(chock::zon::origin("/p/chock.zon", {4, 9}), "/p/chock.zon:4:9");
  const chock::Error e = chock::zon::error_at("/p/chock.zon", {2, 3}, "what is wrong");
  EXPECT_EQ(e.message(), "/p/chock.zon:2:3: error: what is wrong");
}

}  // namespace
